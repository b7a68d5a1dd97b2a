#!/usr/bin/env bash
# Runs Nexmark's queries (examples/nexmark) against the nexmark connector and
# prints, per query, events, wall and CPU seconds, events per CPU-second (per
# core, generator included, as Nexmark reports), wall events/s and peak RSS.
#
#   scripts/nexmark.sh [-q q0,q1,q2|all] [-n EVENTS] [-p "1 2"] [-b "hashmap rocksdb"] [-c INTERVAL] [-s blackhole|filesystem]
set -euo pipefail
cd "$(dirname "$0")/.."
queries=q0,q1,q2 events=10000000 parallelisms=1 backends=hashmap interval= sink=blackhole
while getopts "q:n:p:b:c:s:" o; do
  case $o in
    q) queries=$OPTARG ;; n) events=$OPTARG ;; p) parallelisms=$OPTARG ;;
    b) backends=$OPTARG ;; c) interval=$OPTARG ;; s) sink=$OPTARG ;;
    *) sed -n '2,7p' "$0"; exit 2 ;;
  esac
done
bin=$(mktemp /tmp/nexmark-bench.XXXXXX)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./bench/nexmark
uptime
for b in $backends; do
  for p in $parallelisms; do
    (cd bench/nexmark && "$bin" -test.run '^$' -test.bench . -test.benchtime 1x \
      -nexmark.queries "$queries" -nexmark.events "$events" -nexmark.parallelism "$p" \
      -nexmark.backend "$b" -nexmark.checkpoint-interval "$interval" -nexmark.sink "$sink") | sed -n '/^nexmark:/,/^PASS/p' | grep -v '^PASS'
  done
done
