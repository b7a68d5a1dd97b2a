package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/jobs"
)

// The metrics have the names Flink's Prometheus reporter gives them: the
// scope (flink_jobmanager_job, flink_taskmanager_job_task,
// flink_taskmanager_job_task_operator) joined to the metric's name by
// '_', with the scope's variables as labels (job_id, job_name, task_id,
// task_name, subtask_index, operator_id, operator_name, …), so Grafana
// dashboards made for Flink read them. As that reporter does, counters
// are exported as gauges (a Flink counter may go down) and meters as the
// gauge of their per-second rate. Only running jobs are reported, as
// Flink unregisters the metrics of a job that ended.
//
// The collector reads the runtime's counters when Prometheus scrapes:
// nothing is added to the data path.

type collector struct {
	sup     *jobs.Supervisor
	sampler *sampler
	host    string
}

var (
	jobLabels      = []string{"host", "job_id", "job_name"}
	taskLabels     = []string{"host", "tm_id", "job_id", "job_name", "task_id", "task_name", "task_attempt_id", "task_attempt_num", "subtask_index"}
	operatorLabels = append(append([]string(nil), taskLabels...), "operator_id", "operator_name")
)

func desc(scope, name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(scope+"_"+name, help, labels, nil)
}

const (
	jobScope      = "flink_jobmanager_job"
	taskScope     = "flink_taskmanager_job_task"
	operatorScope = "flink_taskmanager_job_task_operator"
)

var (
	dLastCkptDuration = desc(jobScope, "lastCheckpointDuration", "How long it took to complete the last checkpoint (in milliseconds).", jobLabels)
	dLastCkptSize     = desc(jobScope, "lastCheckpointSize", "The checkpointed size of the last checkpoint (in bytes): what it uploaded.", jobLabels)
	dLastCkptFullSize = desc(jobScope, "lastCheckpointFullSize", "The full size of the last checkpoint (in bytes).", jobLabels)
	dCompleted        = desc(jobScope, "numberOfCompletedCheckpoints", "The number of successfully completed checkpoints.", jobLabels)
	dFailed           = desc(jobScope, "numberOfFailedCheckpoints", "The number of failed checkpoints.", jobLabels)
	dInProgress       = desc(jobScope, "numberOfInProgressCheckpoints", "The number of in progress checkpoints.", jobLabels)
	dTotal            = desc(jobScope, "totalNumberOfCheckpoints", "The number of total checkpoints (in progress, completed, failed).", jobLabels)
	dRestoreTS        = desc(jobScope, "lastCheckpointRestoreTimestamp", "Timestamp when the last checkpoint was restored at the coordinator (in milliseconds).", jobLabels)
	dRestarts         = desc(jobScope, "numRestarts", "The total number of restarts since this job was submitted.", jobLabels)
	dUptime           = desc(jobScope, "uptime", "The time that the job has been running without interruption (in milliseconds).", jobLabels)

	dTaskIn      = desc(taskScope, "numRecordsIn", "The total number of records this task has received.", taskLabels)
	dTaskOut     = desc(taskScope, "numRecordsOut", "The total number of records this task has emitted.", taskLabels)
	dTaskInRate  = desc(taskScope, "numRecordsInPerSecond", "The number of records this task receives per second.", taskLabels)
	dTaskOutRate = desc(taskScope, "numRecordsOutPerSecond", "The number of records this task sends per second.", taskLabels)
	dTaskWM      = desc(taskScope, "currentInputWatermark", "The last watermark this task has received (in milliseconds).", taskLabels)
	dBackPress   = desc(taskScope, "backPressuredTimeMsPerSecond", "The time (in milliseconds) this task is back pressured per second.", taskLabels)
	dIdle        = desc(taskScope, "idleTimeMsPerSecond", "The time (in milliseconds) this task is idle (has no data to process) per second.", taskLabels)
	dBusy        = desc(taskScope, "busyTimeMsPerSecond", "The time (in milliseconds) this task is busy (neither idle nor back pressured) per second.", taskLabels)
	dIsBP        = desc(taskScope, "isBackPressured", "Whether the task is back pressured (1) or not (0).", taskLabels)

	dOpIn      = desc(operatorScope, "numRecordsIn", "The total number of records this operator has received.", operatorLabels)
	dOpOut     = desc(operatorScope, "numRecordsOut", "The total number of records this operator has emitted.", operatorLabels)
	dOpInRate  = desc(operatorScope, "numRecordsInPerSecond", "The number of records this operator receives per second.", operatorLabels)
	dOpOutRate = desc(operatorScope, "numRecordsOutPerSecond", "The number of records this operator sends per second.", operatorLabels)
	dOpWM      = desc(operatorScope, "currentInputWatermark", "The last watermark this operator has received (in milliseconds).", operatorLabels)
	dOpOutWM   = desc(operatorScope, "currentOutputWatermark", "The last watermark this operator has emitted (in milliseconds).", operatorLabels)
	dOpLate    = desc(operatorScope, "numLateRecordsDropped", "The number of records this operator has dropped due to arriving late.", operatorLabels)
	dOpState   = desc(operatorScope, "stateSize", "flinksql: the bytes of this operator instance's keyed state (in memory plus on disk), measured at its last checkpoint.", operatorLabels)
	dLagMax    = desc(operatorScope, "KafkaSourceReader_KafkaConsumer_records_lag_max", "The maximum lag in terms of number of records for any partition of this source subtask.", operatorLabels)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dLastCkptDuration, dLastCkptSize, dLastCkptFullSize, dCompleted, dFailed, dInProgress, dTotal,
		dRestoreTS, dRestarts, dUptime, dTaskIn, dTaskOut, dTaskInRate, dTaskOutRate, dTaskWM, dBackPress, dIdle, dBusy, dIsBP,
		dOpIn, dOpOut, dOpInRate, dOpOutRate, dOpWM, dOpOutWM, dOpLate, dOpState, dLagMax} {
		ch <- d
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, info := range c.sup.List() {
		if info.Status != "RUNNING" {
			continue
		}
		rj, ok := c.sup.Lookup(info.ID)
		if !ok {
			continue
		}
		st := rj.Status()
		jl := []string{c.host, st.ID, st.Name}
		gauge(ch, dRestarts, float64(st.Restarts), jl...)
		gauge(ch, dUptime, float64(st.UptimeMillis()), jl...)
		if cs, on := rj.CheckpointStats(); on {
			gauge(ch, dCompleted, float64(cs.Completed), jl...)
			gauge(ch, dFailed, float64(cs.Failed), jl...)
			gauge(ch, dInProgress, float64(cs.InProgress), jl...)
			gauge(ch, dTotal, float64(cs.Triggered), jl...)
			// Flink's gauges read -1 before the first completed checkpoint.
			dur, size, full := -1.0, -1.0, -1.0
			if lc := cs.LatestCompleted; lc != nil {
				dur, size, full = float64(lc.EndToEnd().Milliseconds()), float64(lc.CheckpointedSize), float64(lc.StateSize)
			}
			gauge(ch, dLastCkptDuration, dur, jl...)
			gauge(ch, dLastCkptSize, size, jl...)
			gauge(ch, dLastCkptFullSize, full, jl...)
			restored := -1.0
			if rs := cs.LatestRestored; rs != nil {
				restored = float64(rs.At.UnixMilli())
			}
			gauge(ch, dRestoreTS, restored, jl...)
		}
		c.collectTasks(ch, st)
	}
}

func (c *collector) collectTasks(ch chan<- prometheus.Metric, st jobs.Status) {
	rt := c.sampler.ratesOf(st.ID)
	attempt := strconv.Itoa(st.Restarts)
	for vi, v := range st.Graph.Vertices {
		m := st.Metrics[vi]
		taskID := vertexID(v)
		for sub := range v.Parallelism {
			subIdx := strconv.Itoa(sub)
			tl := []string{c.host, "flinksql", st.ID, st.Name, taskID, v.Name, st.ID + "-" + taskID + "-" + subIdx + "-" + attempt, attempt, subIdx}
			ol := func(id, name string) []string { return append(append([]string(nil), tl...), id, name) }
			if len(m.Operators) > 0 {
				first, last := m.Operators[0].Subtasks[sub], m.Operators[len(m.Operators)-1].Subtasks[sub]
				gauge(ch, dTaskIn, float64(first.RowsIn), tl...)
				gauge(ch, dTaskOut, float64(last.RowsOut), tl...)
				gauge(ch, dTaskInRate, rt.subtaskRate(false, vi, 0, sub), tl...)
				gauge(ch, dTaskOutRate, rt.subtaskRate(true, vi, len(m.Operators)-1, sub), tl...)
				gauge(ch, dTaskWM, float64(first.Watermark), tl...)
			}
			bp, idle, _ := rt.taskTimes(vi, sub)
			gauge(ch, dBackPress, bp, tl...)
			gauge(ch, dIdle, idle, tl...)
			gauge(ch, dBusy, max(0, 1000-bp-idle), tl...)
			isBP := 0.0
			if bp > 0 {
				isBP = 1
			}
			gauge(ch, dIsBP, isBP, tl...)
			if v.Source != nil && sub < len(m.RowsReadBySubtask) {
				l := ol(string(sourceOperatorID(v)), "Source: "+v.Name)
				gauge(ch, dOpOut, float64(m.RowsReadBySubtask[sub]), l...)
				if sub < len(m.SourceLagMax) && m.SourceLagMax[sub] >= 0 {
					gauge(ch, dLagMax, float64(m.SourceLagMax[sub]), l...)
				}
			}
			for oi, op := range m.Operators {
				sm := op.Subtasks[sub]
				l := ol("v"+taskID+"-"+strconv.Itoa(oi), op.Name)
				gauge(ch, dOpIn, float64(sm.RowsIn), l...)
				gauge(ch, dOpOut, float64(sm.RowsOut), l...)
				gauge(ch, dOpInRate, rt.subtaskRate(false, vi, oi, sub), l...)
				gauge(ch, dOpOutRate, rt.subtaskRate(true, vi, oi, sub), l...)
				gauge(ch, dOpWM, float64(sm.Watermark), l...)
				if oi+1 < len(m.Operators) {
					gauge(ch, dOpOutWM, float64(m.Operators[oi+1].Subtasks[sub].Watermark), l...)
				}
				gauge(ch, dOpLate, float64(sm.LateRowsDropped), l...)
				if sz := sm.StateSize; sz != (exec.StateSize{}) {
					gauge(ch, dOpState, float64(sz.MemoryBytes+sz.DiskBytes), l...)
				}
			}
		}
	}
}

func sourceOperatorID(v *exec.Vertex) exec.OperatorID {
	return exec.OperatorID("v" + strconv.Itoa(v.ID) + "-source")
}
