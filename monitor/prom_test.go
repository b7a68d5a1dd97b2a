package monitor_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics into metric families.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get(e.prom + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return mfs
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// series returns the values of a family's series whose labels match.
func series(mfs map[string]*dto.MetricFamily, name string, match map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range mfs[name].GetMetric() {
		ok := true
		for k, v := range match {
			if strings.HasPrefix(v, "~") {
				ok = ok && strings.Contains(label(m, k), v[1:])
			} else {
				ok = ok && label(m, k) == v
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// TestPrometheusMetrics scrapes /metrics of a running checkpointed window
// job: Flink's names and labels, checkpoint gauges equal to the REST API's
// statistics (taken before and after the scrape, with no checkpoint
// completing in between), per-operator records and rates of the window on
// both subtasks; a cancelled job's metrics go away, as in Flink.
func TestPrometheusMetrics(t *testing.T) {
	e := newEnv(t, map[string]string{"execution.checkpointing.interval": "100 ms", "state.checkpoints.dir": t.TempDir(), "parallelism.default": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := e.submit(ctx, unboundedSQL)
	id := job.ID
	jl := map[string]string{"job_id": id, "job_name": job.Name}
	var mfs map[string]*dto.MetricFamily
	var before checkpointsJSON
	await(t, ctx, "a scrape between two REST answers with the same completed checkpoints", func() bool {
		e.get("/jobs/"+id+"/checkpoints", &before)
		if before.Counts.Completed < 2 {
			return false
		}
		mfs = e.scrape()
		var after checkpointsJSON
		e.get("/jobs/"+id+"/checkpoints", &after)
		return after.Counts.Completed == before.Counts.Completed && after.Counts.Failed == before.Counts.Failed
	})
	gaugeOf := func(name string) float64 {
		t.Helper()
		s := series(mfs, name, jl)
		if len(s) != 1 {
			t.Fatalf("%s{job_id=%s}: %d series, want 1", name, id, len(s))
		}
		return s[0].GetGauge().GetValue()
	}
	lc := before.Latest.Completed
	for name, want := range map[string]float64{
		"flink_jobmanager_job_numberOfCompletedCheckpoints": float64(before.Counts.Completed),
		"flink_jobmanager_job_numberOfFailedCheckpoints":    float64(before.Counts.Failed),
		"flink_jobmanager_job_lastCheckpointSize":           float64(lc.CheckpointedSize),
		"flink_jobmanager_job_lastCheckpointFullSize":       float64(lc.StateSize),
		"flink_jobmanager_job_lastCheckpointDuration":       float64(lc.EndToEnd),
		"flink_jobmanager_job_numRestarts":                  0,
	} {
		if got := gaugeOf(name); got != want {
			t.Errorf("%s = %v, want %v (the REST API's statistics)", name, got, want)
		}
	}
	if lc.StateSize <= 0 {
		t.Errorf("the window's checkpoint is empty: %+v", lc)
	}
	// The window operator on both subtasks: records in and watermarks.
	win := map[string]string{"job_id": id, "operator_name": "~WindowAggregate"}
	in := series(mfs, "flink_taskmanager_job_task_operator_numRecordsIn", win)
	if len(in) != 2 || label(in[0], "subtask_index") == label(in[1], "subtask_index") {
		t.Fatalf("numRecordsIn of the window: %v, want one series per subtask", in)
	}
	var total float64
	for _, m := range in {
		total += m.GetGauge().GetValue()
		for _, l := range []string{"task_id", "task_name", "operator_id", "host", "tm_id", "task_attempt_num"} {
			if label(m, l) == "" {
				t.Errorf("numRecordsIn has no %s label: %v", l, m)
			}
		}
	}
	if total <= 0 {
		t.Errorf("the window received no rows: %v", in)
	}
	if late := series(mfs, "flink_taskmanager_job_task_operator_numLateRecordsDropped", win); len(late) != 2 {
		t.Errorf("numLateRecordsDropped of the window: %v", late)
	}
	// Rates and watermarks once the sampler has two samples of rows.
	await(t, ctx, "a rate and a watermark at the window", func() bool {
		m := e.scrape()
		rate, wm := 0.0, 0.0
		for _, s := range series(m, "flink_taskmanager_job_task_operator_numRecordsInPerSecond", win) {
			rate += s.GetGauge().GetValue()
		}
		for _, s := range series(m, "flink_taskmanager_job_task_operator_currentInputWatermark", win) {
			wm = s.GetGauge().GetValue()
		}
		// The watermark is processing time less 1 s: after 2020.
		return rate > 0 && wm > 1.6e12
	})
	if code := e.call("PATCH", "/jobs/"+id, nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	<-job.Done()
	if s := series(e.scrape(), "flink_jobmanager_job_numberOfCompletedCheckpoints", jl); len(s) != 0 {
		t.Errorf("a cancelled job is still reported: %v", s)
	}
}
