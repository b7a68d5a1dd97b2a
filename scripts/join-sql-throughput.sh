#!/usr/bin/env bash
# join-sql-throughput.sh [ROWS] [BACKEND]
#
# End-to-end CPU cost of the three joins issue 11 measures, as SQL jobs run
# by the binary (datagen -> join -> blackhole, parallelism 1), under
# /usr/bin/time -v: CPU time (user + sys) per input row, so that the
# figure means the same on a loaded machine.
#
#   regular: a stream of ROWS rows with random keys over 100 000 values
#            joins a stream of 100 000 rows, one per key (inner join, no
#            TTL: both sides are kept)
#   interval: two streams of ROWS rows each, keys random over 100 000,
#            1 row per ms of event time, joined on the key and
#            l.ts BETWEEN r.ts - 1 s AND r.ts + 1 s
#   lookup:  a stream of 5 x ROWS rows with random keys over 1 000 000
#            values looked up in a 1 000 000-row csv file held in the
#            full cache ('lookup.cache' = 'FULL'). The same job over
#            1 000 rows gives the cost of loading the cache and starting,
#            which the second line takes out (the rate of the rows alone)
#
#   scripts/join-sql-throughput.sh 2000000 hashmap
set -euo pipefail
rows=${1:-2000000}; backend=${2:-hashmap}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/flinksql" ./cmd/flinksql
common="SET 'state.backend.type' = '$backend';
SET 'parallelism.default' = '1';"
cat > "$work/regular.sql" <<SQL
$common
CREATE TABLE a (k BIGINT, v BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'number-of-rows' = '$rows', 'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE b (k BIGINT, name STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'number-of-rows' = '100000', 'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '99999',
  'fields.name.length' = '8');
CREATE TABLE out_r (k BIGINT, v BIGINT, name STRING) WITH ('connector' = 'blackhole');
INSERT INTO out_r SELECT a.k, a.v, b.name FROM a JOIN b ON a.k = b.k;
SQL
cat > "$work/interval.sql" <<SQL
$common
CREATE TABLE l (id BIGINT, k BIGINT, ts AS TO_TIMESTAMP_LTZ(id, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '$rows',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '$((rows - 1))',
  'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE r (id BIGINT, k BIGINT, ts AS TO_TIMESTAMP_LTZ(id, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '$rows',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '$((rows - 1))',
  'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE out_i (k BIGINT, lid BIGINT, rid BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out_i SELECT l.k, l.id, r.id FROM l JOIN r ON l.k = r.k
  AND l.ts BETWEEN r.ts - INTERVAL '1' SECOND AND r.ts + INTERVAL '1' SECOND;
SQL
lookup_sql() { # stream-rows
  cat <<SQL
$common
CREATE TABLE s (k BIGINT, v BIGINT, proc AS PROCTIME()) WITH ('connector' = 'datagen',
  'rows-per-second' = '1000000000', 'number-of-rows' = '$1', 'fields.k.min' = '0', 'fields.k.max' = '999999');
CREATE TABLE dim (k BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '$work/dim.csv',
  'format' = 'csv', 'lookup.cache' = 'FULL');
CREATE TABLE out_l (k BIGINT, v BIGINT, name STRING) WITH ('connector' = 'blackhole');
INSERT INTO out_l SELECT s.k, s.v, d.name FROM s JOIN dim FOR SYSTEM_TIME AS OF s.proc AS d ON s.k = d.k;
SQL
}
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "%d,name-%d\n", i, i }' > "$work/dim.csv"
lookup_rows=$((5 * rows))
lookup_sql "$lookup_rows" > "$work/lookup.sql"
lookup_sql 1000 > "$work/lookup-small.sql"
run() { # name input-rows
  /usr/bin/time -v "$work/flinksql" -f "$work/$1.sql" > "$work/$1.out" 2> "$work/$1.time" ||
    { tail -20 "$work/$1.out" "$work/$1.time" >&2; exit 1; }
  user=$(awk -F: '/User time/ {gsub(/ /,"",$2); print $2}' "$work/$1.time")
  sys=$(awk -F: '/System time/ {gsub(/ /,"",$2); print $2}' "$work/$1.time")
  rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$work/$1.time")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  awk -v n="$1" -v r="$2" -v u="$user" -v s="$sys" -v m="$rss" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
    printf "%-8s %d input rows: user %.1f s sys %.1f s, %.0f ns CPU/row, %.0f k rows/s per core, peak RSS %d MB (load %s)\n",
      n, r, u, s, (u + s) * 1e9 / r, r / (u + s) / 1000, m / 1024, l }'
}
run regular $((rows + 100000))
run interval $((2 * rows))
run lookup-small 1000
small_cpu=$cpu
run lookup "$lookup_rows"
awk -v r="$lookup_rows" -v c="$cpu" -v s="$small_cpu" 'BEGIN {
  printf "lookup   without the cache load and start (%.2f CPU-s, the 1 000-row job): %.0f ns CPU/row, %.0f k rows/s per core\n",
    s, (c - s) * 1e9 / (r - 1000), (r - 1000) / (c - s) / 1000 }'
