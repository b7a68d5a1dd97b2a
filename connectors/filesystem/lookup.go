package filesystem

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

// defaultChangeCheck is how often a filesystem lookup table's files are
// checked for changes when 'lookup.full-cache.periodic-reload.interval' is
// not set.
const defaultChangeCheck = time.Minute

// Lookup implements connectors.LookupSource. A file cannot be read by key,
// so a filesystem table is looked up through a full cache only (the
// default; 'lookup.cache' = 'NONE' or 'PARTIAL' is refused): every lookup
// join instance reads the files whole when it opens and reads them again
// when they changed (a file added, removed, or with another size or
// modification time), checked every
// 'lookup.full-cache.periodic-reload.interval' (default 1 min) or at the
// 'TIMED' reload times.
func (s *Source) Lookup(keyCols []int) (*connectors.Lookup, error) {
	if !s.mode.IsInsertOnly() {
		return nil, fmt.Errorf("filesystem table %s: a table in the changelog format '%s' cannot be looked up; a lookup join needs an insert-only format",
			s.cfg.name, s.cfg.format)
	}
	cache, err := connectors.LookupCacheFrom(s.cfg.tc, lookup.CacheFull, lookup.CacheFull)
	if err != nil {
		return nil, err
	}
	cache.OnlyWhenChanged = true
	if cache.Reload == lookup.ReloadPeriodic && cache.ReloadInterval == 0 {
		cache.ReloadInterval = defaultChangeCheck
	}
	return &connectors.Lookup{Loader: &fileLoader{src: s}, Cache: cache}, nil
}

// checkLookupOptions refuses bad lookup options when the table is created.
func checkLookupOptions(tc *connectors.TableContext) error {
	_, err := connectors.LookupCacheFrom(tc, lookup.CacheFull, lookup.CacheFull)
	return err
}

// fileLoader reads all files of a table for a full lookup cache. One
// loader serves one lookup join instance; mu guards the listing of the
// last load against a Changed from another goroutine.
type fileLoader struct {
	src *Source

	mu     sync.Mutex
	loaded []fileInfo
}

// Load implements lookup.Loader: the rows of every file, as the source
// reads them (physical columns, then metadata).
func (l *fileLoader) Load(ctx context.Context, fn func(types.Row) error) error {
	files, err := listFiles(l.src.cfg.dir, l.src.pathRegex)
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", l.src.cfg.name, err)
	}
	src := l.src
	one := &Source{cfg: src.cfg, pathRegex: src.pathRegex, metaKeys: src.metaKeys, skipEmptyLines: src.skipEmptyLines,
		enum: &enumerator{root: src.cfg.dir, regex: src.pathRegex, seen: map[string]bool{}}}
	// The reader lists the files itself; a file changing between the two
	// listings is seen as changed by the next check and read again.
	rd, err := one.NewReader(0, 1)
	if err != nil {
		return err
	}
	if err := rd.Open(ctx); err != nil {
		return err
	}
	defer rd.Close()
	width := len(one.cfg.tc.Physical) + len(one.metaKeys)
	b := types.NewBatch(width, types.DefaultBatchSize)
	var arena []types.Value
	for {
		b.Reset()
		res, err := rd.Read(ctx, b)
		if err != nil {
			return err
		}
		for _, r := range b.Rows {
			if len(arena) < width {
				arena = make([]types.Value, width*types.DefaultBatchSize)
			}
			row := types.Row(arena[:width:width])
			arena = arena[width:]
			copy(row, r)
			if err := fn(row); err != nil {
				return err
			}
		}
		if res.End {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.loaded = files
	l.mu.Unlock()
	return nil
}

// Changed implements lookup.Loader: whether the listing differs from the
// last load's.
func (l *fileLoader) Changed(context.Context) (bool, error) {
	files, err := listFiles(l.src.cfg.dir, l.src.pathRegex)
	if err != nil {
		return false, fmt.Errorf("filesystem table %s: %w", l.src.cfg.name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !slices.Equal(files, l.loaded), nil
}

var (
	_ connectors.LookupSource = (*Source)(nil)
	_ lookup.Loader           = (*fileLoader)(nil)
)
