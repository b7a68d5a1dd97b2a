package datagen

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"

	"github.com/flinksql/flinksql/types"
)

// env is the per-reader state shared by a reader's generators: its PRNG and
// the time of the current Read (one clock read per batch, not per row).
type env struct {
	rng *rand.Rand
	now int64 // epoch milliseconds
	buf []byte
}

// generator produces the values of one field. fill writes column col of rows
// whose slots are NULL on entry; next returns one value (nested fields).
type generator interface {
	fill(rows []types.Row, col int)
	next() types.Value
}

// isNull draws whether the next value is NULL.
func (e *env) isNull(rate float64) bool {
	return rate > 0 && e.rng.Float64() < rate
}

func newGenerator(sp *spec, e *env, subtask, parallelism int) generator {
	if sp.sequence {
		first := sp.start + int64(subtask)
		return &seqGen{e: e, typ: sp.typ, first: first, next_: first, step: int64(parallelism)}
	}
	switch sp.typ.Root {
	case types.RootBoolean:
		return &boolGen{e: e, nullRate: sp.nullRate}
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return &intGen{e: e, nullRate: sp.nullRate, min: sp.minI, span: uint64(sp.maxI-sp.minI) + 1}
	case types.RootFloat, types.RootDouble:
		return &floatGen{e: e, nullRate: sp.nullRate, min: sp.minF, max: sp.maxF, float32: sp.typ.Root == types.RootFloat}
	case types.RootDecimal:
		return &decimalGen{e: e, nullRate: sp.nullRate, min: sp.minF, max: sp.maxF, precision: sp.typ.Precision, scale: sp.typ.Scale}
	case types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary:
		return &textGen{e: e, nullRate: sp.nullRate, length: sp.length, varLen: sp.varLen, binary: sp.typ.IsBinary()}
	case types.RootDate, types.RootTime, types.RootTimestamp, types.RootTimestampLTZ:
		return &timeGen{e: e, nullRate: sp.nullRate, maxPast: sp.maxPast, root: sp.typ.Root, precision: sp.typ.Precision}
	case types.RootArray, types.RootMultiset, types.RootMap:
		g := &collectionGen{e: e, nullRate: sp.nullRate, length: sp.length, root: sp.typ.Root,
			elem: newGenerator(sp.elem, e, subtask, parallelism)}
		switch sp.typ.Root {
		case types.RootMap:
			g.value = newGenerator(sp.value, e, subtask, parallelism)
		case types.RootMultiset:
			g.value = &intGen{e: e, min: 0, span: 11} // occurrence counts 0…10, as Flink
		}
		return g
	case types.RootRow:
		g := &rowGen{e: e, nullRate: sp.nullRate}
		for _, f := range sp.fields {
			g.fields = append(g.fields, newGenerator(f, e, subtask, parallelism))
		}
		return g
	}
	// buildSpec rejected every other type.
	return &boolGen{e: e, nullRate: 1}
}

// fillNext is fill for generators without a specialised loop.
func fillNext(g generator, rows []types.Row, col int) {
	for _, r := range rows {
		r[col] = g.next()
	}
}

type boolGen struct {
	e        *env
	nullRate float64
}

func (g *boolGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	return types.Bool(g.e.rng.Uint64()&1 == 1)
}

func (g *boolGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

// intGen draws uniformly from min…min+span-1; span 0 stands for 2^64.
type intGen struct {
	e        *env
	nullRate float64
	min      int64
	span     uint64
}

func (g *intGen) draw() int64 {
	if g.span == 0 {
		return int64(g.e.rng.Uint64())
	}
	return int64(uint64(g.min) + g.e.rng.Uint64N(g.span))
}

func (g *intGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	return types.Int(g.draw())
}

func (g *intGen) fill(rows []types.Row, col int) {
	for _, r := range rows {
		if g.e.isNull(g.nullRate) {
			continue
		}
		r[col] = types.Int(g.draw())
	}
}

type floatGen struct {
	e        *env
	nullRate float64
	min, max float64
	float32  bool
}

func (g *floatGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	u := g.e.rng.Float64()
	f := g.min*(1-u) + g.max*u // no overflow even for ±MaxFloat64 bounds
	if g.float32 {
		f = float64(float32(f))
	}
	return types.Float(f)
}

func (g *floatGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

type decimalGen struct {
	e                *env
	nullRate         float64
	min, max         float64
	precision, scale int
}

func (g *decimalGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	u := g.e.rng.Float64()
	f := g.min*(1-u) + g.max*u
	scaled := f * math.Pow10(g.scale)
	limit := math.Pow10(g.precision) // |unscaled| must stay below 10^precision
	if math.Abs(scaled) >= limit {
		scaled = math.Copysign(limit-1, scaled)
	}
	if g.precision <= 18 {
		return types.DecimalFromUnscaled(int64(scaled), g.scale)
	}
	bi, _ := new(big.Float).SetFloat64(math.Trunc(scaled)).Int(nil)
	return types.DecimalFromBig(bi, g.scale)
}

func (g *decimalGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

const hexDigits = "0123456789abcdef"

// textGen draws random lower-case hex strings (as Flink does) or random bytes.
type textGen struct {
	e        *env
	nullRate float64
	length   int
	varLen   bool
	binary   bool
}

func (g *textGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	n := g.length
	if g.varLen && n > 1 {
		n = 1 + g.e.rng.IntN(n)
	}
	buf := g.e.buf[:0]
	if g.binary {
		for len(buf) < n {
			buf = binary.LittleEndian.AppendUint64(buf, g.e.rng.Uint64())
		}
		buf = buf[:n]
		g.e.buf = buf
		return types.Bytes(buf)
	}
	for len(buf) < n {
		u := g.e.rng.Uint64()
		for j := 0; j < 16 && len(buf) < n; j++ {
			buf = append(buf, hexDigits[u&15])
			u >>= 4
		}
	}
	g.e.buf = buf
	return types.String(string(buf))
}

func (g *textGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

// timeGen draws instants between now-maxPast and now. Like Flink, TIMESTAMP
// values hold the instant's UTC wall-clock time. DATE and TIME (which Flink's
// datagen does not support) take the date or time of day of that instant.
type timeGen struct {
	e         *env
	nullRate  float64
	maxPast   int64
	root      types.Root
	precision int
}

func (g *timeGen) draw() types.Value {
	ts := g.e.now
	if g.maxPast > 0 {
		ts -= g.e.rng.Int64N(g.maxPast)
	}
	switch g.root {
	case types.RootDate:
		return types.Int(floorDiv(ts, 86400000))
	case types.RootTime:
		ms := ts - floorDiv(ts, 86400000)*86400000
		return types.Int(truncMillis(ms, g.precision))
	}
	return types.TimestampMillis(truncMillis(ts, g.precision))
}

func (g *timeGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	return g.draw()
}

func (g *timeGen) fill(rows []types.Row, col int) {
	for _, r := range rows {
		if g.e.isNull(g.nullRate) {
			continue
		}
		r[col] = g.draw()
	}
}

// truncMillis drops the sub-second digits beyond precision (0…2).
func truncMillis(ms int64, precision int) int64 {
	var unit int64
	switch precision {
	case 0:
		unit = 1000
	case 1:
		unit = 100
	case 2:
		unit = 10
	default:
		return ms
	}
	return floorDiv(ms, unit) * unit
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

type collectionGen struct {
	e        *env
	nullRate float64
	length   int
	root     types.Root
	elem     generator
	value    generator // MAP values, MULTISET counts
}

func (g *collectionGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	if g.root == types.RootArray {
		elems := make([]types.Value, g.length)
		for i := range elems {
			elems[i] = g.elem.next()
		}
		return types.ArrayValue(elems)
	}
	keys := make([]types.Value, 0, g.length)
	values := make([]types.Value, 0, g.length)
next:
	for range g.length {
		k, v := g.elem.next(), g.value.next()
		for i := range keys { // a later entry replaces an equal key, as in a map
			if types.Equal(keys[i], k) {
				values[i] = v
				continue next
			}
		}
		keys = append(keys, k)
		values = append(values, v)
	}
	return types.MapOf(keys, values)
}

func (g *collectionGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

type rowGen struct {
	e        *env
	nullRate float64
	fields   []generator
}

func (g *rowGen) next() types.Value {
	if g.e.isNull(g.nullRate) {
		return types.NullValue
	}
	r := make(types.Row, len(g.fields))
	for i, f := range g.fields {
		r[i] = f.next()
	}
	return types.RowValue(r)
}

func (g *rowGen) fill(rows []types.Row, col int) { fillNext(g, rows, col) }

// seqGen emits start+subtask, start+subtask+parallelism, …; the reader stops
// before the subtask's share (seqShare) is exceeded.
type seqGen struct {
	e     *env
	typ   types.Type
	first int64 // the subtask's first value
	next_ int64
	step  int64
}

func (g *seqGen) value(v int64) types.Value {
	switch g.typ.Root {
	case types.RootFloat:
		return types.Float(float64(float32(v)))
	case types.RootDouble:
		return types.Float(float64(v))
	case types.RootDecimal:
		u := new(big.Int).Mul(big.NewInt(v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(g.typ.Scale)), nil))
		return types.DecimalFromBig(u, g.typ.Scale)
	case types.RootChar, types.RootVarChar:
		return types.String(strconv.FormatInt(v, 10))
	case types.RootBinary, types.RootVarBinary:
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(v))
		return types.Bytes(b[:])
	}
	return types.Int(v)
}

func (g *seqGen) next() types.Value {
	v := g.value(g.next_)
	g.next_ += g.step
	return v
}

func (g *seqGen) fill(rows []types.Row, col int) {
	if g.typ.IsInteger() {
		v, step := g.next_, g.step
		for _, r := range rows {
			r[col] = types.Int(v)
			v += step
		}
		g.next_ = v
		return
	}
	fillNext(g, rows, col)
}
