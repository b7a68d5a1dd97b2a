package integration_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// TestNamedJobExclusiveOnS3: two live runs of one named pipeline are
// excluded on s3:// as on local directories, through a lease object written
// with conditional PUTs to an S3-compatible server over HTTP; once the first
// run stops (and releases the lease), the pipeline can run again.
func TestNamedJobExclusiveOnS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("ckpts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	conf := func() map[string]string {
		return map[string]string{
			"execution.checkpointing.interval": "20 ms",
			"state.checkpoints.dir":            "s3://ckpts/checkpoints",
			"s3.endpoint":                      srv.URL,
			"s3.path.style.access":             "true",
			"s3.access-key":                    "test-access",
			"s3.secret-key":                    "test-secret",
			"pipeline.name":                    "s3-live-job",
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	unbounded := `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`
	startJob := func(s *session.Session) error {
		stmts, err := parser.ParseScript(unbounded)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stmts {
			if _, err := s.ExecuteStatement(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}
	first, err := session.New(session.Options{Stderr: testWriter{t}, Config: conf()})
	if err != nil {
		t.Fatal(err)
	}
	if err := startJob(first); err != nil {
		t.Fatal(err)
	}
	second, err := session.New(session.Options{Stderr: testWriter{t}, Config: conf()})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := startJob(second); err == nil || !strings.Contains(err.Error(), "another running job uses this name") {
		t.Fatalf("a second live run of a named job on s3://: %v", err)
	}
	first.Close()
	third, err := session.New(session.Options{Stderr: testWriter{t}, Config: conf()})
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if err := startJob(third); err != nil {
		t.Fatalf("running the pipeline again after the first run stopped: %v", err)
	}
}
