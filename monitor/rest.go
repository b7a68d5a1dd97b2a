package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/jobs"
	"github.com/flinksql/flinksql/state"
)

// The REST API follows Flink's (docs: REST API, "Dispatcher"): the same
// paths, with or without the /v1 prefix, and the same JSON field names
// where Flink has the figure. Vertex ids are the job graph's vertex
// numbers (Flink's are random hex ids: clients treat both as opaque).
// What Flink has and flinksql does not measure (bytes over the network)
// is reported as 0 with the "-complete" flag false. Errors are Flink's
// {"errors": ["..."]} with the status Flink uses.

type restAPI struct {
	sup     *jobs.Supervisor
	sampler *sampler
	version string
	now     func() time.Time

	// Savepoint operations triggered through the API (POST …/stop and
	// …/savepoints), by trigger id; ops own their goroutines.
	mu  sync.Mutex
	ops map[string]*operation
	wg  sync.WaitGroup
	ctx context.Context
}

// operation is an asynchronous savepoint (Flink's trigger id protocol).
type operation struct {
	job      string
	done     bool
	location string
	err      error
}

func (a *restAPI) routes(mux *http.ServeMux) {
	handle := func(pattern string, h http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+path, h)
		mux.HandleFunc(method+" /v1"+path, h)
	}
	handle("GET /config", a.config)
	handle("GET /overview", a.overview)
	handle("GET /jobs", a.jobsList)
	handle("GET /jobs/overview", a.jobsOverview)
	handle("GET /jobs/{id}", a.job)
	handle("PATCH /jobs/{id}", a.cancel)
	handle("GET /jobs/{id}/checkpoints", a.checkpoints)
	handle("GET /jobs/{id}/checkpoints/config", a.checkpointConfig)
	handle("GET /jobs/{id}/checkpoints/details/{cid}", a.checkpointDetails)
	handle("GET /jobs/{id}/exceptions", a.exceptions)
	handle("GET /jobs/{id}/vertices/{vid}", a.vertex)
	handle("GET /jobs/{id}/vertices/{vid}/watermarks", a.watermarks)
	handle("GET /jobs/{id}/vertices/{vid}/backpressure", a.backpressure)
	handle("GET /jobs/{id}/vertices/{vid}/metrics", a.vertexMetrics)
	handle("POST /jobs/{id}/stop", a.stop)
	handle("POST /jobs/{id}/savepoints", a.triggerSavepoint)
	handle("GET /jobs/{id}/savepoints/{tid}", a.savepointStatus)
	handle("GET /jobs/{id}/operators", a.operators)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string][]string{"errors": {fmt.Sprintf(format, args...)}})
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func (a *restAPI) lookup(w http.ResponseWriter, r *http.Request) (*jobs.Job, bool) {
	id := r.PathValue("id")
	rj, ok := a.sup.Lookup(id)
	if !ok {
		writeError(w, http.StatusNotFound, "Job %s not found.", id)
	}
	return rj, ok
}

func (a *restAPI) config(w http.ResponseWriter, r *http.Request) {
	now := a.now()
	name, off := now.Zone()
	writeJSON(w, http.StatusOK, map[string]any{
		"refresh-interval": 3000, "timezone-name": name, "timezone-offset": off * 1000,
		"flink-version": a.version, "flink-revision": "flinksql",
		"features": map[string]bool{"web-submit": false, "web-cancel": true, "web-rescale": false, "web-history": false},
	})
}

func (a *restAPI) overview(w http.ResponseWriter, r *http.Request) {
	counts := map[string]int{}
	for _, j := range a.sup.List() {
		counts[j.Status]++
	}
	// One process runs every task: one "task manager", whose slots are
	// not a limit (every subtask is a goroutine).
	writeJSON(w, http.StatusOK, map[string]any{
		"taskmanagers": 1, "slots-total": 0, "slots-available": 0,
		"jobs-running": counts["RUNNING"], "jobs-finished": counts["FINISHED"],
		"jobs-cancelled": counts["CANCELED"], "jobs-failed": counts["FAILED"],
		"flink-version": a.version, "flink-commit": "",
	})
}

func (a *restAPI) jobsList(w http.ResponseWriter, r *http.Request) {
	type entry struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	out := []entry{}
	for _, j := range a.sup.List() {
		out = append(out, entry{j.ID, j.Status})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func (a *restAPI) jobsOverview(w http.ResponseWriter, r *http.Request) {
	out := []map[string]any{}
	for _, info := range a.sup.List() {
		rj, ok := a.sup.Lookup(info.ID)
		if !ok {
			continue
		}
		st := rj.Status()
		out = append(out, map[string]any{
			"jid": st.ID, "name": st.Name, "state": st.State,
			"start-time": millis(st.Start), "end-time": millis(st.End), "duration": a.duration(st),
			"last-modification": millis(lastModification(st)), "tasks": taskCounts(st),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func lastModification(st jobs.Status) time.Time {
	if !st.End.IsZero() {
		return st.End
	}
	return st.Start
}

func (a *restAPI) duration(st jobs.Status) int64 {
	end := st.End
	if end.IsZero() {
		end = a.now()
	}
	return end.Sub(st.Start).Milliseconds()
}

// taskCounts are Flink's per-state task counts: every task of a job is
// in the job's state (flinksql does not track subtasks separately).
func taskCounts(st jobs.Status) map[string]int {
	total := 0
	for _, v := range st.Graph.Vertices {
		total += v.Parallelism
	}
	counts := map[string]int{"total": total}
	for _, s := range []string{"created", "scheduled", "deploying", "running", "finished", "canceling", "canceled", "failed", "reconciling", "initializing"} {
		counts[s] = 0
	}
	counts[strings.ToLower(st.State)] = total
	return counts
}

// vertexIO is a vertex's records as Flink counts them: read-records are
// records received from upstream tasks (0 for sources), write-records
// records sent to downstream tasks (0 for a vertex ending in a sink).
func vertexIO(st jobs.Status, vi int) (read, write int64) {
	v := st.Graph.Vertices[vi]
	m := st.Metrics[vi]
	if v.Source == nil && len(m.Operators) > 0 {
		read = m.Operators[0].RowsIn
	}
	consumed := false
	for _, other := range st.Graph.Vertices {
		for _, in := range other.Inputs {
			consumed = consumed || in.From == v.ID
		}
	}
	if consumed {
		if n := len(m.Operators); n > 0 {
			write = m.Operators[n-1].RowsOut
		} else {
			write = m.RowsRead
		}
	}
	return read, write
}

func vertexID(v *exec.Vertex) string { return strconv.Itoa(v.ID) }

func (a *restAPI) job(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	var vertices, nodes []map[string]any
	for vi, v := range st.Graph.Vertices {
		read, write := vertexIO(st, vi)
		var bp, idle time.Duration
		for _, tt := range st.Metrics[vi].Tasks {
			bp += tt.BackPressured
			idle += tt.Idle
		}
		busy := time.Duration(v.Parallelism)*time.Duration(a.duration(st))*time.Millisecond - bp - idle
		vertices = append(vertices, map[string]any{
			"id": vertexID(v), "name": v.Name, "maxParallelism": st.MaxParallelism, "parallelism": v.Parallelism,
			"status": st.State, "start-time": millis(st.Start), "end-time": millis(st.End), "duration": a.duration(st),
			"tasks": map[string]int{st.State: v.Parallelism},
			"metrics": map[string]any{
				"read-bytes": 0, "read-bytes-complete": false, "write-bytes": 0, "write-bytes-complete": false,
				"read-records": read, "read-records-complete": true, "write-records": write, "write-records-complete": true,
				"accumulated-backpressured-time": bp.Milliseconds(), "accumulated-idle-time": idle.Milliseconds(),
				"accumulated-busy-time": max(busy, 0).Milliseconds(),
			},
		})
		var inputs []map[string]any
		for n, in := range v.Inputs {
			inputs = append(inputs, map[string]any{"num": n, "id": strconv.Itoa(in.From),
				"ship_strategy": in.Partitioner.Kind.String(), "exchange": "pipelined_bounded"})
		}
		node := map[string]any{"id": vertexID(v), "parallelism": v.Parallelism, "operator": "", "operator_strategy": "",
			"description": v.Name, "optimizer_properties": map[string]any{}}
		if len(inputs) > 0 {
			node["inputs"] = inputs
		}
		nodes = append(nodes, node)
	}
	timestamps := map[string]int64{"INITIALIZING": millis(st.Start), "CREATED": millis(st.Start), "RUNNING": millis(st.Start)}
	if !st.End.IsZero() {
		timestamps[st.State] = millis(st.End)
	}
	total := 0
	for _, v := range st.Graph.Vertices {
		total += v.Parallelism
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"jid": st.ID, "name": st.Name, "isStoppable": st.Stoppable, "state": st.State, "job-type": "STREAMING",
		"start-time": millis(st.Start), "end-time": millis(st.End), "duration": a.duration(st), "maxParallelism": st.MaxParallelism,
		"now": a.now().UnixMilli(), "timestamps": timestamps, "vertices": vertices,
		"status-counts": map[string]int{st.State: len(st.Graph.Vertices)},
		"plan":          map[string]any{"jid": st.ID, "name": st.Name, "type": "STREAMING", "nodes": nodes},
	})
}

// vertexIndex finds the vertex of the path's {vid}.
func (a *restAPI) vertexIndex(w http.ResponseWriter, r *http.Request, st jobs.Status) (int, bool) {
	vid := r.PathValue("vid")
	for vi, v := range st.Graph.Vertices {
		if vertexID(v) == vid {
			return vi, true
		}
	}
	writeError(w, http.StatusNotFound, "Job %s has no vertex %s.", st.ID, vid)
	return 0, false
}

func (a *restAPI) vertex(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	vi, ok := a.vertexIndex(w, r, st)
	if !ok {
		return
	}
	v := st.Graph.Vertices[vi]
	m := st.Metrics[vi]
	var subtasks []map[string]any
	for i := range v.Parallelism {
		var read, write int64
		if v.Source == nil && len(m.Operators) > 0 {
			read = m.Operators[0].Subtasks[i].RowsIn
		}
		if n := len(m.Operators); n > 0 {
			write = m.Operators[n-1].Subtasks[i].RowsOut
		}
		subtasks = append(subtasks, map[string]any{
			"subtask": i, "status": st.State, "attempt": st.Restarts, "endpoint": "localhost", "start-time": millis(st.Start),
			"end-time": millis(st.End), "duration": a.duration(st),
			"metrics": map[string]any{"read-records": read, "read-records-complete": true, "write-records": write, "write-records-complete": true,
				"read-bytes": 0, "read-bytes-complete": false, "write-bytes": 0, "write-bytes-complete": false},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": vertexID(v), "name": v.Name, "parallelism": v.Parallelism,
		"maxParallelism": st.MaxParallelism, "now": a.now().UnixMilli(), "subtasks": subtasks})
}

func (a *restAPI) watermarks(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	vi, ok := a.vertexIndex(w, r, st)
	if !ok {
		return
	}
	out := []map[string]string{}
	if ops := st.Metrics[vi].Operators; len(ops) > 0 {
		// The input watermark of a task is the one its first operator
		// received (Flink's currentInputWatermark of the task).
		for i, sm := range ops[0].Subtasks {
			out = append(out, map[string]string{"id": strconv.Itoa(i) + ".currentInputWatermark", "value": strconv.FormatInt(sm.Watermark, 10)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// backpressureLevel is Flink's classification of a backpressured-time
// ratio: up to 10 % ok, up to 50 % low, above high.
func backpressureLevel(ratio float64) string {
	switch {
	case ratio <= 0.10:
		return "ok"
	case ratio <= 0.5:
		return "low"
	}
	return "high"
}

func (a *restAPI) backpressure(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	vi, ok := a.vertexIndex(w, r, st)
	if !ok {
		return
	}
	rt := a.sampler.ratesOf(st.ID)
	var subtasks []map[string]any
	worst := 0.0
	for i := range st.Graph.Vertices[vi].Parallelism {
		bp, idle, _ := rt.taskTimes(vi, i)
		ratio := bp / 1000
		worst = max(worst, ratio)
		subtasks = append(subtasks, map[string]any{"subtask": i, "attempt-number": st.Restarts,
			"backpressureLevel": backpressureLevel(ratio), "ratio": ratio, "idleRatio": idle / 1000,
			"busyRatio": max(0, 1-ratio-idle/1000)})
	}
	end := a.now()
	if rt != nil {
		end = rt.at
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "backpressureLevel": backpressureLevel(worst),
		"end-timestamp": end.UnixMilli(), "subtasks": subtasks})
}

// vertexMetrics is Flink's metric query of a vertex: without ?get the
// list of metric ids, with ?get=a,b their values (as strings).
func (a *restAPI) vertexMetrics(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	vi, ok := a.vertexIndex(w, r, st)
	if !ok {
		return
	}
	all := vertexMetricValues(st, vi, a.sampler.ratesOf(st.ID))
	get := r.URL.Query().Get("get")
	if get == "" {
		out := []map[string]string{}
		for _, m := range all {
			out = append(out, map[string]string{"id": m.id})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	byID := map[string]string{}
	for _, m := range all {
		byID[m.id] = m.value
	}
	out := []map[string]string{}
	for _, id := range strings.Split(get, ",") {
		if v, ok := byID[id]; ok {
			out = append(out, map[string]string{"id": id, "value": v})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type metricValue struct{ id, value string }

func vertexMetricValues(st jobs.Status, vi int, rt *rates) []metricValue {
	var out []metricValue
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	ops := st.Metrics[vi].Operators
	for sub := range st.Graph.Vertices[vi].Parallelism {
		p := strconv.Itoa(sub) + "."
		if len(ops) > 0 {
			first, last := ops[0].Subtasks[sub], ops[len(ops)-1].Subtasks[sub]
			out = append(out,
				metricValue{p + "numRecordsIn", n(first.RowsIn)},
				metricValue{p + "numRecordsOut", n(last.RowsOut)},
				metricValue{p + "numRecordsInPerSecond", f(rt.subtaskRate(false, vi, 0, sub))},
				metricValue{p + "numRecordsOutPerSecond", f(rt.subtaskRate(true, vi, len(ops)-1, sub))},
				metricValue{p + "currentInputWatermark", n(first.Watermark)})
		}
		bp, idle, _ := rt.taskTimes(vi, sub)
		out = append(out, metricValue{p + "backPressuredTimeMsPerSecond", f(bp)}, metricValue{p + "idleTimeMsPerSecond", f(idle)},
			metricValue{p + "busyTimeMsPerSecond", f(max(0, 1000-bp-idle))})
		for oi, op := range ops {
			sm := op.Subtasks[sub]
			q := p + op.Name + "."
			out = append(out,
				metricValue{q + "numRecordsIn", n(sm.RowsIn)}, metricValue{q + "numRecordsOut", n(sm.RowsOut)},
				metricValue{q + "numRecordsInPerSecond", f(rt.subtaskRate(false, vi, oi, sub))},
				metricValue{q + "numRecordsOutPerSecond", f(rt.subtaskRate(true, vi, oi, sub))},
				metricValue{q + "currentInputWatermark", n(sm.Watermark)},
				metricValue{q + "numLateRecordsDropped", n(sm.LateRowsDropped)})
		}
	}
	return out
}

// operators is flinksql's own endpoint (Flink has no per-operator
// summary): every chained operator with its records, rates, watermark,
// late records and state size, live and in the latest completed
// checkpoint. The dashboard reads it.
func (a *restAPI) operators(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	rt := a.sampler.ratesOf(st.ID)
	cps, _ := rj.CheckpointStats()
	checkpointed := map[string]jobs.OperatorCheckpoint{}
	if cps.LatestCompleted != nil {
		for _, o := range cps.LatestCompleted.Operators {
			checkpointed[fmt.Sprintf("%d/%d", o.Vertex, o.Index)] = o
		}
	}
	out := []map[string]any{}
	for vi, v := range st.Graph.Vertices {
		m := st.Metrics[vi]
		if v.Source != nil {
			src := map[string]any{"vertex": vertexID(v), "index": -1, "name": "Source: " + v.Name, "numRecordsOut": m.RowsRead,
				"numRecordsOutPerSecond": rateOrZero(rt, vi), "currentOutputWatermark": m.SourceWatermark}
			if c, ok := checkpointed[fmt.Sprintf("%d/-1", v.ID)]; ok {
				src["checkpointedStateSize"], src["checkpointStateSize"] = c.CheckpointedSize, c.StateSize
			}
			out = append(out, src)
		}
		for oi, op := range m.Operators {
			e := map[string]any{"vertex": vertexID(v), "index": oi, "name": op.Name,
				"numRecordsIn": op.RowsIn, "numRecordsOut": op.RowsOut,
				"numRecordsInPerSecond": rt.opRate(false, vi, oi), "numRecordsOutPerSecond": rt.opRate(true, vi, oi),
				"currentInputWatermark": op.Watermark, "numLateRecordsDropped": op.LateRowsDropped,
				"stateEntries": op.StateSize.Entries, "stateMemoryBytes": op.StateSize.MemoryBytes, "stateDiskBytes": op.StateSize.DiskBytes}
			if c, ok := checkpointed[fmt.Sprintf("%d/%d", v.ID, oi)]; ok {
				e["checkpointedStateSize"], e["checkpointStateSize"] = c.CheckpointedSize, c.StateSize
			}
			out = append(out, e)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"operators": out})
}

func rateOrZero(rt *rates, vi int) float64 {
	if rt == nil || vi >= len(rt.read) {
		return 0
	}
	return rt.read[vi]
}

func summaryJSON(s jobs.Summary) map[string]any {
	return map[string]any{"min": s.Min, "max": s.Max, "avg": s.Avg()}
}

func (a *restAPI) checkpointJSON(st jobs.Status, c jobs.CheckpointRecord, details bool) map[string]any {
	class := "completed"
	switch c.Status {
	case jobs.CheckpointInProgress:
		class = "in_progress"
	case jobs.CheckpointFailed:
		class = "failed"
	}
	m := map[string]any{
		"className": class, "id": c.ID, "status": c.Status, "is_savepoint": false, "savepointFormat": nil,
		"checkpoint_type": "CHECKPOINT", "trigger_timestamp": millis(c.Trigger), "latest_ack_timestamp": millis(c.LatestAck),
		"checkpointed_size": c.CheckpointedSize, "state_size": c.StateSize, "end_to_end_duration": c.EndToEnd().Milliseconds(),
		"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0,
		"num_subtasks": c.NumSubtasks, "num_acknowledged_subtasks": c.NumAcknowledged,
		// flinksql's: whether the checkpoint reused files of earlier ones
		// (rocksdb's incremental checkpoints), and whether it is the final
		// one of the job.
		"is_incremental": c.Incremental, "is_final": c.Final,
	}
	if c.Final {
		m["checkpoint_type"] = "CHECKPOINT" // Flink's final checkpoints are ordinary ones too
	}
	switch c.Status {
	case jobs.CheckpointCompleted:
		m["external_path"], m["discarded"] = c.ExternalPath, false
	case jobs.CheckpointFailed:
		m["failure_timestamp"], m["failure_message"] = millis(c.Failure), c.FailureMessage
	}
	tasks := map[string]any{}
	ops := map[int][]map[string]any{}
	for _, v := range st.Graph.Vertices {
		t := map[string]any{"id": c.ID, "status": c.Status, "latest_ack_timestamp": millis(c.LatestAck),
			"checkpointed_size": int64(0), "state_size": int64(0), "end_to_end_duration": c.EndToEnd().Milliseconds(),
			"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0,
			"num_subtasks": v.Parallelism, "num_acknowledged_subtasks": 0}
		if c.Status == jobs.CheckpointCompleted {
			t["num_acknowledged_subtasks"] = v.Parallelism
		}
		tasks[vertexID(v)] = t
	}
	for _, o := range c.Operators {
		t, ok := tasks[strconv.Itoa(o.Vertex)].(map[string]any)
		if !ok {
			continue
		}
		t["checkpointed_size"] = t["checkpointed_size"].(int64) + o.CheckpointedSize
		t["state_size"] = t["state_size"].(int64) + o.StateSize
		ops[o.Vertex] = append(ops[o.Vertex], map[string]any{"index": o.Index, "name": o.Name, "subtasks": o.Subtasks,
			"checkpointed_size": o.CheckpointedSize, "state_size": o.StateSize,
			"sync_duration": o.Sync.Milliseconds(), "async_duration": o.Async.Milliseconds()})
	}
	if details {
		// flinksql's: the figures of each chained operator of the task.
		for vid, list := range ops {
			tasks[strconv.Itoa(vid)].(map[string]any)["operators"] = list
		}
	}
	m["tasks"] = tasks
	return m
}

func (a *restAPI) checkpoints(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	cs, on := rj.CheckpointStats()
	if !on {
		// Flink answers a job without checkpointing with an error.
		writeError(w, http.StatusNotFound, "Checkpointing has not been enabled for job %s.", st.ID)
		return
	}
	latest := map[string]any{"completed": nil, "savepoint": nil, "failed": nil, "restored": nil}
	if c := cs.LatestCompleted; c != nil {
		latest["completed"] = a.checkpointJSON(st, *c, false)
	}
	if c := cs.LatestFailed; c != nil {
		latest["failed"] = a.checkpointJSON(st, *c, false)
	}
	if sp := cs.LatestSavepoint; sp != nil {
		latest["savepoint"] = map[string]any{"className": "completed", "id": sp.CheckpointID, "status": jobs.CheckpointCompleted,
			"is_savepoint": true, "savepointFormat": "CANONICAL", "checkpoint_type": "SAVEPOINT",
			"latest_ack_timestamp": millis(sp.At), "external_path": sp.Path, "discarded": false}
	}
	if rs := cs.LatestRestored; rs != nil {
		latest["restored"] = map[string]any{"id": rs.ID, "restore_timestamp": millis(rs.At), "is_savepoint": rs.Savepoint,
			"external_path": rs.ExternalPath}
	}
	history := []map[string]any{}
	for _, c := range cs.History {
		history = append(history, a.checkpointJSON(st, c, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"counts": map[string]int{"restored": cs.Restored, "total": cs.Triggered, "in_progress": cs.InProgress,
			"completed": cs.Completed, "failed": cs.Failed},
		"summary": map[string]any{"checkpointed_size": summaryJSON(cs.CheckpointedSize), "state_size": summaryJSON(cs.StateSize),
			"end_to_end_duration": summaryJSON(cs.EndToEnd),
			"alignment_buffered":  summaryJSON(jobs.Summary{}), "processed_data": summaryJSON(jobs.Summary{}),
			"persisted_data": summaryJSON(jobs.Summary{})},
		"latest":  latest,
		"history": history,
	})
}

// checkpointConfig answers Flink's /jobs/:id/checkpoints/config
// (CheckpointConfigInfo). The fields for features flinksql does not have
// (unaligned checkpoints, the changelog state backend) carry the values
// Flink reports with them off.
func (a *restAPI) checkpointConfig(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	cs, on := rj.CheckpointSettings()
	if !on {
		writeError(w, http.StatusNotFound, "Checkpointing is not enabled for this job (%s).", rj.ID())
		return
	}
	mode := "exactly_once"
	if cs.AtLeastOnce {
		mode = "at_least_once"
	}
	// Flink's coordinator holds Long.MAX_VALUE as the interval of a job
	// without periodic checkpoints.
	interval := int64(math.MaxInt64)
	if cs.Interval > 0 {
		interval = cs.Interval.Milliseconds()
	}
	backend := "HashMapStateBackend"
	if cs.Backend == state.RocksDB {
		backend = "EmbeddedRocksDBStateBackend"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"mode": mode, "interval": interval, "timeout": cs.Timeout.Milliseconds(), "min_pause": cs.MinPause.Milliseconds(),
		"max_concurrent": cs.MaxConcurrent, "tolerable_failed_checkpoints": cs.TolerableFailures,
		// As Flink: retained unless NO_EXTERNALIZED_CHECKPOINTS, deleted on
		// cancellation unless RETAIN_ON_CANCELLATION.
		"externalization": map[string]bool{
			"enabled":                cs.Retention != "NO_EXTERNALIZED_CHECKPOINTS",
			"delete_on_cancellation": cs.Retention != "RETAIN_ON_CANCELLATION",
		},
		"state_backend": backend, "checkpoint_storage": "FileSystemCheckpointStorage",
		"unaligned_checkpoints": false, "aligned_checkpoint_timeout": 0,
		"checkpoints_after_tasks_finish": true, // flinksql takes a final checkpoint when bounded sources end
		"state_changelog_enabled":        false, "changelog_storage": "memory",
		"changelog_periodic_materialization_interval": (10 * time.Minute).Milliseconds(),
	})
}

func (a *restAPI) checkpointDetails(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	cs, _ := rj.CheckpointStats()
	cid, err := strconv.ParseInt(r.PathValue("cid"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad checkpoint id '%s': not a number.", r.PathValue("cid"))
		return
	}
	for _, c := range cs.History {
		if c.ID == cid {
			writeJSON(w, http.StatusOK, a.checkpointJSON(st, c, true))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Could not find checkpointing statistics for checkpoint %d.", cid)
}

func (a *restAPI) exceptions(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	st := rj.Status()
	entries := []map[string]any{}
	all := []map[string]any{}
	for _, e := range st.Exceptions {
		entries = append(entries, map[string]any{"exceptionName": "JobException", "stacktrace": e.Message,
			"timestamp": millis(e.Time), "taskName": nil, "location": nil, "endpoint": nil, "taskManagerId": nil,
			"failureLabels": map[string]string{}, "concurrentExceptions": []any{}})
		all = append(all, map[string]any{"exception": e.Message, "task": "", "location": "", "timestamp": millis(e.Time), "taskManagerId": ""})
	}
	out := map[string]any{"all-exceptions": all, "truncated": false,
		"exceptionHistory": map[string]any{"entries": entries, "truncated": false}}
	if len(st.Exceptions) > 0 {
		out["root-exception"], out["timestamp"] = st.Exceptions[0].Message, millis(st.Exceptions[0].Time)
	}
	writeJSON(w, http.StatusOK, out)
}

// cancel is PATCH /jobs/:id?mode=cancel (Flink's only mode left).
func (a *restAPI) cancel(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	if mode := r.URL.Query().Get("mode"); mode != "" && mode != "cancel" {
		writeError(w, http.StatusBadRequest, "Invalid value '%s' for the query parameter 'mode': the allowed value is 'cancel' (stop a job with POST /jobs/%s/stop).", mode, rj.ID())
		return
	}
	if st := rj.Status(); st.State != "RUNNING" {
		writeError(w, http.StatusConflict, "Job %s is %s: it cannot be cancelled.", rj.ID(), st.State)
		return
	}
	rj.Cancel()
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// decodeBody reads a JSON request body into v, refusing unknown fields;
// an empty body leaves v as it is.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func checkFormat(formatType string) error {
	if formatType != "" && formatType != "CANONICAL" {
		return fmt.Errorf("Unsupported savepoint format type '%s': flinksql writes savepoints in the 'CANONICAL' format only.", formatType)
	}
	return nil
}

// savepointFields are the fields Flink's stop and savepoint requests share.
type savepointFields struct {
	TriggerID  string `json:"triggerId"`
	FormatType string `json:"formatType"`
}

// decodeSavepointBody reads a stop or savepoint request into body, whose
// shared fields are f, and checks its format type; it answers the request
// with the error and returns false when either is wrong.
func decodeSavepointBody(w http.ResponseWriter, r *http.Request, body any, f *savepointFields, what string) bool {
	if err := decodeBody(r, body); err != nil {
		writeError(w, http.StatusBadRequest, "Request body is not a valid %s request: %v", what, err)
		return false
	}
	if err := checkFormat(f.FormatType); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return false
	}
	return true
}

// stop is POST /jobs/:id/stop: stop with a savepoint, asynchronously
// (its result under GET /jobs/:id/savepoints/:triggerid).
func (a *restAPI) stop(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	var body struct {
		TargetDirectory string `json:"targetDirectory"`
		Drain           bool   `json:"drain"`
		savepointFields
	}
	if !decodeSavepointBody(w, r, &body, &body.savepointFields, "stop") {
		return
	}
	a.start(w, rj, body.TriggerID, func(ctx context.Context) (string, error) {
		sp, err := rj.StopWithSavepoint(ctx, body.TargetDirectory, body.Drain)
		if err != nil {
			return "", err
		}
		return sp.Path, nil
	})
}

// triggerSavepoint is POST /jobs/:id/savepoints: a savepoint of the
// running job, which goes on unless cancel-job.
func (a *restAPI) triggerSavepoint(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	var body struct {
		TargetDirectory string `json:"target-directory"`
		CancelJob       bool   `json:"cancel-job"`
		savepointFields
	}
	if !decodeSavepointBody(w, r, &body, &body.savepointFields, "savepoint") {
		return
	}
	a.start(w, rj, body.TriggerID, func(ctx context.Context) (string, error) {
		sp, err := rj.TriggerSavepoint(ctx, body.TargetDirectory)
		if err != nil {
			return "", err
		}
		if body.CancelJob {
			rj.Cancel()
		}
		return sp.Path, nil
	})
}

// start runs a savepoint operation and answers with its trigger id.
func (a *restAPI) start(w http.ResponseWriter, rj *jobs.Job, tid string, run func(context.Context) (string, error)) {
	if tid == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		tid = hex.EncodeToString(b[:])
	}
	op := &operation{job: rj.ID()}
	a.mu.Lock()
	if _, dup := a.ops[tid]; dup {
		a.mu.Unlock()
		writeError(w, http.StatusConflict, "An operation with trigger id %s already exists.", tid)
		return
	}
	a.ops[tid] = op
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		loc, err := run(a.ctx)
		a.mu.Lock()
		op.done, op.location, op.err = true, loc, err
		a.mu.Unlock()
	}()
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": tid})
}

func (a *restAPI) savepointStatus(w http.ResponseWriter, r *http.Request) {
	rj, ok := a.lookup(w, r)
	if !ok {
		return
	}
	tid := r.PathValue("tid")
	a.mu.Lock()
	op, found := a.ops[tid]
	var done bool
	var loc string
	var err error
	if found {
		done, loc, err = op.done, op.location, op.err
	}
	a.mu.Unlock()
	if !found || op.job != rj.ID() {
		writeError(w, http.StatusNotFound, "There is no savepoint operation with trigger id %s for job %s.", tid, rj.ID())
		return
	}
	if !done {
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}})
		return
	}
	operation := map[string]any{"location": loc}
	if err != nil {
		operation = map[string]any{"failure-cause": map[string]any{"class": "org.apache.flink.util.FlinkException",
			"stack-trace": err.Error(), "serialized-throwable": nil}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": operation})
}
