// Package datagen owns the 'datagen' source connector: rows of random or
// sequential values generated per column, throttled to 'rows-per-second',
// with Flink 1.20's options. Each source subtask is one split; sequence
// ranges and 'number-of-rows' are divided evenly and deterministically across
// subtasks, and the source is bounded when either is given.
package datagen

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "datagen"

// Option keys.
const (
	OptRowsPerSecond   = "rows-per-second"
	OptNumberOfRows    = "number-of-rows"
	OptScanParallelism = "scan.parallelism"
)

// Per-field option suffixes (fields.<name>.<suffix>).
const (
	fieldKind     = "kind"
	fieldMin      = "min"
	fieldMax      = "max"
	fieldMaxPast  = "max-past"
	fieldLength   = "length"
	fieldVarLen   = "var-len"
	fieldStart    = "start"
	fieldEnd      = "end"
	fieldNullRate = "null-rate"
)

const (
	kindRandom   = "random"
	kindSequence = "sequence"
)

const (
	defaultRowsPerSecond    = 10000
	defaultStringLength     = 100
	defaultBytesLength      = 100
	defaultCollectionLength = 3
)

// Factory creates datagen sources.
type Factory struct{}

// NewFactory returns the datagen factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return nil }

// OptionalOptions implements connectors.Factory. Which field options a column
// accepts depends on its type and generator kind; CreateSource checks that.
func (*Factory) OptionalOptions() []string {
	return []string{
		OptRowsPerSecond, OptNumberOfRows, OptScanParallelism,
		"fields.#." + fieldKind, "fields.#." + fieldMin, "fields.#." + fieldMax,
		"fields.#." + fieldMaxPast, "fields.#." + fieldLength, "fields.#." + fieldVarLen,
		"fields.#." + fieldStart, "fields.#." + fieldEnd, "fields.#." + fieldNullRate,
	}
}

// Source is a configured datagen table.
type Source struct {
	name          string
	width         int // physical columns plus metadata columns
	specs         []*spec
	rowsPerSecond int64
	numberOfRows  int64 // -1: unlimited
	parallelism   int   // 0: the job's default
	bounded       bool
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	opts := connectors.Options(tc.Options)
	accepted := []string{OptRowsPerSecond, OptNumberOfRows, OptScanParallelism}
	accepted = append(accepted, connectors.WatermarkOptions...)
	kinds := make([]string, len(tc.Physical))
	for i, c := range tc.Physical {
		key := "fields." + c.Name + "." + fieldKind
		accepted = append(accepted, key)
		kind, err := opts.Enum(key, []string{kindRandom, kindSequence}, kindRandom)
		if err != nil {
			return nil, err
		}
		kinds[i] = kind
		accepted = append(accepted, acceptedKeys("fields."+c.Name, c.Type, kind == kindSequence)...)
	}
	if err := connectors.ValidateOptionKeys(tc, Identifier, nil, accepted); err != nil {
		return nil, err
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("datagen table %s: the datagen connector has no metadata, but column '%s' declares METADATA",
			tc.Name, tc.Metadata[0].Name)
	}

	s := &Source{name: tc.Name, width: len(tc.Physical) + len(tc.Metadata), numberOfRows: -1}
	var err error
	if s.rowsPerSecond, err = opts.Long(OptRowsPerSecond, defaultRowsPerSecond); err != nil {
		return nil, err
	}
	if s.rowsPerSecond <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptRowsPerSecond, s.rowsPerSecond)
	}
	if opts.Has(OptNumberOfRows) {
		if s.numberOfRows, err = opts.Long(OptNumberOfRows, 0); err != nil {
			return nil, err
		}
		if s.numberOfRows < 0 {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a non-negative number, but was: %d", OptNumberOfRows, s.numberOfRows)
		}
		s.bounded = true
	}
	if s.parallelism, err = opts.Int(OptScanParallelism, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptScanParallelism) && s.parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptScanParallelism, s.parallelism)
	}
	for i, c := range tc.Physical {
		sp, err := buildSpec(opts, "fields."+c.Name, c.Type, kinds[i] == kindSequence)
		if err != nil {
			return nil, err
		}
		if sp.sequence {
			s.bounded = true
		}
		s.specs = append(s.specs, sp)
	}
	return s, nil
}

// Bounded implements connectors.ScanSource.
func (s *Source) Bounded() bool { return s.bounded }

// ChangelogMode implements connectors.ScanSource.
func (s *Source) ChangelogMode() types.ChangelogMode { return types.InsertOnly }

// Parallelism implements connectors.ScanSource.
func (s *Source) Parallelism(defaultParallelism int) int {
	if s.parallelism > 0 {
		return s.parallelism
	}
	return max(defaultParallelism, 1)
}

// ReadableMetadata implements connectors.ScanSource.
func (s *Source) ReadableMetadata() map[string]types.Type { return nil }

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	if parallelism <= 0 || subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("datagen table %s: invalid subtask %d of %d", s.name, subtask, parallelism)
	}
	return newReader(s, subtask, parallelism), nil
}

// spec is the immutable description of one field's generator.
type spec struct {
	typ      types.Type
	sequence bool
	nullRate float64

	// random numbers: integers use minI/maxI, FLOAT/DOUBLE/DECIMAL minF/maxF.
	minI, maxI int64
	minF, maxF float64
	// random timestamps, dates and times: up to maxPast ms before now.
	maxPast int64
	// random strings, bytes and collections.
	length int
	varLen bool
	// sequences: start…end inclusive.
	start, end int64

	elem, value *spec // ARRAY/MULTISET element; MAP key (elem) and value
	fields      []*spec
}

// acceptedKeys lists the option keys a field accepts, Flink-style: only those
// that mean something for its type and kind.
func acceptedKeys(prefix string, t types.Type, sequence bool) []string {
	k := func(suffixes ...string) []string {
		out := make([]string, len(suffixes))
		for i, s := range suffixes {
			out[i] = prefix + "." + s
		}
		return out
	}
	if sequence {
		if t.Root == types.RootBoolean {
			return nil
		}
		return k(fieldStart, fieldEnd)
	}
	switch t.Root {
	case types.RootBoolean, types.RootChar:
		return k(fieldNullRate)
	case types.RootVarChar, types.RootBinary, types.RootVarBinary:
		return k(fieldLength, fieldVarLen, fieldNullRate)
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootFloat, types.RootDouble, types.RootDecimal,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return k(fieldMin, fieldMax, fieldNullRate)
	case types.RootDate, types.RootTime, types.RootTimestamp, types.RootTimestampLTZ:
		return k(fieldMaxPast, fieldNullRate)
	case types.RootArray, types.RootMultiset:
		return append(k(fieldLength, fieldNullRate), acceptedKeys(prefix+".element", *t.Elem, false)...)
	case types.RootMap:
		keys := k(fieldLength, fieldNullRate)
		keys = append(keys, acceptedKeys(prefix+".key", *t.Elem, false)...)
		return append(keys, acceptedKeys(prefix+".value", *t.Value, false)...)
	case types.RootRow:
		keys := k(fieldNullRate)
		for _, f := range t.Fields {
			keys = append(keys, acceptedKeys(prefix+"."+f.Name, f.Type, false)...)
		}
		return keys
	}
	return nil
}

// integerRange is the range of values of an integer-valued type.
func integerRange(t types.Type) (lo, hi int64, ok bool) {
	switch t.Root {
	case types.RootTinyInt:
		return math.MinInt8, math.MaxInt8, true
	case types.RootSmallInt:
		return math.MinInt16, math.MaxInt16, true
	case types.RootInt:
		return math.MinInt32, math.MaxInt32, true
	case types.RootBigInt, types.RootIntervalDayTime:
		return math.MinInt64, math.MaxInt64, true
	case types.RootIntervalYearMonth:
		return 0, 120000, true // Flink's default range for YEAR TO MONTH intervals
	}
	return 0, 0, false
}

func buildSpec(opts connectors.Options, prefix string, t types.Type, sequence bool) (*spec, error) {
	sp := &spec{typ: t, sequence: sequence && t.Root != types.RootBoolean}
	var err error
	if sp.sequence {
		return sp, sequenceSpec(opts, prefix, sp)
	}
	if sp.nullRate, err = opts.Float(prefix+"."+fieldNullRate, 0); err != nil {
		return nil, err
	}
	if sp.nullRate < 0 || sp.nullRate > 1 {
		return nil, fmt.Errorf("Invalid value for option '%s.%s'. Expected a number between 0 and 1, but was: %v", prefix, fieldNullRate, sp.nullRate)
	}
	minKey, maxKey := prefix+"."+fieldMin, prefix+"."+fieldMax
	switch t.Root {
	case types.RootBoolean:
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		lo, hi, _ := integerRange(t)
		if sp.minI, err = integerOption(opts, minKey, t, lo); err != nil {
			return nil, err
		}
		if sp.maxI, err = integerOption(opts, maxKey, t, hi); err != nil {
			return nil, err
		}
		if sp.minI > sp.maxI {
			return nil, fmt.Errorf("option '%s' (%d) is greater than option '%s' (%d)", minKey, sp.minI, maxKey, sp.maxI)
		}
	case types.RootFloat, types.RootDouble, types.RootDecimal:
		lo, hi := math.SmallestNonzeroFloat64, math.MaxFloat64
		if t.Root == types.RootFloat {
			lo, hi = math.SmallestNonzeroFloat32, math.MaxFloat32
		}
		if t.Root == types.RootDecimal {
			// The largest value DECIMAL(p, s) holds; Flink's default range is
			// (0, Double.MAX_VALUE] cut to what the type can represent.
			lo, hi = 0, math.Pow10(t.Precision-t.Scale)-math.Pow10(-t.Scale)
		}
		if sp.minF, err = opts.Float(minKey, lo); err != nil {
			return nil, err
		}
		if sp.maxF, err = opts.Float(maxKey, hi); err != nil {
			return nil, err
		}
		if sp.minF > sp.maxF {
			return nil, fmt.Errorf("option '%s' (%v) is greater than option '%s' (%v)", minKey, sp.minF, maxKey, sp.maxF)
		}
	case types.RootChar:
		sp.length = t.Precision
	case types.RootVarChar, types.RootBinary, types.RootVarBinary:
		def := t.Precision
		if def == types.MaxLength {
			def = defaultStringLength
			if t.IsBinary() {
				def = defaultBytesLength
			}
		}
		if sp.length, err = opts.Int(prefix+"."+fieldLength, def); err != nil {
			return nil, err
		}
		if sp.length < 0 {
			return nil, fmt.Errorf("Invalid value for option '%s.%s'. Expected a non-negative number, but was: %d", prefix, fieldLength, sp.length)
		}
		if sp.varLen, err = opts.Bool(prefix+"."+fieldVarLen, false); err != nil {
			return nil, err
		}
	case types.RootDate, types.RootTime, types.RootTimestamp, types.RootTimestampLTZ:
		d, err := opts.Duration(prefix+"."+fieldMaxPast, 0)
		if err != nil {
			return nil, err
		}
		sp.maxPast = d.Milliseconds()
	case types.RootArray, types.RootMultiset, types.RootMap:
		if sp.length, err = opts.Int(prefix+"."+fieldLength, defaultCollectionLength); err != nil {
			return nil, err
		}
		if sp.length < 0 {
			return nil, fmt.Errorf("Invalid value for option '%s.%s'. Expected a non-negative number, but was: %d", prefix, fieldLength, sp.length)
		}
		if t.Root == types.RootMap {
			if sp.elem, err = buildSpec(opts, prefix+".key", *t.Elem, false); err != nil {
				return nil, err
			}
			if sp.value, err = buildSpec(opts, prefix+".value", *t.Value, false); err != nil {
				return nil, err
			}
		} else if sp.elem, err = buildSpec(opts, prefix+".element", *t.Elem, false); err != nil {
			return nil, err
		}
	case types.RootRow:
		for _, f := range t.Fields {
			fs, err := buildSpec(opts, prefix+"."+f.Name, f.Type, false)
			if err != nil {
				return nil, err
			}
			sp.fields = append(sp.fields, fs)
		}
	default:
		return nil, fmt.Errorf("Unsupported type: %s (datagen field '%s')", t, strings.TrimPrefix(prefix, "fields."))
	}
	return sp, nil
}

func integerOption(opts connectors.Options, key string, t types.Type, def int64) (int64, error) {
	lo, hi, _ := integerRange(t)
	if t.Root == types.RootIntervalYearMonth {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	v, err := opts.Long(key, def)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("Invalid value for option '%s'. Expected a number between %d and %d for type %s, but was: %d", key, lo, hi, t, v)
	}
	return v, nil
}

func sequenceSpec(opts connectors.Options, prefix string, sp *spec) error {
	t := sp.typ
	switch t.Root {
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootFloat, types.RootDouble, types.RootDecimal,
		types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary:
	default:
		return fmt.Errorf("Unsupported type: %s (datagen field '%s'; the sequence generator supports numeric, string and binary types)", t, strings.TrimPrefix(prefix, "fields."))
	}
	startKey, endKey := prefix+"."+fieldStart, prefix+"."+fieldEnd
	for _, key := range []string{startKey, endKey} {
		if !opts.Has(key) {
			return fmt.Errorf("Could not find required property '%s' for sequence generator.", key)
		}
	}
	boundsType := t
	switch t.Root {
	case types.RootFloat, types.RootDouble, types.RootDecimal:
		boundsType = types.IntType // Flink reads these bounds as INT
	case types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary:
		boundsType = types.BigIntType
	}
	var err error
	if sp.start, err = integerOption(opts, startKey, boundsType, 0); err != nil {
		return err
	}
	if sp.end, err = integerOption(opts, endKey, boundsType, 0); err != nil {
		return err
	}
	if sp.start > sp.end {
		return fmt.Errorf("option '%s' (%d) is greater than option '%s' (%d)", startKey, sp.start, endKey, sp.end)
	}
	if t.Root == types.RootDecimal {
		// Every value of the sequence must fit DECIMAL(p, s).
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision-t.Scale)), nil)
		for _, v := range []int64{sp.start, sp.end} {
			if new(big.Int).Abs(big.NewInt(v)).Cmp(limit) >= 0 {
				return fmt.Errorf("sequence bound %d does not fit the column type %s", v, t)
			}
		}
	}
	return nil
}

// seqShare returns how many values of start…end subtask i of p emits: the
// values start+i, start+i+p, … (a stride, so the split is even and
// deterministic).
func seqShare(start, end int64, i, p int) uint64 {
	total := uint64(end-start) + 1 // 0 means 2^64 (the full int64 range)
	if total == 0 {
		return math.MaxUint64 / uint64(p)
	}
	share := total / uint64(p)
	if uint64(i) < total%uint64(p) {
		share++
	}
	return share
}
