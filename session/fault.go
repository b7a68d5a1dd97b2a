package session

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
)

// FaultEnv is the environment variable that arms a fault-injection point for
// crash drills: FLINKSQL_FAULT=<point>[@<checkpoint id>] makes the process
// kill itself with SIGKILL when the runtime reaches that point, for the
// given checkpoint or, without an id, the first time. The points are
// exec.FaultPoints. New reads it once, unless Options.Fault is set.
const FaultEnv = "FLINKSQL_FAULT"

// ParseFault turns a FLINKSQL_FAULT value into the hook that kills the
// process at that point; log receives one line naming the point just
// before. An empty spec arms nothing (nil hook).
func ParseFault(spec string, log io.Writer) (exec.FaultFunc, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	point, idText, withID := strings.Cut(spec, "@")
	if !isFaultPoint(point) {
		return nil, fmt.Errorf("%s: unknown fault point %q; allowed: %s, optionally followed by @<checkpoint id>",
			FaultEnv, point, strings.Join(exec.FaultPoints(), ", "))
	}
	var at exec.CheckpointID // 0: the first time
	if withID {
		n, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q: the checkpoint id after '@' must be a positive integer", FaultEnv, spec)
		}
		at = exec.CheckpointID(n)
	}
	if log == nil {
		log = io.Discard
	}
	return func(p string, id exec.CheckpointID) {
		if p != point || (at != 0 && id != at) {
			return
		}
		fmt.Fprintf(log, "[FAULT] %s=%s: killing the process at %s of checkpoint %d\n", FaultEnv, spec, p, id)
		killSelf()
	}, nil
}

func isFaultPoint(p string) bool {
	for _, q := range exec.FaultPoints() {
		if p == q {
			return true
		}
	}
	return false
}

// killSelf ends the process the way kill -9 from outside would: no deferred
// calls, no flushing, no clean shutdown of jobs or clients.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	// A signal to ourselves is delivered before the system call returns;
	// should it not be, do not let the caller go on past its fault point.
	select {}
}
