package optest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"path/filepath"
	"sort"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// pipeline runs a whole job graph at parallelism 1 as one operator, so
// that optest.CheckRestores can snapshot and restore every operator and
// source reader of a planned query together. It does what the runtime does
// on one subtask per vertex: it chains operators, routes each vertex's
// output to its consumers, min-combines the watermarks of a vertex's
// inputs, drops watermarks that do not advance, finishes vertices in
// topological order at the end, and refuses operators that neither take
// part in checkpoints nor declare that they have none. State is stored per
// operator under a key prefix naming its place in the graph.
type pipeline struct {
	t       *testing.T
	self    *pipeline // where the sinks' writers find the pipeline
	cur     *optest.Collector
	ctx     *exec.OperatorContext
	verts   []*pvertex
	byID    map[int]*pvertex
	sources []*pvertex
	timers  []ptimer
	// nBackends numbers the backends' directories.
	nBackends int
}

type pvertex struct {
	v   *exec.Vertex
	ops []exec.Operator
	// backends[i] is the keyed state of ops[i] (an exec.KeyedOperator),
	// checkpointed through its entries (kv.Backend.WriteEntries).
	backends []*kv.Backend
	lastWM   []int64
	reader   exec.SourceReader
	prepare  exec.Projector
	// Inbound edges: the upstream vertex per edge and its last watermark.
	in      []*pvertex
	inWM    []int64
	inLast  int64
	out     []pedge
	ended   bool
	scratch *types.Batch
}

type pedge struct {
	to    *pvertex
	edge  int // index in to.in
	input int // the input of to's first operator it feeds (two-input joins)
}

type ptimer struct {
	t     int64
	v, op int
}

func (p *pipeline) instantiate(g *exec.JobGraph) error {
	p.byID = map[int]*pvertex{}
	for _, v := range g.Vertices {
		if v.Parallelism != 1 {
			return fmt.Errorf("vertex %s has parallelism %d; the pipeline runs 1", v.Name, v.Parallelism)
		}
		pv := &pvertex{v: v, inLast: exec.MinWatermark}
		for _, mk := range v.Chain {
			op, err := mk()
			if err != nil {
				return err
			}
			pv.ops = append(pv.ops, op)
			pv.backends = append(pv.backends, nil)
			pv.lastWM = append(pv.lastWM, exec.MinWatermark)
		}
		if v.Source != nil {
			r, err := v.Source.NewReader(0, 1)
			if err != nil {
				return err
			}
			pv.reader = r
			if v.Source.Prepare != nil {
				if pv.prepare, err = v.Source.Prepare(); err != nil {
					return err
				}
			}
			p.sources = append(p.sources, pv)
		}
		for _, in := range v.Inputs {
			up := p.byID[in.From]
			if up == nil {
				return fmt.Errorf("vertex %d reads vertex %d, which does not come before it", v.ID, in.From)
			}
			up.out = append(up.out, pedge{to: pv, edge: len(pv.in), input: in.InputIndex})
			pv.in = append(pv.in, up)
			pv.inWM = append(pv.inWM, exec.MinWatermark)
		}
		p.verts = append(p.verts, pv)
		p.byID[v.ID] = pv
	}
	return nil
}

// link is the Output of operator i of a vertex.
type link struct {
	p  *pipeline
	pv *pvertex
	i  int
}

func (l link) Push(b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if l.i+1 < len(l.pv.ops) {
		return l.pv.ops[l.i+1].ProcessBatch(0, b, link{l.p, l.pv, l.i + 1})
	}
	for _, e := range l.pv.out {
		if err := l.p.deliver(e.to, e.input, b); err != nil {
			return err
		}
	}
	return nil
}

func (l link) PushWatermark(wm int64) error {
	if l.i+1 < len(l.pv.ops) {
		return l.p.opWatermark(l.pv, l.i+1, wm)
	}
	for _, e := range l.pv.out {
		if err := l.p.edgeWatermark(e.to, e.edge, wm); err != nil {
			return err
		}
	}
	return nil
}

// deliver hands a batch to the head of a vertex's chain.
func (p *pipeline) deliver(pv *pvertex, input int, b *types.Batch) error {
	if len(pv.ops) == 0 {
		return link{p, pv, -1}.Push(b)
	}
	return pv.ops[0].ProcessBatch(input, b, link{p, pv, 0})
}

func (p *pipeline) opWatermark(pv *pvertex, i int, wm int64) error {
	if wm <= pv.lastWM[i] {
		return nil
	}
	pv.lastWM[i] = wm
	return pv.ops[i].ProcessWatermark(wm, link{p, pv, i})
}

func (p *pipeline) headWatermark(pv *pvertex, wm int64) error {
	if len(pv.ops) == 0 {
		return link{p, pv, -1}.PushWatermark(wm)
	}
	return p.opWatermark(pv, 0, wm)
}

// edgeWatermark min-combines the watermarks of a vertex's inputs.
func (p *pipeline) edgeWatermark(pv *pvertex, edge int, wm int64) error {
	if wm > pv.inWM[edge] {
		pv.inWM[edge] = wm
	}
	m := pv.inWM[0]
	for _, w := range pv.inWM[1:] {
		m = min(m, w)
	}
	if m <= pv.inLast {
		return nil
	}
	pv.inLast = m
	return p.headWatermark(pv, m)
}

// read reads one batch of up to n rows from a source.
func (p *pipeline) read(src, n int) error {
	pv := p.sources[src]
	b := types.NewBatch(pv.v.Source.Width, n)
	res, err := pv.reader.Read(context.Background(), b)
	if err != nil {
		return err
	}
	if b.Len() == 0 {
		return fmt.Errorf("source %d had no rows left (end: %v)", src, res.End)
	}
	if pv.prepare != nil {
		out := types.NewBatch(pv.v.Source.PreparedWidth, b.Len())
		for i, r := range b.Rows {
			if err := pv.prepare.Project(r, out.Append(b.Kinds[i])); err != nil {
				return err
			}
		}
		b = out
	}
	return p.deliver(pv, 0, b)
}

func (p *pipeline) watermark(pv *pvertex, wm int64) error { return p.headWatermark(pv, wm) }

// end ends every source (MaxWatermark, as the runtime's readers do at the
// end of input) and finishes the vertices in topological order.
func (p *pipeline) end() error {
	for _, pv := range p.sources {
		if err := p.headWatermark(pv, exec.MaxWatermark); err != nil {
			return err
		}
	}
	for _, pv := range p.verts {
		for i, op := range pv.ops {
			if err := op.Finish(link{p, pv, i}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *pipeline) Open(ctx *exec.OperatorContext) error {
	p.ctx = ctx
	for vi, pv := range p.verts {
		if pv.reader != nil {
			if err := pv.reader.Open(context.Background()); err != nil {
				return err
			}
		}
		for i, op := range pv.ops {
			if ko, ok := op.(exec.KeyedOperator); ok && pv.backends[i] == nil {
				b, err := p.openBackend(ko)
				if err != nil {
					return err
				}
				pv.backends[i] = b
			}
			vi, i := vi, i
			octx := *ctx
			octx.Ctx = context.Background()
			octx.Name = pv.v.ChainNames[i]
			octx.RegisterProcessingTimer = func(ts int64) {
				p.timers = append(p.timers, ptimer{t: ts, v: vi, op: i})
				ctx.RegisterProcessingTimer(ts)
			}
			if err := op.Open(&octx); err != nil {
				return fmt.Errorf("open %s: %w", octx.Name, err)
			}
		}
	}
	return nil
}

func (p *pipeline) ProcessBatch(int, *types.Batch, exec.Output) error {
	return errors.New("the pipeline reads its own sources")
}
func (p *pipeline) ProcessWatermark(int64, exec.Output) error {
	return errors.New("the pipeline reads its own sources")
}
func (p *pipeline) Finish(exec.Output) error { return p.end() }

func (p *pipeline) Close() error {
	var first error
	for _, pv := range p.verts {
		for _, op := range pv.ops {
			if err := op.Close(); err != nil && first == nil {
				first = err
			}
		}
		if pv.reader != nil {
			if err := pv.reader.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// OnProcessingTime fires the operators' timers due at t, earliest first.
func (p *pipeline) OnProcessingTime(t int64, _ exec.Output) error {
	sort.SliceStable(p.timers, func(i, j int) bool { return p.timers[i].t < p.timers[j].t })
	for len(p.timers) > 0 && p.timers[0].t <= t {
		pt := p.timers[0]
		p.timers = p.timers[1:]
		pv := p.verts[pt.v]
		h, ok := pv.ops[pt.op].(exec.ProcessingTimeHandler)
		if !ok {
			return fmt.Errorf("%s registered a timer but does not handle them", pv.v.ChainNames[pt.op])
		}
		if err := h.OnProcessingTime(pt.t, link{p, pv, pt.op}); err != nil {
			return err
		}
	}
	return nil
}

// openBackend opens a hashmap backend (closed with the test) and, when ko
// is not nil, hands it to ko.
func (p *pipeline) openBackend(ko exec.KeyedOperator) (*kv.Backend, error) {
	p.nBackends++
	b, err := kv.Open(kv.Config{Kind: image.Hashmap, Dir: filepath.Join(p.t.TempDir(), fmt.Sprint("kv-", p.nBackends)), MaxParallelism: 128})
	if err != nil {
		return nil, err
	}
	p.t.Cleanup(func() { b.Close() })
	if ko != nil {
		if err := ko.OpenKeyedState(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func opPrefix(v, i int) string { return fmt.Sprintf("v%d-%d/", v, i) }
func srcKey(v int) string      { return fmt.Sprintf("v%d-source", v) }

// prefixed writes an operator's entries under its prefix.
// With withKG, the key group follows the prefix (as two bytes): a keyed
// backend's entry keys are unique within their key group only, the store's
// across all.
type prefixed struct {
	w      exec.StateWriter
	prefix string
	withKG bool
	buf    []byte
}

func (w *prefixed) key(kg int, key []byte) []byte {
	w.buf = append(w.buf[:0], w.prefix...)
	if w.withKG {
		w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(kg))
	}
	return append(w.buf, key...)
}

func (w *prefixed) Full() bool { return w.w.Full() }
func (w *prefixed) Put(kg int, key, value []byte) error {
	return w.w.Put(kg, w.key(kg, key), value)
}
func (w *prefixed) Delete(kg int, key []byte) error {
	return w.w.Delete(kg, w.key(kg, key))
}

// SnapshotState snapshots every operator and records every reader's
// position; an operator that neither checkpoints nor declares that it has
// no state, or a reader without a position, fails the test, as the runtime
// refuses them.
func (p *pipeline) SnapshotState(id exec.CheckpointID, w exec.StateWriter) error {
	for _, pv := range p.verts {
		if pv.reader != nil {
			cr, ok := pv.reader.(exec.CheckpointedReader)
			if !ok {
				p.t.Fatalf("source reader %T of %s records no position", pv.reader, pv.v.Name)
			}
			pos, err := cr.SnapshotPosition()
			if err != nil {
				return err
			}
			if err := w.Put(exec.KeyGroupNone, []byte(srcKey(pv.v.ID)), pos); err != nil {
				return err
			}
		}
		for i, op := range pv.ops {
			if ko, ok := op.(exec.KeyedOperator); ok {
				if err := ko.PrepareSnapshot(id); err != nil {
					return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
				}
				if err := pv.backends[i].WriteEntries(&prefixed{w: w, prefix: opPrefix(pv.v.ID, i), withKG: true}); err != nil {
					return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
				}
				continue
			}
			co, ok := optest.Checkpointed(p.t, op)
			if !ok {
				continue
			}
			if err := co.SnapshotState(id, &prefixed{w: w, prefix: opPrefix(pv.v.ID, i)}); err != nil {
				return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
			}
		}
	}
	return nil
}

type entry struct {
	kg         int
	key, value []byte
}

// entries replays one operator's entries, in the order they came.
type entries []entry

func (es entries) Each(fn func(kg int, key, value []byte) error) error {
	for _, e := range es {
		if err := fn(e.kg, e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

// RestoreState hands every operator its entries and every reader its
// position, before Open.
func (p *pipeline) RestoreState(r exec.StateReader) error {
	byPrefix := map[string]entries{}
	positions := map[string][]byte{}
	err := r.Each(func(kg int, key, value []byte) error {
		k := string(key)
		if kg == exec.KeyGroupNone && !bytes.Contains(key, []byte("/")) {
			positions[k] = bytes.Clone(value)
			return nil
		}
		i := bytes.IndexByte(key, '/')
		if i < 0 {
			return fmt.Errorf("state entry %q belongs to no operator", key)
		}
		pre := k[:i+1]
		byPrefix[pre] = append(byPrefix[pre], entry{kg, bytes.Clone(key[i+1:]), bytes.Clone(value)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, pv := range p.verts {
		if pv.reader != nil {
			if pos, ok := positions[srcKey(pv.v.ID)]; ok {
				if err := pv.reader.(exec.CheckpointedReader).RestorePosition(pos); err != nil {
					return err
				}
			}
			delete(positions, srcKey(pv.v.ID))
		}
		for i, op := range pv.ops {
			pre := opPrefix(pv.v.ID, i)
			if ko, ok := op.(exec.KeyedOperator); ok {
				b, err := p.openBackend(nil)
				if err != nil {
					return err
				}
				es := make(entries, 0, len(byPrefix[pre]))
				for _, e := range byPrefix[pre] {
					if len(e.key) < 2 {
						return fmt.Errorf("%s: keyed entry %x has no key group", pv.v.ChainNames[i], e.key)
					}
					es = append(es, entry{e.kg, e.key[2:], e.value})
				}
				if err := b.LoadEntries(es); err != nil {
					return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
				}
				if err := ko.OpenKeyedState(b); err != nil {
					return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
				}
				pv.backends[i] = b
				delete(byPrefix, pre)
				continue
			}
			co, ok := optest.Checkpointed(p.t, op)
			if !ok {
				if len(byPrefix[pre]) > 0 {
					return fmt.Errorf("%s declares no state but has state entries", pv.v.ChainNames[i])
				}
				continue
			}
			if err := co.RestoreState(byPrefix[pre]); err != nil {
				return fmt.Errorf("%s: %w", pv.v.ChainNames[i], err)
			}
			delete(byPrefix, pre)
		}
	}
	for pre := range byPrefix {
		return fmt.Errorf("state entries under %q belong to no operator", pre)
	}
	for k := range positions {
		return fmt.Errorf("position %q belongs to no source", k)
	}
	return nil
}
