#!/bin/bash
# Install everything needed to build pagetrace and test it in QEMU, on Debian 12.
# Idempotent; run as root.
#
# Usage: scripts/deps.sh [FLAVOUR ...]
#   6.1   the bookworm 6.1 kernel (always installed; naming it is harmless)
#   6.12  the bookworm-backports kernel (adds the backports apt source)
#   rt    the bookworm 6.1 PREEMPT_RT kernel
#   cloud the bookworm 6.1 cloud kernel (no 9p: vm-run.sh shares a disk)
#   debug what scripts/vm/debug-kernel.sh needs to build a kernel from
#         linux-source-6.1 (installed always) for `make check-debug`
# Kernels of other suites, each in a chroot of its suite (see below):
#   5.10, 5.10-rt         bullseye's linux-image-amd64, linux-image-rt-amd64
#   trixie, trixie-rt     trixie's own 6.12 (not the backport)
#   7.3, 7.3-rt,          trixie-backports' linux-image-amd64, -rt-amd64,
#   7.3-cloud             -cloud-amd64
#   sid                   sid's linux-image-amd64
#   oldest, newest, newest-rt: 5.10, 7.3, 7.3-rt (scripts/vm/kernels.sh)
#
# A kernel of another suite is only built with that suite's compiler, so it
# is installed with its headers, build-essential, dkms and sparse in a chroot
# of that suite: PT_CHROOT_CACHE/SUITE (default
# /var/cache/pagetrace/chroots/bullseye, trixie with trixie-backports, sid),
# debootstrap'd from DEB_MIRROR (default http://deb.debian.org/debian) the
# first time, and reused after that; remove one to start it afresh.  The
# Makefile builds there through scripts/vm/chroot-run.sh; vm-run.sh boots the
# chroot's boot/vmlinuz-RELEASE with its lib/modules/RELEASE.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" = 0 ] || { echo "deps.sh: must run as root" >&2; exit 1; }

# python3: make bench's report and the VM's S3 waker (scripts/vm/qmp-wake.py).
BASE=(qemu-system-x86 busybox-static linux-image-amd64 linux-headers-amd64
	linux-source-6.1 sparse build-essential cpio xz-utils kmod trace-cmd python3)

# apt-get update is slow; run it at most once, and only when an install fails
# (unknown package / stale index) or a new apt source was added.
UPDATED=
update_once() {
	[ -n "$UPDATED" ] && return 0
	apt-get update -q
	UPDATED=1
}

# install [apt options] PKG...: install unless all are already installed.
install() {
	local opts=() pkgs=() p
	for p in "$@"; do
		case "$p" in -*) opts+=("$p") ;; *) pkgs+=("$p") ;; esac
	done
	installed "" "${pkgs[@]}" && return 0
	local cmd=(apt-get install -y -q --no-install-recommends "${opts[@]}" "${pkgs[@]}")
	"${cmd[@]}" || { update_once; "${cmd[@]}"; }
}

# installed ROOT PKG...: are all PKGs installed in ROOT ("" for the host)?
# dpkg-query reads a chroot's database from outside: no chroot, no apt.
installed() {
	local root=$1 p
	shift
	for p in "$@"; do
		dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' "${p%%/*}" 2>/dev/null |
			grep -q 'ok installed' || return 1
	done
}

# bookworm-backports: the 6.12 kernel, and Go 1.22.
add_backports() {
	if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo 'deb http://deb.debian.org/debian bookworm-backports main' \
			>/etc/apt/sources.list.d/backports.list
		UPDATED= # new source: the index must be refreshed
		update_once
	fi
}

install "${BASE[@]}"
# Go 1.22 (bookworm-backports; bookworm's 1.19 has no GOEXPERIMENT=pagetrace):
# a live Go page trace (userspace/tests/go-live.sh) and `go tool pprof` for
# the pagetrace pprof test (userspace/tests/test_pprof.c).
add_backports
install golang-1.22-go/bookworm-backports
# Packaging: DKMS, dpkg-buildpackage and lintian, groff for the man page
# checks (scripts/test/check-packaging.sh), debootstrap for `make check-deb`.
install dkms dh-dkms debhelper lintian groff debootstrap
# libipt's <intel-pt.h>, whose pt_ names the library's must not collide
# with (the namespace check of scripts/test/check-packaging.sh).
install libipt-dev
# rsync: the kselftest lib.mk's install (make kselftest-install).
install rsync
# libtracecmd, for the CLI to read trace-cmd data files (its -dev package
# does not pull in libtracefs-dev, which its pkg-config file requires).
install pkgconf libtracecmd-dev libtraceevent-dev libtracefs-dev
# The contenders of `make bench` (scripts/bench/bench.sh), besides trace-cmd.
install linux-perf bpftrace

# ------------------------------------------------ chroots of other suites

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHROOTS=${PT_CHROOT_CACHE:-/var/cache/pagetrace/chroots}
MIRROR=${DEB_MIRROR:-http://deb.debian.org/debian}
# Besides a kernel and its headers, every chroot has: the suite's compiler;
# dkms and sparse, which check.sh runs there as on the host; xz for dkms,
# which compresses the module as the kernel's own are.
CHROOT_PKGS=(build-essential kmod dkms sparse xz-utils)

in_chroot() { DEBIAN_FRONTEND=noninteractive "$SCRIPTS/vm/chroot-run.sh" "$@"; }

# mounts_below DIR: the mount points at or below DIR, deepest first.
mounts_below() {
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# Before a chroot is removed nothing may be mounted in it, or rm -rf would
# walk into the host's /proc, or into a bind-mounted host directory.  Our own
# mounts live and die in private namespaces (chroot-run.sh, and debootstrap
# below), so this only finds those of a setup made by hand.
unmount_below() {
	local m
	for m in $(mounts_below "$1"); do
		umount "$m" || umount -l "$m"
	done
	if [ -n "$(mounts_below "$1")" ]; then
		echo "deps.sh: still mounted below $1; not removing it" >&2
		exit 1
	fi
}

# make_chroot SUITE: debootstrap CHROOTS/SUITE, unless it is there.  It is
# made as SUITE.new and renamed when complete, so a chroot that exists is
# whole, and an interrupted one is made again from scratch.
make_chroot() {
	local suite=$1 dir=$CHROOTS/$1 new=$CHROOTS/$1.new
	[ -d "$dir" ] && return 0
	echo "deps.sh: debootstrap $suite into $new (a few minutes; log: $CHROOTS/$suite.log)"
	mkdir -p "$CHROOTS"
	unmount_below "$new"
	rm -rf "$new"
	# debootstrap mounts /proc and /sys in the target; in a private mount
	# namespace they go away even if it is interrupted.
	if ! unshare --mount --propagation private \
		debootstrap --variant=minbase "$suite" "$new" "$MIRROR" >"$CHROOTS/$suite.log" 2>&1; then
		tail -n 20 "$CHROOTS/$suite.log" >&2
		echo "deps.sh: debootstrap $suite failed" >&2
		exit 1
	fi
	# The mirror may be a frozen snapshot whose Release files have expired
	# (sid's has a Valid-Until, a week after it was made): accept them.
	echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99novalid"
	case "$suite" in
	trixie) echo "deb $MIRROR trixie-backports main" >"$new/etc/apt/sources.list.d/backports.list" ;;
	esac
	# No initrd is ever needed (vm-run.sh builds its own busybox initramfs),
	# and making one per kernel costs minutes: update-initramfs is diverted
	# to true.  The kernels depend on initramfs-tools, so it is installed
	# first, and diverted before any kernel's postinst can run it.
	in_chroot "$new" sh -ec '
		apt-get update -q
		apt-get install -y -q --no-install-recommends initramfs-tools
		dpkg-divert --local --rename --add /usr/sbin/update-initramfs
		ln -sf /bin/true /usr/sbin/update-initramfs'
	mv "$new" "$dir"
}

# chroot_install DIR PKG...: apt-get install in the chroot, refreshing its
# index first only if that fails (as install() does on the host).
chroot_install() {
	local dir=$1
	shift
	local cmd=(apt-get install -y -q --no-install-recommends "$@")
	in_chroot "$dir" "${cmd[@]}" || { in_chroot "$dir" apt-get update -q; in_chroot "$dir" "${cmd[@]}"; }
}

# suite_kernel DIR META/SUITE: the concrete package the metapackage META of
# SUITE depends on (linux-image-amd64/trixie -> linux-image-6.12.N+deb13-amd64):
# that suite's own kernel, kept even though META itself is the backport's.
suite_kernel() {
	local dir=$1 meta=$2 pkg=
	pkg=$(in_chroot "$dir" apt-cache depends "$meta" 2>/dev/null | awk '/Depends:/ { print $2; exit }') || :
	if [ -z "$pkg" ]; then
		in_chroot "$dir" apt-get update -q >&2
		pkg=$(in_chroot "$dir" apt-cache depends "$meta" | awk '/Depends:/ { print $2; exit }')
	fi
	[ -n "$pkg" ] || { echo "deps.sh: no package behind $meta" >&2; exit 1; }
	echo "$pkg"
}

# chroot_flavour FLAVOUR: the chroot of FLAVOUR's suite, its kernel and
# headers, CHROOT_PKGS.  Nothing runs (no apt) when all of it is there.
chroot_flavour() {
	local flavour=$1 dir suite lock pkgs=() rt img hdr
	dir=$("$SCRIPTS/vm/kernels.sh" --chroot "$flavour")
	suite=${dir##*/}
	mkdir -p "$CHROOTS"
	# One deps.sh at a time per chroot (apt would refuse a second one).
	exec {lock}>"$CHROOTS/.$suite.lock"
	flock "$lock"
	make_chroot "$suite"
	if "$SCRIPTS/vm/kernels.sh" "$flavour" >/dev/null 2>&1 && installed "$dir" "${CHROOT_PKGS[@]}"; then
		exec {lock}>&-
		return 0
	fi
	case "$flavour" in
	5.10|oldest|sid)   pkgs=(linux-image-amd64 linux-headers-amd64) ;;
	5.10-rt)           pkgs=(linux-image-rt-amd64 linux-headers-rt-amd64) ;;
	trixie|trixie-rt)
		rt=${flavour#trixie} # "" or -rt
		img=$(suite_kernel "$dir" "linux-image$rt-amd64/trixie")
		hdr=$(suite_kernel "$dir" "linux-headers$rt-amd64/trixie")
		pkgs=("$img" "$hdr")
		;;
	7.3|newest)        pkgs=(linux-image-amd64/trixie-backports linux-headers-amd64/trixie-backports) ;;
	7.3-rt|newest-rt)  pkgs=(linux-image-rt-amd64/trixie-backports linux-headers-rt-amd64/trixie-backports) ;;
	7.3-cloud)         pkgs=(linux-image-cloud-amd64/trixie-backports linux-headers-cloud-amd64/trixie-backports) ;;
	esac
	chroot_install "$dir" "${CHROOT_PKGS[@]}" "${pkgs[@]}"
	exec {lock}>&-
	# e.g. trixie-backports has moved on from 7.3: say so now, not at build time.
	"$SCRIPTS/vm/kernels.sh" "$flavour" >/dev/null
}

for flavour in "$@"; do
	case "$flavour" in
	6.1)
		# Mark the concrete 6.1 packages manual, so they stay (and are not
		# autoremoved) once linux-image-amd64 points to the 6.12 backport.
		img=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | cut -d' ' -f1 | sort -V | tail -1)
		install "$img" "${img/image/headers}"
		apt-mark manual "$img" "${img/image/headers}" >/dev/null
		;;
	6.12)
		add_backports
		# Name the backports version per package (pkg/suite) rather than using
		# -t bookworm-backports: -t would also move every other installed
		# package that has a backport (linux-libc-dev, linux-perf, and the rt
		# metapackages -> 6.12-rt) to backports.  Dependencies that only exist
		# in backports (linux-kbuild-6.12...) are still picked automatically.
		# The metapackages are already installed from bookworm, so check for
		# the 6.12 kernel itself rather than "is installed".
		if ! "$(dirname "$0")/vm/kernels.sh" 6.12 >/dev/null 2>&1; then
			bpo=(apt-get install -y -q --no-install-recommends
				linux-image-amd64/bookworm-backports linux-headers-amd64/bookworm-backports)
			"${bpo[@]}" || { update_once; "${bpo[@]}"; }
		fi
		;;
	rt)
		install linux-image-rt-amd64 linux-headers-rt-amd64
		# As for 6.1: keep this exact 6.1-rt kernel even if the metapackage moves.
		img=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-rt-amd64$' | cut -d' ' -f1 | sort -V | tail -1)
		install "$img" "${img/image/headers}"
		apt-mark manual "$img" "${img/image/headers}" >/dev/null
		;;
	cloud)
		install linux-image-cloud-amd64 linux-headers-cloud-amd64 e2fsprogs
		# As for 6.1: keep this exact kernel even if the metapackage moves.
		img=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' | cut -d' ' -f1 | sort -V | tail -1)
		install "$img" "${img/image/headers}"
		apt-mark manual "$img" "${img/image/headers}" >/dev/null
		;;
	debug)
		install flex bison bc libelf-dev libssl-dev
		;;
	5.10|5.10-rt|trixie|trixie-rt|7.3|7.3-rt|7.3-cloud|sid|oldest|newest|newest-rt)
		# zstd: vm-run.sh and `make dkms-build` unpack the modules on
		# the host, should a suite's kernel compress them with zstd.
		install debootstrap zstd e2fsprogs
		chroot_flavour "$flavour"
		;;
	*)
		echo "deps.sh: unknown kernel flavour '$flavour' (want debug or one of: $("$SCRIPTS/vm/kernels.sh" --list))" >&2
		exit 2
		;;
	esac
done

echo "deps.sh: done. Kernels:"
for flavour in $("$SCRIPTS/vm/kernels.sh" --list); do
	case "$flavour" in oldest|newest|newest-rt) continue ;; esac
	printf '  %-9s %s\n' "$flavour" "$("$SCRIPTS/vm/kernels.sh" "$flavour" 2>/dev/null || echo '(not installed)')"
done
