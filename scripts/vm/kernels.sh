#!/bin/bash
# Print the installed kernel release for a flavour, for vm-run.sh --kernel.
#
# Usage: scripts/vm/kernels.sh FLAVOUR            the release
#        scripts/vm/kernels.sh --chroot FLAVOUR   the chroot holding FLAVOUR's
#                                              kernel (nothing for a host one)
#        scripts/vm/kernels.sh --chroot-of RELEASE
#                     the chroot holding RELEASE's headers; nothing (status
#                     1) if the host has them or no chroot does
#        scripts/vm/kernels.sh --list             every flavour
#
# Host flavours (Debian 12, installed by scripts/deps.sh on this machine):
#   6.1  -> e.g. 6.1.0-56-amd64        6.12 -> e.g. 6.12.38+deb12-amd64 / +bpo
#   rt   -> e.g. 6.1.0-56-rt-amd64      cloud -> e.g. 6.1.0-56-cloud-amd64
# Chroot flavours: kernels of other Debian suites, which only build with
# their own suite's compiler, so scripts/deps.sh installs them (and that
# compiler) in debootstrap'd chroots, one per suite, under PT_CHROOT_CACHE
# (default /var/cache/pagetrace/chroots):
#   5.10, 5.10-rt        bullseye           -> e.g. 5.10.0-32-amd64
#   trixie, trixie-rt    trixie's 6.12      -> e.g. 6.12.117+deb13-amd64
#   7.3, 7.3-rt,         trixie-backports   -> e.g. 7.3.4+deb13-amd64
#   7.3-cloud
#   sid                  sid                -> e.g. 7.2.13+deb14-amd64
#   oldest = 5.10, newest = 7.3, newest-rt = 7.3-rt
#
# A release counts as installed only if both boot/vmlinuz-RELEASE and
# lib/modules/RELEASE/build (headers, to build the module) exist, on the
# host or in the flavour's chroot.  If several match, the newest is printed.
set -euo pipefail

CACHE=${PT_CHROOT_CACHE:-/var/cache/pagetrace/chroots}
FLAVOURS="6.1 6.12 rt cloud 5.10 5.10-rt trixie trixie-rt 7.3 7.3-rt 7.3-cloud sid"
usage="usage: kernels.sh [--chroot] FLAVOUR | --chroot-of RELEASE | --list"

# headers ROOT RELEASE: are RELEASE's headers in ROOT?  Their build link is
# absolute (or relative, in trixie and later) inside ROOT, so it is resolved
# against ROOT rather than the host's /.
headers() {
	local link=$1/lib/modules/$2/build dest
	dest=$(readlink "$link") || { [ -f "$link/Makefile" ]; return; }
	case "$dest" in
	/*) [ -f "$1$dest/Makefile" ] ;;
	*)  [ -f "$1/lib/modules/$2/$dest/Makefile" ] ;;
	esac
}

case "${1:-}" in
--list)
	echo "$FLAVOURS oldest newest newest-rt"
	exit 0
	;;
--chroot-of)
	rel=${2:?$usage}
	[ -f "/lib/modules/$rel/build/Makefile" ] && exit 1
	for c in "$CACHE"/*/; do
		c=${c%/}
		[[ "$c" == *.new ]] && continue # an unfinished scripts/deps.sh
		headers "$c" "$rel" && { echo "$c"; exit 0; }
	done
	exit 1
	;;
--chroot) mode=chroot flavour=${2:?$usage} ;;
-*)       echo "$usage" >&2; exit 2 ;;
*)        mode=release flavour=${1:?$usage} ;;
esac

case "$flavour" in
oldest)    flavour=5.10 ;;
newest)    flavour=7.3 ;;
newest-rt) flavour=7.3-rt ;;
esac

# flavour -> root (the host's / or a chroot) and release pattern.
root=
case "$flavour" in
6.1)       pattern='6.1.0-*-amd64' ;;
6.12)      pattern='6.12.*-amd64' ;;
rt)        pattern='6.1.0-*-rt-amd64' ;;  # the 6.1 PREEMPT_RT kernel
cloud)     pattern='6.1.0-*-cloud-amd64' ;; # no 9p: vm-run.sh uses a disk
5.10)      root=$CACHE/bullseye pattern='5.10.*-amd64' ;;
5.10-rt)   root=$CACHE/bullseye pattern='5.10.*-rt-amd64' ;;
trixie)    root=$CACHE/trixie pattern='6.12.*-amd64' ;;
trixie-rt) root=$CACHE/trixie pattern='6.12.*-rt-amd64' ;;
7.3)       root=$CACHE/trixie pattern='7.3.*-amd64' ;;
7.3-rt)    root=$CACHE/trixie pattern='7.3.*-rt-amd64' ;;
7.3-cloud) root=$CACHE/trixie pattern='7.3.*-cloud-amd64' ;;
sid)       root=$CACHE/sid pattern='*-amd64' ;;
*)         echo "kernels.sh: unknown flavour '$flavour' (want one of: $FLAVOURS oldest newest newest-rt)" >&2; exit 2 ;;
esac

if [ "$mode" = chroot ]; then
	[ -z "$root" ] || echo "$root"
	exit 0
fi

found=
for v in "$root"/boot/vmlinuz-$pattern; do
	rel=${v#"$root"/boot/vmlinuz-}
	# The generic patterns also match the rt and cloud kernels; keep
	# flavours apart.
	if [[ "$flavour" == rt || "$flavour" == *-rt ]]; then
		[[ "$rel" == *-rt-* ]] || continue
	elif [[ "$flavour" == cloud || "$flavour" == *-cloud ]]; then
		[[ "$rel" == *-cloud-* ]] || continue
	else
		[[ "$rel" == *-rt-* || "$rel" == *-cloud-* ]] && continue
	fi
	[ -e "$v" ] && headers "$root" "$rel" && found+="$rel"$'\n'
done
if [ -z "$found" ]; then
	echo "kernels.sh: no '$flavour' kernel with headers installed${root:+ in $root}; run: scripts/deps.sh $flavour" >&2
	exit 1
fi
printf '%s' "$found" | sort -V | tail -1
