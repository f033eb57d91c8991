// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace stats --reclaim: who allocated the pages that reclaim took
 * (libpagetrace's pgtrace_reclaim_*), by allocating task and by sampled
 * stack, with how long the pages lived; pages whose allocation the trace
 * does not hold are counted apart, never given to anybody.
 * --reclaim=list also prints one line (or JSON object) per reclaim part:
 * the pages of one reclaim event that came from one allocation.
 *
 * --reclaim --json prints one object:
 *   events, pages    reclaim events and their pages
 *   traced           {"pages", "blocks"}: pages whose allocation is in the
 *                    trace, and how many allocations they came from
 *   snapshot         {"pages", "events"}: pages allocated before the
 *                    session, as its snapshot listed them (owner unknown)
 *   unknown          {"pages", "events"}: pages of no known allocation
 *                    (before the session without a snapshot, or lost)
 *   lifetime         LIFE of the traced pages (below)
 *   by_task          [{"tgid", "comm", "pages", "blocks", "parts",
 *                      "lifetime": LIFE}] per allocating task, most
 *                    pages first; tgid 0 the kernel, -1 no task record
 *   by_stack         [{"stack", "frames": [names], "pages", "blocks",
 *                      "parts", "lifetime": LIFE}] per stack id of the
 *                    allocation's sample: 0 for allocations that were
 *                    not sampled, 4294967295 for samples of unknown stack
 *   stack_rate       the trace's sampling rate (pages), 0 without stacks
 *   parts            with --reclaim=list only: [{"time_ns" (since
 *                    start_ns), "pfn", "npages", "task", "origin"
 *                    ("traced", "snapshot", "unknown"), and if traced
 *                    "alloc_time_ns", "life_ns", "alloc_pfn",
 *                    "alloc_npages", "alloc_task", "alloc_stack",
 *                    "alloc_order"}]
 * LIFE is {"pages", "min_ns", "p50_ns", "p90_ns", "max_ns", "mean_ns",
 * "buckets": [[ns, pages], ...]}, one count per page; "buckets" are the
 * non-empty histogram buckets by their lower bound (exact below 1024 ns,
 * then four per power of two), percentiles the lower bound of theirs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "cmd.h"

#define FRAMES_TEXT	3

static const char *const origin_keys[] = { "traced", "snapshot", "unknown" };

struct list_ctx {
	const struct pgtrace_reader *r;
	uint64_t	start_ns;
	bool		json;
	uint64_t	n;
};

/* One reclaim part, as --reclaim=list prints it. */
static int print_part(const struct pgtrace_reclaim_part *p, void *arg)
{
	struct list_ctx *c = arg;
	char t[32], at[32], life[32];

	if (c->json) {
		printf("%s{\"time_ns\": %" PRId64 ", \"pfn\": %" PRIu64 ", \"npages\": %" PRIu64
		       ", \"task\": %" PRId64 ", \"origin\": \"%s\"", c->n ? ", " : "",
		       (int64_t)(p->time_ns - c->start_ns), p->pfn, p->npages, p->task,
		       origin_keys[p->origin]);
		if (p->origin == PGTRACE_RECLAIM_TRACED)
			printf(", \"alloc_time_ns\": %" PRId64 ", \"life_ns\": %" PRIu64
			       ", \"alloc_pfn\": %" PRIu64 ", \"alloc_npages\": %" PRIu64
			       ", \"alloc_task\": %" PRId64 ", \"alloc_stack\": %" PRIu32
			       ", \"alloc_order\": %" PRIu32,
			       (int64_t)(p->alloc_ns - c->start_ns), p->life_ns, p->alloc_pfn,
			       p->alloc_npages, p->alloc_task, p->alloc_stack, p->alloc_order);
		printf("}");
		c->n++;
		return 0;
	}
	fmt_rel_time(t, p->time_ns, c->start_ns);
	printf("%16s pfn=0x%" PRIx64 " npages=%" PRIu64 " by %" PRId64 " %s: ", t, p->pfn,
	       p->npages, p->task, task_name(c->r, p->task));
	if (p->origin == PGTRACE_RECLAIM_SNAPSHOT) {
		printf("allocated before the trace (snapshot)\n");
	} else if (p->origin == PGTRACE_RECLAIM_UNKNOWN) {
		printf("allocation not in the trace\n");
	} else {
		fmt_rel_time(at, p->alloc_ns, c->start_ns);
		fmt_ns(life, p->life_ns);
		printf("allocated by %" PRId64 " %s at %s s, order %" PRIu32, p->alloc_task,
		       task_name(c->r, p->alloc_task), at, p->alloc_order);
		if (p->alloc_stack == PGTRACE_STACK_UNKNOWN)
			printf(", stack unknown");
		else if (p->alloc_stack)
			printf(", stack %" PRIu32, p->alloc_stack);
		printf(", lived %s\n", life);
	}
	c->n++;
	return 0;
}

static void print_life_json(const struct pgtrace_reclaim_life *l)
{
	const char *sep = "";

	printf("{\"pages\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
	       ", \"p90_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"mean_ns\": %" PRIu64
	       ", \"buckets\": [", l->pages, l->min_ns, pgtrace_reclaim_percentile(l, 50),
	       pgtrace_reclaim_percentile(l, 90), l->max_ns, l->pages ? l->sum_ns / l->pages : 0);
	for (unsigned int b = 0; b < PGTRACE_RECLAIM_LIFE_BUCKETS; b++) {
		if (!l->buckets[b])
			continue;
		printf("%s[%" PRIu64 ", %" PRIu64 "]", sep, pgtrace_reclaim_bucket_ns(b),
		       l->buckets[b]);
		sep = ", ";
	}
	printf("]}");
}

/* A frame's name, or its address: into @buf (>= 32 bytes) if need be. */
static const char *frame_name(const struct pgtrace_reader *r, uint64_t addr, char *buf)
{
	const char *n = pgtrace_reader_symbol(r, addr, NULL);

	if (n)
		return n;
	snprintf(buf, 32, "0x%" PRIx64, addr);
	return buf;
}

/* The frames of stack @key, innermost first: at most @max, @sep between them. */
static void print_frames(const struct pgtrace_reader *r, int64_t key, unsigned int max,
			 bool json)
{
	const uint64_t *frames;
	char buf[32];
	int depth;

	if (key == 0 || key == PGTRACE_STACK_UNKNOWN) {
		if (!json)
			printf("%s", key ? "(sampled, stack unknown)" : "(not sampled)");
		return;
	}
	depth = pgtrace_reader_stack(r, (uint32_t)key, &frames, NULL);
	if (depth < 0) {
		if (!json)
			printf("(stack not kept)");
		return;
	}
	for (int i = 0; i < depth && (unsigned int)i < max; i++) {
		const char *n = frame_name(r, frames[i], buf);

		if (json) {
			printf("%s", i ? ", " : "");
			json_str(n);
		} else {
			printf("%s%s", i ? " < " : "", n);
		}
	}
	if (!json && (unsigned int)depth > max)
		printf(" < ...");
}

/* The summary's keys, and the object's end; @opened: its "{" is out already. */
static void print_json(const struct pgtrace_reader *r, const struct pgtrace_reclaim *rc,
		       bool opened)
{
	const struct pagetrace_rec_stacks *st = pgtrace_reader_stacks(r);

	printf("%s\"events\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"traced\": {\"pages\": %"
	       PRIu64 ", \"blocks\": %" PRIu64 "}, \"snapshot\": {\"pages\": %" PRIu64
	       ", \"events\": %" PRIu64 "}, \"unknown\": {\"pages\": %" PRIu64 ", \"events\": %"
	       PRIu64 "}, \"lifetime\": ", opened ? "" : "{", rc->events, rc->pages, rc->traced_pages,
	       rc->traced_blocks, rc->snapshot_pages, rc->snapshot_events, rc->unknown_pages,
	       rc->unknown_events);
	print_life_json(&rc->life);
	printf(", \"by_task\": [");
	for (size_t i = 0; i < rc->nr_tasks; i++) {
		const struct pgtrace_reclaim_group *g = &rc->by_task[i];

		printf("%s{\"tgid\": %" PRId64 ", \"comm\": ", i ? ", " : "", g->key);
		json_str(task_name(r, g->key));
		printf(", \"pages\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"parts\": %" PRIu64
		       ", \"lifetime\": ", g->pages, g->blocks, g->parts);
		print_life_json(&g->life);
		printf("}");
	}
	printf("], \"by_stack\": [");
	for (size_t i = 0; i < rc->nr_stacks; i++) {
		const struct pgtrace_reclaim_group *g = &rc->by_stack[i];

		printf("%s{\"stack\": %" PRId64 ", \"frames\": [", i ? ", " : "", g->key);
		print_frames(r, g->key, PAGETRACE_STACK_MAX_DEPTH, true);
		printf("], \"pages\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"parts\": %" PRIu64
		       ", \"lifetime\": ", g->pages, g->blocks, g->parts);
		print_life_json(&g->life);
		printf("}");
	}
	printf("], \"stack_rate\": %u}\n", st ? st->rate : 0);
}

static void print_group_text(const char *label, const struct pgtrace_reclaim_group *g)
{
	char v[4][32];

	fmt_ns(v[0], g->life.min_ns);
	fmt_ns(v[1], pgtrace_reclaim_percentile(&g->life, 50));
	fmt_ns(v[2], pgtrace_reclaim_percentile(&g->life, 90));
	fmt_ns(v[3], g->life.max_ns);
	printf("  %-26s %10" PRIu64 " %8" PRIu64 " %10s %10s %10s %10s\n", label, g->pages,
	       g->blocks, v[0], v[1], v[2], v[3]);
}

static void print_text(const struct pgtrace_reader *r, const struct pgtrace_reclaim *rc)
{
	const struct pagetrace_rec_stacks *st = pgtrace_reader_stacks(r);
	struct pgtrace_reclaim_group all = { .pages = rc->traced_pages,
					     .blocks = rc->traced_blocks, .life = rc->life };
	char label[64];

	printf("reclaimed:       %" PRIu64 " pages in %" PRIu64 " events\n", rc->pages,
	       rc->events);
	printf("  allocated in the trace:      %" PRIu64 " pages of %" PRIu64 " allocations\n",
	       rc->traced_pages, rc->traced_blocks);
	printf("  allocated before it:         %" PRIu64 " pages (in the snapshot; by whom "
	       "not known)\n", rc->snapshot_pages);
	/* Go's scavenger returns free pages to the OS: nothing was lost there. */
	printf("  allocation not in the trace: %" PRIu64 " pages (%s)\n", rc->unknown_pages,
	       pgtrace_reader_header(r)->header_size ?
	       "before the session without a snapshot, or lost" :
	       "Go scavenges pages that are free, not allocated");
	if (!rc->traced_pages)
		return;
	printf("by allocating task:            %10s %8s %10s %10s %10s %10s\n", "pages",
	       "allocs", "min life", "p50", "p90", "max");
	for (size_t i = 0; i < rc->nr_tasks; i++) {
		const struct pgtrace_reclaim_group *g = &rc->by_task[i];

		snprintf(label, sizeof(label), "%" PRId64 " %s", g->key, task_name(r, g->key));
		print_group_text(label, g);
	}
	print_group_text("all", &all);
	if (!st)
		return;
	printf("by allocation stack (sampled about 1 per %u pages allocated):\n", st->rate);
	printf("  %-26s %10s %8s %10s %10s %10s %10s\n", "stack", "pages", "allocs",
	       "min life", "p50", "p90", "max");
	for (size_t i = 0; i < rc->nr_stacks; i++) {
		const struct pgtrace_reclaim_group *g = &rc->by_stack[i];

		if (!g->key)
			snprintf(label, sizeof(label), "not sampled");
		else if (g->key == PGTRACE_STACK_UNKNOWN)
			snprintf(label, sizeof(label), "unknown");
		else
			snprintf(label, sizeof(label), "%" PRId64, g->key);
		print_group_text(label, g);
		if (g->key && g->key != PGTRACE_STACK_UNKNOWN) {
			printf("      ");
			print_frames(r, g->key, FRAMES_TEXT, false);
			printf("\n");
		}
	}
}

int stats_reclaim(struct pgtrace_reader *r, const char *path, bool json, bool list)
{
	struct list_ctx lc = { .r = r, .start_ns = pgtrace_reader_header(r)->start_ns,
			       .json = json };
	struct pgtrace_reclaim_params p = { .part = list ? print_part : NULL, .arg = &lc };
	struct pgtrace_analysis a;
	struct pgtrace_reclaim rc;
	int ret;

	/* The parts go out as the analysis finds them, the summary after. */
	if (list && json)
		printf("{\"parts\": [");
	else if (list)
		printf("reclaimed pages, a line per reclaim event and allocation:\n");
	ret = pgtrace_reclaim_collect(r, &a, &rc, &p);
	if (list && json)
		printf("], ");
	if (ret < 0) {
		/* The object closes all the same; stderr and the exit status say why. */
		if (list && json)
			printf("\"error\": true}\n");
		trace_error(path, r, ret);
	} else if (json) {
		print_json(r, &rc, list);
	} else {
		print_text(r, &rc);
	}
	pgtrace_reclaim_free(&rc);
	pgtrace_analysis_free(&a);
	return ret;
}
