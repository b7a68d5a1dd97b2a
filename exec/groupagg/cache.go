package groupagg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// The operators' per-key state lives in the runtime's keyed-state backend
// (kv), behind the decoded write-back cache of package statecache (load on
// miss, dirty tracking, write-back at PrepareSnapshot and on eviction, the
// rocksdb bound, TTL). What this file adds is where the decoded values of
// a cached key sit: in flat arrays indexed by the cache's ids, so a row of
// a cached key costs a hash probe and no decoding.

// valueCache is the state of the group aggregate and ChangelogNormalize:
// a fixed number of values per key, in a kv value state.
type valueCache struct {
	*statecache.Cache[[]types.Value]
	*flatValues
}

func newValueCache(b *kv.Backend, st *kv.ValueState[[]types.Value], keyCols []int, width int, ttl int64, complete bool, limit int) *valueCache {
	fv := &flatValues{statecache.Flat{Width: width}}
	cfg := statecache.Config{KeyCols: keyCols, TTL: ttl, ValueBytes: width*int(unsafe.Sizeof(types.Value{})) + 32, Limit: limit} // values, string bytes
	return &valueCache{Cache: statecache.New(b, st, fv, cfg, complete), flatValues: fv}
}

func (c *valueCache) preload(name string) error { return c.Preload(name, &valuesCodec{}) }

// flatValues holds width values per id (statecache.Flat).
type flatValues struct{ statecache.Flat }

func (f *flatValues) values(id int32) []types.Value { return f.Values(id) }

func (f *flatValues) Load(id int32, v []types.Value) error {
	if len(v) != f.Width {
		return fmt.Errorf("stored state of %d values, expected %d", len(v), f.Width)
	}
	copy(f.values(id), v)
	return nil
}

func (f *flatValues) Value(id int32) []types.Value { return f.Values(id) }

func (f *flatValues) Clear(id int32) { clear(f.values(id)) }

// valuesCodec encodes a row of values (types.AppendRow). Decoding reuses
// one buffer, valid until the next decode.
type valuesCodec struct{ scratch []types.Value }

func (*valuesCodec) ID() string { return "flinksql.values/1" }

func (*valuesCodec) Append(dst []byte, v []types.Value) []byte { return types.AppendRow(dst, v) }

func (c *valuesCodec) Decode(src []byte) ([]types.Value, error) {
	var err error
	c.scratch, src, err = decodeValues(c.scratch[:0], src)
	if err == nil && len(src) != 0 {
		err = fmt.Errorf("%d bytes after the values", len(src))
	}
	return c.scratch, err
}

// decodeValues appends the values of a row written by types.AppendRow.
func decodeValues(dst []types.Value, src []byte) ([]types.Value, []byte, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || n > uint64(len(src)) {
		return dst, nil, errors.New("truncated row")
	}
	src = src[w:]
	for range n {
		v, rest, err := types.DecodeValue(src)
		if err != nil {
			return dst, nil, err
		}
		dst, src = append(dst, v), rest
	}
	return dst, src, nil
}

// listCache is the state of the sink upsert materializer: the rows of a
// key currently alive, in arrival order, in a kv value state holding the
// whole list (Flink's SinkUpsertMaterializer keeps a ValueState of a List
// too, so the TTL counts from the last change of the list as a whole).
type listCache struct {
	*statecache.Cache[[]types.Row]
	*rowLists
}

func newListCache(b *kv.Backend, st *kv.ValueState[[]types.Row], keyCols []int, width int, ttl int64, complete bool, limit int) *listCache {
	rl := &rowLists{width: width}
	cfg := statecache.Config{KeyCols: keyCols, TTL: ttl, ValueBytes: 2*width*int(unsafe.Sizeof(types.Value{})) + 64, Limit: limit} // about two rows, string bytes
	return &listCache{Cache: statecache.New(b, st, rl, cfg, complete), rowLists: rl}
}

func (c *listCache) preload(name string) error { return c.Preload(name, &rowsCodec{}) }

// rowLists holds the rows of each id. Rows are copied in; the rows
// returned by rows are owned by it and valid until the next change of the
// key. Buffers of removed rows are recycled, so a steady stream of
// additions and removals allocates nothing.
type rowLists struct {
	width int
	lists [][]types.Row
	spare []types.Row
	chunk []types.Value
}

func (c *rowLists) rows(id int32) []types.Row { return c.lists[id] }

// buffer returns a row buffer holding a copy of r.
func (c *rowLists) buffer(r types.Row) types.Row {
	var b types.Row
	if n := len(c.spare); n > 0 {
		b = c.spare[n-1]
		c.spare = c.spare[:n-1]
	} else {
		if len(c.chunk) < c.width {
			c.chunk = make([]types.Value, 64*max(c.width, 1))
		}
		b = types.Row(c.chunk[:c.width:c.width])
		c.chunk = c.chunk[c.width:]
	}
	copy(b, r)
	return b
}

func (c *rowLists) recycle(b types.Row) {
	clear(b)
	c.spare = append(c.spare, b)
}

func (c *rowLists) appendRow(id int32, r types.Row) {
	c.lists[id] = append(c.lists[id], c.buffer(r))
}

func (c *rowLists) replaceRow(id int32, i int, r types.Row) {
	copy(c.lists[id][i], r)
}

func (c *rowLists) removeRow(id int32, i int) {
	l := c.lists[id]
	c.recycle(l[i])
	copy(l[i:], l[i+1:])
	l[len(l)-1] = nil
	c.lists[id] = l[:len(l)-1]
}

func (c *rowLists) Grow(n int) {
	for len(c.lists) < n {
		c.lists = append(c.lists, nil)
	}
}

func (c *rowLists) Load(id int32, rows []types.Row) error {
	for _, r := range rows {
		if len(r) != c.width {
			return fmt.Errorf("stored row of %d columns, expected %d", len(r), c.width)
		}
		c.appendRow(id, r)
	}
	return nil
}

func (c *rowLists) Value(id int32) []types.Row { return c.lists[id] }

func (c *rowLists) Clear(id int32) {
	l := c.lists[id]
	for i, r := range l {
		c.recycle(r)
		l[i] = nil
	}
	c.lists[id] = l[:0]
}

// rowsCodec encodes a list of rows: their count, then each row
// (types.AppendRow). Decoding reuses its buffers, valid until the next
// decode.
type rowsCodec struct {
	rows []types.Row
	vals []types.Value
	ends []int
}

func (*rowsCodec) ID() string { return "flinksql.rows/1" }

func (*rowsCodec) Append(dst []byte, rows []types.Row) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(rows)))
	for _, r := range rows {
		dst = types.AppendRow(dst, r)
	}
	return dst
}

func (c *rowsCodec) Decode(src []byte) ([]types.Row, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || n > uint64(len(src)) {
		return nil, errors.New("truncated list of rows")
	}
	src = src[w:]
	c.vals, c.ends = c.vals[:0], c.ends[:0]
	var err error
	for range n {
		if c.vals, src, err = decodeValues(c.vals, src); err != nil {
			return nil, err
		}
		c.ends = append(c.ends, len(c.vals))
	}
	if len(src) != 0 {
		return nil, fmt.Errorf("%d bytes after the rows", len(src))
	}
	rows, start := c.rows[:0], 0
	for _, e := range c.ends {
		rows = append(rows, c.vals[start:e:e])
		start = e
	}
	c.rows = rows
	return rows, nil
}
