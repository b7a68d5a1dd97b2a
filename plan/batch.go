package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Batch execution ('execution.runtime-mode' = 'batch', or 'automatic' over
// bounded sources). The streaming operators run unchanged over the bounded
// input; what makes the result a batch result is decided here:
//
//   - every source must be bounded (batchSources);
//   - sources generate no watermarks while they read: the only watermark is
//     the end of input's, so no row is late and every window, OVER frame
//     and event-time buffer sees all its rows before it fires (jobgraph.go);
//   - where an updating stream is consumed by something that needs final
//     rows — ORDER BY, LIMIT, the sink — a FinalNode collapses the
//     changelog into its final rows at end of input (exec.NewFinal), so the
//     sink only ever receives inserts;
//   - no checkpoints are taken (jobs: Plan.Batch).

// RuntimeMode is 'execution.runtime-mode'.
type RuntimeMode uint8

const (
	Streaming RuntimeMode = iota
	Batch
	// Automatic runs a statement in batch mode when all its sources are
	// bounded, else in streaming mode.
	Automatic
)

// ParseRuntimeMode parses an 'execution.runtime-mode' value.
func ParseRuntimeMode(s string) (RuntimeMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "streaming":
		return Streaming, nil
	case "batch":
		return Batch, nil
	case "automatic":
		return Automatic, nil
	}
	return Streaming, fmt.Errorf("Could not parse value '%s' for key 'execution.runtime-mode'. Allowed values are: STREAMING, BATCH, AUTOMATIC", s)
}

// UnboundedInBatchError is Flink's refusal of an unbounded source in batch
// mode.
type UnboundedInBatchError struct{ Table string }

func (e *UnboundedInBatchError) Error() string {
	return fmt.Sprintf("Querying an unbounded table '%s' in batch mode is not allowed. The table source is unbounded.", e.Table)
}

// FinalNode emits the final rows of its (bounded, updating) input as
// inserts at end of input. Its input is hash partitioned on all columns.
type FinalNode struct {
	base
}

func (n *FinalNode) Describe() string {
	return "FinalRows(select=[" + strings.Join(n.schema.Names(), ", ") + "])"
}

// bounded reports whether every source of the plan ends by itself.
func (pl *Plan) bounded() bool {
	for _, s := range pl.Sinks {
		if !isBounded(s) {
			return false
		}
	}
	return true
}

// batchMode reports whether the statement being planned runs in batch mode.
func (pc *planContext) batchMode() bool { return pc.p.batch }

// batchSources refuses an unbounded source under n in batch mode.
func batchSources(n Node) error {
	if s, ok := n.(*ScanNode); ok && !s.Source.Bounded() {
		return &UnboundedInBatchError{Table: s.Table.ID.String()}
	}
	for _, in := range n.Inputs() {
		if err := batchSources(in); err != nil {
			return err
		}
	}
	return nil
}

// final returns in unchanged when it is insert-only or the statement runs
// in streaming mode, else a FinalNode over it.
func (pc *planContext) final(in Node) Node {
	if !pc.batchMode() || !updating(in.Mode()) {
		return in
	}
	cols := make([]int, len(in.Schema()))
	for i := range cols {
		cols[i] = i
	}
	n := &FinalNode{}
	n.inputs = []Node{pc.exchange(in, exec.Partitioner{Kind: exec.Hash, KeyCols: cols})}
	n.schema, n.mode = in.Schema(), types.InsertOnly
	return n
}

// finishBatch checks the sources of a statement's query and makes its
// result final, in batch mode; in streaming mode it returns rel as it is.
func (pc *planContext) finishBatch(rel *relation) (*relation, error) {
	if !pc.batchMode() {
		return rel, nil
	}
	if err := batchSources(rel.node); err != nil {
		return nil, err
	}
	return &relation{node: pc.final(rel.node), scope: rel.scope}, nil
}

// resolveFinal: retracting a row needs the old row, so the input is asked
// for -U; one without -U rows (upserts) cannot be counted.
func resolveFinal(n *FinalNode) {
	in := n.inputs[0]
	resolveChangelog(in, true)
	n.mode = types.InsertOnly
}

// checkFinal refuses a FinalNode whose input still updates without -U
// rows: counting rows needs every update's old row.
func checkFinal(n Node) error {
	if f, ok := n.(*FinalNode); ok {
		if m := f.inputs[0].Mode(); m.UpdateAfter && !m.UpdateBefore {
			return fmt.Errorf("batch mode: the input of %s produces updates without their old rows (%s); this plan cannot run in batch mode", f.Describe(), m)
		}
	}
	for _, in := range n.Inputs() {
		if err := checkFinal(in); err != nil {
			return err
		}
	}
	return nil
}

// planInMode plans a statement in the planner's runtime mode: for
// Automatic, in batch mode when every source is bounded (planning in batch
// mode refuses the first unbounded source), else in streaming mode.
func (p *Planner) planInMode(plan func(q *Planner) (*Plan, error)) (*Plan, error) {
	switch p.cfg.RuntimeMode {
	case Batch:
		q := p.inBatch()
		pl, err := plan(&q)
		if pl != nil {
			pl.Batch = true
		}
		return pl, err
	case Automatic:
		// Streaming planning tells whether the sources are bounded; a
		// statement only batch mode plans (ORDER BY over an aggregate) is
		// planned in batch mode, and an unbounded one gets streaming's
		// message.
		spl, serr := plan(p)
		if serr == nil && !spl.bounded() {
			return spl, nil
		}
		q := p.inBatch()
		pl, err := plan(&q)
		var ub *UnboundedInBatchError
		if errors.As(err, &ub) && serr != nil {
			return nil, serr
		}
		if err != nil {
			return nil, err
		}
		pl.Batch = true
		return pl, nil
	}
	return plan(p)
}

// batchBundle is how many input rows an unwindowed aggregation folds per
// key before it emits, in batch mode (see inBatch).
const batchBundle = 100_000

// inBatch is p planning in batch mode. An unwindowed aggregation there
// folds its input in mini-batches of batchBundle rows (unless the session
// set its own): only the final rows matter, so folding many input rows of
// a key into one change saves FinalRows most of its counting; the bundle
// bounds the memory, and end of input flushes the last one.
func (p *Planner) inBatch() Planner {
	q := *p
	q.batch = true
	if !q.cfg.MiniBatch.Enabled {
		q.cfg.MiniBatch = MiniBatch{Enabled: true, AllowLatency: time.Hour, Size: batchBundle}
	}
	return q
}
