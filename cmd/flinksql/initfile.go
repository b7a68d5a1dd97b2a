package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/shell"
	"github.com/flinksql/flinksql/sql/parser"
)

// runInit runs Flink's initialization file (-i): statements that set up
// the session (SET, CREATE, USE, …) before the shell or the -f/-e
// statements. As in Flink, queries and INSERTs are not allowed there, and
// an error ends flinksql.
func runInit(ctx context.Context, sess *session.Session, path string, stderr io.Writer) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the initialization file: %w", err)
	}
	stmts, err := parser.ParseScript(string(src))
	if err != nil {
		return fmt.Errorf("initialization file %s: %w", path, err)
	}
	for _, st := range stmts {
		switch st.(type) {
		case *parser.QueryStmt, *parser.Insert, *parser.StatementSet, *parser.BeginStatementSet, *parser.End, *parser.StopJob:
			return fmt.Errorf("initialization file %s: unsupported statement '%s': the initialization file may not contain queries, INSERTs or job statements (run them with -f or in the shell)",
				path, firstLineOf(st.Text()))
		}
	}
	if err := shell.RunString(ctx, sess, string(src), io.Discard, stderr); err != nil {
		return err
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(stderr, "Successfully initialized from sql script: file:%s\n", abs)
	return nil
}

func firstLineOf(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i] + " ..."
		}
	}
	return s
}
