package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/cockroachdb/datadriven"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// syncBuffer is the print connector's stdout in tests: subtasks write to it
// concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// TestSQL runs the data-driven SQL tests in testdata. Commands:
//
//	exec                    run statements; prints "ok" or the error
//	query [par=1,4] [sorted]  run one SELECT at each parallelism; the outputs must
//	                        agree; prints one line per change: +I[v1, v2, …] in SQL text form
//	insert [par=1,4] [sorted] run statements (INSERTs wait for their jobs) and print what
//	                        the print connector wrote
//	show                    run statements; prints each result (tables as "a | b" lines, text as is)
//	sink                    the input names a values sink table; prints its materialized rows, sorted
//	explain                 run EXPLAIN …; prints the plan
//	error                   run statements; the last must fail; prints its message
//	file path=p             write the input, as is, to the file p under ${TMPDIR}
//
// ${TMPDIR} in a statement is replaced by a temporary directory of the test file.
//
// The walk runs once per state backend (state.backend.type): every file
// must give the same output on hashmap and rocksdb.
func TestSQL(t *testing.T) {
	for _, backend := range []string{"hashmap", "rocksdb"} {
		t.Run(backend, func(t *testing.T) { testSQL(t, backend) })
	}
}

func testSQL(t *testing.T, backend string) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		out := &syncBuffer{}
		newSession := func() *Session {
			s, err := New(Options{Stdout: out, Stderr: out, Config: map[string]string{
				"table.local-time-zone": "UTC", "state.backend.type": backend}})
			if err != nil {
				t.Fatal(err)
			}
			if k := s.keyedStateConfig().Kind; string(k) != backend {
				t.Fatalf("the session's keyed state backend is %q, want %q", k, backend)
			}
			return s
		}
		sess := newSession()
		defer func() { sess.Close() }()
		tmp := t.TempDir()
		// Output names the temporary directory as the input does.
		run := func(t *testing.T, d *datadriven.TestData) string {
			d.Input = strings.ReplaceAll(d.Input, "${TMPDIR}", tmp)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			switch d.Cmd {
			case "reset":
				sess.Close()
				sess = newSession()
				return "ok"
			case "exec":
				if _, err := sess.Execute(ctx, d.Input); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "show":
				rs, err := sess.Execute(ctx, d.Input)
				if err != nil {
					return "error: " + err.Error()
				}
				var b strings.Builder
				for _, r := range rs {
					switch {
					case r.Table != nil:
						b.WriteString(strings.Join(r.Table.Columns, " | ") + "\n")
						for _, row := range r.Table.Rows {
							b.WriteString(strings.Join(row, " | ") + "\n")
						}
					case r.Text != "":
						b.WriteString(r.Text)
					case r.Message != "":
						b.WriteString(r.Message + "\n")
					}
				}
				return b.String()
			case "sink":
				// The rows a values sink table holds now, sorted.
				f, err := sess.reg.Lookup("values")
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				rs, ok := f.(interface {
					Results(string) ([]types.Row, bool)
				}).Results("default_catalog.default_database." + strings.TrimSpace(d.Input))
				if !ok {
					return "no such values sink table"
				}
				var b strings.Builder
				for _, r := range rs {
					parts := make([]string, len(r))
					for i, v := range r {
						parts[i] = types.FormatJava(v, javaType(v))
					}
					b.WriteString("[" + strings.Join(parts, ", ") + "]\n")
				}
				return sortLines(b.String())
			case "explain":
				rs, err := sess.Execute(ctx, d.Input)
				if err != nil {
					return "error: " + err.Error()
				}
				return rs[len(rs)-1].Text
			case "file":
				var rel string
				d.ScanArgs(t, "path", &rel)
				p := filepath.Join(tmp, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					d.Fatalf(t, "%v", err)
				}
				if err := os.WriteFile(p, []byte(d.Input+"\n"), 0o644); err != nil {
					d.Fatalf(t, "%v", err)
				}
				return "ok"
			case "error":
				_, err := sess.Execute(ctx, d.Input)
				if err == nil {
					d.Fatalf(t, "expected an error")
				}
				return err.Error()
			case "query", "insert":
				pars := []string{""}
				sorted := false
				for _, a := range d.CmdArgs {
					switch a.Key {
					case "par":
						pars = a.Vals
					case "sorted":
						sorted = true
					default:
						d.Fatalf(t, "unknown argument %s", a.Key)
					}
				}
				var first string
				for i, par := range pars {
					if par != "" {
						if _, err := sess.Execute(ctx, fmt.Sprintf("SET 'parallelism.default' = '%s';", par)); err != nil {
							d.Fatalf(t, "%v", err)
						}
					}
					var got string
					var err error
					if d.Cmd == "query" {
						got, err = runQuery(ctx, sess, d.Input)
					} else {
						_, err = sess.Execute(ctx, d.Input)
						got = out.take()
					}
					if err != nil {
						return "error: " + err.Error()
					}
					if sorted {
						got = sortLines(got)
					}
					if i == 0 {
						first = got
					} else if got != first {
						d.Fatalf(t, "parallelism %s gave a different result than %s:\n%s\nvs\n%s", par, pars[0], got, first)
					}
				}
				return first
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return strings.ReplaceAll(run(t, d), tmp, "${TMPDIR}")
		})
	})
}

// runQuery runs the script's statements; the last one is a SELECT whose
// changes are returned one per line.
func runQuery(ctx context.Context, sess *Session, text string) (string, error) {
	stmts, err := parser.ParseScript(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, st := range stmts {
		r, err := sess.ExecuteStatement(ctx, st)
		if err != nil {
			return "", err
		}
		if r.Job != nil {
			if err := r.Job.Wait(ctx); err != nil {
				return "", err
			}
		}
		if r.Query == nil {
			continue
		}
		for {
			changes, err := r.Query.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Query.Cancel()
				return "", err
			}
			for _, c := range changes {
				b.WriteString(formatChange(c, r.Query.Schema, r.Query))
				b.WriteByte('\n')
			}
		}
	}
	return b.String(), nil
}

func formatChange(c Change, schema types.Schema, q *QueryResult) string {
	parts := make([]string, len(c.Row))
	for i, v := range c.Row {
		parts[i] = types.FormatSQL(v, schema[i].Type, q.Loc)
	}
	return c.Kind.String() + "[" + strings.Join(parts, ", ") + "]"
}

func sortLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	sort.Strings(lines)
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// javaType picks a type to render a value without its column's type, enough
// for the values-sink listings of tests (numbers, strings, booleans).
func javaType(v types.Value) types.Type {
	switch v.K {
	case types.KindBool:
		return types.BooleanType
	case types.KindInt:
		return types.BigIntType
	case types.KindFloat:
		return types.DoubleType
	case types.KindDecimal:
		return types.DecimalType(38, int(v.Aux))
	case types.KindTimestamp:
		return types.TimestampType(3)
	}
	return types.StringType
}
