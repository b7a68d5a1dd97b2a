package exec

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// NotNullAction is table.exec.sink.not-null-enforcer: what a sink does with
// a row that holds NULL in a NOT NULL column (primary key columns are NOT
// NULL implicitly).
type NotNullAction uint8

const (
	// NotNullError fails the job (Flink's default, ERROR).
	NotNullError NotNullAction = iota
	// NotNullDrop drops the row (DROP). Unlike Flink, which drops silently,
	// every drop is counted in OperatorMetrics.NotNullRowsDropped and logged.
	NotNullDrop
)

// NotNullEnforcerOption is the option that chooses the NotNullAction.
const NotNullEnforcerOption = "table.exec.sink.not-null-enforcer"

// ParseNotNullAction parses a value of table.exec.sink.not-null-enforcer
// (case-insensitive).
func ParseNotNullAction(v string) (NotNullAction, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ERROR":
		return NotNullError, nil
	case "DROP":
		return NotNullDrop, nil
	}
	return 0, fmt.Errorf("Invalid value for option '%s'. Expected one of [ERROR, DROP], but was: %s", NotNullEnforcerOption, v)
}

// NotNullSpec describes the NOT NULL columns of a sink.
type NotNullSpec struct {
	Table  string   // the sink table, for the log
	Cols   []int    // positions of the NOT NULL columns in the sink's rows
	Names  []string // their names, parallel to Cols
	Action NotNullAction
	// Log receives one line per event worth telling the user (the first
	// dropped row, then every tenfold count, and the total at the end).
	// Nil discards them; the metric still counts.
	Log func(msg string)
}

// notNullEnforcer is the not-null constraint check a sink operator runs
// before its writer, as Flink's ConstraintEnforcer does in front of a sink.
// It is part of the sink operator rather than an operator of its own so
// that the chain positions, which name the operators' state in
// checkpoints, stay as they were.
type notNullEnforcer struct {
	spec    NotNullSpec
	metrics *OperatorMetrics
	name    string
	dropped int64
	nextLog int64 // log again when dropped reaches it
	out     *types.Batch
}

// WithNotNull makes a sink operator check every row (of any row kind) for
// NULL in the columns of spec before writing it: with NotNullError the
// first such row fails the job with Flink's message naming the column;
// with NotNullDrop the row is dropped, counted and logged. Without NOT
// NULL columns it does nothing.
func WithNotNull(spec NotNullSpec) SinkOption {
	return func(s *sink) {
		if len(spec.Cols) > 0 {
			s.notNull = &notNullEnforcer{spec: spec, nextLog: 1}
		}
	}
}

func (e *notNullEnforcer) open(ctx *OperatorContext) {
	if ctx != nil {
		e.metrics, e.name = ctx.Metrics, ctx.Name
	}
	if e.metrics == nil {
		e.metrics = &OperatorMetrics{}
	}
}

// nullCol returns the index in spec.Cols of the first NULL column of r, or -1.
func (e *notNullEnforcer) nullCol(r types.Row) int {
	for i, c := range e.spec.Cols {
		if r[c].IsNull() {
			return i
		}
	}
	return -1
}

// check returns b, or the rows of b to write when some are dropped (valid
// until the next call; possibly empty), or the error that fails the job.
func (e *notNullEnforcer) check(b *types.Batch) (*types.Batch, error) {
	first := -1
	for i, r := range b.Rows {
		if e.nullCol(r) >= 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return b, nil // the common case: no copy
	}
	if e.spec.Action == NotNullError {
		return nil, fmt.Errorf("Column '%s' is NOT NULL, however, a null value is being written into it. "+
			"You can set job configuration '%s'='DROP' to suppress this exception and drop such records (they are logged and counted).",
			e.spec.Names[e.nullCol(b.Rows[first])], NotNullEnforcerOption)
	}
	if e.out == nil || e.out.Width() != b.Width() {
		e.out = types.NewBatch(b.Width(), max(b.Cap(), 1))
	}
	ob := e.out
	ob.Reset()
	for i, r := range b.Rows {
		if c := e.nullCol(r); c >= 0 {
			e.drop(b.Kinds[i], c)
			continue
		}
		ob.AppendRow(b.Kinds[i], r)
	}
	return ob, nil
}

func (e *notNullEnforcer) drop(kind types.RowKind, col int) {
	e.dropped++
	e.metrics.NotNullRowsDropped.Add(1)
	if e.dropped < e.nextLog || e.spec.Log == nil {
		return
	}
	for e.nextLog <= e.dropped {
		e.nextLog *= 10
	}
	e.spec.Log(fmt.Sprintf("[WARN] %s: dropped a %s row with a NULL in NOT NULL column '%s' of sink table %s (%s = DROP); %d rows dropped so far.",
		e.label(), kind, e.spec.Names[col], e.spec.Table, NotNullEnforcerOption, e.dropped))
}

func (e *notNullEnforcer) label() string {
	if e.name != "" {
		return e.name
	}
	return "Sink"
}

// finish logs the total at end of input.
func (e *notNullEnforcer) finish() {
	if e.dropped > 0 && e.spec.Log != nil {
		e.spec.Log(fmt.Sprintf("[WARN] %s: %d rows with a NULL in a NOT NULL column of sink table %s were dropped (%s = DROP).",
			e.label(), e.dropped, e.spec.Table, NotNullEnforcerOption))
	}
}
