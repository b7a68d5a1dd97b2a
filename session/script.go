package session

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/flinksql/flinksql/sql/parser"
)

// shapesJob reports whether st belongs in a job's recorded script: a
// statement that changes the catalog or the options the next job is
// planned with. Queries, INSERTs (recorded as the job's own), SHOW,
// DESCRIBE, EXPLAIN, STOP JOB and the statement-set brackets do not.
func shapesJob(st parser.Statement) bool {
	switch x := st.(type) {
	case *parser.Insert, *parser.StatementSet, *parser.QueryStmt, *parser.Explain, *parser.Show,
		*parser.ShowCreate, *parser.Describe, *parser.StopJob, *parser.BeginStatementSet, *parser.End:
		return false
	case *parser.Set:
		return x.Key != "" // SET alone lists the options
	}
	return true
}

// sensitiveOption matches option keys whose values are secrets, as Flink
// masks them in logs and the web UI (GlobalConfiguration's sensitive keys).
var sensitiveOption = regexp.MustCompile(`(?i)'([^']*(password|secret|token|apikey|api-key|access-key|auth-params|service-key|jaas\.config|basic-auth|account\.key)[^']*)'(\s*=\s*)'(?:[^']|'')*'`)

// maskSecrets replaces the values of sensitive options in a statement's
// text ('s3.secret-key' = '******'), so that a savepoint's script holds no
// credentials: they must be set again when the script is run.
func maskSecrets(text string) string {
	if !strings.Contains(text, "'") {
		return text
	}
	return sensitiveOption.ReplaceAllString(text, "'$1'$3'******'")
}

// ExplainMigrationScript runs the statements of a job script that shape
// its catalog and options (DDL, SET, ...) and returns EXPLAIN MIGRATION
// FROM path of each INSERT or statement set in it: what restoring the
// savepoint or checkpoint at path into that job would do with its state.
// No job is started. refused says whether any of those restores would be
// refused.
func (s *Session) ExplainMigrationScript(ctx context.Context, path, script string) (text string, refused bool, err error) {
	stmts, err := parser.ParseScript(script)
	if err != nil {
		return "", false, err
	}
	var out []string
	var set []*parser.Insert
	inSet := false
	explain := func(st parser.Statement) error {
		text, r, err := s.ExplainMigration(ctx, path, st)
		if err != nil {
			return fmt.Errorf("%s: %w", firstLine(st.Text()), err)
		}
		refused = refused || r
		out = append(out, text)
		return nil
	}
	for _, st := range stmts {
		switch x := st.(type) {
		case *parser.BeginStatementSet:
			inSet = true
		case *parser.End:
			if !inSet {
				return "", false, fmt.Errorf("No statement set to END; start one with BEGIN STATEMENT SET")
			}
			inSet = false
			if err := explain(&parser.StatementSet{StmtBase: x.StmtBase, Inserts: set}); err != nil {
				return "", false, err
			}
			set = nil
		case *parser.Insert:
			if inSet {
				set = append(set, x)
			} else if err := explain(x); err != nil {
				return "", false, err
			}
		case *parser.StatementSet:
			if err := explain(x); err != nil {
				return "", false, err
			}
		case *parser.QueryStmt, *parser.StopJob, *parser.Explain, *parser.Show, *parser.ShowCreate, *parser.Describe:
			// Not part of the job: nothing to judge, nothing to run.
		default:
			if inSet {
				return "", false, fmt.Errorf("Only INSERT statements can be added to a statement set; end it with END")
			}
			if _, err := s.ExecuteStatement(ctx, st); err != nil {
				return "", false, fmt.Errorf("%s: %w", firstLine(st.Text()), err)
			}
		}
	}
	if len(out) == 0 {
		return "", false, fmt.Errorf("the script has no INSERT or statement set to explain the migration of")
	}
	return strings.Join(out, "\n"), refused, nil
}
