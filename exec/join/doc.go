// Package join owns the stream-stream join operators: the regular
// (unbounded) join of two changelogs and the interval join of two
// insert-only streams bounded in time. Both are keyed operators
// (exec.KeyedOperator) with two inputs, 0 the left side and 1 the right
// side; both inputs arrive hash-partitioned by their join key, so the key
// of a row is set once on the backend and addresses both sides' states.
//
// The rows a join emits are the left row's columns followed by the right
// row's; a side without a match in an outer join is padded with NULLs.
package join

import (
	"fmt"

	"github.com/flinksql/flinksql/types"
)

// Type is the kind of a join.
type Type uint8

const (
	Inner Type = iota
	LeftOuter
	RightOuter
	FullOuter
	// Semi emits the left rows that have a match (IN, EXISTS); Anti the
	// left rows that have none (NOT IN, NOT EXISTS). Their output is the
	// left row alone.
	Semi
	Anti
)

func (t Type) String() string {
	switch t {
	case Inner:
		return "InnerJoin"
	case LeftOuter:
		return "LeftOuterJoin"
	case RightOuter:
		return "RightOuterJoin"
	case FullOuter:
		return "FullOuterJoin"
	case Semi:
		return "LeftSemiJoin"
	case Anti:
		return "LeftAntiJoin"
	}
	return fmt.Sprintf("JoinType(%d)", t)
}

// semiAnti reports whether the join emits left rows only.
func (t Type) semiAnti() bool { return t == Semi || t == Anti }

// leftOuter reports whether left rows without a match are emitted padded.
func (t Type) leftOuter() bool { return t == LeftOuter || t == FullOuter }

// rightOuter reports whether right rows without a match are emitted padded.
func (t Type) rightOuter() bool { return t == RightOuter || t == FullOuter }

// stateCodec is the []byte codec of a join state; its id names the layout
// of the bytes, so a checkpoint of one layout is never read as another.
type stateCodec struct{ id string }

func (c stateCodec) ID() string                       { return c.id }
func (stateCodec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (stateCodec) Decode(src []byte) ([]byte, error)  { return src, nil }

// hasNullKey reports whether one of the key columns of r is NULL where
// NULL never matches (= rather than IS NOT DISTINCT FROM).
func hasNullKey(r types.Row, keys []int, nullSafe []bool) bool {
	for i, c := range keys {
		if r[c].K == types.KindNull && (i >= len(nullSafe) || !nullSafe[i]) {
			return true
		}
	}
	return false
}

// appendKey appends the binary form of r's key columns: equal keys of the
// two sides (the planner gives them one value representation) give equal
// bytes.
func appendKey(dst []byte, r types.Row, keys []int) []byte {
	for _, c := range keys {
		dst = types.AppendValue(dst, r[c])
	}
	return dst
}

// decodeRowInto decodes a row written by types.AppendRow into dst, which
// must have its width.
func decodeRowInto(dst types.Row, src []byte) ([]byte, error) {
	n, w := uvarint(src)
	if w <= 0 || int(n) != len(dst) {
		return nil, fmt.Errorf("corrupt state: a row of %d columns where %d are expected", n, len(dst))
	}
	src = src[w:]
	var err error
	for i := range dst {
		if dst[i], src, err = types.DecodeValue(src); err != nil {
			return nil, fmt.Errorf("corrupt state: %w", err)
		}
	}
	return src, nil
}
