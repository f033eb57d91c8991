#!/bin/bash
# Run a command as root inside a chroot of scripts/deps.sh (a Debian suite
# whose kernels need that suite's compiler), with this checkout mounted at
# its own absolute path: M=, build/RELEASE and every other path mean the
# same inside and outside, so the Makefile can simply prefix the kernel's
# make (and dkms, sparse) with this script.  Run as root.
#
# Usage: scripts/vm/chroot-run.sh CHROOT COMMAND [ARG...]
#
# The command starts in the same directory as the caller if that is inside
# the checkout, else in /.  Its environment is a clean one (PATH, HOME,
# LC_ALL=C.UTF-8: the host's locale may not exist in the chroot) plus make's
# own variables, so a recursive make keeps -j and the jobserver.
#
# The mounts (/proc, /dev/pts and the checkout) are made in a private mount
# namespace (unshare --mount): they exist only for the command, vanish with
# it however it ends (even on SIGKILL), are never seen outside, and two
# commands in the same chroot at once cannot unmount each other's.  So
# nothing is ever left mounted under a chroot for a later rm -rf to walk
# into the host's files.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF=$ROOT/scripts/vm/chroot-run.sh

die() { echo "chroot-run: $*" >&2; exit 2; }

if [ "${1:-}" != --in-namespace ]; then
	[ $# -ge 2 ] || die "usage: chroot-run.sh CHROOT COMMAND [ARG...]"
	[ "$(id -u)" = 0 ] || die "must run as root"
	c=$(realpath "$1") || die "$1 not found"
	{ [ -x "$c/usr/bin/env" ] && [ -d "$c/proc" ]; } || die "$c is not a chroot (run scripts/deps.sh)"
	shift
	exec unshare --mount --propagation private -- "$SELF" --in-namespace "$c" "$@"
fi

# In the new mount namespace.
c=$2
shift 2
mount --bind /proc "$c/proc"
# apt wants a pty for its log ("Is /dev/pts mounted?")
[ -d "$c/dev/pts" ] && mount --bind /dev/pts "$c/dev/pts"
mkdir -p "$c$ROOT" # left behind, empty: only the mount is temporary
mount --bind "$ROOT" "$c$ROOT"

# Only the variables a command here may need; not the host's locale, not
# whatever else the caller's environment holds.
envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      HOME=/root LC_ALL=C.UTF-8)
for v in TERM MAKEFLAGS MFLAGS MAKELEVEL DEBIAN_FRONTEND; do
	[ -n "${!v+set}" ] && envs+=("$v=${!v}")
done
dir=/
[[ "$PWD/" == "$ROOT/"* ]] && dir=$PWD
# chroot(8) starts in /: change to the caller's directory inside.
# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
exec chroot "$c" /usr/bin/env -i "${envs[@]}" \
	/bin/sh -c 'cd "$0" && exec "$@"' "$dir" "$@"
