package integration_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	iceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/table"
)

// TestIcebergKillAndResume runs a bounded job writing an Iceberg table in a
// process of its own and kills it: first at each fault point of the
// two-phase commit (before and after the pre-commit, after the checkpoint
// completed but before the commit, right after the commit), then twice at
// random moments after a checkpoint; each run resumes from the latest
// completed checkpoint, until one finishes. The table, read with
// iceberg-go's own scan, must hold every id exactly once; its snapshots
// form one chain with sequence numbers 1, 2, … and checkpoint ids that
// increase, and every data file a snapshot references exists. The sink
// runs two writers (parallelism 2) and one committer.
func TestIcebergKillAndResume(t *testing.T) {
	const rows = 6000
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	wh := filepath.Join(dir, "warehouse")
	script := filepath.Join(dir, "job.sql")
	sql := fmt.Sprintf(`
SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = '%s';
SET 'pipeline.name' = 'iceberg-kill-and-resume';
SET 'parallelism.default' = '2';
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '3000',
  'number-of-rows' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d',
  'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE ice (id BIGINT, k INT) WITH ('connector' = 'iceberg', 'catalog-name' = 'hc',
  'catalog-type' = 'hadoop', 'warehouse' = 'file://%s', 'catalog-database' = 'db', 'catalog-table' = 'ids');
INSERT INTO ice SELECT id, k FROM gen;
`, filepath.Join(dir, "checkpoints"), rows, rows-1, wh)
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fault runs die by themselves inside the two-phase commit of
	// their second checkpoint; the random ones are killed after their
	// first; the last one finishes (runDrill, the crash drill's runner).
	var plan []drillRun
	for _, p := range []string{"before-precommit", "after-precommit", "after-complete", "during-commit"} {
		plan = append(plan, drillRun{fault: p})
	}
	plan = append(plan, drillRun{random: true}, drillRun{random: true}, drillRun{})
	tmp := filepath.Join(dir, "tmp")
	mkdir(t, tmp)
	st := runDrill(t, bin, script, tmp, plan, 18, nil, func() string { return "" })
	if st.loss != "" {
		t.Fatalf("the job reported lost output: %s", st.loss)
	}
	if st.faultKills != 4 || st.randomKills != 2 {
		t.Fatalf("%d fault kills and %d random kills, want 4 and 2", st.faultKills, st.randomKills)
	}
	tbl, ids := readIcebergIDs(t, wh, table.Identifier{"db", "ids"})
	checkExactlyOnce(t, ids, rows)
	checkIcebergSnapshots(t, tbl)
	// Two writers, one committer: a snapshot holds at most one data file
	// per writer, and the checkpoints while both had rows hold two.
	both := 0
	for _, s := range tbl.Metadata().Snapshots() {
		n, err := strconv.Atoi(s.Summary.Properties["added-data-files"])
		if err != nil || n < 1 || n > 2 {
			t.Fatalf("snapshot %d adds %q data files, want 1 or 2 (one per writer)", s.SequenceNumber, s.Summary.Properties["added-data-files"])
		}
		if n == 2 {
			both++
		}
	}
	if both == 0 {
		t.Fatalf("no snapshot has data files of both writers (%d snapshots)", len(tbl.Metadata().Snapshots()))
	}
}

// readIcebergIDs scans the table's first column (BIGINT ids).
func readIcebergIDs(t *testing.T, wh string, ident table.Identifier) (*table.Table, []int) {
	t.Helper()
	cat, err := hadoop.NewCatalog("check", "file://"+wh, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var ids []int
	for tr.Next() {
		col := tr.RecordBatch().Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			ids = append(ids, int(col.Value(i)))
		}
	}
	slices.Sort(ids)
	return tbl, ids
}

// checkIcebergSnapshots checks that the snapshots form one chain with
// sequence numbers 1..n, each an append whose flink.max-committed-checkpoint-id
// grows within a job id, and that every data file they reference exists.
func checkIcebergSnapshots(t *testing.T, tbl *table.Table) {
	t.Helper()
	var chain []*table.Snapshot
	for s := tbl.CurrentSnapshot(); s != nil; {
		chain = append([]*table.Snapshot{s}, chain...)
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	if len(chain) != len(tbl.Metadata().Snapshots()) {
		t.Fatalf("%d snapshots, %d in the current chain", len(tbl.Metadata().Snapshots()), len(chain))
	}
	last := map[string]int64{}
	for i, s := range chain {
		if s.SequenceNumber != int64(i+1) {
			t.Errorf("snapshot %d has sequence number %d", i+1, s.SequenceNumber)
		}
		job := s.Summary.Properties["flink.job-id"]
		ckp, err := strconv.ParseInt(s.Summary.Properties["flink.max-committed-checkpoint-id"], 10, 64)
		if err != nil || job == "" {
			t.Fatalf("snapshot %d summary %v", i+1, s.Summary)
		}
		if prev, ok := last[job]; ok && ckp <= prev {
			t.Errorf("snapshot %d: checkpoint %d of job %s after checkpoint %d", i+1, ckp, job, prev)
		}
		last[job] = ckp
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		f, err := fs.Open(task.File.FilePath())
		if err != nil {
			t.Errorf("referenced data file: %v", err)
			continue
		}
		f.Close()
		n++
	}
	t.Logf("%d snapshots, %d data files, %d job ids", len(chain), n, len(last))
}

// TestIcebergUpsertKillAndResume is the crash drill of upsert mode: an
// updating query (a GROUP BY over a keyed stream) writes a format-version 2
// table with a PRIMARY KEY (p, k), PARTITIONED BY (p), through two writers
// and one committer, and the
// process is killed at each fault point of the two-phase commit and twice
// at random, each run resuming from the latest completed checkpoint. The
// table, read with iceberg-go's own scan (which applies the equality
// deletes), must equal the query's final result worked out here from the
// input: for id 0..rows-1 and k = id % groups, p = k % 4, each k has
// rows/groups ids whose sum is the arithmetic series k, k+groups, ….
func TestIcebergUpsertKillAndResume(t *testing.T) {
	const rows, groups = 15000, 20 // 5 s of input at 3 000 rows/s: enough left for the random kills after the fault runs
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	wh := filepath.Join(dir, "warehouse")
	script := filepath.Join(dir, "job.sql")
	sql := fmt.Sprintf(`
SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = '%s';
SET 'pipeline.name' = 'iceberg-upsert-kill-and-resume';
SET 'parallelism.default' = '2';
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '3000',
  'number-of-rows' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d');
CREATE TABLE totals (p BIGINT, k BIGINT, cnt BIGINT, total BIGINT, PRIMARY KEY (p, k) NOT ENFORCED)
  PARTITIONED BY (p) WITH ('connector' = 'iceberg',
  'catalog-name' = 'hc', 'catalog-type' = 'hadoop', 'warehouse' = 'file://%s', 'catalog-database' = 'db',
  'catalog-table' = 'totals', 'format-version' = '2');
INSERT INTO totals SELECT k %% 4, k, COUNT(*), SUM(id) FROM (SELECT id, id %% %d AS k FROM gen) GROUP BY k %% 4, k;
`, filepath.Join(dir, "checkpoints"), rows, rows-1, wh, groups)
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	var plan []drillRun
	for _, p := range []string{"before-precommit", "after-precommit", "after-complete", "during-commit"} {
		plan = append(plan, drillRun{fault: p})
	}
	plan = append(plan, drillRun{random: true}, drillRun{random: true}, drillRun{})
	tmp := filepath.Join(dir, "tmp")
	mkdir(t, tmp)
	st := runDrill(t, bin, script, tmp, plan, 19, nil, func() string { return "" })
	if st.loss != "" {
		t.Fatalf("the job reported lost output: %s", st.loss)
	}
	if st.faultKills != 4 || st.randomKills != 2 {
		t.Fatalf("%d fault kills and %d random kills, want 4 and 2", st.faultKills, st.randomKills)
	}

	want := map[int64][2]int64{}
	const per = rows / groups
	for k := int64(0); k < groups; k++ {
		// k + (k+groups) + … + (k+(per-1)·groups)
		want[k] = [2]int64{per, per*k + groups*per*(per-1)/2}
	}
	cat, err := hadoop.NewCatalog("check", "file://"+wh, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "totals"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	got := map[int64][2]int64{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ps, ks, cnts, totals := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64), rec.Column(3).(*array.Int64)
		for i := 0; i < ks.Len(); i++ {
			if ps.Value(i) != ks.Value(i)%4 {
				t.Errorf("key %d in partition %d", ks.Value(i), ps.Value(i))
			}
			if prev, dup := got[ks.Value(i)]; dup {
				t.Errorf("key %d read twice: %v and [%d %d]", ks.Value(i), prev, cnts.Value(i), totals.Value(i))
			}
			got[ks.Value(i)] = [2]int64{cnts.Value(i), totals.Value(i)}
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("table holds\n%v\nwant\n%v", got, want)
	}
	checkIcebergSnapshots(t, tbl)
	// The equality deletes are partitioned like the rows they delete.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	fid := spec.Field(0).FieldID
	for _, task := range tasks {
		for _, d := range task.EqualityDeleteFiles {
			if got, want := d.Partition()[fid], task.File.Partition()[fid]; got != want {
				t.Errorf("data file of partition %v has a delete file of partition %v", want, got)
			}
		}
	}
	// Each snapshot is one checkpoint's row delta: every key it touched
	// gets one equality delete (removing the key's earlier row) and, as
	// COUNT never falls back to zero here, one new row.
	for _, s := range tbl.Metadata().Snapshots() {
		p := s.Summary.Properties
		added, _ := strconv.Atoi(p["added-records"])
		dels, _ := strconv.Atoi(p["added-equality-deletes"])
		if added != dels || dels == 0 {
			t.Errorf("snapshot %d adds %d rows and %d equality deletes, want as many deletes as rows, > 0 (summary %v)", s.SequenceNumber, added, dels, p)
		}
	}
}
