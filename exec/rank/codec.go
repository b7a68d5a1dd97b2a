package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/flinksql/flinksql/types"
)

// valueBytes is the estimated memory of one decoded value held in a
// cache (statecache: the Top-N partitions' rows count it per value).
const valueBytes = int(unsafe.Sizeof(types.Value{})) + 16

// varint reads a varint from src.
func varint(src []byte) (int64, []byte, error) {
	x, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, errors.New("truncated varint")
	}
	return x, src[n:], nil
}

// appendRows appends the rows of p, in rank order, after their count.
func appendRows(dst []byte, p *sortedRows) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.len()))
	for i := range p.len() {
		dst = types.AppendRow(dst, p.at(i))
	}
	return dst
}

// decodeRowsInto decodes rows written by appendRows into the empty p.
func decodeRowsInto(src []byte, p *sortedRows) ([]byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, errors.New("truncated rows")
	}
	src = src[k:]
	for i := range int(n) {
		var r types.Row
		var err error
		if r, src, err = types.DecodeRow(src); err != nil {
			return nil, err
		}
		if len(r) != p.width {
			return nil, fmt.Errorf("a row of %d columns in state of rows of %d", len(r), p.width)
		}
		p.insert(i, r)
	}
	return src, nil
}

// corrupt wraps an error met decoding the stored state of operator what.
func corrupt(what string, err error) error { return fmt.Errorf("%s: corrupt state: %w", what, err) }

// storedWidth returns the width of the first row written by appendRows.
func storedWidth(src []byte) (int, error) {
	_, k := binary.Uvarint(src)
	if k <= 0 {
		return 0, errors.New("truncated rows")
	}
	n, k2 := binary.Uvarint(src[k:])
	if k2 <= 0 || n == 0 {
		return 0, errors.New("no rows")
	}
	return int(n), nil
}
