#!/usr/bin/env bash
# join-larger-than-memory.sh BACKEND ROWS BUDGET
#
# A regular inner join of two datagen streams of ROWS rows each (ids
# 0..ROWS-1; a's join key is its id, b's is ROWS-1-id, so every key
# matches exactly once and a key that arrives early on one side arrives
# late on the other), run under /usr/bin/time -v with
# state.backend.type = BACKEND and taskmanager.memory.managed.size =
# BUDGET. An inner join without a TTL keeps every row of both sides, so
# the state ends at 2 x ROWS rows. The global COUNT(*) and SUM(a.id +
# b.id) over the join are checked against their closed form (ROWS pairs,
# each summing to ROWS-1). Prints the peak RSS, the CPU time and the
# per-core input rows/s (2 x ROWS input rows), and fails when the result
# is wrong.
#
#   scripts/join-larger-than-memory.sh rocksdb 20000000 256mb
#
# GOMEMLIMIT in the environment reaches the job (and is printed): the Go
# heap otherwise grows to twice its live part (GOGC), which for this job is
# the rocksdb write-back cache (7/16 of the budget) and the join's key
# filters (1/8); Pebble's block cache and memtables (1/2) are outside it.
#
# Without GOMEMLIMIT flinksql sets the Go memory limit itself from the
# budget (128 MiB + BUDGET while the job runs). JOIN_KEEP=DIR keeps the
# job's stdout and stderr (with GODEBUG=gctrace=1, the collector's trace)
# and /usr/bin/time's report in DIR.
set -euo pipefail
backend=${1:?backend}; rows=${2:?rows}; budget=${3:-256mb}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap '[[ -n "${JOIN_KEEP:-}" ]] && cp "$work/out" "$work/time" "$JOIN_KEEP/"; rm -rf "$work"' EXIT
go build -o "$work/flinksql" ./cmd/flinksql
cat > "$work/job.sql" <<SQL
SET 'state.backend.type' = '$backend';
SET 'taskmanager.memory.managed.size' = '$budget';
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '20000';
CREATE TABLE a (id BIGINT, k AS id) WITH (
  'connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '$rows',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '$((rows - 1))');
CREATE TABLE b (id BIGINT, k AS $((rows - 1)) - id) WITH (
  'connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '$rows',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '$((rows - 1))');
CREATE TABLE res (cnt BIGINT, s BIGINT) WITH ('connector' = 'print');
INSERT INTO res SELECT COUNT(*), SUM(a.id + b.id) FROM a JOIN b ON a.k = b.k;
SQL
/usr/bin/time -v "$work/flinksql" -f "$work/job.sql" > "$work/out" 2> "$work/time"
want="[$rows, $(( rows * (rows - 1) ))]"
got=$(grep -E '^\+[IU]\[' "$work/out" | tail -1 | sed 's/^+[IU]//')
rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$work/time")
user=$(awk -F: '/User time/ {gsub(/ /,"",$2); print $2}' "$work/time")
sys=$(awk -F: '/System time/ {gsub(/ /,"",$2); print $2}' "$work/time")
wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$work/time")
echo "backend=$backend rows=$rows per side budget=$budget GOMEMLIMIT=${GOMEMLIMIT:-unset}"
echo "result:   $got"
echo "expected: $want"
echo "peak RSS: $((rss / 1024)) MB  user ${user}s  sys ${sys}s  wall $wall"
awk -v r="$((2 * rows))" -v u="$user" -v s="$sys" 'BEGIN { printf "per-core input rows/s: %.0f\n", r / (u + s) }'
[[ "$got" == "$want" ]] || { echo "WRONG RESULT" >&2; tail -5 "$work/out" >&2; tail -20 "$work/time" >&2; exit 1; }
