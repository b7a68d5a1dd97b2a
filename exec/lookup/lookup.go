// Package lookup owns the lookup join operator: a processing-time join of
// each input row with the rows a dimension table holds for the row's key at
// the moment the row is processed (Flink's LookupJoin, written
// `JOIN dim FOR SYSTEM_TIME AS OF l.proc_time`).
//
// The operator reaches the dimension table through two narrow interfaces a
// connector implements: Fetcher (point lookups by key) and Loader (a scan of
// the whole table, for the full cache). Caching is the operator's, as in
// Flink's runtime: none, a partial cache (LRU with expiry, as
// lookup.partial-cache.*), or a full cache reloaded as
// lookup.full-cache.* says. Lookups run synchronously, or asynchronously
// with a bounded number in flight (table.exec.async-lookup.*), with an
// optional retry on a miss (the LOOKUP hint).
package lookup

import (
	"context"
	"time"

	"github.com/flinksql/flinksql/types"
)

// Fetcher looks rows of a dimension table up by key. The key holds one
// value per key column the fetcher was created for, never NULL. Fetch
// appends the matching rows to dst and returns it; the caller may keep
// them and never modifies them. With async lookups Fetch is called from
// several goroutines at once.
type Fetcher interface {
	Fetch(ctx context.Context, key types.Row, dst []types.Row) ([]types.Row, error)
}

// Loader reads a whole dimension table, for the full cache.
type Loader interface {
	// Load calls fn with every row of the table (rows fn may keep).
	Load(ctx context.Context, fn func(types.Row) error) error
	// Changed reports whether the table may differ from what the last
	// Load read (a file's size or modification time moved). A loader
	// that cannot tell returns true.
	Changed(ctx context.Context) (bool, error)
}

// CacheKind is 'lookup.cache'.
type CacheKind uint8

const (
	CacheNone CacheKind = iota
	CachePartial
	CacheFull
)

func (k CacheKind) String() string {
	switch k {
	case CachePartial:
		return "PARTIAL"
	case CacheFull:
		return "FULL"
	}
	return "NONE"
}

// ReloadStrategy is 'lookup.full-cache.reload-strategy'.
type ReloadStrategy uint8

const (
	ReloadPeriodic ReloadStrategy = iota
	ReloadTimed
)

// Cache is a lookup table's caching, from its lookup.* options.
type Cache struct {
	Kind CacheKind

	// PARTIAL: entries expire ExpireAfterAccess after their last read or
	// ExpireAfterWrite after they were loaded (0: never); at most MaxRows
	// keys are kept (0: unbounded), the least recently used leaving
	// first; a key without rows is cached only with CacheMissingKey.
	ExpireAfterAccess time.Duration
	ExpireAfterWrite  time.Duration
	MaxRows           int64
	CacheMissingKey   bool

	// FULL: the whole table is loaded when the operator opens and again
	// as Reload says. PERIODIC reloads every ReloadInterval (0: never),
	// counted from the end of the previous load (FIXED_DELAY) or from its
	// start (FixedRate). TIMED reloads at ReloadAt (a time of day in
	// ReloadZone) every ReloadEveryDays days. OnlyWhenChanged skips a
	// reload when the Loader reports no change (the filesystem
	// connector's dimension files).
	Reload          ReloadStrategy
	ReloadInterval  time.Duration
	FixedRate       bool
	ReloadAt        time.Duration // since midnight
	ReloadZone      *time.Location
	ReloadEveryDays int
	OnlyWhenChanged bool
}

// Async configures asynchronous lookups (table.exec.async-lookup.* and
// the LOOKUP hint).
type Async struct {
	// Capacity is the most lookups in flight at once.
	Capacity int
	// Timeout bounds one row's lookup, retries included; a lookup that
	// takes longer fails the job, as Flink's async operator does.
	Timeout time.Duration
	// Unordered lets rows leave in the order their lookups complete
	// (ALLOW_UNORDERED, for insert-only input); otherwise input order.
	Unordered bool
}

// Retry is the LOOKUP hint's retry on a miss: after a lookup that found
// no rows, wait Delay and look up again, at most MaxAttempts more times
// ('retry-predicate' = 'lookup_miss', 'retry-strategy' = 'fixed_delay').
type Retry struct {
	Delay       time.Duration
	MaxAttempts int
}
