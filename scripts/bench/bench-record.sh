#!/bin/bash
# Benchmark (a figure, not a test): how fast can each reader drain
# /dev/pagetrace while an allocation storm runs on every CPU of the VM?
#
#   scripts/bench/bench-record.sh [--kernel 6.1|6.12|rt] [--seconds N] [--cpus N]
#
# Boots the kernel under QEMU (scripts/vm/vm-run.sh), loads pagetrace.ko with
# its default parameters and runs the storm (one process per CPU, pinned:
# mmap 1 MiB, touch every page, munmap, repeat) twice, recorded once by
# `pagetrace record` (mmap + writev) and once by `cat /dev/pagetrace`
# (read + write).  Prints per reader: events, events/s, MiB/s, lost events
# and the reader's CPU time (user + sys).  TCG is slow and noisy: compare
# the rows, not the absolute numbers.  Not part of make check.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
FLAVOUR=6.1 SECS=5 CPUS=2
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)  FLAVOUR=${2:?}; shift 2 ;;
	--seconds) SECS=${2:?}; shift 2 ;;
	--cpus)    CPUS=${2:?}; shift 2 ;;
	-h|--help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "bench-record: unknown argument $1" >&2; exit 2 ;;
	esac
done

REL=$(scripts/vm/kernels.sh "$FLAVOUR")
B=$ROOT/build/bench
S=$B/share
rm -rf "$S"
mkdir -p "$S"

echo "== building pagetrace.ko for $REL, the static CLI and the storm" >&2
make -s kbuild KVER="$REL" >/dev/null
make -s static >/dev/null
cp "build/$REL/pagetrace.ko" build/static/userspace/pagetrace "$S/"

cat >"$B/storm.c" <<'EOF'
/* One process per online CPU, pinned: mmap/touch/munmap 1 MiB until
 * SECONDS pass.  Prints the pages touched. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	long n = sysconf(_SC_NPROCESSORS_ONLN), total = 0;
	int fds[2];

	if (pipe(fds))
		return 1;
	for (long i = 0; i < n; i++) {
		if (fork() == 0) {
			cpu_set_t set;
			long pages = 0;
			double end = now() + secs;

			CPU_ZERO(&set);
			CPU_SET(i, &set);
			sched_setaffinity(0, sizeof(set), &set);
			while (now() < end) {
				volatile char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
							MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				if (p == MAP_FAILED)
					break;
				madvise((void *)p, 1 << 20, MADV_NOHUGEPAGE);
				for (int off = 0; off < 1 << 20; off += 4096)
					p[off] = 1;
				munmap((void *)p, 1 << 20);
				pages += 256;
			}
			if (write(fds[1], &pages, sizeof(pages)) != sizeof(pages))
				_exit(1);
			_exit(0);
		}
	}
	for (long i = 0; i < n; i++) {
		long pages;

		if (read(fds[0], &pages, sizeof(pages)) == sizeof(pages))
			total += pages;
		wait(NULL);
	}
	printf("%ld\n", total);
	return 0;
}
EOF
cc -O2 -static -o "$S/storm" "$B/storm.c"

cat >"$S/run.sh" <<EOF
#!/bin/sh
SECS=$SECS
EOF
cat >>"$S/run.sh" <<'EOF'
H=/mnt/host
cd $H
insmod $H/pagetrace.ko || exit 1
ticks=$(getconf CLK_TCK 2>/dev/null || echo 100)
echo "kernel $(uname -r), $(nproc) CPUs, storm ${SECS}s per reader"

# pagetrace record: stops when the storm exits; its JSON has everything.
$H/pagetrace record -q --json -o /tmp/rec.bin -- sh -c "$H/storm $SECS >/dev/null" >/tmp/rec.json
echo "RECORD $(tr -d '\n' </tmp/rec.json)"
rm -f /tmp/rec.bin

# cat: read() + write(); stopped with SIGTERM after the storm (a
# background job of a non-interactive shell ignores SIGINT).
cat /dev/pagetrace >/tmp/cat.bin &
pid=$!
sleep 0.2
t0=$(cut -d" " -f1 /proc/uptime)
$H/storm $SECS >/dev/null
t1=$(cut -d" " -f1 /proc/uptime)
set -- $(cut -d' ' -f14,15 /proc/$pid/stat)
kill -TERM $pid; wait $pid 2>/dev/null
$H/pagetrace stats --json /tmp/cat.bin >/tmp/cat.json 2>/dev/null
echo "CAT $t0 $t1 $1 $2 $ticks $(stat -c %s /tmp/cat.bin) $(tr -d '\n' </tmp/cat.json)"
rm -f /tmp/cat.bin
rmmod pagetrace
EOF

echo "== booting $REL (TCG, $CPUS CPUs)" >&2
scripts/vm/vm-run.sh --kernel "$REL" --share "$S" --cpus "$CPUS" --timeout $((SECS * 20 + 300)) \
	>"$B/vm.log" 2>&1 || { tail -n 30 "$B/vm.log" >&2; exit 1; }

python3 - "$B/vm.log" <<'EOF'
import json, re, sys
rows = []
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("kernel "):
        print(line)
    if line.startswith("RECORD "):
        j = json.loads(line[7:])
        rows.append(("pagetrace record", j["events"], j["duration_s"], j["bytes"],
                     j["lost"], j["cpu_user_s"] + j["cpu_sys_s"]))
    if line.startswith("CAT "):
        f = line.split(" ", 7)
        t0, t1, ut, st, hz, size = float(f[1]), float(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6])
        j = json.loads(f[7]) if len(f) > 7 and f[7].startswith("{") else {}
        rows.append(("cat /dev/pagetrace", j.get("events", 0), t1 - t0, size,
                     j.get("lost", 0), (ut + st) / hz))
print(f"{'reader':<20} {'events':>12} {'events/s':>12} {'MiB/s':>8} {'lost':>10} {'reader CPU s':>13}")
for name, ev, secs, size, lost, cpu in rows:
    print(f"{name:<20} {ev:>12} {ev / secs:>12.0f} {size / secs / 2**20:>8.2f} {lost:>10} {cpu:>13.2f}")
if len(rows) != 2:
    sys.exit("bench-record: the VM did not report both readers, see build/bench/vm.log")
EOF
