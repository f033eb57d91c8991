#!/bin/bash
# Build (or reuse) the debug kernel `make check-debug` runs the tests on:
# Debian's linux-source-6.1 with KASAN, lockdep (PROVE_LOCKING, PROVE_RCU),
# DEBUG_ATOMIC_SLEEP, DEBUG_LIST and kmemleak (off unless booted with
# kmemleak=on), configured from tinyconfig plus what
# scripts/vm/vm-run.sh needs to boot it (everything built in: the only module
# is ours) and what pagetrace and its selftests need (kprobes on ftrace,
# tracepoints, memcg, NUMA, CPU hotplug, loop + ext4).
#
# Usage: scripts/vm/debug-kernel.sh [--print-dir]
#
# The tree lives in PT_DEBUG_KERNEL_CACHE (default /var/cache/pagetrace when
# writable, else ~/.cache/pagetrace), outside the checkout, so that `make
# clean` and fresh clones keep it.  It is rebuilt only when the source
# tarball or this script (the config below) changes.  On success prints
# the build directory: it holds arch/x86/boot/bzImage and is ready for
# out-of-tree modules (make -C DIR M=...).
set -euo pipefail

SRC_TAR=${KSRC_TAR:-/usr/src/linux-source-6.1.tar.xz}
if [ -z "${PT_DEBUG_KERNEL_CACHE:-}" ]; then
	if mkdir -p /var/cache/pagetrace 2>/dev/null && [ -w /var/cache/pagetrace ]; then
		PT_DEBUG_KERNEL_CACHE=/var/cache/pagetrace
	else
		PT_DEBUG_KERNEL_CACHE=$HOME/.cache/pagetrace
	fi
fi
CACHE=$PT_DEBUG_KERNEL_CACHE
KDIR=$CACHE/linux-6.1-debug
STAMP_FILE=$KDIR/.pagetrace-stamp
LOCAL_VERSION=-ptdebug

if [ "${1:-}" = --print-dir ]; then
	echo "$KDIR"
	exit 0
fi
[ -r "$SRC_TAR" ] || { echo "debug-kernel: $SRC_TAR not found (apt install linux-source-6.1)" >&2; exit 1; }
# What a kernel build needs beyond build-essential (scripts/deps.sh).
if ! command -v flex >/dev/null || ! command -v bison >/dev/null ||
   ! command -v bc >/dev/null || [ ! -e /usr/include/libelf.h ] ||
   [ ! -e /usr/include/openssl/ssl.h ]; then
	[ "$(id -u)" = 0 ] || { echo "debug-kernel: needs flex bison bc libelf-dev libssl-dev" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		flex bison bc libelf-dev libssl-dev >&2
fi

# Everything beyond tinyconfig.  Built in (=y): no module but ours.
CONFIG=(
	# base: a 64-bit SMP kernel that runs a static busybox and our tests
	64BIT SMP NR_CPUS=8 HOTPLUG_CPU PRINTK PRINTK_TIME BUG TTY
	SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD RD_GZIP DEVTMPFS
	PROC_FS PROC_SYSCTL PROC_PAGE_MONITOR SYSFS TMPFS SHMEM BINFMT_ELF
	BINFMT_SCRIPT MULTIUSER FUTEX EPOLL SIGNALFD TIMERFD EVENTFD
	POSIX_TIMERS FILE_LOCKING ADVISE_SYSCALLS UNIX98_PTYS HIGH_RES_TIMERS
	ACPI PCI VIRTIO_MENU VIRTIO VIRTIO_PCI NET UNIX INET NET_9P
	NET_9P_VIRTIO NETWORK_FILESYSTEMS 9P_FS 9P_FS_POSIX_ACL BLOCK
	BLK_DEV BLK_DEV_LOOP EXT4_FS CRYPTO CRYPTO_CRC32C KALLSYMS
	KALLSYMS_ALL SYSVIPC
	# memory management as on Debian's kernel
	SLUB MEMCG CGROUPS TRANSPARENT_HUGEPAGE TRANSPARENT_HUGEPAGE_ALWAYS
	COMPACTION MIGRATION NUMA ACPI_NUMA X86_64_ACPI_NUMA NUMA_EMU
	LRU_GEN ZONE_DMA ZONE_DMA32 SWAP HUGETLBFS
	# selects MEMORY_ISOLATION, hence CONTIG_ALLOC: alloc_contig_range(),
	# which the ground-truth module calls (Debian's 6.1 gets it this way)
	MEMORY_HOTPLUG CONTIG_ALLOC
	# pagetrace's hooks
	MODULES MODULE_UNLOAD KPROBES KRETPROBES FTRACE FUNCTION_TRACER
	DYNAMIC_FTRACE KPROBES_ON_FTRACE TRACEPOINTS EVENT_TRACING
	KPROBE_EVENTS DEBUG_FS PERF_EVENTS
	# the debug options this kernel is for
	DEBUG_KERNEL KASAN KASAN_GENERIC KASAN_INLINE PROVE_LOCKING LOCKDEP
	DEBUG_LOCKDEP DEBUG_ATOMIC_SLEEP DEBUG_LIST PROVE_RCU DEBUG_OBJECTS
	DEBUG_OBJECTS_WORK DEBUG_OBJECTS_TIMERS DEBUG_VM DEBUG_PREEMPT
	PREEMPT DEBUG_SPINLOCK DEBUG_MUTEXES DEBUG_RWSEMS STACKTRACE
	DEBUG_INFO_NONE
	# kmemleak for make soak, off unless booted with kmemleak=on: its
	# scans would only slow make check's runs, which do not read them
	DEBUG_KMEMLEAK DEBUG_KMEMLEAK_DEFAULT_OFF
	# module signatures, checked as on Debian's kernels (SHA-256, RSA):
	# the build makes its own key, certs/signing_key.pem, which the
	# kernel trusts; scripts/test/check-modsig.sh loads a module signed
	# with it, and one signed with another key, under module.sig_enforce=1
	MODULE_SIG MODULE_SIG_SHA256
	# a KASAN report or a lockdep splat must not end the run: the test
	# reads the log and fails on it (panic_on_warn stays off)
	-PANIC_ON_OOPS -KASAN_OUTLINE -SLOB -SLUB_TINY -MODVERSIONS
	-DEBUG_INFO_BTF -RANDOMIZE_BASE -WERROR -CC_OPTIMIZE_FOR_SIZE
	CC_OPTIMIZE_FOR_PERFORMANCE -KERNEL_GZIP KERNEL_XZ -LOCALVERSION_AUTO
)

stamp() {
	{ sha256sum "${BASH_SOURCE[0]}"; stat -c '%s %Y' "$SRC_TAR"; gcc --version | head -n1; } |
		sha256sum | cut -d' ' -f1
}

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
want=$(stamp)
if [ -f "$KDIR/arch/x86/boot/bzImage" ] && [ -f "$KDIR/Module.symvers" ] &&
   [ "$(cat "$STAMP_FILE" 2>/dev/null)" = "$want" ]; then
	echo "debug-kernel: up to date in $KDIR" >&2
	echo "$KDIR"
	exit 0
fi

t0=$SECONDS
if [ ! -f "$KDIR/Makefile" ] || [ "$(cat "$KDIR/.pagetrace-src" 2>/dev/null)" != "$(stat -c '%s %Y' "$SRC_TAR")" ]; then
	echo "debug-kernel: extracting $SRC_TAR into $KDIR" >&2
	rm -rf "$KDIR"
	mkdir -p "$KDIR"
	tar -xJf "$SRC_TAR" -C "$KDIR" --strip-components=1
	stat -c '%s %Y' "$SRC_TAR" >"$KDIR/.pagetrace-src"
fi

cd "$KDIR"
frag=$KDIR/pagetrace-debug.config
for opt in "${CONFIG[@]}"; do
	case $opt in
	-*)  echo "# CONFIG_${opt#-} is not set" ;;
	*=*) echo "CONFIG_$opt" ;;
	*)   echo "CONFIG_$opt=y" ;;
	esac
done >"$frag"
echo "CONFIG_LOCALVERSION=\"$LOCAL_VERSION\"" >>"$frag"
echo "debug-kernel: configuring (tinyconfig + $frag)" >&2
make -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null
make -s olddefconfig >/dev/null
# merge_config does not fail on options that did not stick: we do.
missing=()
for opt in "${CONFIG[@]}"; do
	case $opt in
	-*)  grep -q "^CONFIG_${opt#-}=" .config && missing+=("$opt") ;;
	*=*) grep -qx "CONFIG_$opt" .config || missing+=("$opt") ;;
	*)   grep -qx "CONFIG_$opt=y" .config || missing+=("$opt") ;;
	esac
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "debug-kernel: options that did not take: ${missing[*]}" >&2
	exit 1
fi

# At the lowest priority: the build must not slow whatever else the
# machine runs (other VMs, CI jobs); alone on the machine it costs nothing.
# PT_DEBUG_KERNEL_NICE=0 to build at normal priority.
nice=(nice -n "${PT_DEBUG_KERNEL_NICE:-19}")
echo "debug-kernel: building bzImage + modules_prepare with $(nproc) jobs" >&2
"${nice[@]}" make -j"$(nproc)" -s bzImage modules_prepare
# Module.symvers for M= builds: vmlinux's exports (no modules to build).
"${nice[@]}" make -j"$(nproc)" -s modules >/dev/null
echo "$want" >"$STAMP_FILE"
echo "debug-kernel: built $(make -s kernelrelease) in $((SECONDS - t0))s" >&2
echo "$KDIR"
