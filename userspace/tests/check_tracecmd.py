#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare `trace-cmd report -t` of a converted trace with `pagetrace dump -v -t`.

  check_tracecmd.py DUMP REPORT events        every event: time (ns), CPU,
                                              type, PFN, npages, order, PID,
                                              comm; nothing more, nothing less
  check_tracecmd.py DUMP REPORT cpu N         report --cpu N: CPU N's events
  check_tracecmd.py DUMP REPORT alloc-order   report -F 'kmem/mm_page_alloc:
                                              order > 0': those allocations
  check_tracecmd.py DUMP REPORT missed        "CPU:N [COUNT EVENTS DROPPED]"
                                              before the first event each CPU
                                              logged after a chunk's losses

Prints what differs as '# ' lines; exits 1 if anything does, 3 if the
trace has nothing the mode checks (missed: no losses).
"""
import collections
import re
import sys

EVENT = re.compile(r'^\s*(?P<comm>.*?)-(?P<pid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+'
                   r'(?P<s>\d+)\.(?P<ns>\d{9}):\s+(?P<name>\w+):\s+'
                   r'pfn=0x(?P<pfn>[0-9a-f]+) order=(?P<order>\d+) npages=(?P<npages>\d+)$')
MISSED = re.compile(r'^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]$')
NAMES = {'alloc': 'mm_page_alloc', 'free': 'mm_page_free', 'reclaim': 'page_reclaim'}


def order(npages):
    return (npages - 1).bit_length()


def unescape(s):
    return re.sub(rb'\\x([0-9a-f]{2})', lambda m: bytes([int(m.group(1), 16)]),
                  s.encode()).decode('utf-8', 'replace')


def read_dump(path):
    """Events as (time, cpu, name, pfn, npages, order, pid), their comms,
    and per event index the losses reported before it on its CPU."""
    start = None
    events, comms, lost_before = [], [], {}
    pending = collections.defaultdict(lambda: [0, False])
    snapshot = False
    for line in open(path, encoding='utf-8', errors='replace'):
        line = line.rstrip('\n')
        if line.startswith('# pagetrace '):
            start = int(re.search(r' start_ns=(\d+)', line).group(1))
        elif line.startswith('# chunk '):
            f = dict(kv.split('=') for kv in line[2:].split()[1:])
            snapshot = bool(int(f['flags'], 16) & 2)
            pending[int(f['cpu'])][0] += int(f['lost'])
            if int(f['missing']):
                pending[int(f['cpu'])][1] = True
        elif line and not line.startswith('#'):
            w = line.split()
            rel, cpu, typ = w[0], int(w[1][3:]), w[2]
            kv = dict(x.split('=', 1) for x in w[3:])
            neg = rel.startswith('-')
            sec, frac = rel.lstrip('-').split('.')
            t = start + (-1 if neg else 1) * (int(sec) * 10**9 + int(frac))
            npages = int(kv['npages'])
            name = 'page_snapshot' if snapshot else NAMES[typ]
            ev = (t, cpu, name, int(kv['pfn'], 16), npages, order(npages), int(kv['tgid']))
            if pending[cpu][0] or pending[cpu][1]:
                lost_before[len(events)] = tuple(pending[cpu])
                pending[cpu] = [0, False]
            events.append(ev)
            comms.append(unescape(kv.get('comm', '')))
    if start is None:
        sys.exit('# %s: no header line (run pagetrace dump -v -t)' % path)
    return events, comms, lost_before


def read_report(path):
    """Events as read_dump's, their comms, and the missed-events lines with
    the event that follows each."""
    events, comms, missed, bad = [], [], [], []
    last_missed = None
    for line in open(path, encoding='utf-8', errors='replace'):
        line = line.rstrip('\n')
        m = MISSED.match(line)
        if m:
            last_missed = (int(m.group(1)), int(m.group(2)) if m.group(2) else -1)
            continue
        m = EVENT.match(line)
        if not m:
            if line.strip() and not line.startswith('cpus='):
                bad.append(line)
            continue
        ev = (int(m['s']) * 10**9 + int(m['ns']), int(m['cpu']), m['name'], int(m['pfn'], 16),
              int(m['npages']), int(m['order']), int(m['pid']))
        if last_missed:
            missed.append((last_missed, ev))
            last_missed = None
        events.append(ev)
        comms.append(m['comm'])
    return events, comms, missed, bad


def expected_comm(pid, comm):
    if pid == 0:
        return '<idle>'
    return comm if comm else '<...>'


def compare(want, got, what):
    w, g = collections.Counter(want), collections.Counter(got)
    if w == g:
        print('# %s: %d events match' % (what, len(got)))
        return True
    print('# %s: %d events expected, %d in the report' % (what, len(want), len(got)))
    for ev in list((w - g).elements())[:5]:
        print('#   missing: %r' % (ev,))
    for ev in list((g - w).elements())[:5]:
        print('#   extra:   %r' % (ev,))
    return False


def main():
    dump, report, mode = sys.argv[1:4]
    want, wcomms, lost_before = read_dump(dump)
    got, gcomms, missed, bad = read_report(report)
    ok = True
    if bad:
        print('# %d lines of the report are neither events nor markers, e.g. %r'
              % (len(bad), bad[0]))
        ok = False
    if mode == 'events':
        ok &= compare(want, got, 'all')
        # The names: (pid, comm) as trace-cmd shows them.
        wn = collections.Counter((e[6], expected_comm(e[6], c)) for e, c in zip(want, wcomms))
        gn = collections.Counter((e[6], c) for e, c in zip(got, gcomms))
        if wn != gn:
            print('# task names differ: expected %r, report %r'
                  % (sorted(set(wn) - set(gn))[:5], sorted(set(gn) - set(wn))[:5]))
            ok = False
        else:
            print('# %d (pid, comm) pairs match' % len(wn))
    elif mode == 'cpu':
        cpu = int(sys.argv[4])
        ok &= compare([e for e in want if e[1] == cpu], got, 'cpu %d' % cpu)
    elif mode == 'alloc-order':
        ok &= compare([e for e in want if e[2] == 'mm_page_alloc' and e[5] > 0], got,
                      'mm_page_alloc order > 0')
    elif mode == 'missed':
        exp = sorted(((want[i][1], -1 if unk else n), want[i])
                     for i, (n, unk) in lost_before.items())
        have = sorted(missed)
        total = sum(n for (_, n), _ in exp if n > 0)
        if exp == have:
            print('# %d markers, %d lost events, each before the right event'
                  % (len(have), total))
        else:
            print('# markers: %d expected (%d lost events), %d in the report'
                  % (len(exp), total, len(have)))
            for x in [x for x in exp if x not in have][:5]:
                print('#   missing: %r' % (x,))
            for x in [x for x in have if x not in exp][:5]:
                print('#   extra:   %r' % (x,))
            ok = False
        if ok and not exp:
            print('# the trace reports no losses: nothing to check')
            sys.exit(3)
    else:
        sys.exit('unknown mode ' + mode)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
