#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
Check pagetrace convert --to perfetto's task and rate tracks against
pagetrace stats of the same trace (tests/test_perfetto.c):

  check_perfetto.py TRACE.json BYTASK.json STATS.json MAX_TASKS INTERVAL_US

BYTASK.json is stats --by task --json, STATS.json stats --json.  Prints
the task tracks' names, sorted, one a line, then "ok"; a mismatch is
printed and the exit status is 1.  The JSON must parse (json.load).
"""
import json
import sys

OTHER = "in use: other tasks"
RATES = {"alloc": "alloc rate", "free": "free rate", "reclaim": "reclaim rate"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    trace = json.load(open(sys.argv[1]))
    bytask = json.load(open(sys.argv[2]))["tasks"]
    stats = json.load(open(sys.argv[3]))
    max_tasks = int(sys.argv[4])
    interval_us = int(sys.argv[5])
    ev = trace["traceEvents"]

    # The tasks with tracks: by pages allocated, most first, as stats lists them.
    top = [t for t in bytask if t["pages"]["alloc"] > 0][:max_tasks]
    rest = [t for t in bytask if t not in top]
    want = {"in use: %s (%d)" % (t["comm"], t["tgid"]): t["in_use_end"] for t in top}
    if rest:
        want[OTHER] = sum(t["in_use_end"] for t in rest)

    tracks = {}
    for i, e in enumerate(ev):
        if e["ph"] == "C" and e["pid"] == 2:
            tracks.setdefault(e["name"], []).append((e["ts"], i, e["args"]["pages"]))
    if sorted(tracks) != sorted(want):
        fail("task tracks %s, stats says %s" % (sorted(tracks), sorted(want)))
    last_ts = max([e["ts"] for e in ev if "ts" in e] + [0])
    for name, pts in tracks.items():
        pts.sort()
        if pts[-1][2] != want[name]:
            fail("%s ends at %d, stats --by task says %d" % (name, pts[-1][2], want[name]))
        # Sampled at most once per interval (plus the end), not per event.
        if interval_us and len(pts) > last_ts / interval_us + 2:
            fail("%s: %d points for %.3f us" % (name, len(pts), last_ts))

    snap = stats["snapshot"]["events"]
    for typ, name in RATES.items():
        pts = sorted((e["ts"], e["args"]["events/s"]) for e in ev
                     if e["ph"] == "C" and e["pid"] == 3 and e["name"] == name)
        if len(pts) < 2:
            fail("%s: %d points" % (name, len(pts)))
        bin_us = pts[1][0] - pts[0][0]
        for a, b in zip(pts, pts[1:]):
            if abs(b[0] - a[0] - bin_us) > 1e-6:
                fail("%s: bins of %g and %g us" % (name, bin_us, b[0] - a[0]))
        if pts[-1][1] != 0:
            fail("%s does not end at 0" % name)
        total = sum(round(v * bin_us / 1e6) for _, v in pts)
        # Snapshot allocations are the state at the start, not a rate.
        count = stats["types"][typ] - (snap if typ == "alloc" else 0)
        if total != count:
            fail("%s sums to %d events, stats says %d" % (name, total, count))

    for name in sorted(tracks):
        print(name)
    print("ok")


main()
