// SPDX-License-Identifier: GPL-2.0
/*
 * The trace's pages in use against the kernel's own count, per zone, when
 * the session started and when it stopped: printed by pagetrace stats (text
 * or JSON) and drawn as a table by pagetrace report.
 *
 * The kernel's count is present - free - per-CPU lists (the module reads
 * them: struct pagetrace_rec_counters); the trace's is the snapshot plus
 * the allocations minus the frees and reclaims, up to the same instant
 * (pgtrace_zone_stats.in_use_at_counters at start, .in_use at the end).
 * A trace that misses nothing agrees with the kernel to within what the
 * allocator did while the counters were read and what the snapshot
 * cannot see (Documentation/pagetrace/design.rst says what).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "cmd.h"

/* The analysis' zone with @node and @zone, or -1. */
static int find_zone(const struct pgtrace_analysis *a, uint32_t node, uint32_t zone)
{
	for (unsigned int i = 0; i < a->nr_zones; i++)
		if (a->zones[i].node == node && a->zones[i].zone == zone)
			return (int)i;
	return -1;
}

/* The trace's pages in use in zone @i at start or stop. */
static uint64_t trace_in_use(const struct pgtrace_analysis *a, int i, unsigned int which)
{
	const struct pgtrace_zone_stats *z = &a->zone_stats[i];

	return which == PGTRACE_KERNEL_COUNTERS_START ? z->in_use_at_counters : z->in_use;
}

/*
 * Pages the trace may be short of the kernel's count in every zone
 * together: the snapshot's taken_free where the walk could not read the
 * per-CPU lists (5.10 PREEMPT_RT), so that a page with a zero reference
 * count on no free list (a tail of a block allocated without __GFP_COMP)
 * was taken as free; 0 where the walk told them apart, or never said.
 */
static uint64_t snapshot_short(const struct pgtrace_reader *r)
{
	const struct pagetrace_rec_snapshot *s = pgtrace_reader_snapshot(r);

	if (!s || (s->flags & PAGETRACE_SNAPSHOT_PCP) ||
	    !(s->flags & PAGETRACE_SNAPSHOT_TAKEN_FREE))
		return 0;
	return s->taken_free;
}

static void print_one_text(const struct pgtrace_analysis *a, const struct pgtrace_kernel_counters *k,
			   unsigned int which, uint64_t start_ns)
{
	char t[32];

	fmt_rel_time(t, k->time_ns, start_ns);
	printf("  at %s (%s s):\n", which == PGTRACE_KERNEL_COUNTERS_START ? "start" : "stop", t);
	for (unsigned int j = 0; j < k->nr_zones; j++) {
		const struct pgtrace_zone_counters *z = &k->zones[j];
		int i = find_zone(a, z->node, z->zone);
		int64_t kern = pgtrace_zone_counters_in_use(z);
		char name[40];

		if (i < 0) {
			printf("    %u/%u: no zone record (hot-added?), kernel %" PRId64 "\n",
			       z->node, z->zone, kern);
			continue;
		}
		snprintf(name, sizeof(name), "%u/%s", z->node, a->zones[i].name);
		int64_t tr = (int64_t)trace_in_use(a, i, which);

		printf("    %-12s %12" PRId64 " %12" PRId64 " %+10" PRId64 " %8.3f%%\n", name,
		       kern, tr, tr - kern, kern ? 100.0 * (double)(tr - kern) / (double)kern : 0.0);
	}
}

static void print_one_json(const struct pgtrace_analysis *a, const struct pgtrace_kernel_counters *k,
			   unsigned int which, uint64_t start_ns)
{
	printf("\"%s\": {\"time_ns\": %" PRId64 ", \"zones\": [",
	       which == PGTRACE_KERNEL_COUNTERS_START ? "start" : "stop",
	       (int64_t)(k->time_ns - start_ns));
	for (unsigned int j = 0; j < k->nr_zones; j++) {
		const struct pgtrace_zone_counters *z = &k->zones[j];
		int i = find_zone(a, z->node, z->zone);

		printf("%s{\"node\": %u, \"zone\": %u, \"present\": %" PRIu64 ", \"managed\": %"
		       PRIu64 ", \"free\": %" PRIu64 ", \"pcp\": %" PRIu64 ", \"spread\": %" PRIu64
		       ", \"kernel_in_use\": %" PRId64, j ? ", " : "", z->node, z->zone,
		       z->present_pages, z->managed_pages, z->free_pages, z->pcp_pages,
		       z->spread_pages, pgtrace_zone_counters_in_use(z));
		if (i >= 0)
			printf(", \"trace_in_use\": %" PRIu64, trace_in_use(a, i, which));
		printf("}");
	}
	printf("]}");
}

/**
 * stats_kernel_counts() - print the check, text or a JSON member
 * @r: the reader, drained (the stop counters come after the last event)
 * @a: its analysis, in time order (not --quick)
 * @json: a `, "kernel_counts": {...}` member instead of text
 *
 * Prints nothing for a stream without the kernel's counters.
 */
void stats_kernel_counts(const struct pgtrace_reader *r, const struct pgtrace_analysis *a,
			 bool json)
{
	const struct pgtrace_kernel_counters *k[2] = {
		pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_START),
		pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_STOP),
	};
	uint64_t start_ns = pgtrace_reader_header(r)->start_ns;
	const char *sep = "";

	/* Without the start counters' mark the trace's side is unknown. */
	if (!a->counters_marked)
		k[PGTRACE_KERNEL_COUNTERS_START] = NULL;
	if (!k[0] && !k[1])
		return;
	if (json) {
		printf(", \"kernel_counts\": {\"snapshot_short_max\": %" PRIu64, snapshot_short(r));
		sep = ", ";
		for (unsigned int w = 0; w < 2; w++) {
			if (!k[w])
				continue;
			printf("%s", sep);
			print_one_json(a, k[w], w, start_ns);
			sep = ", ";
		}
		printf("}");
		return;
	}
	printf("pages in use, the kernel's count (present - free - per-CPU) against the trace's:\n");
	printf("    %-12s %12s %12s %10s %9s\n", "zone", "kernel", "trace", "diff", "");
	for (unsigned int w = 0; w < 2; w++)
		if (k[w])
			print_one_text(a, k[w], w, start_ns);
	if (!k[PGTRACE_KERNEL_COUNTERS_STOP])
		printf("  at stop: not in the trace (recorded without pagetrace record's stop)\n");
	if (snapshot_short(r))
		printf("  the snapshot could not read the per-CPU free lists on this kernel: it took\n"
		       "  %" PRIu64 " pages with a zero reference count on no free list as free, some\n"
		       "  of them tails of blocks allocated without __GFP_COMP, so the trace may be\n"
		       "  up to that many pages short over all zones\n", snapshot_short(r));
}

/*
 * One zone at one end: a table row, marked "off" when the two are more than
 * 0.1% and more than 2 pages apart, beyond the reading's spread (how far
 * the kernel's free count moved while it was read, and at stop what the
 * hooks turned away meanwhile: the selftests' tolerance, the allocator
 * running on other CPUs while the module reads the counters).
 */
static void html_row(FILE *f, const struct pgtrace_analysis *a, const struct pgtrace_zone_counters *z,
		     unsigned int which, const char *at, uint64_t short_max)
{
	const char *class = "";
	int i = find_zone(a, z->node, z->zone);
	int64_t kern = pgtrace_zone_counters_in_use(z), tr, diff, off;
	double pct;

	if (i < 0) {
		fprintf(f, "<tr><td>%s</td><td>%u/%u</td><td>%" PRId64
			"</td><td colspan=\"3\">no zone record (hot-added?)</td></tr>\n",
			at, z->node, z->zone, kern);
		return;
	}
	tr = (int64_t)trace_in_use(a, i, which);
	diff = tr - kern;
	off = llabs(diff) - (int64_t)z->spread_pages;
	pct = kern ? 100.0 * (double)diff / (double)kern : 0.0;
	if (off * 1000 > (kern > 0 ? kern : 0) && off > 2)
		class = diff < 0 && -diff <= (int64_t)short_max + (int64_t)z->spread_pages + 2 ?
			" class=\"short\"" : " class=\"off\"";
	fprintf(f, "<tr%s><td>%s</td><td>%u/%s</td><td>%" PRId64 "</td><td>%" PRId64
		"</td><td>%+" PRId64 "</td><td>%.3f%%</td></tr>\n",
		class, at, z->node, a->zones[i].name, kern, tr, diff, pct);
}

/**
 * report_kernel_counts() - the check as a section of the HTML report
 * @f: the page being written
 * @r: the reader, drained
 * @a: its analysis, in time order
 *
 * Section sec-kernel-counts, table tab-kernel-counts: one row per zone and
 * end of the session, marked class "off" (red) when the two counts are more
 * than 0.1% and 2 pages apart.  A pagetrace stream without the counters says so;
 * a Go trace gets no section.
 */
void report_kernel_counts(FILE *f, const struct pgtrace_reader *r, const struct pgtrace_analysis *a)
{
	const struct pgtrace_kernel_counters *k[2] = {
		pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_START),
		pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_STOP),
	};
	static const char * const at[2] = { "start", "stop" };

	if (!pgtrace_reader_header(r)->header_size)
		return;
	if (!a->counters_marked)
		k[PGTRACE_KERNEL_COUNTERS_START] = NULL;
	fprintf(f, "<section id=\"sec-kernel-counts\">\n"
		"<h2>Pages in use: the kernel's count against the trace's</h2>\n");
	if (!k[0] && !k[1]) {
		fprintf(f, "<p>This trace holds none of the kernel's counters to check it"
			" against (recorded by a module older than the zone counters).</p>\n"
			"</section>\n");
		return;
	}
	fprintf(f, "<p>Per zone: the kernel's pages in use (present - free - on per-CPU"
		" lists, read by the module) and the trace's (snapshot + allocations - frees -"
		" reclaims up to the same instant). A trace that lost nothing agrees to within"
		" what the allocator did while the counters were read; rows more than 0.1%%"
		" and 2 pages apart are in red.</p>\n"
		"<table class=\"tasks\" id=\"tab-kernel-counts\">\n<tr><th>at</th><th>zone</th>"
		"<th>kernel</th><th>trace</th><th>difference</th><th>%%</th></tr>\n");
	for (unsigned int w = 0; w < 2; w++)
		for (unsigned int j = 0; k[w] && j < k[w]->nr_zones; j++)
			html_row(f, a, &k[w]->zones[j], w, at[w], snapshot_short(r));
	fprintf(f, "</table>\n");
	if (snapshot_short(r))
		fprintf(f, "<p>The snapshot could not read the per-CPU free lists on this kernel"
			" (5.10 PREEMPT_RT): it took %" PRIu64 " pages with a zero reference count on"
			" no free list as free, some of them tails of blocks allocated without"
			" __GFP_COMP, so the trace may be up to that many pages short over all zones."
			" Rows short by no more than that are in grey, not red.</p>\n",
			snapshot_short(r));
	if (!k[PGTRACE_KERNEL_COUNTERS_STOP])
		fprintf(f, "<p>At stop: not in the trace (recorded without pagetrace record's"
			" stop).</p>\n");
	fprintf(f, "</section>\n");
}
