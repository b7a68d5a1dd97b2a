package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// Restores through the entries form: from a savepoint, and from a
// checkpoint into a job of another parallelism or state backend. Keyed
// state is redistributed by key group (each new instance loads the entries
// of its key-group range from every old instance whose range overlaps);
// the operator state of sources (their positions) goes to every new
// subtask, whose reader keeps its own splits (exec.PositionMerger); entry
// stores (sink committables) of old subtask j go to new subtask j mod the
// new parallelism.

// viaEntries says whether op's restored instances are read as entries
// rather than restored as the images they are.
func (rs *runtimeStore) viaEntries(op exec.OperatorID, parallelism int) bool {
	if rs.restore == nil {
		return false
	}
	ins := rs.byOp[string(op)]
	if len(ins) == 0 {
		return false
	}
	if rs.restore.Type == TypeSavepoint || rs.restoredParallelism[string(op)] != parallelism || len(rs.rewrites[string(op)]) > 0 {
		return true
	}
	for _, in := range ins {
		if in.Format == EntriesFormat || in.Format == StoreEntriesFormat || (len(in.Files) > 0 && in.StateKind != string(rs.kind)) {
			return true
		}
	}
	return false
}

func (rs *runtimeStore) what() string {
	if rs.restore.Type == TypeSavepoint {
		return "savepoint " + strings.TrimSuffix(rs.restore.base, "/")
	}
	return "checkpoint " + strconv.FormatInt(rs.restore.ID, 10)
}

// openKeyedFromEntries opens a keyed instance's backend empty and loads
// the entries of its key groups from the overlapping old instances.
func (rs *runtimeStore) openKeyedFromEntries(op exec.OperatorID, subtask, parallelism int, cfg kv.Config) (exec.KeyedInstance, error) {
	for _, in := range rs.byOp[string(op)] {
		if in.Format != KeyedFormat && in.Format != EntriesFormat && len(in.Files) > 0 {
			return nil, fmt.Errorf("restoring operator %s subtask %d from %s: it holds the operator's state in the format %q, which keyed state cannot read: %w",
				op, subtask, rs.what(), in.Format, ErrIncompatibleRestore)
		}
	}
	if err := os.MkdirAll(rs.localDir, 0o755); err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	dir, err := os.MkdirTemp(rs.localDir, dirElement(string(op))+"-"+strconv.Itoa(subtask)+"-")
	if err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	cfg.Kind = rs.kind
	cfg.Dir = filepath.Join(dir, "db")
	r := kv.KeyGroupRange{First: 0, Last: max(cfg.MaxParallelism, 1) - 1}
	if cfg.MaxParallelism == 0 {
		r.Last = kv.DefaultMaxParallelism - 1
	}
	if cfg.KeyGroups != nil {
		r = *cfg.KeyGroups
	}
	ki := &keyedInstance{rs: rs, op: op, subtask: subtask, parallelism: parallelism, dir: dir, restored: true}
	ki.b, err = kv.Open(cfg)
	if err == nil {
		var sources []kv.EntrySource
		for i, in := range rs.byOp[string(op)] {
			if len(in.Files) == 0 || in.KeyGroups[0] < 0 || in.KeyGroups[0] > r.Last || in.KeyGroups[1] < r.First {
				continue // no entries in this instance's key groups
			}
			sources = append(sources, rs.entrySource(in, filepath.Join(dir, "restore-"+strconv.Itoa(i))))
		}
		if err = ki.b.Import(sources); err != nil {
			err = fmt.Errorf("restoring from %s: %w", rs.what(), err)
			_ = ki.b.Close()
		} else if err = rs.migrate(op, ki.b); err != nil {
			_ = ki.b.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("opening state of %s subtask %d (key groups %d to %d): %w", op, subtask, r.First, r.Last, err)
	}
	return ki, nil
}

// entrySource streams the stored entries of a restored keyed instance,
// downloading its files into dir first (removed afterwards).
func (rs *runtimeStore) entrySource(in *Instance, dir string) kv.EntrySource {
	return func(fn func(k, v []byte) error) error {
		defer os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var files []state.File
		var err error
		if in.Format == EntriesFormat || in.StateKind == string(image.Hashmap) {
			// One file, only read: hard-linked from a local snapshot.
			files, err = fetchReadOnly(rs.restore, in, dir)
		} else {
			files, err = downloadInstance(context.Background(), rs.restore, in, dir, nil)
		}
		if err != nil {
			return err
		}
		if in.Format == EntriesFormat {
			if len(files) != 1 {
				return fmt.Errorf("operator %s subtask %d: %d files where the savepoint format has one", in.Operator, in.Subtask, len(files))
			}
			_, err := image.ScanHashmapFile(filepath.Join(dir, files[0].LocalName), fn)
			return err
		}
		return kv.ExportImage(kv.Config{Kind: image.Kind(in.StateKind), Dir: dir, MaxParallelism: rs.restore.MaxParallelism, SumsVerified: true}, files, fn)
	}
}

// storeEntry is one restored entry of an entry store.
type storeEntry struct {
	kg         int
	key, value []byte
}

// entriesReader replays restored entries (exec.StateReader).
type entriesReader []storeEntry

func (r entriesReader) Each(fn func(kg int, key, value []byte) error) error {
	for _, e := range r {
		if err := fn(e.kg, e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

// openInstanceFromEntries opens an entry store empty (its operator writes
// a full snapshot first) and replays the restored entries assigned to it.
func (rs *runtimeStore) openInstanceFromEntries(op exec.OperatorID, subtask, parallelism int) (exec.InstanceState, error) {
	if err := os.MkdirAll(rs.localDir, 0o755); err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	dir, err := os.MkdirTemp(rs.localDir, dirElement(string(op))+"-"+strconv.Itoa(subtask)+"-")
	if err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	is := &instanceState{rs: rs, op: op, subtask: subtask, parallelism: parallelism, dir: dir, restored: true}
	is.rescaled = rs.restoredParallelism[string(op)] != parallelism
	source := exec.IsSourceOperator(string(op))
	var entries entriesReader
	for i, in := range rs.byOp[string(op)] {
		if in.Format != "" && in.Format != StoreEntriesFormat {
			err = fmt.Errorf("restoring operator %s subtask %d from %s: it holds the operator's state in the format %q, which this operator does not read: %w",
				op, subtask, rs.what(), in.Format, ErrIncompatibleRestore)
			break
		}
		// A source's position goes to every new subtask (its reader keeps
		// the splits it owns); other state to one.
		if source && is.rescaled {
			// every old position, to reassign
		} else if in.Subtask%parallelism != subtask {
			continue
		}
		if in.Position != nil {
			is.positions = append(is.positions, in.Position)
		}
		if len(in.Files) == 0 {
			continue
		}
		if entries, err = rs.readStoreEntries(in, filepath.Join(dir, "restore-"+strconv.Itoa(i)), entries); err != nil {
			err = fmt.Errorf("restoring operator %s subtask %d from %s: %w", op, subtask, rs.what(), err)
			break
		}
	}
	if err == nil && !is.rescaled && len(is.positions) == 1 {
		is.position = is.positions[0]
	} else if err == nil && !is.rescaled && len(is.positions) > 1 {
		err = fmt.Errorf("restoring operator %s subtask %d from %s: %d positions for one subtask", op, subtask, rs.what(), len(is.positions))
	}
	if err == nil {
		sort.SliceStable(entries, func(i, j int) bool {
			a, b := entries[i], entries[j]
			if a.kg != b.kg {
				// Key groups ascending, KeyGroupNone last.
				return a.kg != state.KeyGroupNone && (b.kg == state.KeyGroupNone || a.kg < b.kg)
			}
			return bytes.Compare(a.key, b.key) < 0
		})
		is.entries = entries
		is.store, err = state.Open(rs.kind, filepath.Join(dir, "store"))
		is.dir = filepath.Join(dir, "store")
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return is, nil
}

// readStoreEntries appends the entries of a restored entry-store instance.
func (rs *runtimeStore) readStoreEntries(in *Instance, dir string, out entriesReader) (entriesReader, error) {
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	files, err := downloadInstance(context.Background(), rs.restore, in, dir, nil)
	if err != nil {
		return out, err
	}
	if in.Format == StoreEntriesFormat {
		if len(files) != 1 {
			return out, fmt.Errorf("operator %s subtask %d: %d files where the savepoint format has one", in.Operator, in.Subtask, len(files))
		}
		_, err := image.ScanHashmapFile(filepath.Join(dir, files[0].LocalName), func(k, v []byte) error {
			if len(k) < 2 {
				return errors.New("entry key shorter than its key group")
			}
			out = append(out, storeEntry{kg: keyGroupOfCode(k), key: bytes.Clone(k[2:]), value: bytes.Clone(v)})
			return nil
		})
		return out, err
	}
	st, err := state.Restore(state.Kind(in.StateKind), dir, files)
	if err != nil {
		return out, err
	}
	err = st.Reader().Each(func(kg int, key, value []byte) error {
		out = append(out, storeEntry{kg: kg, key: bytes.Clone(key), value: bytes.Clone(value)})
		return nil
	})
	return out, errors.Join(err, st.Close())
}

// RestoredPositions implements exec.RescaledPositions: the positions of
// the old subtasks assigned to this instance, and whether the parallelism
// changed (the reader must then reassign them: exec.PositionMerger).
func (is *instanceState) RestoredPositions() ([][]byte, bool) {
	return is.positions, is.rescaled
}

// fetchReadOnly fetches the files of an instance that are only read (the
// entries form, a hashmap image), hard-linking them from a local snapshot
// instead of copying; sizes and checksums are compared.
func fetchReadOnly(md *Metadata, in *Instance, dir string) ([]state.File, error) {
	files := make([]state.File, 0, len(in.Files))
	for _, f := range in.Files {
		if f.LocalName == "" || f.LocalName != filepath.Base(f.LocalName) || f.LocalName == "." || f.LocalName == ".." {
			return nil, fmt.Errorf("file %s has an invalid local name %q", f.Path, f.LocalName)
		}
		if err := fetchFile(context.Background(), md.src, md.base+f.Path, filepath.Join(dir, f.LocalName), f.Size, f.SHA256, true, nil); err != nil {
			if isNotExist(err) || errors.Is(err, errFileMismatch) {
				err = fmt.Errorf("%w: %w", err, exec.ErrCheckpointUnrestorable)
			}
			return nil, err
		}
		files = append(files, state.File{Name: f.Name, LocalName: f.LocalName, Size: f.Size, SHA256: f.SHA256, Shared: f.Shared})
	}
	return files, nil
}

// migrate converts the stored values of the restored states the
// migration rewrites into op's layout.
func (rs *runtimeStore) migrate(op exec.OperatorID, b *kv.Backend) error {
	for name, fn := range rs.rewrites[string(op)] {
		if err := b.RewriteValues(name, fn); err != nil {
			return fmt.Errorf("migrating state %q of %s restored from %s: %w", name, op, rs.what(), err)
		}
	}
	return nil
}
