package tz

import (
	"testing"
	"time"
)

// The DST rules are Flink's, with its documented Los Angeles examples.
func TestDST(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	z := New(loc)
	local := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	tests := []struct {
		local      string
		utc, timer int64
	}{
		{"2021-03-14 00:00:00", 1615708800000, 1615708800000},
		{"2021-03-14 01:00:00", 1615712400000, 1615712400000},
		{"2021-03-14 02:00:00", 1615716000000, 1615716000000}, // skipped hour: moved forward
		{"2021-03-14 02:59:59", 1615719599000, 1615716000000},
		{"2021-03-14 03:00:00", 1615716000000, 1615716000000},
		{"2021-11-07 01:00:00", 1636272000000, 1636275600000}, // repeated hour: fire at the later one
		{"2021-11-07 02:00:00", 1636279200000, 1636279200000},
	}
	for _, tc := range tests {
		l := local(tc.local)
		if got := z.ToUTC(l); got != tc.utc {
			t.Errorf("ToUTC(%s) = %d, want %d", tc.local, got, tc.utc)
		}
		if got := z.FireTime(l); got != tc.timer {
			t.Errorf("FireTime(%s) = %d, want %d", tc.local, got, tc.timer)
		}
	}
	if got := z.ToLocal(1636275600000); got != local("2021-11-07 01:00:00") {
		t.Errorf("ToLocal after fall-back = %d", got)
	}
}

// Windows fire in the order of their ends in zones whose transitions are
// whole hours at whole hours of UTC; not in Lord Howe (half-hour DST).
func TestFireOrdered(t *testing.T) {
	for zone, want := range map[string]bool{
		"UTC": true, "America/Los_Angeles": true, "Europe/Berlin": true, "Asia/Shanghai": true,
		"Australia/Lord_Howe": false, "America/St_Johns": false,
	} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		z := New(loc)
		if got := z.FireOrdered(); got != want {
			t.Errorf("%s: FireOrdered() = %v, want %v", zone, got, want)
		}
	}
	if z := New(nil); !z.FireOrdered() {
		t.Error("no zone: FireOrdered() = false")
	}
}
