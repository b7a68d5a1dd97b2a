package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/exec/temporal"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// planTemporalJoin plans a join whose right side is read AS OF a time of the
// left row: an event-time temporal join against a versioned table, or a
// processing-time lookup join against a lookup source.
func (pc *planContext) planTemporalJoin(r *parser.Join, right *parser.TableName, env *cteEnv) (*relation, error) {
	switch r.Kind {
	case parser.JoinInner, parser.JoinLeft:
	default:
		return nil, errAt(r, "Temporal table join currently only supports INNER JOIN and LEFT JOIN, but was %s JOIN", r.Kind)
	}
	if r.Natural || len(r.Using) > 0 {
		return nil, unsupportedAt(r, "a temporal table join needs an ON condition (NATURAL and USING are not supported)")
	}
	if r.On == nil {
		return nil, errAt(r, "Temporal table join requires an ON condition")
	}
	left, err := pc.planFrom(r.Left, env)
	if err != nil {
		return nil, err
	}
	asOf, err := (&binder{scope: left.scope, clause: "FOR SYSTEM_TIME AS OF", cancel: pc.cancel}).bind(right.SystemTime)
	if err != nil {
		return nil, err
	}
	ref, isRef := asOf.(*expr.ColumnRef)
	if !isRef || !asOf.Type().IsTimeAttr() {
		return nil, errAt(right.SystemTime, "Temporal table join currently only supports 'FOR SYSTEM_TIME AS OF' left table's time attribute field")
	}
	if asOf.Type().TimeAttr == types.ProctimeAttr {
		return pc.planLookupJoin(r, right, left, env)
	}
	return pc.planVersionedJoin(r, right, left, ref.Index, env)
}

// LookupJoinNode joins each input row with the rows a lookup source holds
// for its key when the row is processed (Flink's LookupJoin). It chains
// to its input: no exchange, as in Flink without a SHUFFLE hint.
type LookupJoinNode struct {
	base
	TableID   catalog.Identifier
	LeftOuter bool
	// Keys: DimKeyCols[i] (a column of the dimension row) equals
	// KeyExprs[i] (over the input row, cast to the column's type).
	KeyExprs   []expr.Expr
	DimKeyCols []int
	// Residual is the rest of the condition, over [input, dimension] rows.
	Residual expr.Expr
	// Prepare maps a row the connector returns to the dimension row; nil
	// when they are the same. DimWidth is the dimension row's width.
	Prepare  []expr.Expr
	DimWidth int
	Lookup   *connectors.Lookup
	Async    *lookup.Async
	Retry    *lookup.Retry
	// DimUnique says the lookup key holds the dimension table's primary
	// key: an input row joins at most one row, so the input's upsert key
	// stays a key of the output.
	DimUnique bool
}

func (n *LookupJoinNode) Describe() string {
	var b strings.Builder
	b.WriteString("LookupJoin(table=[" + n.TableID.String() + "], joinType=[")
	if n.LeftOuter {
		b.WriteString("LeftOuterJoin")
	} else {
		b.WriteString("InnerJoin")
	}
	b.WriteString("], lookup=[")
	nl := len(n.inputs[0].Schema())
	for i, c := range n.DimKeyCols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.schema[nl+c].Name + "=" + n.KeyExprs[i].String())
	}
	b.WriteString("]")
	if n.Residual != nil {
		b.WriteString(", where=[" + n.Residual.String() + "]")
	}
	b.WriteString(", select=[" + strings.Join(n.schema.Names(), ", ") + "]")
	if n.Lookup.Cache.Kind != lookup.CacheNone {
		b.WriteString(", cache=[" + n.Lookup.Cache.Kind.String() + "]")
	}
	if a := n.Async; a != nil {
		mode := "ORDERED"
		if a.Unordered {
			mode = "UNORDERED"
		}
		fmt.Fprintf(&b, ", async=[%s, %dms, %d]", mode, a.Timeout.Milliseconds(), a.Capacity)
	}
	if r := n.Retry; r != nil {
		fmt.Fprintf(&b, ", retry=[lookup_miss, FIXED_DELAY, %dms, %d]", r.Delay.Milliseconds(), r.MaxAttempts)
	}
	b.WriteString(")")
	return b.String()
}

// forwardChanges implements changeForwarder: the join is stateless and
// gives every output row its input row's kind.
func (n *LookupJoinNode) forwardChanges(m types.ChangelogMode) { n.mode = m }

// changeForwarder is a node that passes its single input's changes on, row
// kind by row kind (lookup joins, UNNEST).
type changeForwarder interface {
	Node
	forwardChanges(m types.ChangelogMode)
}

// dimensionTable resolves the right side of a temporal join to a catalog
// table (with its OPTIONS hints applied); views and WITH queries are not
// lookup sources.
func (pc *planContext) dimensionTable(right *parser.TableName, env *cteEnv) (*catalog.Table, bool, error) {
	if len(right.Name) == 1 {
		if cte, _ := env.lookup(right.Name[0]); cte != nil {
			return nil, false, nil
		}
	}
	id, err := pc.p.cat.Qualify(right.Name)
	if err != nil {
		return nil, false, errAt(right, "%s", err.Error())
	}
	if _, ok := pc.p.cat.View(id); ok {
		return nil, false, nil
	}
	t, ok := pc.p.cat.Table(id)
	if !ok {
		return nil, false, errAt(right, "Object '%s' not found", strings.Join(right.Name, "."))
	}
	if len(right.Hints) > 0 {
		if t, err = withHintOptions(t, right.Hints); err != nil {
			return nil, false, err
		}
	}
	return t, true, nil
}

// errProcTimeTemporal is Flink's refusal of a processing-time temporal
// join whose right side is not a lookup source.
const errProcTimeTemporal = "Processing-time temporal join is not supported yet."

func (pc *planContext) planLookupJoin(r *parser.Join, right *parser.TableName, left *relation, env *cteEnv) (*relation, error) {
	t, isTable, err := pc.dimensionTable(right, env)
	if err != nil {
		return nil, err
	}
	if !isTable {
		return nil, errAt(right, "%s", errProcTimeTemporal)
	}
	scan, err := pc.scanTable(t)
	if err != nil {
		return nil, err
	}
	ls, ok := scan.Source.(connectors.LookupSource)
	if !ok {
		return nil, errAt(right, "%s", errProcTimeTemporal)
	}
	dimSchema := make(types.Schema, len(scan.schema))
	for i, c := range scan.schema {
		dimSchema[i] = types.Column{Name: c.Name, Type: c.Type.WithoutTimeAttr()}
	}
	dim, err := aliasRelation(right, &relation{node: scan, scope: newScope(t.ID.Object, dimSchema)}, right.Alias, right.ColumnAliases)
	if err != nil {
		return nil, err
	}
	nl := len(left.scope.cols)
	sc := &scope{cols: append(append([]scopeColumn(nil), left.scope.cols...), dim.scope.cols...)}
	cond, err := (&binder{scope: sc, clause: "ON", cancel: pc.cancel}).bind(r.On)
	if err != nil {
		return nil, err
	}
	if rt := cond.Type().Root; rt != types.RootBoolean && rt != types.RootNull {
		return nil, errAt(r.On, "ON clause must be a condition")
	}
	keys, residual, err := splitTemporalCondition(cond, nl)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errAt(r.On, "Temporal table join requires an equality condition on fields of table [%s].", t.ID)
	}
	n := &LookupJoinNode{TableID: t.ID, LeftOuter: r.Kind == parser.JoinLeft, Residual: residual, DimWidth: len(dimSchema)}
	phys := make([]int, len(keys))
	for i, k := range keys {
		col := dimSchema[k.Right]
		x, err := expr.CastIfNeeded(k.Left, col.Type)
		if err != nil {
			return nil, errAt(r.On, "%s", err.Error())
		}
		n.KeyExprs = append(n.KeyExprs, x)
		n.DimKeyCols = append(n.DimKeyCols, k.Right)
		phys[i] = k.Right
		if scan.Prepare != nil {
			ref, ok := scan.Prepare[k.Right].(*expr.ColumnRef)
			if !ok {
				return nil, unsupportedAt(r.On, "the lookup key column '%s' of table %s is computed; lookup keys must be physical columns", col.Name, t.ID)
			}
			phys[i] = ref.Index
		}
	}
	if pk := t.PrimaryKey; pk != nil {
		n.DimUnique = true
		for _, name := range pk.Columns {
			if !slices.Contains(n.DimKeyCols, dimSchema.Index(name)) {
				n.DimUnique = false
			}
		}
	}
	if n.Lookup, err = ls.Lookup(phys); err != nil {
		return nil, fmt.Errorf("Unable to create a lookup source for table '%s'.\n\n%w", t.ID, err)
	}
	if scan.Prepare != nil {
		n.Prepare = scan.Prepare
	}
	hint := pc.lookupHint(right, t)
	async := n.Lookup.Async && n.Lookup.Fetcher != nil
	if hint != nil && hint.async != nil {
		async = *hint.async && n.Lookup.Fetcher != nil
	}
	if n.Lookup.Cache.Kind == lookup.CacheFull {
		// The full cache is read on the task's goroutine; there is
		// nothing to wait for asynchronously (as Flink's full cache, which
		// only has a synchronous lookup function).
		async = false
	}
	if async {
		cfg := pc.p.cfg.AsyncLookup
		a := &lookup.Async{Capacity: cfg.Capacity, Timeout: cfg.Timeout, Unordered: cfg.Unordered}
		if hint != nil {
			if hint.capacity > 0 {
				a.Capacity = hint.capacity
			}
			if hint.timeout > 0 {
				a.Timeout = hint.timeout
			}
			if hint.outputMode != "" {
				a.Unordered = hint.outputMode == "allow_unordered"
			}
		}
		if a.Capacity <= 0 {
			a.Capacity = 100
		}
		// Reordering changes of one key would corrupt the changelog: as
		// Flink, only an insert-only input is let out of order.
		a.Unordered = a.Unordered && !updating(left.node.Mode())
		n.Async = a
	}
	if hint != nil && hint.retry != nil {
		n.Retry = hint.retry
	}
	out := make(types.Schema, 0, len(sc.cols))
	out = append(out, left.node.Schema()...)
	out = append(out, dimSchema...)
	n.inputs, n.schema, n.mode = []Node{left.node}, out, left.node.Mode()
	return &relation{node: n, scope: sc}, nil
}

// lookupOp builds the runtime operator of a LookupJoinNode.
func (gb *graphBuilder) lookupOp(x *LookupJoinNode) func() (exec.Operator, error) {
	cfg := gb.cfg
	spec := lookup.Spec{
		Table:      x.TableID.String(),
		LeftWidth:  len(x.inputs[0].Schema()),
		DimWidth:   x.DimWidth,
		KeyWidth:   len(x.KeyExprs),
		DimKeyCols: x.DimKeyCols,
		LeftOuter:  x.LeftOuter,
		Fetcher:    x.Lookup.Fetcher,
		Loader:     x.Lookup.Loader,
		Cache:      x.Lookup.Cache,
		Async:      x.Async,
		Retry:      x.Retry,
	}
	keys, prep, residual := x.KeyExprs, x.Prepare, x.Residual
	spec.Key = func() (exec.Projector, error) { return expr.NewProjector(keys, cfg), nil }
	if prep != nil {
		spec.Prepare = func() (exec.Projector, error) { return expr.NewProjector(prep, cfg), nil }
	}
	if residual != nil {
		spec.Residual = func() (exec.Predicate, error) { return expr.NewPredicate(residual, cfg), nil }
	}
	return func() (exec.Operator, error) { return lookup.NewJoin(spec) }
}

// lookupHintSpec is a LOOKUP query hint.
type lookupHintSpec struct {
	hint       *parser.Hint
	table      string
	used       bool
	async      *bool
	outputMode string // ordered | allow_unordered
	capacity   int
	timeout    time.Duration
	retry      *lookup.Retry
}

// lookupHints are the LOOKUP hints of the SELECT whose FROM is being planned.
type lookupHints struct {
	lookups []*lookupHintSpec
	parent  *lookupHints
}

// pushQueryHints makes the hints of a SELECT apply to its FROM clause. The
// returned function restores the enclosing SELECT's and fails when a
// LOOKUP hint named no lookup table of the FROM clause.
func (pc *planContext) pushQueryHints(hints []*parser.Hint) (func() error, error) {
	qh := &lookupHints{parent: pc.hints}
	for _, h := range hints {
		if h.Name == "STATE_TTL" {
			continue // regular joins' (join_hints.go)
		}
		if h.Name != "LOOKUP" {
			return nil, unsupportedQueryHint(h)
		}
		spec, err := parseLookupHint(h)
		if err != nil {
			return nil, err
		}
		qh.lookups = append(qh.lookups, spec)
	}
	pc.hints = qh
	return func() error {
		pc.hints = qh.parent
		for _, l := range qh.lookups {
			if !l.used {
				return errAt(l.hint, "The options of following hints cannot match the name of input tables or views:\n`%s` in `LOOKUP`", l.table)
			}
		}
		return nil
	}, nil
}

// lookupHint returns the LOOKUP hint naming the lookup table (by its
// name, alias or full identifier), and marks it used.
func (pc *planContext) lookupHint(right *parser.TableName, t *catalog.Table) *lookupHintSpec {
	if pc.hints == nil {
		return nil
	}
	for _, l := range pc.hints.lookups {
		if l.table == right.Alias || l.table == t.ID.Object || l.table == strings.Join(right.Name, ".") || l.table == t.ID.String() {
			l.used = true
			return l
		}
	}
	return nil
}

var lookupHintKeys = []string{"table", "async", "output-mode", "capacity", "timeout",
	"retry-predicate", "retry-strategy", "fixed-delay", "max-attempts"}

func parseLookupHint(h *parser.Hint) (*lookupHintSpec, error) {
	if len(h.Args) > 0 {
		return nil, errAt(h, "Invalid LOOKUP hint: options must be given as 'key' = 'value' pairs, one of %s", strings.Join(lookupHintKeys, ", "))
	}
	spec := &lookupHintSpec{hint: h}
	retryKeys := map[string]string{}
	for _, o := range h.Options {
		key, v := strings.ToLower(o.Key), strings.TrimSpace(o.Value)
		bad := func(expected string) error {
			return errAt(h, "Invalid LOOKUP hint option '%s': expected %s, but was '%s'", o.Key, expected, o.Value)
		}
		switch key {
		case "table":
			spec.table = v
		case "async":
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return nil, bad("'true' or 'false'")
			}
			b := strings.EqualFold(v, "true")
			spec.async = &b
		case "output-mode":
			m := strings.ToLower(v)
			if m != "ordered" && m != "allow_unordered" {
				return nil, bad("'ordered' or 'allow_unordered'")
			}
			spec.outputMode = m
		case "capacity":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, bad("a positive integer")
			}
			spec.capacity = n
		case "timeout":
			d, err := connectors.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, bad("a positive duration")
			}
			spec.timeout = d
		case "retry-predicate":
			if !strings.EqualFold(v, "lookup_miss") {
				return nil, bad("'lookup_miss'")
			}
			retryKeys[key] = v
		case "retry-strategy":
			if !strings.EqualFold(v, "fixed_delay") {
				return nil, bad("'fixed_delay'")
			}
			retryKeys[key] = v
		case "fixed-delay":
			if d, err := connectors.ParseDuration(v); err != nil || d <= 0 {
				return nil, bad("a positive duration")
			}
			retryKeys[key] = v
		case "max-attempts":
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				return nil, bad("a positive integer")
			}
			retryKeys[key] = v
		default:
			return nil, errAt(h, "Invalid LOOKUP hint option '%s'; the options are %s", o.Key, strings.Join(lookupHintKeys, ", "))
		}
	}
	if spec.table == "" {
		return nil, errAt(h, "Invalid LOOKUP hint: the option 'table' (the lookup table's name) is required")
	}
	if len(retryKeys) > 0 {
		if len(retryKeys) != 4 {
			return nil, errAt(h, "Invalid LOOKUP hint: incomplete retry options; 'retry-predicate', 'retry-strategy', 'fixed-delay' and 'max-attempts' must be set together")
		}
		d, _ := connectors.ParseDuration(retryKeys["fixed-delay"])
		n, _ := strconv.Atoi(retryKeys["max-attempts"])
		spec.retry = &lookup.Retry{Delay: d, MaxAttempts: n}
	}
	return spec, nil
}

// TemporalJoinNode is an event-time temporal join (Flink's TemporalJoin):
// each left row joins the version of the versioned table valid at the
// left row's time, once the watermark passed it. Both inputs arrive
// hash-partitioned by the join key.
type TemporalJoinNode struct {
	base
	LeftOuter           bool
	LeftKeys, RightKeys []int
	LeftTime, RightTime int
	Residual            expr.Expr // over [left, right] rows
	Cond                expr.Expr // the whole ON condition, for EXPLAIN
	// StateTTL (ms) drops a key's state once idle that long
	// (table.exec.state.ttl); 0 keeps it.
	StateTTL int64
}

func (n *TemporalJoinNode) Describe() string {
	jt := "InnerJoin"
	if n.LeftOuter {
		jt = "LeftOuterJoin"
	}
	nl := len(n.inputs[0].Schema())
	return fmt.Sprintf("TemporalJoin(joinType=[%s], where=[%s], leftTimeAttribute=[%s], rightTimeAttribute=[%s], select=[%s])",
		jt, n.Cond, n.schema[n.LeftTime].Name, n.schema[nl+n.RightTime].Name, strings.Join(n.schema.Names(), ", "))
}

// planVersionedJoin plans an event-time temporal join against a versioned
// table: a table with a primary key and a row time attribute (an upsert or
// changelog source), or a view that keeps the last row per key by row
// time.
func (pc *planContext) planVersionedJoin(r *parser.Join, right *parser.TableName, left *relation, leftTime int, env *cteEnv) (*relation, error) {
	rel, err := pc.planTableName(right, right.Name, env, right.Hints...)
	if err != nil {
		return nil, err
	}
	if rel, err = aliasRelation(right, rel, right.Alias, right.ColumnAliases); err != nil {
		return nil, err
	}
	pk, ok := upsertKey(rel.node)
	if !ok || len(pk) == 0 {
		return nil, errAt(right, "Temporal Table Join requires primary key in versioned table, but no primary key can be found.")
	}
	rightTime := -1
	for i, c := range rel.node.Schema() {
		if c.Type.TimeAttr == types.RowtimeAttr {
			rightTime = i
		}
	}
	if rightTime < 0 {
		return nil, errAt(right, "Event-Time Temporal Table Join requires both primary key and row time attribute in versioned table, but no row time attribute can be found.")
	}
	if err := requireInsertOnly("TemporalJoin", left.node); err != nil {
		return nil, errAt(r, "%s", err.Error())
	}
	nl := len(left.scope.cols)
	rightSchema := make(types.Schema, len(rel.node.Schema()))
	for i, c := range rel.node.Schema() {
		rightSchema[i] = types.Column{Name: c.Name, Type: c.Type.WithoutTimeAttr()}
	}
	rsc := &scope{cols: append([]scopeColumn(nil), rel.scope.cols...)}
	for i := range rsc.cols {
		rsc.cols[i].Type = rsc.cols[i].Type.WithoutTimeAttr()
	}
	sc := &scope{cols: append(append([]scopeColumn(nil), left.scope.cols...), rsc.cols...)}
	cond, err := (&binder{scope: sc, clause: "ON", cancel: pc.cancel}).bind(r.On)
	if err != nil {
		return nil, err
	}
	if rt := cond.Type().Root; rt != types.RootBoolean && rt != types.RootNull {
		return nil, errAt(r.On, "ON clause must be a condition")
	}
	keys, residual, err := splitTemporalCondition(cond, nl)
	if err != nil {
		return nil, err
	}
	n := &TemporalJoinNode{LeftOuter: r.Kind == parser.JoinLeft, LeftTime: leftTime, RightTime: rightTime, Residual: residual, Cond: cond,
		StateTTL: pc.p.cfg.StateTTL.Milliseconds()}
	inKeys := map[int]bool{}
	for _, k := range keys {
		ref, isRef := k.Left.(*expr.ColumnRef)
		if !isRef {
			return nil, unsupportedAt(r.On, "the key of an event-time temporal join must be a column of the left table, not %s", k.Left)
		}
		lt, rt := left.node.Schema()[ref.Index].Type, rightSchema[k.Right].Type
		if !sameKeyFamily(lt, rt) {
			return nil, unsupportedAt(r.On, "the temporal join key %s = %s compares %s with %s; cast one side to the other's type", ref, rightSchema[k.Right].Name, lt, rt)
		}
		n.LeftKeys = append(n.LeftKeys, ref.Index)
		n.RightKeys = append(n.RightKeys, k.Right)
		inKeys[k.Right] = true
	}
	for _, c := range pk {
		if !inKeys[c] {
			names := make([]string, len(pk))
			for i, c := range pk {
				names[i] = rightSchema[c].Name
			}
			return nil, errAt(r.On, "Temporal table's primary key [%s] must be included in the equivalence condition of temporal join, but current temporal join condition is [%s].",
				strings.Join(names, ", "), cond)
		}
	}
	lex := pc.exchange(left.node, exec.Partitioner{Kind: exec.Hash, KeyCols: n.LeftKeys})
	rex := pc.exchange(rel.node, exec.Partitioner{Kind: exec.Hash, KeyCols: n.RightKeys})
	out := append(append(types.Schema{}, left.node.Schema()...), rightSchema...)
	n.inputs, n.schema, n.mode = []Node{lex, rex}, out, types.InsertOnly
	return &relation{node: n, scope: sc}, nil
}

// sameKeyFamily reports whether equal values of two key types encode and
// hash alike (the join's state key and exchange): integers with integers,
// strings with strings, or the same type.
func sameKeyFamily(a, b types.Type) bool {
	switch {
	case a.IsInteger() && b.IsInteger(), a.IsString() && b.IsString():
		return true
	}
	return a.EqualIgnoringNull(b)
}

// temporalJoin builds the two-input vertex of a TemporalJoinNode.
func (gb *graphBuilder) temporalJoin(x *TemporalJoinNode) (*exec.Vertex, error) {
	var inputs []exec.Input
	for i, in := range x.inputs {
		ex := in.(*ExchangeNode)
		v, err := gb.build(ex.inputs[0])
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, exec.Input{From: v.ID, InputIndex: i, Partitioner: ex.Partitioner})
	}
	v := gb.newVertex("", gb.p.cfg.Parallelism)
	v.Inputs = inputs
	cfg := gb.cfg
	spec := temporal.Spec{LeftKeys: x.LeftKeys, RightKeys: x.RightKeys, LeftTime: x.LeftTime, RightTime: x.RightTime,
		LeftWidth: len(x.inputs[0].Schema()), RightWidth: len(x.inputs[1].Schema()), LeftOuter: x.LeftOuter, StateTTL: x.StateTTL}
	if res := x.Residual; res != nil {
		spec.Residual = func() (exec.Predicate, error) { return expr.NewPredicate(res, cfg), nil }
	}
	return appendOp(v, x.Describe(), func() (exec.Operator, error) { return temporal.NewJoin(spec) }), nil
}
