package main

import "runtime/debug"

// version is set at build time (-ldflags "-X main.version=1.2.3"); else the
// module version of the build, or "dev".
var version = ""

func versionString() string {
	if version != "" {
		return "flinksql " + version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return "flinksql " + bi.Main.Version
	}
	return "flinksql dev"
}
