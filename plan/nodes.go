package plan

import (
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// Node is a node of a physical plan. Every node knows its output schema and
// the changelog mode of the stream it produces.
type Node interface {
	Schema() types.Schema
	Inputs() []Node
	Mode() types.ChangelogMode
	// Describe is the node's one-line EXPLAIN form without the changelog mode,
	// e.g. "Calc(select=[a, b], where=[>(a, 10)])".
	Describe() string
}

type base struct {
	schema types.Schema
	inputs []Node
	mode   types.ChangelogMode
}

func (b *base) Schema() types.Schema      { return b.schema }
func (b *base) Inputs() []Node            { return b.inputs }
func (b *base) Mode() types.ChangelogMode { return b.mode }

// ScanNode reads a catalog table through its connector. Its rows are the
// table's columns in declared order (computed columns evaluated at the
// source); watermarks are generated in the source, per split.
type ScanNode struct {
	base
	Table  *catalog.Table
	Source connectors.ScanSource
	// ReadWidth is the width of the rows the connector produces (physical
	// columns followed by metadata columns).
	ReadWidth int
	// Prepare maps a read row to the table row (nil when they are the same).
	Prepare []expr.Expr
	// Watermark is the watermark expression over the table row, or nil.
	Watermark   expr.Expr
	EmitOnEvent bool
	// IdleTimeout is the source's idle timeout: the table's
	// 'scan.watermark.idle-timeout' when HasIdleTimeout, which replaces
	// table.exec.source.idle-timeout, else the latter (0: off).
	IdleTimeout    time.Duration
	HasIdleTimeout bool
}

func (n *ScanNode) Describe() string {
	var b strings.Builder
	b.WriteString("TableSourceScan(table=[[")
	id := n.Table.ID
	b.WriteString(id.Catalog + ", " + id.Database + ", " + id.Object)
	if n.Watermark != nil {
		b.WriteString(", watermark=[" + n.Watermark.String() + "]")
		if n.IdleTimeout > 0 { // as Flink's WatermarkPushDownSpec digest
			b.WriteString(", idletimeout=[" + strconv.FormatInt(n.IdleTimeout.Milliseconds(), 10) + "]")
		}
		if n.EmitOnEvent {
			b.WriteString(", watermarkEmitStrategy=[on-event]")
		}
	}
	b.WriteString("]], fields=[" + strings.Join(n.schema.Names(), ", ") + "])")
	return b.String()
}

// ValuesNode produces literal rows (VALUES, SELECT without FROM).
type ValuesNode struct {
	base
	Rows [][]expr.Expr
}

func (n *ValuesNode) Describe() string {
	var b strings.Builder
	b.WriteString("Values(tuples=[[")
	for i, r := range n.Rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{ ")
		for j, e := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.String())
		}
		b.WriteString(" }")
	}
	b.WriteString("]], values=[" + strings.Join(n.schema.Names(), ", ") + "])")
	return b.String()
}

// CalcNode filters and projects.
type CalcNode struct {
	base
	Project []expr.Expr // nil: identity
	Filter  expr.Expr   // nil: none
}

func (n *CalcNode) Describe() string {
	var b strings.Builder
	b.WriteString("Calc(select=[")
	if n.Project == nil {
		b.WriteString(strings.Join(n.inputs[0].Schema().Names(), ", "))
	} else {
		for i, e := range n.Project {
			if i > 0 {
				b.WriteString(", ")
			}
			s := e.String()
			b.WriteString(s)
			if name := n.schema[i].Name; name != s {
				b.WriteString(" AS " + name)
			}
		}
	}
	b.WriteString("]")
	if n.Filter != nil {
		b.WriteString(", where=[" + n.Filter.String() + "]")
	}
	b.WriteString(")")
	return b.String()
}

// ExchangeNode redistributes rows between subtasks.
type ExchangeNode struct {
	base
	Partitioner exec.Partitioner
}

func (n *ExchangeNode) Describe() string {
	switch n.Partitioner.Kind {
	case exec.Hash:
		names := make([]string, len(n.Partitioner.KeyCols))
		for i, c := range n.Partitioner.KeyCols {
			names[i] = n.schema[c].Name
		}
		return "Exchange(distribution=[hash[" + strings.Join(names, ", ") + "]])"
	case exec.Global:
		return "Exchange(distribution=[single])"
	case exec.Broadcast:
		return "Exchange(distribution=[broadcast])"
	}
	return "Exchange(distribution=[any])"
}

// WindowTVFNode appends window_start, window_end and window_time to every
// row (a row of a HOP or CUMULATE window is repeated once per window).
type WindowTVFNode struct {
	base
	Window   exec.WindowSpec
	WindowFn string // explain form, e.g. TUMBLE(time_col=[ts], size=[10 s])
}

func (n *WindowTVFNode) Describe() string {
	return "WindowTableFunction(window=[" + n.WindowFn + "])"
}

// AggCall is one aggregate call of an aggregation node.
type AggCall struct {
	Call agg.Call
	Text string // EXPLAIN form, e.g. SUM(amount)
	Name string // output column name
}

// WindowAggNode aggregates per key and window. Output:
// [keys..., aggregates..., window_start, window_end, window_time].
type WindowAggNode struct {
	base
	Window   exec.WindowSpec
	WindowFn string
	KeyCols  []int
	Aggs     []AggCall
}

func (n *WindowAggNode) Describe() string {
	in := n.inputs[0].Schema()
	var b strings.Builder
	b.WriteString("WindowAggregate(")
	if len(n.KeyCols) > 0 {
		keys := make([]string, len(n.KeyCols))
		for i, c := range n.KeyCols {
			keys[i] = in[c].Name
		}
		b.WriteString("groupBy=[" + strings.Join(keys, ", ") + "], ")
	}
	b.WriteString("window=[" + n.WindowFn + "], select=[")
	var items []string
	for _, c := range n.KeyCols {
		items = append(items, in[c].Name)
	}
	for _, a := range n.Aggs {
		items = append(items, a.Text+" AS "+a.Name)
	}
	items = append(items, "start('w$) AS window_start", "end('w$) AS window_end", "rowtime('w$) AS window_time")
	b.WriteString(strings.Join(items, ", ") + "])")
	return b.String()
}

// UnionNode merges its inputs (UNION ALL).
type UnionNode struct {
	base
}

func (n *UnionNode) Describe() string {
	return "Union(all=[true], union=[" + strings.Join(n.schema.Names(), ", ") + "])"
}

// SortNode sorts bounded input (ORDER BY, optionally with LIMIT/OFFSET).
type SortNode struct {
	base
	Keys          []exec.SortKey
	Offset, Limit int // Limit -1: none
}

func (n *SortNode) Describe() string {
	var keys []string
	for _, k := range n.Keys {
		dir := "ASC"
		if k.Desc {
			dir = "DESC"
		}
		keys = append(keys, n.schema[k.Col].Name+" "+dir)
	}
	s := "Sort(orderBy=[" + strings.Join(keys, ", ") + "]"
	if n.Limit >= 0 {
		s = "SortLimit(orderBy=[" + strings.Join(keys, ", ") + "], offset=[" + itoa(n.Offset) + "], fetch=[" + itoa(n.Limit) + "]"
	}
	return s + ")"
}

// TemporalSortNode sorts an unbounded insert-only stream by its rowtime
// attribute (Keys[0], ascending) and then the other keys, releasing rows as
// the watermark passes them (Flink's TemporalSort).
type TemporalSortNode struct {
	base
	Keys []exec.SortKey
}

func (n *TemporalSortNode) Describe() string {
	return "Temporal" + (&SortNode{base: n.base, Keys: n.Keys, Limit: -1}).Describe()
}

// LimitNode passes the first rows of an insert-only stream (LIMIT without ORDER BY).
type LimitNode struct {
	base
	Offset, Limit int
}

func (n *LimitNode) Describe() string {
	return "Limit(offset=[" + itoa(n.Offset) + "], fetch=[" + itoa(n.Limit) + "])"
}

// SinkNode writes its input into a table (or, for a SELECT, back to the client).
type SinkNode struct {
	base
	Name       string // table identifier, or "collect" for query results
	Sink       connectors.Sink
	Fields     []string
	PrimaryKey []int // the table's primary key, positions in Fields
	// Overwrite: INSERT OVERWRITE. Its writers commit one by one at their
	// end of input (there is no job-wide commit), so it runs with one.
	Overwrite bool
}

func (n *SinkNode) Describe() string {
	return "Sink(table=[" + n.Name + "], fields=[" + strings.Join(n.Fields, ", ") + "])"
}

func itoa(i int) string { return strconv.Itoa(i) }
