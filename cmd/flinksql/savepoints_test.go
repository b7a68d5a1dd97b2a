package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies a directory of files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSavepointsCommand: 'flinksql savepoints' describes the checked-in
// savepoint (format 1, its SQL, one row per operator instance), lists the
// savepoints of a directory, verifies the files and fails on a damaged one.
func TestSavepointsCommand(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "savepoint-fixture-1")
	copyTree(t, filepath.Join("..", "..", "checkpoint", "testdata", "savepoint-v1"), sp)
	for _, arg := range []string{sp, dir, "file://" + sp + "/_metadata"} {
		var out, errOut bytes.Buffer
		if rc := run([]string{"savepoints", arg, "--verify"}, nil, &out, &errOut); rc != 0 {
			t.Fatalf("savepoints %s: exit %d: %s", arg, rc, errOut.String())
		}
		got := out.String()
		for _, want := range []string{
			"Savepoint (format 1) file://" + sp + "\n",
			"  job: orders, checkpoint 1, taken ",
			"  written by state backend: hashmap (restorable by hashmap and rocksdb)\n",
			"SQL:\n  INSERT INTO sink SELECT k, v FROM src\n",
			"OPERATOR   SUBTASK  KEY GROUPS  FORMAT        ENTRIES  BYTES  POSITION BYTES\n",
			"  v0-source  0/2      -           entries/1     -        36     5\n",
			"  v1-0       1/2      ",
			"Verified: every file present with the recorded size and SHA-256.\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("savepoints %s: output lacks %q:\n%s", arg, want, got)
			}
		}
	}
	// A damaged file fails --verify.
	if err := os.WriteFile(filepath.Join(sp, "v2-0-1.entries"), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if rc := run([]string{"savepoints", sp, "--verify"}, nil, &out, &errOut); rc != 1 || !strings.Contains(out.String(), "v2-0-1.entries") {
		t.Errorf("damaged savepoint: exit %d, output:\n%s%s", rc, out.String(), errOut.String())
	}
	if rc := run([]string{"savepoints", filepath.Join(dir, "nothing")}, nil, &out, &errOut); rc != 1 {
		t.Errorf("no savepoint: exit %d", rc)
	}
}
