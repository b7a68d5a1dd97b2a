package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// newS3 starts an S3-compatible server on loopback and returns the options
// that reach it and the URI of a fresh bucket with a prefix.
func newS3(t testing.TB) (uri string, opts map[string]string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	opts = map[string]string{
		OptS3Endpoint:  srv.URL,
		OptS3PathStyle: "true",
		OptS3AccessKey: "test-access",
		OptS3SecretKey: "test-secret",
	}
	st, err := OpenStorage(context.Background(), "s3://ckpts/base/dir", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.(*s3Storage).client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("ckpts")}); err != nil {
		t.Fatalf("creating bucket: %v", err)
	}
	return "s3://ckpts/base/dir", opts
}

func openTestStorage(t testing.TB, kind string) Storage {
	t.Helper()
	var uri string
	var opts map[string]string
	if kind == "s3" {
		uri, opts = newS3(t)
	} else {
		uri = "file://" + filepath.ToSlash(t.TempDir())
	}
	st, err := OpenStorage(context.Background(), uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readAll(t testing.TB, st Storage, p string) string {
	t.Helper()
	r, err := st.Get(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// onlyReader hides Seek, like a network stream.
type onlyReader struct{ io.Reader }

// failingReader yields some bytes, then an error.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk on fire")
	}
	n := min(f.n, len(p))
	for i := range n {
		p[i] = 'x'
	}
	f.n -= n
	return n, nil
}

func TestStorageContract(t *testing.T) {
	for _, kind := range []string{"file", "s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStorage(t, kind)

			if objs, err := st.List(ctx, ""); err != nil || len(objs) != 0 {
				t.Fatalf("empty storage lists %v, %v", objs, err)
			}
			puts := []struct {
				path string
				data io.Reader
				size int64
			}{
				{"j/chk-1/a", strings.NewReader("hello"), 5},
				{"j/chk-1/_metadata", onlyReader{strings.NewReader("{}")}, 2},
				{"j/shared/s1", bytes.NewReader([]byte("0123456789")), -1},
				{"j2/chk-10/b", strings.NewReader(""), 0},
			}
			for _, p := range puts {
				if err := st.Put(ctx, p.path, p.data, p.size); err != nil {
					t.Fatalf("put %s: %v", p.path, err)
				}
			}
			if got := readAll(t, st, "j/chk-1/a"); got != "hello" {
				t.Errorf("get = %q, want hello", got)
			}
			if size, ok, err := st.Stat(ctx, "j/shared/s1"); err != nil || !ok || size != 10 {
				t.Errorf("stat = %d, %v, %v; want 10, true, nil", size, ok, err)
			}
			if _, ok, err := st.Stat(ctx, "j/none"); err != nil || ok {
				t.Errorf("stat of a missing object = %v, %v; want false, nil", ok, err)
			}
			if _, err := st.Get(ctx, "j/none"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("get of a missing object: %v, want fs.ErrNotExist", err)
			}
			for prefix, want := range map[string][]string{
				"":         {"j/chk-1/_metadata", "j/chk-1/a", "j/shared/s1", "j2/chk-10/b"},
				"j/":       {"j/chk-1/_metadata", "j/chk-1/a", "j/shared/s1"},
				"j/chk-1/": {"j/chk-1/_metadata", "j/chk-1/a"},
				"j2/chk-1": {"j2/chk-10/b"},
				"j/sh":     {"j/shared/s1"},
				"k/":       nil,
			} {
				got, err := st.List(ctx, prefix)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("list %q = %v, %v; want %v", prefix, got, err, want)
				}
			}

			// A write that fails or is short leaves nothing behind, and an
			// existing object keeps its old content.
			if err := st.Put(ctx, "j/chk-1/a", &failingReader{n: 3}, 5); err == nil {
				t.Error("put from a failing reader succeeded")
			}
			if err := st.Put(ctx, "j/chk-1/c", strings.NewReader("abc"), 4); err == nil {
				t.Error("put of 3 bytes declared as 4 succeeded")
			}
			if got := readAll(t, st, "j/chk-1/a"); got != "hello" {
				t.Errorf("after a failed overwrite get = %q, want hello", got)
			}
			if _, ok, _ := st.Stat(ctx, "j/chk-1/c"); ok {
				t.Error("a failed put left an object")
			}

			for _, p := range []string{"j/chk-1/a", "j/chk-1/_metadata", "j/chk-1/_metadata"} {
				if err := st.Delete(ctx, p); err != nil {
					t.Fatalf("delete %s: %v", p, err)
				}
			}
			if got, _ := st.List(ctx, ""); !reflect.DeepEqual(got, []string{"j/shared/s1", "j2/chk-10/b"}) {
				t.Errorf("after deletes list = %v", got)
			}
			for _, bad := range []string{"", "/abs", "a/../b", "a//b", "dir/"} {
				if err := st.Put(ctx, bad, strings.NewReader(""), 0); err == nil {
					t.Errorf("put %q succeeded", bad)
				}
			}
		})
	}
}

// TestFileStorageLayout checks what file:// storage leaves on disk: no
// temporary files after failed writes, and no empty directories after
// deletes.
func TestFileStorageLayout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := OpenStorage(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "j/chk-1/a", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "j/chk-1/b", &failingReader{n: 100000}, 200000); err == nil {
		t.Fatal("failing put succeeded")
	}
	entries, _ := os.ReadDir(filepath.Join(root, "j", "chk-1"))
	if len(entries) != 1 || entries[0].Name() != "a" {
		t.Fatalf("chk-1 holds %v, want only a", entries)
	}
	if err := st.Delete(ctx, "j/chk-1/a"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("root still holds %v after deleting the only file", entries)
	}
}

func TestOpenStorage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		uri     string
		opts    map[string]string
		wantErr string
	}{
		{uri: "file://" + dir},
		{uri: "file://localhost" + dir},
		{uri: "file:" + dir},
		{uri: dir},
		{uri: "ckpts", wantErr: `checkpoint storage "ckpts": a local path must be absolute (supported: file:// (or an absolute path) and s3://)`},
		{uri: "hdfs://nn/x", wantErr: `checkpoint storage "hdfs://nn/x": unsupported scheme "hdfs" (supported: file:// (or an absolute path) and s3://)`},
		{uri: "file://host/x", wantErr: `checkpoint storage "file://host/x": file URIs must not name a host (use file:///abs/path)`},
		{uri: "s3://", wantErr: `checkpoint storage "s3://": missing bucket (expected s3://bucket/prefix)`},
		{uri: "s3://b/p", opts: map[string]string{"s3.path.style.access": "yes"}, wantErr: `invalid value "yes" for option 's3.path.style.access' (allowed: true, false)`},
		{uri: "s3://b/p", opts: map[string]string{"s3.access-key": "k"}, wantErr: `checkpoint storage "s3://b/p": options 's3.access-key' and 's3.secret-key' must be set together`},
		{uri: "s3://b/p", opts: map[string]string{"s3.endpoint": "http://127.0.0.1:1", "s3.path.style.access": "TRUE", "s3.region": "eu-west-1"}},
	}
	for _, tc := range tests {
		st, err := OpenStorage(context.Background(), tc.uri, tc.opts)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("OpenStorage(%q): %v", tc.uri, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("OpenStorage(%q) error = %v\nwant %s", tc.uri, err, tc.wantErr)
		case tc.wantErr == "" && st == nil:
			t.Errorf("OpenStorage(%q) returned no storage", tc.uri)
		}
	}
}
