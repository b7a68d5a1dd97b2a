package units

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"100": 100 * time.Millisecond, "10 s": 10 * time.Second, "1min": time.Minute, "2 MIN": 2 * time.Minute,
		"3h": 3 * time.Hour, "1 d": 24 * time.Hour, "5 us": 5 * time.Microsecond, "7ns": 7, " 0 ms ": 0,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "s", "10 fortnights", "-1 s", "99999999999999 d"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

func TestParseMemorySize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "512": 512, "4 kb": 4096, "256mb": 256 << 20, "1 G": 1 << 30, "2 tebibytes": 2 << 40, "3 bytes": 3,
	} {
		if got, err := ParseMemorySize(in); err != nil || got != want {
			t.Errorf("ParseMemorySize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "12 furlongs", "99999999999 tb"} {
		if _, err := ParseMemorySize(in); err == nil {
			t.Errorf("ParseMemorySize(%q) accepted", in)
		}
	}
}
