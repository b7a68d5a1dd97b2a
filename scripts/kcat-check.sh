#!/usr/bin/env bash
# kcat-check: a third-party Kafka client (kcat, librdkafka) reads what the
# flinksql `kafka` sink wrote to the embedded broker.
#
# Starts `flinksql broker` on a free port, runs a SQL file that writes rows
# from a `values` table through a filter and projection into a `kafka` sink
# with the json format, reads the topic with kcat (read_uncommitted and
# read_committed) and compares with the rows worked out by hand.
#
# Usage: scripts/kcat-check.sh            (builds flinksql from this checkout)
#        FLINKSQL=/path/to/flinksql scripts/kcat-check.sh
# Needs: go (unless FLINKSQL is set), kcat.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
broker_pid=""
cleanup() {
	if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "kcat-check: FAIL: $*" >&2
	if [ -s "$work/broker.err" ]; then
		echo "--- broker stderr:" >&2
		cat "$work/broker.err" >&2
	fi
	exit 1
}

command -v kcat >/dev/null || fail "kcat is not installed (apt-get install -y kcat)"

flinksql=${FLINKSQL:-}
if [ -z "$flinksql" ]; then
	flinksql="$work/flinksql"
	(cd "$root" && go build -o "$flinksql" ./cmd/flinksql) || fail "go build ./cmd/flinksql failed"
fi

# Start the broker on a free port and wait for the line it prints once
# clients can connect (a blocking read on a FIFO, no sleeps).
mkfifo "$work/broker.out"
"$flinksql" broker --listen 127.0.0.1:0 --partitions 1 >"$work/broker.out" 2>"$work/broker.err" &
broker_pid=$!
exec 3<"$work/broker.out"
line=""
read -r -t 30 line <&3 || fail "flinksql broker printed no listening line within 30 s"
case "$line" in
"Kafka broker listening on "*) addr=${line#Kafka broker listening on } ;;
*) fail "unexpected first line from flinksql broker: $line" ;;
esac
echo "kcat-check: broker listening on $addr"

topic=kcat_check
cat >"$work/write.sql" <<SQL
SET 'parallelism.default' = '1';

CREATE TABLE people (id INT, name STRING, active BOOLEAN, amount BIGINT)
WITH ('connector' = 'values', 'data' = '
1,alice,true,10
2,bob,false,
3,"carol, jr",TRUE,-7
4,dave,true,100
5,"say ""hi""",false,0
');

CREATE TABLE people_out (id INT, name STRING, active BOOLEAN, amount BIGINT)
WITH (
  'connector' = 'kafka',
  'topic' = '$topic',
  'properties.bootstrap.servers' = '$addr',
  'format' = 'json'
);

INSERT INTO people_out
SELECT id, UPPER(name), active, amount * 2 FROM people WHERE id <> 4;
SQL

"$flinksql" -f "$work/write.sql" >"$work/write.out" 2>&1 ||
	fail "flinksql -f write.sql failed:
$(cat "$work/write.out")"

# Worked out by hand: row 4 is filtered out; names upper-cased; amount
# doubled, NULL stays NULL (written as null: json.encode.ignore-null-fields
# is false by default); a quote inside a string is escaped. One partition,
# one writer: the order is the order of the rows.
cat >"$work/expected" <<'EOF'
{"id":1,"name":"ALICE","active":true,"amount":20}
{"id":2,"name":"BOB","active":false,"amount":null}
{"id":3,"name":"CAROL, JR","active":true,"amount":-14}
{"id":5,"name":"SAY \"HI\"","active":false,"amount":0}
EOF

for isolation in read_uncommitted read_committed; do
	kcat -C -b "$addr" -t "$topic" -e -q -o beginning -X isolation.level=$isolation -f '%s\n' \
		>"$work/got.$isolation" 2>"$work/kcat.err" ||
		fail "kcat ($isolation) failed: $(cat "$work/kcat.err")"
	if ! diff -u "$work/expected" "$work/got.$isolation" >"$work/diff"; then
		fail "kcat ($isolation) read other records than expected:
$(cat "$work/diff")"
	fi
	echo "kcat-check: $isolation: $(wc -l <"$work/got.$isolation") records as expected"
done

kill -TERM "$broker_pid"
status=0
wait "$broker_pid" || status=$?
broker_pid=""
exec 3<&-
[ "$status" -eq 0 ] || fail "flinksql broker exited with status $status on SIGTERM"
echo "kcat-check: OK"
