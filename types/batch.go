package types

// DefaultBatchSize is the number of rows a batch holds before it is handed on.
const DefaultBatchSize = 1024

// Batch is a reusable set of rows of one width with their row kinds. All rows
// are slices of one backing array, so filling a batch allocates nothing once
// it has reached its capacity.
//
// A batch handed to a consumer is only valid during that call: a consumer that
// keeps rows copies them.
type Batch struct {
	Rows  []Row
	Kinds []RowKind
	width int
	arena []Value
}

// NewBatch returns an empty batch for rows of the given width.
func NewBatch(width, capacity int) *Batch {
	if capacity <= 0 {
		capacity = DefaultBatchSize
	}
	return &Batch{
		Rows:  make([]Row, 0, capacity),
		Kinds: make([]RowKind, 0, capacity),
		width: width,
		arena: make([]Value, width*capacity),
	}
}

// Width is the number of columns of the batch's rows.
func (b *Batch) Width() int { return b.width }

// Len is the number of rows in the batch.
func (b *Batch) Len() int { return len(b.Rows) }

// Cap is the number of rows the batch holds without growing.
func (b *Batch) Cap() int { return cap(b.Rows) }

// Full reports whether the batch has reached its capacity.
func (b *Batch) Full() bool { return len(b.Rows) >= cap(b.Rows) }

// Reset empties the batch, keeping its memory. Values are cleared so the batch
// does not keep strings or nested values alive.
func (b *Batch) Reset() {
	n := len(b.Rows) * b.width
	clear(b.arena[:n])
	b.Rows = b.Rows[:0]
	b.Kinds = b.Kinds[:0]
}

// Append adds a row of the given kind and returns it for the caller to fill.
// Its values are NULL.
func (b *Batch) Append(kind RowKind) Row {
	i := len(b.Rows)
	if i == cap(b.Rows) {
		b.grow()
	}
	r := Row(b.arena[i*b.width : (i+1)*b.width : (i+1)*b.width])
	b.Rows = append(b.Rows, r)
	b.Kinds = append(b.Kinds, kind)
	return r
}

// AppendRow adds a copy of r with the given kind.
func (b *Batch) AppendRow(kind RowKind, r Row) {
	copy(b.Append(kind), r)
}

// Truncate drops rows from index n on.
func (b *Batch) Truncate(n int) {
	if n >= len(b.Rows) {
		return
	}
	clear(b.arena[n*b.width : len(b.Rows)*b.width])
	b.Rows = b.Rows[:n]
	b.Kinds = b.Kinds[:n]
}

func (b *Batch) grow() {
	c := 2 * cap(b.Rows)
	if c == 0 {
		c = 16
	}
	arena := make([]Value, c*b.width)
	copy(arena, b.arena[:len(b.Rows)*b.width])
	rows := make([]Row, len(b.Rows), c)
	for i := range rows {
		rows[i] = Row(arena[i*b.width : (i+1)*b.width : (i+1)*b.width])
	}
	kinds := make([]RowKind, len(b.Kinds), c)
	copy(kinds, b.Kinds)
	b.arena, b.Rows, b.Kinds = arena, rows, kinds
}
