package types

import (
	"math/big"
	"testing"
)

func TestCodecRoundTrip(t *testing.T) {
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	row := Row{
		NullValue, Bool(true), Int(-42), Float(2.5), DecimalFromUnscaled(-12345, 2), DecimalFromBig(huge, 3),
		String("héllo"), Bytes([]byte{0, 1, 255}), Timestamp(1704067200123, 456000), SymbolValue("DAY"),
		ArrayValue([]Value{Int(1), NullValue}), MapOf([]Value{String("k")}, []Value{Int(7)}), RowValue(Row{String("x"), Int(2)}),
	}
	enc := AppendRow(nil, row)
	got, rest, err := DecodeRow(enc)
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v (rest %d)", err, len(rest))
	}
	if !RowsEqual(got, row) {
		t.Fatalf("round trip changed the row:\n%v\n%v", got, row)
	}
	if got[5].DecimalBig().Cmp(huge) != 0 || got[5].DecimalScale() != 3 {
		t.Errorf("big decimal = %v scale %d", got[5].DecimalBig(), got[5].DecimalScale())
	}
	// Truncated input is an error, never a panic.
	for i := 0; i < len(enc); i++ {
		if _, _, err := DecodeRow(enc[:i]); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", i, len(enc))
		}
	}
}

func TestAppendValueDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	row := Row{Int(1), String("abc"), Timestamp(5, 0), Float(1)}
	if n := testing.AllocsPerRun(100, func() { buf = AppendRow(buf[:0], row) }); n != 0 {
		t.Errorf("AppendRow allocates %v times", n)
	}
}
