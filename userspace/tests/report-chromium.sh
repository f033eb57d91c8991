#!/bin/bash
# Render `pagetrace report` pages in headless Chromium and check that the
# figures are drawn: KTAP on stdout, one result per page.  Installs
# Debian's chromium when run as root and it is missing; skips without it.
#   userspace/tests/report-chromium.sh [PAGETRACE]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
pt=${1:-$here/pagetrace}
out=$top/build/report-chromium
rm -rf "$out"
mkdir -p "$out"
echo "TAP version 13"
echo "1..2"
skip() {
	echo "ok 1 report-chromium-synthetic # SKIP $1"
	echo "ok 2 report-chromium-go # SKIP $1"
	exit 0
}
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >"$out/apt.log" 2>&1 ||
		sed 's/^/# /' "$out/apt.log" | tail -n 5
fi
command -v chromium >/dev/null || skip "no chromium (apt-get install chromium)"
command -v python3 >/dev/null || skip "no python3"

# A 2M-event synthetic trace (two zones, 4 CPUs, reclaim bursts, losses).
cc -O2 -Wall -Wextra -Werror -I"$top/uapi" -o "$out/gen_trace" "$here/tests/gen_trace.c" ||
	skip "cannot build gen_trace"
"$out/gen_trace" -n 2000000 -c 4 "$out/synthetic.pt"

n=0
check_page() { # NAME TRACE [--go]
	local name=$1 trace=$2 dir
	shift 2
	n=$((n + 1))
	dir=$(mktemp -d "$out/profile.XXXXXX")
	if ! "$pt" report "$@" "$trace" -o "$out/$name.html" 2>"$out/$name.err"; then
		sed 's/^/# /' "$out/$name.err"
		echo "not ok $n report-chromium-$name: pagetrace report failed"
		return
	fi
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$dir" --screenshot="$out/$name.png" \
		--window-size=1400,3000 "file://$out/$name.html" >"$out/$name.chromium.log" 2>&1
	if [ ! -s "$out/$name.png" ]; then
		tail -n 5 "$out/$name.chromium.log" | sed 's/^/# /'
		echo "not ok $n report-chromium-$name: no screenshot"
		return
	fi
	if python3 "$here/tests/check_report.py" "$out/$name.html" \
		--screenshot "$out/$name.png" >"$out/$name.check" 2>&1; then
		sed 's/^/# /' "$out/$name.check"
		echo "ok $n report-chromium-$name ($(stat -c %s "$out/$name.html") bytes)"
	else
		sed 's/^/# /' "$out/$name.check"
		echo "not ok $n report-chromium-$name (screenshot: ${out#"$top"/}/$name.png)"
	fi
}
check_page synthetic "$out/synthetic.pt"
check_page go "$here/tests/data/go-pagetrace.bin" --go
