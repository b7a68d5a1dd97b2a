package plan

import "github.com/flinksql/flinksql/sql/parser"

// planLateralJoin plans a join whose right side is evaluated per left row:
// UNNEST of a column or a LATERAL subquery (table function).
func (pc *planContext) planLateralJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	return nil, unsupportedAt(r, "joins are not supported yet (%s JOIN)", r.Kind)
}
