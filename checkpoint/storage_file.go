package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// tempPrefix starts the names of files being written; List never returns
// them, so a crash mid-write never looks like an object.
const tempPrefix = ".flinksql-tmp-"

// fileStorage keeps objects as files under root; a path's slashes become
// directories.
type fileStorage struct {
	root string
}

// newFileStorage does not create root: Put creates directories as needed,
// and inspecting a directory must not create it.
func newFileStorage(root string) (*fileStorage, error) {
	return &fileStorage{root: filepath.Clean(root)}, nil
}

func (s *fileStorage) location() (string, map[string]string) {
	return "file://" + filepath.ToSlash(s.root), nil
}

func (s *fileStorage) file(p string) (string, error) {
	if err := validPath(p); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(p)), nil
}

// Put writes to a temporary file in the target directory, syncs it, and
// renames it into place, so the object appears complete or not at all.
func (s *fileStorage) Put(ctx context.Context, p string, data io.Reader, size int64) error {
	name, err := s.file(p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+filepath.Base(name)+"-*")
	if err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, ctxReader{ctx, data})
	if err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("put %s: wrote %d bytes, expected %d", name, n, size)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	done = true
	// The rename is durable only once the directory entry is.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func (s *fileStorage) Get(ctx context.Context, p string) (io.ReadCloser, error) {
	name, err := s.file(p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return f, nil
}

// link hard-links the stored file p to the local path to (see fetchFile).
func (s *fileStorage) link(p, to string) error {
	name, err := s.file(p)
	if err != nil {
		return err
	}
	return os.Link(name, to)
}

// localPath is the file system path of the stored file p.
func (s *fileStorage) localPath(p string) (string, error) { return s.file(p) }

func (s *fileStorage) Stat(ctx context.Context, p string) (int64, bool, error) {
	name, err := s.file(p)
	if err != nil {
		return 0, false, err
	}
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("stat %s: %w", name, err)
	case fi.IsDir():
		return 0, false, nil
	}
	return fi.Size(), true, nil
}

func (s *fileStorage) List(ctx context.Context, prefix string) ([]string, error) {
	// Walk the deepest directory the prefix names completely.
	start := s.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(s.root, filepath.FromSlash(prefix[:i]))
	}
	var out []string
	err := filepath.WalkDir(start, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		rel, err := filepath.Rel(s.root, name)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, prefix) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s under %s: %w", prefix, s.root, err)
	}
	sort.Strings(out)
	return out, nil
}

// Delete removes the file and then any directories it leaves empty, up to
// the root, so a subsumed chk-<n> directory disappears with its last file.
func (s *fileStorage) Delete(ctx context.Context, p string) error {
	name, err := s.file(p)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
		// Remove fails on a non-empty directory, which ends the climb.
		if os.Remove(filepath.Join(s.root, filepath.FromSlash(dir))) != nil {
			break
		}
	}
	return nil
}

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
