#!/bin/bash
# Convert traces with `pagetrace convert --to trace-cmd` and read them back
# with the real trace-cmd: `trace-cmd report` must print exactly the events
# of `pagetrace dump` (time to the ns, CPU, type, PFN, order, npages, PID
# and comm), `--cpu N` and `-F 'kmem/mm_page_alloc: order > 0'` must filter
# them as they would a native recording, and each chunk's lost events must
# show as trace-cmd's "CPU:N [COUNT EVENTS DROPPED]" before the first event
# that CPU logged after them.  KTAP on stdout; skips without trace-cmd.
#   userspace/tests/tracecmd-roundtrip.sh [TRACE...]
# Without TRACE: a trace with tasks, names, a snapshot, long gaps and
# losses (tests/gen_tasks_trace.c) and a 100,000-event one from
# tests/gen_trace.c (no tasks).  PAGETRACE: the CLI (default
# userspace/pagetrace).  Files go to build/tracecmd/.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
pt=${PAGETRACE:-$here/pagetrace}
check="python3 $here/tests/check_tracecmd.py"
out=$top/build/tracecmd
rm -rf "$out"
mkdir -p "$out"

echo "TAP version 13"
if [ $# -gt 0 ]; then
	traces=("$@")
else
	traces=("$out/tasks.pt" "$out/gen.pt")
fi
echo "1..$((5 * ${#traces[@]} + 1))"
n=0
skip_all() {
	for ((i = 0; i < 5 * ${#traces[@]} + 1; i++)); do
		echo "ok $((i + 1)) tracecmd # SKIP $1"
	done
	exit 0
}
command -v trace-cmd >/dev/null || skip_all "no trace-cmd (apt-get install trace-cmd)"
command -v python3 >/dev/null || skip_all "no python3"
[ -x "$pt" ] || skip_all "no $pt (make -C userspace)"

if [ $# -eq 0 ]; then
	if ! cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$top/uapi" -I"$here/lib" \
		-I"$here/tests" -o "$out/gen_tasks_trace" "$here/tests/gen_tasks_trace.c" \
		"$here/tests/synth.c" "$here/lib/libpagetrace.a" 2>"$out/build.log" ||
	   ! cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$top/uapi" -o "$out/gen_trace" \
		"$here/tests/gen_trace.c" 2>>"$out/build.log"; then
		sed 's/^/# /' "$out/build.log"
		skip_all "cannot build the trace generators"
	fi
	"$out/gen_tasks_trace" -n 20000 -c 4 "$out/tasks.pt"
	"$out/gen_trace" -n 100000 -c 4 -s 1 "$out/gen.pt"
fi

result() { # OK NAME [DIAGNOSTICS FILE]
	n=$((n + 1))
	[ -n "${3:-}" ] && sed 's/^/# /; s/^# # /# /' "$3"
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fail=1
	fi
}
fail=0
first_dat=

for trace in "${traces[@]}"; do
	name=$(basename "$trace")
	name=${name%.*}
	dat=$out/$name.dat
	# The expected events: every one, with chunk headers for the losses.
	if ! "$pt" dump -v -t "$trace" >"$out/$name.dump" 2>"$out/$name.err" ||
	   ! "$pt" convert --to trace-cmd "$trace" -o "$dat" 2>>"$out/$name.err"; then
		result 1 "tracecmd-$name-convert" "$out/$name.err"
		for t in events cpu alloc-order missed; do
			n=$((n + 1))
			echo "ok $n tracecmd-$name-$t # SKIP no trace.dat"
		done
		continue
	fi
	[ -z "$first_dat" ] && first_dat=$name
	echo "pagetrace $(stat -c %s "$trace") bytes -> trace.dat $(stat -c %s "$dat") bytes" \
		>"$out/$name.convert"
	result 0 "tracecmd-$name-convert" "$out/$name.convert"

	trace-cmd report -t "$dat" >"$out/$name.report" 2>"$out/$name.report.err"
	rc=$?
	$check "$out/$name.dump" "$out/$name.report" events >"$out/$name.events" 2>&1 || rc=1
	cat "$out/$name.report.err" >>"$out/$name.events"
	result $rc "tracecmd-$name-events" "$out/$name.events"

	rc=0
	: >"$out/$name.cpu"
	cpus=$(sed -n 's/^# pagetrace .* nr_cpus=\([0-9]*\) .*/\1/p' "$out/$name.dump")
	for ((c = 0; c < cpus; c++)); do
		trace-cmd report -t --cpu "$c" "$dat" >"$out/$name.report.cpu$c" 2>>"$out/$name.cpu" &&
		$check "$out/$name.dump" "$out/$name.report.cpu$c" cpu "$c" >>"$out/$name.cpu" 2>&1 ||
			rc=1
	done
	result $rc "tracecmd-$name-cpu-filter" "$out/$name.cpu"

	trace-cmd report -t -F 'kmem/mm_page_alloc: order > 0' "$dat" \
		>"$out/$name.report.order" 2>"$out/$name.order" &&
	$check "$out/$name.dump" "$out/$name.report.order" alloc-order >>"$out/$name.order" 2>&1
	result $? "tracecmd-$name-alloc-order-filter" "$out/$name.order"

	$check "$out/$name.dump" "$out/$name.report" missed >"$out/$name.missed" 2>&1
	rc=$?
	if [ $rc = 3 ]; then
		n=$((n + 1))
		echo "ok $n tracecmd-$name-missed-events # SKIP the trace reports no lost events"
	else
		result $rc "tracecmd-$name-missed-events" "$out/$name.missed"
	fi
done

# The comparison must notice a wrong event: change one PFN in the file
# (the first mm_page_alloc record's, found by its bytes) and check again.
n=$((n + 1))
if [ -z "$first_dat" ]; then
	echo "ok $n tracecmd-detects-change # SKIP no trace.dat"
elif python3 - "$out/$first_dat.dat" "$out/$first_dat.bad.dat" "$out/$first_dat.dump" <<'EOF'
import re, struct, sys
src, dst, dump = sys.argv[1:4]
data = bytearray(open(src, 'rb').read())
for line in open(dump):
    w = line.split()
    if line.startswith('#') or len(w) < 5 or w[2] != 'alloc':
        continue
    pfn = int(w[3].split('=')[1], 16)
    # common_type 1001 (mm_page_alloc), flags and preempt count 0, then
    # the pid (any), then the pfn
    m = re.search(re.escape(struct.pack('<HBB', 1001, 0, 0)) + b'....' +
                  re.escape(struct.pack('<Q', pfn)), data, re.S)
    if m:
        data[m.start() + 8:m.start() + 16] = struct.pack('<Q', pfn ^ 0x10)
        open(dst, 'wb').write(data)
        sys.exit(0)
sys.exit(1)
EOF
then
	trace-cmd report -t "$out/$first_dat.bad.dat" >"$out/$first_dat.bad.report" 2>/dev/null
	if $check "$out/$first_dat.dump" "$out/$first_dat.bad.report" events \
		>"$out/$first_dat.bad" 2>&1; then
		echo "# a trace.dat with one PFN changed still matched the dump"
		echo "not ok $n tracecmd-detects-change"
		fail=1
	else
		grep -m 3 "missing\|extra" "$out/$first_dat.bad" | sed 's/^# */# caught: /'
		echo "ok $n tracecmd-detects-change"
	fi
else
	echo "# no mm_page_alloc record found in $first_dat.dat"
	echo "not ok $n tracecmd-detects-change"
	fail=1
fi
exit $fail
