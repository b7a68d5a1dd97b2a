package connectors

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec/lookup"
)

// LookupSource is a ScanSource whose table can also be read by key, as the
// dimension table of a lookup join (Flink's LookupTableSource).
type LookupSource interface {
	ScanSource
	// Lookup returns how the table is looked up by the given key columns
	// (positions in the physical row).
	Lookup(keyCols []int) (*Lookup, error)
}

// Lookup is what a lookup join reads a dimension table through.
type Lookup struct {
	// Fetcher serves lookups by key; nil when the table can only be read
	// whole (then Cache.Kind is FULL).
	Fetcher lookup.Fetcher
	// Loader reads the whole table, for Cache.Kind FULL.
	Loader lookup.Loader
	// Cache is the table's lookup.* caching.
	Cache lookup.Cache
	// Async says the connector looks keys up asynchronously by default
	// (the LOOKUP hint's 'async' overrides it).
	Async bool
}

// The lookup cache options every lookup source takes (Flink's
// LookupOptions).
const (
	OptLookupCache                    = "lookup.cache"
	OptPartialExpireAfterAccess       = "lookup.partial-cache.expire-after-access"
	OptPartialExpireAfterWrite        = "lookup.partial-cache.expire-after-write"
	OptPartialMaxRows                 = "lookup.partial-cache.max-rows"
	OptPartialCacheMissingKey         = "lookup.partial-cache.cache-missing-key"
	OptFullReloadStrategy             = "lookup.full-cache.reload-strategy"
	OptFullPeriodicReloadInterval     = "lookup.full-cache.periodic-reload.interval"
	OptFullPeriodicReloadScheduleMode = "lookup.full-cache.periodic-reload.schedule-mode"
	OptFullTimedReloadISOTime         = "lookup.full-cache.timed-reload.iso-time"
	OptFullTimedReloadIntervalInDays  = "lookup.full-cache.timed-reload.interval-in-days"
)

// LookupCacheOptions are the keys LookupCacheFrom reads.
var LookupCacheOptions = []string{
	OptLookupCache, OptPartialExpireAfterAccess, OptPartialExpireAfterWrite, OptPartialMaxRows,
	OptPartialCacheMissingKey, OptFullReloadStrategy, OptFullPeriodicReloadInterval,
	OptFullPeriodicReloadScheduleMode, OptFullTimedReloadISOTime, OptFullTimedReloadIntervalInDays,
}

// LookupCacheFrom reads a table's lookup cache options. def is the cache
// kind when 'lookup.cache' is not set; allowed lists the kinds the
// connector supports (a file cannot be read by key, so the filesystem
// connector supports only FULL). Options of another cache kind than the
// chosen one are refused, not ignored.
func LookupCacheFrom(tc *TableContext, def lookup.CacheKind, allowed ...lookup.CacheKind) (lookup.Cache, error) {
	o := Options(tc.Options)
	var c lookup.Cache
	names := make([]string, len(allowed))
	for i, k := range allowed {
		names[i] = k.String()
	}
	kind, err := o.Enum(OptLookupCache, []string{"NONE", "PARTIAL", "FULL"}, def.String())
	if err != nil {
		return c, err
	}
	found := false
	for _, k := range allowed {
		if k.String() == kind {
			c.Kind, found = k, true
		}
	}
	if !found {
		return c, fmt.Errorf("Invalid value for option '%s' of table %s: the connector supports [%s], but was: %s",
			OptLookupCache, tc.Name, strings.Join(names, ", "), tc.Options[OptLookupCache])
	}
	for _, key := range LookupCacheOptions[1:] {
		if _, set := tc.Options[key]; !set {
			continue
		}
		partial := strings.HasPrefix(key, "lookup.partial-cache.")
		if (partial && c.Kind != lookup.CachePartial) || (!partial && c.Kind != lookup.CacheFull) {
			return c, fmt.Errorf("Option '%s' of table %s applies to 'lookup.cache' = '%s' only, but 'lookup.cache' is '%s'.",
				key, tc.Name, map[bool]string{true: "PARTIAL", false: "FULL"}[partial], c.Kind)
		}
	}
	switch c.Kind {
	case lookup.CachePartial:
		if c.ExpireAfterAccess, err = o.Duration(OptPartialExpireAfterAccess, 0); err != nil {
			return c, err
		}
		if c.ExpireAfterWrite, err = o.Duration(OptPartialExpireAfterWrite, 0); err != nil {
			return c, err
		}
		if c.MaxRows, err = o.Long(OptPartialMaxRows, 0); err != nil {
			return c, err
		}
		if c.MaxRows < 0 {
			return c, invalid(OptPartialMaxRows, "a positive number of rows", tc.Options[OptPartialMaxRows])
		}
		if c.CacheMissingKey, err = o.Bool(OptPartialCacheMissingKey, true); err != nil {
			return c, err
		}
		if c.ExpireAfterAccess == 0 && c.ExpireAfterWrite == 0 && c.MaxRows == 0 {
			// Flink's DefaultLookupCache refuses a cache that never evicts.
			return c, fmt.Errorf("Table %s: 'lookup.cache' = 'PARTIAL' needs at least one of '%s', '%s' or '%s'.",
				tc.Name, OptPartialExpireAfterAccess, OptPartialExpireAfterWrite, OptPartialMaxRows)
		}
	case lookup.CacheFull:
		strategy, err := o.Enum(OptFullReloadStrategy, []string{"PERIODIC", "TIMED"}, "PERIODIC")
		if err != nil {
			return c, err
		}
		if strategy == "TIMED" {
			c.Reload = lookup.ReloadTimed
			if o.Has(OptFullPeriodicReloadInterval) || o.Has(OptFullPeriodicReloadScheduleMode) {
				return c, fmt.Errorf("Table %s: the periodic reload options do not apply to '%s' = 'TIMED'.", tc.Name, OptFullReloadStrategy)
			}
			at, ok := tc.Options[OptFullTimedReloadISOTime]
			if !ok {
				return c, fmt.Errorf("Table %s: '%s' = 'TIMED' needs '%s' (an ISO-8601 time such as '10:15:30' or '10:15:30+01:00').",
					tc.Name, OptFullReloadStrategy, OptFullTimedReloadISOTime)
			}
			if c.ReloadAt, c.ReloadZone, err = parseISOTime(at, tc.Loc); err != nil {
				return c, invalid(OptFullTimedReloadISOTime, "an ISO-8601 time such as '10:15:30' or '10:15:30Z'", at)
			}
			if c.ReloadEveryDays, err = o.Int(OptFullTimedReloadIntervalInDays, 1); err != nil {
				return c, err
			}
			if c.ReloadEveryDays < 1 {
				return c, invalid(OptFullTimedReloadIntervalInDays, "a positive number of days", tc.Options[OptFullTimedReloadIntervalInDays])
			}
			break
		}
		if o.Has(OptFullTimedReloadISOTime) || o.Has(OptFullTimedReloadIntervalInDays) {
			return c, fmt.Errorf("Table %s: the timed reload options need '%s' = 'TIMED'.", tc.Name, OptFullReloadStrategy)
		}
		if c.ReloadInterval, err = o.Duration(OptFullPeriodicReloadInterval, 0); err != nil {
			return c, err
		}
		mode, err := o.Enum(OptFullPeriodicReloadScheduleMode, []string{"FIXED_DELAY", "FIXED_RATE"}, "FIXED_DELAY")
		if err != nil {
			return c, err
		}
		c.FixedRate = mode == "FIXED_RATE"
	}
	return c, nil
}

// parseISOTime reads HH:mm[:ss[.fff]] with an optional offset (Z, +01:00);
// without one the time is in loc (the session time zone).
func parseISOTime(s string, loc *time.Location) (time.Duration, *time.Location, error) {
	s = strings.TrimSpace(s)
	zone := loc
	if zone == nil {
		zone = time.UTC
	}
	if strings.HasSuffix(s, "Z") {
		s, zone = strings.TrimSuffix(s, "Z"), time.UTC
	} else if i := strings.LastIndexAny(s, "+-"); i > 0 {
		off := s[i:]
		s = s[:i]
		hm := strings.Split(off[1:], ":")
		h, err1 := strconv.Atoi(hm[0])
		m := 0
		var err2 error
		if len(hm) > 1 {
			m, err2 = strconv.Atoi(hm[1])
		}
		if err1 != nil || err2 != nil || len(hm) > 2 {
			return 0, nil, fmt.Errorf("bad offset %q", off)
		}
		secs := h*3600 + m*60
		if off[0] == '-' {
			secs = -secs
		}
		zone = time.FixedZone(off, secs)
	}
	var t time.Time
	var err error
	for _, layout := range []string{"15:04:05.999999999", "15:04:05", "15:04"} {
		if t, err = time.Parse(layout, s); err == nil {
			break
		}
	}
	if err != nil {
		return 0, nil, err
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond()), zone, nil
}
