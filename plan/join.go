package plan

import "github.com/flinksql/flinksql/sql/parser"

// planJoin plans one JOIN of a FROM clause. It only decides which kind of
// join the syntax asks for; each kind is planned in a file of its own:
// regular, interval and window joins here and in the files next to it,
// temporal and lookup joins (FOR SYSTEM_TIME AS OF on the right side) in
// temporal.go, and joins with UNNEST or a LATERAL subquery in unnest.go.
func (pc *planContext) planJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	switch right := r.Right.(type) {
	case *parser.TableName:
		if right.SystemTime != nil {
			return pc.planTemporalJoin(r, right, env)
		}
	case *parser.Unnest:
		return pc.planLateralJoin(r, env)
	case *parser.DerivedTable:
		if right.Lateral {
			return pc.planLateralJoin(r, env)
		}
	}
	return pc.planRegularJoin(r, env)
}

// planRegularJoin plans a join of two relations on a condition: a regular
// join, or an interval or window join when the condition bounds time.
func (pc *planContext) planRegularJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	return nil, unsupportedAt(r, "joins are not supported yet (%s JOIN)", r.Kind)
}
