package window

import "github.com/flinksql/flinksql/exec"

// Validate checks window parameters as the operators will, so the planner can
// report a bad window before the job starts, with the same message.
func Validate(w exec.WindowSpec) error { return validate(w) }
