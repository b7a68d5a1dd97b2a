package options

import (
	"fmt"
	"strings"
)

// Markdown renders the options of r as the Markdown page docs/options.md.
func Markdown(r *Registry) string {
	var b strings.Builder
	b.WriteString("# Session options\n\n")
	b.WriteString("Set with `SET 'key' = 'value';` in the shell or a script, listed by `SET;`. ")
	b.WriteString("Keys, defaults and value syntax are Flink's unless a description says otherwise; ")
	b.WriteString("a key flinksql does not read is stored with a warning naming the nearest known key. ")
	b.WriteString("Generated from package `options` (`go test ./options -run TestOptionsDoc -update`).\n\n")
	b.WriteString("| Key | Default | Type | Description |\n|---|---|---|---|\n")
	for _, s := range r.Specs() {
		def := "(none)"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		desc := s.Description
		if len(s.Deprecated) > 0 {
			desc += " Deprecated keys: `" + strings.Join(s.Deprecated, "`, `") + "`."
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Key, def, s.Type, strings.ReplaceAll(desc, "|", "\\|"))
	}
	return b.String()
}
