package session

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestTransactionTimeoutBudget (issue 9 item 6): an exactly-once Kafka
// sink's 'properties.transaction.timeout.ms' must outlive the checkpoint
// interval + execution.checkpointing.timeout × (1 + tolerable failures) +
// the restart strategy's longest delay; the error names the option and the
// value to set. Worked out by hand: 200 ms + 10 s × (1 + 2) + 5 s = 35 200 ms.
func TestTransactionTimeoutBudget(t *testing.T) {
	for _, tc := range []struct {
		timeoutMs string
		want      string // "" : not this error
	}{
		{timeoutMs: "35199", want: "kafka table default_catalog.default_database.sink_out: 'properties.transaction.timeout.ms' (35199 ms) is shorter than a transaction may have to stay open before its checkpoint commits it: " +
			"'execution.checkpointing.interval' (200ms) + 'execution.checkpointing.timeout' (10s) × (1 + 'execution.checkpointing.tolerable-failed-checkpoints' (2)) + 'restart-strategy.fixed-delay.delay' (5s) = 35200 ms; " +
			"the broker would abort such a transaction and its records would be lost. Set 'properties.transaction.timeout.ms' to at least '35200'"},
		{timeoutMs: "35200"},
	} {
		s, err := New(Options{Stdout: io.Discard, Stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		script := `
SET 'execution.checkpointing.interval' = '200 ms';
SET 'execution.checkpointing.timeout' = '10 s';
SET 'execution.checkpointing.tolerable-failed-checkpoints' = '2';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.delay' = '5 s';
SET 'state.checkpoints.dir' = '` + t.TempDir() + `';
CREATE TABLE src (x BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '1');
CREATE TABLE sink_out (x BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'out', 'format' = 'json',
  'properties.bootstrap.servers' = '127.0.0.1:1',
  'properties.request.timeout.ms' = '100',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'budget',
  'properties.transaction.timeout.ms' = '` + tc.timeoutMs + `');
INSERT INTO sink_out SELECT x FROM src;`
		_, err = s.Execute(context.Background(), script)
		s.Close()
		switch {
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("timeout %s: error %v, want %q", tc.timeoutMs, err, tc.want)
		case tc.want == "" && err != nil && strings.Contains(err.Error(), "is shorter than"):
			t.Errorf("timeout %s: %v", tc.timeoutMs, err)
		}
	}
}
