#!/bin/bash
# Boot a Debian kernel (the host's, or one in a chroot of scripts/deps.sh)
# under QEMU (TCG) with a tiny busybox initramfs, share a host directory into
# the guest over 9p, run the caller's DIR/run.sh as root inside the guest and
# exit with its exit status.
#
# Usage:
#   scripts/vm/vm-run.sh --kernel RELEASE --share DIR [--timeout SECONDS] [--mem MB]
#                     [--cpus N] [--numa NODES [--cpuless-nodes]]
#                     [--bin /host/binary ...] [--append "cmdline"] [--s3]
#   scripts/vm/vm-run.sh --kernel-image BZIMAGE --modules-dir none --share DIR ...
#
# --kernel RELEASE boots /boot/vmlinuz-RELEASE with the modules it needs from
# /lib/modules/RELEASE.  --kernel-image boots any bzImage instead (e.g. the
# debug kernel of scripts/vm/debug-kernel.sh); --modules-dir DIR takes the
# modules from DIR, and "none" packs no module at all (9p, virtio, loop and
# ext4 must then be built in).  With --kernel-image, --kernel only names the
# initramfs cache (default: debug).  A kernel of a chroot flavour
# (scripts/vm/kernels.sh --chroot FLAVOUR gives CHROOT) boots with
# --kernel RELEASE --kernel-image CHROOT/boot/vmlinuz-RELEASE
# --modules-dir CHROOT/lib/modules/RELEASE.
#
# The share travels over 9p where the kernel has it, and as a virtio disk
# (an ext2 image of DIR, made with mke2fs -d; DIR/results and
# DIR/.exit-status are copied back out of it with debugfs afterwards) where
# it does not: Debian's cloud kernels have no 9p.  PT_VM_TRANSPORT=9p|disk
# chooses.
#
# --s3 lets the guest suspend to RAM and come back: the firmware offers S3,
# and scripts/vm/qmp-wake.py, on QEMU's QMP socket, wakes the guest two
# seconds after each suspend, and ends a guest that is not back in 64-bit
# mode within 120 s.  The share is then the disk (virtio-9p has no
# suspend support in the guest: its I/O hangs after a resume).
#
# Exit status: the guest script's status; 124 on timeout; 125 if the guest
# never wrote DIR/.exit-status (kernel panic, 9p failure, ...); 2 on usage error.
#
# Why these choices:
#  - TCG only: the host cannot use KVM reliably (guest hangs with -accel kvm).
#    PT_QEMU_ARGS adds QEMU options (the benchmark adds -icount).
#  - Single-threaded TCG (thread=single; PT_QEMU_ACCEL overrides): QEMU 7.2's
#    multi-threaded TCG can keep a stale translation of code another vCPU
#    has just patched.  When the kernel patches a hot function's ftrace site
#    (attaching or detaching a probe) while the other vCPU runs it, that vCPU
#    may go on executing the transient int3 after the patch is complete; the
#    kernel finds the kprobe there and "single-steps" its (absent) copied
#    instruction: a jump to address 0.  Seen on 6.1-rt and 6.12 at session
#    stop under munmap churn, within 10-30 start/stop cycles; none in 150
#    cycles with one TCG thread.  Real CPUs serialise cross-modified code.
#  - The initramfs is built from host files (busybox-static, the kernel's own
#    modules), so no image download or root filesystem is needed.  It is cached
#    per kernel release under build/vm/RELEASE/ and rebuilt when inputs change.
#  - 9p is modular in Debian kernels, so the needed modules (and their
#    dependencies from modules.dep) are packed, decompressed, and insmod'ed in
#    dependency order by /init (busybox insmod cannot read .ko.xz).
set -euo pipefail
shopt -s inherit_errexit # fail on errors inside $(...) too (module resolution)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/scripts/vm/vm-run.sh"

die() { echo "vm-run: $*" >&2; exit 2; }

KERNEL='' SHARE='' TIMEOUT=600 MEM=2048 CPUS=2 NUMA=1 APPEND=''
KERNEL_IMAGE='' MODULES_DIR='' S3=''
BINS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)  KERNEL=${2:?}; shift 2 ;;
	--share)   SHARE=${2:?}; shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--mem)     MEM=${2:?}; shift 2 ;;
	--cpus)    CPUS=${2:?}; shift 2 ;;
	--numa)    NUMA=${2:?}; shift 2 ;;
	--cpuless-nodes) CPULESS=1; shift ;;
	--bin)     BINS+=("$(realpath "${2:?}")"); shift 2 ;;
	--append)  APPEND=${2?}; shift 2 ;;
	--s3)      S3=1; shift ;;
	--kernel-image) KERNEL_IMAGE=$(realpath "${2:?}"); shift 2 ;;
	--modules-dir)  MODULES_DIR=${2:?}; shift 2 ;;
	-h|--help) sed -n '2,35p' "$SELF"; exit 0 ;;
	*) die "unknown argument: $1" ;;
	esac
done
[ -n "$KERNEL_IMAGE" ] && [ -z "$KERNEL" ] && KERNEL=debug
[ -n "$KERNEL" ] || die "--kernel RELEASE is required (see scripts/vm/kernels.sh)"
[ -n "$SHARE" ] || die "--share DIR is required"
SHARE=$(realpath "$SHARE")
VMLINUZ=${KERNEL_IMAGE:-/boot/vmlinuz-$KERNEL}
MODDIR=${MODULES_DIR:-/lib/modules/$KERNEL}
[ -r "$VMLINUZ" ] || die "$VMLINUZ not found"
[ "$MODDIR" = none ] || [ -r "$MODDIR/modules.dep" ] || die "$MODDIR/modules.dep not found"
[ -f "$SHARE/run.sh" ] || die "$SHARE/run.sh not found"
for b in "${BINS[@]}"; do [ -x "$b" ] || die "--bin $b is not an executable file"; done

# Modules needed to mount the share: virtio PCI transport, 9p over virtio,
# the 9p filesystem.  Also loop and ext4, so that tests can put a real
# filesystem (one whose page cache reclaim can drop) on a loop device; ext4
# asks the crypto API for crc32c at mount time, which modules.dep cannot tell.
# "A|B": the first of A, B that the kernel has (in the 7.x kernels of
# trixie-backports and sid, ext4 calls the crc32c library instead and the
# crypto API's crc32c module is crc32c-cryptoapi; packed all the same).
# Their dependencies are resolved below.
WANT_MODULES=(virtio_pci 9pnet_virtio 9p loop ext4 "crc32c_generic|crc32c_cryptoapi")

# ---------------------------------------------------------------- initramfs

# Print modules.dep paths for module $1 and its dependencies, dependencies
# first (depth-first), skipping modules built into the kernel.
declare -A SEEN=()
resolve_module() {
	local name=$1 line path dep alt
	if [[ "$name" == *"|"* ]]; then
		for alt in ${name//|/ }; do
			if grep -qE "(^|/)${alt//[-_]/[-_]}\.ko(\.xz|\.zst|\.gz)?:" "$MODDIR/modules.dep" ||
			   grep -qE "/${alt//[-_]/[-_]}\.ko$" "$MODDIR/modules.builtin" 2>/dev/null; then
				resolve_module "$alt"
				return
			fi
		done
		echo "vm-run: none of the modules $name found for $KERNEL" >&2; return 1
	fi
	# modules.dep uses the file name; '-' and '_' are interchangeable.
	line=$(grep -E "(^|/)${name//[-_]/[-_]}\.ko(\.xz|\.zst|\.gz)?:" "$MODDIR/modules.dep" || true)
	if [ -z "$line" ]; then
		grep -qE "/${name//[-_]/[-_]}\.ko$" "$MODDIR/modules.builtin" 2>/dev/null && return 0
		echo "vm-run: module $name not found for $KERNEL" >&2; return 1
	fi
	path=${line%%:*}
	[ -n "${SEEN[$path]:-}" ] && return 0
	SEEN[$path]=1
	for dep in ${line#*:}; do
		dep=${dep##*/}; resolve_module "${dep%%.ko*}"
	done
	echo "$path"
}

# Host binaries always packed: the dynamic loader and libc (via /bin/true), so
# dynamically linked test programs built on the host and placed in the share
# run in the guest too.  --bin adds more programs and their libraries.
shared_libs() {
	{ ldd "$@" 2>/dev/null || true; } |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u
}

# has_module NAME: does the kernel have NAME, as a module or built in?
has_module() {
	grep -qE "(^|/)${1//[-_]/[-_]}\.ko(\.xz|\.zst|\.gz)?:" "$MODDIR/modules.dep" ||
		grep -qE "/${1//[-_]/[-_]}\.ko$" "$MODDIR/modules.builtin" 2>/dev/null
}

# The share's transport: 9p, or a virtio disk where the kernel has no 9p
# (the debug kernel has 9p built in).
TRANSPORT=${PT_VM_TRANSPORT:-auto}
if [ -n "$S3" ]; then
	[ "$TRANSPORT" = 9p ] && die "--s3 needs the disk transport (9p hangs after a resume)"
	TRANSPORT=disk
fi
if [ "$TRANSPORT" = auto ]; then
	TRANSPORT=9p
	[ "$MODDIR" != none ] && ! has_module 9pnet_virtio && TRANSPORT=disk
fi
case "$TRANSPORT" in
9p)   ;;
disk) WANT_MODULES=(virtio_pci virtio_blk loop ext4 "crc32c_generic|crc32c_cryptoapi")
      if ! command -v mke2fs >/dev/null || ! command -v debugfs >/dev/null; then
	      die "the disk transport needs mke2fs and debugfs (e2fsprogs)"
      fi ;;
*)    die "PT_VM_TRANSPORT must be 9p or disk, not $TRANSPORT" ;;
esac

MODS=
[ "$MODDIR" = none ] || MODS=$(for m in "${WANT_MODULES[@]}"; do resolve_module "$m"; done)
mapfile -t LIBS < <(shared_libs /bin/true "${BINS[@]}")

CACHE="$ROOT/build/vm/$KERNEL"
mkdir -p "$CACHE"
INITRD="$CACHE/initramfs.cpio"
# Anything that changes the image content goes into the stamp.
STAMP=$(
	cd /
	sha256sum "$SELF" /bin/busybox "${LIBS[@]}" "${BINS[@]}"
	[ "$MODDIR" = none ] || sha256sum "$MODDIR/modules.dep"
	echo "$MODS"
	printf '%s\n' "${BINS[@]}"
)
STAMP=$(sha256sum <<<"$STAMP" | cut -d' ' -f1)

write_init() {
	cat >"$1" <<'EOF'
#!/bin/sh
# Guest side: set up the basics, mount the host share, run its run.sh.
export PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t tmpfs tmpfs /tmp
ip link set lo up
hostname vm

while read -r m; do
	insmod "/lib/modules/$m" || echo "init: insmod $m failed"
done </lib/modules/load-order

fail() { echo "init: $*"; sync; reboot -f; }
mkdir -p /mnt/host
# The share: over 9p, or else the first virtio disk (vm-run.sh's disk
# transport), which may take a moment to appear.
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 host /mnt/host 2>/dev/null; then
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	mount -t ext4 /dev/vda /mnt/host ||
		fail "cannot mount the share (9p, or the disk /dev/vda)"
fi

echo; echo "init: running /mnt/host/run.sh"
cd /mnt/host
sh /mnt/host/run.sh </dev/null >/dev/console 2>&1
status=$?
cd /
echo "init: run.sh exited with status $status"
echo "$status" >/mnt/host/.exit-status || echo "init: cannot write .exit-status"
sync
umount /mnt/host 2>/dev/null
reboot -f
EOF
	chmod 755 "$1"
}

build_initramfs() {
	local tmp b lib m i=0
	# Staging tree; runs under the lock, and a failed build's leftovers are
	# simply wiped by the next one.
	tmp=$CACHE/root
	rm -rf "$tmp"
	mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,proc,sys,dev,tmp,root,mnt/host,lib/modules}
	# Console node so the kernel can give /init its stdin/stdout/stderr
	# before devtmpfs is mounted.
	mknod -m 600 "$tmp/dev/console" c 5 1
	cp /bin/busybox "$tmp/bin/busybox"
	for b in $(/bin/busybox --list-full); do
		[ -e "$tmp/$b" ] || ln -s /bin/busybox "$tmp/$b"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tmp/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$tmp/etc/group"
	# Modules, decompressed, numbered in load order (none: an empty list).
	: >"$tmp/lib/modules/load-order"
	for m in $MODS; do
		i=$((i + 1))
		local dst; dst=$(printf '%02d-%s' "$i" "$(basename "${m%.ko*}").ko")
		case "$m" in
		*.xz)  xz -dc "$MODDIR/$m" ;;
		*.zst) zstd -qdc "$MODDIR/$m" ;;
		*.gz)  gzip -dc "$MODDIR/$m" ;;
		*)     cat "$MODDIR/$m" ;;
		esac >"$tmp/lib/modules/$dst"
		echo "$dst" >>"$tmp/lib/modules/load-order"
	done
	# Shared libraries and loader at their host paths (the loader path is
	# hard-coded in binaries; libc lives in a default search directory).
	for lib in "${LIBS[@]}"; do
		mkdir -p "$tmp/$(dirname "$lib")"
		cp -L "$lib" "$tmp/$lib"
	done
	for b in "${BINS[@]}"; do cp -L "$b" "$tmp/usr/local/bin/"; done
	write_init "$tmp/init"
	(cd "$tmp" && find . -print0 | cpio --null -o -H newc --owner 0:0 --quiet) >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$tmp"
	echo "$STAMP" >"$CACHE/stamp"
}

# Serialise builds so parallel runs for the same kernel don't race.
exec 9>"$CACHE/.lock"
flock 9
if [ ! -f "$INITRD" ] || [ "$(cat "$CACHE/stamp" 2>/dev/null)" != "$STAMP" ]; then
	echo "vm-run: building initramfs for $KERNEL" >&2
	build_initramfs
fi
flock -u 9

# ---------------------------------------------------------------- boot

rm -f "$SHARE/.exit-status"
# nokaslr: /proc/kallsyms addresses match vmlinux for disassembly.
# panic=-1 + -no-reboot: a panic ends QEMU at once instead of hanging.
# No oops=panic: tests inspect dmesg for splats themselves.
CMDLINE="console=ttyS0 panic=-1 nokaslr loglevel=4 $APPEND"

# --numa N splits memory and CPUs evenly into N nodes, so that tests can
# migrate pages between nodes (move_pages) and see more than one node.
# With --cpuless-nodes, node 0 has every CPU and the other nodes only memory
# (as CXL memory is).
SMP="$CPUS"
NUMA_ARGS=()
if [ "$NUMA" -gt 1 ]; then
	[ $((MEM % NUMA)) = 0 ] || die "--numa $NUMA must divide --mem $MEM"
	if [ -z "${CPULESS:-}" ]; then
		# One socket per node: a node split inside a socket makes the
		# kernel WARN at boot (topology_sane), which the splat checks
		# would catch.
		SMP="$CPUS,sockets=$NUMA,cores=$((CPUS / NUMA)),threads=1"
		[ $((CPUS % NUMA)) = 0 ] || die "--numa $NUMA must divide --cpus $CPUS"
	fi
	for ((n = 0; n < NUMA; n++)); do
		NUMA_ARGS+=(-object "memory-backend-ram,id=ram$n,size=$((MEM / NUMA))M")
		if [ -n "${CPULESS:-}" ]; then
			cpus=
			[ "$n" = 0 ] && cpus=",cpus=0-$((CPUS - 1))"
		else
			cpus=",cpus=$((n * CPUS / NUMA))-$(((n + 1) * CPUS / NUMA - 1))"
		fi
		NUMA_ARGS+=(-numa "node,nodeid=$n$cpus,memdev=ram$n")
	done
fi

# stdin from /dev/null: the run is non-interactive, and QEMU must not grab the
# terminal.  The console is streamed to stdout and DIR/console.log; sed strips
# the serial line's CRs and SeaBIOS's terminal escapes (unbuffered, so output
# appears as it comes).
#
# A guest that has not reached run.sh within PT_BOOT_TIMEOUT seconds (default
# 300; the KASAN kernel needs about 50 under TCG) is killed and booted once
# more.  Seen with the debug kernel and two NUMA nodes: ACPI's _PRT method
# ran past the interpreter's loop timeout ("AE_AML_LOOP_TIMEOUT") while the
# emulated machine was slow, the PCI interrupts of the 9p device were not
# routed, and the boot hung until the VM's whole timeout.  Nothing of ours
# has run by then (run.sh loads the module), so booting again hides nothing.
BOOT_TIMEOUT=${PT_BOOT_TIMEOUT:-300}
TMPS=() WAKER=''
trap '[ -n "$WAKER" ] && kill "$WAKER" 2>/dev/null; rm -rf "${TMPS[@]}"' EXIT
if [ "$TRANSPORT" = 9p ]; then
	SHARE_ARGS=(-virtfs "local,path=$SHARE,mount_tag=host,security_model=none,id=host")
else
	IMG=$(mktemp /var/tmp/vm-share.XXXXXX.img)
	TMPS+=("$IMG")
	SHARE_ARGS=(-drive "file=$IMG,if=virtio,format=raw,cache=unsafe")
fi
# --s3: S3 in the ACPI tables (said explicitly, on either machine's power
# management device: the default has changed between QEMU's versions and
# machine types), and a QMP socket for the waker (in /tmp: a socket's path
# has at most 107 bytes).
S3_ARGS=()
if [ -n "$S3" ]; then
	QMP_DIR=$(mktemp -d /tmp/vm-qmp.XXXXXX)
	TMPS+=("$QMP_DIR")
	case " ${PT_QEMU_ARGS:-} " in
	*q35*) S3_ARGS=(-global ICH9-LPC.disable_s3=0) ;;
	*)     S3_ARGS=(-global PIIX4_PM.disable_s3=0) ;;
	esac
	S3_ARGS+=(-qmp "unix:$QMP_DIR/qmp,server=on,wait=off")
fi

# The disk transport's image, made afresh for each boot from DIR.
make_disk() {
	[ "$TRANSPORT" = disk ] || return 0
	rm -f "$IMG"
	mke2fs -q -t ext2 -F -L host -d "$SHARE" "$IMG" 4G ||
		die "mke2fs -d $SHARE failed"
}

# What the guest wrote on the disk: results/ and .exit-status, into DIR.
copy_back() {
	local tmp
	[ "$TRANSPORT" = disk ] || return 0
	tmp=$(mktemp -d /var/tmp/vm-share.XXXXXX)
	debugfs -R "rdump /results $tmp" "$IMG" >/dev/null 2>&1 || :
	[ -d "$tmp/results" ] && cp -a "$tmp/results/." "$SHARE/results/"
	debugfs -R "dump /.exit-status $SHARE/.exit-status" "$IMG" >/dev/null 2>&1 || :
	# debugfs leaves an empty file for a path the image does not have.
	[ -s "$SHARE/.exit-status" ] || rm -f "$SHARE/.exit-status"
	rm -rf "$tmp"
}

boot() {
	local job t0=$SECONDS
	rm -f "$SHARE/.exit-status" "$SHARE/.qemu.pid" "$SHARE/.qemu.rc"
	: >"$SHARE/console.log"
	make_disk
	if [ -n "$S3" ]; then
		rm -f "$QMP_DIR/qmp"
		python3 "$ROOT/scripts/vm/qmp-wake.py" "$QMP_DIR/qmp" 2 120 \
			>/dev/null 2>>"$SHARE/qmp-wake.log" </dev/null &
		WAKER=$!
	fi
	# shellcheck disable=SC2086 # PT_QEMU_ARGS is a list of options
	( timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-accel "${PT_QEMU_ACCEL:-tcg,thread=single}" -cpu max -m "$MEM" -smp "$SMP" "${NUMA_ARGS[@]}" \
		-nographic -no-reboot -nic none ${PT_QEMU_ARGS:-} \
		-kernel "$VMLINUZ" -initrd "$INITRD" -append "$CMDLINE" \
		"${SHARE_ARGS[@]}" "${S3_ARGS[@]}" \
		-pidfile "$SHARE/.qemu.pid" \
		</dev/null 2>&1 | sed -u 's/\r$//; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tee -a "$SHARE/console.log"
	  echo "${PIPESTATUS[0]}" >"$SHARE/.qemu.rc" ) &
	job=$!
	while kill -0 "$job" 2>/dev/null; do
		grep -q '^init: running' "$SHARE/console.log" && break
		if [ $((SECONDS - t0)) -ge "$BOOT_TIMEOUT" ]; then
			echo "vm-run: the guest did not reach run.sh in ${BOOT_TIMEOUT}s" >&2
			kill "$(cat "$SHARE/.qemu.pid" 2>/dev/null)" 2>/dev/null
			wait "$job"
			return 126
		fi
		sleep 2
	done
	wait "$job"
	# The waker ends when QEMU closes its socket; not if QEMU never made it.
	if [ -n "$WAKER" ]; then
		kill "$WAKER" 2>/dev/null
		wait "$WAKER" 2>/dev/null
		WAKER=
	fi
	return "$(cat "$SHARE/.qemu.rc" 2>/dev/null || echo 1)"
}

set +e
# The waker's log is this run's (boot may run twice; DIR may be reused).
[ -n "$S3" ] && : >"$SHARE/qmp-wake.log"
boot
rc=$?
if [ "$rc" = 126 ]; then
	echo "vm-run: booting once more" >&2
	cp "$SHARE/console.log" "$SHARE/console-hung.log"
	boot
	rc=$?
fi
set -e
copy_back
[ "$rc" = 126 ] && { echo "vm-run: the guest hung at boot twice" >&2; exit 125; }

if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "vm-run: TIMEOUT after ${TIMEOUT}s, QEMU killed" >&2
	exit 124
fi
[ "$rc" = 0 ] || echo "vm-run: qemu exited with status $rc" >&2
if [ ! -s "$SHARE/.exit-status" ]; then
	# The S3 waker's own words when it ended a guest that did not resume.
	if [ -n "$S3" ]; then
		grep -s 'did not resume' "$SHARE/qmp-wake.log" >&2 || :
	fi
	echo "vm-run: guest wrote no .exit-status (kernel panic or boot failure?), see $SHARE/console.log" >&2
	exit 125
fi
exit "$(cat "$SHARE/.exit-status")"
