#!/bin/bash
# Convert traces with `pagetrace convert --to trace-cmd` and read them back
# with the real trace-cmd: `trace-cmd report` must print exactly the events
# of `pagetrace dump` (time to the ns, CPU, type, PFN, order, npages, PID
# and comm), `--cpu N` and `-F 'kmem/mm_page_alloc: order > 0'` must filter
# them as they would a native recording, and each chunk's lost events must
# show as trace-cmd's "CPU:N [COUNT EVENTS DROPPED]" before the first event
# that CPU logged after them.  Then KernelShark (Debian's 2.2) opens the
# first file under Xvfb, as an unprivileged user (as root it first shows a
# warning dialog): it must load it, title its window with it and draw the
# CPU rows and the list; the screenshot is kept as
# build/tracecmd/kernelshark.png.  KTAP on stdout; skips without
# trace-cmd; installs kernelshark and Xvfb when run as root.
#   userspace/tests/tracecmd-roundtrip.sh [TRACE...]
# Without TRACE: a trace with tasks, names, a snapshot, long gaps and
# losses (tests/gen_tasks_trace.c) and a 100,000-event one from
# tests/gen_trace.c (no tasks).  PAGETRACE: the CLI (default
# userspace/pagetrace).  Files go to TRACECMD_OUT (default build/tracecmd/),
# which is emptied first.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
pt=${PAGETRACE:-$here/pagetrace}
check="python3 $here/tests/check_tracecmd.py"
out=${TRACECMD_OUT:-$top/build/tracecmd}
rm -rf "$out"
mkdir -p "$out"

echo "TAP version 13"
if [ $# -gt 0 ]; then
	traces=("$@")
else
	traces=("$out/tasks.pt" "$out/gen.pt")
fi
echo "1..$((5 * ${#traces[@]} + 3))"
n=0
skip_all() {
	for ((i = 0; i < 5 * ${#traces[@]} + 3; i++)); do
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
		# check.sh builds userspace first: a generator that does not
		# build is a failure, not a reason to skip.
		sed 's/^/# /' "$out/build.log"
		echo "not ok 1 tracecmd-generators: cannot build them"
		for ((i = 1; i < 5 * ${#traces[@]} + 3; i++)); do
			echo "ok $((i + 1)) tracecmd # SKIP no generated trace"
		done
		exit 1
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
first_src=

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
	if [ -z "$first_dat" ]; then
		first_dat=$name
		first_src=$trace
	fi
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

# A trace cut off inside a chunk (a killed `cat /dev/pagetrace`): convert
# fails, but the file holds every event before the cut, as dump prints them.
if [ -z "$first_dat" ]; then
	n=$((n + 1))
	echo "ok $n tracecmd-truncated # SKIP no trace.dat"
else
	cut=$out/$first_dat.cut
	head -c $(($(stat -c %s "$first_src") * 2 / 3 + 5)) "$first_src" >"$cut.pt"
	"$pt" dump -v -t "$cut.pt" >"$cut.dump" 2>/dev/null
	if "$pt" convert --to trace-cmd "$cut.pt" -o "$cut.dat" 2>"$cut.err"; then
		echo "convert of a cut-off trace succeeded" >>"$cut.err"
		result 1 "tracecmd-truncated" "$cut.err"
	else
		trace-cmd report -t "$cut.dat" >"$cut.report" 2>/dev/null
		$check "$cut.dump" "$cut.report" events >>"$cut.err" 2>&1
		result $? "tracecmd-truncated" "$cut.err"
	fi
fi

# KernelShark: the window of an empty KernelShark has about 4,900
# colourful pixels (buttons, the marker boxes), with tasks.dat about
# 57,000 (the CPU rows, the task colours in the list).
ks_result() { # OK REASON
	if [ "$1" = 0 ]; then
		echo "ok $n tracecmd-kernelshark$2"
	else
		echo "not ok $n tracecmd-kernelshark: $2"
		fail=1
	fi
}
# all_found TOOL...: every one on PATH (command -v with several names
# succeeds if any one is found).
all_found() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || return 1
	done
}

kernelshark_open() { # NAME
	local ks=$out/kernelshark run=() shot
	local tools=(kernelshark xvfb-run xauth xwd xwininfo)
	if ! all_found "${tools[@]}" && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			kernelshark xvfb xauth x11-apps x11-utils >"$out/apt.log" 2>&1 ||
			tail -n 5 "$out/apt.log" | sed 's/^/# /'
	fi
	if ! all_found "${tools[@]}"; then
		echo "ok $n tracecmd-kernelshark # SKIP no ${tools[*]}" \
			"(apt-get install kernelshark xvfb xauth x11-apps x11-utils)"
		return
	fi
	mkdir -p "$ks/run"
	cp "$out/$1.dat" "$ks/trace.dat"
	chmod 700 "$ks/run"
	if [ "$(id -u)" = 0 ]; then
		chown -R 65534:65534 "$ks"
		run=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	fi
	# Wait for the window that names the file, give it time to draw,
	# take the screen, and see whether KernelShark is still running.
	"${run[@]}" env HOME="$ks" XDG_RUNTIME_DIR="$ks/run" timeout 180 \
		xvfb-run -a -s "-screen 0 1600x1000x24" bash -c '
		cd "$HOME" || exit 1
		kernelshark -geometry 1280x900+0+0 "$HOME/trace.dat" >ks.log 2>&1 &
		pid=$!
		for ((i = 0; i < 120; i++)); do
			xwininfo -root -tree 2>/dev/null | grep -q "Kernel Shark (.*trace.dat)" && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.5
		done
		sleep 3
		xwininfo -root -tree >windows.txt 2>&1
		xwd -root -silent >shot.xwd
		if kill $pid 2>/dev/null; then echo running >state; else echo exited >state; fi
		wait $pid' >"$ks/xvfb.log" 2>&1
	sed 's/^/# kernelshark: /' "$ks/ks.log" 2>/dev/null
	if [ "$(cat "$ks/state" 2>/dev/null)" != running ]; then
		sed 's/^/# /' "$ks/xvfb.log"
		ks_result 1 "KernelShark did not run until the screenshot"
		return
	fi
	# kvm_combo and sched_events need KVM and sched events, which the
	# file has none of (nor has a native recording of kmem events).
	if ! grep -q "^Loading .*trace.dat" "$ks/ks.log" ||
	   grep -iv 'plugin "\(kvm_combo\|sched_events\)" failed to initialize' "$ks/ks.log" |
	   grep -qi 'error\|fail\|cannot\|could not\|unable\|abort'; then
		ks_result 1 "KernelShark did not load the file cleanly"
		return
	fi
	if ! grep -q '"Kernel Shark (.*trace.dat)"' "$ks/windows.txt"; then
		ks_result 1 "no KernelShark window titled with the file"
		return
	fi
	if ! shot=$(python3 "$here/tests/xwd_png.py" "$ks/shot.xwd" "$out/kernelshark.png" \
		0 0 1280 900); then
		ks_result 1 "cannot read the screenshot"
		return
	fi
	rm -f "$ks/shot.xwd"
	echo "# screenshot ${out#"$top"/}/kernelshark.png: $shot pixels (empty window: ~4,900)"
	if [ "${shot#colourful }" -lt 20000 ]; then
		ks_result 1 "the window shows no events (see ${out#"$top"/}/kernelshark.png)"
		return
	fi
	ks_result 0 " (${out#"$top"/}/kernelshark.png)"
}
n=$((n + 1))
if [ -z "$first_dat" ]; then
	echo "ok $n tracecmd-kernelshark # SKIP no trace.dat"
else
	kernelshark_open "$first_dat"
fi
exit $fail
