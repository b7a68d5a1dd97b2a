package parser

import (
	"strings"
)

// sexpr prints an expression as a fully parenthesized S-expression so tests
// can assert on the tree shape independently of FormatExpr.
func sexpr(e Expr) string {
	switch x := e.(type) {
	case nil:
		return "nil"
	case *Ident:
		return strings.Join(x.Parts, ".")
	case *Star:
		if len(x.Qualifier) > 0 {
			return strings.Join(x.Qualifier, ".") + ".*"
		}
		return "*"
	case *Literal:
		switch x.Kind {
		case StringLit:
			return "'" + x.Value + "'"
		case BinaryLit:
			return "X'" + x.Value + "'"
		case DateLit:
			return "(DATE '" + x.Value + "')"
		case TimeLit:
			return "(TIME '" + x.Value + "')"
		case TimestampLit:
			return "(TIMESTAMP '" + x.Value + "')"
		}
		return x.Value
	case *IntervalLit:
		s := "(INTERVAL "
		if x.Negative {
			s += "-"
		}
		var sb writer
		writeQualifier(&sb, &x.Qualifier)
		return s + "'" + x.Value + "' " + sb.String() + ")"
	case *UnaryExpr:
		return "(" + x.Op + " " + sexpr(x.X) + ")"
	case *BinaryExpr:
		return "(" + x.Op + " " + sexpr(x.L) + " " + sexpr(x.R) + ")"
	case *IsExpr:
		op := "IS-"
		if x.Not {
			op += "NOT-"
		}
		return "(" + op + x.What + " " + sexpr(x.X) + ")"
	case *IsDistinctFrom:
		op := "IS-DISTINCT"
		if x.Not {
			op = "IS-NOT-DISTINCT"
		}
		return "(" + op + " " + sexpr(x.L) + " " + sexpr(x.R) + ")"
	case *BetweenExpr:
		op := "BETWEEN"
		if x.Not {
			op = "NOT-BETWEEN"
		}
		if x.Symmetric {
			op += "-SYM"
		}
		return "(" + op + " " + sexpr(x.X) + " " + sexpr(x.Lo) + " " + sexpr(x.Hi) + ")"
	case *InExpr:
		op := "IN"
		if x.Not {
			op = "NOT-IN"
		}
		if x.Query != nil {
			return "(" + op + " " + sexpr(x.X) + " (query " + FormatQuery(x.Query) + "))"
		}
		return "(" + op + " " + sexpr(x.X) + " " + sexprList(x.List) + ")"
	case *LikeExpr:
		op := strings.ReplaceAll(x.Op, " ", "-")
		if x.Not {
			op = "NOT-" + op
		}
		s := "(" + op + " " + sexpr(x.X) + " " + sexpr(x.Pattern)
		if x.Escape != nil {
			s += " ESCAPE " + sexpr(x.Escape)
		}
		return s + ")"
	case *FuncCall:
		s := "(call " + strings.Join(x.Name, ".")
		if x.NoParens {
			s += " noparens"
		}
		if x.Distinct {
			s += " DISTINCT"
		}
		for _, a := range x.Args {
			if a.Name != "" {
				s += " " + a.Name + "=>" + sexpr(a.Value)
			} else {
				s += " " + sexpr(a.Value)
			}
		}
		if x.Filter != nil {
			s += " FILTER " + sexpr(x.Filter)
		}
		if x.Over != nil {
			var sb writer
			writeWindowSpec(&sb, x.Over)
			s += " OVER " + sb.String()
		}
		return s + ")"
	case *TableArg:
		s := "(table "
		if x.Query != nil {
			s += "(query " + FormatQuery(x.Query) + ")"
		} else {
			s += strings.Join(x.Name, ".")
		}
		if len(x.PartitionBy) > 0 {
			s += " partition " + sexprList(x.PartitionBy)
		}
		return s + ")"
	case *Descriptor:
		return "(descriptor " + strings.Join(x.Columns, " ") + ")"
	case *TimeUnitExpr:
		return x.Unit
	case *CaseExpr:
		s := "(case"
		if x.Operand != nil {
			s += " " + sexpr(x.Operand)
		}
		for _, w := range x.Whens {
			s += " (when " + sexpr(w.Cond) + " " + sexpr(w.Result) + ")"
		}
		if x.Else != nil {
			s += " (else " + sexpr(x.Else) + ")"
		}
		return s + ")"
	case *CastExpr:
		op := "cast"
		if x.Try {
			op = "try_cast"
		}
		return "(" + op + " " + sexpr(x.X) + " " + FormatDataType(x.Type) + ")"
	case *ExtractExpr:
		return "(extract " + x.Unit + " " + sexpr(x.X) + ")"
	case *FloorCeilExpr:
		op := "floor"
		if x.Ceil {
			op = "ceil"
		}
		return "(" + op + " " + sexpr(x.X) + " " + x.Unit + ")"
	case *TrimExpr:
		return "(trim " + x.Mode + " " + sexpr(x.Chars) + " " + sexpr(x.X) + ")"
	case *SubstringExpr:
		return "(substring " + sexpr(x.X) + " " + sexpr(x.Start) + " " + sexpr(x.Length) + ")"
	case *PositionExpr:
		return "(position " + sexpr(x.Sub) + " " + sexpr(x.X) + ")"
	case *OverlayExpr:
		return "(overlay " + sexpr(x.X) + " " + sexpr(x.Placing) + " " + sexpr(x.Start) + " " + sexpr(x.Length) + ")"
	case *RowExpr:
		if x.Explicit {
			return "(ROW " + sexprList(x.Fields) + ")"
		}
		return "(row " + sexprList(x.Fields) + ")"
	case *ArrayExpr:
		return "(array " + sexprList(x.Elems) + ")"
	case *MapExpr:
		return "(map " + sexprList(x.Elems) + ")"
	case *SubqueryExpr:
		return "(subquery " + FormatQuery(x.Query) + ")"
	case *ExistsExpr:
		return "(exists " + FormatQuery(x.Query) + ")"
	case *SubscriptExpr:
		return "(index " + sexpr(x.X) + " " + sexpr(x.Index) + ")"
	case *FieldAccess:
		return "(field " + sexpr(x.X) + " " + x.Field + ")"
	case *GroupingSet:
		return "(" + x.Kind + " " + sexprList(x.Items) + ")"
	}
	return "<?>"
}

func sexprList(list []Expr) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = sexpr(e)
	}
	return strings.Join(parts, " ")
}
