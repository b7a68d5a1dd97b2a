package integration_test

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
)

// userSchema is Flink's derived Avro schema of the users table's value
// columns, written out by hand: nullable columns are ["null", type].
const userSchema = `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
  {"name":"id","type":"long"},
  {"name":"name","type":["null","string"],"default":null},
  {"name":"balance","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
  {"name":"seen","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`

const userKeySchema = `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[{"name":"id","type":"long"}]}`

// TestAvroKafkaKeysAndValues: records written by another Avro
// implementation (hamba/avro's generic encoder, given the schema above) are
// read by a table with 'key.format' and 'value.format' = 'avro'; the table
// then writes them to another topic, which the generic decoder reads back.
func TestAvroKafkaKeysAndValues(t *testing.T) {
	addr := startBroker(t, map[string]int32{"users": 1, "users_copy": 1})
	vs := hamba.MustParse(userSchema)
	ks := hamba.MustParse(userKeySchema)
	var recs []rec
	for _, u := range []map[string]any{
		{"id": int64(1), "name": "alice", "balance": ratOf(12345, 2), "seen": time.UnixMilli(1700000000123).UTC()},
		{"id": int64(2), "name": nil, "balance": nil, "seen": nil},
	} {
		v, err := hamba.Marshal(vs, u)
		if err != nil {
			t.Fatal(err)
		}
		k, err := hamba.Marshal(ks, map[string]any{"id": u["id"]})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec{key: string(k), value: string(v)})
	}
	produce(t, addr, "users", recs...)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE users (id BIGINT NOT NULL, name STRING, balance DECIMAL(10, 2), seen TIMESTAMP(3)) WITH (
  'connector' = 'kafka', 'topic' = 'users', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'key.format' = 'avro', 'key.fields' = 'id', 'value.format' = 'avro');
CREATE TABLE users_copy (id BIGINT NOT NULL, name STRING, balance DECIMAL(10, 2), seen TIMESTAMP(3)) WITH (
  'connector' = 'kafka', 'topic' = 'users_copy', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'avro', 'key.fields' = 'id', 'value.format' = 'avro');`, addr))
	got, err := query(t, s, "SELECT * FROM users")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"+I[1, alice, 123.45, 2023-11-14 22:13:20.123]", "+I[2, NULL, NULL, NULL]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	run(t, s, "INSERT INTO users_copy SELECT * FROM users;")
	out := readAll(t, addr, "users_copy", 2)
	var lines []string
	for _, r := range out {
		var k, v map[string]any
		if err := hamba.Unmarshal(ks, r.Key, &k); err != nil {
			t.Fatal(err)
		}
		if err := hamba.Unmarshal(vs, r.Value, &v); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("key %v value %v %v %v %v", k["id"], v["id"], v["name"], v["balance"], v["seen"]))
	}
	wantOut := []string{
		"key 1 value 1 alice 2469/20 2023-11-14 22:13:20.123 +0000 UTC",
		"key 2 value 2 <nil> <nil> <nil>",
	}
	if strings.Join(lines, "\n") != strings.Join(wantOut, "\n") {
		t.Errorf("written\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantOut, "\n"))
	}
}

func ratOf(unscaled int64, scale int) *big.Rat {
	den := big.NewInt(1)
	for i := 0; i < scale; i++ {
		den.Mul(den, big.NewInt(10))
	}
	return new(big.Rat).SetFrac(big.NewInt(unscaled), den)
}
