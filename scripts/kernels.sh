#!/bin/bash
# Print the installed kernel release for a flavour, for vm-run.sh --kernel.
#
# Usage: scripts/kernels.sh FLAVOUR      FLAVOUR: 6.1 | 6.12 | rt
#   6.1  -> e.g. 6.1.0-56-amd64        6.12 -> e.g. 6.12.38+deb12-amd64 / +bpo
#   rt   -> e.g. 6.1.0-56-rt-amd64
# A release counts as installed only if both /boot/vmlinuz-RELEASE and
# /lib/modules/RELEASE/build (headers, to build the module) exist.
# If several match, the newest is printed.
set -euo pipefail

flavour=${1:?usage: kernels.sh 6.1|6.12|rt}
case "$flavour" in
6.1)  pattern='6.1.0-*-amd64' ;;
6.12) pattern='6.12.*-amd64' ;;
rt)   pattern='6.1.0-*-rt-amd64' ;;  # the 6.1 PREEMPT_RT kernel
*)    echo "kernels.sh: unknown flavour '$flavour' (want 6.1, 6.12 or rt)" >&2; exit 2 ;;
esac

found=
for v in /boot/vmlinuz-$pattern; do
	rel=${v#/boot/vmlinuz-}
	# The 6.1 pattern also matches the rt kernel; keep flavours apart.
	[ "$flavour" != rt ] && [[ "$rel" == *-rt-* ]] && continue
	[ -e "$v" ] && [ -d "/lib/modules/$rel/build" ] && found+="$rel"$'\n'
done
if [ -z "$found" ]; then
	echo "kernels.sh: no '$flavour' kernel with headers installed; run: scripts/deps.sh $flavour" >&2
	exit 1
fi
printf '%s' "$found" | sort -V | tail -1
