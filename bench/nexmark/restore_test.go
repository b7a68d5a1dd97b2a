package nexmark

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	nx "github.com/flinksql/flinksql/connectors/nexmark"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

const restoreEvents = 60_000

// restoreSQL writes one line per event to a filesystem table (exactly once:
// files are committed with the checkpoint that covers them). The source is
// paced (max-emit-speed off, 20 000 events per second) so that the first run
// is stopped part-way.
func restoreSQL(out string) string {
	return fmt.Sprintf(`
CREATE TABLE datagen (
    event_type int,
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR>,
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `+"`dateTime`"+` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR>,
    `+"`dateTime`"+` AS CASE WHEN event_type = 0 THEN person.`+"`dateTime`"+` WHEN event_type = 1 THEN auction.`+"`dateTime`"+` ELSE bid.`+"`dateTime`"+` END,
    WATERMARK FOR `+"`dateTime`"+` AS `+"`dateTime`"+` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'first-event.rate' = '20000',
    'next-event.rate' = '20000',
    'events.num' = '%d',
    'max-emit-speed' = 'false',
    'first-event.time' = '2024-01-01 00:00:00'
);
CREATE TABLE out_events (event_type INT, id BIGINT, extra STRING, dt TIMESTAMP(3)) WITH (
    'connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO out_events
SELECT event_type, COALESCE(person.id, auction.id, bid.auction), COALESCE(person.extra, auction.extra, bid.extra), `+"`dateTime`"+`
FROM datagen;
`, restoreEvents, out)
}

// committedLines reads the committed files of a filesystem table.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			lines = append(lines, strings.Join(r, ","))
		}
	}
	return lines
}

// TestRescaledRestoreExactlyOnce: a job reading the nexmark source at
// parallelism 2 is stopped part-way; its final checkpoint is restored at
// parallelism 3 (the two splits are divided among three subtasks) and the
// job runs to the end. The committed output holds every event of the
// sequence exactly once, the same events as one uninterrupted reader
// generates.
func TestRescaledRestoreExactlyOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chkDir, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	conf := func(par string) map[string]string {
		return map[string]string{
			"parallelism.default":              par,
			"table.local-time-zone":            "UTC",
			"execution.checkpointing.interval": "100 ms",
			"state.checkpoints.dir":            "file://" + chkDir,
			"pipeline.name":                    "nexmark-rescale",
		}
	}
	// start submits the job and returns it running (Session.Execute would
	// wait for it).
	start := func(s *session.Session) *session.Job {
		stmts, err := parser.ParseScript(restoreSQL(out))
		if err != nil {
			t.Fatal(err)
		}
		var job *session.Job
		for _, st := range stmts {
			r, err := s.ExecuteStatement(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			job = r.Job
		}
		return job
	}
	s1, err := session.New(session.Options{Config: conf("2")})
	if err != nil {
		t.Fatal(err)
	}
	job := start(s1)
	// Stop once a checkpoint has completed: the source is then part-way
	// through its 3 s of events.
	for {
		if done, _ := filepath.Glob(filepath.Join(chkDir, "nexmark-rescale", "chk-*", "_metadata")); len(done) > 0 {
			break
		}
		select {
		case <-job.Done():
			t.Fatal("the first run ended before its first checkpoint")
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling the checkpoint directory
		}
	}
	if _, err := job.StopClean(ctx); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	first := len(committedLines(t, out))
	if first == 0 || first >= restoreEvents {
		t.Fatalf("the first run committed %d of %d events; the restore would prove nothing", first, restoreEvents)
	}
	chks, err := filepath.Glob(filepath.Join(chkDir, "nexmark-rescale", "chk-*"))
	if err != nil || len(chks) != 1 {
		t.Fatalf("retained checkpoints %v, %v", chks, err)
	}

	c := conf("3")
	c["execution.state-recovery.path"] = chks[0]
	s2, err := session.New(session.Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := start(s2).Wait(ctx); err != nil {
		t.Fatal(err)
	}

	got := committedLines(t, out)
	want := referenceLines(t)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("committed %d lines (%d before the restore), want the %d events once each\n%s", len(got), first, len(want), diff(got, want))
	}
}

// referenceLines renders the events of restoreSQL's table as the sink
// writes them.
func referenceLines(t *testing.T) []string {
	opts := map[string]string{
		"connector": "nexmark", "first-event.rate": "20000", "next-event.rate": "20000",
		"events.num": fmt.Sprint(restoreEvents), "first-event.time": "2024-01-01 00:00:00",
	}
	src, err := nx.NewFactory().CreateSource(&connectors.TableContext{Name: "datagen", Options: opts, Physical: nx.Schema, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.NewReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lines []string
	b := types.NewBatch(4, types.DefaultBatchSize)
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			kind := row[0].Int()
			nested := row[kind+1].RowOf()
			var id int64
			var extra string
			var dt int64
			switch kind {
			case nx.KindPerson:
				id, extra, dt = nested[0].Int(), nested[7].Str(), nested[6].Millis()
			case nx.KindAuction:
				id, extra, dt = nested[0].Int(), nested[9].Str(), nested[5].Millis()
			default:
				id, extra, dt = nested[0].Int(), nested[6].Str(), nested[5].Millis()
			}
			lines = append(lines, fmt.Sprintf("%d,%d,%s,%s", kind, id, extra, csvTimestamp(dt)))
		}
		if res.End {
			return lines
		}
	}
}

// csvTimestamp renders a TIMESTAMP(3) as the csv format writes it: the
// fraction without trailing zeros, none when it is zero.
func csvTimestamp(ms int64) string {
	s := ts(ms)
	i := strings.LastIndexByte(s, '.')
	frac := strings.TrimRight(s[i+1:], "0")
	if frac == "" {
		return s[:i]
	}
	return s[:i+1] + frac
}
