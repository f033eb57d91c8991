#!/bin/bash
# `make bench`: the overhead of pagetrace against ftrace, perf and BPF, on the
# same workloads in one VM boot.  A figure, not a test: it never fails on
# slowness (only when something could not run at all).  Run as root on
# Debian 12 (scripts/deps.sh installs QEMU, the kernels, trace-cmd, perf and
# bpftrace).
#
#   scripts/bench/bench.sh            or   make bench [BENCH_KERNELS="6.1 6.12 rt 7.3"]
#
# Any flavour of scripts/vm/kernels.sh: kernels of other suites are built in
# their chroots and booted from there, as by make check.
#
# Per kernel flavour: builds pagetrace.ko, bench/pt_bench.ko, the static
# pagetrace CLI and bench/pt_work; boots the kernel under QEMU
# (scripts/vm/vm-run.sh) and runs bench/run-guest.sh there, which runs every
# workload under every contender, BENCH_RUNS rounds:
#
#   workloads   k0, k3     pt_bench.ko: alloc_pages + __free_pages of order
#                          0 or 3 in a kthread on every CPU (2 events/op)
#               mmap       mmap, touch, munmap anonymous memory (op = a page)
#               fork       fork + exit + wait (op = one fork)
#               read       page-cache reads from ext4 after
#                          fadvise(DONTNEED) (op = a page)
#   contenders  none, loaded (pagetrace.ko, no session), pt-kprobe,
#               pt-tracepoint (pagetrace record, hook=kprobe|tracepoint),
#               pt-local (the default hook with clock=local: local_clock()
#               where clock=auto would read the TSC),
#               pt-notasks (the default hook with tasks=0: no task records
#               or names),
#               kprobe-empty (empty kprobes where the kprobe backend
#               hooks, from pt_bench.ko: the kprobe core's own cost),
#               tp-empty (empty probes on the tracepoints the default
#               backend hooks, from pt_bench.ko: the tracepoints' own cost),
#               pt-stacks (the default hook, a call stack every 128
#               pages: stack_rate=128), pt-filter (the default hook, a node
#               filter that keeps every event: filter_nodes=0),
#               pt-filter-orders, pt-filter-cgroup (filters that keep
#               every event: filter_orders=0-10, filter_cgroup=/),
#               pt-filter-drop (filter_types=reclaim: drops the
#               workloads' events, the cost of one left out),
#               trace-cmd (record -e kmem:mm_page_alloc -e kmem:mm_page_free),
#               ftrace-raw (one cat per CPU of per_cpu/cpuN/trace_pipe_raw),
#               perf (record -a -e the same two), bpftrace (counting them)
#
# Time is counted in instructions: QEMU runs with -icount (BENCH_ICOUNT=1,
# the default), so the guest's clock advances by 2^shift ns per guest
# instruction executed, whatever the host is doing.  Without it, the
# runs of the same workload spread by 30-76% on this shared 2-core host,
# more than any tracer adds; with it they agree to 0.1%.  The price: an
# instruction is one unit whatever it costs on real hardware (cache
# misses, atomics and fences count as 1, like callgrind), and one vCPU
# (QEMU 7.2's icount hangs the boot with two), so the recorder shares the
# CPU with the workload and its cost shows in the workload's time.
# BENCH_ICOUNT=0 measures wall time on BENCH_CPUS vCPUs instead.
#
# Recorders write to tmpfs in the guest.  Results: build/bench/RELEASE/
# results.txt (one line per run), results.md and results.json
# (scripts/bench/bench-report.py); the markdown is printed too.
#
# Environment: BENCH_KERNELS (default 6.1), BENCH_RUNS (3), BENCH_ICOUNT (1),
# BENCH_CPUS (1 with icount, else 2),
# BENCH_MEM (MB, 3072: bpftrace's libraries live in the initramfs),
# BENCH_WORKLOADS, BENCH_CONTENDERS (subsets of the above), and the sizes
# BENCH_KITERS (per CPU, 50000), BENCH_MMAP_MIB (8) x BENCH_MMAP_ITERS (24),
# BENCH_FORK_ITERS (450), BENCH_READ_MIB (8) x BENCH_READ_ITERS (24).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
KERNELS=${BENCH_KERNELS:-6.1}
RUNS=${BENCH_RUNS:-3}
ICOUNT=${BENCH_ICOUNT:-1}
if [ "$ICOUNT" = 1 ]; then
	CPUS=1
	[ "${BENCH_CPUS:-1}" = 1 ] || echo "bench: icount runs one vCPU; BENCH_CPUS ignored" >&2
	# 4 ns per instruction; sleep=off: an idle vCPU jumps to its next timer.
	export PT_QEMU_ARGS="${PT_QEMU_ARGS:-} -icount shift=2,sleep=off"
	CLOCK="instructions (QEMU -icount shift=2: 4 ns of guest time per instruction)"
else
	CPUS=${BENCH_CPUS:-2}
	CLOCK="wall time"
fi
MEM=${BENCH_MEM:-3072}
# The tree the modules are built from: taken now, not when the run ends.
AT=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')
WORKLOADS=${BENCH_WORKLOADS:-k0 k3 mmap fork read}
CONTENDERS=${BENCH_CONTENDERS:-none loaded pt-kprobe pt-tracepoint pt-local pt-notasks pt-stacks pt-filter pt-filter-orders pt-filter-cgroup pt-filter-drop kprobe-empty tp-empty trace-cmd ftrace-raw perf bpftrace}

if [ "$(id -u)" = 0 ]; then
	# shellcheck disable=SC2086 # a list
	scripts/deps.sh $KERNELS >/dev/null
fi

echo "== building the static pagetrace CLI and bench/pt_work" >&2
make -s static >/dev/null
mkdir -p build/bench
# pt_work reads a session's header with libpagetrace, as built for the CLI.
cc -O2 -Wall -Iuapi -Iuserspace/lib -static -o build/bench/pt_work bench/pt_work.c \
	build/static/userspace/lib/libpagetrace.a -lpthread -lm

# The recorders the guest gets, with their libraries (vm-run.sh --bin).
BINS=()
for tool in trace-cmd perf bpftrace; do
	p=$(command -v "$tool" || true)
	if [ -n "$p" ]; then BINS+=(--bin "$p"); else echo "bench: no $tool on the host" >&2; fi
done

status=0
for flavour in $KERNELS; do
	rel=$(scripts/vm/kernels.sh "$flavour")
	B=$ROOT/build/bench/$rel
	S=$B/share
	# A kernel of another suite: built in its chroot, booted from there.
	C=$(scripts/vm/kernels.sh --chroot "$flavour")
	krun=() vm_kernel=(--kernel "$rel")
	if [ -n "$C" ]; then
		krun=(scripts/vm/chroot-run.sh "$C")
		vm_kernel+=(--kernel-image "$C/boot/vmlinuz-$rel" --modules-dir "$C/lib/modules/$rel")
	fi
	echo "== $rel: building pagetrace.ko and pt_bench.ko" >&2
	make -s kbuild KVER="$rel" BENCH=0 >/dev/null
	mkdir -p "$B/module"
	for f in Kbuild pt_bench.c; do
		cmp -s "bench/$f" "$B/module/$f" || cp -p "bench/$f" "$B/module/$f"
	done
	"${krun[@]}" make -s -C "/lib/modules/$rel/build" M="$B/module" modules >/dev/null

	rm -rf "$S"
	mkdir -p "$S"
	cp "build/$rel/pagetrace.ko" "$B/module/pt_bench.ko" build/static/userspace/pagetrace \
		build/bench/pt_work bench/run-guest.sh "$S/"
	cat >"$S/bench.conf" <<-CONF
	RUNS=$RUNS
	WORKLOADS="$WORKLOADS"
	CONTENDERS="$CONTENDERS"
	KITERS=${BENCH_KITERS:-50000}
	MMAP_MIB=${BENCH_MMAP_MIB:-8}
	MMAP_ITERS=${BENCH_MMAP_ITERS:-24}
	FORK_ITERS=${BENCH_FORK_ITERS:-450}
	READ_MIB=${BENCH_READ_MIB:-8}
	READ_ITERS=${BENCH_READ_ITERS:-24}
	CONF
	printf '#!/bin/sh\nexec sh /mnt/host/run-guest.sh\n' >"$S/run.sh"

	echo "== $rel: booting under QEMU ($CPUS CPUs, $MEM MB; console: ${S#"$ROOT"/}/console.log)" >&2
	t0=$SECONDS
	if ! scripts/vm/vm-run.sh "${vm_kernel[@]}" --share "$S" --cpus "$CPUS" --mem "$MEM" \
		--timeout "${BENCH_TIMEOUT:-5400}" "${BINS[@]}" >"$B/vm.log" 2>&1; then
		tail -n 30 "$B/vm.log" >&2
		echo "bench: the VM run for $rel failed (log: ${B#"$ROOT"/}/vm.log)" >&2
		status=1
		[ -s "$S/results.txt" ] || continue
	fi
	echo "== $rel: done in $((SECONDS - t0)) s" >&2
	vmsetup="QEMU TCG, -cpu max, $CPUS vCPUs, $MEM MB, time: $CLOCK, host $(nproc) CPUs ($(
		awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo))"
	cmd="BENCH_KERNELS=$flavour make bench, at $AT"
	[ "${BENCH_RUNS:-3}" = 3 ] || cmd="BENCH_RUNS=$BENCH_RUNS $cmd"
	[ -z "${BENCH_WORKLOADS:-}" ] || cmd="BENCH_WORKLOADS=\"$BENCH_WORKLOADS\" $cmd"
	[ -z "${BENCH_CONTENDERS:-}" ] || cmd="BENCH_CONTENDERS=\"$BENCH_CONTENDERS\" $cmd"
	python3 scripts/bench/bench-report.py --kernel "$rel" --setup "$vmsetup" \
		--command "$cmd" --md "$B/results.md" --json "$B/results.json" "$S/results.txt"
	cat "$B/results.md"
done
exit $status
