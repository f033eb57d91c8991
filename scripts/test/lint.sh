#!/bin/bash
# Static checks, reported as KTAP (one result per file / per build) so that
# `make lint` and scripts/test/check.sh share them.  Exit 1 if any check failed.
#
# Usage:
#   scripts/test/lint.sh checkpatch
#       checkpatch.pl --strict --no-tree on the kernel sources.  Needs
#       build/ksrc/scripts/checkpatch.pl (make ksrc).
#   scripts/test/lint.sh kernel-doc
#       scripts/kernel-doc -none -v on the same files: every kernel-doc
#       comment parses and describes every parameter and the return value.
#       Needs build/ksrc/scripts/kernel-doc (make ksrc).
#   scripts/test/lint.sh sparse BUILD_DIR KDIR
#       sparse (C=2: every file, even if up to date) over the module tree
#       already staged in BUILD_DIR (make kbuild), and its
#       selftests/gt_module if present.  A warning or error in one of our
#       files fails; the kernel's own headers are not our business.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CHECKPATCH=$ROOT/build/ksrc/scripts/checkpatch.pl
KERNEL_DOC=$ROOT/build/ksrc/scripts/kernel-doc

n=0 failed=0
result() { # result OK? NAME [diagnostic lines on stdin]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		sed 's/^/# /'
		echo "not ok $n $2"
		failed=1
	fi
}

kernel_files() {
	shopt -s nullglob
	files=(module/*.c module/*.h uapi/linux/*.h selftests/gt_module/*.c selftests/gt_module/*.h
	       bench/pt_bench.c)
}

kernel_doc() {
	local files=() f out
	[ -f "$KERNEL_DOC" ] || { echo "lint.sh: $KERNEL_DOC missing (make ksrc)" >&2; exit 2; }
	kernel_files
	echo "TAP version 13"
	echo "1..${#files[@]}"
	for f in "${files[@]}"; do
		# -v adds the return-value check; its info: lines are chatter.
		out=$(perl "$KERNEL_DOC" -none -v "$f" 2>&1 | grep -v ': info: ' || true)
		if grep -q 'warning\|error' <<<"$out"; then
			result 1 "kernel-doc $f" <<<"$out"
		else
			result 0 "kernel-doc $f" </dev/null
		fi
	done
}

checkpatch() {
	local files=() f out rc
	[ -f "$CHECKPATCH" ] || { echo "lint.sh: $CHECKPATCH missing (make ksrc)" >&2; exit 2; }
	kernel_files
	echo "TAP version 13"
	echo "1..${#files[@]}"
	# A UAPI header must use __inline__ and cannot use BIT(); checkpatch
	# knows that for files under include/uapi/, so check ours from there.
	local tree=$ROOT/build/lint
	rm -rf "$tree"; mkdir -p "$tree/include/uapi/linux"
	for f in "${files[@]}"; do
		local path=$f dir=$ROOT
		if [[ $f == uapi/* ]]; then
			cp "$f" "$tree/include/$f"; path=include/$f dir=$tree
		fi
		rc=0
		out=$(cd "$dir" && perl "$CHECKPATCH" --no-tree --strict --terse --show-types \
			--no-summary -f "$path" 2>&1) || rc=$?
		result "$rc" "checkpatch $f" <<<"${out//include\/uapi\//uapi\/}"
	done
}

sparse() {
	local bdir=${1:?BUILD_DIR} kdir=${2:?KDIR} dirs=() d out rc
	[ -f "$bdir/Kbuild" ] || { echo "lint.sh: nothing staged in $bdir (make kbuild)" >&2; exit 2; }
	dirs=("$bdir")
	[ -f "$bdir/selftests/gt_module/Kbuild" ] && dirs+=("$bdir/selftests/gt_module")
	[ -f "$bdir/bench/Kbuild" ] && dirs+=("$bdir/bench")
	echo "TAP version 13"
	echo "1..${#dirs[@]}"
	for d in "${dirs[@]}"; do
		local name="sparse module"
		[ "$d" = "$bdir" ] || name="sparse ${d#"$bdir"/}"
		rc=0
		out=$(make -s -C "$kdir" M="$d" C=2 modules 2>&1) || rc=$?
		if [ "$rc" != 0 ]; then
			result 1 "$name (build failed)" <<<"$out"
			continue
		fi
		# Our diagnostics (and their "expected/got" continuation lines)
		# start with our path; show them repo-relative.
		out=$(grep "^$bdir/" <<<"$out" | sed "s|^$bdir/||" || true)
		rc=0
		grep -qE '^[^:]+:[0-9]+:[0-9]+: (warning|error):' <<<"$out" && rc=1
		result "$rc" "$name" <<<"$out"
	done
}

case "${1:-}" in
checkpatch) checkpatch ;;
kernel-doc) kernel_doc ;;
sparse) shift; sparse "$@" ;;
*) echo "usage: lint.sh checkpatch | kernel-doc | sparse BUILD_DIR KDIR" >&2; exit 2 ;;
esac
exit "$failed"
