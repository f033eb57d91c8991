#!/bin/bash
# pagetrace top, on a trace whose frames are known (tests/top_gen.c):
# batch frames checked against the numbers the trace was made with and
# against pagetrace stats --json; the interactive view in tmux: the top
# task and its numbers, the lost count, sort keys, q, SIGTERM and a resize,
# and the terminal put back each time; the live path (mapping, ring, pipe,
# analyzer thread) against tests/top_fakedev.c, a stand-in for
# /dev/pagetrace preloaded into the CLI.  KTAP on stdout.
#   userspace/tests/top-tmux.sh [PAGETRACE]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
pt=${1:-$here/pagetrace}
out=$top/build/top-tmux
trace=$out/top.bin
sock=$out/tmux.sock
failed=0
n=0

echo "TAP version 13"
echo "1..12"

ok() {
	n=$((n + 1))
	echo "ok $n $1"
}

not_ok() {
	n=$((n + 1))
	failed=1
	echo "not ok $n $1"
	[ -f "$out/why" ] && sed 's/^/# /' "$out/why"
}

skip() {
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
}

# check NAME COMMAND...: ok if COMMAND succeeds; its output is the why.
check() {
	local name=$1
	shift
	if "$@" >"$out/why" 2>&1; then
		ok "$name"
	else
		not_ok "$name"
	fi
	rm -f "$out/why"
}

rm -rf "$out"
mkdir -p "$out"

# ------------------------------------------------------------ the trace
gen() {
	${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -I"$top/uapi" -I"$here/lib" \
		-I"$here/tests" -o "$out/top_gen" "$here/tests/top_gen.c" \
		"$here/tests/synth.c" "$here/lib/libpagetrace.a" && "$out/top_gen" "$trace" &&
	"$pt" stats --json "$trace" >"$out/stats.json" &&
	"$pt" stats --by task --json "$trace" >"$out/tasks.json"
}
check "top-trace: build tests/top_gen.c, write the trace, pagetrace stats reads it" gen
if [ ! -s "$out/stats.json" ]; then
	for i in 2 3 4 5 6 7 8 9 10 11 12; do
		skip "top-$i" "no trace"
	done
	exit 1
fi

# --------------------------------------------------------------- batch
# Frames of 10 s of trace (-d 0.2 x 50): two, the second the trace's end.
# A hang is a failure too: timeout.
timeout 60 "$pt" top -b -d 0.2 --speed 50 --replay "$trace" >"$out/batch.txt" 2>"$out/batch.err"
echo $? >"$out/batch.rc"

# The frames as JSON: header numbers and the task, order and zone rows.
cat >"$out/parse.py" <<'EOF'
import json, re, sys
frames, cur, table = [], None, None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("pagetrace top - "):
        cur = {"tasks": {}, "orders": {}, "zones": {}, "order": [],
               "t": float(re.search(r"t=([-0-9.]+) s", line).group(1)),
               "secs": float(re.search(r"interval ([0-9.]+) s", line).group(1))}
        frames.append(cur)
        table = None
        continue
    if cur is None:
        continue
    m = re.match(r"lost: (\d+) events \(\+(\d+)\)   events: (\d+)", line)
    if m:
        cur["lost"], cur["lost_delta"], cur["events"] = map(int, m.groups())
        continue
    m = re.match(r"pages/s: .*in use: (-?\d+) pages \(([-+]\d+)\)   interval: "
                 r"alloc (\d+) free (\d+) reclaim (\d+) pages", line)
    if m:
        cur["in_use"], cur["in_use_delta"], cur["alloc"], cur["free"], cur["reclaim"] = \
            map(int, m.groups())
        continue
    for key, word in (("tasks", "TGID"), ("orders", "ORDER"), ("zones", "ZONE")):
        if line.split()[:1] == [word]:
            table = key
            break
    else:
        if not line.strip():
            table = None
        elif table:
            f = line.split()
            if table == "tasks":
                row = {"comm": f[1]}
                name = f[0]
                cur["order"].append(f[1])
            else:
                row = {}
                name = f[0]
            row.update(zip(("alloc", "free", "reclaim", "in_use", "delta"),
                           map(float, f[-5:])))
            cur[table][name] = row
json.dump(frames, sys.stdout, indent=1)
EOF

batch_known() {
	[ "$(cat "$out/batch.rc")" = 0 ] || { cat "$out/batch.err"; return 1; }
	python3 "$out/parse.py" "$out/batch.txt" >"$out/frames.json" || return 1
	python3 - "$out/frames.json" <<'EOF'
import json, sys
fr = json.load(open(sys.argv[1]))
def eq(what, got, want):
    if got != want:
        sys.exit("%s: %r, want %r" % (what, got, want))
eq("frames", len(fr), 2)
a, b = fr
eq("frame 0 interval", a["secs"], 10.0)
eq("frame 0 lost", (a["lost"], a["lost_delta"]), (37, 37))
eq("frame 0 top task", a["order"][0], "hog")
h = a["tasks"]["4242"]
eq("frame 0 hog", (h["alloc"], h["free"], h["reclaim"], h["in_use"], h["delta"]),
   (400, 0, 0, 4000, 4000))
c = a["tasks"]["777"]
eq("frame 0 churn", (c["comm"], c["alloc"], c["free"], c["in_use"]), ("churn", 100, 100, 0))
eq("frame 0 kswapd0 absent", "99" in a["tasks"], False)
eq("frame 0 order 2 alloc/s", a["orders"]["2"]["alloc"], 400)
eq("frame 0 Normal in use", a["zones"]["0/Normal"]["in_use"], 4000)
eq("frame 1 lost", (b["lost"], b["lost_delta"]), (42, 5))
h = b["tasks"]["4242"]
eq("frame 1 hog", (h["alloc"], h["in_use"], h["delta"]), (400, 6000, 2000))
k = b["tasks"]["99"]
eq("frame 1 kswapd0", (k["comm"], k["reclaim"]), ("kswapd0", 200))
EOF
}
check "top-batch-known: -b frames have hog 400 pages/s, in use 4000 then 6000, kswapd0 200/s reclaim, lost 37 then 42" batch_known

batch_stats() {
	[ -s "$out/frames.json" ] || { echo "no frames"; return 1; }
	python3 - "$out/frames.json" "$out/stats.json" "$out/tasks.json" <<'EOF'
import json, sys
fr = json.load(open(sys.argv[1]))
st = json.load(open(sys.argv[2]))
tk = {str(t["tgid"]): t for t in json.load(open(sys.argv[3]))["tasks"]}
def eq(what, got, want):
    if got != want:
        sys.exit("%s: top says %r, stats --json %r" % (what, got, want))
last = fr[-1]
for t in ("alloc", "free", "reclaim"):
    want = st["pages"][t] - (st["snapshot"]["pages"] if t == "alloc" else 0)
    eq("pages " + t + " over all frames", sum(f[t] for f in fr), want)
eq("events", last["events"], st["events"] - st["snapshot"]["events"])
eq("lost", last["lost"], st["lost"])
eq("in use at the end", last["in_use"], st["in_use_end"]["pages"])
eq("sum of in-use changes", sum(f["in_use_delta"] for f in fr), st["in_use_end"]["pages"])
for z in st["zones"]:
    name = "%d/%s" % (z["node"], z["name"])
    eq("zone " + name + " in use", last["zones"][name]["in_use"], z["in_use_end"])
for tgid, t in tk.items():
    if tgid not in last["tasks"]:
        eq("task " + tgid + " in use", 0, t["in_use_end"])
        continue
    eq("task " + tgid + " in use", last["tasks"][tgid]["in_use"], t["in_use_end"])
    for ty in ("alloc", "free", "reclaim"):
        got = sum(f["tasks"][tgid][ty] * f["secs"] for f in fr if tgid in f["tasks"])
        # Rates are printed rounded: half a page per second per frame.
        slack = sum(0.5 * f["secs"] for f in fr) + 1e-6
        if abs(got - t["pages"][ty]) > slack:
            sys.exit("task %s %s pages: top %.1f, stats --by task %d" % (tgid, ty, got, t["pages"][ty]))
EOF
}
check "top-batch-stats: -b frames add up to pagetrace stats --json and stats --by task --json" batch_stats

# ---------------------------------------------------------------- tmux
if ! command -v tmux >/dev/null; then
	for i in 4 5 6 7 8; do
		skip "top-tmux-$i" "no tmux"
	done
else
	tm() { tmux -S "$sock" "$@"; }
	screen() { tm capture-pane -p -t top; }
	# wait_for REGEX: until the screen matches (15 s at most: the machine
	# may be busy).
	wait_for() {
		for _ in $(seq 150); do
			screen | grep -qE -- "$1" && return 0
			sleep 0.1
		done
		echo "the screen never showed /$1/:"
		screen
		return 1
	}
	# The first task row: the line after the TGID header.
	first_task() { screen | awk 'f { print $2; exit } $1 == "TGID" { f = 1 }'; }

	tm -f /dev/null new-session -d -s top -x 160 -y 50 "bash --norc --noprofile"
	tm send-keys -t top "PS1='top-test\$ '; cd $out; stty -g >stty.before; clear; echo BEFORE-TOP" Enter
	tm send-keys -t top "$pt top -d 0.2 --speed 50 --replay $trace; stty -g >stty.after; echo AFTER-TOP" Enter

	screen_known() {
		# The bottom line: the title's "END OF TRACE" is cut off at the
		# screen's width when the trace's path is long.
		wait_for "^\(end of the trace: q quits\)" || return 1
		screen >"$out/screen.txt"
		grep -q "^lost: 42 events (+5)" "$out/screen.txt" || { echo "no lost 42"; cat "$out/screen.txt"; return 1; }
		[ "$(first_task)" = hog ] || { echo "first task $(first_task)"; cat "$out/screen.txt"; return 1; }
		grep -qE "^ +4242 hog +400 +0 +0 +6000 +\+2000$" "$out/screen.txt" ||
			{ echo "no hog row with 400/s, 6000 in use (+2000)"; cat "$out/screen.txt"; return 1; }
		grep -qE "^ +99 kswapd0 +0 +0 +200 " "$out/screen.txt" ||
			{ echo "no kswapd0 row with 200/s reclaim"; cat "$out/screen.txt"; return 1; }
		grep -q "hog_fill_buffer < do_syscall_64" "$out/screen.txt" ||
			{ echo "no stack of hog"; return 1; }
		! grep -q BEFORE-TOP "$out/screen.txt" || { echo "not on the alternate screen"; return 1; }
	}
	check "top-tmux-screen: hog first with 400 pages/s and 6000 (+2000) in use, lost 42 shown" screen_known

	sort_keys() {
		local k want
		for k in f:churn r:kswapd0 u:hog a:hog; do
			tm send-keys -t top "${k%%:*}"
			want=${k#*:}
			wait_for "sort: $(case ${k%%:*} in a) echo alloc;; f) echo free;; u) echo 'in use';; r) echo reclaim;; esac)" || return 1
			[ "$(first_task)" = "$want" ] || { echo "key ${k%%:*}: first task $(first_task), want $want"; screen; return 1; }
		done
	}
	check "top-tmux-sort: keys f, r, u, a put churn, kswapd0, hog, hog first" sort_keys

	resize() {
		tm resize-window -t top -x 90 -y 20 || return 1
		wait_for "^pagetrace top" || return 1
		sleep 0.3
		screen >"$out/small.txt"
		awk 'length > 90 { bad = 1 } END { exit bad }' "$out/small.txt" || { echo "lines wider than 90"; return 1; }
		[ "$(grep -c . "$out/small.txt")" -le 20 ] || { echo "more than 20 lines"; return 1; }
		grep -q "^lost: 42" "$out/small.txt" || { echo "lost count gone"; cat "$out/small.txt"; return 1; }
		tm resize-window -t top -x 160 -y 50
	}
	check "top-tmux-resize: at 90x20 the view fits and keeps the lost count" resize

	quit() {
		tm send-keys -t top q
		wait_for "^AFTER-TOP" || return 1
		screen >"$out/after.txt"
		grep -q BEFORE-TOP "$out/after.txt" || { echo "the main screen did not come back"; cat "$out/after.txt"; return 1; }
		! grep -q "^pagetrace top - " "$out/after.txt" || { echo "top's screen left behind"; return 1; }
		cmp -s "$out/stty.before" "$out/stty.after" ||
			{ echo "terminal settings differ: $(cat "$out/stty.before") vs $(cat "$out/stty.after")"; return 1; }
	}
	check "top-tmux-quit: q quits, the main screen and the terminal settings come back" quit

	sigterm() {
		local shell pid
		tm send-keys -t top "clear; echo BEFORE-TERM; $pt top -d 0.2 --speed 1 --replay $trace; stty -g >stty.after2; echo AFTER-TERM" Enter
		wait_for "^pagetrace top - " || return 1
		shell=$(tm display-message -p -t top '#{pane_pid}')
		pid=$(pgrep -P "$shell" -x pagetrace) || { echo "no pagetrace under the pane's shell"; return 1; }
		kill -TERM "$pid"
		wait_for "^AFTER-TERM" || return 1
		screen | grep -q BEFORE-TERM || { echo "the main screen did not come back"; return 1; }
		cmp -s "$out/stty.before" "$out/stty.after2" || { echo "terminal settings differ after SIGTERM"; return 1; }
	}
	check "top-tmux-sigterm: SIGTERM ends top and puts the terminal back" sigterm
	tm kill-server 2>/dev/null
fi

# ----------------------------------------------------- live, faked device
# The trace's chunks published into a fake ring at 10 times their pace.
fake() {
	LD_PRELOAD=$out/fakedev.so PT_FAKE_TRACE=$trace PT_FAKE_SPEED=10 "$@"
}
if ! ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$top/uapi" \
		-o "$out/fakedev.so" "$here/tests/top_fakedev.c" -ldl -lpthread >"$out/fakedev.log" 2>&1; then
	sed 's/^/# /' "$out/fakedev.log"
	not_ok "top-live-fake-batch: building tests/top_fakedev.c failed"
	not_ok "top-live-fake-tmux: building tests/top_fakedev.c failed"
	not_ok "top-live-fake-errors: building tests/top_fakedev.c failed"
elif ! ldd "$pt" >/dev/null 2>&1; then
	skip "top-live-fake-batch" "$pt is linked statically: no LD_PRELOAD"
	skip "top-live-fake-tmux" "$pt is linked statically: no LD_PRELOAD"
	skip "top-live-fake-errors" "$pt is linked statically: no LD_PRELOAD"
else
	# open() failing as the device fails: busy, not root.
	live_errors() {
		local e rc msg
		for e in "16:another session is running" "1:needs root"; do
			rc=0
			PT_FAKE_OPEN_ERRNO=${e%%:*} fake timeout 60 "$pt" top -b -n 1 >/dev/null \
				2>"$out/err.txt" || rc=$?
			msg=${e#*:}
			[ $rc = 1 ] || { echo "errno ${e%%:*}: exit status $rc, want 1"; return 1; }
			grep -q "$msg" "$out/err.txt" || { echo "errno ${e%%:*}: no '$msg' in:"; cat "$out/err.txt"; return 1; }
		done
	}
	check "top-live-fake-errors: a busy device and a user without root get messages that say so" live_errors

	live_batch() {
		fake timeout 60 "$pt" top -b -d 0.5 -n 6 >"$out/live.txt" 2>"$out/live.err" ||
			{ echo "exit status $?"; cat "$out/live.err"; return 1; }
		python3 "$out/parse.py" "$out/live.txt" >"$out/live.json" || return 1
		python3 - "$out/live.json" "$out/stats.json" <<'EOF2'
import json, sys
fr = json.load(open(sys.argv[1]))
st = json.load(open(sys.argv[2]))
if len(fr) != 6:
    sys.exit("%d frames, want 6 (-n 6)" % len(fr))
# Wall-clock intervals of about 0.5 s (a late frame makes the next one short).
for f in fr:
    if not 0.2 < f["secs"] < 2.0:
        sys.exit("an interval of %s s with -d 0.5" % f["secs"])
if sum(f["secs"] for f in fr) / len(fr) > 0.8:
    sys.exit("intervals of %.2f s on average with -d 0.5" % (sum(f["secs"] for f in fr) / len(fr)))
if fr[-1]["lost"] != st["lost"]:
    sys.exit("lost %d, the trace's chunks say %d" % (fr[-1]["lost"], st["lost"]))
busy = [f for f in fr if f["alloc"]]
if not busy or busy[0]["order"][0] != "hog":
    sys.exit("hog is not the first task of the first busy frame")
if "churn" not in busy[0]["order"]:
    sys.exit("no churn in the first busy frame")
# The last events wait for later ones to be ordered: none come, so a few
# stay held; all the others must be there, and nothing twice.
want = st["pages"]["alloc"] - st["snapshot"]["pages"]
got = sum(f["alloc"] for f in fr)
if not 0.9 * want <= got <= want:
    sys.exit("%d pages allocated in the frames, the trace has %d" % (got, want))
if sum(f["in_use_delta"] for f in fr) != fr[-1]["in_use"]:
    sys.exit("the changes of pages in use do not add up to the last frame's")
EOF2
	}
	check "top-live-fake-batch: live -b -n 6 through a fake /dev/pagetrace: hog first, lost 42, the pages of the trace" live_batch

	if command -v tmux >/dev/null; then
		live_tmux() {
			tm -f /dev/null new-session -d -s top -x 160 -y 50 "bash --norc --noprofile"
			tm send-keys -t top "PS1='top-test\$ '; cd $out; stty -g >stty.before; clear; echo BEFORE-LIVE" Enter
			tm send-keys -t top "LD_PRELOAD=$out/fakedev.so PT_FAKE_TRACE=$trace PT_FAKE_SPEED=10 $pt top -d 0.3; stty -g >stty.after3; echo AFTER-LIVE" Enter
			wait_for "^ +4242 hog " || return 1
			screen | grep -q "^pagetrace top - live /dev/pagetrace" || { screen; return 1; }
			tm send-keys -t top u
			wait_for "sort: in use" || return 1
			[ "$(first_task)" = hog ] || { echo "u: first task $(first_task)"; return 1; }
			tm send-keys -t top q
			wait_for "^AFTER-LIVE" || return 1
			screen | grep -q BEFORE-LIVE || { echo "the main screen did not come back"; return 1; }
			cmp -s "$out/stty.before" "$out/stty.after3" || { echo "terminal settings differ"; return 1; }
		}
		check "top-live-fake-tmux: the live view in tmux shows hog, sorts, q restores the terminal" live_tmux
		tm kill-server 2>/dev/null
	else
		skip "top-live-fake-tmux" "no tmux"
	fi
fi

# ---------------------------------------------------------------- live
if [ -e /dev/pagetrace ]; then
	skip "top-live-nomodule" "/dev/pagetrace exists here (the VM test runs top live)"
else
	nomodule() {
		local rc=0
		timeout 60 "$pt" top -b -n 1 >/dev/null 2>"$out/live.err" || rc=$?
		[ $rc = 1 ] || { echo "exit status $rc, want 1"; return 1; }
		grep -q "module is not loaded" "$out/live.err" || { cat "$out/live.err"; return 1; }
	}
	check "top-live-nomodule: without the module, a clear message and status 1" nomodule
fi
exit $failed
