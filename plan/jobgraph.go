package plan

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/groupagg"
	"github.com/flinksql/flinksql/exec/rank"
	"github.com/flinksql/flinksql/exec/window"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// JobGraph builds the runtime graph of the plan. Operators chain while the
// parallelism stays the same; every ExchangeNode starts a new vertex.
func (pl *Plan) JobGraph(name string) (*exec.JobGraph, error) {
	gb := &graphBuilder{p: pl.planner, cfg: pl.planner.exprConfig(), g: &exec.JobGraph{Name: name}, ids: newStateIDs(pl.planner)}
	seen := map[string]int{}
	for _, s := range pl.Sinks {
		// The second INSERT into one table feeds "<table>#2".
		seen[s.Name]++
		gb.ids.feeds = s.Name
		if n := seen[s.Name]; n > 1 {
			gb.ids.feeds = fmt.Sprintf("%s#%d", s.Name, n)
		}
		if _, err := gb.build(s); err != nil {
			return nil, err
		}
	}
	return gb.g, nil
}

type graphBuilder struct {
	p   *Planner
	cfg *expr.Config
	g   *exec.JobGraph
	ids *stateIDs
}

func (gb *graphBuilder) newVertex(name string, parallelism int) *exec.Vertex {
	v := &exec.Vertex{ID: len(gb.g.Vertices), Name: name, Parallelism: parallelism}
	gb.g.Vertices = append(gb.g.Vertices, v)
	return v
}

func appendOp(v *exec.Vertex, name string, f func() (exec.Operator, error)) *exec.Vertex {
	v.Chain = append(v.Chain, f)
	v.ChainNames = append(v.ChainNames, name)
	if len(v.ChainNames) == 1 && v.Source == nil {
		v.Name = name
	} else {
		v.Name += " -> " + name
	}
	return v
}

// build returns the vertex whose chain ends with n's operator, which gets
// n's state identity (stateid.go).
func (gb *graphBuilder) build(n Node) (*exec.Vertex, error) {
	v, err := gb.buildNode(n)
	if err != nil || v == nil {
		return v, err
	}
	if st := gb.ids.state(n); st != nil {
		switch n.(type) {
		case *ScanNode, *ValuesNode:
			v.SourceState = st
		default:
			for len(v.States) < len(v.Chain) {
				v.States = append(v.States, nil)
			}
			if len(v.Chain) > 0 {
				v.States[len(v.Chain)-1] = st
			}
		}
	}
	return v, nil
}

func (gb *graphBuilder) buildNode(n Node) (*exec.Vertex, error) {
	switch x := n.(type) {
	case *ScanNode:
		return gb.scan(x), nil
	case *ValuesNode:
		return gb.values(x)
	case *CalcNode:
		x = mergeCalcs(x)
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		proj, filter, width := x.Project, x.Filter, len(x.schema)
		cfg := gb.cfg
		readsWM := usesFunction(filter, "CURRENT_WATERMARK")
		for _, e := range proj {
			readsWM = readsWM || usesFunction(e, "CURRENT_WATERMARK")
		}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) {
			var pred exec.Predicate
			var p exec.Projector
			cfg := cfg
			var wm *int64
			if readsWM {
				// Each instance reads its own watermark.
				wm = new(int64)
				cfg.Watermark = func() int64 { return *wm }
			}
			switch {
			case filter != nil && proj != nil:
				pred, p = expr.NewFilterProjector(filter, proj, cfg)
			case filter != nil:
				pred = expr.NewPredicate(filter, cfg)
			case proj != nil:
				p = expr.NewProjector(proj, cfg)
			}
			if wm != nil {
				return exec.NewWatermarkCalc(pred, p, width, wm), nil
			}
			return exec.NewCalc(pred, p, width), nil
		}), nil
	case *ExchangeNode:
		in, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		par := gb.p.cfg.Parallelism
		if x.Partitioner.Kind == exec.Global {
			par = 1
		}
		v := gb.newVertex(x.Describe(), par)
		v.Inputs = []exec.Input{{From: in.ID, Partitioner: x.Partitioner}}
		return v, nil
	case *WindowAggNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		calls := make([]agg.Call, len(x.Aggs))
		for i, a := range x.Aggs {
			calls[i] = a.Call
		}
		spec, keys := x.Window, x.KeyCols
		opts := agg.Options{NeedsMerge: spec.Kind != exec.Tumble, NeedsRetraction: spec.Retracting}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) {
			h, err := agg.NewHandle(calls, opts)
			if err != nil {
				return nil, err
			}
			return window.NewAggregate(window.AggregateSpec{Window: spec, KeyCols: keys, Aggs: h})
		}), nil
	case *GroupAggNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		calls := make([]agg.Call, len(x.Aggs))
		for i, a := range x.Aggs {
			calls[i] = a.Call
		}
		spec := groupagg.GroupAggSpec{
			KeyCols:              x.KeyCols,
			GenerateUpdateBefore: x.GenerateUpdateBefore,
			StateTTL:             gb.p.cfg.StateTTL,
			MiniBatch:            groupagg.MiniBatch(gb.p.cfg.MiniBatch),
		}
		retracts := x.InputRetracts
		return appendOp(v, x.Describe(), func() (exec.Operator, error) {
			sp := spec
			if len(calls) > 0 {
				h, err := agg.NewHandle(calls, agg.Options{NeedsRetraction: retracts})
				if err != nil {
					return nil, err
				}
				sp.Aggs = h
			}
			return groupagg.NewGroupAggregate(sp)
		}), nil
	case *DropUpdateBeforeNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewDropUpdateBefore(), nil }), nil
	case *ChangelogNormalizeNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec := groupagg.NormalizeSpec{KeyCols: x.KeyCols, GenerateUpdateBefore: x.GenerateUpdateBefore, StateTTL: gb.p.cfg.StateTTL}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return groupagg.NewChangelogNormalize(spec) }), nil
	case *SinkMaterializerNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec := groupagg.MaterializerSpec{KeyCols: x.KeyCols, UpsertKey: x.UpsertKey, StateTTL: gb.p.cfg.StateTTL}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return groupagg.NewSinkUpsertMaterializer(spec) }), nil
	case *DedupNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec := rank.DedupSpec{KeyCols: x.KeyCols, RowtimeCol: x.RowtimeCol, KeepLast: x.KeepLast,
			GenerateUpdateBefore: x.GenerateUpdateBefore, StateTTL: gb.p.cfg.StateTTL}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return rank.NewDeduplicate(spec) }), nil
	case *RankNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec := rank.RankSpec{PartitionCols: x.PartitionCols, SortKeys: x.SortKeys, RankStart: x.RankStart, RankEnd: x.RankEnd,
			OutputRankNumber: x.OutputRankNumber, InputIsUpdating: x.InputRetracts,
			GenerateUpdateBefore: x.GenerateUpdateBefore, StateTTL: gb.p.cfg.StateTTL}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return rank.NewRank(spec) }), nil
	case *WindowRankNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec := rank.WindowRankSpec{PartitionCols: x.PartitionCols, WindowStartCol: x.WindowStartCol, WindowEndCol: x.WindowEnd,
			SortKeys: x.SortKeys, RankStart: x.RankStart, RankEnd: x.RankEnd, OutputRankNumber: x.OutputRankNumber,
			Deduplicate: x.Deduplicate, Loc: x.Loc}
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return rank.NewWindowRank(spec) }), nil
	case *OverAggNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		return appendOp(v, x.Describe(), gb.overOperator(x)), nil
	case *MatchNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		return appendOp(v, x.Describe(), gb.matchOperator(x)), nil
	case *WindowTVFNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		spec, width := x.Window, len(x.inputs[0].Schema())
		return appendOp(v, x.Describe(), func() (exec.Operator, error) {
			return window.NewTableFunction(spec, width)
		}), nil
	case *SetOpNode:
		return gb.setOpVertex(x)
	case *JoinNode:
		return gb.buildJoin(x)
	case *IntervalJoinNode:
		return gb.buildIntervalJoin(x)
	case *WindowJoinNode:
		return gb.buildWindowJoin(x)
	case *LookupJoinNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		return appendOp(v, x.Describe(), gb.lookupOp(x)), nil
	case *TemporalJoinNode:
		return gb.temporalJoin(x)
	case *ExpandNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		width, sets := len(x.inputs[0].Schema()), x.Sets
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewExpand(width, sets) }), nil
	case *UnnestNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		return appendOp(v, x.Describe(), gb.unnestOp(x)), nil
	case *UnionNode:
		par := gb.p.cfg.Parallelism
		var inputs []exec.Input
		for _, in := range x.inputs {
			iv, err := gb.build(in)
			if err != nil {
				return nil, err
			}
			part := exec.Partitioner{Kind: exec.Forward}
			if iv.Parallelism != par {
				part.Kind = exec.Rebalance
			}
			inputs = append(inputs, exec.Input{From: iv.ID, Partitioner: part})
		}
		v := gb.newVertex("", par)
		v.Inputs = inputs
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewIdentity(), nil }), nil
	case *SortNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		keys, off, lim := x.Keys, x.Offset, x.Limit
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewSort(keys, off, lim), nil }), nil
	case *TemporalSortNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		keys := x.Keys
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewTemporalSort(keys[0].Col, keys), nil }), nil
	case *FinalNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		width := len(x.schema)
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewFinal(width), nil }), nil
	case *LimitNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		off, lim := x.Offset, x.Limit
		return appendOp(v, x.Describe(), func() (exec.Operator, error) { return exec.NewLimit(off, lim), nil }), nil
	case *SinkNode:
		v, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		// As in Flink, a sink without a configured parallelism runs with its
		// input's, so it chains and per-key order is kept.
		par := x.Sink.Parallelism(v.Parallelism)
		if par <= 0 {
			par = v.Parallelism
		}
		if x.Overwrite && par > 1 {
			// With several writers a failure between their commits would
			// leave the old files deleted and only part of the new ones.
			return nil, &UnsupportedError{Msg: fmt.Sprintf("INSERT OVERWRITE into table '%s' is written by one writer, so that the table's files are replaced in one commit; it would run with %d. Set 'sink.parallelism' = '1' on the table (or 'parallelism.default' = '1').", x.Name, par)}
		}
		if ks, ok := x.Sink.(connectors.KeyedWriters); ok && ks.KeyedByPrimaryKey() && par > 1 && len(x.PrimaryKey) > 0 {
			// Each key's changes must reach one writer, whatever the
			// input is keyed by (Flink's Iceberg sink keys by its equality
			// fields).
			nv := gb.newVertex("", par)
			nv.Inputs = []exec.Input{{From: v.ID, Partitioner: exec.Partitioner{Kind: exec.Hash, KeyCols: x.PrimaryKey}}}
			v = nv
		} else if par != v.Parallelism {
			part := exec.Partitioner{Kind: exec.Rebalance}
			if par == 1 {
				part.Kind = exec.Global
			}
			switch {
			case par > 1 && len(x.PrimaryKey) > 0:
				// Flink's table.exec.sink.keyed-shuffle (AUTO): the rows of one
				// key reach one subtask in order, inserts as well as changes.
				part = exec.Partitioner{Kind: exec.Hash, KeyCols: x.PrimaryKey}
			case updating(x.mode) && par > 1:
				// Changes of one key must reach one subtask in order; gathering
				// into a single subtask keeps each channel's order already.
				// Without a key there is no way to route them.
				return nil, fmt.Errorf("The sink for table '%s' has a configured parallelism of %d, while the input parallelism is %d. "+
					"Since the configured parallelism is different from the input's parallelism and the changelog mode is not insert-only, a primary key is required but could not be found.",
					x.Name, par, v.Parallelism)
			}
			nv := gb.newVertex("", par)
			nv.Inputs = []exec.Input{{From: v.ID, Partitioner: part}}
			v = nv
		}
		sink := x.Sink
		var opts []exec.SinkOption
		if nn, ok := gb.notNull(x); ok {
			opts = append(opts, exec.WithNotNull(nn))
		}
		// The writer is created when the operator opens, once the runtime has
		// told it its subtask; the runtime still sees it (two-phase commit).
		cs, committing := sink.(connectors.CommittingSink)
		if committing {
			opts = append(opts, exec.WithCommittableEmitter())
		}
		v = appendOp(v, x.Describe(), func() (exec.Operator, error) {
			return exec.NewSinkOperatorFunc(sink.NewWriter, opts...), nil
		})
		if committing {
			// The single committer of the parallel writers; it holds the
			// committables in its state and gets the sink's state identity.
			cv := gb.newVertex("", 1)
			cv.Inputs = []exec.Input{{From: v.ID, Partitioner: exec.Partitioner{Kind: exec.Global}}}
			v = appendOp(cv, cs.CommitterName(), func() (exec.Operator, error) {
				w, err := cs.NewCommitter()
				if err != nil {
					return nil, err
				}
				return exec.NewSinkOperator(w), nil
			})
		}
		return v, nil
	}
	return nil, fmt.Errorf("internal error: no runtime operator for plan node %T", n)
}

// notNull is the not-null enforcement of a table sink: every NOT NULL
// column of the sink table (primary key columns are NOT NULL implicitly), as
// Flink's ConstraintEnforcer, whatever the query's types say. The collect
// sink of a SELECT has the query's own types and is not checked.
func (gb *graphBuilder) notNull(x *SinkNode) (exec.NotNullSpec, bool) {
	if _, collect := x.Sink.(*collectSink); collect {
		return exec.NotNullSpec{}, false
	}
	spec := exec.NotNullSpec{Table: x.Name, Action: gb.p.cfg.NotNullEnforcer, Log: gb.p.cfg.Log}
	for i, c := range x.schema {
		if c.Type.NotNull {
			spec.Cols = append(spec.Cols, i)
			spec.Names = append(spec.Names, c.Name)
		}
	}
	return spec, len(spec.Cols) > 0
}

func (gb *graphBuilder) scan(x *ScanNode) *exec.Vertex {
	par := x.Source.Parallelism(gb.p.cfg.Parallelism)
	if par <= 0 {
		par = gb.p.cfg.Parallelism
	}
	v := gb.newVertex(x.Describe(), par)
	src := x.Source
	cfg := gb.cfg
	spec := &exec.SourceSpec{
		NewReader:     func(subtask, parallelism int) (exec.SourceReader, error) { return src.NewReader(subtask, parallelism) },
		Width:         x.ReadWidth,
		PreparedWidth: len(x.schema),
	}
	if x.Prepare != nil {
		prep := x.Prepare
		spec.Prepare = func() (exec.Projector, error) { return expr.NewProjector(prep, cfg), nil }
	} else {
		spec.PreparedWidth = x.ReadWidth
	}
	// In batch mode the end of input's is the only watermark (batch.go).
	if x.Watermark != nil && !gb.p.batch {
		wm := x.Watermark
		spec.Watermark = &exec.WatermarkSpec{
			Expr:           func() (exec.Projector, error) { return expr.NewProjector([]expr.Expr{wm}, cfg), nil },
			EmitOnEvent:    x.EmitOnEvent,
			IdleTimeout:    x.IdleTimeout,
			HasIdleTimeout: x.HasIdleTimeout,
			Shift:          watermarkShift(wm),
		}
	}
	v.Source = spec
	return v
}

func (gb *graphBuilder) values(x *ValuesNode) (*exec.Vertex, error) {
	rows := make([]types.Row, len(x.Rows))
	for i, r := range x.Rows {
		row := make(types.Row, len(r))
		for j, e := range r {
			v, err := expr.EvalConstant(e, gb.cfg)
			if err != nil {
				return nil, err
			}
			row[j] = v
		}
		rows[i] = row
	}
	v := gb.newVertex(x.Describe(), 1)
	width := len(x.schema)
	v.Source = &exec.SourceSpec{
		NewReader: func(subtask, parallelism int) (exec.SourceReader, error) {
			return &valuesReader{rows: rows}, nil
		},
		Width:         width,
		PreparedWidth: width,
	}
	return v, nil
}

// valuesReader emits the rows of a VALUES clause once. Its position, the
// number of rows emitted, is checkpointed, so a restored job neither emits
// them again nor skips any.
type valuesReader struct {
	rows []types.Row
	next int
}

var _ exec.CheckpointedReader = (*valuesReader)(nil)

// SnapshotPosition implements exec.CheckpointedReader.
func (r *valuesReader) SnapshotPosition() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(r.next)), nil
}

// RestorePosition implements exec.CheckpointedReader.
func (r *valuesReader) RestorePosition(pos []byte) error {
	if len(pos) != 8 {
		return fmt.Errorf("VALUES reader: bad restored position of %d bytes", len(pos))
	}
	n := binary.BigEndian.Uint64(pos)
	if n > uint64(len(r.rows)) {
		return fmt.Errorf("VALUES reader: restored position %d is past its %d rows; the checkpoint belongs to another query", n, len(r.rows))
	}
	r.next = int(n)
	return nil
}

func (r *valuesReader) Open(context.Context) error { return nil }
func (r *valuesReader) NumSplits() int             { return 1 }
func (r *valuesReader) Close() error               { return nil }
func (r *valuesReader) Read(_ context.Context, b *types.Batch) (exec.ReadResult, error) {
	for r.next < len(r.rows) && !b.Full() {
		b.AppendRow(types.Insert, r.rows[r.next])
		r.next++
	}
	done := r.next >= len(r.rows)
	return exec.ReadResult{Split: 0, SplitDone: done, End: done}, nil
}

// usesFunction reports whether e calls the function name.
func usesFunction(e expr.Expr, name string) bool {
	found := false
	if e != nil {
		expr.Walk(e, func(x expr.Expr) bool {
			found = found || expr.CallName(x) == name
			return !found
		})
	}
	return found
}

// watermarkShift recognises a watermark expression that is a TIMESTAMP
// column, or one plus or minus a constant day-time interval (WATERMARK FOR
// ts AS ts - INTERVAL '4' SECOND), for the source to compute without
// evaluating it per row.
func watermarkShift(e expr.Expr) *exec.WatermarkShift {
	ts := func(x expr.Expr) (int, bool) {
		c, ok := x.(*expr.ColumnRef)
		if !ok {
			return 0, false
		}
		r := c.T.Root
		return c.Index, r == types.RootTimestamp || r == types.RootTimestampLTZ
	}
	if col, ok := ts(e); ok {
		return &exec.WatermarkShift{Col: col}
	}
	name, args := expr.CallName(e), expr.CallArgs(e)
	if (name != "-" && name != "+") || len(args) != 2 {
		return nil
	}
	col, ok := ts(args[0])
	if !ok {
		return nil
	}
	iv, ok := expr.LiteralValue(args[1])
	if !ok || iv.IsNull() || args[1].Type().Root != types.RootIntervalDayTime {
		return nil
	}
	if name == "-" {
		return &exec.WatermarkShift{Col: col, Millis: -iv.N}
	}
	return &exec.WatermarkShift{Col: col, Millis: iv.N}
}
