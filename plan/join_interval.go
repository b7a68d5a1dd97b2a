package plan

import (
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
)

// planIntervalJoin plans the join as an interval join when its residual
// condition bounds the time attributes of both sides; ok is false when it
// does not.
func (pc *planContext) planIntervalJoin(at parser.Node, typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, bool, error) {
	return nil, false, nil
}
