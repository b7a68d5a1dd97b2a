package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/monitor"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// env is a session with a monitor serving its jobs.
type env struct {
	t    *testing.T
	sess *session.Session
	srv  *monitor.Server
	base string // http://host:port of the REST API
	prom string // of /metrics
}

func newEnv(t *testing.T, conf map[string]string) *env {
	t.Helper()
	sess, err := session.New(session.Options{Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := monitor.Start(sess.Jobs(), monitor.Config{RESTAddress: "127.0.0.1", RESTPort: 0, PromAddress: "127.0.0.1", PromPort: 0,
		Version: "test", SampleInterval: 50 * time.Millisecond})
	if err != nil {
		sess.Close()
		t.Fatal(err)
	}
	// The server goes first: no request reaches a closing session.
	t.Cleanup(func() { sess.Close() })
	t.Cleanup(srv.Close)
	return &env{t: t, sess: sess, srv: srv, base: "http://" + srv.RESTAddr(), prom: "http://" + srv.PromAddr()}
}

// submit runs the statements and returns the job of the last INSERT.
func (e *env) submit(ctx context.Context, sql string) *session.Job {
	e.t.Helper()
	stmts, err := parser.ParseScript(sql)
	if err != nil {
		e.t.Fatal(err)
	}
	var job *session.Job
	for _, st := range stmts {
		r, err := e.sess.ExecuteStatement(ctx, st)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Job != nil {
			job = r.Job
		}
	}
	if job == nil {
		e.t.Fatal("no INSERT started a job")
	}
	return job
}

// call sends a request and decodes the JSON answer into out (when not
// nil); it returns the status code.
func (e *env) call(method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

func (e *env) get(path string, out any) {
	e.t.Helper()
	if code := e.call("GET", path, nil, out); code != http.StatusOK {
		e.t.Fatalf("GET %s: status %d", path, code)
	}
}

// await polls the REST API until cond holds (the condition is an event of
// the job: a checkpoint completing, a watermark arriving).
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

type vertexJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	Status      string `json:"status"`
	Metrics     struct {
		ReadRecords  int64 `json:"read-records"`
		WriteRecords int64 `json:"write-records"`
	} `json:"metrics"`
}

type jobJSON struct {
	JID         string       `json:"jid"`
	Name        string       `json:"name"`
	State       string       `json:"state"`
	IsStoppable bool         `json:"isStoppable"`
	Vertices    []vertexJSON `json:"vertices"`
	Plan        struct {
		Nodes []struct {
			ID     string `json:"id"`
			Inputs []struct {
				ID           string `json:"id"`
				ShipStrategy string `json:"ship_strategy"`
			} `json:"inputs"`
		} `json:"nodes"`
	} `json:"plan"`
}

type taskCheckpointJSON struct {
	CheckpointedSize int64 `json:"checkpointed_size"`
	StateSize        int64 `json:"state_size"`
	NumSubtasks      int   `json:"num_subtasks"`
	NumAcknowledged  int   `json:"num_acknowledged_subtasks"`
	Operators        []struct {
		Index     int    `json:"index"`
		StateSize int64  `json:"state_size"`
		Name      string `json:"name"`
	} `json:"operators"`
}

type checkpointJSON struct {
	ID               int64                         `json:"id"`
	Status           string                        `json:"status"`
	CheckpointedSize int64                         `json:"checkpointed_size"`
	StateSize        int64                         `json:"state_size"`
	EndToEnd         int64                         `json:"end_to_end_duration"`
	Trigger          int64                         `json:"trigger_timestamp"`
	LatestAck        int64                         `json:"latest_ack_timestamp"`
	ExternalPath     string                        `json:"external_path"`
	IsFinal          bool                          `json:"is_final"`
	NumSubtasks      int                           `json:"num_subtasks"`
	NumAcknowledged  int                           `json:"num_acknowledged_subtasks"`
	Tasks            map[string]taskCheckpointJSON `json:"tasks"`
}

type checkpointsJSON struct {
	Counts struct {
		Restored, Total, Completed, Failed int
		InProgress                         int `json:"in_progress"`
	} `json:"counts"`
	Latest struct {
		Completed *checkpointJSON `json:"completed"`
		Failed    *checkpointJSON `json:"failed"`
		Savepoint *struct {
			ExternalPath string `json:"external_path"`
		} `json:"savepoint"`
		Restored *struct {
			ID          int64 `json:"id"`
			IsSavepoint bool  `json:"is_savepoint"`
		} `json:"restored"`
	} `json:"latest"`
	History []checkpointJSON `json:"history"`
}

type operatorJSON struct {
	Vertex        string  `json:"vertex"`
	Index         int     `json:"index"`
	Name          string  `json:"name"`
	In            int64   `json:"numRecordsIn"`
	Out           int64   `json:"numRecordsOut"`
	OutPerSecond  float64 `json:"numRecordsOutPerSecond"`
	Watermark     int64   `json:"currentInputWatermark"`
	CheckpointNow int64   `json:"checkpointStateSize"`
}

// windowSQL is datagen → tumbling window → blackhole: rows of seq
// 1…5000 (bounded) at event time seq·10 ms, counted per key seq % 2 and
// 1 s window, on two subtasks.
const windowSQL = `
CREATE TABLE gen (seq BIGINT, k AS seq % 2, ts AS TO_TIMESTAMP_LTZ(seq * 10, 3), WATERMARK FOR ts AS ts) WITH (
  'connector' = 'datagen', 'fields.seq.kind' = 'sequence', 'fields.seq.start' = '1', 'fields.seq.end' = '5000',
  'rows-per-second' = '2000');
CREATE TABLE sink (k BIGINT, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sink SELECT k, window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY k, window_start, window_end;`

// TestRESTWindowJob follows a checkpointed datagen → window → blackhole
// job through the REST API while it runs and after it finished, and
// checks the figures against what the job did: the rows it generated and
// counted, the checkpoints it wrote (their _metadata on disk).
func TestRESTWindowJob(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, map[string]string{"execution.checkpointing.interval": "100 ms", "state.checkpoints.dir": dir,
		"pipeline.name": "rest-window", "state.checkpoints.num-retained": "1000", "parallelism.default": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := e.submit(ctx, windowSQL)
	id := job.ID

	var list struct {
		Jobs []struct{ ID, Status string } `json:"jobs"`
	}
	e.get("/jobs", &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != id || list.Jobs[0].Status != "RUNNING" {
		t.Fatalf("/jobs = %+v, want the one running job %s", list.Jobs, id)
	}
	var ov map[string]any
	e.get("/v1/overview", &ov)
	if ov["jobs-running"] != 1.0 || ov["jobs-finished"] != 0.0 {
		t.Errorf("/overview while running: %v", ov)
	}

	// While it runs: three completed checkpoints, each with its _metadata.
	var cps checkpointsJSON
	await(t, ctx, "3 completed checkpoints", func() bool {
		e.get("/jobs/"+id+"/checkpoints", &cps)
		return cps.Counts.Completed >= 3
	})
	lc := cps.Latest.Completed
	if lc == nil || lc.Status != "COMPLETED" || lc.NumAcknowledged != lc.NumSubtasks || lc.LatestAck < lc.Trigger ||
		lc.EndToEnd != lc.LatestAck-lc.Trigger {
		t.Fatalf("latest completed checkpoint: %+v", lc)
	}
	if cps.Counts.Total != cps.Counts.Completed+cps.Counts.Failed+cps.Counts.InProgress {
		t.Errorf("counts %+v: total is not completed + failed + in progress", cps.Counts)
	}
	st, err := checkpoint.OpenStorage(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mds, err := checkpoint.ListCheckpoints(ctx, st, "rest-window")
	if err != nil {
		t.Fatal(err)
	}
	var md *checkpoint.Metadata
	for _, m := range mds {
		if m.ID == lc.ID {
			md = m
		}
	}
	if md == nil {
		t.Fatalf("checkpoint %d of the REST API is not in %s (%d checkpoints there)", lc.ID, dir, len(mds))
	}
	if lc.StateSize != md.FullBytes || lc.CheckpointedSize != md.UploadedBytes {
		t.Errorf("checkpoint %d: REST state_size %d, checkpointed_size %d; its _metadata says full %d, uploaded %d",
			lc.ID, lc.StateSize, lc.CheckpointedSize, md.FullBytes, md.UploadedBytes)
	}
	if want := "chk-" + fmt.Sprint(lc.ID); !strings.HasSuffix(lc.ExternalPath, want) {
		t.Errorf("external_path %q, want it to end in %s", lc.ExternalPath, want)
	}
	// Per task and per operator: the sizes of the instances in _metadata.
	var details checkpointJSON
	e.get(fmt.Sprintf("/jobs/%s/checkpoints/details/%d", id, lc.ID), &details)
	// Operator ids are stable identities, not vertex positions: compare
	// the per-operator sums of _metadata with the operators of all tasks.
	perOp := map[string]int64{}
	for _, in := range md.Instances {
		perOp[in.Operator] += in.FullBytes
	}
	var want, got []int64
	for _, n := range perOp {
		want = append(want, n)
	}
	keyed := false
	for vid, task := range details.Tasks {
		var sum int64
		for _, o := range task.Operators {
			sum += o.StateSize
			got = append(got, o.StateSize)
			keyed = keyed || strings.Contains(o.Name, "Window")
		}
		if task.StateSize != sum {
			t.Errorf("task %s of checkpoint %d: state_size %d, its operators' %d", vid, lc.ID, task.StateSize, sum)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("checkpoint %d: per-operator state sizes %v in the REST details, %v in _metadata", lc.ID, got, want)
	}
	if !keyed {
		t.Errorf("no window operator among the per-operator checkpoint figures: %+v", details.Tasks)
	}

	// The graph: a source vertex feeding the window by a hash exchange
	// (or the window chained to it), each on two subtasks.
	var js jobJSON
	e.get("/jobs/"+id, &js)
	if js.JID != id || js.Name != "rest-window" || js.State != "RUNNING" || !js.IsStoppable || len(js.Vertices) == 0 ||
		len(js.Plan.Nodes) != len(js.Vertices) {
		t.Fatalf("/jobs/%s: %+v", id, js)
	}
	for _, v := range js.Vertices {
		if v.Parallelism != 2 || v.Status != "RUNNING" {
			t.Errorf("vertex %+v: want parallelism 2, RUNNING", v)
		}
	}
	last := js.Vertices[len(js.Vertices)-1]
	// The window's watermark advances as the job reads.
	await(t, ctx, "a watermark at the window", func() bool {
		var wms []struct{ ID, Value string }
		e.get("/jobs/"+id+"/vertices/"+last.ID+"/watermarks", &wms)
		if len(wms) != 2 || wms[0].ID != "0.currentInputWatermark" || wms[1].ID != "1.currentInputWatermark" {
			t.Fatalf("watermarks of vertex %s: %+v", last.ID, wms)
		}
		for _, w := range wms {
			var n int64
			fmt.Sscan(w.Value, &n)
			// Event time is seq·10 ms: 10 ms … 50 s after the epoch.
			if n < 10 || n > 50000 {
				return false
			}
		}
		return true
	})
	var bp struct {
		Status   string `json:"status"`
		Level    string `json:"backpressureLevel"`
		Subtasks []struct {
			Subtask                 int
			Ratio, IdleRatio, Busy  float64
			BackpressureLevel       string `json:"backpressureLevel"`
			IdleRatioJSON, BusyJSON float64
		} `json:"subtasks"`
	}
	e.get("/jobs/"+id+"/vertices/"+js.Vertices[0].ID+"/backpressure", &bp)
	if bp.Status != "ok" || len(bp.Subtasks) != 2 || (bp.Level != "ok" && bp.Level != "low" && bp.Level != "high") {
		t.Errorf("backpressure of the source vertex: %+v", bp)
	}

	if err := job.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Finished: every figure is final.
	e.get("/jobs/"+id, &js)
	if js.State != "FINISHED" {
		t.Fatalf("state after the input ended: %s", js.State)
	}
	src := js.Vertices[0]
	if src.Metrics.ReadRecords != 0 || src.Metrics.WriteRecords != 5000 {
		t.Errorf("source vertex read-records %d, write-records %d; want 0 (a source receives nothing) and 5000 rows sent",
			src.Metrics.ReadRecords, src.Metrics.WriteRecords)
	}
	if len(js.Vertices) > 1 {
		last = js.Vertices[len(js.Vertices)-1]
		if last.Metrics.ReadRecords != 5000 || last.Metrics.WriteRecords != 0 {
			t.Errorf("window vertex read-records %d, write-records %d; want 5000 rows received, 0 sent (it ends in the sink)",
				last.Metrics.ReadRecords, last.Metrics.WriteRecords)
		}
	}
	var ops struct {
		Operators []operatorJSON `json:"operators"`
	}
	e.get("/jobs/"+id+"/operators", &ops)
	var sinkIn int64 = -1
	for _, o := range ops.Operators {
		if strings.HasPrefix(o.Name, "Sink") {
			sinkIn = o.In
		}
	}
	// ts = seq·10 ms for seq 1…5000 covers 10 ms … 50 s: the 1 s windows
	// [0 s, 1 s) … [49 s, 50 s) hold seqs of both keys, [50 s, 51 s) only
	// seq 5000 (key 0): 50·2 + 1 rows.
	if sinkIn != 101 {
		t.Errorf("the sink received %d rows, want 101 (key, window) counts: %+v", sinkIn, ops.Operators)
	}
	e.get("/jobs/"+id+"/checkpoints", &cps)
	if len(cps.History) == 0 || !cps.History[0].IsFinal || cps.History[0].Status != "COMPLETED" || cps.Latest.Completed.ID != cps.History[0].ID {
		t.Errorf("after the end of input the newest checkpoint is the completed final one: %+v", cps.History)
	}
	if cps.Counts.InProgress != 0 || cps.Counts.Completed < 4 {
		t.Errorf("counts after the end: %+v", cps.Counts)
	}
	e.get("/overview", &ov)
	if ov["jobs-running"] != 0.0 || ov["jobs-finished"] != 1.0 {
		t.Errorf("/overview after the end: %v", ov)
	}
	var ex struct {
		Root    *string `json:"root-exception"`
		History struct {
			Entries []any `json:"entries"`
		} `json:"exceptionHistory"`
	}
	e.get("/jobs/"+id+"/exceptions", &ex)
	if ex.Root != nil || len(ex.History.Entries) != 0 {
		t.Errorf("exceptions of a job that finished: %+v", ex)
	}
}

// unboundedSQL is the window job on an endless datagen.
const unboundedSQL = `
CREATE TABLE gen (k INT, ts AS LOCALTIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (
  'connector' = 'datagen', 'rows-per-second' = '2000', 'fields.k.min' = '1', 'fields.k.max' = '50');
CREATE TABLE sink (k INT, ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO sink SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY k, window_start, window_end;`

// TestRESTStopWithSavepoint: POST /jobs/:id/stop stops a running job with
// a savepoint (Flink's trigger-id protocol), which lies where the
// operation says; the job then reports FINISHED with every row the
// sources sent received downstream.
func TestRESTStopWithSavepoint(t *testing.T) {
	dir, spDir := t.TempDir(), t.TempDir()
	e := newEnv(t, map[string]string{"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": dir, "parallelism.default": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := e.submit(ctx, unboundedSQL)
	id := job.ID
	var cps checkpointsJSON
	await(t, ctx, "a completed checkpoint", func() bool {
		e.get("/jobs/"+id+"/checkpoints", &cps)
		return cps.Counts.Completed >= 1
	})
	// A format flinksql does not write is refused, naming the allowed one.
	var errs struct {
		Errors []string `json:"errors"`
	}
	if code := e.call("POST", "/jobs/"+id+"/stop", map[string]any{"formatType": "NATIVE"}, &errs); code != http.StatusBadRequest ||
		len(errs.Errors) != 1 || !strings.Contains(errs.Errors[0], "'CANONICAL'") {
		t.Errorf("stop with formatType NATIVE: %d %v", code, errs)
	}
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if code := e.call("POST", "/jobs/"+id+"/stop", map[string]any{"targetDirectory": spDir, "drain": false}, &trig); code != http.StatusAccepted || trig.RequestID == "" {
		t.Fatalf("POST /jobs/%s/stop: %d %+v", id, code, trig)
	}
	var op struct {
		Status struct {
			ID string `json:"id"`
		} `json:"status"`
		Operation struct {
			Location     string `json:"location"`
			FailureCause any    `json:"failure-cause"`
		} `json:"operation"`
	}
	await(t, ctx, "the savepoint", func() bool {
		e.get("/jobs/"+id+"/savepoints/"+trig.RequestID, &op)
		return op.Status.ID == "COMPLETED"
	})
	if op.Operation.FailureCause != nil || !strings.HasPrefix(op.Operation.Location, "file://"+spDir) && !strings.HasPrefix(op.Operation.Location, spDir) {
		t.Fatalf("savepoint operation: %+v, want a location in %s", op, spDir)
	}
	loc := strings.TrimPrefix(op.Operation.Location, "file://")
	if _, err := os.Stat(filepath.Join(loc, checkpoint.MetadataName)); err != nil {
		t.Errorf("the savepoint's metadata: %v", err)
	}
	var js jobJSON
	e.get("/jobs/"+id, &js)
	if js.State != "FINISHED" {
		t.Errorf("state after the stop: %s", js.State)
	}
	if len(js.Vertices) > 1 {
		sent, got := js.Vertices[0].Metrics.WriteRecords, js.Vertices[len(js.Vertices)-1].Metrics.ReadRecords
		if sent == 0 || sent != got {
			t.Errorf("the source sent %d rows, the window received %d: a stop with savepoint processes everything read", sent, got)
		}
	}
	e.get("/jobs/"+id+"/checkpoints", &cps)
	if cps.Latest.Savepoint == nil || cps.Latest.Savepoint.ExternalPath != op.Operation.Location {
		t.Errorf("latest savepoint in the checkpoint statistics: %+v, want %s", cps.Latest.Savepoint, op.Operation.Location)
	}
	if code := e.call("GET", "/jobs/"+id+"/savepoints/nope", nil, &errs); code != http.StatusNotFound {
		t.Errorf("unknown trigger id: %d", code)
	}
}

// TestRESTCancel: PATCH /jobs/:id cancels; other modes are refused, and
// unknown jobs are 404 with Flink's error shape.
func TestRESTCancel(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := e.submit(ctx, unboundedSQL)
	id := job.ID
	var errs struct {
		Errors []string `json:"errors"`
	}
	if code := e.call("PATCH", "/jobs/"+id+"?mode=stop", nil, &errs); code != http.StatusBadRequest || len(errs.Errors) != 1 ||
		!strings.Contains(errs.Errors[0], "'cancel'") {
		t.Errorf("PATCH mode=stop: %d %v", code, errs)
	}
	if code := e.call("PATCH", "/jobs/"+id+"?mode=cancel", nil, nil); code != http.StatusAccepted {
		t.Fatalf("PATCH mode=cancel: %d", code)
	}
	<-job.Done()
	var js jobJSON
	e.get("/jobs/"+id, &js)
	if js.State != "CANCELED" {
		t.Errorf("state after cancel: %s", js.State)
	}
	if code := e.call("PATCH", "/jobs/"+id, nil, &errs); code != http.StatusConflict {
		t.Errorf("cancelling a cancelled job: %d", code)
	}
	if code := e.call("GET", "/jobs/0123", nil, &errs); code != http.StatusNotFound || len(errs.Errors) != 1 || !strings.Contains(errs.Errors[0], "0123") {
		t.Errorf("unknown job: %d %v", code, errs)
	}
	// Without checkpointing there are no checkpoint statistics.
	if code := e.call("GET", "/jobs/"+id+"/checkpoints", nil, &errs); code != http.StatusNotFound {
		t.Errorf("checkpoints of a job without checkpointing: %d", code)
	}
	if code := e.call("GET", "/jobs/"+id+"/checkpoints/config", nil, &errs); code != http.StatusNotFound {
		t.Errorf("checkpoint config of a job without checkpointing: %d", code)
	}
}

// TestRESTCheckpointConfig: /jobs/:id/checkpoints/config reports the
// checkpoint options the job was started with in Flink's
// CheckpointConfigInfo fields: durations in ms, the mode in lower case,
// RETAIN_ON_CANCELLATION as externalized and kept on cancellation, Flink's
// class names of the backend and the storage.
func TestRESTCheckpointConfig(t *testing.T) {
	e := newEnv(t, map[string]string{
		"execution.checkpointing.interval": "250 ms", "execution.checkpointing.mode": "AT_LEAST_ONCE",
		"execution.checkpointing.timeout": "2 min", "execution.checkpointing.min-pause": "50 ms",
		"execution.checkpointing.tolerable-failed-checkpoints":      "3",
		"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		"state.backend.type": "rocksdb", "state.checkpoints.dir": t.TempDir(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := e.submit(ctx, unboundedSQL)
	defer func() { job.Stop(); <-job.Done() }()
	var got map[string]any
	e.get("/v1/jobs/"+job.ID+"/checkpoints/config", &got)
	want := map[string]any{
		"mode": "at_least_once", "interval": 250.0, "timeout": 120000.0, "min_pause": 50.0, "max_concurrent": 1.0,
		"tolerable_failed_checkpoints": 3.0,
		"externalization":              map[string]any{"enabled": true, "delete_on_cancellation": false},
		"state_backend":                "EmbeddedRocksDBStateBackend", "checkpoint_storage": "FileSystemCheckpointStorage",
		"unaligned_checkpoints": false, "aligned_checkpoint_timeout": 0.0, "checkpoints_after_tasks_finish": true,
		"state_changelog_enabled": false, "changelog_storage": "memory", "changelog_periodic_materialization_interval": 600000.0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("checkpoints/config = %v\nwant %v", got, want)
	}
}

// TestRESTExceptions: a job whose every attempt fails (a NULL into a NOT
// NULL column) is restarted twice and fails; its exception history holds
// the three failures, newest first, and the root exception is the last.
func TestRESTExceptions(t *testing.T) {
	e := newEnv(t, map[string]string{"restart-strategy.type": "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "2", "restart-strategy.fixed-delay.delay": "10 ms"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := e.submit(ctx, `
CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'values', 'data' = '
1,a
,b
');
CREATE TABLE out_nn (id INT NOT NULL, name STRING) WITH ('connector' = 'blackhole');
INSERT INTO out_nn SELECT id, name FROM src;`)
	<-job.Done()
	var ex struct {
		Root      string `json:"root-exception"`
		Timestamp int64  `json:"timestamp"`
		History   struct {
			Entries []struct {
				Stacktrace string `json:"stacktrace"`
				Timestamp  int64  `json:"timestamp"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	e.get("/jobs/"+job.ID+"/exceptions", &ex)
	const cause = "Column 'id' is NOT NULL, however, a null value is being written into it."
	if len(ex.History.Entries) != 3 {
		t.Fatalf("exception history: %+v, want the 3 failed attempts", ex.History.Entries)
	}
	for i, en := range ex.History.Entries {
		if !strings.Contains(en.Stacktrace, cause) {
			t.Errorf("exception %d: %s", i, en.Stacktrace)
		}
		if i > 0 && en.Timestamp > ex.History.Entries[i-1].Timestamp {
			t.Errorf("exceptions not newest first: %+v", ex.History.Entries)
		}
	}
	if !strings.Contains(ex.Root, cause) || !strings.Contains(ex.Root, "after 2 restarts") || ex.Timestamp != ex.History.Entries[0].Timestamp {
		t.Errorf("root exception %q at %d", ex.Root, ex.Timestamp)
	}
	var js jobJSON
	e.get("/jobs/"+job.ID, &js)
	if js.State != "FAILED" {
		t.Errorf("state: %s", js.State)
	}
}
