package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// Storage is a flat namespace of immutable objects addressed by
// slash-separated paths relative to a root (a directory or an S3 prefix).
// Implementations are safe for concurrent use.
type Storage interface {
	// Put stores data under path atomically: readers see either no object or
	// the complete one. size is the number of bytes data yields (or -1 when
	// unknown); a mismatch is an error and leaves no object behind.
	Put(ctx context.Context, path string, data io.Reader, size int64) error
	// Get opens an object. A missing object gives an error wrapping
	// fs.ErrNotExist.
	Get(ctx context.Context, path string) (io.ReadCloser, error)
	// Stat reports an object's size and whether it exists.
	Stat(ctx context.Context, path string) (size int64, exists bool, err error)
	// List returns the paths of all objects whose path starts with prefix,
	// sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, path string) error
}

// locatedStorage is implemented by the storages OpenStorage returns, so a
// Manager can open a checkpoint elsewhere (execution.state-recovery.path)
// with the same options.
type locatedStorage interface {
	Storage
	location() (uri string, opts map[string]string)
}

// Supported schemes, for error messages.
const supportedSchemes = "file:// (or an absolute path) and s3://"

var schemeRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*):`)

// OpenStorage opens the storage rooted at uri: file:///abs/path, a plain
// absolute path, or s3://bucket/prefix. opts holds the S3 options
// (s3.endpoint, s3.path.style.access, s3.access-key, s3.secret-key,
// s3.region); other keys are ignored, so a whole session configuration may
// be passed.
func OpenStorage(ctx context.Context, uri string, opts map[string]string) (Storage, error) {
	scheme, rest := splitScheme(uri)
	switch scheme {
	case "":
		if !filepath.IsAbs(uri) {
			return nil, fmt.Errorf("checkpoint storage %q: a local path must be absolute (supported: %s)", uri, supportedSchemes)
		}
		return newFileStorage(uri)
	case "file":
		u, err := url.Parse(uri)
		if err != nil {
			return nil, fmt.Errorf("checkpoint storage %q: %w", uri, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("checkpoint storage %q: file URIs must not name a host (use file:///abs/path)", uri)
		}
		if !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("checkpoint storage %q: the path must be absolute (use file:///abs/path)", uri)
		}
		return newFileStorage(u.Path)
	case "s3", "s3a", "s3p":
		return newS3Storage(ctx, uri, rest, opts)
	default:
		return nil, fmt.Errorf("checkpoint storage %q: unsupported scheme %q (supported: %s)", uri, scheme, supportedSchemes)
	}
}

// splitScheme returns the lower-case scheme of uri ("" for a plain path) and
// what follows "scheme://" (or "scheme:").
func splitScheme(uri string) (scheme, rest string) {
	m := schemeRE.FindStringSubmatch(uri)
	if m == nil || filepath.VolumeName(uri) != "" {
		return "", uri
	}
	rest = strings.TrimPrefix(uri[len(m[0]):], "//")
	return strings.ToLower(m[1]), rest
}

// parentURI returns the URI of the directory containing uri's last element,
// and that element.
func parentURI(uri string) (parent, base string) {
	trimmed := strings.TrimRight(uri, "/")
	i := strings.LastIndex(trimmed, "/")
	if i < 0 {
		return "", trimmed
	}
	return trimmed[:i], trimmed[i+1:]
}

// isNotExist reports whether err says an object is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// validPath rejects paths that would escape the storage root or address a
// directory.
func validPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("invalid object path %q", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("invalid object path %q", p)
		}
	}
	return nil
}
