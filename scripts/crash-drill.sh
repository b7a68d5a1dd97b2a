#!/usr/bin/env bash
# crash-drill: kill a windowed Kafka -> Kafka pipeline with SIGKILL again and
# again and check what a reader sees (issue 6; the Go version is
# integration/crashdrill_test.go).
#
# A broker runs in its own process (`flinksql broker --data-dir`). The input,
# JSON events with timestamps out of order by up to 2 s, goes to a
# 4-partition topic `events` before the pipeline starts. The pipeline
# (parallelism 2, a checkpoint every 200 ms) sums `amount` per key and 10 s
# tumbling window into the topic `totals`. It is run with `flinksql -f` and
#   - killed with SIGKILL at random moments (a seeded random delay after the
#     first checkpoint a run completed), DRILL_RANDOM_KILLS times;
#   - killed by itself at each fault-injection point (FLINKSQL_FAULT):
#     before-precommit, after-precommit, after-complete, during-commit;
#   - run once more without faults, which must finish (exit 0).
# Every run after the first resumes from the latest checkpoint of the earlier
# runs (same pipeline.name and state.checkpoints.dir).
#
# Then kcat reads the output:
#   exactly-once   with isolation.level=read_committed: exactly one record per
#                  (key, window), with the sum worked out here (awk) from the
#                  generated events. Any duplicate, loss or wrong sum fails.
#   at-least-once  with isolation.level=read_uncommitted: every (key, window)
#                  with the right sum at least once; the duplicates are
#                  reported (the sink has no commit, so during-commit does not
#                  exist for it and is skipped).
#
# Pacing: every event is its own record batch (librdkafka's
# batch.num.messages=1; the padding makes two events larger than the fetch
# limit) and the source sets 'properties.max.partition.fetch.bytes' below two
# batches, so a reader takes one event per partition per round trip and the
# job lasts seconds instead of the few milliseconds the whole input would
# otherwise take. The random delay stays within one checkpoint interval (the
# kill falls anywhere in the cycle of barriers and commits) so that each run
# adds little progress and the input outlasts every kill.
#
# Usage: scripts/crash-drill.sh [exactly-once|at-least-once|both|go]   (default both)
#
# go: the Go drill (integration/crashdrill_test.go), which also kills the
# broker (kill -9, restarted on the same address and --data-dir) at random
# moments and after each fault-point kill, run with DRILL_ROUNDS (default 6)
# rounds of 20 kills (4 random and 8 fault-point engine kills, 8 broker
# kills) and DRILL_EVENTS (default 70000 per round) events; it needs only go.
# Environment: FLINKSQL (binary; default: build this checkout), DRILL_SEED
# (default 20240601), DRILL_EVENTS (default 300000), DRILL_RANDOM_KILLS
# (default 5), DRILL_KEEP=1 keeps the work directory.
# Needs: go (unless FLINKSQL is set), kcat, awk, timeout, tail.
set -euo pipefail

mode=${1:-both}
case "$mode" in
exactly-once | at-least-once | both) ;;
go)
	rounds=${DRILL_ROUNDS:-6}
	events=${DRILL_EVENTS:-$((70000 * rounds))}
	cd "$(dirname "$0")/.."
	echo "crash-drill: the Go drill, $rounds rounds of 20 kills (engine and broker), $events events, seed ${DRILL_SEED:-20240601}"
	FLINKSQL_DRILL_ROUNDS=$rounds FLINKSQL_DRILL_EVENTS=$events FLINKSQL_DRILL_SEED=${DRILL_SEED:-20240601} \
		exec go test -count=1 -timeout 60m -run 'TestCrashDrill/exactly-once' -v ./integration
	;;
*)
	echo "usage: $0 [exactly-once|at-least-once|both|go]" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
seed=${DRILL_SEED:-20240601}
events=${DRILL_EVENTS:-300000}
random_kills=${DRILL_RANDOM_KILLS:-5}
run_timeout=60
start_time=$(date +%s)
broker_pid=""
job_pid=""

cleanup() {
	if [ -n "$job_pid" ] && kill -0 "$job_pid" 2>/dev/null; then
		kill -KILL "$job_pid" 2>/dev/null || true
		wait "$job_pid" 2>/dev/null || true
	fi
	if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	if [ "${DRILL_KEEP:-}" = 1 ]; then
		echo "crash-drill: work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

say() { echo "crash-drill: $*"; }

fail() {
	echo "crash-drill: FAIL: $*" >&2
	exit 1
}

# show_log prints a run's stderr after a failure.
show_log() {
	echo "--- $1:" >&2
	tail -n 40 "$1" >&2 || true
}

command -v kcat >/dev/null || fail "kcat is not installed (apt-get install -y kcat)"

flinksql=${FLINKSQL:-}
if [ -z "$flinksql" ]; then
	flinksql="$work/flinksql"
	(cd "$root" && go build -o "$flinksql" ./cmd/flinksql) || fail "go build ./cmd/flinksql failed"
fi

# The broker: 4 partitions for every topic it creates on first use. Its
# listening line is read from a FIFO (a blocking read, no sleeps).
mkfifo "$work/broker.out"
"$flinksql" broker --listen 127.0.0.1:0 --partitions 4 --data-dir "$work/broker" \
	>"$work/broker.out" 2>"$work/broker.err" &
broker_pid=$!
exec 3<"$work/broker.out"
line=""
read -r -t 30 line <&3 || fail "flinksql broker printed no listening line within 30 s: $(cat "$work/broker.err")"
case "$line" in
"Kafka broker listening on "*) addr=${line#Kafka broker listening on } ;;
*) fail "unexpected first line from flinksql broker: $line" ;;
esac
say "broker listening on $addr (pid $broker_pid)"

# The input and, independently of the engine, the expected sums. Nominal
# times are spread evenly over 200 s; each timestamp is moved back by up to
# 2 s (less than the watermark's 3 s delay, so no event is late). Partitions
# round robin, so each partition is in nominal order. Expected lines are
# "<window start>|<key>|<sum>" as the json format writes them.
pad=$(printf 'x%.0s' $(seq 170))
awk -v n="$events" -v seed="$seed" -v pad="$pad" -v dir="$work" '
function stamp(ms,   s) {
	s = int(ms / 1000)
	return sprintf("2024-01-01 %02d:%02d:%02d", int(s / 3600), int(s / 60) % 60, s % 60)
}
BEGIN {
	srand(seed)
	for (i = 0; i < n; i++) {
		nominal = 2000 + int(i * 200000 / n)
		ts = nominal - int(rand() * 2001)
		k = "k" int(rand() * 8)
		amount = 1 + int(rand() * 100)
		printf "{\"k\":\"%s\",\"amount\":%d,\"ts\":\"%s.%03d\",\"pad\":\"%s\"}\n", k, amount, stamp(ts), ts % 1000, pad > (dir "/events." (i % 4))
		sum[stamp(ts - ts % 10000) "|" k] += amount
	}
	for (w in sum) print w "|" sum[w] > (dir "/expected.unsorted")
}'
sort "$work/expected.unsorted" >"$work/expected"
expected_count=$(wc -l <"$work/expected")
say "$events events over 8 keys (seed $seed): $expected_count (key, window) results expected"

# One producer per partition, in parallel; each keeps its partition in order.
# The first creates the topic (4 partitions), the others wait for that.
kcat -P -b "$addr" -t events -p 0 -X batch.num.messages=1 -X linger.ms=0 -X enable.idempotence=true \
	<"$work/events.0" 2>"$work/kcat-produce.0.err" &
producers=($!)
for p in 1 2 3; do
	kcat -P -b "$addr" -t events -p "$p" -X batch.num.messages=1 -X linger.ms=0 -X enable.idempotence=true \
		<"$work/events.$p" 2>"$work/kcat-produce.$p.err" &
	producers+=($!)
done
for p in 0 1 2 3; do
	wait "${producers[$p]}" || fail "kcat could not produce partition $p: $(cat "$work/kcat-produce.$p.err")"
done
produced=0
for p in 0 1 2 3; do
	end=$(kcat -Q -b "$addr" -t "events:$p:-1" | awk '{print $NF}')
	produced=$((produced + end))
done
[ "$produced" -eq "$events" ] || fail "the events topic holds $produced records, want $events"
say "produced the events into 4 partitions, one record batch per event ($(($(date +%s) - start_time)) s since the start)"

# write_sql FILE GUARANTEE TOPIC
write_sql() {
	local file=$1 guarantee=$2 topic=$3 sink_opts
	sink_opts="'sink.delivery-guarantee' = '$guarantee'"
	if [ "$guarantee" = exactly-once ]; then
		sink_opts="$sink_opts,
  'sink.transactional-id-prefix' = 'drill',
  'properties.transaction.timeout.ms' = '60000'"
	fi
	cat >"$file" <<SQL
SET 'parallelism.default' = '2';
SET 'execution.checkpointing.interval' = '200 ms';
SET 'state.checkpoints.dir' = '$work/checkpoints-$guarantee';
SET 'pipeline.name' = 'crash-drill-$guarantee';
SET 'restart-strategy.type' = 'none';
SET 'table.local-time-zone' = 'UTC';

CREATE TABLE events (
  k STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '3' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'events',
  'properties.bootstrap.servers' = '$addr',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'properties.isolation.level' = 'read_committed',
  'properties.max.partition.fetch.bytes' = '400',
  'format' = 'json'
);

CREATE TABLE totals (
  window_start TIMESTAMP(3),
  k STRING,
  total BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '$topic',
  'properties.bootstrap.servers' = '$addr',
  $sink_opts,
  'format' = 'json'
);

INSERT INTO totals
SELECT window_start, k, SUM(amount)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;
SQL
}

# The random delays: bash's generator, seeded.
RANDOM=$seed

# run_random SQL LOG: start the pipeline, wait for its first completed
# checkpoint, wait a random delay, SIGKILL it. Sets kill_delay_ms.
kill_delay_ms=0
run_random() {
	local sql=$1 log=$2 status=0
	: >"$log" # exists before tail opens it
	FLINKSQL_FAULT= TMPDIR="$work/tmp" "$flinksql" -f "$sql" >"$log.out" 2>"$log" &
	job_pid=$!
	# grep returns at the first checkpoint; tail ends with the process
	# (--pid) or at the timeout, and grep then fails.
	if ! grep -q -m1 '^Completed checkpoint' < <(timeout "$run_timeout" tail -n +1 -f --pid="$job_pid" "$log"); then
		kill -KILL "$job_pid" 2>/dev/null || true
		wait "$job_pid" || true
		job_pid=""
		show_log "$log"
		fail "the run completed no checkpoint within ${run_timeout} s (or ended before)"
	fi
	kill_delay_ms=$((RANDOM % 200)) # within one checkpoint interval
	sleep "$(printf '0.%03d' "$kill_delay_ms")" # the random moment of the kill
	kill -KILL "$job_pid" 2>/dev/null || true
	wait "$job_pid" 2>/dev/null || status=$? # quiet: no "Killed" notice
	job_pid=""
	if [ "$status" -ne 137 ]; then
		show_log "$log"
		if [ "$status" -eq 0 ]; then
			fail "the job finished before the random kill: the input lasts too short a time on this machine (raise DRILL_EVENTS)"
		fi
		fail "the run exited with status $status, want 137 (SIGKILL)"
	fi
}

# run_fault SQL LOG POINT: the process must kill itself at POINT (a
# FLINKSQL_FAULT value, point@checkpoint).
run_fault() {
	local sql=$1 log=$2 point=$3 status=0
	{ FLINKSQL_FAULT=$point TMPDIR="$work/tmp" timeout -s KILL "$run_timeout" "$flinksql" -f "$sql" >"$log.out" 2>"$log"; } 2>/dev/null || status=$?
	if [ "$status" -ne 137 ] || ! grep -q '^\[FAULT\]' "$log"; then
		show_log "$log"
		fail "the run with FLINKSQL_FAULT=$point exited with status $status, want 137 (SIGKILL) after a [FAULT] line"
	fi
}

# run_final SQL LOG: the run that must finish.
run_final() {
	local sql=$1 log=$2 status=0
	FLINKSQL_FAULT= TMPDIR="$work/tmp" timeout -s KILL "$run_timeout" "$flinksql" -f "$sql" >"$log.out" 2>"$log" || status=$?
	if [ "$status" -ne 0 ]; then
		show_log "$log"
		fail "the final run exited with status $status, want 0"
	fi
}

checkpoints_in() { grep -c '^Completed checkpoint' "$1" || true; }

# latest_in LOG: the last checkpoint the run completed (0 for none).
latest_in() { awk '/^Completed checkpoint / { n = $3 } END { print n + 0 }' "$1"; }

# restored_in LOG: the checkpoint the run restored (0 for none).
restored_in() {
	awk -F'from checkpoint ' '/^\[INFO\] Restoring job / { split($2, id, /[^0-9]/); n = id[1] } END { print n + 0 }' "$1"
}

# A fault point is armed this many checkpoints into its run: by then windows
# fire and transactions hold records (the first checkpoint of a run usually
# comes before the first watermark).
fault_depth=2
latest=0 # the latest checkpoint a run of the current drill completed

# drill GUARANTEE TOPIC POINTS...
drill() {
	local guarantee=$1 topic=$2 sql log n=0 began spec
	shift 2
	began=$(date +%s)
	latest=0
	sql="$work/$guarantee.sql"
	write_sql "$sql" "$guarantee" "$topic"
	mkdir -p "$work/tmp"
	say "== $guarantee: $random_kills random kills, then fault points: $*"
	for ((i = 1; i <= random_kills; i++)); do
		n=$((n + 1))
		log="$work/$guarantee.run$n.err"
		run_random "$sql" "$log"
		check_restored "$log" "$n"
		say "$guarantee run $n: $(restored_text "$log"), killed ${kill_delay_ms} ms after its first completed checkpoint ($(checkpoints_in "$log") completed)"
	done
	for point in "$@"; do
		n=$((n + 1))
		log="$work/$guarantee.run$n.err"
		spec="$point@$((latest + fault_depth))"
		run_fault "$sql" "$log" "$spec"
		check_restored "$log" "$n"
		say "$guarantee run $n: $(restored_text "$log"), killed itself at $spec ($(checkpoints_in "$log") checkpoints completed)"
	done
	n=$((n + 1))
	log="$work/$guarantee.run$n.err"
	run_final "$sql" "$log"
	check_restored "$log" "$n"
	say "$guarantee run $n: $(restored_text "$log"), finished ($(checkpoints_in "$log") checkpoints completed)"
	say "$guarantee: $n runs in $(($(date +%s) - began)) s"
}

restored_text() {
	local r
	r=$(restored_in "$1")
	if [ "$r" -eq 0 ]; then echo "a fresh start"; else echo "restored checkpoint $r"; fi
}

# check_restored LOG N: every run after the first resumes from the latest
# checkpoint completed so far (or a later one, when the kill came between its
# completion and the log line); updates latest.
check_restored() {
	local r l
	r=$(restored_in "$1")
	l=$(latest_in "$1")
	if [ "$2" -gt 1 ] && [ "$r" -lt "$latest" ]; then
		show_log "$1"
		fail "run $2 restored checkpoint $r, want the latest completed one, $latest"
	fi
	[ "$r" -gt "$latest" ] && latest=$r
	[ "$l" -gt "$latest" ] && latest=$l
	return 0
}

# read_output TOPIC ISOLATION FILE: every record value, one per line, as
# "<window start>|<key>|<sum>"; a record of another shape fails.
read_output() {
	local topic=$1 isolation=$2 file=$3
	kcat -C -b "$addr" -t "$topic" -e -q -o beginning -X isolation.level="$isolation" -f '%s\n' \
		>"$file.json" 2>"$work/kcat.err" || fail "kcat ($isolation) failed: $(cat "$work/kcat.err")"
	if grep -v -E '^\{"window_start":"[^"]*","k":"[^"]*","total":-?[0-9]+\}$' "$file.json" >"$work/bad"; then
		fail "records of an unexpected shape in $topic:
$(head -5 "$work/bad")"
	fi
	sed -E 's/^\{"window_start":"([^"]*)","k":"([^"]*)","total":(-?[0-9]+)\}$/\1|\2|\3/' "$file.json" | sort >"$file"
}

# compare GOT: prints "records distinct missing duplicated extra wrong
# unknown" and writes the offending lines to $work/problems.
compare() {
	awk -F'|' -v problems="$work/problems" '
	NR == FNR { want[$1 "|" $2] = $3; next }
	{
		records++
		key = $1 "|" $2
		if (!(key in want)) { unknown++; print "unknown: " $0 > problems; next }
		if ($3 != want[key]) { wrong++; print "wrong sum: " $0 " want " want[key] > problems }
		seen[key]++
	}
	END {
		for (key in want) {
			if (!(key in seen)) { missing++; print "missing: " key > problems }
			else { distinct++; if (seen[key] > 1) { dup++; extra += seen[key] - 1; print "duplicated x" seen[key] ": " key > problems } }
		}
		printf "%d %d %d %d %d %d %d\n", records, distinct, missing, dup, extra, wrong, unknown
	}' "$work/expected" "$1"
}

: >"$work/problems"
status=0

if [ "$mode" != at-least-once ]; then
	drill exactly-once totals before-precommit after-precommit after-complete during-commit
	read_output totals read_committed "$work/got.eo"
	read -r records distinct missing dup extra wrong unknown <<<"$(compare "$work/got.eo")"
	say "exactly-once, read_committed: $records records, $distinct of $expected_count (key, window) results, $dup duplicated, $missing missing, $wrong wrong sums, $unknown unknown"
	# Two rows known in advance: the first and last window of the expected
	# results, exactly as the json format writes them.
	for row in "$(head -1 "$work/expected")" "$(tail -1 "$work/expected")"; do
		IFS='|' read -r ws k sum <<<"$row"
		json="{\"window_start\":\"$ws\",\"k\":\"$k\",\"total\":$sum}"
		n=$(grep -c -x -F "$json" "$work/got.eo.json" || true)
		say "  $json: seen $n time(s)"
		[ "$n" -eq 1 ] || status=1
	done
	if [ "$records" -ne "$expected_count" ] || [ "$missing" -ne 0 ] || [ "$dup" -ne 0 ] || [ "$wrong" -ne 0 ] || [ "$unknown" -ne 0 ]; then
		status=1
	fi
	if [ "$status" -ne 0 ]; then
		head -20 "$work/problems" >&2
		fail "exactly-once: the read_committed output is not exactly one right record per (key, window)"
	fi
	say "exactly-once: OK"
fi

if [ "$mode" != exactly-once ]; then
	: >"$work/problems"
	drill at-least-once totals_alo before-precommit after-precommit after-complete
	read_output totals_alo read_uncommitted "$work/got.alo"
	read -r records distinct missing dup extra wrong unknown <<<"$(compare "$work/got.alo")"
	say "at-least-once, read_uncommitted: $records records, $distinct of $expected_count (key, window) results, $dup duplicated ($extra extra records), $missing missing, $wrong wrong sums, $unknown unknown"
	if [ "$missing" -ne 0 ] || [ "$wrong" -ne 0 ] || [ "$unknown" -ne 0 ]; then
		head -20 "$work/problems" >&2
		fail "at-least-once: results are missing or wrong"
	fi
	say "at-least-once: OK (duplicates are expected without transactions)"
fi

say "done in $(($(date +%s) - start_time)) s"
