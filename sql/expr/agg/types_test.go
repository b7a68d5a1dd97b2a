package agg

import (
	"slices"
	"testing"

	"github.com/flinksql/flinksql/types"
)

func notNull(t types.Type) types.Type { return t.WithNullable(false) }

func TestResultType(t *testing.T) {
	rowtime := types.TimestampType(3)
	rowtime.TimeAttr = types.RowtimeAttr
	intArray := types.ArrayType(types.IntType)
	tests := []struct {
		name     string
		args     []types.Type
		ctx      Context
		want     string
		wantErr  string
		distinct bool
	}{
		{name: "COUNT", args: nil, want: "BIGINT NOT NULL"},
		{name: "COUNT", args: []types.Type{types.StringType}, want: "BIGINT NOT NULL"},
		{name: "COUNT", args: []types.Type{types.IntType, types.StringType}, distinct: true, want: "BIGINT NOT NULL"},
		{name: "COUNT", args: []types.Type{types.IntType}, ctx: Context{Global: true}, want: "BIGINT NOT NULL"},

		{name: "SUM", args: []types.Type{types.TinyIntType}, want: "TINYINT"},
		{name: "SUM", args: []types.Type{types.SmallIntType}, want: "SMALLINT"},
		{name: "SUM", args: []types.Type{types.IntType}, want: "INT"},
		{name: "SUM", args: []types.Type{types.BigIntType}, want: "BIGINT"},
		{name: "SUM", args: []types.Type{types.FloatType}, want: "FLOAT"},
		{name: "SUM", args: []types.Type{types.DoubleType}, want: "DOUBLE"},
		{name: "SUM", args: []types.Type{types.DecimalType(10, 2)}, want: "DECIMAL(38, 2)"},
		{name: "SUM", args: []types.Type{notNull(types.IntType)}, want: "INT NOT NULL"},
		{name: "SUM", args: []types.Type{notNull(types.IntType)}, ctx: Context{Global: true}, want: "INT"},
		{name: "SUM", args: []types.Type{notNull(types.IntType)}, ctx: Context{Filtered: true}, want: "INT"},
		{name: "SUM", args: []types.Type{types.VarCharType(10)},
			wantErr: "Cannot apply 'SUM' to arguments of type 'SUM(<VARCHAR(10)>)'. Supported form(s): 'SUM(<NUMERIC>)'"},
		{name: "SUM", args: []types.Type{types.TimestampLTZType(3)},
			wantErr: "Cannot apply 'SUM' to arguments of type 'SUM(<TIMESTAMP_WITH_LOCAL_TIME_ZONE(3)>)'. Supported form(s): 'SUM(<NUMERIC>)'"},
		{name: "SUM", args: []types.Type{types.IntType, types.IntType},
			wantErr: "Invalid number of arguments to function 'SUM'. Was expecting 1 arguments"},
		{name: "SUM0", args: []types.Type{types.IntType}, want: "INT NOT NULL"},
		{name: "SUM0", args: []types.Type{types.DecimalType(5, 1)}, want: "DECIMAL(38, 1) NOT NULL"},

		{name: "AVG", args: []types.Type{types.IntType}, want: "INT"},
		{name: "AVG", args: []types.Type{types.TinyIntType}, want: "TINYINT"},
		{name: "AVG", args: []types.Type{types.DoubleType}, want: "DOUBLE"},
		{name: "AVG", args: []types.Type{types.FloatType}, want: "FLOAT"},
		{name: "AVG", args: []types.Type{types.DecimalType(10, 2)}, want: "DECIMAL(38, 6)"},
		{name: "AVG", args: []types.Type{types.DecimalType(20, 8)}, want: "DECIMAL(38, 8)"},
		{name: "AVG", args: []types.Type{notNull(types.BigIntType)}, want: "BIGINT NOT NULL"},
		{name: "AVG", args: []types.Type{types.BooleanType},
			wantErr: "Cannot apply 'AVG' to arguments of type 'AVG(<BOOLEAN>)'. Supported form(s): 'AVG(<NUMERIC>)'"},

		{name: "MIN", args: []types.Type{types.StringType}, want: "STRING"},
		{name: "MIN", args: []types.Type{types.BooleanType}, want: "BOOLEAN"},
		{name: "MAX", args: []types.Type{types.DecimalType(7, 3)}, want: "DECIMAL(7, 3)"},
		{name: "MAX", args: []types.Type{rowtime}, want: "TIMESTAMP(3)"},
		{name: "MAX", args: []types.Type{notNull(types.DateType)}, want: "DATE NOT NULL"},
		{name: "MAX", args: []types.Type{notNull(types.DateType)}, ctx: Context{Global: true}, want: "DATE"},
		{name: "MIN", args: []types.Type{intArray},
			wantErr: "Cannot apply 'MIN' to arguments of type 'MIN(<INTEGER ARRAY>)'. Supported form(s): 'MIN(<COMPARABLE_TYPE>)'"},

		{name: "FIRST_VALUE", args: []types.Type{notNull(types.IntType)}, want: "INT NOT NULL"},
		{name: "FIRST_VALUE", args: []types.Type{notNull(types.IntType)}, ctx: Context{Global: true}, want: "INT"},
		{name: "LAST_VALUE", args: []types.Type{types.StringType}, want: "STRING"},
		{name: "LAST_VALUE", args: []types.Type{types.IntType, types.IntType},
			wantErr: "Invalid number of arguments to function 'LAST_VALUE'. Was expecting 1 arguments"},

		{name: "LISTAGG", args: []types.Type{types.VarCharType(10)}, want: "VARCHAR(10)"},
		{name: "LISTAGG", args: []types.Type{notNull(types.StringType), notNull(types.CharType(1))}, want: "STRING"},
		{name: "LISTAGG", args: []types.Type{types.IntType},
			wantErr: "Cannot apply 'LISTAGG' to arguments of type 'LISTAGG(<INTEGER>)'. Supported form(s): 'LISTAGG(<CHARACTER>)'\n'LISTAGG(<CHARACTER>, <CHARACTER_LITERAL>)'"},

		{name: "COLLECT", args: []types.Type{types.IntType}, want: "MULTISET<INT> NOT NULL"},

		{name: "STDDEV_POP", args: []types.Type{types.IntType}, want: "INT"},
		{name: "STDDEV_SAMP", args: []types.Type{types.DoubleType}, want: "DOUBLE"},
		{name: "VAR_POP", args: []types.Type{types.DecimalType(5, 2)}, want: "DECIMAL(38, 6)"},
		{name: "VAR_SAMP", args: []types.Type{types.FloatType}, want: "FLOAT"},
		{name: "VARIANCE", args: []types.Type{types.BigIntType}, want: "BIGINT"},
		{name: "STDDEV", args: []types.Type{types.StringType},
			wantErr: "Cannot apply 'STDDEV' to arguments of type 'STDDEV(<VARCHAR(2147483647)>)'. Supported form(s): 'STDDEV(<NUMERIC>)'"},
	}
	for _, tc := range tests {
		got, err := ResultTypeIn(tc.name, tc.args, tc.distinct, tc.ctx)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s%v: error %v, want %q", tc.name, tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s%v: %v", tc.name, tc.args, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("%s%v %+v: got %s, want %s", tc.name, tc.args, tc.ctx, got, tc.want)
		}
	}
}

func TestIsAggregateAndNames(t *testing.T) {
	for _, n := range []string{"COUNT", "SUM", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "LISTAGG",
		"COLLECT", "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "STDDEV", "VARIANCE"} {
		if !IsAggregate(n) {
			t.Errorf("IsAggregate(%s) = false", n)
		}
	}
	for _, n := range []string{"SUM0", "UPPER", "sum", "BOOL_AND"} {
		if IsAggregate(n) {
			t.Errorf("IsAggregate(%s) = true", n)
		}
	}
	names := Names()
	if !slices.IsSorted(names) || !slices.Contains(names, "LISTAGG") || slices.Contains(names, "SUM0") {
		t.Errorf("Names() = %v", names)
	}
}
