#!/usr/bin/env bash
# larger-than-memory.sh BACKEND KEYS ROWS BUDGET
#
# An unwindowed GROUP BY over KEYS distinct keys (COUNT(*), SUM, MAX per key)
# of ROWS datagen rows (id 0..ROWS-1, key = id % KEYS), checked by an outer
# aggregate whose one result row is worked out here in closed form, run
# under /usr/bin/time -v with state.backend.type = BACKEND and
# taskmanager.memory.managed.size = BUDGET. Prints the peak RSS, the CPU
# time and the per-core rows/s, and fails when the result is wrong.
#
#   scripts/larger-than-memory.sh rocksdb 50000000 100000000 256mb
set -euo pipefail
backend=${1:?backend}; keys=${2:?keys}; rows=${3:?rows}; budget=${4:-256mb}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/flinksql" ./cmd/flinksql
cat > "$work/job.sql" <<SQL
SET 'state.backend.type' = '$backend';
SET 'taskmanager.memory.managed.size' = '$budget';
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '20000';
CREATE TABLE src (id BIGINT, k AS id % $keys) WITH (
  'connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '$rows',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '$((rows - 1))');
CREATE TABLE res (nkeys BIGINT, cnt BIGINT, s BIGINT, m BIGINT) WITH ('connector' = 'print');
INSERT INTO res SELECT COUNT(*), SUM(c), SUM(s), SUM(m)
FROM (SELECT k, COUNT(*) AS c, SUM(id) AS s, MAX(id) AS m FROM src GROUP BY k);
SQL
/usr/bin/time -v "$work/flinksql" -f "$work/job.sql" > "$work/out" 2> "$work/time"
# Every key k < keys gets the ids k, k+keys, …; its MAX is the largest
# such id below rows. With rows a multiple of keys: MAX = rows - keys + k.
if (( rows % keys != 0 )); then echo "ROWS must be a multiple of KEYS" >&2; exit 2; fi
want_s=$(( rows * (rows - 1) / 2 ))
want_m=$(( keys * (rows - keys) + keys * (keys - 1) / 2 ))
want="[$keys, $rows, $want_s, $want_m]"
got=$(grep -E '^\+[IU]\[' "$work/out" | tail -1 | sed 's/^+[IU]//')
rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$work/time")
user=$(awk -F: '/User time/ {gsub(/ /,"",$2); print $2}' "$work/time")
sys=$(awk -F: '/System time/ {gsub(/ /,"",$2); print $2}' "$work/time")
wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$work/time")
echo "backend=$backend keys=$keys rows=$rows budget=$budget"
echo "result:   $got"
echo "expected: $want"
echo "peak RSS: $((rss / 1024)) MB  user ${user}s  sys ${sys}s  wall $wall"
awk -v r="$rows" -v u="$user" -v s="$sys" 'BEGIN { printf "per-core rows/s: %.0f\n", r / (u + s) }'
[[ "$got" == "$want" ]] || { echo "WRONG RESULT" >&2; cat "$work/out" | tail -5 >&2; exit 1; }
