package parser

// Node is implemented by every AST node.
type Node interface {
	Pos() Pos
}

// Expr is a scalar expression (or an argument form that only appears inside
// function calls: *TableArg, *Descriptor, *TimeUnitExpr, *Star).
type Expr interface {
	Node
	exprNode()
}

// Statement is one SQL statement.
type Statement interface {
	Node
	// Text is the exact source text of the statement (without the
	// terminating ';').
	Text() string
	stmtNode()
}

// QueryExpr is the body of a query: *Select, *Values, *SetOp or a
// parenthesized *Query.
type QueryExpr interface {
	Node
	queryExprNode()
}

// TableRef is an item of a FROM clause: *TableName, *DerivedTable,
// *TableFunc, *Unnest or *Join.
type TableRef interface {
	Node
	tableRefNode()
}

// At holds a node's position; it is embedded in every node.
type At struct{ P Pos }

// Pos returns the position of the node's first token.
func (a At) Pos() Pos { return a.P }

// StmtBase is embedded in every statement.
type StmtBase struct {
	At
	Src string // exact source text of the statement
}

// Text returns the exact source text of the statement.
func (s StmtBase) Text() string { return s.Src }
func (StmtBase) stmtNode()      {}

type exprBase struct{ At }

func (exprBase) exprNode() {}

// ---------------------------------------------------------------- statements

// ColumnKind distinguishes the three kinds of CREATE TABLE columns.
type ColumnKind int

// Column kinds.
const (
	PhysicalColumn ColumnKind = iota
	ComputedColumn
	MetadataColumn
)

func (k ColumnKind) String() string {
	switch k {
	case ComputedColumn:
		return "COMPUTED"
	case MetadataColumn:
		return "METADATA"
	}
	return "PHYSICAL"
}

// ColumnDef is a column of CREATE TABLE.
type ColumnDef struct {
	At
	Name string
	Kind ColumnKind
	Type *DataType // physical and metadata columns
	// Computed columns.
	Expr     Expr
	ExprText string // exact source text of Expr
	// Metadata columns.
	MetadataKey string // "" when FROM 'key' is absent (the column name is the key)
	HasFrom     bool
	Virtual     bool

	PrimaryKey bool   // inline PRIMARY KEY NOT ENFORCED (also recorded in CreateTable.PrimaryKey)
	Comment    string // COMMENT '...'
	HasComment bool
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	At
	Column   []string // rowtime column (a nested field is a dotted path)
	Expr     Expr
	ExprText string // exact source text of Expr
}

// PrimaryKey is [CONSTRAINT name] PRIMARY KEY (cols) [NOT] ENFORCED.
type PrimaryKey struct {
	At
	ConstraintName string
	Columns        []string
	Enforced       bool // true when "ENFORCED" was written without NOT (Flink rejects it)
}

// Option is one 'key' = 'value' pair of a WITH clause.
type Option struct {
	Key, Value       string
	KeyPos, ValuePos Pos
}

// LikeOption is one INCLUDING/EXCLUDING/OVERWRITING clause of CREATE TABLE ... LIKE.
type LikeOption struct {
	Strategy string // INCLUDING, EXCLUDING or OVERWRITING
	Feature  string // ALL, CONSTRAINTS, PARTITIONS, GENERATED, METADATA, OPTIONS, WATERMARKS
}

// TableLike is the LIKE clause of CREATE TABLE.
type TableLike struct {
	At
	Name    []string
	Options []LikeOption
}

// CreateTable is CREATE [TEMPORARY] TABLE.
type CreateTable struct {
	StmtBase
	Temporary     bool
	IfNotExists   bool
	Name          []string // [catalog, [database,]] table
	Columns       []*ColumnDef
	Watermarks    []*Watermark
	PrimaryKey    *PrimaryKey
	Comment       string
	HasComment    bool
	PartitionedBy []string
	Options       []*Option // WITH options in source order
	Like          *TableLike
	AsQuery       *Query // CREATE TABLE ... AS SELECT
}

// CreateView is CREATE [TEMPORARY] VIEW.
type CreateView struct {
	StmtBase
	Temporary   bool
	IfNotExists bool
	Name        []string
	Columns     []string
	Comment     string
	HasComment  bool
	Query       *Query
	QueryText   string // exact source text of the query
}

// Drop is DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name.
type Drop struct {
	StmtBase
	Object    string // "TABLE" or "VIEW"
	Temporary bool
	IfExists  bool
	Name      []string
}

// PartitionValue is one column = literal pair of INSERT ... PARTITION (...).
type PartitionValue struct {
	Column string
	Value  Expr
}

// Insert is INSERT INTO|OVERWRITE (also EXECUTE INSERT ...).
type Insert struct {
	StmtBase
	Overwrite bool
	Table     []string
	Hints     []*Hint // /*+ OPTIONS(…) */ after the table name
	Partition []PartitionValue
	Columns   []string
	Query     *Query
}

// QueryStmt is a query used as a statement.
type QueryStmt struct {
	StmtBase
	Query *Query
}

// Set is SET (list all, Key == "") or SET 'key' = 'value'.
type Set struct {
	StmtBase
	Key   string
	Value string
}

// Reset is RESET (all, Key == "") or RESET 'key'.
type Reset struct {
	StmtBase
	Key string
}

// Show is SHOW TABLES|VIEWS|FUNCTIONS|USER FUNCTIONS|JOBS|CATALOGS|DATABASES|
// CURRENT CATALOG|CURRENT DATABASE|MODULES|FULL MODULES|JARS|COLUMNS.
type Show struct {
	StmtBase
	What    string   // e.g. "TABLES", "CURRENT CATALOG"
	From    []string // FROM/IN qualifier (SHOW TABLES FROM db, SHOW COLUMNS FROM t)
	Like    string   // [NOT] LIKE pattern
	HasLike bool
	NotLike bool
	ILike   bool
}

// ShowCreate is SHOW CREATE TABLE|VIEW name.
type ShowCreate struct {
	StmtBase
	Object string // "TABLE" or "VIEW"
	Name   []string
}

// Describe is DESCRIBE|DESC [EXTENDED] name.
type Describe struct {
	StmtBase
	Extended bool
	Name     []string
}

// Explain is EXPLAIN [PLAN FOR | detail, ...] statement, or EXPLAIN
// MIGRATION FROM 'path' statement (MigrationFrom set): which state of the
// savepoint or checkpoint at path the INSERT or statement set would keep.
type Explain struct {
	StmtBase
	MigrationFrom string
	PlanFor       bool
	Details       []string // upper-cased: CHANGELOG_MODE, ESTIMATED_COST, JSON_EXECUTION_PLAN, PLAN_ADVICE
	Statement     Statement
}

// StatementSet is EXECUTE STATEMENT SET BEGIN ... END (or, in a script,
// BEGIN STATEMENT SET; ...; END;).
type StatementSet struct {
	StmtBase
	Inserts []*Insert
}

// BeginStatementSet is the SQL-client command BEGIN STATEMENT SET (when a
// statement is parsed on its own; ParseScript folds it into StatementSet).
type BeginStatementSet struct{ StmtBase }

// End is the SQL-client command END closing BEGIN STATEMENT SET.
type End struct{ StmtBase }

// DescribeJob is DESCRIBE JOB 'id'.
type DescribeJob struct {
	StmtBase
	JobID string
}

// StopJob is STOP JOB 'id' [WITH SAVEPOINT] [WITH DRAIN].
type StopJob struct {
	StmtBase
	JobID         string
	WithSavepoint bool
	WithDrain     bool
}

// Use is USE [CATALOG] name.
type Use struct {
	StmtBase
	Catalog bool
	Name    []string
}

// ---------------------------------------------------------------- queries

// CTE is one WITH item: name [(cols)] AS (query).
type CTE struct {
	At
	Name    string
	Columns []string
	Query   *Query
}

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	At
	Expr  Expr
	Desc  bool
	Nulls string // "", "FIRST" or "LAST"
}

// Query is [WITH ...] body [ORDER BY ...] [LIMIT n] [OFFSET n] [FETCH ...].
// A parenthesized query inside a set operation is also a *Query.
type Query struct {
	At
	With    []*CTE
	Body    QueryExpr
	OrderBy []*OrderItem
	Limit   Expr // nil when absent; FETCH FIRST n ROWS ONLY also sets it
	Offset  Expr
}

func (*Query) queryExprNode() {}

// SetOp is left UNION|INTERSECT|EXCEPT [ALL|DISTINCT] right.
type SetOp struct {
	At
	Op    string // "UNION", "INTERSECT", "EXCEPT" (MINUS is normalized to EXCEPT)
	All   bool
	Left  QueryExpr
	Right QueryExpr
}

func (*SetOp) queryExprNode() {}

// Values is VALUES row, row, ...
type Values struct {
	At
	Rows [][]Expr
}

func (*Values) queryExprNode() {}

// SelectItem is one item of a select list. Expr is a *Star for * and t.*.
type SelectItem struct {
	At
	Expr  Expr
	Alias string // "" when absent
}

// Select is a SELECT block.
type Select struct {
	At
	Hints    []*Hint // query hints: SELECT /*+ STATE_TTL(…) */ …
	Distinct bool
	Items    []*SelectItem
	From     TableRef // nil when there is no FROM clause
	Where    Expr
	GroupBy  []Expr // may contain *GroupingSet and an empty *RowExpr for ()
	Having   Expr
	Windows  []*NamedWindow
}

func (*Select) queryExprNode() {}

// NamedWindow is one item of the WINDOW clause.
type NamedWindow struct {
	At
	Name string
	Spec *WindowSpec
}

// TableName references a table: [cat.db.]t [FOR SYSTEM_TIME AS OF e] [[AS] alias [(cols)]].
type TableName struct {
	At
	Name          []string
	Hints         []*Hint // /*+ … */ after the name
	SystemTime    Expr    // FOR SYSTEM_TIME AS OF expr, nil when absent
	Alias         string
	ColumnAliases []string
}

// Hint is one table hint of a /*+ … */ block: NAME, NAME(arg, …) or
// NAME(key = value, …), as OPTIONS('k' = 'v').
type Hint struct {
	At
	Name    string    // upper-cased
	Options []*Option // key = value arguments
	Args    []string  // plain arguments (identifiers, strings, numbers)
}

func (*TableName) tableRefNode() {}

// DerivedTable is [LATERAL] (query) [AS] alias [(cols)].
type DerivedTable struct {
	At
	Lateral       bool
	Query         *Query
	Alias         string
	ColumnAliases []string
}

func (*DerivedTable) tableRefNode() {}

// TableFunc is [LATERAL] TABLE(call) [AS] alias [(cols)]: window TVFs and
// user-defined table functions.
type TableFunc struct {
	At
	Lateral       bool
	Call          *FuncCall
	Alias         string
	ColumnAliases []string
}

func (*TableFunc) tableRefNode() {}

// Unnest is UNNEST(expr, ...) [WITH ORDINALITY] [AS] alias [(cols)].
type Unnest struct {
	At
	Args           []Expr
	WithOrdinality bool
	Alias          string
	ColumnAliases  []string
}

func (*Unnest) tableRefNode() {}

// Join kinds.
const (
	JoinInner = "INNER"
	JoinLeft  = "LEFT"
	JoinRight = "RIGHT"
	JoinFull  = "FULL"
	JoinCross = "CROSS"
	JoinComma = "COMMA" // FROM a, b
)

// Join is left [NATURAL] kind JOIN right [ON cond | USING (cols)].
type Join struct {
	At
	Kind    string // one of the Join* constants
	Natural bool
	Left    TableRef
	Right   TableRef
	On      Expr
	Using   []string
}

func (*Join) tableRefNode() {}

// ---------------------------------------------------------------- expressions

// Ident is a (possibly compound) identifier: a column reference such as a,
// t.a or t.a.b. Each part is kept as written (back-quotes removed).
type Ident struct {
	exprBase
	Parts []string
}

// Star is * or qualifier.* (select lists and COUNT(*)).
type Star struct {
	exprBase
	Qualifier []string
}

// LiteralKind classifies a Literal.
type LiteralKind int

// Literal kinds.
const (
	NumberLit    LiteralKind = iota // Value holds the literal text, e.g. 1, 1.5, 1e10
	StringLit                       // Value holds the unescaped contents
	BinaryLit                       // Value holds the hex digits of X'..'
	BoolLit                         // Value is "TRUE" or "FALSE"
	NullLit                         // Value is "NULL"
	UnknownLit                      // Value is "UNKNOWN"
	DateLit                         // DATE '...'
	TimeLit                         // TIME '...'
	TimestampLit                    // TIMESTAMP '...'
)

// Literal is a constant.
type Literal struct {
	exprBase
	Kind  LiteralKind
	Value string
}

// IntervalQualifier is the unit part of an interval literal or type:
// Start [(StartPrecision)] [TO End [(FracPrecision)]]. Units are singular and
// upper-case (MINUTES is normalized to MINUTE). Precisions are -1 when absent.
type IntervalQualifier struct {
	Start          string
	StartPrecision int
	End            string
	FracPrecision  int
}

// IntervalLit is INTERVAL [-]'value' qualifier.
type IntervalLit struct {
	exprBase
	Negative  bool
	Value     string
	Qualifier IntervalQualifier
}

// UnaryExpr is -x, +x or NOT x.
type UnaryExpr struct {
	exprBase
	Op string // "-", "+", "NOT"
	X  Expr
}

// BinaryExpr is a binary operator: OR, AND, =, <>, <, <=, >, >=, ||, +, -, *, /, %.
// != is normalized to <>.
type BinaryExpr struct {
	exprBase
	Op   string
	L, R Expr
}

// IsExpr is x IS [NOT] NULL|TRUE|FALSE|UNKNOWN.
type IsExpr struct {
	exprBase
	X    Expr
	Not  bool
	What string
}

// IsDistinctFrom is l IS [NOT] DISTINCT FROM r.
type IsDistinctFrom struct {
	exprBase
	L, R Expr
	Not  bool
}

// BetweenExpr is x [NOT] BETWEEN [ASYMMETRIC|SYMMETRIC] lo AND hi.
type BetweenExpr struct {
	exprBase
	X, Lo, Hi Expr
	Not       bool
	Symmetric bool
}

// InExpr is x [NOT] IN (list) or x [NOT] IN (query).
type InExpr struct {
	exprBase
	X     Expr
	Not   bool
	List  []Expr
	Query *Query
}

// LikeExpr is x [NOT] LIKE|ILIKE|SIMILAR TO pattern [ESCAPE e].
type LikeExpr struct {
	exprBase
	X       Expr
	Not     bool
	Op      string // "LIKE", "ILIKE" or "SIMILAR TO"
	Pattern Expr
	Escape  Expr
}

// Arg is one argument of a function call. Name is "" for positional
// arguments and the upper-cased parameter name for name => value.
type Arg struct {
	Name    string
	NamePos Pos
	Value   Expr
}

// FrameBound is one end of a window frame.
type FrameBound struct {
	Kind   string // "UNBOUNDED PRECEDING", "UNBOUNDED FOLLOWING", "CURRENT ROW", "PRECEDING", "FOLLOWING"
	Offset Expr   // for PRECEDING / FOLLOWING
}

// WindowFrame is ROWS|RANGE [BETWEEN] start [AND end].
type WindowFrame struct {
	Unit  string // "ROWS" or "RANGE"
	Start FrameBound
	End   *FrameBound // nil when no BETWEEN
}

// WindowSpec is the specification of OVER (...) or of a WINDOW clause item.
type WindowSpec struct {
	At
	Ref         string // OVER w or OVER (w ...) reference, "" when absent
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *WindowFrame
}

// FuncCall is a function call: name([DISTINCT|ALL] args) [WITHIN GROUP (ORDER BY ...)]
// [FILTER (WHERE e)] [OVER ...]. Name parts keep their case as written
// except for keyword function names (COUNT, SUM, FLOOR, ...), which are
// upper-cased. NoParens marks niladic calls such as CURRENT_TIMESTAMP.
type FuncCall struct {
	exprBase
	Name        []string
	Distinct    bool
	All         bool
	Args        []Arg
	NoParens    bool
	WithinGroup []*OrderItem
	Filter      Expr
	Over        *WindowSpec
}

// ArgExprs returns the argument values in order (names are dropped).
func (f *FuncCall) ArgExprs() []Expr {
	out := make([]Expr, len(f.Args))
	for i, a := range f.Args {
		out[i] = a.Value
	}
	return out
}

// FuncName returns the function name parts joined with '.'.
func (f *FuncCall) FuncName() string {
	s := ""
	for i, p := range f.Name {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

// TableArg is a table argument of a table function: TABLE name [PARTITION BY ...]
// or TABLE (query).
type TableArg struct {
	exprBase
	Name        []string
	Query       *Query
	PartitionBy []Expr
}

// Descriptor is DESCRIPTOR(col, ...).
type Descriptor struct {
	exprBase
	Columns []string
}

// TimeUnitExpr is a bare time unit argument (TIMESTAMPADD(DAY, ...)).
type TimeUnitExpr struct {
	exprBase
	Unit string
}

// When is one WHEN ... THEN ... branch. In a simple CASE (with an operand)
// the branch may list several values, WHEN 1, 2 THEN ...: Cond is the first,
// More the others.
type When struct {
	Cond, Result Expr
	More         []Expr
}

// CaseExpr is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type CaseExpr struct {
	exprBase
	Operand Expr
	Whens   []When
	Else    Expr
}

// CastExpr is CAST(x AS type) or TRY_CAST(x AS type).
type CastExpr struct {
	exprBase
	X    Expr
	Type *DataType
	Try  bool
}

// ExtractExpr is EXTRACT(unit FROM x).
type ExtractExpr struct {
	exprBase
	Unit string
	X    Expr
}

// FloorCeilExpr is FLOOR(x TO unit) or CEIL(x TO unit). Plain FLOOR(x) is a FuncCall.
type FloorCeilExpr struct {
	exprBase
	Ceil bool
	X    Expr
	Unit string
}

// JsonExpr is one of the SQL/JSON functions with clauses of their own:
// JSON_VALUE, JSON_QUERY, JSON_EXISTS (Args = json, path), JSON_OBJECT (Args
// = key, value, key, value, ...) and JSON_ARRAY (Args = values).
type JsonExpr struct {
	exprBase
	Func      string
	Args      []Expr
	Returning *DataType // RETURNING type, nil when absent
	// Wrapper is JSON_QUERY's WITHOUT / WITH CONDITIONAL / WITH
	// UNCONDITIONAL [ARRAY] WRAPPER: "WITHOUT", "CONDITIONAL" or
	// "UNCONDITIONAL" ("" when absent).
	Wrapper string
	// OnEmpty and OnError are the behaviours: NULL, ERROR, DEFAULT, EMPTY
	// ARRAY, EMPTY OBJECT, TRUE, FALSE, UNKNOWN ("" when absent).
	OnEmpty, OnError           string
	EmptyDefault, ErrorDefault Expr
	OnNull                     string // JSON_OBJECT / JSON_ARRAY: NULL or ABSENT ("" when absent)
}

// TrimExpr is TRIM([BOTH|LEADING|TRAILING] [chars] FROM x) or TRIM(x).
type TrimExpr struct {
	exprBase
	Mode  string // "BOTH", "LEADING", "TRAILING"; BOTH when not written
	Chars Expr   // nil means ' '
	X     Expr
}

// SubstringExpr is SUBSTRING(x FROM start [FOR length]) or SUBSTRING(x, start[, length]).
type SubstringExpr struct {
	exprBase
	X, Start, Length Expr // Length may be nil
}

// PositionExpr is POSITION(sub IN x [FROM start]).
type PositionExpr struct {
	exprBase
	Sub, X, From Expr
}

// OverlayExpr is OVERLAY(x PLACING y FROM start [FOR length]).
type OverlayExpr struct {
	exprBase
	X, Placing, Start, Length Expr
}

// RowExpr is ROW(a, b) or (a, b). Explicit is true for the ROW keyword form.
// An empty RowExpr represents the empty grouping set ().
type RowExpr struct {
	exprBase
	Fields   []Expr
	Explicit bool
}

// ArrayExpr is ARRAY[a, b].
type ArrayExpr struct {
	exprBase
	Elems []Expr
}

// MapExpr is MAP[k1, v1, k2, v2].
type MapExpr struct {
	exprBase
	Elems []Expr // alternating keys and values
}

// SubqueryExpr is a scalar subquery (SELECT ...).
type SubqueryExpr struct {
	exprBase
	Query *Query
}

// ExistsExpr is EXISTS (query).
type ExistsExpr struct {
	exprBase
	Query *Query
}

// SubscriptExpr is x[index].
type SubscriptExpr struct {
	exprBase
	X, Index Expr
}

// FieldAccess is x.field where x is not a plain identifier (e.g. f(a).b or arr[1].b).
type FieldAccess struct {
	exprBase
	X     Expr
	Field string
}

// GroupingSet is GROUPING SETS (...), ROLLUP(...) or CUBE(...) in GROUP BY.
type GroupingSet struct {
	exprBase
	Kind  string // "GROUPING SETS", "ROLLUP", "CUBE"
	Items []Expr // items may be *RowExpr for (a, b) and ()
}

// ---------------------------------------------------------------- data types

// RowField is a field of ROW<...> / ROW(...).
type RowField struct {
	Name           string
	Type           *DataType
	Description    string
	HasDescription bool
}

// DataType is a SQL data type as written. Name is the upper-cased base name
// with synonyms normalized: INTEGER->INT, DEC/NUMERIC->DECIMAL,
// DOUBLE PRECISION->DOUBLE, REAL->FLOAT, CHARACTER->CHAR,
// CHARACTER VARYING->VARCHAR, TIMESTAMP WITH LOCAL TIME ZONE->TIMESTAMP_LTZ
// (WithLocalTimeZone is then true). Params holds the precision/length/scale
// numbers as written (empty when absent).
type DataType struct {
	At
	Name              string
	Params            []int
	NotNull           bool
	WithLocalTimeZone bool
	WithoutTimeZone   bool               // TIMESTAMP/TIME ... WITHOUT TIME ZONE written explicitly
	Elem              *DataType          // ARRAY, MULTISET
	Key, Value        *DataType          // MAP
	Fields            []*RowField        // ROW
	Interval          *IntervalQualifier // INTERVAL types
}

// NewIdent returns an identifier at p, for planners that rewrite a query
// and want errors about the new reference to point at the text it stands
// for.
func NewIdent(p Pos, parts ...string) *Ident {
	return &Ident{exprBase: exprBase{At{P: p}}, Parts: parts}
}
