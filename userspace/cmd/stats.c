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
 *   lost             sum of the chunks' lost fields
 *   seq_gaps         times a CPU's chunk seq jumped (flight recorder mode)
 *   missing_chunks   chunks those jumps skipped
 *   tasks            task records
 *   bytes            stream bytes, header included
 *   first_ns         first event, ns since start_ns (may be < 0), 0 if none
 *   last_ns          last event, ns since start_ns, 0 if none
 *   duration_ns      last_ns - first_ns
 *   cpus             [{"cpu", "events", "chunks", "lost", "seq_gaps",
 *                      "missing_chunks"}] one entry per CPU < nr_cpus
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"

#define ORDERS_ALWAYS	10

static void stats_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace stats [--json] FILE\n"
		   "  -j, --json  one JSON object (keys documented in cmd/stats.c)\n");
}

static const char *const type_keys[] = { NULL, "alloc", "free", "reclaim" };

static void print_json(const struct pagetrace_header *h, const struct pt_stats *s)
{
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
	for (int o = 0; o <= PT_STATS_MAX_ORDER; o++) {
		if (o > ORDERS_ALWAYS && !s->by_order[o])
			continue;
		printf("%s\"%d\": %" PRIu64, sep, o, s->by_order[o]);
		sep = ", ";
	}
	printf("}, \"other_order\": %" PRIu64 ", \"chunks\": %" PRIu64
	       ", \"snapshot_chunks\": %" PRIu64 ", \"lost\": %" PRIu64
	       ", \"seq_gaps\": %" PRIu64 ", \"missing_chunks\": %" PRIu64
	       ", \"tasks\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"first_ns\": %" PRId64
	       ", \"last_ns\": %" PRId64 ", \"duration_ns\": %" PRId64 ", \"cpus\": [",
	       s->other_order, s->chunks, s->snapshot_chunks, s->lost, s->seq_gaps,
	       s->missing_chunks, s->tasks, s->bytes, first, last, last - first);
	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		const struct pt_cpu_stats *cs = &s->cpus[c];

		printf("%s{\"cpu\": %u, \"events\": %" PRIu64 ", \"chunks\": %" PRIu64
		       ", \"lost\": %" PRIu64 ", \"seq_gaps\": %" PRIu64
		       ", \"missing_chunks\": %" PRIu64 "}", c ? ", " : "", c, cs->events,
		       cs->chunks, cs->lost, cs->seq_gaps, cs->missing_chunks);
	}
	printf("]}\n");
}

static void print_text(const struct pagetrace_header *h, const struct pt_stats *s)
{
	char t[32];

	printf("events:          %" PRIu64 "\n", s->events);
	for (int i = 1; i <= 3; i++)
		printf("  %-14s %" PRIu64 " (%" PRIu64 " pages)\n", type_keys[i],
		       s->by_type[i], s->pages_by_type[i]);
	printf("by order:\n");
	for (int o = 0; o <= PT_STATS_MAX_ORDER; o++)
		if (s->by_order[o])
			printf("  order %-8d %" PRIu64 "\n", o, s->by_order[o]);
	if (s->other_order)
		printf("  other          %" PRIu64 "\n", s->other_order);
	printf("by cpu:\n");
	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		const struct pt_cpu_stats *cs = &s->cpus[c];

		if (!cs->chunks)
			continue;
		printf("  cpu%-11u %" PRIu64 " events, %" PRIu64 " chunks, %" PRIu64
		       " lost, %" PRIu64 " seq gaps\n", c, cs->events, cs->chunks,
		       cs->lost, cs->seq_gaps);
	}
	printf("chunks:          %" PRIu64 " (%" PRIu64 " snapshot)\n", s->chunks,
	       s->snapshot_chunks);
	printf("lost:            %" PRIu64 "\n", s->lost);
	printf("seq gaps:        %" PRIu64 " (%" PRIu64 " chunks missing)\n", s->seq_gaps,
	       s->missing_chunks);
	printf("task records:    %" PRIu64 "\n", s->tasks);
	fmt_rel_time(t, s->events ? s->last_ns : 0, s->events ? s->first_ns : 0);
	printf("duration:        %s s\n", t);
	(void)h;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct pt_reader *r;
	struct pt_stats s;
	bool json = false;
	const char *path;
	int c, fd, ret;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
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
	path = argv[optind];
	r = open_trace(path, 0, &fd);
	if (!r)
		return EXIT_TRACE;
	ret = pt_stats_collect(r, &s);
	if (ret < 0) {
		trace_error(path, r, ret);
	} else if (json) {
		print_json(pt_reader_header(r), &s);
	} else {
		print_text(pt_reader_header(r), &s);
	}
	pt_stats_free(&s);
	close_trace(r, fd);
	if (ret >= 0 && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "pagetrace: write error\n");
		return EXIT_TRACE;
	}
	return ret < 0 ? EXIT_TRACE : 0;
}
