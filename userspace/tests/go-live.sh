#!/bin/bash
# If Go 1.22 is installed (Debian: golang-1.22-go from bookworm-backports),
# build tests/data/goalloc with GOEXPERIMENT=pagetrace, run it for a fresh
# trace and check that pagetrace reads it: KTAP on stdout; skips without Go.
#   userspace/tests/go-live.sh [PAGETRACE]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
pt=${1:-$here/pagetrace}
out=$top/build/go-live
GO=${GO:-/usr/lib/go-1.22/bin/go}
echo "TAP version 13"
echo "1..1"
if [ ! -x "$GO" ]; then
	echo "ok 1 go-live # SKIP no $GO (apt-get install -t bookworm-backports golang-1.22-go)"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out"
if ! GO=$GO "$here/tests/data/goalloc/make-trace.sh" "$out/live.trace" >"$out/make.log" 2>&1; then
	tail -n 10 "$out/make.log" | sed 's/^/# /'
	echo "not ok 1 go-live: building or running goalloc failed"
	exit 1
fi
# Every word decodes; every free matches an allocation; nothing out of order.
if "$pt" stats --go --json "$out/live.trace" >"$out/stats.json" 2>"$out/stats.err" &&
   python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("# %d events (%s), %d Ps, %d without a P" % (d["events"], d["types"], d["nr_cpus"], d["no_cpu"]["events"]))
assert d["types"]["alloc"] > 100 and d["types"]["free"] > 100, "too few events"
assert d["unmatched"]["free"]["events"] == 0, "unmatched frees"
assert d["late_events"] == 0 and d["realloc_events"] == 0, "out of order"
assert d["in_use_end"]["pages"] == d["pages"]["alloc"] - d["pages"]["free"], "in use"
' "$out/stats.json"; then
	echo "ok 1 go-live ($(stat -c %s "$out/live.trace") byte trace from $("$GO" version | cut -d' ' -f3))"
else
	sed 's/^/# /' "$out/stats.err"
	echo "not ok 1 go-live: pagetrace stats --go disagrees (trace: ${out#"$top"/}/live.trace)"
	exit 1
fi
