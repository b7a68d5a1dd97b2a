package plan

import "github.com/flinksql/flinksql/sql/parser"

// planTemporalJoin plans a join whose right side is read AS OF a time of the
// left row: an event-time temporal join against a versioned table, or a
// processing-time lookup join against a lookup source.
func (pc *planContext) planTemporalJoin(r *parser.Join, right *parser.TableName, env *cteEnv) (*relation, error) {
	return nil, unsupportedAt(right, "FOR SYSTEM_TIME AS OF (temporal joins) is not supported yet")
}
