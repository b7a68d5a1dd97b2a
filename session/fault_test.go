package session

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	flexec "github.com/flinksql/flinksql/exec"
)

func TestParseFaultErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"before-commit", `FLINKSQL_FAULT: unknown fault point "before-commit"; allowed: before-precommit, after-precommit, after-complete, during-commit, optionally followed by @<checkpoint id>`},
		{"@3", `FLINKSQL_FAULT: unknown fault point ""; allowed: before-precommit, after-precommit, after-complete, during-commit, optionally followed by @<checkpoint id>`},
		{"after-complete@", `FLINKSQL_FAULT: "after-complete@": the checkpoint id after '@' must be a positive integer`},
		{"after-complete@0", `FLINKSQL_FAULT: "after-complete@0": the checkpoint id after '@' must be a positive integer`},
		{"after-complete@x", `FLINKSQL_FAULT: "after-complete@x": the checkpoint id after '@' must be a positive integer`},
	} {
		f, err := ParseFault(tc.spec, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseFault(%q) = %v, want error %q", tc.spec, err, tc.want)
		}
		if f != nil {
			t.Errorf("ParseFault(%q) returned a hook with its error", tc.spec)
		}
	}
	if f, err := ParseFault("  ", nil); f != nil || err != nil {
		t.Errorf("ParseFault(blank) = %v, %v; want no hook", f != nil, err)
	}
}

// faultChildEnv makes the test binary, run again as a child, call the hook
// armed by FLINKSQL_FAULT with the points listed in it.
const faultChildEnv = "FLINKSQL_FAULT_TEST_CHILD"

// TestFaultKillsProcess runs this test binary again as a child that arms a
// point and passes the points in faultChildEnv to the hook: the child must
// die by SIGKILL exactly at the armed point and checkpoint, and not before.
func TestFaultKillsProcess(t *testing.T) {
	if calls := os.Getenv(faultChildEnv); calls != "" {
		f, err := ParseFault(os.Getenv(FaultEnv), os.Stderr)
		if err != nil || f == nil {
			os.Exit(3)
		}
		for _, c := range strings.Split(calls, ",") {
			p, id, _ := strings.Cut(c, "@")
			n, _ := strconv.ParseInt(id, 10, 64)
			os.Stdout.WriteString("reached " + c + "\n")
			f(p, flexec.CheckpointID(n))
		}
		os.Exit(0)
	}
	for _, tc := range []struct {
		spec, calls string
		lastReached string // "" when the child must survive
	}{
		{"after-complete", "before-precommit@1,after-precommit@1,after-complete@1,during-commit@1", "after-complete@1"},
		{"during-commit@3", "during-commit@1,during-commit@2,during-commit@3,during-commit@4", "during-commit@3"},
		{"before-precommit@9", "before-precommit@1,before-precommit@2", ""},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultKillsProcess$")
		cmd.Env = append(os.Environ(), FaultEnv+"="+tc.spec, faultChildEnv+"="+tc.calls)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if tc.lastReached == "" {
			if err != nil {
				t.Errorf("%s: the child died (%v) though the point was never reached; stderr:\n%s", tc.spec, err, stderr.String())
			}
			continue
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("%s: child ended with %v, want death by SIGKILL", tc.spec, err)
			continue
		}
		ws, ok := ee.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("%s: child ended with %v, want death by SIGKILL", tc.spec, err)
		}
		if last := lines[len(lines)-1]; last != "reached "+tc.lastReached {
			t.Errorf("%s: child died after %q, want after %q", tc.spec, last, tc.lastReached)
		}
		if !strings.Contains(stderr.String(), "[FAULT] "+FaultEnv+"="+tc.spec+": killing the process at") {
			t.Errorf("%s: no [FAULT] line on stderr:\n%s", tc.spec, stderr.String())
		}
	}
}
