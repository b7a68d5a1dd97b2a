// Package agg owns Flink's built-in aggregate functions: which names are
// aggregates, the result type of an aggregate call (with Flink's and
// Calcite's validation messages), and Handle, the evaluator of a fixed list
// of aggregate calls whose accumulators live in one flat []types.Value.
//
// Handle satisfies exec.AggsHandle structurally; the package does not import
// exec so that it can be built and tested on its own.
//
// Accumulators hold only types.Value: scalars, plus MAP values (sorted
// multisets, arrival-ordered lists) for the functions that must remember
// individual values (MIN/MAX with retraction, FIRST_VALUE/LAST_VALUE with
// retraction, LISTAGG, COLLECT, DISTINCT). Those nested values are updated in
// place; copy an accumulator with (*Handle).CloneAcc, not with copy().
package agg

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// kind identifies an aggregate function once its name is resolved, so that
// per-row dispatch is a switch, never a lookup by name.
type kind uint8

const (
	kCount kind = iota
	kSum
	kSum0
	kAvg
	kMin
	kMax
	kFirstValue
	kLastValue
	kListAgg
	kCollect
	kVarPop
	kVarSamp
	kStddevPop
	kStddevSamp
)

// userFunctions are the aggregate functions callable from SQL. SUM0 is
// internal (the planner's $SUM0) and so is resolved by NewHandle but not
// reported by IsAggregate.
var userFunctions = map[string]kind{
	"COUNT":       kCount,
	"SUM":         kSum,
	"AVG":         kAvg,
	"MIN":         kMin,
	"MAX":         kMax,
	"FIRST_VALUE": kFirstValue,
	"LAST_VALUE":  kLastValue,
	"LISTAGG":     kListAgg,
	"COLLECT":     kCollect,
	"VAR_POP":     kVarPop,
	"VAR_SAMP":    kVarSamp,
	"VARIANCE":    kVarSamp,
	"STDDEV_POP":  kStddevPop,
	"STDDEV_SAMP": kStddevSamp,
	"STDDEV":      kStddevSamp,
}

func lookup(name string) (kind, bool) {
	if name == "SUM0" || name == "$SUM0" {
		return kSum0, true
	}
	k, ok := userFunctions[name]
	return k, ok
}

// IsAggregate reports whether name (upper-case) is a built-in aggregate function.
func IsAggregate(name string) bool {
	_, ok := userFunctions[name]
	return ok
}

// Names lists aggregate function names (for SHOW FUNCTIONS), sorted.
func Names() []string {
	names := make([]string, 0, len(userFunctions))
	for n := range userFunctions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Context is what the result type of an aggregate call depends on besides
// its arguments, following Calcite's return-type inference: MIN, MAX, SUM,
// AVG, FIRST_VALUE, … are nullable regardless of their argument when the
// aggregate has no grouping keys or the call has a FILTER clause.
type Context struct {
	// Global: the aggregate has no GROUP BY keys (group count 0), e.g.
	// SELECT SUM(x) FROM t. Window aggregates are grouped (by the window).
	Global bool
	// Filtered: the call has FILTER (WHERE …).
	Filtered bool
}

// ResultType infers the result type of an aggregate call with Flink 1.20's
// rules, or returns Flink/Calcite's validation message, e.g. "Cannot apply
// 'SUM' to arguments of type 'SUM(<VARCHAR(10)>)'. Supported form(s):
// 'SUM(<NUMERIC>)'".
//
// The call is taken to be a grouped aggregate without FILTER, the common case
// (GROUP BY and window aggregates); use ResultTypeIn to describe the call
// fully.
func ResultType(name string, argTypes []types.Type, distinct bool) (types.Type, error) {
	return ResultTypeIn(name, argTypes, distinct, Context{})
}

// ResultTypeIn is ResultType for a call in the given context.
func ResultTypeIn(name string, argTypes []types.Type, distinct bool, ctx Context) (types.Type, error) {
	k, ok := lookup(name)
	if !ok {
		return types.Type{}, fmt.Errorf("No match found for function signature %s(%s)", name, signatureArgs(argTypes))
	}
	// Calcite's ARG0_NULLABLE_IF_EMPTY and the AGG_SUM/AVG inferences.
	nullableIfEmpty := func(t types.Type) types.Type {
		if ctx.Global || ctx.Filtered {
			return t.WithNullable(true)
		}
		return t
	}
	switch k {
	case kCount:
		return types.BigIntType.WithNullable(false), nil
	case kSum, kSum0, kAvg, kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		if err := checkArity(name, argTypes, 1); err != nil {
			return types.Type{}, err
		}
		arg := plain(argTypes[0])
		if !arg.IsNumeric() {
			return types.Type{}, cannotApply(name, argTypes, "'"+name+"(<NUMERIC>)'")
		}
		switch k {
		case kSum:
			return nullableIfEmpty(sumType(arg)), nil
		case kSum0:
			return sumType(arg).WithNullable(false), nil
		default:
			return nullableIfEmpty(avgType(arg)), nil
		}
	case kMin, kMax:
		if err := checkArity(name, argTypes, 1); err != nil {
			return types.Type{}, err
		}
		arg := plain(argTypes[0])
		if !comparable(arg) {
			return types.Type{}, cannotApply(name, argTypes, "'"+name+"(<COMPARABLE_TYPE>)'")
		}
		return nullableIfEmpty(arg), nil
	case kFirstValue, kLastValue:
		if err := checkArity(name, argTypes, 1); err != nil {
			return types.Type{}, err
		}
		return nullableIfEmpty(plain(argTypes[0])), nil
	case kListAgg:
		if len(argTypes) < 1 || len(argTypes) > 2 {
			return types.Type{}, fmt.Errorf("Wrong number of arguments to expression")
		}
		for _, t := range argTypes {
			if !t.IsString() && t.Root != types.RootNull {
				return types.Type{}, cannotApply(name, argTypes,
					"'LISTAGG(<CHARACTER>)'\n'LISTAGG(<CHARACTER>, <CHARACTER_LITERAL>)'")
			}
		}
		// Calcite's ARG0_NULLABLE: the argument's type, always nullable.
		return plain(argTypes[0]).WithNullable(true), nil
	case kCollect:
		if err := checkArity(name, argTypes, 1); err != nil {
			return types.Type{}, err
		}
		elem := plain(argTypes[0])
		// COLLECT of no rows is the empty multiset, so the type is NOT NULL.
		return types.Type{Root: types.RootMultiset, Elem: &elem, NotNull: true}, nil
	}
	return types.Type{}, fmt.Errorf("aggregate function %s has no type rule", name)
}

// plain drops time-attribute markers: aggregating a rowtime column yields a
// regular value.
func plain(t types.Type) types.Type { return t.WithoutTimeAttr() }

// sumType is Flink's LogicalTypeMerging.findSumAggType: DECIMAL(p, s) widens
// to DECIMAL(38, s); every other numeric type is kept (SUM(INT) is INT and
// wraps on overflow), with the argument's nullability.
func sumType(arg types.Type) types.Type {
	if arg.Root == types.RootDecimal {
		return types.Type{Root: types.RootDecimal, Precision: 38, Scale: arg.Scale, NotNull: arg.NotNull}
	}
	return arg
}

// avgType is Flink's LogicalTypeMerging.findAvgAggType: DECIMAL(p, s) becomes
// the type of DECIMAL(38, s) / DECIMAL(20, 0), which is DECIMAL(38, max(6, s));
// every other numeric type is kept (AVG(INT) is INT).
func avgType(arg types.Type) types.Type {
	if arg.Root == types.RootDecimal {
		return types.Type{Root: types.RootDecimal, Precision: 38, Scale: max(6, arg.Scale), NotNull: arg.NotNull}
	}
	return arg
}

// comparable reports whether MIN/MAX accept the type.
func comparable(t types.Type) bool {
	switch t.Root {
	case types.RootArray, types.RootMap, types.RootMultiset, types.RootRow, types.RootSymbol, types.RootNull:
		return false
	}
	return true
}

func checkArity(name string, argTypes []types.Type, n int) error {
	if len(argTypes) != n {
		return fmt.Errorf("Invalid number of arguments to function '%s'. Was expecting %d arguments", name, n)
	}
	return nil
}

// cannotApply is Calcite's signature error.
func cannotApply(name string, argTypes []types.Type, supported string) error {
	return fmt.Errorf("Cannot apply '%s' to arguments of type '%s(%s)'. Supported form(s): %s",
		name, name, signatureArgs(argTypes), supported)
}

func signatureArgs(argTypes []types.Type) string {
	parts := make([]string, len(argTypes))
	for i, t := range argTypes {
		parts[i] = "<" + calciteTypeName(t) + ">"
	}
	return strings.Join(parts, ", ")
}

// calciteTypeName spells a type as Calcite's RelDataType.toString does in
// validation messages (INTEGER, not INT; no nullability).
func calciteTypeName(t types.Type) string {
	switch t.Root {
	case types.RootNull:
		return "NULL"
	case types.RootBoolean:
		return "BOOLEAN"
	case types.RootTinyInt:
		return "TINYINT"
	case types.RootSmallInt:
		return "SMALLINT"
	case types.RootInt:
		return "INTEGER"
	case types.RootBigInt:
		return "BIGINT"
	case types.RootFloat:
		return "FLOAT"
	case types.RootDouble:
		return "DOUBLE"
	case types.RootDecimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case types.RootChar:
		return fmt.Sprintf("CHAR(%d)", t.Precision)
	case types.RootVarChar:
		return fmt.Sprintf("VARCHAR(%d)", t.Precision)
	case types.RootBinary:
		return fmt.Sprintf("BINARY(%d)", t.Precision)
	case types.RootVarBinary:
		return fmt.Sprintf("VARBINARY(%d)", t.Precision)
	case types.RootDate:
		return "DATE"
	case types.RootTime:
		return fmt.Sprintf("TIME(%d)", t.Precision)
	case types.RootTimestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case types.RootTimestampLTZ:
		return fmt.Sprintf("TIMESTAMP_WITH_LOCAL_TIME_ZONE(%d)", t.Precision)
	case types.RootIntervalYearMonth, types.RootIntervalDayTime:
		if t.IntervalUnit != "" {
			return "INTERVAL " + t.IntervalUnit
		}
		if t.Root == types.RootIntervalYearMonth {
			return "INTERVAL YEAR TO MONTH"
		}
		return "INTERVAL DAY TO SECOND"
	case types.RootArray:
		return calciteTypeName(*t.Elem) + " ARRAY"
	case types.RootMultiset:
		return calciteTypeName(*t.Elem) + " MULTISET"
	case types.RootMap:
		return "(" + calciteTypeName(*t.Elem) + ", " + calciteTypeName(*t.Value) + ") MAP"
	case types.RootRow:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = calciteTypeName(f.Type) + " " + f.Name
		}
		return "RecordType(" + strings.Join(parts, ", ") + ")"
	}
	return t.String()
}
