package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// GroupAggNode is an unwindowed GROUP BY (also SELECT DISTINCT): output
// [keys..., aggregates...], an updating stream.
type GroupAggNode struct {
	base
	KeyCols []int
	Aggs    []AggCall
	// GenerateUpdateBefore is decided by what the consumers need.
	GenerateUpdateBefore bool
	// InputRetracts: the input carries -U/-D rows.
	InputRetracts bool
}

func (n *GroupAggNode) Describe() string {
	in := n.inputs[0].Schema()
	var items []string
	keys := make([]string, len(n.KeyCols))
	for i, c := range n.KeyCols {
		keys[i] = in[c].Name
		items = append(items, in[c].Name)
	}
	for _, a := range n.Aggs {
		items = append(items, a.Text+" AS "+a.Name)
	}
	s := "GroupAggregate("
	if len(keys) > 0 {
		s += "groupBy=[" + strings.Join(keys, ", ") + "], "
	}
	return s + "select=[" + strings.Join(items, ", ") + "])"
}

// ChangelogNormalizeNode turns an upsert stream keyed by KeyCols into a full changelog.
type ChangelogNormalizeNode struct {
	base
	KeyCols              []int
	GenerateUpdateBefore bool
}

func (n *ChangelogNormalizeNode) Describe() string {
	return "ChangelogNormalize(key=[" + colNames(n.schema, n.KeyCols) + "])"
}

// DropUpdateBeforeNode removes the -U rows of a changelog source whose
// change events are deduplicated by a ChangelogNormalize keyed by the
// primary key (table.exec.source.cdc-events-duplicate): each +U carries
// the whole new row.
type DropUpdateBeforeNode struct {
	base
}

func (n *DropUpdateBeforeNode) Describe() string { return "DropUpdateBefore" }

// DedupNode keeps the first or last row per key (ROW_NUMBER() = 1 over a time attribute).
type DedupNode struct {
	base
	KeyCols              []int
	RowtimeCol           int // -1: processing time
	KeepLast             bool
	GenerateUpdateBefore bool
}

// Updates reports whether the deduplication can replace a row it emitted:
// keep-last always, keep-first on rowtime when an earlier row arrives late
// (Flink's RowTimeDeduplicateFunction). Only proctime keep-first is insert-only.
func (n *DedupNode) Updates() bool { return n.KeepLast || n.RowtimeCol >= 0 }

func (n *DedupNode) Describe() string {
	keep, order := "FirstRow", "PROCTIME"
	if n.KeepLast {
		keep = "LastRow"
	}
	if n.RowtimeCol >= 0 {
		order = "ROWTIME"
	}
	return fmt.Sprintf("Deduplicate(keep=[%s], key=[%s], order=[%s])", keep, colNames(n.schema, n.KeyCols), order)
}

// RankNode is a Top-N (ROW_NUMBER() with a filter on the row number).
type RankNode struct {
	base
	PartitionCols        []int
	SortKeys             []exec.SortKey
	RankStart, RankEnd   int64
	OutputRankNumber     bool
	InputRetracts        bool
	GenerateUpdateBefore bool
	// SortLimit: ORDER BY ... LIMIT over an unbounded input, described as
	// Flink's streaming SortLimit.
	SortLimit bool
}

func (n *RankNode) Describe() string {
	in := n.inputs[0].Schema()
	if n.SortLimit {
		return fmt.Sprintf("SortLimit(orderBy=[%s], offset=[%d], fetch=[%d])", sortKeyNames(in, n.SortKeys), n.RankStart-1, n.RankEnd-n.RankStart+1)
	}
	strategy := "AppendFastStrategy"
	if n.InputRetracts {
		strategy = "RetractStrategy"
	}
	return fmt.Sprintf("Rank(strategy=[%s], rankType=[ROW_NUMBER], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		strategy, n.RankStart, n.RankEnd, colNames(in, n.PartitionCols), sortKeyNames(in, n.SortKeys), strings.Join(n.schema.Names(), ", "))
}

// WindowRankNode is a Top-N per window over window-aggregate or window-TVF output.
type WindowRankNode struct {
	base
	PartitionCols             []int
	WindowStartCol, WindowEnd int
	SortKeys                  []exec.SortKey
	RankStart, RankEnd        int64
	OutputRankNumber          bool
	// Deduplicate: ROW_NUMBER() = 1 ordered by a time attribute (Flink's
	// WindowDeduplicate, which keeps the later of two equal rowtimes).
	Deduplicate bool
	// Loc is the session zone when the window is over TIMESTAMP_LTZ.
	Loc *time.Location
}

func (n *WindowRankNode) Describe() string {
	in := n.inputs[0].Schema()
	if n.Deduplicate {
		return fmt.Sprintf("WindowDeduplicate(window=[win_start=[%s], win_end=[%s]], keep=[%s], partitionKeys=[%s], orderKey=[%s])",
			in[n.WindowStartCol].Name, in[n.WindowEnd].Name, map[bool]string{true: "LastRow", false: "FirstRow"}[n.SortKeys[0].Desc],
			colNames(in, n.PartitionCols), in[n.SortKeys[0].Col].Name)
	}
	return fmt.Sprintf("WindowRank(window=[win_start=[%s], win_end=[%s]], rankType=[ROW_NUMBER], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		in[n.WindowStartCol].Name, in[n.WindowEnd].Name, n.RankStart, n.RankEnd, colNames(in, n.PartitionCols), sortKeyNames(in, n.SortKeys), strings.Join(n.schema.Names(), ", "))
}

// SinkMaterializerNode reconciles an updating stream whose upsert key differs
// from the sink's primary key (Flink's SinkUpsertMaterializer).
type SinkMaterializerNode struct {
	base
	KeyCols   []int
	UpsertKey []int // the input's upsert key, when known
	Reason    string
}

func (n *SinkMaterializerNode) Describe() string {
	return "SinkMaterializer(pk=[" + colNames(n.schema, n.KeyCols) + "], reason=[" + n.Reason + "])"
}

func colNames(s interface{ Names() []string }, cols []int) string {
	names := s.Names()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = names[c]
	}
	return strings.Join(out, ", ")
}

func sortKeyNames(s interface{ Names() []string }, keys []exec.SortKey) string {
	names := s.Names()
	out := make([]string, len(keys))
	for i, k := range keys {
		dir := " ASC"
		if k.Desc {
			dir = " DESC"
		}
		out[i] = names[k.Col] + dir
	}
	return strings.Join(out, ", ")
}
