// Package tz owns the session time zone arithmetic of windows on a
// TIMESTAMP_LTZ time attribute: converting instants to local wall-clock
// millis and back, and Flink's rule for when such a window fires around
// daylight-saving transitions. The window and window-rank operators share it
// so that both fire a window at the same instant.
package tz

import (
	"math"
	"time"
)

const (
	msPerHour = int64(time.Hour / time.Millisecond)
	// maxZoneOffset bounds every UTC offset in the tz database (±14 h), so an
	// instant this far before a local time precedes all its possible readings.
	maxZoneOffset = 14 * msPerHour
)

// Zone converts between instants (epoch ms, UTC) and local wall-clock millis
// ("shifted" timestamps: the local date-time read as if it were UTC) of the
// session time zone. A nil location means no shift. It caches the zone period
// of the last lookup, so converting rows of nearby times costs two compares.
type Zone struct {
	loc     *time.Location
	lo, hi  int64 // [lo, hi) epoch ms where off applies
	off     int64
	ordered uint8 // FireOrdered: 0 not yet known, 1 yes, 2 no
}

// New returns the Zone of loc; nil means no shift.
func New(loc *time.Location) Zone {
	return Zone{loc: loc, lo: 1, hi: 0} // empty period: the first lookup fills it
}

// OffsetAt returns the UTC offset in ms in effect at the instant utc.
func (z *Zone) OffsetAt(utc int64) int64 {
	if z.loc == nil {
		return 0
	}
	if utc >= z.lo && utc < z.hi {
		return z.off
	}
	t := time.UnixMilli(utc).In(z.loc)
	_, offSec := t.Zone()
	start, end := t.ZoneBounds()
	z.off = int64(offSec) * 1000
	z.lo, z.hi = math.MinInt64, math.MaxInt64
	if !start.IsZero() {
		z.lo = start.UnixMilli()
	}
	if !end.IsZero() {
		z.hi = end.UnixMilli()
	}
	return z.off
}

// ToLocal shifts an instant to local wall-clock millis.
func (z *Zone) ToLocal(utc int64) int64 {
	if z.loc == nil {
		return utc
	}
	return utc + z.OffsetAt(utc)
}

// ToUTC returns the instant of a local wall-clock time. Like Java's
// LocalDateTime.atZone, a time in a DST gap is moved forward by the length of
// the gap and a time in an overlap takes the earlier offset; both amount to
// using the offset in effect before the transition.
func (z *Zone) ToUTC(local int64) int64 {
	if z.loc == nil || local == math.MaxInt64 {
		return local
	}
	before := z.OffsetAt(local - maxZoneOffset)
	after := z.OffsetAt(local + maxZoneOffset)
	if before == after {
		return local - before
	}
	switch {
	case z.OffsetAt(local-before) == before:
		return local - before
	case z.OffsetAt(local-after) == after:
		return local - after
	default: // in a gap
		return local - before
	}
}

// FireTime is the instant at which a window whose last local millisecond is
// local fires. Around DST transitions it follows Flink's rule: a local time
// skipped by a gap fires at the first instant after the gap, and a local time
// that occurs twice fires at its later occurrence, so both hours of data are
// in the window when it fires.
func (z *Zone) FireTime(local int64) int64 {
	if z.loc == nil || local == math.MaxInt64 {
		return local
	}
	t1 := z.ToUTC(local)
	t2 := z.ToUTC(local + msPerHour)
	switch {
	case t1 == t2:
		return t1 - t1%msPerHour
	case t2-t1 > msPerHour:
		return t1 + msPerHour
	default:
		return t1
	}
}

// MaxFireLead bounds how much earlier than its local time a window's last
// millisecond fires: FireTime(local) >= local - MaxFireLead in every zone.
const MaxFireLead = maxZoneOffset + msPerHour

// FireOrdered reports whether FireTime never decreases as the local time
// grows, so that windows fire in the order of their ends: true unless one
// of the zone's transitions from 1970 on shifts the offset by other
// than one hour or happens off a whole hour of UTC (Australia/Lord_Howe's
// half-hour DST, for one, fires the window ending at 02:15 before the one
// ending at 02:00 on the night it falls back). The answer is computed
// once per Zone.
func (z *Zone) FireOrdered() bool {
	if z.ordered == 0 {
		z.ordered = 1
		if z.loc != nil && !hourlyTransitions(z.loc) {
			z.ordered = 2
		}
	}
	return z.ordered == 1
}

func hourlyTransitions(loc *time.Location) bool {
	t := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	// The tz database lists transitions up to 2037; later years repeat
	// the last rule, which the years before it have checked.
	stop := time.Date(2038, 1, 1, 0, 0, 0, 0, time.UTC)
	for t.Before(stop) {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || !end.After(t) {
			return true // no more transitions
		}
		_, before := t.In(loc).Zone()
		_, after := end.In(loc).Zone()
		// A bound without a change of offset (Go's table ends in 2037,
		// where its rule takes over) is no transition.
		if d := after - before; d != 0 && (d != 3600 && d != -3600 || end.Unix()%3600 != 0) {
			return false
		}
		t = end
	}
	return true
}
