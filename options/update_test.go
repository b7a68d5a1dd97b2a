package options

import "flag"

var update = flag.Bool("update", false, "rewrite docs/options.md")

func updateDoc() bool { return *update }
