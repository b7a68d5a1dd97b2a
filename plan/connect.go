package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// tableContext describes a catalog table to a connector factory.
func (pc *planContext) tableContext(t *catalog.Table) *connectors.TableContext {
	tc := &connectors.TableContext{
		Name:       t.ID.String(),
		ObjectName: t.ID.Object,
		Options:    t.OptionMap(),
		Loc:        pc.p.cfg.Loc,
		FileSystem: pc.p.cfg.FileSystem,
		Formats:    pc.p.reg.Formats(),
	}
	for _, c := range t.Columns {
		switch c.Kind {
		case parser.PhysicalColumn:
			tc.Physical = append(tc.Physical, types.Column{Name: c.Name, Type: c.Type.WithoutTimeAttr()})
		case parser.MetadataColumn:
			tc.Metadata = append(tc.Metadata, connectors.MetadataColumn{Name: c.Name, Key: c.MetadataKey, Type: c.Type.WithoutTimeAttr(), Virtual: c.Virtual})
		}
	}
	if t.PrimaryKey != nil {
		for _, name := range t.PrimaryKey.Columns {
			tc.PrimaryKey = append(tc.PrimaryKey, tc.Physical.Index(name))
		}
	}
	for _, name := range t.PartitionKeys {
		tc.PartitionKeys = append(tc.PartitionKeys, tc.Physical.Index(name))
	}
	return tc
}

// factory looks up t's connector; sink says which side the table is used
// on, for the message when there is no such connector.
func (pc *planContext) factory(t *catalog.Table, sink bool) (connectors.Factory, error) {
	id, ok := t.OptionMap()["connector"]
	if !ok {
		return nil, fmt.Errorf("Table options do not contain an option key 'connector' for discovering a connector (table %s).", t.ID)
	}
	f, err := pc.p.reg.Lookup(id)
	if err != nil && sink {
		return nil, fmt.Errorf("Unable to create a sink for writing table '%s'.\n\n%w", t.ID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("Unable to create a source for reading table '%s'.\n\n%w", t.ID, err)
	}
	if _, ok := f.(connectors.SupportsPartitioning); len(t.PartitionKeys) > 0 && !ok {
		side := "DynamicTableSource doesn't implement the SupportsPartitionPushDown"
		if sink {
			side = "DynamicTableSink doesn't implement the SupportsPartitioning"
		}
		return nil, fmt.Errorf("Table '%s' is a partitioned table, but the underlying %s interface: the '%s' connector does not support PARTITIONED BY (%s).",
			t.ID, side, f.Identifier(), strings.Join(t.PartitionKeys, ", "))
	}
	return f, nil
}

// scanTable plans reading a catalog table.
func (pc *planContext) scanTable(t *catalog.Table) (*ScanNode, error) {
	f, err := pc.factory(t, false)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(connectors.SourceFactory)
	if !ok {
		return nil, fmt.Errorf("Connector '%s' can only be used as a sink. It cannot be used as a source.", f.Identifier())
	}
	tc := pc.tableContext(t)
	src, err := sf.CreateSource(tc)
	if err != nil {
		return nil, fmt.Errorf("Unable to create a source for reading table '%s'.\n\n%w", t.ID, err)
	}
	readable := src.ReadableMetadata()
	for _, m := range tc.Metadata {
		mt, ok := readable[m.Key]
		if !ok {
			return nil, fmt.Errorf("Invalid metadata key '%s' in column '%s' of table '%s'. The connector '%s' supports the following metadata keys for reading:\n%s",
				m.Key, m.Name, t.ID, f.Identifier(), metadataKeys(readable))
		}
		// As Flink, the declared type need only be reachable by an explicit
		// cast (TIMESTAMP(3) from a TIMESTAMP_LTZ(3) 'timestamp').
		if _, err := expr.CastIfNeeded(expr.Column(0, m.Name, mt), m.Type.WithoutTimeAttr()); err != nil {
			return nil, fmt.Errorf("Invalid data type for metadata column '%s' of table '%s': the connector '%s' provides %s for metadata key '%s', which cannot be converted to %s",
				m.Name, t.ID, f.Identifier(), mt, m.Key, m.Type)
		}
	}

	// Rows arrive as [physical..., metadata...]; the table row is the
	// declared column order with computed columns evaluated.
	readWidth := len(tc.Physical) + len(tc.Metadata)
	readScope := &scope{}
	readIndex := map[string]int{}
	for _, c := range tc.Physical {
		readIndex[c.Name] = len(readScope.cols)
		readScope.cols = append(readScope.cols, scopeColumn{Qualifier: t.ID.Object, Name: c.Name, Type: c.Type})
	}
	for _, m := range tc.Metadata {
		readIndex[m.Name] = len(readScope.cols)
		readScope.cols = append(readScope.cols, scopeColumn{Qualifier: t.ID.Object, Name: m.Name, Type: readable[m.Key]})
	}
	schema := t.Schema()
	prepare := make([]expr.Expr, len(t.Columns))
	identity := len(t.Columns) == readWidth
	for i, c := range t.Columns {
		switch c.Kind {
		case parser.ComputedColumn:
			b := &binder{scope: readScope, clause: "computed column"}
			x, err := b.bind(c.Expr)
			if err != nil {
				return nil, err
			}
			prepare[i] = x
			identity = false
		default:
			ri := readIndex[c.Name]
			rc := readScope.cols[ri]
			x := expr.Column(ri, c.Name, rc.Type)
			if !rc.Type.EqualIgnoringNull(c.Type.WithoutTimeAttr()) {
				if x, err = expr.CastIfNeeded(x, c.Type.WithoutTimeAttr()); err != nil {
					return nil, err
				}
				identity = false
			}
			if ri != i {
				identity = false
			}
			prepare[i] = x
		}
	}
	if pc.batchMode() && !src.Bounded() {
		return nil, &UnboundedInBatchError{Table: t.ID.String()}
	}
	n := &ScanNode{Table: t, Source: src, ReadWidth: readWidth}
	if !identity {
		n.Prepare = prepare
	}
	if w := t.Watermark; w != nil {
		b := &binder{scope: newScope(t.ID.Object, schema), clause: "WATERMARK"}
		x, err := b.bind(w.Expr)
		if err != nil {
			return nil, err
		}
		n.Watermark = x
	}
	if err := n.watermarkOptions(tc.Options, pc.p.cfg.IdleTimeout); err != nil {
		return nil, err
	}
	n.schema, n.mode = schema, src.ChangelogMode()
	return n, nil
}

// Options of the table's source watermark (connectors.WatermarkOptions).
const (
	optWatermarkEmitStrategy = "scan.watermark.emit.strategy"
	optWatermarkIdleTimeout  = "scan.watermark.idle-timeout"
)

// watermarkAlignmentOptions are Flink's watermark alignment options, which
// are refused rather than accepted and ignored.
var watermarkAlignmentOptions = []string{
	"scan.watermark.alignment.group",
	"scan.watermark.alignment.max-drift",
	"scan.watermark.alignment.update-interval",
}

// watermarkOptions reads the table's 'scan.watermark.*' options. Their values
// are checked whether or not the table declares a WATERMARK; as in Flink
// they only act on a table that does. global is table.exec.source.idle-timeout,
// which the table's 'scan.watermark.idle-timeout' replaces when set.
func (n *ScanNode) watermarkOptions(options map[string]string, global time.Duration) error {
	opts := connectors.Options(options)
	strategy, err := opts.Enum(optWatermarkEmitStrategy, []string{"on-event", "on-periodic"}, "on-periodic")
	if err != nil {
		return err
	}
	idle, err := opts.Duration(optWatermarkIdleTimeout, 0)
	if err != nil {
		return err
	}
	for _, k := range watermarkAlignmentOptions {
		if opts.Has(k) {
			return &UnsupportedError{Msg: fmt.Sprintf("Option '%s' of table '%s': watermark alignment is not supported yet; remove the 'scan.watermark.alignment.*' options", k, n.Table.ID)}
		}
	}
	if n.Watermark == nil {
		return nil
	}
	n.EmitOnEvent = strategy == "on-event"
	n.IdleTimeout = global
	if opts.Has(optWatermarkIdleTimeout) {
		n.IdleTimeout, n.HasIdleTimeout = idle, true
	}
	return nil
}

// normalizeUpsert puts a ChangelogNormalize after a source that produces an
// upsert stream (updates without -U, deletes that may carry only the key),
// keyed by the table's primary key, as Flink does.
func (pc *planContext) normalizeUpsert(scan *ScanNode) (Node, error) {
	m := scan.Mode()
	if m.UpdateBefore && !m.UpdateAfter {
		// A -U without its +U cannot be paired into an update (Flink's
		// DynamicSourceUtils refuses such a source too, with this text).
		return nil, fmt.Errorf("Invalid source for table '%s'. A ScanTableSource doesn't support a changelog stream that contains "+
			"UPDATE_BEFORE but no UPDATE_AFTER. Please adapt the implementation of connector '%s'.", scan.Table.ID, scan.Table.OptionMap()["connector"])
	}
	if m.UpdateBefore && pc.p.cfg.CDCEventsDuplicate {
		return pc.normalizeDuplicates(scan)
	}
	if !m.UpdateAfter || m.UpdateBefore {
		// Inserts only, a full changelog, or inserts and deletes of whole
		// rows: nothing to normalize (Flink's ChangelogMode.isUpsert).
		return scan, nil
	}
	key, ok := upsertKey(scan)
	if !ok {
		return nil, fmt.Errorf("Table '%s' produces a changelog stream that contains UPDATE_AFTER but no UPDATE_BEFORE. "+
			"This requires defining a primary key constraint on the table.", scan.Table.ID)
	}
	ex := pc.exchange(scan, exec.Partitioner{Kind: exec.Hash, KeyCols: key})
	n := &ChangelogNormalizeNode{KeyCols: key, GenerateUpdateBefore: true}
	n.inputs, n.schema = []Node{ex}, scan.schema
	n.mode = types.ChangelogMode{Insert: true, UpdateBefore: true, UpdateAfter: true, Delete: m.Delete}
	return n, nil
}

// normalizeDuplicates deduplicates the change events of a changelog source
// that may deliver some twice (table.exec.source.cdc-events-duplicate), as
// Flink does: the -U rows are dropped and a ChangelogNormalize keyed by the
// primary key keeps each key's last row, so a repeated event changes
// nothing and the output is a proper changelog.
func (pc *planContext) normalizeDuplicates(scan *ScanNode) (Node, error) {
	key, ok := upsertKey(scan)
	if !ok {
		return nil, fmt.Errorf("Table '%s' produces a changelog and 'table.exec.source.cdc-events-duplicate' is 'true': duplicate change events are removed by the table's primary key, "+
			"but the table declares none. Define a PRIMARY KEY (...) NOT ENFORCED on the table, or set 'table.exec.source.cdc-events-duplicate' to 'false'.", scan.Table.ID)
	}
	drop := &DropUpdateBeforeNode{}
	m := scan.Mode()
	drop.inputs, drop.schema, drop.mode = []Node{scan}, scan.schema, withoutUB(m)
	ex := pc.exchange(drop, exec.Partitioner{Kind: exec.Hash, KeyCols: key})
	n := &ChangelogNormalizeNode{KeyCols: key, GenerateUpdateBefore: true}
	n.inputs, n.schema = []Node{ex}, scan.schema
	n.mode = types.ChangelogMode{Insert: true, UpdateBefore: true, UpdateAfter: true, Delete: m.Delete}
	return n, nil
}

func metadataKeys(m map[string]types.Type) string {
	keys := make([]string, 0, len(m))
	for k, t := range m {
		keys = append(keys, k+": "+t.String())
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "(none)"
	}
	return strings.Join(keys, "\n")
}

// planInsert plans INSERT INTO t [(cols)] query.
func (pc *planContext) planInsert(st *parser.Insert) (*SinkNode, error) {
	if st.Overwrite && !pc.batchMode() {
		return nil, &UnsupportedError{Msg: "INSERT OVERWRITE is not supported in streaming mode."}
	}
	if len(st.Partition) > 0 {
		return nil, &UnsupportedError{Msg: "INSERT ... PARTITION is not supported yet"}
	}
	id, err := pc.p.qualify(st, st.Table)
	if err != nil {
		return nil, err
	}
	if _, isView := pc.p.cat.View(id); isView {
		return nil, errAt(st, "Inserting into view '%s' is not allowed; views are read-only", id)
	}
	t, ok := pc.p.cat.Table(id)
	if !ok {
		return nil, errAt(st, "Object '%s' not found", strings.Join(st.Table, "."))
	}
	if len(st.Hints) > 0 {
		if t, err = withHintOptions(t, st.Hints); err != nil {
			return nil, err
		}
	}
	f, err := pc.factory(t, true)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(connectors.SinkFactory)
	if !ok {
		return nil, fmt.Errorf("Connector '%s' can only be used as a source. It cannot be used as a sink.", f.Identifier())
	}
	tc := pc.tableContext(t)
	sink, err := sf.CreateSink(tc)
	if err != nil {
		return nil, fmt.Errorf("Unable to create a sink for writing table '%s'.\n\n%w", t.ID, err)
	}
	if st.Overwrite {
		ow, ok := sink.(connectors.Overwritable)
		if !ok {
			return nil, &UnsupportedError{Msg: fmt.Sprintf("INSERT OVERWRITE requires that the underlying DynamicTableSink of table '%s' implements the SupportsOverwrite interface.", t.ID)}
		}
		if err := ow.ApplyOverwrite(); err != nil {
			return nil, err
		}
	}
	// The persisted columns: physical, then non-virtual metadata.
	var target types.Schema
	writable := sink.WritableMetadata()
	target = append(target, tc.Physical...)
	for _, m := range tc.Metadata {
		if m.Virtual {
			continue
		}
		if _, ok := writable[m.Key]; !ok {
			return nil, fmt.Errorf("Invalid metadata key '%s' in column '%s' of table '%s'. The connector '%s' supports the following metadata keys for writing:\n%s",
				m.Key, m.Name, t.ID, f.Identifier(), metadataKeys(writable))
		}
		target = append(target, types.Column{Name: m.Name, Type: m.Type})
	}

	rel, err := pc.planQuery(st.Query, nil)
	if err != nil {
		return nil, err
	}
	if err := resolveMarkers(rel); err != nil {
		return nil, err
	}
	if err := checkSupported(rel.node); err != nil {
		return nil, err
	}
	rel.node = pruneJoinInputs(rel.node)
	if rel, err = pc.finishBatch(rel); err != nil {
		return nil, err
	}
	q := rel.node.Schema()
	// Map the query's columns onto the target's, by the column list if given.
	pos := make([]int, len(target)) // target column -> query column, -1 for NULL
	if len(st.Columns) == 0 {
		if len(q) != len(target) {
			return nil, schemaMismatch(t.ID, "Different number of columns.", q, target)
		}
		for i := range pos {
			pos[i] = i
		}
	} else {
		if len(st.Columns) != len(q) {
			return nil, errAt(st, "Column count of the INSERT column list (%d) does not match the query (%d)", len(st.Columns), len(q))
		}
		for i := range pos {
			pos[i] = -1
		}
		for qi, name := range st.Columns {
			ti := target.Index(name)
			if ti < 0 {
				return nil, errAt(st, "Unknown target column '%s'", name)
			}
			if pos[ti] >= 0 {
				return nil, errAt(st, "Target column '%s' is assigned more than once", name)
			}
			pos[ti] = qi
		}
	}
	proj := make([]expr.Expr, len(target))
	out := make(types.Schema, len(target))
	identity := len(q) == len(target)
	for ti, tcol := range target {
		qi := pos[ti]
		if qi < 0 {
			if tcol.Type.NotNull {
				return nil, errAt(st, "Column '%s' has no default value and does not allow NULLs", tcol.Name)
			}
			proj[ti] = expr.NullLiteral(tcol.Type)
			out[ti] = tcol
			identity = false
			continue
		}
		qt := q[qi].Type.WithoutTimeAttr()
		if !castableImplicitly(qt, tcol.Type) {
			return nil, schemaMismatch(t.ID, fmt.Sprintf("Incompatible types for sink column '%s' at position %d.", tcol.Name, ti), q, target)
		}
		col := expr.Column(qi, q[qi].Name, q[qi].Type)
		x, err := expr.CastIfNeeded(col, tcol.Type)
		if err != nil {
			return nil, schemaMismatch(t.ID, fmt.Sprintf("Incompatible types for sink column '%s' at position %d.", tcol.Name, ti), q, target)
		}
		proj[ti] = x
		out[ti] = types.Column{Name: tcol.Name, Type: x.Type()}
		// Compare the expression, not its text: an implicit cast prints as
		// its operand but changes the value's representation.
		if qi != ti || x != col {
			identity = false
		}
	}
	in := rel.node
	if !identity {
		in = newCalc(in, proj, nil, out)
	}
	accepted := sink.AcceptedChangelogMode(in.Mode())
	if updating(in.Mode()) && !accepted.Contains(withoutUB(in.Mode())) {
		err := sinkModeError(t.ID.String(), in, accepted)
		if h, ok := sink.(interface{ UpdatingInputHint() string }); ok {
			err = fmt.Errorf("%w\n%s", err, h.UpdatingInputHint())
		}
		return nil, err
	}
	var pk []int
	if t.PrimaryKey != nil {
		for _, name := range t.PrimaryKey.Columns {
			pk = append(pk, target.Index(name))
		}
	}
	in = pc.addSinkMaterializer(in, pk, "")
	resolveChangelog(in, accepted.UpdateBefore)
	if in.Mode().UpdateBefore && !accepted.UpdateBefore && len(pk) > 0 {
		if _, has := in.(*SinkMaterializerNode); !has {
			// The stream still carries -U (a filter over updates needs it) and
			// the upsert sink does not take it: materialize by the key.
			reason := "the upsert sink does not take the -U rows a filter over the updating input needs"
			if !filterNeedsUB(in) {
				reason = "the upsert sink does not take the -U rows the retracting source produces"
			}
			in = pc.addSinkMaterializer(in, pk, reason)
			resolveChangelog(in, false)
		}
	}
	if err := checkFinal(in); err != nil {
		return nil, err
	}
	s := &SinkNode{Name: t.ID.String(), Sink: sink, Fields: target.Names(), PrimaryKey: pk, Overwrite: st.Overwrite}
	s.inputs, s.schema, s.mode = []Node{in}, target, in.Mode()
	return s, nil
}

// filterNeedsUB reports whether a filter over updates below n (rather than
// only a retracting source) is why n's stream carries -U rows.
func filterNeedsUB(n Node) bool {
	if c, ok := n.(*CalcNode); ok && c.Filter != nil && updating(c.inputs[0].Mode()) {
		return true
	}
	for _, in := range n.Inputs() {
		if in.Mode().UpdateBefore && filterNeedsUB(in) {
			return true
		}
	}
	return false
}

// withoutUB drops update-before from a mode: whether a stream carries -U is
// decided afterwards, from what its consumer accepts.
func withoutUB(m types.ChangelogMode) types.ChangelogMode {
	m.UpdateBefore = false
	return m
}

func schemaMismatch(id catalog.Identifier, cause string, q, sink types.Schema) error {
	return fmt.Errorf("Column types of query result and sink for '%s' do not match.\nCause: %s\n\nQuery schema: %s\nSink schema:  %s",
		id, cause, schemaList(q), schemaList(sink))
}

func schemaList(s types.Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Name + ": " + c.Type.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// sinkModeError is Flink's message for a sink fed changes it cannot take,
// plus one line saying what would work.
func sinkModeError(name string, in Node, accepted types.ChangelogMode) error {
	return fmt.Errorf("Table sink '%s' doesn't support consuming %s changes which is produced by node %s\n"+
		"Use a window aggregation (GROUP BY window_start, window_end, ... over a window table function) to produce an insert-only result, "+
		"or write to a sink that accepts updates, such as 'upsert-kafka' with a PRIMARY KEY.",
		name, changeKinds(in.Mode(), accepted), producer(in).Describe())
}

// checkSupported rejects plan shapes the runtime cannot run yet.
func checkSupported(n Node) error {
	if w, ok := n.(*WindowTVFNode); ok && w.Window.Kind == exec.Session {
		return &UnsupportedError{Msg: "The SESSION window table function is supported in window aggregations (GROUP BY window_start, window_end, ...); on its own it is not supported yet"}
	}
	if m, ok := n.(*overRankMarker); ok {
		return m.err
	}
	// CURRENT_WATERMARK reads the watermark of a projection or filter
	// (exec.NewWatermarkCalc); the other operators evaluating conditions
	// do not track one for their expressions.
	var conds []expr.Expr
	switch x := n.(type) {
	case *JoinNode:
		conds = []expr.Expr{x.Cond, x.Residual}
	case *IntervalJoinNode:
		conds = []expr.Expr{x.Cond, x.Residual}
	case *WindowJoinNode:
		conds = []expr.Expr{x.Cond, x.Residual}
	case *TemporalJoinNode:
		conds = []expr.Expr{x.Cond, x.Residual}
	case *LookupJoinNode:
		conds = append([]expr.Expr{x.Residual}, x.KeyExprs...)
	case *UnnestNode:
		conds = append([]expr.Expr{x.Cond}, x.Args...)
	}
	for _, c := range conds {
		if usesFunction(c, "CURRENT_WATERMARK") {
			return &UnsupportedError{Msg: "CURRENT_WATERMARK in a join condition or an UNNEST is not supported yet; compute it in a projection or WHERE clause of a subquery over one input"}
		}
	}
	for _, in := range n.Inputs() {
		if err := checkSupported(in); err != nil {
			return err
		}
	}
	return nil
}

// hintSkip offers the conjuncts of a filter right above a scan to a source
// that can skip rows (connectors.SkippingSource): those that keep only rows
// whose physical column holds one of a set of constants. The filter stays
// where it is; the hint only saves the source producing rows it drops.
func hintSkip(in Node, filter expr.Expr) {
	scan, ok := in.(*ScanNode)
	if !ok || filter == nil {
		return
	}
	src, ok := scan.Source.(connectors.SkippingSource)
	if !ok {
		return
	}
	for _, c := range boundConjuncts(filter) {
		col, values, ok := columnInConstants(c)
		if !ok {
			continue
		}
		read := col
		if scan.Prepare != nil {
			ref, isRef := scan.Prepare[col].(*expr.ColumnRef)
			if !isRef {
				continue // a computed or converted column: not in the read row as such
			}
			read = ref.Index
		}
		src.SkipUnlessIn(read, values)
	}
}

// columnInConstants recognises column = constant, column IN (constants) and
// ORs of equalities on one column, with constants of the column's own type
// (no implicit conversion between them) and no NULL among them.
func columnInConstants(e expr.Expr) (col int, values []types.Value, ok bool) {
	var args []expr.Expr
	switch expr.CallName(e) {
	case "=", "IN":
		args = expr.CallArgs(e)
		if expr.CallName(e) == "=" && len(args) == 2 {
			if _, isLit := expr.LiteralValue(args[0]); isLit {
				args = []expr.Expr{args[1], args[0]}
			}
		}
	case "OR":
		col = -1
		for _, a := range expr.CallArgs(e) {
			c, vs, ok := columnInConstants(a)
			if !ok || (col >= 0 && c != col) {
				return 0, nil, false
			}
			col, values = c, append(values, vs...)
		}
		return col, values, col >= 0
	default:
		return 0, nil, false
	}
	if len(args) < 2 {
		return 0, nil, false
	}
	ref, isRef := args[0].(*expr.ColumnRef)
	if !isRef {
		return 0, nil, false
	}
	for _, a := range args[1:] {
		v, isLit := expr.LiteralValue(a)
		if !isLit || v.IsNull() || a.Type().Root != ref.T.Root {
			return 0, nil, false
		}
		values = append(values, v)
	}
	return ref.Index, values, true
}
