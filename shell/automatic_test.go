package shell

import (
	"context"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
)

// TestAutomaticModeBatchTable: in 'automatic' runtime mode a query over
// bounded sources runs as batch, so the shell shows the batch table (no op
// column, "N rows in set") rather than the changelog layout. A streaming
// COUNT(*) over a, b, a would print +I 1, -U 1, +U 2, -U 2, +U 3; the batch
// answer is the one row 3. A real session runs it.
func TestAutomaticModeBatchTable(t *testing.T) {
	sess, err := session.New(session.Options{Config: map[string]string{"execution.runtime-mode": "automatic"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	script := `CREATE TABLE t (k STRING) WITH ('connector' = 'values', 'data' = '
a
b
a
');
SELECT COUNT(*) AS n FROM t;`
	var out, errOut strings.Builder
	if err := RunString(context.Background(), sess, script, &out, &errOut); err != nil {
		t.Fatalf("%v (stderr %q)", err, errOut.String())
	}
	want := lines(
		"[INFO] Execute statement succeeded.",
		"+---+",
		"| n |",
		"+---+",
		"| 3 |",
		"+---+",
		"1 row in set",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
}
