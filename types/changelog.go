package types

import "strings"

// ChangelogMode is the set of row kinds a stream may contain.
type ChangelogMode struct {
	Insert, UpdateBefore, UpdateAfter, Delete bool
}

// Common changelog modes.
var (
	InsertOnly = ChangelogMode{Insert: true}
	// Retract is the full changelog +I -U +U -D.
	Retract = ChangelogMode{Insert: true, UpdateBefore: true, UpdateAfter: true, Delete: true}
	// Upsert is +I +U -D keyed by a unique key (no -U).
	Upsert = ChangelogMode{Insert: true, UpdateAfter: true, Delete: true}
	// All accepts anything (sinks like print).
	All = Retract
)

// IsInsertOnly reports whether the mode carries only +I.
func (m ChangelogMode) IsInsertOnly() bool {
	return m.Insert && !m.UpdateBefore && !m.UpdateAfter && !m.Delete
}

// Contains reports whether every kind in o is also in m.
func (m ChangelogMode) Contains(o ChangelogMode) bool {
	return (m.Insert || !o.Insert) && (m.UpdateBefore || !o.UpdateBefore) &&
		(m.UpdateAfter || !o.UpdateAfter) && (m.Delete || !o.Delete)
}

// String formats the mode in Flink's EXPLAIN notation: [I], [I,UB,UA,D], [I,UA,D].
func (m ChangelogMode) String() string {
	var parts []string
	if m.Insert {
		parts = append(parts, "I")
	}
	if m.UpdateBefore {
		parts = append(parts, "UB")
	}
	if m.UpdateAfter {
		parts = append(parts, "UA")
	}
	if m.Delete {
		parts = append(parts, "D")
	}
	return "[" + strings.Join(parts, ",") + "]"
}
