#!/bin/bash
# Decode and stats speed of libpagetrace on one core (a benchmark, not a
# test): writes a large synthetic trace and prints events per second; then
# pagetrace stats with --threads 1 and --threads 2 on two cores, and the ratio.
#
#   scripts/bench/bench-decode.sh [EVENTS]        default 100000000 (~800 MB)
#
# Environment: CPU (the core to pin to, default 1), CPUS2 (the two cores
# for --threads, default 0,1), ROUNDS (best of, default 3, for every row),
# TRACE (reuse or keep this trace file; default build/bench/trace.pt,
# deleted afterwards unless KEEP=1).
#
# Rates are events per CPU-second of the benchmark process (what one core
# does, however busy the machine is) and per wall-clock second; on an idle
# machine the two agree.  The trace comes from userspace/tests/gen_trace.c:
# 8 CPUs, two zones, orders 0..10, reclaim bursts, now and then losses.
# The last lines sum up decode, stats --quick and the full stats against
# their goals.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
N=${1:-100000000}
CPU=${CPU:-1}
ROUNDS=${ROUNDS:-3}
B=$ROOT/build/bench
TRACE=${TRACE:-$B/trace.pt}
mkdir -p "$B"

make -s -C "$ROOT/userspace" pagetrace lib/libpagetrace.a
CFLAGS="-O2 -Wall -Wextra -Werror -I$ROOT/uapi -I$ROOT/userspace/lib"
# shellcheck disable=SC2086 # CFLAGS is a list
cc $CFLAGS -o "$B/gen_trace" "$ROOT/userspace/tests/gen_trace.c"
# shellcheck disable=SC2086
cc $CFLAGS -o "$B/bench_decode" "$ROOT/userspace/tests/bench_decode.c" \
	"$ROOT/userspace/lib/libpagetrace.a" -pthread

if [ ! -s "$TRACE" ]; then
	echo "# writing $N events to $TRACE"
	"$B/gen_trace" -n "$N" -c 8 "$TRACE"
fi
size=$(stat -c %s "$TRACE")
echo "# trace: $TRACE, $((size / 1048576)) MiB; cpu $CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# library, trace in memory (best of $ROUNDS rounds)"
taskset -c "$CPU" "$B/bench_decode" "$TRACE" "$ROUNDS" | tee "$B/lib.txt"

# rate COMMAND...: the best of ROUNDS runs of the CLI, as a table row;
# the CPU-time rate is left in $RATE.
rate() {
	local best=
	for _ in $(seq "$ROUNDS"); do
		/usr/bin/time -f "%U %S %e" -o "$B/time" taskset -c "$CPU" \
			"$ROOT/userspace/pagetrace" "$@" "$TRACE" >/dev/null
		best=$(awk -v b="$best" '{ t = $1 + $2; if (b == "" || t < b) print t " " $3; else print b }' \
			"$B/time")
	done
	read -r cpu wall <<<"$best"
	RATE=$(awk -v n="$N" -v c="$cpu" 'BEGIN { printf "%.1f", n / c / 1e6 }')
	awk -v n="$N" -v c="$cpu" -v e="$wall" -v what="pagetrace $*" 'BEGIN {
		printf "%-36s %11d %9.3f %9.1f %9.3f %9.1f\n", what, n, c, n / c / 1e6, e, n / e / 1e6 }'
}

echo "# the CLI, end to end: file in the page cache, output discarded (best of $ROUNDS)"
rate stats --json
stats=$RATE
rate stats --quick --json
quick=$RATE
rate convert --to csv
decode=$(awk '/^decode, pgtrace_reader_next_run \(mem\)/ { print $6 }' "$B/lib.txt")
analysis=$(awk '/^analysis, pgtrace_analysis_collect/ { print $5 }' "$B/lib.txt")

# goal NAME RATE GOAL: one line of the summary.
goal() {
	awk -v what="$1" -v r="$2" -v g="$3" 'BEGIN {
		printf "%-36s %9.1f M events/s   goal %d: %s\n", what, r, g, (r >= g ? "met" : "NOT met") }'
}
echo "# summary: events per CPU-second on one core (goals from the decode/stats issue)"
goal "decode (pgtrace_reader_next_run, memory)" "$decode" 200
goal "pagetrace stats --quick" "$quick" 50
goal "pagetrace stats (full analysis)" "$stats" 50
awk -v r="$analysis" 'BEGIN { printf "%-36s %9.1f M events/s   (library alone, trace in memory)\n", "pgtrace_analysis_collect()", r }'

# stats on two cores: --threads 1 and --threads 2 by turns on the same two
# cores, each the best wall-clock time of ROUNDS (CPU time would add up the
# two threads'), and their outputs compared.
CPUS2=${CPUS2:-0,1}
if [ "$(taskset -c "$CPUS2" nproc 2>/dev/null || echo 0)" -ge 2 ]; then
	echo "# pagetrace stats --json on cores $CPUS2, wall clock (best of $ROUNDS, by turns); load $(cut -d' ' -f1-3 /proc/loadavg)"
	best1='' best2=''
	for _ in $(seq "$ROUNDS"); do
		for j in 1 2; do
			/usr/bin/time -f "%e" -o "$B/time" taskset -c "$CPUS2" \
				"$ROOT/userspace/pagetrace" stats --json --threads "$j" "$TRACE" >"$B/threads$j.json"
			t=$(cat "$B/time")
			if [ "$j" = 1 ]; then
				best1=$(awk -v a="$t" -v b="$best1" 'BEGIN { print (b == "" || a < b) ? a : b }')
			else
				best2=$(awk -v a="$t" -v b="$best2" 'BEGIN { print (b == "" || a < b) ? a : b }')
			fi
		done
		cmp -s "$B/threads1.json" "$B/threads2.json" || { echo "# --threads 1 and --threads 2 print otherwise" >&2; exit 1; }
	done
	for j in 1 2; do
		t=$([ "$j" = 1 ] && echo "$best1" || echo "$best2")
		awk -v n="$N" -v e="$t" -v what="pagetrace stats --json --threads $j" 'BEGIN {
			printf "%-36s %11d %9s %9s %9.3f %9.1f\n", what, n, "-", "-", e, n / e / 1e6 }'
	done
	awk -v a="$best1" -v b="$best2" 'BEGIN {
		r = a / b
		printf "%-36s %9.2fx                goal 1.7: %s (same output: yes)\n",
			"stats --threads 2 / --threads 1 speed", r, (r >= 1.7 ? "met" : "NOT met") }'
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg) (another busy process takes a core from --threads 2)"
else
	echo "# fewer than two cores in CPUS2=$CPUS2: no --threads 2 rows"
fi
if [ "${KEEP:-0}" != 1 ] && [ "$TRACE" = "$B/trace.pt" ]; then
	rm -f "$TRACE"
fi
