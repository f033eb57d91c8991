#!/bin/bash
# Install everything needed to build pagetrace and test it in QEMU, on Debian 12.
# Idempotent; run as root.
#
# Usage: scripts/deps.sh [FLAVOUR ...]     FLAVOUR: 6.1 | 6.12 | rt | debug
#   6.1   the bookworm 6.1 kernel (always installed; naming it is harmless)
#   6.12  the bookworm-backports kernel (adds the backports apt source)
#   rt    the bookworm 6.1 PREEMPT_RT kernel
#   debug what scripts/debug-kernel.sh needs to build a kernel from
#         linux-source-6.1 (installed always) for `make check-debug`
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" = 0 ] || { echo "deps.sh: must run as root" >&2; exit 1; }

BASE=(qemu-system-x86 busybox-static linux-image-amd64 linux-headers-amd64
	linux-source-6.1 sparse build-essential cpio xz-utils kmod trace-cmd)

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
	local opts=() pkgs=() p missing=
	for p in "$@"; do
		case "$p" in -*) opts+=("$p") ;; *) pkgs+=("$p") ;; esac
	done
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'ok installed' || missing=1
	done
	[ -n "$missing" ] || return 0
	local cmd=(apt-get install -y -q --no-install-recommends "${opts[@]}" "${pkgs[@]}")
	"${cmd[@]}" || { update_once; "${cmd[@]}"; }
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
# checks (scripts/check-packaging.sh), debootstrap for `make check-deb`.
install dkms dh-dkms debhelper lintian groff debootstrap
# The contenders of `make bench` (scripts/bench.sh), besides trace-cmd.
install linux-perf bpftrace

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
		if ! "$(dirname "$0")/kernels.sh" 6.12 >/dev/null 2>&1; then
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
	debug)
		install flex bison bc libelf-dev libssl-dev
		;;
	*)
		echo "deps.sh: unknown kernel flavour '$flavour' (want 6.1, 6.12, rt or debug)" >&2
		exit 2
		;;
	esac
done

echo "deps.sh: done. Kernels:"
for flavour in 6.1 6.12 rt; do
	printf '  %-5s %s\n' "$flavour" "$("$(dirname "$0")/kernels.sh" "$flavour" 2>/dev/null || echo '(not installed)')"
done
