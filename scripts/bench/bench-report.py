#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables for `make bench`: bench/run-guest.sh's results.txt to markdown and JSON.

Per workload and contender, over the runs: ns per operation; the added ns
per event, (ns/op - ns/op of "none") / events per op, where events per op
is 2 for the kernel loops (an alloc and a free) and, for the userspace
workloads, what pagetrace with kprobes recorded per op (its median); that
as a ratio to each peer; bytes per event in the recorder's file (headers
included); events recorded, lost, and the recorder's CPU time.  Medians,
with min and max.  For the kernel loops the ns/op is the median batch
(pt_bench's batch_ns_per_op: the cost on the allocation path, mostly free
of preemption by the recorder); the wall time per op is in the JSON too.
"""
import argparse
import datetime
import json
import shlex
import statistics
import sys

ORDER = ["none", "loaded", "pt-kprobe", "pt-tracepoint", "pt-local",
         "pt-notasks", "pt-stacks", "pt-filter", "pt-filter-orders",
         "pt-filter-cgroup", "pt-filter-drop", "kprobe-empty", "tp-empty", "trace-cmd",
         "ftrace-raw", "perf", "bpftrace"]
PEERS = ["trace-cmd", "ftrace-raw", "perf", "bpftrace"]
WORKLOAD_DOC = {
    "k0": "pt_bench.ko, alloc_pages + __free_pages order 0 on every CPU; op = 2 events",
    "k3": "pt_bench.ko, alloc_pages + __free_pages order 3 on every CPU; op = 2 events",
    "mmap": "mmap + touch + munmap of anonymous memory on every CPU; op = one 4 KiB page",
    "fork": "fork + _exit + wait on every CPU; op = one fork",
    "read": "page-cache read of an ext4 file after fadvise(DONTNEED) on every CPU; op = one page",
}


# The trace header's clock field (uapi PAGETRACE_CLOCK_*).
CLOCKS = {"0": "local_clock", "1": "monotonic", "2": "tsc"}


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def parse(path):
    runs, unavailable, sessions = [], {}, {}
    for line in open(path):
        kv = {}
        for tok in shlex.split(line):
            if "=" in tok:
                k, v = tok.split("=", 1)
                kv[k] = v
        if "sessions" in kv:
            sessions[kv["hook"]] = kv
        elif "unavailable" in kv:
            unavailable[kv["contender"]] = kv["unavailable"]
        elif "workload" in kv:
            runs.append(kv)
    return runs, unavailable, sessions


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def summarize(runs):
    out = {}
    for w in dict.fromkeys(r["workload"] for r in runs):
        wr = [r for r in runs if r["workload"] == w]
        kernel = any("batch_ns_per_op" in r for r in wr)
        key = "batch_ns_per_op" if kernel else "ns_per_op"
        by = {c: [r for r in wr if r["contender"] == c] for c in ORDER}
        base = stats([num(r.get(key)) for r in by["none"]])
        if kernel:
            epo, epo_from = 2.0, "pt_bench (an alloc and a free)"
        else:
            epo, epo_from = None, None
            for c in ("pt-kprobe", "pt-tracepoint"):
                s = stats([num(r.get("events")) / num(r["ops"]) for r in by[c]
                           if num(r.get("events")) and num(r.get("ops"))])
                if s:
                    epo, epo_from = s["median"], f"{c}'s events / ops (median)"
                    break
        rows = {}
        for c in ORDER:
            rs = by[c]
            if not rs:
                continue
            row = {"runs": len(rs), "ns_per_op": stats([num(r.get(key)) for r in rs]),
                   "wall_ns_per_op": stats([num(r.get("ns_per_op")) for r in rs])}
            if base and epo:
                row["added_ns_per_event"] = stats(
                    [(num(r.get(key)) - base["median"]) / epo for r in rs
                     if num(r.get(key)) is not None])
            ev = [num(r.get("events")) for r in rs]
            if any(e is not None for e in ev):
                row["events"] = stats(ev)
                row["lost"] = {"total": sum(num(r.get("lost")) or 0 for r in rs),
                               "max": max(num(r.get("lost")) or 0 for r in rs)}
                if c != "bpftrace":
                    row["bytes_per_event"] = stats(
                        [num(r["bytes"]) / num(r["events"]) for r in rs
                         if num(r.get("bytes")) is not None and num(r.get("events"))])
                # pagetrace's file less what does not grow with the events
                # (header, memory map snapshot, symbols, counters).
                ebpe = [(num(r["bytes"]) - num(r["session_bytes"])) / num(r["events"])
                        for r in rs if num(r.get("session_bytes")) is not None
                        and num(r.get("bytes")) is not None and num(r.get("events"))]
                if ebpe:
                    row["event_bytes_per_event"] = stats(ebpe)
                # pagetrace record reports its own CPU time; the others are
                # measured by pt_work rusage (recorder and its children).
                if c.startswith("pt-"):
                    cpu = [num(r.get("cpu_user_s")) + num(r.get("cpu_sys_s")) for r in rs
                           if num(r.get("cpu_user_s")) is not None]
                else:
                    cpu = [num(r.get("rec_user")) + num(r.get("rec_sys")) for r in rs
                           if num(r.get("rec_user")) is not None]
                row["recorder_cpu_s"] = stats(cpu)
                if c.startswith("pt-"):
                    row["clock"] = sorted({CLOCKS.get(r.get("clock"), "?") for r in rs})
            rows[c] = row
        for c, row in rows.items():
            a = row.get("added_ns_per_event")
            row["ratio"] = {}
            for p in PEERS:
                pa = rows.get(p, {}).get("added_ns_per_event")
                # Only against a peer whose cost stands out of the noise:
                # every one of its runs slower than the median of "none".
                if a and pa and pa["min"] > 0 and c not in (p, "none"):
                    row["ratio"][p] = a["median"] / pa["median"]
        out[w] = {"doc": WORKLOAD_DOC.get(w, w), "metric": key, "events_per_op": epo,
                  "events_per_op_from": epo_from, "contenders": rows}
    return out


def fmt(s, prec=0, unit=""):
    if not s:
        return "–"
    f = f"{{:.{prec}f}}"
    if s["n"] == 1:
        return f.format(s["median"]) + unit
    return f"{f.format(s['median'])}{unit} ({f.format(s['min'])}–{f.format(s['max'])})"


def spread(ws):
    n = ws["contenders"].get("none", {}).get("ns_per_op")
    return f"{100 * (n['max'] - n['min']) / n['median']:.0f}%" if n and n["median"] else "?"


def sessions_table(sessions):
    """Session start (open) and stop (close) per backend, in the guest's ms."""
    if not sessions:
        return []
    L = ["", "## Session start and stop", "",
         "`pt_work sessions /dev/pagetrace N` per backend after the runs, default "
         "options (snapshot on), idle.  First event: from the open() call to the "
         "moment the session could record (every probe attached; the header's "
         "start_mono_ns + attach_us).  open() returns after that, once the memory "
         "map is walked and in-flight allocations waited for; close() once the "
         "probes are detached.  Median (min–max) ms of the guest's clock.", "",
         "| backend | first event ms | open() ms | close() ms |", "|---|---:|---:|---:|"]
    for hook, kv in sessions.items():
        def cell(k):
            v = kv.get(k, "").split(",")
            return f"{v[0]} ({v[1]}–{v[2]})" if len(v) == 3 else "–"
        if "unavailable" in kv or "error" in kv:
            L.append(f"| {hook} | – | – | – |")
        else:
            L.append(f"| {hook} | {cell('first_ms')} | {cell('start_ms')} | "
                     f"{cell('stop_ms')} |")
    L += ["", "Goal (the performance issue): the default backend's start (open to first "
          "event recorded) under 200 ms."]
    return L


def markdown(summary, unavailable, meta, sessions=None):
    L = [f"# pagetrace overhead: {meta['kernel']}", ""]
    if meta.get("command"):
        L += [f"Made by `{meta['command']}`.", ""]
    L += [
         f"{meta['date']}; {meta['setup']}; {meta['runs']} runs per contender and "
         "workload, interleaved, in one boot.  Medians (min–max).  Times are the "
         "guest's own clock: with -icount it counts instructions (4 ns each), not "
         "real time, so compare ratios within this run, not absolute ns.", "",
         "Added ns/event = (ns/op − ns/op of *none*) / events per op.  ×peer = "
         "this row's median added ns/event divided by the peer's.  B/event = "
         "recorder file size / events it recorded, headers included.  Recorder "
         "CPU = user + sys seconds of the recording process(es) for the run.", ""]
    for w, ws in summary.items():
        L += [f"## {w}: {ws['doc']}", "",
              f"ns/op metric: `{ws['metric']}`; events per op: "
              + (f"{ws['events_per_op']:.2f} ({ws['events_per_op_from']})" if ws["events_per_op"]
                 else "unknown (no pagetrace run)"), "",
              f"Noise: the runs of *none* spread by {spread(ws)} of their median; a ratio is "
              "given only against a peer whose every run added time (else –).", "",
              "| contender | ns/op | added ns/event | ×trace-cmd | ×ftrace-raw | ×perf | ×bpftrace "
              "| B/event | events | lost (max) | recorder CPU s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c, r in ws["contenders"].items():
            rat = [f"{r['ratio'][p]:.2f}" if p in r["ratio"] else "–" for p in PEERS]
            L.append("| " + " | ".join([
                c, fmt(r["ns_per_op"]), fmt(r.get("added_ns_per_event")), *rat,
                fmt(r.get("bytes_per_event"), 2) if c != "bpftrace" and "events" in r
                else ("0 (counts in a map)" if c == "bpftrace" else "–"),
                fmt(r.get("events")), f"{r['lost']['max']:.0f}" if "lost" in r else "–",
                fmt(r.get("recorder_cpu_s"), 2)]) + " |")
        clocks = {}
        for c, r in ws["contenders"].items():
            for k in r.get("clock", []):
                clocks.setdefault(k, []).append(c)
        if clocks:
            L += ["", "pagetrace's event clock (the header's): " + "; ".join(
                f"{k} ({', '.join(cs)})" for k, cs in sorted(clocks.items())) + "."]
        L.append("")
    for c, why in unavailable.items():
        L += [f"**{c}** did not run: {why}", ""]
    # The goals, one line per workload.
    L += ["## Goals", "",
          "| workload | kprobe ×trace-cmd | kprobe ×ftrace-raw "
          "| empty kprobes ×ftrace-raw | tracepoint ×trace-cmd "
          "| tracepoint ×ftrace-raw | pagetrace B/event (kprobe/tracepoint) "
          "| B/event, events' chunks | B/event, tasks=0 (file) | pagetrace lost "
          "| loaded − none ns/op |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w, ws in summary.items():
        cs = ws["contenders"]
        g = lambda c, p: f"{cs[c]['ratio'][p]:.2f}" if c in cs and p in cs[c]["ratio"] else "–"
        pts = ("pt-kprobe", "pt-tracepoint")
        # Both positions always, so that each column reads kprobe/tracepoint.
        bpe = [f"{cs[c]['bytes_per_event']['median']:.2f}"
               if cs.get(c, {}).get("bytes_per_event") else "–" for c in pts]
        ebpe = [f"{cs[c]['event_bytes_per_event']['median']:.2f}"
                if cs.get(c, {}).get("event_bytes_per_event") else "–" for c in pts]
        lost = [cs[c]["lost"]["total"] for c in pts if c in cs and "lost" in cs[c]]
        nt = cs.get("pt-notasks", {}).get("bytes_per_event")
        nt = f"{nt['median']:.2f}" if nt else "–"
        ld = (f"{cs['loaded']['ns_per_op']['median'] - cs['none']['ns_per_op']['median']:+.0f}"
              if "loaded" in cs and "none" in cs else "–")
        L.append(f"| {w} | {g('pt-kprobe', 'trace-cmd')} | {g('pt-kprobe', 'ftrace-raw')} | "
                 f"{g('kprobe-empty', 'ftrace-raw')} | "
                 f"{g('pt-tracepoint', 'trace-cmd')} | {g('pt-tracepoint', 'ftrace-raw')} | "
                 f"{'/'.join(bpe)} | "
                 f"{'/'.join(ebpe)} | {nt} | "
                 f"{'/'.join(f'{x:.0f}' for x in lost) or '–'} | {ld} |")
    L += options_table(summary)
    L += floors_table(summary)
    L += ["", "Goals (the issue): kprobe ≤ 0.3× (hook=kprobe) "
          "and tracepoint ≤ 0.2× ftrace's added ns/event; "
          "≤ 8.3 B/event; 0 lost; no cost when loaded without a session.  B/event, "
          "events' chunks: the file less its header and the chunks that do not grow "
          "with the events (the memory map at the start, symbols, counters), "
          "÷ events.  Empty kprobes: "
          "pt_bench's kprobes with empty handlers where the kprobe backend hooks, "
          "the kprobe core's own cost.", ""]
    L += sessions_table(sessions)
    return "\n".join(L)


def ratio_table(summary, pairs, heads, intro, goal):
    """A table of added ns/event ratios: for each (contender, base) in pairs
    that ran, the contender's median over the base's, per workload."""
    have = [(c, f, h) for (c, f), h in zip(pairs, heads)
            if any(c in ws["contenders"] and f in ws["contenders"] for ws in summary.values())]
    if not have:
        return []
    L = ["", intro, "", "| workload | " + " | ".join(h for _, _, h in have) + " |",
         "|---|" + "---:|" * len(have)]
    for w, ws in summary.items():
        cs = ws["contenders"]
        cells = []
        for c, f, _ in have:
            a = cs.get(c, {}).get("added_ns_per_event")
            b = cs.get(f, {}).get("added_ns_per_event")
            cells.append(f"{a['median'] / b['median']:.2f}"
                         if a and b and b["median"] > 0 else "–")
        L.append(f"| {w} | " + " | ".join(cells) + " |")
    return L + ["", goal]


def floors_table(summary):
    """Each backend's added ns/event over its mechanism's, empty handlers."""
    pairs = [("pt-tracepoint", "tp-empty"), ("pt-kprobe", "kprobe-empty")]
    return ratio_table(
        summary, pairs, [f"{c} ÷ {f}" for c, f in pairs],
        "Each backend against the floor of its mechanism (pt_bench's empty "
        "probes on the same tracepoints or functions): added ns/event ÷ the floor's, "
        "same workload, same run.",
        "Goal (the performance issue): on PREEMPT_RT, the backend it keeps "
        "(tracepoints) at most 1.3× the floor of its mechanism.")


# The options, each against the plain path of the same backend.
OPTIONS = ["pt-stacks", "pt-filter", "pt-filter-orders", "pt-filter-cgroup", "pt-filter-drop"]


def options_table(summary):
    """Each option's added ns/event over pt-tracepoint's (the default, plain)."""
    return ratio_table(
        summary, [(c, "pt-tracepoint") for c in OPTIONS], OPTIONS,
        "Options against the plain default backend: added ns/event ÷ "
        "pt-tracepoint's, same workload, same run.",
        "Goals (the performance issue): a filter that keeps every event ≤ 1.10; "
        "one that drops the events (pt-filter-drop) < 1.00; stack_rate=128 ≤ 1.20 on k0.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--kernel", default="?")
    ap.add_argument("--setup", default="")
    ap.add_argument("--command", default="",
                    help="the command that made the run, written at the top")
    ap.add_argument("--md")
    ap.add_argument("--json")
    a = ap.parse_args()
    runs, unavailable, sessions = parse(a.results)
    if not runs:
        sys.exit(f"bench-report: no runs in {a.results}")
    meta = {"kernel": a.kernel, "setup": a.setup, "command": a.command,
            "date": datetime.date.today().isoformat(),
            "runs": max(int(r["run"]) for r in runs)}
    summary = summarize(runs)
    md = markdown(summary, unavailable, meta, sessions)
    if a.md:
        open(a.md, "w").write(md)
    else:
        print(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({**meta, "unavailable": unavailable, "summary": summary,
                       "sessions": sessions, "runs": runs}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
