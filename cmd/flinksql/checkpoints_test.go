package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// fileJSON is one file entry of a hand-written _metadata.
func fileJSON(path, data string, shared bool) string {
	name := path[strings.LastIndex(path, "/")+1:]
	return fmt.Sprintf(`{"path": %q, "name": %q, "localName": %q, "size": %d, "sha256": %q, "shared": %t}`,
		path, name, name, len(data), sum(data), shared)
}

func metadataJSON(job string, id int, ts string, full, uploaded int, files ...string) string {
	return fmt.Sprintf(`{
  "version": 1, "job": %q, "id": %d, "timestamp": %q,
  "fullBytes": %d, "uploadedBytes": %d, "syncNanos": 1000000, "asyncNanos": 5000000,
  "instances": [{"operator": "v1-0", "subtask": 0, "parallelism": 1, "stateKind": "rocksdb",
    "keyGroups": [0, 127], "fullBytes": %d, "uploadedBytes": %d, "files": [%s]}]
}`, job, id, ts, full, uploaded, full, uploaded, strings.Join(files, ", "))
}

// checkpointTree is a checkpoint directory with two jobs: clicks with one
// hashmap-like checkpoint, orders with checkpoints 4 and 5 sharing sst-b.
func checkpointTree() map[string]string {
	const (
		sstA = "aaaaaaaaaa"           // 10 bytes
		sstB = "bbbbbbbbbbbbbbbbbbbb" // 20 bytes
		sstC = "ccccc"                // 5 bytes
		man4 = "manifest-4"           // 10 bytes
		man5 = "manifest-5"           // 10 bytes
		snap = "0123456789abcdef"     // 16 bytes
	)
	return map[string]string{
		"orders/shared/sst-a":     sstA,
		"orders/shared/sst-b":     sstB,
		"orders/shared/sst-c":     sstC,
		"orders/chk-4/manifest-4": man4,
		"orders/chk-5/manifest-5": man5,
		"clicks/chk-1/snap-1":     snap,
		"orders/chk-3/manifest-3": "an incomplete checkpoint: no _metadata",
		"orders/chk-4/_metadata": metadataJSON("orders", 4, "2025-03-04T05:06:07.008Z", 40, 40,
			fileJSON("shared/sst-a", sstA, true), fileJSON("shared/sst-b", sstB, true), fileJSON("chk-4/manifest-4", man4, false)),
		// Checkpoint 5 reuses sst-b and uploads sst-c and its manifest: 15 bytes.
		"orders/chk-5/_metadata": metadataJSON("orders", 5, "2025-03-04T05:06:17.250Z", 35, 15,
			fileJSON("shared/sst-b", sstB, true), fileJSON("shared/sst-c", sstC, true), fileJSON("chk-5/manifest-5", man5, false)),
		"clicks/chk-1/_metadata": metadataJSON("clicks", 1, "2025-03-04T05:00:00Z", 16, 16,
			fileJSON("chk-1/snap-1", snap, false)),
	}
}

func writeTree(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for p, data := range tree {
		name := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Columns are padded to the widest cell plus two spaces; the last column is
// not padded.
const (
	header    = "ID  COMPLETED (UTC)          FULL BYTES  UPLOADED BYTES  SHARED FILES  PRIVATE FILES\n"
	clicksOut = "Job clicks: 1 retained checkpoint\n" + header +
		"1   2025-03-04 05:00:00.000  16          16              0             1\n"
	ordersOut = "Job orders: 2 retained checkpoints\n" + header +
		"4   2025-03-04 05:06:07.008  40          40              2             1\n" +
		"5   2025-03-04 05:06:17.250  35          15              2             1\n"
)

func runCheckpointsCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runCheckpoints(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckpointsCommandList(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, checkpointTree())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{dir}, clicksOut + "\n" + ordersOut},
		{[]string{"file://" + dir, "--job", "orders"}, ordersOut},
		{[]string{"--job=clicks", dir}, clicksOut},
		{[]string{dir, "--job", "orders", "--verify"}, ordersOut + "Verified 5 files: all present with the recorded size and SHA-256.\n"},
	} {
		code, out, errOut := runCheckpointsCmd(tc.args...)
		if code != 0 || out != tc.want || errOut != "" {
			t.Errorf("checkpoints %q: exit %d, stderr %q, stdout\n%s\nwant\n%s", tc.args, code, errOut, out, tc.want)
		}
	}
	// The listing changed nothing: the incomplete checkpoint is still there.
	if _, err := os.Stat(filepath.Join(dir, "orders", "chk-3", "manifest-3")); err != nil {
		t.Errorf("listing removed an incomplete checkpoint: %v", err)
	}
}

func TestCheckpointsCommandVerifyFindsDamage(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, checkpointTree())
	// Delete a shared file only checkpoint 4 uses, truncate checkpoint 5's
	// manifest, and change a byte of sst-c without changing its size.
	if err := os.Remove(filepath.Join(dir, "orders", "shared", "sst-a")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"orders/chk-5/manifest-5": "mani", "orders/shared/sst-c": "ccXcc"})

	code, out, errOut := runCheckpointsCmd(dir, "--verify", "--job", "orders")
	want := ordersOut +
		"chk-4: orders/shared/sst-a (operator v1-0 subtask 0): missing\n" +
		"chk-5: orders/shared/sst-c (operator v1-0 subtask 0): sha256 " + sum("ccXcc") + ", expected " + sum("ccccc") + "\n" +
		"chk-5: orders/chk-5/manifest-5 (operator v1-0 subtask 0): size 4, expected 10\n" +
		"Verified 5 files: 3 problems.\n"
	if code != 1 || out != want || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	// The other job is intact.
	if code, _, _ := runCheckpointsCmd(dir, "--verify", "--job", "clicks"); code != 0 {
		t.Errorf("verify of the intact job exits %d", code)
	}
}

func TestCheckpointsCommandS3(t *testing.T) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("k", "s", "")))
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.UsePathStyle = true
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("state")}); err != nil {
		t.Fatal(err)
	}
	for p, data := range checkpointTree() {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("ckpts/" + p), Body: strings.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCheckpointsCmd("s3://state/ckpts", "--verify",
		"-D", "s3.endpoint="+srv.URL, "-D", "s3.path.style.access=true", "-D", "s3.access-key=k", "-D", "s3.secret-key=s")
	verified := func(n int) string {
		return fmt.Sprintf("Verified %d files: all present with the recorded size and SHA-256.\n", n)
	}
	want := clicksOut + verified(1) + "\n" + ordersOut + verified(5)
	if code != 0 || out != want || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}

func TestCheckpointsCommandErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, checkpointTree())
	for _, tc := range []struct {
		args       []string
		code       int
		wantStderr string
	}{
		{[]string{}, 2, "flinksql checkpoints: expected one checkpoint directory, got 0 arguments\n"},
		{[]string{dir, dir}, 2, "flinksql checkpoints: expected one checkpoint directory, got 2 arguments\n"},
		{[]string{dir, "--job", "nope"}, 1, `flinksql checkpoints: job "nope" has no checkpoints under ` + dir + "\n"},
		{[]string{"gs://bucket/x"}, 1, `flinksql checkpoints: checkpoint storage "gs://bucket/x": unsupported scheme "gs" (supported: file:// (or an absolute path) and s3://)` + "\n"},
	} {
		code, _, errOut := runCheckpointsCmd(tc.args...)
		if code != tc.code || !strings.HasPrefix(errOut, tc.wantStderr) {
			t.Errorf("checkpoints %q: exit %d, stderr %q; want %d, %q", tc.args, code, errOut, tc.code, tc.wantStderr)
		}
	}
	empty := t.TempDir()
	code, out, _ := runCheckpointsCmd(empty)
	if code != 0 || out != "No checkpoints under "+empty+".\n" {
		t.Errorf("empty directory: exit %d, %q", code, out)
	}
}

// TestCheckpointsCommandStatePerOperator: when the latest checkpoint holds
// keyed state, the listing adds the state of each operator in it, summed
// over its subtasks: entries (~ marks rocksdb's estimate), bytes in memory
// and on disk when it was taken, and its full bytes; operators without
// keyed state show "-".
func TestCheckpointsCommandStatePerOperator(t *testing.T) {
	const (
		src = "0123456789abcdef" // 16 bytes
	)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 60)
	md := fmt.Sprintf(`{
  "version": 1, "job": "counts", "id": 7, "timestamp": "2025-03-04T06:00:00Z",
  "fullBytes": 116, "uploadedBytes": 116, "syncNanos": 1000000, "asyncNanos": 5000000,
  "instances": [
    {"operator": "v2-0", "subtask": 1, "parallelism": 2, "stateKind": "rocksdb", "format": "kv/1", "keyGroups": [64, 127],
     "fullBytes": 60, "uploadedBytes": 60, "files": [%s],
     "stateEntries": 150, "entriesEstimated": true, "memoryBytes": 2000, "diskBytes": 7000},
    {"operator": "v1-source", "subtask": 0, "parallelism": 1, "stateKind": "rocksdb", "keyGroups": [-1, -1],
     "fullBytes": 16, "uploadedBytes": 16, "files": [%s]},
    {"operator": "v2-0", "subtask": 0, "parallelism": 2, "stateKind": "rocksdb", "format": "kv/1", "keyGroups": [0, 63],
     "fullBytes": 40, "uploadedBytes": 40, "files": [%s],
     "stateEntries": 100, "entriesEstimated": true, "memoryBytes": 1000, "diskBytes": 5000}
  ]
}`, fileJSON("chk-7/b", b, false), fileJSON("chk-7/src", src, false), fileJSON("chk-7/a", a, false))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"counts/chk-7/_metadata": md, "counts/chk-7/src": src, "counts/chk-7/a": a, "counts/chk-7/b": b,
	})
	want := "Job counts: 1 retained checkpoint\n" + header +
		"7   2025-03-04 06:00:00.000  116         116             0             3\n" +
		"State per operator in checkpoint 7:\n" +
		"OPERATOR   SUBTASKS  BACKEND  ENTRIES  MEMORY BYTES  DISK BYTES  FULL BYTES\n" +
		"v1-source  1         rocksdb  -        -             -           16\n" +
		"v2-0       2         rocksdb  ~250     3000          12000       100\n"
	code, out, errOut := runCheckpointsCmd(dir)
	if code != 0 || out != want || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}
