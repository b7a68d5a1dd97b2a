#!/bin/sh
# metrics-cost.sh: the cost of monitoring as instruction counts
# (valgrind --tool=callgrind), which do not depend on the machine's load.
#
# For each BENCHMARKS.md pipeline (a) FilterProject, (b) TumbleSumCount,
# (c) HopCount it runs the benchmark without monitoring at two row counts
# N1 < N2, and with monitoring (REST API and /metrics serving, one scrape
# round per second: see bench/monitor_test.go) at N2, and prints
#   rows: instructions per row, (Ir(N2) - Ir(N1)) / (N2 - N1)
#   round: instructions per scrape round (with one sampler tick),
#          (Ir_monitored(N2) - Ir(N2)) / rounds
# Under callgrind a run takes ~50x longer, so it sees many more rounds per
# row than a native run: the cost per round is what is measured; the cost
# at native speed is round / (rows * native rows per CPU-second).
#
# Go's asynchronous preemption (SIGURG) trips callgrind: it is turned off
# (GODEBUG=asyncpreemptoff=1) in every run alike.
#
# Usage: scripts/metrics-cost.sh [N1 N2] (default 100000 400000); output
# in $OUT (default /tmp/metrics-cost).
set -eu
N1=${1:-100000}
N2=${2:-400000}
OUT=${OUT:-/tmp/metrics-cost}
mkdir -p "$OUT"
go test -c -o "$OUT/b.test" ./bench

run() { # bench rows → "Ir rounds"
	f="$OUT/$1.$2.out"
	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$f" \
		"$OUT/b.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime "$2x" -test.cpu 1 >"$f.log" 2>&1
	ir=$(sed -n 's/^summary: //p' "$f")
	rounds=$(awk -v n="$2" '$2 == n { for (i = 3; i < NF; i++) if ($(i+1) == "scrapes") print $i }' "$f.log")
	echo "$ir ${rounds:-0}"
}

for b in FilterProject TumbleSumCount HopCount; do
	set -- $(run "Benchmark$b" "$N1"); a=$1
	set -- $(run "Benchmark$b" "$N2"); z=$1
	set -- $(run "Benchmark${b}Monitored" "$N2"); m=$1 r=$2
	awk -v b="$b" -v a="$a" -v z="$z" -v m="$m" -v r="$r" -v n1="$N1" -v n2="$N2" 'BEGIN {
		row = (z - a) / (n2 - n1)
		printf "%s: Ir(N1=%d) %.0f, Ir(N2=%d) %.0f, monitored Ir(N2) %.0f, %d rounds; rows: %.0f Ir/row; round: %.0f Ir\n",
			b, n1, a, n2, z, m, r, row, (r > 0 ? (m - z) / r : 0)
	}'
done
