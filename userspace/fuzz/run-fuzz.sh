#!/bin/bash
# Fuzz the decoders for a bounded time; one KTAP result on stdout.
#   userspace/fuzz/run-fuzz.sh [SECONDS]     (default 60)
# Builds build/fuzz-bin/fuzz_reader (clang, libFuzzer, ASan, UBSan) and
# the seed writer, then runs it on a fresh corpus in build/fuzz/ seeded from them and the
# committed Go trace.  Crash inputs are kept in build/fuzz/crashes/.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
secs=${1:-60}
out=$top/build/fuzz
echo "TAP version 13"
echo "1..1"
mkdir -p "$out"
if ! { command -v clang && dpkg -s libclang-rt-14-dev; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y clang libclang-rt-14-dev \
		>"$out/apt.log" 2>&1 || tail -n 5 "$out/apt.log" | sed 's/^/# /'
fi
if ! command -v clang >/dev/null; then
	echo "ok 1 fuzz-reader # SKIP no clang (apt-get install clang libclang-rt-14-dev)"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out/corpus" "$out/seeds" "$out/crashes"
if ! make -s -C "$here" fuzz >"$out/build.log" 2>&1; then
	sed 's/^/# /' "$out/build.log" | tail -n 20
	echo "not ok 1 fuzz-reader: build failed"
	exit 1
fi
"$top/build/fuzz-bin/seeds" "$out/seeds" && cp "$here/tests/data/go-pagetrace.bin" "$out/seeds/"
# -timeout: one input must not take long (a hang); -rss_limit_mb: nor
# grow without bound.  UBSan findings abort, so they count as crashes.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
ASAN_OPTIONS=detect_leaks=1 \
"$top/build/fuzz-bin/fuzz_reader" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-max_len=65536 -print_final_stats=1 -artifact_prefix="$out/crashes/" \
	"$out/corpus" "$out/seeds" >"$out/fuzz.log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ +DONE' "$out/fuzz.log" |
	sed 's/^/# /'
if [ $rc = 0 ]; then
	echo "ok 1 fuzz-reader (${secs}s, no crash, hang or bad access)"
else
	grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$out/fuzz.log" | head -n 20 |
		sed 's/^/# /'
	echo "not ok 1 fuzz-reader: libFuzzer status $rc (log: build/fuzz/fuzz.log)"
fi
exit $rc
