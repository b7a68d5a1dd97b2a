package checkpoint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
)

// Query evolution: which state of a snapshot a job restores. Each
// stateful operator of the job is matched by its identity
// (exec.OperatorState.ID) with the snapshot's operators, and its state
// schema compared:
//
//   - kept: the same identity and schema, or a schema the restore migrates
//     (an aggregate call added to or removed from an aggregation, a
//     numeric type widened: TINYINT → SMALLINT → INT → BIGINT,
//     FLOAT → DOUBLE, whose stored values are the same);
//   - new (starts empty): no operator of the snapshot has its identity;
//   - dropped (state not restored): an operator of the snapshot that the
//     job no longer has; restoring then needs
//     execution.savepoint.ignore-unclaimed-state;
//   - incompatible (why): the same identity, but state the job cannot read.
//
// Snapshots of builds whose operator ids were plan positions ("v1-0")
// record no identities; they restore only into the same plan (the plan
// fingerprint is compared), and are mapped by position.

// Verdicts of a Migration.
const (
	VerdictKept         = "kept"
	VerdictNew          = "new (starts empty)"
	VerdictDropped      = "dropped (state not restored)"
	VerdictIncompatible = "incompatible"
)

// OperatorVerdict is what a restore does with one operator's state.
type OperatorVerdict struct {
	// ID is the job's operator, From the snapshot's ("" when none).
	ID, From string
	Kind     string
	Name     string
	Verdict  string
	// Why explains an incompatible verdict; for a kept one, what is
	// migrated (empty when nothing).
	Why string
}

// Line is the verdict as EXPLAIN MIGRATION prints it.
func (v OperatorVerdict) Line() string {
	switch {
	case v.Verdict == VerdictIncompatible:
		return "incompatible (" + v.Why + ")"
	case v.Why != "":
		return v.Verdict + " (migrated: " + v.Why + ")"
	}
	return v.Verdict
}

// Migration maps a snapshot's state onto a job.
type Migration struct {
	// Snapshot names the snapshot (its location, or checkpoint id).
	Snapshot  string
	Operators []OperatorVerdict
	// Mapping maps the snapshot's operator ids to the job's.
	Mapping map[string]string
	// Rewrites convert stored values, by the job's operator id and state.
	Rewrites map[string]map[string]exec.ValueRewrite
	// Positional: the snapshot predates operator identities and was
	// mapped by plan position (same plan).
	Positional bool
}

// Count returns how many operators got verdict.
func (mg *Migration) Count(verdict string) int {
	n := 0
	for _, v := range mg.Operators {
		if v.Verdict == verdict {
			n++
		}
	}
	return n
}

// Result is the overall verdict: whether the job can restore the snapshot
// and what it needs for it.
func (mg *Migration) Result() string {
	switch {
	case mg.Count(VerdictIncompatible) > 0:
		return fmt.Sprintf("incompatible: %d operator(s) cannot restore their state; the job is refused", mg.Count(VerdictIncompatible))
	case mg.Count(VerdictDropped) > 0:
		return fmt.Sprintf("restorable only with 'execution.state-recovery.ignore-unclaimed-state' = 'true' (alias 'execution.savepoint.ignore-unclaimed-state'): the state of %d operator(s) would not be restored", mg.Count(VerdictDropped))
	}
	return fmt.Sprintf("compatible: %d operator(s) keep their state, %d start empty", mg.Count(VerdictKept), mg.Count(VerdictNew))
}

// ErrUnclaimedState marks a restore refused because state of the snapshot
// would not be restored.
var ErrUnclaimedState = errors.New("unclaimed state")

// Check refuses the restore as the job would: incompatible state always,
// dropped state unless ignoreUnclaimed.
func (mg *Migration) Check(ignoreUnclaimed bool) error {
	for _, v := range mg.Operators {
		if v.Verdict == VerdictIncompatible {
			return fmt.Errorf("Failed to rollback to checkpoint/savepoint %s. Cannot restore the state of operator %s (%s) into the new program: %s: %w",
				mg.Snapshot, v.ID, v.Name, v.Why, ErrIncompatibleRestore)
		}
	}
	if ignoreUnclaimed {
		return nil
	}
	for _, v := range mg.Operators {
		if v.Verdict == VerdictDropped {
			return fmt.Errorf("Failed to rollback to checkpoint/savepoint %s. Cannot map checkpoint/savepoint state for operator %s (%s) to the new program, because the operator is not available in the new program. "+
				"If you want to allow to skip this, set 'execution.state-recovery.ignore-unclaimed-state' = 'true' (alias 'execution.savepoint.ignore-unclaimed-state'): %w", mg.Snapshot, v.From, v.Name, ErrUnclaimedState)
		}
	}
	return nil
}

// PlanMigration judges what restoring md into a job with the stateful
// operators ops does. fingerprint is the job's plan fingerprint and
// positional maps its operators' plan-position ids ("v1-0") to their
// identities, for snapshots that predate identities.
func PlanMigration(md *Metadata, ops []*exec.OperatorState, fingerprint string, positional map[string]string) (*Migration, error) {
	mg := &Migration{Snapshot: md.Location(), Mapping: map[string]string{}, Rewrites: map[string]map[string]exec.ValueRewrite{}}
	if mg.Snapshot == "" {
		mg.Snapshot = fmt.Sprintf("checkpoint %d", md.ID)
	}
	if len(md.Operators) == 0 {
		return positionalMigration(md, mg, ops, fingerprint, positional)
	}
	old := map[string]*exec.OperatorState{}
	for _, o := range md.Operators {
		old[o.ID] = o
	}
	withState := map[string]bool{}
	for _, in := range md.Instances {
		withState[in.Operator] = true
	}
	matched := map[string]bool{}
	for _, op := range ops {
		v := OperatorVerdict{ID: op.ID, Kind: op.Kind, Name: op.Name}
		o := old[op.ID]
		if o == nil {
			v.Verdict = VerdictNew
			mg.Operators = append(mg.Operators, v)
			continue
		}
		matched[o.ID] = true
		v.From = o.ID
		notes, rewrites, why := compareSchemas(o, op)
		if why != "" {
			v.Verdict, v.Why = VerdictIncompatible, why
		} else {
			v.Verdict, v.Why = VerdictKept, strings.Join(notes, "; ")
			mg.Mapping[o.ID] = op.ID
			if len(rewrites) > 0 {
				mg.Rewrites[op.ID] = rewrites
			}
		}
		mg.Operators = append(mg.Operators, v)
	}
	for _, o := range md.Operators {
		if !matched[o.ID] && withState[o.ID] {
			mg.Operators = append(mg.Operators, OperatorVerdict{From: o.ID, Kind: o.Kind, Name: o.Name, Verdict: VerdictDropped})
		}
	}
	// Instances of operators the snapshot does not describe cannot be
	// mapped: their state is dropped too.
	described := map[string]bool{}
	for _, o := range md.Operators {
		described[o.ID] = true
	}
	for _, in := range md.Instances {
		if !described[in.Operator] && !matched[in.Operator] {
			matched[in.Operator] = true
			mg.Operators = append(mg.Operators, OperatorVerdict{From: in.Operator, Name: in.Name, Verdict: VerdictDropped})
		}
	}
	return mg, nil
}

func positionalMigration(md *Metadata, mg *Migration, ops []*exec.OperatorState, fingerprint string, positional map[string]string) (*Migration, error) {
	mg.Positional = true
	if md.Plan != "" && md.Plan != fingerprint {
		return nil, fmt.Errorf("%s was taken by a release that identified operators by their position in the plan, and by a different plan (the query or its tables changed), so its state cannot be mapped onto this one; restore it into the query that took it: %w",
			mg.Snapshot, ErrIncompatibleRestore)
	}
	byID := map[string]*exec.OperatorState{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	mapped := map[string]bool{}
	for _, in := range md.Instances {
		id, ok := positional[in.Operator]
		if !ok {
			id = in.Operator
		}
		mg.Mapping[in.Operator] = id
		mapped[id] = true
	}
	for _, op := range ops {
		v := OperatorVerdict{ID: op.ID, Kind: op.Kind, Name: op.Name, Verdict: VerdictKept}
		if !mapped[op.ID] {
			v.Verdict = VerdictNew
		} else {
			for p, id := range positional {
				if id == op.ID {
					v.From = p
				}
			}
		}
		mg.Operators = append(mg.Operators, v)
	}
	return mg, nil
}

// compareSchemas compares the state schema of an operator in the snapshot
// (o) and in the job (n), which have the same identity. It returns what is
// migrated, the value rewrites that do it, or why the state cannot be
// restored.
func compareSchemas(o, n *exec.OperatorState) (notes []string, rewrites map[string]exec.ValueRewrite, why string) {
	if o.Kind != n.Kind {
		return nil, nil, fmt.Sprintf("the snapshot's operator is a %s, the job's a %s", o.Kind, n.Kind)
	}
	note, why := compareFields("key", o.Keys, n.Keys)
	if why != "" {
		return nil, nil, why
	}
	notes = append(notes, note...)
	note, why = compareFields("stored row column", o.Rows, n.Rows)
	if why != "" {
		return nil, nil, why
	}
	notes = append(notes, note...)
	if why := compareDeclarations(o.States, n.States); why != "" {
		return nil, nil, why
	}
	aggNotes, layoutChanged, why := compareAggs(o.Aggs, n.Aggs)
	if why != "" {
		return nil, nil, why
	}
	notes = append(notes, aggNotes...)
	if layoutChanged || o.AccWidth != n.AccWidth {
		if n.Migrate == nil {
			return nil, nil, "its accumulators changed and this operator cannot migrate them"
		}
		rw, err := n.Migrate(o)
		if err != nil {
			return nil, nil, err.Error()
		}
		rewrites = rw
	}
	return notes, rewrites, ""
}

// compareFields compares columns of a state schema: the same names, and
// types equal or widened.
func compareFields(what string, o, n []exec.StateField) (notes []string, why string) {
	if len(o) != len(n) {
		return nil, fmt.Sprintf("the snapshot stores %d %ss (%s), the job %d (%s)", len(o), what, fieldList(o), len(n), fieldList(n))
	}
	for i := range o {
		if o[i].Name != n[i].Name {
			return nil, fmt.Sprintf("%s %d is %s in the snapshot and %s in the job", what, i+1, o[i].Name, n[i].Name)
		}
		if o[i].Type == n[i].Type {
			continue
		}
		if !Widens(o[i].Type, n[i].Type) {
			return nil, fmt.Sprintf("%s %s has type %s in the snapshot and %s in the job, which is not a widening of it", what, o[i].Name, o[i].Type, n[i].Type)
		}
		notes = append(notes, fmt.Sprintf("%s %s widened from %s to %s", what, o[i].Name, o[i].Type, n[i].Type))
	}
	return notes, ""
}

func fieldList(fs []exec.StateField) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.Name + " " + f.Type
	}
	return strings.Join(s, ", ")
}

// compareAggs matches accumulators by call text: a call of the job that
// the snapshot lacks starts from its initial value, a call the job no
// longer has is dropped from the accumulator.
func compareAggs(o, n []exec.StateAgg) (notes []string, layoutChanged bool, why string) {
	taken := make([]bool, len(o))
	for j, a := range n {
		from := -1
		for i, b := range o {
			if !taken[i] && b.Call == a.Call {
				from, taken[i] = i, true
				break
			}
		}
		if from < 0 {
			notes = append(notes, a.Call+" added, starting from its initial value")
			layoutChanged = true
			continue
		}
		b := o[from]
		if from != j || b.Offset != a.Offset || b.Width != a.Width {
			layoutChanged = true
		}
		if b.Width != a.Width {
			return nil, false, fmt.Sprintf("the accumulator of %s has %d values in the snapshot and %d in the job", a.Call, b.Width, a.Width)
		}
		for k := range a.ArgTypes {
			if k < len(b.ArgTypes) && b.ArgTypes[k] != a.ArgTypes[k] {
				if !Widens(b.ArgTypes[k], a.ArgTypes[k]) {
					return nil, false, fmt.Sprintf("the argument of %s has type %s in the snapshot and %s in the job, which is not a widening of it", a.Call, b.ArgTypes[k], a.ArgTypes[k])
				}
				notes = append(notes, fmt.Sprintf("the argument of %s widened from %s to %s", a.Call, b.ArgTypes[k], a.ArgTypes[k]))
			}
		}
		if b.Result != a.Result && !Widens(b.Result, a.Result) {
			return nil, false, fmt.Sprintf("%s returns %s in the snapshot and %s in the job", a.Call, b.Result, a.Result)
		}
	}
	for i, b := range o {
		if !taken[i] {
			notes = append(notes, b.Call+" removed, its accumulator dropped")
			layoutChanged = true
		}
	}
	return notes, layoutChanged, ""
}

// compareDeclarations checks that the job reads every keyed state of the
// snapshot it declares the way it was written.
func compareDeclarations(o, n []kv.Declaration) string {
	byName := map[string]kv.Declaration{}
	for _, d := range n {
		byName[d.Name] = d
	}
	for _, d := range o {
		nd, ok := byName[d.Name]
		if !ok {
			continue
		}
		if nd.Kind != d.Kind || nd.Codec != d.Codec {
			return fmt.Sprintf("state %q was written as %s state with codec %q and is now read as %s state with codec %q", d.Name, d.Kind, d.Codec, nd.Kind, nd.Codec)
		}
		if (nd.TTL > 0) != (d.TTL > 0) {
			return fmt.Sprintf("state %q was written with state TTL %v and is now read with %v; enabling or disabling 'table.exec.state.ttl' on existing state is not supported", d.Name, d.TTL, nd.TTL)
		}
	}
	return ""
}

// numericWidth ranks the types whose values are stored alike (package
// types: every integer width is one kind, FLOAT is stored as a DOUBLE), so
// a wider one reads a narrower one's values unchanged.
var numericWidth = map[string][2]int{
	"TINYINT": {0, 1}, "SMALLINT": {0, 2}, "INT": {0, 3}, "INTEGER": {0, 3}, "BIGINT": {0, 4},
	"FLOAT": {1, 1}, "REAL": {1, 1}, "DOUBLE": {1, 2},
}

// Widens reports whether type to is a widening of type from (nullability
// may be relaxed, never tightened).
func Widens(from, to string) bool {
	fb, fnn := strings.CutSuffix(from, " NOT NULL")
	tb, tnn := strings.CutSuffix(to, " NOT NULL")
	if tnn && !fnn {
		return false
	}
	if fb == tb {
		return true
	}
	f, ok1 := numericWidth[fb]
	t, ok2 := numericWidth[tb]
	return ok1 && ok2 && f[0] == t[0] && f[1] < t[1]
}

// PositionalIDs maps the plan-position ids of g's operators ("v1-0",
// "v0-source") to their identities, for snapshots that predate them.
func PositionalIDs(g *exec.JobGraph) map[string]string {
	m := map[string]string{}
	for _, v := range g.Vertices {
		if v.SourceState != nil {
			m[fmt.Sprintf("v%d-source", v.ID)] = v.SourceState.ID
		}
		for i, st := range v.States {
			if st != nil {
				m[fmt.Sprintf("v%d-%d", v.ID, i)] = st.ID
			}
		}
	}
	return m
}
