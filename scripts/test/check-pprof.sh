#!/bin/bash
# Load a profile made by `pagetrace pprof` in the VM (selftests/
# pagetrace_pprof_test.c) with the real `go tool pprof`, and check that it
# holds allocation samples whose stacks name the kernel's allocator and
# pagetrace_gt's code: gt_pages() allocated one order-3 block, sampled at
# stack_rate=1, so it must account for exactly 8 pages.  KTAP on stdout; a
# missing Go is a SKIP with why.
#
# Usage: scripts/test/check-pprof.sh PROFILE
set -uo pipefail

prof=${1:?usage: check-pprof.sh PROFILE}
GO=${GO:-}
for g in "$GO" /usr/lib/go-1.22/bin/go /usr/bin/go; do
	[ -n "$g" ] && [ -x "$g" ] && { GO=$g; break; }
done
echo "TAP version 13"
echo "1..1"
if [ ! -s "$prof" ]; then
	echo "not ok 1 pprof-go: no profile at $prof (the VM test did not write one)"
	exit 0
fi
if [ -z "$GO" ] || [ ! -x "$GO" ]; then
	echo "ok 1 pprof-go # SKIP no go (scripts/deps.sh installs golang-1.22-go)"
	exit 0
fi
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
out=$(HOME=$home "$GO" tool pprof -top -nodecount=1000 -sample_index=alloc_pages "$prof" 2>&1)
rc=$?
bad=
[ $rc = 0 ] || bad="go tool pprof exited with $rc"
# The allocator's entry: __alloc_pages*, or __alloc_frozen_pages* (7.x).
[ -z "$bad" ] && ! grep -Eq '__alloc_(frozen_)?pages' <<<"$out" && bad="no __alloc_pages frame"
[ -z "$bad" ] && ! grep -Eq ' 8pages +[0-9.]+% +gt_pages$' <<<"$out" &&
	bad="gt_pages (pagetrace_gt) does not account for its 8 pages"
[ -z "$bad" ] && ! grep -q 'Type: alloc_pages' <<<"$out" && bad="no alloc_pages sample type"
grep -E 'Type:|Total|__alloc_(frozen_)?pages|gt_pages' <<<"$out" | sed 's/^/# /'
if [ -n "$bad" ]; then
	echo "not ok 1 pprof-go: $bad"
else
	echo "ok 1 pprof-go: go tool pprof reads the profile of a real trace"
fi
