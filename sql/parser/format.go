package parser

import (
	"strconv"
	"strings"
)

// QuoteIdent returns name as it must be written in Flink SQL: unchanged when
// it is a plain non-reserved identifier, otherwise back-quoted (with
// back-quotes doubled).
func QuoteIdent(name string) string {
	if name != "" && !reservedWords[strings.ToUpper(name)] {
		plain := true
		for i, r := range name {
			if (i == 0 && !isIdentStart(r)) || !isIdentPart(r) {
				plain = false
				break
			}
		}
		if plain {
			return name
		}
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// QuoteString renders s as a SQL string literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func quoteParts(parts []string) string {
	q := make([]string, len(parts))
	for i, s := range parts {
		q[i] = QuoteIdent(s)
	}
	return strings.Join(q, ".")
}

// FormatExpr prints an expression as canonical Flink SQL: keywords
// upper-case, identifiers back-quoted only when needed, and parentheses
// only where precedence requires them.
func FormatExpr(e Expr) string {
	var sb writer
	writeExpr(&sb, e)
	return sb.String()
}

// FormatExprQuoted prints an expression as FormatExpr does, but with every
// column reference back-quoted, as Flink prints the SQL expressions it
// stores (watermarks and computed columns in DESCRIBE and SHOW CREATE
// TABLE): `ts` - INTERVAL '5' SECOND.
func FormatExprQuoted(e Expr) string {
	sb := writer{quoteAll: true}
	writeExpr(&sb, e)
	return sb.String()
}

// writer is the output of the formatter.
type writer struct {
	strings.Builder
	quoteAll bool // back-quote every identifier of a column reference
}

// FormatDataType prints a data type as Flink SQL, e.g. TIMESTAMP(3) NOT NULL.
func FormatDataType(t *DataType) string {
	var sb writer
	writeType(&sb, t)
	return sb.String()
}

// FormatQuery prints a query as single-line Flink SQL.
func FormatQuery(q *Query) string {
	var sb writer
	writeQuery(&sb, q)
	return sb.String()
}

// exprPrec returns the binding power of the operator at the root of e.
func exprPrec(e Expr) int {
	switch x := e.(type) {
	case *BinaryExpr:
		switch x.Op {
		case "OR":
			return precOr
		case "AND":
			return precAnd
		case "||":
			return precConcat
		case "+", "-":
			return precAdd
		case "*", "/", "%":
			return precMul
		}
		return precCompare
	case *UnaryExpr:
		if x.Op == "NOT" {
			return precNot
		}
		return precUnary
	case *IsExpr, *IsDistinctFrom:
		return precIs
	case *BetweenExpr, *InExpr, *LikeExpr:
		return precPred
	}
	return precAtom
}

// writeOperand writes e, parenthesized when its precedence is below min.
func writeOperand(sb *writer, e Expr, min int) {
	if exprPrec(e) < min {
		sb.WriteByte('(')
		writeExpr(sb, e)
		sb.WriteByte(')')
		return
	}
	writeExpr(sb, e)
}

func writeExprList(sb *writer, list []Expr) {
	for i, e := range list {
		if i > 0 {
			sb.WriteString(", ")
		}
		writeExpr(sb, e)
	}
}

func writeExpr(sb *writer, e Expr) {
	switch x := e.(type) {
	case nil:
		sb.WriteString("NULL")
	case *Ident:
		if sb.quoteAll {
			for i, p := range x.Parts {
				if i > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString("`" + strings.ReplaceAll(p, "`", "``") + "`")
			}
			break
		}
		sb.WriteString(quoteParts(x.Parts))
	case *Star:
		for _, q := range x.Qualifier {
			sb.WriteString(QuoteIdent(q))
			sb.WriteByte('.')
		}
		sb.WriteByte('*')
	case *Literal:
		switch x.Kind {
		case NumberLit, BoolLit, NullLit, UnknownLit:
			sb.WriteString(x.Value)
		case StringLit:
			sb.WriteString(QuoteString(x.Value))
		case BinaryLit:
			sb.WriteString("X'" + x.Value + "'")
		case DateLit:
			sb.WriteString("DATE " + QuoteString(x.Value))
		case TimeLit:
			sb.WriteString("TIME " + QuoteString(x.Value))
		case TimestampLit:
			sb.WriteString("TIMESTAMP " + QuoteString(x.Value))
		}
	case *IntervalLit:
		sb.WriteString("INTERVAL ")
		if x.Negative {
			sb.WriteByte('-')
		}
		sb.WriteString(QuoteString(x.Value))
		sb.WriteByte(' ')
		writeQualifier(sb, &x.Qualifier)
	case *UnaryExpr:
		if x.Op == "NOT" {
			sb.WriteString("NOT ")
			writeOperand(sb, x.X, precIs)
			return
		}
		sb.WriteString(x.Op)
		if u, ok := x.X.(*UnaryExpr); ok && u.Op != "NOT" {
			sb.WriteByte('(')
			writeExpr(sb, x.X)
			sb.WriteByte(')')
			return
		}
		writeOperand(sb, x.X, precUnary)
	case *BinaryExpr:
		p := exprPrec(x)
		writeOperand(sb, x.L, p)
		sb.WriteString(" " + x.Op + " ")
		writeOperand(sb, x.R, p+1)
	case *IsExpr:
		writeOperand(sb, x.X, precIs)
		sb.WriteString(" IS ")
		if x.Not {
			sb.WriteString("NOT ")
		}
		sb.WriteString(x.What)
	case *IsDistinctFrom:
		writeOperand(sb, x.L, precIs)
		sb.WriteString(" IS ")
		if x.Not {
			sb.WriteString("NOT ")
		}
		sb.WriteString("DISTINCT FROM ")
		writeOperand(sb, x.R, precPred)
	case *BetweenExpr:
		writeOperand(sb, x.X, precPred)
		if x.Not {
			sb.WriteString(" NOT")
		}
		sb.WriteString(" BETWEEN ")
		if x.Symmetric {
			sb.WriteString("SYMMETRIC ")
		}
		writeOperand(sb, x.Lo, precConcat)
		sb.WriteString(" AND ")
		writeOperand(sb, x.Hi, precConcat)
	case *InExpr:
		writeOperand(sb, x.X, precPred)
		if x.Not {
			sb.WriteString(" NOT")
		}
		sb.WriteString(" IN (")
		if x.Query != nil {
			writeQuery(sb, x.Query)
		} else {
			writeExprList(sb, x.List)
		}
		sb.WriteByte(')')
	case *LikeExpr:
		writeOperand(sb, x.X, precPred)
		if x.Not {
			sb.WriteString(" NOT")
		}
		sb.WriteString(" " + x.Op + " ")
		writeOperand(sb, x.Pattern, precConcat)
		if x.Escape != nil {
			sb.WriteString(" ESCAPE ")
			writeOperand(sb, x.Escape, precConcat)
		}
	case *FuncCall:
		writeFuncCall(sb, x)
	case *TableArg:
		sb.WriteString("TABLE ")
		if x.Query != nil {
			sb.WriteByte('(')
			writeQuery(sb, x.Query)
			sb.WriteByte(')')
		} else {
			sb.WriteString(quoteParts(x.Name))
		}
		if len(x.PartitionBy) > 0 {
			sb.WriteString(" PARTITION BY ")
			if len(x.PartitionBy) == 1 {
				writeOperand(sb, x.PartitionBy[0], precConcat)
			} else {
				sb.WriteByte('(')
				writeExprList(sb, x.PartitionBy)
				sb.WriteByte(')')
			}
		}
	case *Descriptor:
		sb.WriteString("DESCRIPTOR(")
		for i, c := range x.Columns {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteIdent(c))
		}
		sb.WriteByte(')')
	case *TimeUnitExpr:
		sb.WriteString(x.Unit)
	case *CaseExpr:
		sb.WriteString("CASE")
		if x.Operand != nil {
			sb.WriteByte(' ')
			writeExpr(sb, x.Operand)
		}
		for _, w := range x.Whens {
			sb.WriteString(" WHEN ")
			writeExpr(sb, w.Cond)
			for _, m := range w.More {
				sb.WriteString(", ")
				writeExpr(sb, m)
			}
			sb.WriteString(" THEN ")
			writeExpr(sb, w.Result)
		}
		if x.Else != nil {
			sb.WriteString(" ELSE ")
			writeExpr(sb, x.Else)
		}
		sb.WriteString(" END")
	case *CastExpr:
		if x.Try {
			sb.WriteString("TRY_CAST(")
		} else {
			sb.WriteString("CAST(")
		}
		writeExpr(sb, x.X)
		sb.WriteString(" AS ")
		writeType(sb, x.Type)
		sb.WriteByte(')')
	case *ExtractExpr:
		sb.WriteString("EXTRACT(" + x.Unit + " FROM ")
		writeExpr(sb, x.X)
		sb.WriteByte(')')
	case *FloorCeilExpr:
		if x.Ceil {
			sb.WriteString("CEIL(")
		} else {
			sb.WriteString("FLOOR(")
		}
		writeExpr(sb, x.X)
		sb.WriteString(" TO " + x.Unit + ")")
	case *JsonExpr:
		writeJSON(sb, x)
	case *TrimExpr:
		sb.WriteString("TRIM(" + x.Mode + " ")
		if x.Chars != nil {
			writeExpr(sb, x.Chars)
			sb.WriteByte(' ')
		}
		sb.WriteString("FROM ")
		writeExpr(sb, x.X)
		sb.WriteByte(')')
	case *SubstringExpr:
		sb.WriteString("SUBSTRING(")
		writeExpr(sb, x.X)
		sb.WriteString(" FROM ")
		writeExpr(sb, x.Start)
		if x.Length != nil {
			sb.WriteString(" FOR ")
			writeExpr(sb, x.Length)
		}
		sb.WriteByte(')')
	case *PositionExpr:
		sb.WriteString("POSITION(")
		writeOperand(sb, x.Sub, precConcat)
		sb.WriteString(" IN ")
		writeExpr(sb, x.X)
		if x.From != nil {
			sb.WriteString(" FROM ")
			writeExpr(sb, x.From)
		}
		sb.WriteByte(')')
	case *OverlayExpr:
		sb.WriteString("OVERLAY(")
		writeExpr(sb, x.X)
		sb.WriteString(" PLACING ")
		writeExpr(sb, x.Placing)
		sb.WriteString(" FROM ")
		writeExpr(sb, x.Start)
		if x.Length != nil {
			sb.WriteString(" FOR ")
			writeExpr(sb, x.Length)
		}
		sb.WriteByte(')')
	case *RowExpr:
		if x.Explicit {
			sb.WriteString("ROW")
		}
		sb.WriteByte('(')
		writeExprList(sb, x.Fields)
		sb.WriteByte(')')
	case *ArrayExpr:
		sb.WriteString("ARRAY[")
		writeExprList(sb, x.Elems)
		sb.WriteByte(']')
	case *MapExpr:
		sb.WriteString("MAP[")
		writeExprList(sb, x.Elems)
		sb.WriteByte(']')
	case *SubqueryExpr:
		sb.WriteByte('(')
		writeQuery(sb, x.Query)
		sb.WriteByte(')')
	case *ExistsExpr:
		sb.WriteString("EXISTS (")
		writeQuery(sb, x.Query)
		sb.WriteByte(')')
	case *SubscriptExpr:
		if id, ok := x.X.(*Ident); ok && len(id.Parts) == 1 && strings.EqualFold(id.Parts[0], "MAP") {
			// MAP[...] would be read back as a map constructor.
			sb.WriteString("`" + id.Parts[0] + "`")
		} else {
			writeOperand(sb, x.X, precAtom)
		}
		sb.WriteByte('[')
		writeExpr(sb, x.Index)
		sb.WriteByte(']')
	case *FieldAccess:
		switch x.X.(type) {
		case *FuncCall, *SubscriptExpr, *FieldAccess:
			writeExpr(sb, x.X)
		default:
			// (a).b must not be printed as a.b (a compound identifier),
			// nor (0).b as 0.b (a number followed by b).
			sb.WriteByte('(')
			writeExpr(sb, x.X)
			sb.WriteByte(')')
		}
		sb.WriteByte('.')
		sb.WriteString(QuoteIdent(x.Field))
	case *GroupingSet:
		sb.WriteString(x.Kind + "(")
		writeExprList(sb, x.Items)
		sb.WriteByte(')')
	default:
		sb.WriteString("<?>")
	}
}

func writeQualifier(sb *writer, q *IntervalQualifier) {
	sb.WriteString(q.Start)
	if q.Start == "SECOND" && q.End == "" && q.StartPrecision >= 0 && q.FracPrecision >= 0 {
		sb.WriteString("(" + strconv.Itoa(q.StartPrecision) + ", " + strconv.Itoa(q.FracPrecision) + ")")
		return
	}
	if q.StartPrecision >= 0 {
		sb.WriteString("(" + strconv.Itoa(q.StartPrecision) + ")")
	}
	if q.End != "" {
		sb.WriteString(" TO " + q.End)
		if q.FracPrecision >= 0 {
			sb.WriteString("(" + strconv.Itoa(q.FracPrecision) + ")")
		}
	}
}

// funcNameString prints a function name; keyword names stay bare. Names
// that would be read back as special syntax (TRY_CAST(...), DESCRIPTOR(...),
// TIMESTAMPADD(unit, ...)) are back-quoted unless the call really has that
// form.
func funcNameString(f *FuncCall) string {
	name := f.Name
	if len(name) == 1 {
		if functionKeywords[name[0]] || niladicFunctions[name[0]] {
			return name[0]
		}
		switch strings.ToUpper(name[0]) {
		case "TIMESTAMPADD", "TIMESTAMPDIFF":
			if len(f.Args) > 0 {
				if _, ok := f.Args[0].Value.(*TimeUnitExpr); ok {
					return name[0]
				}
			}
			return "`" + name[0] + "`"
		case "TRY_CAST", "DESCRIPTOR":
			return "`" + name[0] + "`"
		}
	}
	return quoteParts(name)
}

func writeFuncCall(sb *writer, f *FuncCall) {
	sb.WriteString(funcNameString(f))
	if f.NoParens {
		return
	}
	sb.WriteByte('(')
	if f.Distinct {
		sb.WriteString("DISTINCT ")
	} else if f.All {
		sb.WriteString("ALL ")
	}
	for i, a := range f.Args {
		if i > 0 {
			sb.WriteString(", ")
		}
		if a.Name != "" {
			sb.WriteString(argName(a.Name) + " => ")
		}
		writeExpr(sb, a.Value)
	}
	sb.WriteByte(')')
	if len(f.WithinGroup) > 0 {
		sb.WriteString(" WITHIN GROUP (ORDER BY ")
		writeOrderItems(sb, f.WithinGroup)
		sb.WriteByte(')')
	}
	if f.Filter != nil {
		sb.WriteString(" FILTER (WHERE ")
		writeExpr(sb, f.Filter)
		sb.WriteByte(')')
	}
	if f.Over != nil {
		sb.WriteString(" OVER ")
		if f.Over.Ref != "" && len(f.Over.PartitionBy) == 0 && len(f.Over.OrderBy) == 0 && f.Over.Frame == nil {
			sb.WriteString(QuoteIdent(f.Over.Ref))
			return
		}
		writeWindowSpec(sb, f.Over)
	}
}

func writeWindowSpec(sb *writer, w *WindowSpec) {
	sb.WriteByte('(')
	sep := ""
	if w.Ref != "" {
		sb.WriteString(QuoteIdent(w.Ref))
		sep = " "
	}
	if len(w.PartitionBy) > 0 {
		sb.WriteString(sep + "PARTITION BY ")
		writeExprList(sb, w.PartitionBy)
		sep = " "
	}
	if len(w.OrderBy) > 0 {
		sb.WriteString(sep + "ORDER BY ")
		writeOrderItems(sb, w.OrderBy)
		sep = " "
	}
	if w.Frame != nil {
		sb.WriteString(sep + w.Frame.Unit + " ")
		if w.Frame.End != nil {
			sb.WriteString("BETWEEN ")
			writeBound(sb, w.Frame.Start)
			sb.WriteString(" AND ")
			writeBound(sb, *w.Frame.End)
		} else {
			writeBound(sb, w.Frame.Start)
		}
	}
	sb.WriteByte(')')
}

func writeBound(sb *writer, b FrameBound) {
	if b.Offset != nil {
		writeOperand(sb, b.Offset, precConcat)
		sb.WriteByte(' ')
	}
	sb.WriteString(b.Kind)
}

func writeOrderItems(sb *writer, items []*OrderItem) {
	for i, it := range items {
		if i > 0 {
			sb.WriteString(", ")
		}
		writeExpr(sb, it.Expr)
		if it.Desc {
			sb.WriteString(" DESC")
		}
		if it.Nulls != "" {
			sb.WriteString(" NULLS " + it.Nulls)
		}
	}
}

func writeType(sb *writer, t *DataType) {
	if t == nil {
		sb.WriteString("<?>")
		return
	}
	switch t.Name {
	case "ARRAY", "MULTISET":
		sb.WriteString(t.Name + "<")
		writeType(sb, t.Elem)
		sb.WriteByte('>')
	case "MAP":
		sb.WriteString("MAP<")
		writeType(sb, t.Key)
		sb.WriteString(", ")
		writeType(sb, t.Value)
		sb.WriteByte('>')
	case "ROW":
		sb.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteIdent(f.Name) + " ")
			writeType(sb, f.Type)
			if f.HasDescription {
				sb.WriteString(" " + QuoteString(f.Description))
			}
		}
		sb.WriteByte('>')
	case "INTERVAL":
		sb.WriteString("INTERVAL ")
		if t.Interval != nil {
			writeQualifier(sb, t.Interval)
		}
	default:
		sb.WriteString(t.Name)
		if len(t.Params) > 0 {
			sb.WriteByte('(')
			for i, n := range t.Params {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(strconv.Itoa(n))
			}
			sb.WriteByte(')')
		}
		if t.Name == "TIME" && t.WithLocalTimeZone {
			sb.WriteString(" WITH LOCAL TIME ZONE")
		}
	}
	if t.NotNull {
		sb.WriteString(" NOT NULL")
	}
}

// ---------------------------------------------------------------- queries

func writeQuery(sb *writer, q *Query) {
	if q == nil {
		return
	}
	if len(q.With) > 0 {
		sb.WriteString("WITH ")
		for i, c := range q.With {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteIdent(c.Name))
			if len(c.Columns) > 0 {
				sb.WriteString(" (" + identList(c.Columns) + ")")
			}
			sb.WriteString(" AS (")
			writeQuery(sb, c.Query)
			sb.WriteByte(')')
		}
		sb.WriteByte(' ')
	}
	writeQueryExpr(sb, q.Body, 0)
	if len(q.OrderBy) > 0 {
		sb.WriteString(" ORDER BY ")
		writeOrderItems(sb, q.OrderBy)
	}
	if q.Limit != nil {
		sb.WriteString(" LIMIT ")
		writeExpr(sb, q.Limit)
	}
	if q.Offset != nil {
		sb.WriteString(" OFFSET ")
		writeExpr(sb, q.Offset)
	}
}

func identList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = QuoteIdent(c)
	}
	return strings.Join(q, ", ")
}

func writeQueryExpr(sb *writer, b QueryExpr, minPrec int) {
	switch x := b.(type) {
	case *Select:
		writeSelect(sb, x)
	case *Values:
		sb.WriteString("VALUES ")
		for i, row := range x.Rows {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('(')
			writeExprList(sb, row)
			sb.WriteByte(')')
		}
	case *Query:
		sb.WriteByte('(')
		writeQuery(sb, x)
		sb.WriteByte(')')
	case *SetOp:
		prec := 1
		if x.Op == "INTERSECT" {
			prec = 2
		}
		paren := prec < minPrec
		if paren {
			sb.WriteByte('(')
		}
		writeQueryExpr(sb, x.Left, prec)
		sb.WriteString(" " + x.Op + " ")
		if x.All {
			sb.WriteString("ALL ")
		}
		writeQueryExpr(sb, x.Right, prec+1)
		if paren {
			sb.WriteByte(')')
		}
	}
}

func writeSelect(sb *writer, s *Select) {
	sb.WriteString("SELECT")
	writeHints(sb, s.Hints)
	sb.WriteString(" ")
	if s.Distinct {
		sb.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			sb.WriteString(", ")
		}
		writeExpr(sb, it.Expr)
		if it.Alias != "" {
			sb.WriteString(" AS " + QuoteIdent(it.Alias))
		}
	}
	if s.From != nil {
		sb.WriteString(" FROM ")
		writeTableRef(sb, s.From)
	}
	if s.Where != nil {
		sb.WriteString(" WHERE ")
		writeExpr(sb, s.Where)
	}
	if len(s.GroupBy) > 0 {
		sb.WriteString(" GROUP BY ")
		writeExprList(sb, s.GroupBy)
	}
	if s.Having != nil {
		sb.WriteString(" HAVING ")
		writeExpr(sb, s.Having)
	}
	if len(s.Windows) > 0 {
		sb.WriteString(" WINDOW ")
		for i, w := range s.Windows {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteIdent(w.Name) + " AS ")
			writeWindowSpec(sb, w.Spec)
		}
	}
}

func writeAlias(sb *writer, alias string, cols []string) {
	if alias == "" {
		return
	}
	sb.WriteString(" AS " + QuoteIdent(alias))
	if len(cols) > 0 {
		sb.WriteString(" (" + identList(cols) + ")")
	}
}

func writeTableRef(sb *writer, r TableRef) {
	switch x := r.(type) {
	case *TableName:
		sb.WriteString(quoteParts(x.Name))
		writeHints(sb, x.Hints)
		if x.SystemTime != nil {
			sb.WriteString(" FOR SYSTEM_TIME AS OF ")
			writeOperand(sb, x.SystemTime, precConcat)
		}
		writeAlias(sb, x.Alias, x.ColumnAliases)
	case *DerivedTable:
		if x.Lateral {
			sb.WriteString("LATERAL ")
		}
		sb.WriteByte('(')
		writeQuery(sb, x.Query)
		sb.WriteByte(')')
		writeAlias(sb, x.Alias, x.ColumnAliases)
	case *TableFunc:
		if x.Lateral {
			sb.WriteString("LATERAL ")
		}
		sb.WriteString("TABLE(")
		writeFuncCall(sb, x.Call)
		sb.WriteByte(')')
		writeAlias(sb, x.Alias, x.ColumnAliases)
	case *MatchRecognize:
		writeMatchRecognize(sb, x)
	case *Unnest:
		sb.WriteString("UNNEST(")
		writeExprList(sb, x.Args)
		sb.WriteByte(')')
		if x.WithOrdinality {
			sb.WriteString(" WITH ORDINALITY")
		}
		writeAlias(sb, x.Alias, x.ColumnAliases)
	case *Join:
		writeTableRef(sb, x.Left)
		if x.Kind == JoinComma {
			sb.WriteString(", ")
		} else {
			sb.WriteByte(' ')
			if x.Natural {
				sb.WriteString("NATURAL ")
			}
			sb.WriteString(x.Kind + " JOIN ")
		}
		if j, ok := x.Right.(*Join); ok {
			sb.WriteByte('(')
			writeTableRef(sb, j)
			sb.WriteByte(')')
		} else {
			writeTableRef(sb, x.Right)
		}
		if x.On != nil {
			sb.WriteString(" ON ")
			writeExpr(sb, x.On)
		}
		if len(x.Using) > 0 {
			sb.WriteString(" USING (" + identList(x.Using) + ")")
		}
	}
}

// argName prints a named-argument name; any plain word is allowed before =>.
func argName(n string) string {
	for i, r := range n {
		if (i == 0 && !isIdentStart(r)) || !isIdentPart(r) {
			return QuoteIdent(n)
		}
	}
	if n == "" {
		return QuoteIdent(n)
	}
	return n
}

func writeHints(sb *writer, hints []*Hint) {
	if len(hints) == 0 {
		return
	}
	sb.WriteString(" /*+ ")
	for i, h := range hints {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(h.Name)
		if len(h.Args)+len(h.Options) == 0 {
			continue
		}
		sb.WriteByte('(')
		for j, a := range h.Args {
			if j > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteString(a))
		}
		for j, o := range h.Options {
			if j > 0 || len(h.Args) > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(QuoteString(o.Key) + " = " + QuoteString(o.Value))
		}
		sb.WriteByte(')')
	}
	sb.WriteString(" */")
}

func writeMatchRecognize(sb *writer, m *MatchRecognize) {
	writeTableRef(sb, m.Input)
	sb.WriteString(" MATCH_RECOGNIZE (")
	if len(m.PartitionBy) > 0 {
		sb.WriteString("PARTITION BY ")
		writeExprList(sb, m.PartitionBy)
		sb.WriteByte(' ')
	}
	if len(m.OrderBy) > 0 {
		sb.WriteString("ORDER BY ")
		writeOrderItems(sb, m.OrderBy)
		sb.WriteByte(' ')
	}
	if len(m.Measures) > 0 {
		sb.WriteString("MEASURES ")
		for i, it := range m.Measures {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeExpr(sb, it.Expr)
			sb.WriteString(" AS " + QuoteIdent(it.Alias))
		}
		sb.WriteByte(' ')
	}
	if m.AllRows {
		sb.WriteString("ALL ROWS PER MATCH ")
	} else {
		sb.WriteString("ONE ROW PER MATCH ")
	}
	if m.Skip != "" {
		sb.WriteString("AFTER MATCH SKIP " + m.Skip)
		if m.SkipVar != "" {
			sb.WriteString(" " + QuoteIdent(m.SkipVar))
		}
		sb.WriteByte(' ')
	}
	sb.WriteString("PATTERN (")
	for i, e := range m.Pattern {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(QuoteIdent(e.Var) + e.Quant)
	}
	sb.WriteString(") ")
	if m.Within != nil {
		sb.WriteString("WITHIN ")
		writeExpr(sb, m.Within)
		sb.WriteByte(' ')
	}
	sb.WriteString("DEFINE ")
	for i, d := range m.Defines {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(QuoteIdent(d.Var) + " AS ")
		writeExpr(sb, d.Cond)
	}
	sb.WriteByte(')')
	writeAlias(sb, m.Alias, m.ColumnAliases)
}
