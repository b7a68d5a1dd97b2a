package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/window"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// windowParams lists the parameters of each window TVF in positional order.
var windowParams = map[string][]string{
	"TUMBLE":   {"DATA", "TIMECOL", "SIZE", "OFFSET"},
	"HOP":      {"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
	"CUMULATE": {"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"},
	"SESSION":  {"DATA", "TIMECOL", "GAP"},
}

// windowInfo is a resolved window assignment.
type windowInfo struct {
	spec exec.WindowSpec
	fn   string     // EXPLAIN form
	time types.Type // type of the time attribute
	// partitionBy holds SESSION's PARTITION BY keys (bound over the input).
	partitionBy []parser.Expr
}

// planTableFunc plans TABLE(TUMBLE|HOP|CUMULATE|SESSION(...)).
func (pc *planContext) planTableFunc(tf *parser.TableFunc, env *cteEnv) (*relation, error) {
	name := strings.ToUpper(tf.Call.FuncName())
	params, ok := windowParams[name]
	if !ok {
		return nil, unsupportedAt(tf, "table function %s is not supported; the supported table functions are the window TVFs TUMBLE, HOP, CUMULATE and SESSION", tf.Call.FuncName())
	}
	args := map[string]parser.Arg{}
	for i, a := range tf.Call.Args {
		key := a.Name
		if key == "" {
			if i >= len(params) {
				return nil, errAt(tf.Call, "Invalid number of arguments to function '%s'. Was expecting %d arguments", name, len(params))
			}
			key = params[i]
		}
		known := false
		for _, p := range params {
			known = known || p == key
		}
		if !known {
			return nil, errAt(tf.Call, "Param '%s' not found in function '%s'; did you mean one of %s?", key, name, strings.Join(params, ", "))
		}
		if _, dup := args[key]; dup {
			return nil, errAt(tf.Call, "Duplicate argument '%s' in call to '%s'", key, name)
		}
		args[key] = a
	}
	for _, p := range params {
		if _, ok := args[p]; !ok && p != "OFFSET" {
			return nil, errAt(tf.Call, "Missing argument %s of window function %s", p, name)
		}
	}
	data, ok := args["DATA"].Value.(*parser.TableArg)
	if !ok {
		return nil, errAt(tf.Call, "The first argument of %s must be a table: TABLE <name>", name)
	}
	var in *relation
	var err error
	if data.Query != nil {
		in, err = pc.planQuery(data.Query, env)
	} else {
		in, err = pc.planTableName(data, data.Name, env)
	}
	if err != nil {
		return nil, err
	}
	desc, ok := args["TIMECOL"].Value.(*parser.Descriptor)
	if !ok || len(desc.Columns) != 1 {
		return nil, errAt(tf.Call, "The time column argument of %s must be DESCRIPTOR(<one column>)", name)
	}
	idx, _, msg := in.scope.resolve([]string{desc.Columns[0]})
	if msg != "" {
		return nil, errAt(desc, "%s", msg)
	}
	timeType := in.scope.cols[idx].Type
	if timeType.TimeAttr == types.NoTimeAttr && pc.batchMode() &&
		(timeType.Root == types.RootTimestamp || timeType.Root == types.RootTimestampLTZ) {
		// Batch mode windows any TIMESTAMP or TIMESTAMP_LTZ column, as
		// Flink's batch window TVFs do: the end of input's is the only
		// watermark, so event time needs no WATERMARK declaration.
		timeType.TimeAttr = types.RowtimeAttr
	}
	if timeType.TimeAttr == types.NoTimeAttr {
		return nil, errAt(desc, "The window function %s(TABLE table_name, DESCRIPTOR(timecol), ...) requires the timecol to be a time attribute type, but is %s.", name, timeType)
	}
	w := windowInfo{time: timeType}
	w.spec.TimeCol = idx
	w.spec.EventTime = timeType.TimeAttr == types.RowtimeAttr
	if timeType.Root == types.RootTimestampLTZ {
		w.spec.Loc = pc.p.cfg.Loc
	}
	dur := func(key string) (int64, error) {
		a, ok := args[key]
		if !ok {
			return 0, nil
		}
		return pc.intervalMillis(a.Value, name)
	}
	var parts []string
	parts = append(parts, "time_col=["+desc.Columns[0]+"]")
	switch name {
	case "TUMBLE":
		w.spec.Kind = exec.Tumble
		if w.spec.Size, err = dur("SIZE"); err != nil {
			return nil, err
		}
		parts = append(parts, "size=["+formatDuration(w.spec.Size)+"]")
	case "HOP":
		w.spec.Kind = exec.Hop
		if w.spec.Size, err = dur("SIZE"); err != nil {
			return nil, err
		}
		if w.spec.Slide, err = dur("SLIDE"); err != nil {
			return nil, err
		}
		parts = append(parts, "size=["+formatDuration(w.spec.Size)+"]", "slide=["+formatDuration(w.spec.Slide)+"]")
	case "CUMULATE":
		w.spec.Kind = exec.Cumulate
		if w.spec.Size, err = dur("SIZE"); err != nil {
			return nil, err
		}
		if w.spec.Step, err = dur("STEP"); err != nil {
			return nil, err
		}
		parts = append(parts, "max_size=["+formatDuration(w.spec.Size)+"]", "step=["+formatDuration(w.spec.Step)+"]")
	case "SESSION":
		w.spec.Kind = exec.Session
		if w.spec.Gap, err = dur("GAP"); err != nil {
			return nil, err
		}
		w.partitionBy = data.PartitionBy
		if len(data.PartitionBy) > 0 {
			keys := make([]string, len(data.PartitionBy))
			for i, k := range data.PartitionBy {
				keys[i] = parser.FormatExpr(k)
			}
			parts = append(parts, "partition keys=["+strings.Join(keys, ", ")+"]")
		}
		parts = append(parts, "gap=["+formatDuration(w.spec.Gap)+"]")
	}
	if data.PartitionBy != nil && name != "SESSION" {
		return nil, errAt(data, "PARTITION BY is only supported by the SESSION window function")
	}
	if w.spec.Offset, err = dur("OFFSET"); err != nil {
		return nil, err
	}
	if w.spec.Offset != 0 {
		parts = append(parts, "offset=["+formatDuration(w.spec.Offset)+"]")
	}
	if err := validateWindow(tf.Call, w.spec); err != nil {
		return nil, err
	}
	w.fn = name + "(" + strings.Join(parts, ", ") + ")"

	// The output: the input columns (the time column loses its time
	// attribute) followed by the window columns.
	out := make(types.Schema, 0, len(in.scope.cols)+3)
	sc := &scope{}
	for i, c := range in.scope.cols {
		t := c.Type
		if i == idx {
			t = t.WithoutTimeAttr()
		}
		out = append(out, types.Column{Name: c.Name, Type: t})
		sc.cols = append(sc.cols, scopeColumn{Qualifier: c.Qualifier, Name: c.Name, Type: t})
	}
	for _, c := range windowColumns(w) {
		out = append(out, c)
		sc.cols = append(sc.cols, scopeColumn{Name: c.Name, Type: c.Type})
	}
	n := &WindowTVFNode{Window: w.spec, WindowFn: w.fn}
	n.inputs, n.schema, n.mode = []Node{in.node}, out, in.node.Mode()
	pc.tvfs = append(pc.tvfs, tvfRecord{node: n, info: w, inputScope: in.scope})
	return &relation{node: n, scope: sc}, nil
}

// windowColumns returns window_start, window_end and window_time for a window.
func windowColumns(w windowInfo) types.Schema {
	start := types.TimestampType(3).WithNullable(false)
	var wt types.Type
	if w.spec.EventTime {
		wt = types.Type{Root: w.time.Root, Precision: 3, NotNull: true, TimeAttr: types.RowtimeAttr}
	} else {
		wt = types.Type{Root: types.RootTimestampLTZ, Precision: 3, NotNull: true, TimeAttr: types.ProctimeAttr}
	}
	return types.Schema{{Name: "window_start", Type: start}, {Name: "window_end", Type: start}, {Name: "window_time", Type: wt}}
}

func validateWindow(n parser.Node, s exec.WindowSpec) error {
	if err := window.Validate(s); err != nil {
		return errAt(n, "%s", err.Error())
	}
	return nil
}

// intervalMillis evaluates a constant day-time interval argument.
func (pc *planContext) intervalMillis(e parser.Expr, fn string) (int64, error) {
	b := &binder{scope: &scope{}, clause: fn}
	x, err := b.bind(e)
	if err != nil {
		return 0, err
	}
	if x.Type().Root != types.RootIntervalDayTime || !expr.IsConstant(x) {
		return 0, errAt(e, "The window size of %s must be a constant day-time interval such as INTERVAL '10' SECOND, but is %s", fn, x.Type())
	}
	v, err := expr.EvalConstant(x, pc.p.exprConfig())
	if err != nil {
		return 0, errAt(e, "%s", err.Error())
	}
	return v.Int(), nil
}

// formatDuration prints milliseconds the way Flink's plans do: 10 s, 5 min, 1 h, 1 d, 100 ms.
func formatDuration(ms int64) string {
	switch {
	case ms != 0 && ms%86400000 == 0:
		return fmt.Sprintf("%d d", ms/86400000)
	case ms != 0 && ms%3600000 == 0:
		return fmt.Sprintf("%d h", ms/3600000)
	case ms != 0 && ms%60000 == 0:
		return fmt.Sprintf("%d min", ms/60000)
	case ms != 0 && ms%1000 == 0:
		return fmt.Sprintf("%d s", ms/1000)
	}
	return fmt.Sprintf("%d ms", ms)
}

// tvfRecord remembers how a window TVF node was built, so an aggregation
// over it can read the TVF's input directly.
type tvfRecord struct {
	node       *WindowTVFNode
	info       windowInfo
	inputScope *scope
}

func (pc *planContext) tvfInfo(n Node) (tvfRecord, bool) {
	for _, r := range pc.tvfs {
		if r.node == n {
			return r, true
		}
	}
	return tvfRecord{}, false
}
