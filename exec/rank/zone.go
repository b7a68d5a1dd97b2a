package rank

import (
	"math"
	"time"
)

const (
	msPerHour = int64(time.Hour / time.Millisecond)
	// maxZoneOffset bounds every UTC offset in the tz database (±14 h).
	maxZoneOffset = 14 * msPerHour
)

// zone maps the local wall-clock window ends of a window TVF on a
// TIMESTAMP_LTZ time attribute to the instants at which the windows fire,
// following the same rules as the window package (Flink's shift time zone).
// A nil location means window ends are instants already.
type zone struct {
	loc *time.Location
}

// offsetAt returns the UTC offset in ms in effect at the instant utc.
func (z zone) offsetAt(utc int64) int64 {
	_, off := time.UnixMilli(utc).In(z.loc).Zone()
	return int64(off) * 1000
}

// toUTC returns the instant of a local wall-clock time; a time in a DST gap
// or overlap takes the offset in effect before the transition.
func (z zone) toUTC(local int64) int64 {
	before := z.offsetAt(local - maxZoneOffset)
	after := z.offsetAt(local + maxZoneOffset)
	if before == after {
		return local - before
	}
	switch {
	case z.offsetAt(local-before) == before:
		return local - before
	case z.offsetAt(local-after) == after:
		return local - after
	default:
		return local - before
	}
}

// fireTime is the watermark at which a window whose last local millisecond
// is local fires: a local time skipped by a DST gap fires at the first
// instant after the gap, one that occurs twice at its later occurrence.
func (z zone) fireTime(local int64) int64 {
	if z.loc == nil || local == math.MaxInt64 {
		return local
	}
	t1 := z.toUTC(local)
	t2 := z.toUTC(local + msPerHour)
	switch {
	case t1 == t2:
		return t1 - t1%msPerHour
	case t2-t1 > msPerHour:
		return t1 + msPerHour
	default:
		return t1
	}
}
