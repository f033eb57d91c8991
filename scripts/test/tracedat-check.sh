#!/bin/bash
# The trace.dat reader against trace-cmd itself: for each trace-cmd file a
# VM recorded (scripts/test/tracedat-guest.sh), or each FILE given, the
# counts `pagetrace stats --json` gives (events by type, by order, by CPU,
# losses by CPU; with -T, allocations with a stack and distinct stacks)
# must equal those of `trace-cmd report` on the same file, and pagetrace
# must say what such a file lacks; `pagetrace pprof` must make a profile of
# a -T file's stacks (every allocation with a kernel_stack a sample, as many
# as trace-cmd report shows; `go tool pprof` must read it when Go is
# installed) and refuse a file without stacks, saying so.  A free is an mm_page_free (the kernel
# fires one for each mm_page_free_batched page too); mm_page_free_batched
# counts only in a file without mm_page_free.  The converted stream must
# be in time order (late_events 0), and pagetrace's unmatched frees at
# most the frees of pages the report shows no allocation of before.
# KTAP on stdout.
#   scripts/test/tracedat-check.sh RESULTS-DIR | FILE.dat...
# RESULTS-DIR holds tracedat/NAME.dat and NAME.rc (the guest's recording
# status).  PAGETRACE: the CLI (default userspace/pagetrace, built with
# libtracecmd).  TRACEDAT_EXPECTED=1 (check.sh, when it gave the guest
# trace-cmd): no recording is a failure, not a skip.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
pt=${PAGETRACE:-$top/userspace/pagetrace}

if [ $# = 1 ] && [ -d "$1" ]; then
	files=()
	for rc in "$1"/tracedat/*.rc; do
		[ -e "$rc" ] && files+=("${rc%.rc}.dat")
	done
else
	files=("$@")
fi
echo "TAP version 13"
if [ ${#files[@]} = 0 ]; then
	echo "1..1"
	if [ "${TRACEDAT_EXPECTED:-0}" = 1 ]; then
		echo "not ok 1 tracedat-in: the guest was given trace-cmd but recorded nothing"
		exit 1
	fi
	echo "ok 1 tracedat-in # SKIP no trace-cmd recording (no trace-cmd in the guest)"
	exit 0
fi
echo "1..$((3 * ${#files[@]}))"
# check.sh builds it in its host steps, which HOST_CHECKS=0 skips.
[ -x "$pt" ] || make -s -C "$top/userspace" pagetrace >&2
n=0
fail=0
GO=${GO:-}
for g in "$GO" /usr/lib/go-1.22/bin/go /usr/bin/go; do
	[ -n "$g" ] && [ -x "$g" ] && { GO=$g; break; }
done
# pprof_check FILE DIR: result $n for `pagetrace pprof FILE`; DIR holds
# report.txt (trace-cmd report) and compare.txt (the counts compared).
pprof_check() {
	local f=$1 d=$2 name prc want got bad='' top
	name=$(basename "$f" .dat)
	"$pt" pprof "$f" -o "$d/p.pb.gz" >"$d/pprof.out" 2>"$d/pprof.err"
	prc=$?
	if grep -q 'kernel_stack:' "$d/report.txt"; then
		want=$(sed -n 's/^# stacks of allocations (-T): trace-cmd report \([0-9]*\)$/\1/p' \
			"$d/compare.txt")
		got=$(sed -n 's/.*: \([0-9]*\) sampled allocations, .*/\1/p' "$d/pprof.out" \
			"$d/pprof.err" | head -n 1)
		if [ "$prc" != 0 ]; then
			bad="pagetrace pprof exited with $prc"
		elif [ ! -s "$d/p.pb.gz" ] || ! gzip -t "$d/p.pb.gz" 2>/dev/null; then
			bad="no gzipped profile written"
		elif [ -z "$want" ] || [ "$want" = 0 ] || [ "$got" != "$want" ]; then
			bad="${got:-no} sampled allocations, trace-cmd report has ${want:-no} with a stack"
		elif [ -n "$GO" ]; then
			top=$(HOME=$d "$GO" tool pprof -top -sample_index=alloc_pages "$d/p.pb.gz" 2>&1)
			grep -E 'Type:|Total' <<<"$top" | sed 's/^/# go tool pprof: /'
			grep -q 'Type: alloc_pages' <<<"$top" && grep -Eq '__alloc_(frozen_)?pages' <<<"$top" ||
				bad="go tool pprof cannot read it, or finds no __alloc_pages frame"
		fi
		sed 's/^/# /' "$d/pprof.out" "$d/pprof.err" | grep -v ': note: '
		if [ -z "$bad" ]; then
			echo "ok $n tracedat-in-$name-pprof: a profile of the $want allocations with a -T stack"
		else
			fail=1; echo "not ok $n tracedat-in-$name-pprof: $bad"
		fi
	elif [ "$prc" != 0 ] && [ ! -e "$d/p.pb.gz" ] && grep -q 'no call stacks' "$d/pprof.err"; then
		echo "ok $n tracedat-in-$name-pprof: refused, no stacks in the file"
	else
		sed 's/^/# /' "$d/pprof.err" | grep -v ': note: '
		fail=1; echo "not ok $n tracedat-in-$name-pprof: a file without stacks not refused clearly (status $prc)"
	fi
}
for f in "${files[@]}"; do
	name=$(basename "$f" .dat)
	n=$((n + 1))
	rc=$(cat "${f%.dat}.rc" 2>/dev/null || echo 0)
	if [ "$rc" != 0 ] || [ ! -s "$f" ]; then
		sed 's/^/# /' "${f%.dat}.log" 2>/dev/null | tail -n 20
		fail=1; echo "not ok $n tracedat-in-$name: trace-cmd record failed in the guest (status $rc)"
		n=$((n + 1))
		fail=1; echo "not ok $n tracedat-in-$name-notes: no recording"
		n=$((n + 1))
		fail=1; echo "not ok $n tracedat-in-$name-pprof: no recording"
		continue
	fi
	d=$(mktemp -d)
	"$pt" stats --json "$f" >"$d/stats.json" 2>"$d/stats.err"
	prc=$?
	trace-cmd report -i "$f" >"$d/report.txt" 2>"$d/report.err"
	trc=$?
	if python3 - "$d/stats.json" "$d/report.txt" "$prc" "$trc" <<'PY' | tee "$d/compare.txt"; then
import collections, json, re, sys
stats_path, report_path, prc, trc = sys.argv[1:]
if prc != '0' or trc != '0':
    print(f'# pagetrace exit {prc}, trace-cmd report exit {trc}')
    sys.exit(1)
s = json.load(open(stats_path))
line = re.compile(r'\[(\d+)\]\s+(?:\S+\s+)?\d+\.\d+:\s+(\w+):\s+(.*)$')
types, orders, cpus = collections.Counter(), collections.Counter(), collections.Counter()
failed_allocs = 0
# Batched frees are reported as mm_page_free too: count them only in a
# file without mm_page_free.
with open(report_path, errors='replace') as fh:
    has_free = any(' mm_page_free: ' in l for l in fh)
batched = 0
# Pages freed with no allocation of them earlier in the report: what
# pagetrace may at most call unmatched (no snapshot before the recording).
live, unmatched_max = set(), 0
# -T: the kernel_stack after an allocation on its CPU is that allocation's.
last = {}
samples, stacks, frames = 0, set(), None
# "CPU:N [COUNT EVENTS DROPPED]"; without COUNT, pagetrace counts 1.
missed = re.compile(r'^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]$')
lost = collections.Counter()
for l in open(report_path, errors='replace'):
    d = missed.match(l.strip())
    if d:
        lost[int(d.group(1))] += int(d.group(2) or 1)
        continue
    if frames is not None:
        if l.startswith('=> '):
            frames.append(l.split()[-1])
            continue
        stacks.add(tuple(frames[:64]))
        frames = None
    m = line.search(l)
    if not m:
        continue
    cpu, ev, rest = int(m.group(1)), m.group(2), m.group(3)
    if ev == 'kernel_stack':
        if last.get(cpu) == 'alloc':
            samples += 1
            frames = []
        last[cpu] = None
        continue
    last[cpu] = None
    if ev not in ('mm_page_alloc', 'mm_page_free', 'mm_page_free_batched'):
        continue
    # A failed allocation logs no page (pfn -1): not a page event.
    if ev == 'mm_page_alloc' and re.search(r'pfn=(0x)?f{16}\b|pfn=18446744073709551615', rest):
        failed_allocs += 1
        continue
    if ev == 'mm_page_alloc':
        last[cpu] = 'alloc'
    if ev == 'mm_page_free_batched' and has_free:
        batched += 1
        continue
    o = re.search(r'\border=(\d+)', rest)
    order = int(o.group(1)) if o and ev != 'mm_page_free_batched' else 0
    p = re.search(r'\bpfn=(0x[0-9a-fA-F]+|\d+)', rest)
    if p:
        pfn = int(p.group(1), 0)
        if ev == 'mm_page_alloc':
            live.add(pfn)
        elif pfn in live:
            live.discard(pfn)
        else:
            unmatched_max += 1
    types['alloc' if ev == 'mm_page_alloc' else 'free'] += 1
    orders[order] += 1
    cpus[cpu] += 1
want_types = {'alloc': types['alloc'], 'free': types['free'], 'reclaim': 0}
got_types = {k: s['types'][k] for k in want_types}
got_orders = collections.Counter({int(k): v for k, v in s['orders'].items() if v})
want_orders = collections.Counter({o: v for o, v in orders.items() if o <= 11})
want_other = sum(v for o, v in orders.items() if o > 11)
got_cpus = collections.Counter({c['cpu']: c['events'] for c in s['cpus'] if c['events']})
got_lost = collections.Counter({c['cpu']: c['lost'] for c in s['cpus'] if c['lost']})
if frames is not None:
    stacks.add(tuple(frames[:64]))
st = s.get('stacks', {'samples': 0, 'stacks': 0})
ok = True
for what, want, got in (('types', want_types, got_types), ('orders', want_orders, got_orders),
                        ('other orders', want_other, s['other_order']), ('cpus', cpus, got_cpus),
                        ('lost by cpu', lost, got_lost),
                        ('stacks of allocations (-T)', samples, st['samples']),
                        ('distinct stacks', len(stacks), st['stacks'])):
    print(f'# {what}: trace-cmd report {dict(want) if isinstance(want, dict) else want}')
    if want != got:
        print(f'# {what}: pagetrace stats  {dict(got) if isinstance(got, dict) else got}')
        ok = False
print(f'# {sum(types.values())} events on {len(cpus)} CPUs; {failed_allocs} failed allocations left out')
if batched:
    print(f'# {batched} mm_page_free_batched not counted (each an mm_page_free too)')
print(f'# late_events: pagetrace stats {s["late_events"]} (must be 0)')
if s['late_events'] != 0:
    ok = False
got_unmatched = s['unmatched']['free']['events']
print(f'# unmatched frees: pagetrace stats {got_unmatched}, at most {unmatched_max} '
      '(frees of pages trace-cmd report shows no allocation of before)')
if got_unmatched > unmatched_max:
    ok = False
if not sum(types.values()):
    print('# no kmem page events recorded: nothing compared')
    ok = False
sys.exit(0 if ok else 1)
PY
		echo "ok $n tracedat-in-$name: counts by type, order, CPU, loss and stack equal trace-cmd report's"
	else
		sed 's/^/# /' "$d/stats.err" | head -n 5
		fail=1; echo "not ok $n tracedat-in-$name: counts by type, order, CPU, loss and stack equal trace-cmd report's"
	fi
	n=$((n + 1))
	# What a trace-cmd file lacks is said, not guessed; with -T, the
	# allocations' stacks are imported, and said to be.
	notes_ok=1
	grep -q 'no snapshot' "$d/stats.err" || notes_ok=0
	grep -q 'do not tell reclaim from free' "$d/stats.err" || notes_ok=0
	if grep -q ' mm_page_free_batched: ' "$d/report.txt" && grep -q ' mm_page_free: ' "$d/report.txt"; then
		grep -q 'mm_page_free_batched not counted' "$d/stats.err" || notes_ok=0
	fi
	if grep -q 'kernel_stack:' "$d/report.txt"; then
		grep -q 'kernel stacks (trace-cmd -T) of allocations imported' "$d/stats.err" || notes_ok=0
	else
		grep -q 'no sampled stacks (none recorded)' "$d/stats.err" || notes_ok=0
	fi
	sed 's/^/# /' "$d/stats.err"
	if [ $notes_ok = 1 ]; then
		echo "ok $n tracedat-in-$name-notes: says what the file lacks"
	else
		fail=1; echo "not ok $n tracedat-in-$name-notes: says what the file lacks"
	fi
	n=$((n + 1))
	pprof_check "$f" "$d"
	rm -rf "$d"
done
exit $fail
