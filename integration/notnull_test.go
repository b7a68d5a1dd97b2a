package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
)

// TestUpsertKafkaNullKey: a row whose primary key is NULL never reaches an
// upsert-kafka topic. By default (table.exec.sink.not-null-enforcer =
// ERROR) the job fails with Flink's message and writes nothing of the batch;
// with DROP the row is dropped and logged, and the topic holds exactly the
// other rows.
func TestUpsertKafkaNullKey(t *testing.T) {
	addr := startBroker(t, map[string]int32{"users": 1, "users2": 1})
	ddl := func(topic string) string {
		return fmt.Sprintf(`
CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'values', 'data' = '
1,a
,b
2,c
');
CREATE TABLE users (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s',
  'key.format' = 'json', 'value.format' = 'json');`, topic, addr)
	}

	s := newSession(t, nil)
	run(t, s, ddl("users"))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := s.Execute(ctx, "INSERT INTO users SELECT id, name FROM src;")
	if err == nil || !strings.Contains(err.Error(), "Column 'id' is NOT NULL, however, a null value is being written into it.") {
		t.Fatalf("ERROR: got %v, want the not-null violation of column id", err)
	}
	if recs := readAllUntilQuiet(t, addr, "users"); len(recs) != 0 {
		t.Fatalf("ERROR: the failed job wrote %d records", len(recs))
	}

	var log bytes.Buffer
	s2, err := session.New(session.Options{Stderr: &log, Config: map[string]string{
		"table.local-time-zone": "UTC", "table.exec.sink.not-null-enforcer": "DROP"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	run(t, s2, ddl("users2")+"\nINSERT INTO users SELECT id, name FROM src;")
	var got []string
	for _, r := range readAllUntilQuiet(t, addr, "users2") {
		got = append(got, string(r.Key)+"="+string(r.Value))
	}
	want := []string{`{"id":1}={"id":1,"name":"a"}`, `{"id":2}={"id":2,"name":"c"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DROP: topic holds %v, want %v", got, want)
	}
	if l := log.String(); !strings.Contains(l, "dropped a +I row with a NULL in NOT NULL column 'id' of sink table default_catalog.default_database.users") ||
		!strings.Contains(l, "1 rows with a NULL in a NOT NULL column of sink table default_catalog.default_database.users were dropped") {
		t.Errorf("DROP: the log does not tell of the dropped row:\n%s", l)
	}
}
