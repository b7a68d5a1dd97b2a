package expr

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// TestDateFormatAcrossDays runs one compiled DATE_FORMAT over a sequence of
// rows, so that a text kept from an earlier row would show up where the
// local day changes.
func TestDateFormatAcrossDays(t *testing.T) {
	ms := func(s string) types.Value {
		tm, err := time.Parse("2006-01-02 15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return types.Timestamp(tm.UnixMilli(), 0)
	}
	ts := Column(0, "ts", types.TimestampType(3))
	ltz := Column(0, "ts", types.TimestampLTZType(3))
	type step struct {
		in   types.Value
		want string // "NULL" for NULL
	}
	cases := []struct {
		name  string
		e     Expr
		cfg   *Config
		steps []step
	}{
		{"day pattern", call(t, "DATE_FORMAT", ts, str("yyyy-MM-dd")), utc, []step{
			{ms("2024-03-15 23:59:59.999"), "2024-03-15"},
			{ms("2024-03-16 00:00:00.000"), "2024-03-16"},
			{ms("2024-03-15 12:00:00.000"), "2024-03-15"},
			{types.Value{}, "NULL"},
			{ms("2024-03-15 00:00:00.000"), "2024-03-15"},
			{ms("1969-12-31 23:59:59.999"), "1969-12-31"},
			{ms("1970-01-01 00:00:00.000"), "1970-01-01"},
		}},
		// 2024 is a leap year: 16 March is day 31 + 29 + 16 = 76, a Saturday.
		{"names and day of year", call(t, "DATE_FORMAT", ts, str("EEE, d MMM yyyy '('D')'")), utc, []step{
			{ms("2024-03-15 08:00:00.000"), "Fri, 15 Mar 2024 (75)"},
			{ms("2024-03-16 08:00:00.000"), "Sat, 16 Mar 2024 (76)"},
		}},
		// Shanghai is UTC+8: its day starts at 16:00 UTC the day before.
		{"local day of an instant", call(t, "DATE_FORMAT", ltz, str("yyyy-MM-dd")), &Config{Loc: mustLoc(t, "Asia/Shanghai")}, []step{
			{ms("1970-01-01 15:59:59.999"), "1970-01-01"},
			{ms("1970-01-01 16:00:00.000"), "1970-01-02"},
			{ms("1970-01-01 10:00:00.000"), "1970-01-01"},
		}},
		// An hour field: the text changes within a day.
		{"time of day", call(t, "DATE_FORMAT", ts, str("yyyy-MM-dd HH")), utc, []step{
			{ms("2024-03-15 13:00:00.000"), "2024-03-15 13"},
			{ms("2024-03-15 14:30:00.000"), "2024-03-15 14"},
		}},
	}
	for _, c := range cases {
		p := NewProjector([]Expr{c.e}, c.cfg)
		out := make(types.Row, 1)
		for i, s := range c.steps {
			if err := p.Project(types.Row{s.in}, out); err != nil {
				t.Fatalf("%s step %d: %v", c.name, i, err)
			}
			got := "NULL"
			if !out[0].IsNull() {
				got = out[0].S
			}
			if got != s.want {
				t.Errorf("%s step %d: got %q, want %q", c.name, i, got, s.want)
			}
		}
	}
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
