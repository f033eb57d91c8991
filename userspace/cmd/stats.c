// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace stats: aggregate a whole trace.
 *
 * --json prints one object; scripts may rely on these keys:
 *   version          stream format version
 *   nr_cpus          header nr_cpus
 *   events           alloc + free + reclaim events
 *   types            {"alloc": N, "free": N, "reclaim": N}  events per type
 *   pages            {"alloc": N, "free": N, "reclaim": N}  pages per type
 *   orders           {"0": N, ... "10": N}  events with npages == 2^order;
 *                    orders 0..10 always, higher ones only when seen
 *   other_order      events whose npages is not a power of two
 *   chunks           all chunks, snapshot_chunks included
 *   snapshot_chunks  chunks flagged PAGETRACE_CHUNK_SNAPSHOT
 *   clock_local_chunks  chunks flagged PAGETRACE_CHUNK_CLOCK_LOCAL (the
 *                    session left the TSC for local_clock() at a suspend)
 *   lost             sum of the chunks' lost fields
 *   seq_gaps         times a CPU's chunk seq jumped (flight recorder mode)
 *   missing_chunks   chunks those jumps skipped
 *   tasks            task records
 *   bytes            stream bytes, header included
 *   first_ns         first event outside snapshot chunks, ns since start_ns;
 *                    0 if none.  May be a little below 0: event times are
 *                    rounded down to 128 ns, and one CPU's clock may be a
 *                    little behind the one that took start_ns.  Snapshot
 *                    events are left out: they are stamped with start_ns
 *                    rounded down to 128 ns, not with a time anything
 *                    happened at (format.rst, Timing rules)
 *   last_ns          last event outside snapshot chunks, ns since start_ns,
 *                    0 if none
 *   duration_ns      last_ns - first_ns
 *   cpus             [{"cpu", "events", "chunks", "lost", "seq_gaps",
 *                      "missing_chunks"}] one entry per CPU < nr_cpus
 *                    (Go traces: per P)
 *   no_cpu           {"events", "chunks"}: Go events logged without a P
 *   zones            [{"node", "zone", "name", "start_pfn", "end_pfn",
 *                      "events": {type: N}, "pages": {type: N}, "in_use_end",
 *                      "peak_in_use"}] per zone record, by start_pfn;
 *                    "outside_zones" the same for pages in no zone
 *   rate             {"origin_ns" (= header start_ns), "bin_ns", "bins":
 *                      [[alloc, free, reclaim, lost], ...]} events per
 *                    time bin from origin_ns (snapshot events left out)
 *   lost_sites       [{"offset", "cpu", "time_ns" (since start_ns),
 *                      "lost"}] the first chunks that reported losses
 *   lifetimes        {"all" or order: {"count", "min_ns", "p50_ns",
 *                      "p90_ns", "p99_ns", "max_ns", "mean_ns"}} alloc to
 *                    free/reclaim, per order of the allocation (npages
 *                    rounded up to a power of two); orders with none
 *                    are left out.  Percentiles are the lower bounds of
 *                    histogram buckets: exact below 8192 ns, at most 3%
 *                    below the exact value above
 *   in_use_end       {"pages", "blocks"} still allocated at the end
 *   peak_in_use      {"pages", "time_ns" (since start_ns)}
 *   snapshot         {"events", "pages"} allocations in snapshot chunks,
 *                    counted as in use from the start
 *   unmatched        {"free": {"events", "pages"}, "reclaim": ...} pages
 *                    freed/reclaimed but not known to be allocated;
 *                    "in_snapshot": the same for those of them while the
 *                    snapshot was taken (allocated before the trace)
 *   realloc_events   allocations of a block already allocated
 *   late_events      events the time ordering got wrong (0: exact)
 *   stacks           only for traces with sampled call stacks: {"rate",
 *                    "samples", "samples_unknown", "stacks", "symbols"}
 *   filter           only for filtered traces: {"types": [kept types],
 *                    "orders": bit mask, "cgroup_id"}
 *   kernel_counts    when the trace has the kernel's zone counters (not with
 *                    --quick): {"start" and/or "stop": {"time_ns" (since
 *                    start_ns), "zones": [{"node", "zone", "present",
 *                    "managed", "free", "pcp", "spread" (how far free
 *                    moved while pcp was read; at stop, plus what the
 *                    hooks turned away meanwhile), "kernel_in_use",
 *                    "trace_in_use"}]}}; kernel_in_use = present - free
 *                    - pcp, trace_in_use the trace's count at that time
 *   quick            true with --quick: lifetimes, in_use_end, peak_in_use,
 *                    zones' in_use_end/peak_in_use, unmatched and
 *                    realloc_events were not measured (they read 0)
 *
 * --by task --json prints {"tasks": [...], "names_dropped": N} instead
 * (see cmd/bytask.c): per tgid, by pages allocated, most first:
 *   {"tgid", "comm", "events": {type: N}, "pages": {type: N}, "in_use_end"}
 *   tgid 0 is the kernel (interrupts), -1 events before any task record.
 *
 * --reclaim --json prints who allocated the pages reclaim took instead:
 * {"events", "pages", "traced", "snapshot", "unknown", "lifetime",
 * "by_task", "by_stack", "stack_rate"} (see cmd/reclaim.c).
 */
#define _GNU_SOURCE	/* sched_getaffinity() */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "tracedat_in.h"

#define ORDERS_ALWAYS	10

static void stats_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace stats [--json] [--go] [--quick] [--by task] [--reclaim[=list]]\n"
		   "                       [--threads N] FILE\n"
		   "  -j, --json   one JSON object (keys documented in cmd/stats.c)\n"
		   "  -b, --by task  per process: events and pages allocated, freed,\n"
		   "               reclaimed, and pages still allocated at the end\n"
		   "  -r, --reclaim  who allocated the pages reclaim took, by task and\n"
		   "               by sampled stack, and how long they lived (keys in\n"
		   "               cmd/reclaim.c); --reclaim=list also each reclaim\n"
		   "  -g, --go     FILE is a Go runtime page trace (GODEBUG=pagetrace)\n"
		   "  -q, --quick  only what needs no time order, about 3 times faster:\n"
		   "               no lifetimes, pages in use, peak or unmatched frees\n"
		   "  -T, --threads N  threads for the full analysis (default: the CPUs\n"
		   "               it may run on); 2 at most are used, and the output\n"
		   "               is the same with any N\n");
}

static const char *const type_keys[] = { NULL, "alloc", "free", "reclaim" };

static void print_life_json(const char *key, const struct pgtrace_life_hist *l)
{
	printf("\"%s\": {\"count\": %" PRIu64 ", \"min_ns\": %" PRIu64
	       ", \"p50_ns\": %" PRIu64 ", \"p90_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64
	       ", \"max_ns\": %" PRIu64 ", \"mean_ns\": %" PRIu64 "}", key, l->count,
	       l->min_ns, pgtrace_life_percentile(l, 50), pgtrace_life_percentile(l, 90),
	       pgtrace_life_percentile(l, 99), l->max_ns, l->count ? l->sum_ns / l->count : 0);
}

static void print_type_obj(const uint64_t *v)
{
	printf("{");
	for (int t = 1; t <= 3; t++)
		printf("%s\"%s\": %" PRIu64, t > 1 ? ", " : "", type_keys[t], v[t]);
	printf("}");
}

static void print_zone_json(const struct pgtrace_zone_stats *zs)
{
	printf("\"events\": ");
	print_type_obj(zs->events);
	printf(", \"pages\": ");
	print_type_obj(zs->pages);
	printf(", \"in_use_end\": %" PRIu64 ", \"peak_in_use\": %" PRIu64 "}",
	       zs->in_use, zs->peak_in_use);
}

/* The keys added with the analysis, after those of struct pgtrace_stats. */
static void print_analysis_json(const struct pagetrace_header *h,
				const struct pgtrace_analysis *a)
{
	char key[16];

	printf(", \"no_cpu\": {\"events\": %" PRIu64 ", \"chunks\": %" PRIu64 "}",
	       a->stats.no_cpu.events, a->stats.no_cpu.chunks);
	printf(", \"zones\": [");
	for (unsigned int i = 0; i < a->nr_zones; i++) {
		const struct pgtrace_zone *z = &a->zones[i];

		printf("%s{\"node\": %u, \"zone\": %u, \"name\": \"", i ? ", " : "",
		       z->node, z->zone);
		for (const char *c = z->name; *c; c++)
			printf(*c == '"' || *c == '\\' || *c < 0x20 ? "\\u%04x" : "%c",
			       (unsigned char)*c);
		printf("\", \"start_pfn\": %" PRIu64 ", \"end_pfn\": %" PRIu64 ", ",
		       z->start_pfn, z->end_pfn);
		print_zone_json(&a->zone_stats[i]);
	}
	printf("], \"outside_zones\": {");
	print_zone_json(&a->other_zone);
	printf(", \"rate\": {\"origin_ns\": %" PRIu64 ", \"bin_ns\": %" PRIu64
	       ", \"bins\": [", a->origin_ns, a->bin_ns);
	for (unsigned int i = 0; i < a->nr_bins; i++) {
		const struct pgtrace_rate_bin *b = &a->bins[i];

		printf("%s[%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", i ? ", " : "",
		       b->events[1], b->events[2], b->events[3], b->lost);
	}
	printf("]}, \"lost_sites\": [");
	for (unsigned int i = 0; i < a->nr_lost_sites; i++) {
		const struct pgtrace_lost_site *l = &a->lost_sites[i];

		printf("%s{\"offset\": %" PRIu64 ", \"cpu\": %u, \"time_ns\": %" PRId64
		       ", \"lost\": %" PRIu64 "}", i ? ", " : "", l->offset, l->cpu,
		       (int64_t)(l->time_ns - h->start_ns), l->lost);
	}
	printf("], \"lifetimes\": {");
	print_life_json("all", &a->life_all);
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++) {
		if (!a->life[o].count)
			continue;
		snprintf(key, sizeof(key), "%u", o);
		printf(", ");
		print_life_json(key, &a->life[o]);
	}
	printf("}, \"in_use_end\": {\"pages\": %" PRIu64 ", \"blocks\": %" PRIu64
	       "}, \"peak_in_use\": {\"pages\": %" PRIu64 ", \"time_ns\": %" PRId64
	       "}, \"snapshot\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64 "}",
	       a->in_use, a->in_use_blocks, a->peak_in_use,
	       a->peak_in_use ? (int64_t)(a->peak_ns - h->start_ns) : 0,
	       a->snapshot_events, a->snapshot_pages);
	printf(", \"unmatched\": {\"free\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64
	       "}, \"reclaim\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64
	       "}, \"in_snapshot\": {\"free\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64
	       "}, \"reclaim\": {\"events\": %" PRIu64 ", \"pages\": %" PRIu64
	       "}}}, \"realloc_events\": %" PRIu64 ", \"late_events\": %" PRIu64,
	       a->unmatched_events[PGTRACE_EV_FREE], a->unmatched_pages[PGTRACE_EV_FREE],
	       a->unmatched_events[PGTRACE_EV_RECLAIM], a->unmatched_pages[PGTRACE_EV_RECLAIM],
	       a->unmatched_in_snapshot_events[PGTRACE_EV_FREE],
	       a->unmatched_in_snapshot_pages[PGTRACE_EV_FREE],
	       a->unmatched_in_snapshot_events[PGTRACE_EV_RECLAIM],
	       a->unmatched_in_snapshot_pages[PGTRACE_EV_RECLAIM],
	       a->realloc_events, a->late_events);
}

static void print_stacks_filter(const struct pgtrace_reader *r, bool json);

static void print_json(const struct pagetrace_header *h, const struct pgtrace_analysis *a,
		       bool quick, const struct pgtrace_reader *r)
{
	const struct pgtrace_stats *s = &a->stats;
	int64_t first = s->events ? (int64_t)(s->first_ns - h->start_ns) : 0;
	int64_t last = s->events ? (int64_t)(s->last_ns - h->start_ns) : 0;
	const char *sep = "";

	printf("{\"version\": %u, \"nr_cpus\": %u, \"events\": %" PRIu64 ", \"types\": {",
	       h->version, h->nr_cpus, s->events);
	for (int t = 1; t <= 3; t++)
		printf("%s\"%s\": %" PRIu64, t > 1 ? ", " : "", type_keys[t], s->by_type[t]);
	printf("}, \"pages\": {");
	for (int t = 1; t <= 3; t++)
		printf("%s\"%s\": %" PRIu64, t > 1 ? ", " : "", type_keys[t],
		       s->pages_by_type[t]);
	printf("}, \"orders\": {");
	for (int o = 0; o <= PGTRACE_STATS_MAX_ORDER; o++) {
		if (o > ORDERS_ALWAYS && !s->by_order[o])
			continue;
		printf("%s\"%d\": %" PRIu64, sep, o, s->by_order[o]);
		sep = ", ";
	}
	printf("}, \"other_order\": %" PRIu64 ", \"chunks\": %" PRIu64
	       ", \"snapshot_chunks\": %" PRIu64 ", \"clock_local_chunks\": %" PRIu64
	       ", \"lost\": %" PRIu64
	       ", \"seq_gaps\": %" PRIu64 ", \"missing_chunks\": %" PRIu64
	       ", \"tasks\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"first_ns\": %" PRId64
	       ", \"last_ns\": %" PRId64 ", \"duration_ns\": %" PRId64 ", \"cpus\": [",
	       s->other_order, s->chunks, s->snapshot_chunks, s->clock_local_chunks, s->lost,
	       s->seq_gaps,
	       s->missing_chunks, s->tasks, s->bytes, first, last, last - first);
	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		const struct pgtrace_cpu_stats *cs = &s->cpus[c];

		printf("%s{\"cpu\": %u, \"events\": %" PRIu64 ", \"chunks\": %" PRIu64
		       ", \"lost\": %" PRIu64 ", \"seq_gaps\": %" PRIu64
		       ", \"missing_chunks\": %" PRIu64 "}", c ? ", " : "", c, cs->events,
		       cs->chunks, cs->lost, cs->seq_gaps, cs->missing_chunks);
	}
	printf("]");
	print_analysis_json(h, a);
	print_stacks_filter(r, true);
	if (!quick)
		stats_kernel_counts(r, a, true);
	printf(", \"quick\": %s}\n", quick ? "true" : "false");
}

void fmt_ns(char *buf, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, 32, "%" PRIu64 " ns", ns);
	else if (ns < 10000000)
		snprintf(buf, 32, "%.1f us", ns / 1e3);
	else if (ns < 10000000000ULL)
		snprintf(buf, 32, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, 32, "%.1f s", ns / 1e9);
}

static void print_life_text(const char *label, const struct pgtrace_life_hist *l)
{
	char v[5][32];

	fmt_ns(v[0], l->min_ns);
	fmt_ns(v[1], pgtrace_life_percentile(l, 50));
	fmt_ns(v[2], pgtrace_life_percentile(l, 90));
	fmt_ns(v[3], pgtrace_life_percentile(l, 99));
	fmt_ns(v[4], l->max_ns);
	printf("  %-9s %10" PRIu64 " %10s %10s %10s %10s %10s\n", label, l->count, v[0],
	       v[1], v[2], v[3], v[4]);
}

static void print_analysis_text(const struct pagetrace_header *h,
				const struct pgtrace_analysis *a, bool quick)
{
	uint64_t peak = 0;
	char t[32], l[16];

	if (a->stats.no_cpu.chunks)
		printf("  no P           %" PRIu64 " events, %" PRIu64 " buffers\n",
		       a->stats.no_cpu.events, a->stats.no_cpu.chunks);
	if (a->nr_zones || a->other_zone.events[1] + a->other_zone.events[2] +
			   a->other_zone.events[3]) {
		printf("by zone:         %10s %10s %10s %12s %12s\n", "alloc", "free",
		       "reclaim", "in use end", "peak in use");
		for (unsigned int i = 0; i <= a->nr_zones; i++) {
			const struct pgtrace_zone_stats *z = i < a->nr_zones ? &a->zone_stats[i]
								       : &a->other_zone;
			char name[40];

			if (i < a->nr_zones)
				snprintf(name, sizeof(name), "%u/%s", a->zones[i].node,
					 a->zones[i].name);
			else if (!(z->events[1] + z->events[2] + z->events[3]))
				continue;
			else
				snprintf(name, sizeof(name), "outside zones");
			printf("  %-14s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12" PRIu64
			       " %12" PRIu64 "\n", name, z->events[1], z->events[2],
			       z->events[3], z->in_use, z->peak_in_use);
		}
	}
	for (unsigned int i = 0; i < a->nr_bins; i++) {
		const struct pgtrace_rate_bin *b = &a->bins[i];
		uint64_t n = b->events[1] + b->events[2] + b->events[3];

		if (n > peak)
			peak = n;
	}
	fmt_ns(t, a->bin_ns);
	printf("event rate:      %u bins of %s from start_ns, peak %.0f events/s\n",
	       a->nr_bins, t, a->bin_ns ? peak * 1e9 / a->bin_ns : 0.0);
	for (unsigned int i = 0; i < a->nr_lost_sites; i++) {
		const struct pgtrace_lost_site *s = &a->lost_sites[i];

		fmt_rel_time(t, s->time_ns, h->start_ns);
		printf("  lost %" PRIu64 " on cpu%u at %s s (chunk at offset %" PRIu64 ")\n",
		       s->lost, s->cpu, t, s->offset);
	}
	if (a->nr_lost_sites < a->stats.chunks && a->nr_lost_sites == PGTRACE_MAX_LOST_SITES)
		printf("  (only the first %u chunks with losses are listed)\n",
		       PGTRACE_MAX_LOST_SITES);
	if (quick) {
		if (a->snapshot_events)
			printf("snapshot:        %" PRIu64 " blocks, %" PRIu64
			       " pages in use at start\n", a->snapshot_events, a->snapshot_pages);
		printf("(--quick: no lifetimes, pages in use or unmatched frees)\n");
		return;
	}
	printf("lifetimes:       %10s %10s %10s %10s %10s %10s\n", "count", "min", "p50",
	       "p90", "p99", "max");
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++) {
		if (!a->life[o].count)
			continue;
		snprintf(l, sizeof(l), "order %u", o);
		print_life_text(l, &a->life[o]);
	}
	print_life_text("all", &a->life_all);
	fmt_rel_time(t, a->peak_ns, h->start_ns);
	printf("in use at end:   %" PRIu64 " pages in %" PRIu64 " blocks\n", a->in_use,
	       a->in_use_blocks);
	printf("peak in use:     %" PRIu64 " pages at %s s\n", a->peak_in_use,
	       a->peak_in_use ? t : "0");
	if (a->snapshot_events)
		printf("snapshot:        %" PRIu64 " blocks, %" PRIu64 " pages in use at start\n",
		       a->snapshot_events, a->snapshot_pages);
	printf("unmatched:       %" PRIu64 " frees (%" PRIu64 " pages), %" PRIu64
	       " reclaims (%" PRIu64 " pages) of pages not known allocated\n",
	       a->unmatched_events[PGTRACE_EV_FREE], a->unmatched_pages[PGTRACE_EV_FREE],
	       a->unmatched_events[PGTRACE_EV_RECLAIM], a->unmatched_pages[PGTRACE_EV_RECLAIM]);
	if (a->unmatched_in_snapshot_events[PGTRACE_EV_FREE] ||
	    a->unmatched_in_snapshot_events[PGTRACE_EV_RECLAIM])
		printf("                 of them while the snapshot was taken (allocated before "
		       "the trace): %" PRIu64 " frees, %" PRIu64 " reclaims\n",
		       a->unmatched_in_snapshot_events[PGTRACE_EV_FREE],
		       a->unmatched_in_snapshot_events[PGTRACE_EV_RECLAIM]);
	if (a->realloc_events || a->late_events)
		printf("warnings:        %" PRIu64 " allocations of allocated blocks, %" PRIu64
		       " events out of time order\n", a->realloc_events, a->late_events);
}

static void print_text(const struct pagetrace_header *h, const struct pgtrace_analysis *a,
		       bool quick)
{
	const struct pgtrace_stats *s = &a->stats;
	char t[32];

	printf("events:          %" PRIu64 "\n", s->events);
	for (int i = 1; i <= 3; i++)
		printf("  %-14s %" PRIu64 " (%" PRIu64 " pages)\n", type_keys[i],
		       s->by_type[i], s->pages_by_type[i]);
	printf("by order:\n");
	for (int o = 0; o <= PGTRACE_STATS_MAX_ORDER; o++)
		if (s->by_order[o])
			printf("  order %-8d %" PRIu64 "\n", o, s->by_order[o]);
	if (s->other_order)
		printf("  other          %" PRIu64 "\n", s->other_order);
	printf("by cpu:\n");
	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		const struct pgtrace_cpu_stats *cs = &s->cpus[c];

		if (!cs->chunks)
			continue;
		printf("  cpu%-11u %" PRIu64 " events, %" PRIu64 " chunks, %" PRIu64
		       " lost, %" PRIu64 " seq gaps\n", c, cs->events, cs->chunks,
		       cs->lost, cs->seq_gaps);
	}
	printf("chunks:          %" PRIu64 " (%" PRIu64 " snapshot)\n", s->chunks,
	       s->snapshot_chunks);
	if (s->clock_local_chunks)
		printf("clock:           TSC, then local_clock() (the system slept during the"
		       " session): %" PRIu64 " chunks closed after the change\n",
		       s->clock_local_chunks);
	printf("lost:            %" PRIu64 "\n", s->lost);
	printf("seq gaps:        %" PRIu64 " (%" PRIu64 " chunks missing)\n", s->seq_gaps,
	       s->missing_chunks);
	printf("task records:    %" PRIu64 "\n", s->tasks);
	fmt_rel_time(t, s->events ? s->last_ns : 0, s->events ? s->first_ns : 0);
	printf("duration:        %s s\n", t);
	print_analysis_text(h, a, quick);
}

/* The set bits of @words (@n 64-bit words) as ranges: "0-3,7". */
static void print_ranges(const uint64_t *words, unsigned int n)
{
	const char *sep = "";
	unsigned int i = 0, nbits = 64 * n;

	while (i < nbits) {
		unsigned int j;

		if (!(words[i / 64] >> (i % 64) & 1)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < nbits && words[(j + 1) / 64] >> ((j + 1) % 64) & 1; j++)
			;
		if (j > i)
			printf("%s%u-%u", sep, i, j);
		else
			printf("%s%u", sep, i);
		sep = ",";
		i = j + 1;
	}
	if (!*sep)
		printf("none");
}

/*
 * What the module could not hook on the kernel that made the trace
 * (loaded with partial=1): the trace is incomplete in these.
 */
static void print_uncovered(const struct pgtrace_reader *r, bool json)
{
	static const struct {
		uint32_t	bit;
		const char	*key;
		const char	*text;
	} kinds[] = {
		{ PAGETRACE_UNCOVERED_ALLOC, "alloc", "page allocations" },
		{ PAGETRACE_UNCOVERED_FREE, "free", "page frees" },
		{ PAGETRACE_UNCOVERED_BULK, "bulk", "bulk allocations" },
		{ PAGETRACE_UNCOVERED_COMPACT, "compaction",
		  "compaction's and alloc_contig_range()'s pages" },
		{ PAGETRACE_UNCOVERED_REQUIRED, "required", "the require= test function" },
	};
	const struct pgtrace_session *ses = pgtrace_reader_session(r);
	uint32_t u = ses ? ses->uncovered : 0;
	const char *sep = "";

	if (json)
		printf(", \"uncovered\": [");
	else if (u)
		printf("NOT RECORDED:    ");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!(u & kinds[i].bit))
			continue;
		printf("%s%s", sep, json ? "\"" : "");
		printf("%s%s", json ? kinds[i].key : kinds[i].text, json ? "\"" : "");
		sep = ", ";
	}
	if (json)
		printf("]");
	else if (u)
		printf(" (the module was loaded with partial=1 on a kernel where it cannot hook them): not a complete trace\n");
}

/*
 * What the trace leaves out, the sampled stacks and the filter: so that
 * nobody takes a part for the whole.
 */
static void print_stacks_filter(const struct pgtrace_reader *r, bool json)
{
	const struct pagetrace_rec_stacks *st = pgtrace_reader_stacks(r);
	const struct pagetrace_rec_filter *f = pgtrace_reader_filter(r);
	const struct pgtrace_reader_counters *c = pgtrace_reader_counters(r);
	const char *sep = "";

	print_uncovered(r, json);

	if (st && json)
		printf(", \"stacks\": {\"rate\": %u, \"samples\": %" PRIu64
		       ", \"samples_unknown\": %" PRIu64 ", \"stacks\": %" PRIu64
		       ", \"symbols\": %" PRIu64 "}", st->rate, c->samples, c->samples_unknown,
		       c->stacks, c->symbols);
	else if (st)
		printf("stack samples:   %" PRIu64 " (%" PRIu64 " with unknown stack), about 1 "
		       "per %u pages allocated; %" PRIu64 " distinct stacks, %" PRIu64
		       " named addresses\n", c->samples, c->samples_unknown, st->rate,
		       c->stacks, c->symbols);
	if (!f)
		return;
	if (json) {
		printf(", \"filter\": {\"types\": [");
		for (int t = 1; t <= 3; t++)
			if (f->types & 1U << t) {
				printf("%s\"%s\"", sep, type_keys[t]);
				sep = ", ";
			}
		printf("], \"orders\": %" PRIu64 ", \"cgroup_id\": %" PRIu64 "}",
		       (uint64_t)f->orders, (uint64_t)f->cgroup_id);
		return;
	}
	printf("FILTERED:        only ");
	for (int t = 1; t <= 3; t++)
		if (f->types & 1U << t) {
			printf("%s%s", sep, type_keys[t]);
			sep = "/";
		}
	printf("%s events of orders ", *sep ? "" : "no");
	print_ranges((const uint64_t *)&f->orders, 1);
	printf(" on nodes ");
	print_ranges((const uint64_t *)f->nodes, PAGETRACE_FILTER_NODES / 64);
	if (f->cgroup_id)
		printf(" of cgroup %" PRIu64 " (and below; no interrupts)", (uint64_t)f->cgroup_id);
	printf(" were recorded: not a complete trace\n");
}


/*
 * A regular file is mapped, not read: the reader then decodes it in place
 * instead of copying it through read() (a tenth of the time of a large
 * trace).  Anything else, or if mapping fails, goes through open_trace().
 * *@map and *@map_len are what close_stats_trace() unmaps.
 */
/*
 * A mapped file that another process truncates while we read it makes the
 * next access past its new end a SIGBUS: say so and fail, as a read()
 * that came up short would, rather than die of the signal.
 */
static void mapped_trace_shrank(int sig)
{
	static const char msg[] =
		"pagetrace: the trace file shrank while it was read (truncated by another process?)\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/*
 * Threads for the analysis by default: the CPUs online, or fewer if this
 * process may run on fewer (taskset): two threads on one CPU take turns
 * and lose time handing the events over.
 */
static unsigned int default_threads(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (online < 1)
		online = 1;
	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) < online)
		online = CPU_COUNT(&set);
	return online > 64 ? 64 : (unsigned int)online;
}

static struct pgtrace_reader *open_stats_trace(const char *path, unsigned int flags, bool populate,
					       int *fd, void **map, size_t *map_len)
{
	struct sigaction sa = { .sa_handler = mapped_trace_shrank };
	struct pgtrace_reader *r;
	struct stat st;
	long pages, page;
	uint64_t avail;
	void *p;
	int ret;

	*map = NULL;
	*map_len = 0;
	if (!strcmp(path, "-"))
		return open_trace(path, flags, fd);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) || !S_ISREG(st.st_mode) || !st.st_size ||
	    tracedat_in_is(*fd)) {
		if (*fd >= 0)
			close(*fd);
		return open_trace(path, flags, fd);
	}
	/*
	 * Mapped up front (faster than page by page), unless that could
	 * push its own start out of memory before it is decoded, or
	 * (!@populate) a second thread applies the events: the reading one
	 * then has time to spare, and maps the pages in as it reads them
	 * rather than before either thread starts (a tenth of the time of
	 * a large trace on two threads).
	 */
	pages = sysconf(_SC_AVPHYS_PAGES);
	page = sysconf(_SC_PAGESIZE);
	avail = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	p = mmap(NULL, st.st_size, PROT_READ,
		 MAP_PRIVATE | (populate && (uint64_t)st.st_size <= avail / 2 ? MAP_POPULATE : 0),
		 *fd, 0);
	if (p == MAP_FAILED) {
		close(*fd);
		return open_trace(path, flags, fd);
	}
	madvise(p, st.st_size, MADV_SEQUENTIAL);
	sigaction(SIGBUS, &sa, NULL);
	ret = pgtrace_reader_open_mem(&r, p, st.st_size, flags);
	if (ret) {
		trace_error(path, r, ret);
		pgtrace_reader_close(r);
		munmap(p, st.st_size);
		close(*fd);
		return NULL;
	}
	*map = p;
	*map_len = st.st_size;
	return r;
}

static void close_stats_trace(struct pgtrace_reader *r, int fd, void *map, size_t map_len)
{
	close_trace(r, fd);
	if (map)
		munmap(map, map_len);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "go", no_argument, NULL, 'g' },
		{ "quick", no_argument, NULL, 'q' },
		{ "by", required_argument, NULL, 'b' },
		{ "reclaim", optional_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct pgtrace_reader *r;
	struct pgtrace_analysis_params ap = { 0 };
	struct pgtrace_analysis a;
	unsigned int flags = 0;
	size_t map_len;
	void *map;
	bool json = false, by_task = false, reclaim = false, reclaim_list = false;
	const char *path;
	char *end;
	int c, fd, ret;

	ap.threads = default_threads();
	while ((c = getopt_long(argc, argv, "jgqb:rT:h", opts, NULL)) != -1) {
		switch (c) {
		case 'T':
			errno = 0;
			ap.threads = (unsigned int)strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || !ap.threads || optarg[0] == '-') {
				fprintf(stderr, "pagetrace: stats: --threads %s: not a number of threads\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'g':
			flags |= PGTRACE_READER_GO;
			break;
		case 'q':
			ap.flags |= PGTRACE_ANALYSIS_UNORDERED;
			break;
		case 'b':
			if (strcmp(optarg, "task")) {
				fprintf(stderr, "pagetrace: stats: --by %s: only 'task' is known\n",
					optarg);
				return EXIT_USAGE;
			}
			by_task = true;
			break;
		case 'r':
			if (optarg && strcmp(optarg, "list")) {
				fprintf(stderr, "pagetrace: stats: --reclaim=%s: only 'list' is known\n",
					optarg);
				return EXIT_USAGE;
			}
			reclaim = true;
			reclaim_list = optarg;
			break;
		case 'h':
			stats_usage(stdout);
			return 0;
		default:
			stats_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		stats_usage(stderr);
		return EXIT_USAGE;
	}
	/* Each prints a report of its own, and --quick has no time order to give. */
	if (reclaim && (by_task || ap.flags & PGTRACE_ANALYSIS_UNORDERED)) {
		fprintf(stderr, "pagetrace: stats: --reclaim goes with neither --by nor --quick\n");
		return EXIT_USAGE;
	}
	path = argv[optind];
	/* Two threads for the full analysis only (pgtrace_analysis_params.threads). */
	r = open_stats_trace(path, flags,
			     by_task || reclaim || ap.threads < 2 || ap.flags & PGTRACE_ANALYSIS_UNORDERED,
			     &fd, &map, &map_len);
	if (!r)
		return EXIT_TRACE;
	if (by_task || reclaim) {
		ret = by_task ? stats_by_task(r, path, json) :
				stats_reclaim(r, path, json, reclaim_list);
		close_stats_trace(r, fd, map, map_len);
		if (ret >= 0 && (fflush(stdout) || ferror(stdout))) {
			fprintf(stderr, "pagetrace: write error\n");
			return EXIT_TRACE;
		}
		return ret < 0 ? EXIT_TRACE : 0;
	}
	ret = pgtrace_analysis_collect(r, &a, &ap);
	if (ret < 0) {
		trace_error(path, r, ret);
	} else if (json) {
		print_json(pgtrace_reader_header(r), &a, ap.flags & PGTRACE_ANALYSIS_UNORDERED, r);
	} else {
		print_text(pgtrace_reader_header(r), &a, ap.flags & PGTRACE_ANALYSIS_UNORDERED);
		print_stacks_filter(r, false);
		if (!(ap.flags & PGTRACE_ANALYSIS_UNORDERED))
			stats_kernel_counts(r, &a, false);
	}
	pgtrace_analysis_free(&a);
	close_stats_trace(r, fd, map, map_len);
	if (ret >= 0 && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "pagetrace: write error\n");
		return EXIT_TRACE;
	}
	return ret < 0 ? EXIT_TRACE : 0;
}
