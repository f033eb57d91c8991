#!/bin/bash
# Decode and stats speed of libpagetrace on one core (a benchmark, not a
# test): writes a large synthetic trace and prints events per second.
#
#   scripts/bench-decode.sh [EVENTS]        default 100000000 (~800 MB)
#
# Environment: CPU (the core to pin to, default 1), ROUNDS (best of, default
# 3), TRACE (reuse or keep this trace file; default build/bench/trace.pt,
# deleted afterwards unless KEEP=1).
#
# Rates are events per CPU-second of the benchmark process (what one core
# does, however busy the machine is) and per wall-clock second; on an idle
# machine the two agree.  The trace comes from userspace/tests/gen_trace.c:
# 8 CPUs, two zones, orders 0..10, reclaim bursts, now and then losses.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
	"$ROOT/userspace/lib/libpagetrace.a"

if [ ! -s "$TRACE" ]; then
	echo "# writing $N events to $TRACE"
	"$B/gen_trace" -n "$N" -c 8 "$TRACE"
fi
size=$(stat -c %s "$TRACE")
echo "# trace: $TRACE, $((size / 1048576)) MiB; cpu $CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# library ($ROUNDS rounds, the analysis 1)"
taskset -c "$CPU" "$B/bench_decode" "$TRACE" "$ROUNDS"

echo "# the CLI, end to end (file in the page cache, output discarded)"
for cmd in "stats --json" "stats --quick --json" "convert --to csv"; do
	/usr/bin/time -f "%U %S %e" -o "$B/time" taskset -c "$CPU" \
		"$ROOT/userspace/pagetrace" $cmd "$TRACE" >/dev/null
	read -r u s e <"$B/time"
	awk -v n="$N" -v u="$u" -v s="$s" -v e="$e" -v c="pagetrace $cmd" 'BEGIN {
		printf "%-36s %11d %9.3f %9.1f %9.3f %9.1f\n", c, n, u + s,
		       n / (u + s) / 1e6, e, n / e / 1e6 }'
done
if [ "${KEEP:-0}" != 1 ] && [ "$TRACE" = "$B/trace.pt" ]; then
	rm -f "$TRACE"
fi
