// Package units parses the value syntax of Flink's configuration that
// options of every layer share: durations ("10 s", "1min", bare
// milliseconds) and memory sizes ("256 mb", bare bytes).
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// durationUnit returns the length of one of Flink's duration unit labels.
func durationUnit(label string) (time.Duration, bool) {
	switch label {
	case "d", "day", "days":
		return 24 * time.Hour, true
	case "h", "hour", "hours":
		return time.Hour, true
	case "min", "m", "minute", "minutes":
		return time.Minute, true
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "ms", "milli", "millis", "millisecond", "milliseconds":
		return time.Millisecond, true
	case "µs", "us", "micro", "micros", "microsecond", "microseconds":
		return time.Microsecond, true
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		return time.Nanosecond, true
	}
	return 0, false
}

// ParseDuration parses Flink's duration syntax: a non-negative integer
// followed by an optional unit (d, h, min/m, s, ms, us, ns and their long
// forms, any case, optionally separated by spaces). A bare number is
// milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	mult := time.Millisecond
	if unit != "" {
		var ok bool
		if mult, ok = durationUnit(strings.ToLower(unit)); !ok {
			return 0, fmt.Errorf("unknown time unit %q in %q", unit, s)
		}
	}
	if num > uint64(1<<63-1)/uint64(mult) {
		return 0, fmt.Errorf("duration %q overflows", s)
	}
	return time.Duration(num) * mult, nil
}

// ParseMemorySize parses Flink's memory size syntax: a non-negative integer
// followed by an optional unit (b/bytes, k/kb, m/mb, g/gb, t/tb and the
// …ibibytes forms, powers of 1024, any case). A bare number is bytes.
func ParseMemorySize(s string) (int64, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	var mult uint64
	switch strings.ToLower(unit) {
	case "", "b", "bytes":
		mult = 1
	case "k", "kb", "kibibytes":
		mult = 1 << 10
	case "m", "mb", "mebibytes":
		mult = 1 << 20
	case "g", "gb", "gibibytes":
		mult = 1 << 30
	case "t", "tb", "tebibytes":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("unknown memory unit %q in %q", unit, s)
	}
	if num > uint64(1<<63-1)/mult {
		return 0, fmt.Errorf("memory size %q overflows", s)
	}
	return int64(num * mult), nil
}

func splitNumber(s string) (uint64, string, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "", fmt.Errorf("%q does not start with a number", s)
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("number in %q: %w", s, err)
	}
	return n, strings.TrimSpace(t[i:]), nil
}
