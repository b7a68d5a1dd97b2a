package main

import (
	"bytes"
	"github.com/flinksql/flinksql/session"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestQuickstart runs the README's first command in-process. The quick start
// generates order ids 0..199 at 250 ms of event time each, so the 10-second
// tumbling windows [0 s, 10 s) … [40 s, 50 s) hold exactly 40 orders each,
// split over users 1..3.
func TestQuickstart(t *testing.T) {
	// The print connector (job goroutines) and the shell both write to stdout.
	var out, errOut lockedBuffer
	code := run([]string{"-f", filepath.Join("..", "..", "examples", "sql", "quickstart.sql")}, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	// Print lines look like "1> +I[1970-01-01T00:00, 1970-01-01T00:00:10, 2, 13, 640.47]".
	line := regexp.MustCompile(`(?m)^(?:\d+> )?\+I\[(\S+), (\S+), (\d+), (\d+), (-?[\d.]+)\]$`)
	perWindow := map[string]int{}
	users := map[string]map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[4])
		perWindow[m[1]] += n
		if users[m[1]] == nil {
			users[m[1]] = map[string]bool{}
		}
		if users[m[1]][m[3]] {
			t.Errorf("window %s has two rows for user %s", m[1], m[3])
		}
		users[m[1]][m[3]] = true
	}
	var starts []string
	for s, n := range perWindow {
		starts = append(starts, s)
		if n != 40 {
			t.Errorf("window starting %s counted %d orders, want 40", s, n)
		}
	}
	sort.Strings(starts)
	want := []string{"1970-01-01T00:00", "1970-01-01T00:00:10", "1970-01-01T00:00:20", "1970-01-01T00:00:30", "1970-01-01T00:00:40"}
	if strings.Join(starts, " ") != strings.Join(want, " ") {
		t.Errorf("window starts = %v, want %v\noutput:\n%s", starts, want, out.String())
	}
}

// TestFileErrorExitCode: a failing statement stops the file with exit code 1
// and the error names the file position.
func TestFileErrorExitCode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.sql")
	src := "SET 'parallelism.default' = '1';\n\nSELECT a FORM t;\nSELECT 1;\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-f", path}, strings.NewReader(""), &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	// "t" is the 15th character of line 3.
	if !strings.Contains(errOut.String(), "line 3, column 15") {
		t.Errorf("error should point at line 3, column 15:\n%s", errOut.String())
	}
}

func TestMissingFile(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-f", filepath.Join(t.TempDir(), "missing.sql")}, strings.NewReader(""), &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "missing.sql") {
		t.Errorf("the error should name the file: %q", errOut.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers, as os.Stdout is.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBadFaultRefusedAtStart: the process reads FLINKSQL_FAULT (the
// session no longer reads the environment) and refuses a bad one at start.
func TestBadFaultRefusedAtStart(t *testing.T) {
	t.Setenv(session.FaultEnv, "sometime")
	var out, errOut strings.Builder
	code := run([]string{"-e", "SELECT 1;"}, strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `unknown fault point "sometime"`) {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming the bad point", code, errOut.String())
	}
}
