package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// MaterializerSpec describes a sink upsert materializer.
type MaterializerSpec struct {
	KeyCols []int // the sink's primary key
	// UpsertKey is the upsert key of the input, when it has one; nil
	// otherwise. With it, a row replaces the alive row of the same upsert
	// key, and a retraction matches on the upsert key instead of the full
	// row (Flink does the same since 1.16).
	UpsertKey []int
	StateTTL  time.Duration // table.exec.state.ttl; 0 keeps state forever
}

// sinkUpsertMaterializer keeps, per sink primary key, the rows currently
// alive in arrival order; the last of them is what the sink holds.
type sinkUpsertMaterializer struct {
	keyCols   []int
	upsertKey []int
	ttl       stateTTL

	ctx   *exec.OperatorContext
	state *listCache // created for the first batch's width
	width int
	emit  exec.Emitter

	b     *kv.Backend
	st    *kv.ValueState[[]types.Row]
	fresh bool // the backend was empty when handed over
	// cacheLimit, when not 0, bounds the cache to that many keys (tests).
	cacheLimit int
}

// NewSinkUpsertMaterializer returns the operator Flink places before an
// upsert sink whose primary key differs from the upsert key of its input
// (or when the input has none). It turns the input changelog into upserts
// by the sink's key, as Flink's SinkUpsertMaterializer:
//
//   - +I/+U: the row is added to the key's alive rows (appended, or with an
//     upsert key put in place of the alive row with the same upsert key) and
//     emitted as +I when the key had no alive row, else as +U;
//   - -U/-D: the first alive row equal to it (the full row, or the upsert key)
//     is removed; when none is left the input row is emitted as -D; when the
//     removed row was the last one, the new last row is emitted as +U
//     (the sink must go back to it); otherwise nothing is emitted. A
//     retraction matching nothing is ignored (its row expired or never came).
func NewSinkUpsertMaterializer(spec MaterializerSpec) (exec.Operator, error) {
	const name = "sink upsert materializer"
	if err := checkKeyCols(name, spec.KeyCols); err != nil {
		return nil, err
	}
	if err := checkKeyCols(name, spec.UpsertKey); err != nil {
		return nil, err
	}
	ttl, err := newStateTTL(spec.StateTTL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &sinkUpsertMaterializer{keyCols: spec.KeyCols, upsertKey: spec.UpsertKey, ttl: ttl}, nil
}

func (m *sinkUpsertMaterializer) Open(ctx *exec.OperatorContext) error {
	if m.ttl.Enabled() {
		if err := checkClock(ctx, "sink upsert materializer", "table.exec.state.ttl"); err != nil {
			return err
		}
	}
	if m.b == nil {
		return errNoBackend("sink upsert materializer")
	}
	m.ctx = ctx
	m.width = -1
	return nil
}

func (m *sinkUpsertMaterializer) init(w int) error {
	if m.width == w {
		return nil
	}
	if m.width >= 0 {
		return fmt.Errorf("sink upsert materializer: input rows of %d columns, expected %d", w, m.width)
	}
	if err := checkWidth("sink upsert materializer", m.keyCols, w); err != nil {
		return err
	}
	if err := checkWidth("sink upsert materializer", m.upsertKey, w); err != nil {
		return err
	}
	m.width = w
	m.state = newListCache(m.b, m.st, m.keyCols, w, m.ttl.TTL, m.fresh, m.cacheLimit)
	if err := m.state.preload("rows"); err != nil {
		return fmt.Errorf("sink upsert materializer: %w", err)
	}
	m.emit.Init(w, 0)
	return nil
}

// find returns the index of the first alive row that matches r, or -1.
func (m *sinkUpsertMaterializer) find(rows []types.Row, r types.Row) int {
	for i, x := range rows {
		if m.matches(x, r) {
			return i
		}
	}
	return -1
}

// findUpsert returns the alive row that an added row replaces: the one with
// the same upsert key, when the input has an upsert key; otherwise -1 (rows
// are only appended).
func (m *sinkUpsertMaterializer) findUpsert(rows []types.Row, r types.Row) int {
	if len(m.upsertKey) == 0 {
		return -1
	}
	return m.find(rows, r)
}

func (m *sinkUpsertMaterializer) matches(a, b types.Row) bool {
	if len(m.upsertKey) == 0 {
		return types.RowsEqual(a, b)
	}
	for _, c := range m.upsertKey {
		if !types.Equal(a[c], b[c]) {
			return false
		}
	}
	return true
}

func (m *sinkUpsertMaterializer) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := m.init(b.Width()); err != nil {
		return err
	}
	if m.ttl.Enabled() {
		m.state.SetNow(m.ctx.Now())
		m.ttl.arm(m.ctx, m.state.Now())
	}
	for i, row := range b.Rows {
		h := types.HashColumns(row, m.keyCols)
		id, ok, err := m.state.Get(row, h)
		if err != nil {
			return m.stateErr(err)
		}
		if b.Kinds[i].IsRetract() {
			if ok {
				err = m.retract(id, row, out)
			}
		} else {
			if !ok {
				if id, err = m.state.Create(row, h); err != nil {
					return m.stateErr(err)
				}
			}
			err = m.add(id, row, out)
		}
		if err != nil {
			return err
		}
	}
	return m.emit.Flush(out)
}

func (m *sinkUpsertMaterializer) add(id int32, row types.Row, out exec.Output) error {
	rows := m.state.rows(id)
	kind := types.UpdateAfter
	if len(rows) == 0 {
		kind = types.Insert
	}
	if i := m.findUpsert(rows, row); i >= 0 {
		m.state.replaceRow(id, i, row)
	} else {
		m.state.appendRow(id, row)
	}
	m.state.Written(id)
	return m.emit.Copy(kind, row, out)
}

func (m *sinkUpsertMaterializer) stateErr(err error) error {
	return fmt.Errorf("sink upsert materializer: state: %w", err)
}

func (m *sinkUpsertMaterializer) retract(id int32, row types.Row, out exec.Output) error {
	rows := m.state.rows(id)
	i := m.find(rows, row)
	if i < 0 {
		return nil // the row expired or never arrived; Flink logs and ignores it
	}
	last := len(rows) - 1
	m.state.removeRow(id, i)
	rows = m.state.rows(id)
	switch {
	case len(rows) == 0:
		if err := m.state.Remove(id); err != nil {
			return m.stateErr(err)
		}
		return m.emit.Copy(types.Delete, row, out)
	case i == last:
		m.state.Written(id)
		return m.emit.Copy(types.UpdateAfter, rows[len(rows)-1], out)
	default:
		m.state.Written(id)
		return nil
	}
}

func (m *sinkUpsertMaterializer) OnProcessingTime(t int64, _ exec.Output) error {
	if !m.ttl.Due(t) || m.state == nil {
		return nil
	}
	m.state.SetNow(m.ctx.Now())
	m.state.Sweep()
	if m.state.Len() > 0 {
		m.ttl.arm(m.ctx, m.state.Now())
	}
	return nil
}

func (m *sinkUpsertMaterializer) ProcessWatermark(wm int64, out exec.Output) error {
	return out.PushWatermark(wm)
}

func (m *sinkUpsertMaterializer) Finish(out exec.Output) error { return m.emit.Flush(out) }

func (m *sinkUpsertMaterializer) Close() error {
	m.state = nil
	return nil
}
