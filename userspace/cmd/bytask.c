// SPDX-License-Identifier: GPL-2.0
/*
 * Per process (tgid) totals, from the stream's task records: pages
 * allocated, freed and reclaimed, and the pages each one allocated that
 * are still allocated at the end of the trace.  pagetrace stats --by task
 * prints them; pagetrace report collects them alongside its figures.
 *
 * The events of a task record's chunk after it belong to its tgid; 0 is
 * the kernel (interrupt context), -1 events before any task record (or
 * streams without them).  Frees and reclaims count for the task that
 * logged them, not for the one that allocated the pages.
 *
 * In use at the end: the analysis reports every range of pages that
 * becomes allocated (the next event's, so its task's) and every range that
 * stops being so (a free, a reclaim, part of a split block, a replaced
 * block); each range that stops is taken from the task that allocated the
 * block holding it.  Snapshot allocations belong to no task.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"

struct owned {
	uint64_t	pfn;		/* first page; UINT64_MAX: empty */
	uint64_t	npages;
	uint64_t	left;		/* pages of it still allocated */
	struct task_stats *task;
};

#define PENDING_MAX	8

struct by_task {
	struct task_stats *tasks;	/* open addressing by tgid */
	size_t		tcap, nr_tasks;
	struct owned	*blocks;	/* open addressing by pfn */
	size_t		bcap, nr_blocks;
	/* Ranges allocated by the event the analysis hands over next. */
	uint64_t	pend_pfn[PENDING_MAX], pend_np[PENDING_MAX];
	unsigned int	nr_pend;
	bool		nomem;
};

static size_t hash64(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

static struct task_stats *task_get(struct by_task *b, int64_t tgid)
{
	struct task_stats *t;
	size_t i;

	if (2 * (b->nr_tasks + 1) > b->tcap) {
		size_t cap = b->tcap ? 2 * b->tcap : 256;
		struct task_stats *nt = calloc(cap, sizeof(*nt));

		if (!nt) {
			b->nomem = true;
			return NULL;
		}
		for (i = 0; i < b->tcap; i++) {
			size_t j;

			if (!b->tasks[i].used)
				continue;
			for (j = hash64(b->tasks[i].tgid, cap); nt[j].used; j = (j + 1) & (cap - 1))
				;
			nt[j] = b->tasks[i];
		}
		/* Blocks point at tasks: move them along. */
		for (i = 0; i < b->bcap; i++) {
			struct owned *o = &b->blocks[i];
			size_t j;

			if (o->pfn == UINT64_MAX)
				continue;
			for (j = hash64(o->task->tgid, cap); nt[j].tgid != o->task->tgid;
			     j = (j + 1) & (cap - 1))
				;
			o->task = &nt[j];
		}
		free(b->tasks);
		b->tasks = nt;
		b->tcap = cap;
	}
	for (i = hash64(tgid, b->tcap); b->tasks[i].used; i = (i + 1) & (b->tcap - 1))
		if (b->tasks[i].tgid == tgid)
			return &b->tasks[i];
	t = &b->tasks[i];
	t->used = true;
	t->tgid = tgid;
	b->nr_tasks++;
	return t;
}

static struct owned *block_slot(const struct by_task *b, uint64_t pfn)
{
	size_t i;

	for (i = hash64(pfn, b->bcap); b->blocks[i].pfn != UINT64_MAX &&
	     b->blocks[i].pfn != pfn; i = (i + 1) & (b->bcap - 1))
		;
	return &b->blocks[i];
}

static void block_put(struct by_task *b, uint64_t pfn, uint64_t npages,
		      struct task_stats *t)
{
	struct owned *o;

	if (2 * (b->nr_blocks + 1) > b->bcap) {
		size_t cap = b->bcap ? 2 * b->bcap : 1024, old_cap, i;
		struct owned *old = b->blocks, *nb = malloc(cap * sizeof(*nb));

		if (!nb) {
			b->nomem = true;
			return;
		}
		for (i = 0; i < cap; i++)
			nb[i].pfn = UINT64_MAX;
		/* The new size first: block_slot() hashes with it. */
		b->blocks = nb;
		old_cap = b->bcap;
		b->bcap = cap;
		for (i = 0; i < old_cap; i++)
			if (old[i].pfn != UINT64_MAX)
				*block_slot(b, old[i].pfn) = old[i];
		free(old);
	}
	o = block_slot(b, pfn);
	if (o->pfn == UINT64_MAX)
		b->nr_blocks++;
	else
		o->task->in_use -= o->left;
	o->pfn = pfn;
	o->npages = npages;
	o->left = npages;
	o->task = t;
	t->in_use += npages;
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void block_del(struct by_task *b, struct owned *o)
{
	size_t i = (size_t)(o - b->blocks), j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & (b->bcap - 1);
		if (b->blocks[j].pfn == UINT64_MAX)
			break;
		h = hash64(b->blocks[j].pfn, b->bcap);
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			b->blocks[i] = b->blocks[j];
			i = j;
		}
	}
	b->blocks[i].pfn = UINT64_MAX;
	b->nr_blocks--;
}

/* The owned block holding @pfn: starting there, or a naturally aligned one. */
static struct owned *block_find(struct by_task *b, uint64_t pfn)
{
	unsigned int o;

	if (!b->bcap)
		return NULL;
	for (o = 0; o <= PGTRACE_SPLIT_ORDERS; o++) {
		struct owned *s = block_slot(b, pfn & ~((1ULL << o) - 1));

		if (s->pfn != UINT64_MAX && pfn < s->pfn + s->npages)
			return s;
	}
	return NULL;
}

void by_task_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
		    unsigned int order, void *arg)
{
	struct by_task *b = arg;
	struct owned *o;

	(void)time_ns;
	(void)order;
	if (sign > 0) {
		if (b->nr_pend < PENDING_MAX) {
			b->pend_pfn[b->nr_pend] = pfn;
			b->pend_np[b->nr_pend++] = npages;
		}
		return;
	}
	o = block_find(b, pfn);
	if (!o)
		return;		/* a snapshot block: nobody's */
	if (npages > o->left)
		npages = o->left;
	o->left -= npages;
	o->task->in_use -= npages;
	if (!o->left)
		block_del(b, o);
}

int by_task_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct by_task *b = arg;
	struct task_stats *t;
	unsigned int i;

	(void)a;
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) {
		b->nr_pend = 0;
		return 0;
	}
	t = task_get(b, ev->task);
	if (!t)
		return -ENOMEM;
	if (ev->type >= PGTRACE_EV_ALLOC && ev->type <= PGTRACE_EV_RECLAIM) {
		t->events[ev->type]++;
		t->pages[ev->type] += ev->npages;
	}
	for (i = 0; i < b->nr_pend; i++)
		block_put(b, b->pend_pfn[i], b->pend_np[i], t);
	b->nr_pend = 0;
	return b->nomem ? -ENOMEM : 0;
}

static int cmp_tasks(const void *x, const void *y)
{
	const struct task_stats *p = x, *q = y;

	if (p->pages[PGTRACE_EV_ALLOC] != q->pages[PGTRACE_EV_ALLOC])
		return p->pages[PGTRACE_EV_ALLOC] > q->pages[PGTRACE_EV_ALLOC] ? -1 : 1;
	return p->tgid < q->tgid ? -1 : p->tgid > q->tgid;
}

const char *task_name(const struct pgtrace_reader *r, int64_t tgid)
{
	const char *n = pgtrace_reader_task_name(r, tgid);

	if (n)
		return n;
	return tgid == 0 ? "[kernel]" : tgid < 0 ? "[unknown]" : "?";
}

struct by_task *by_task_new(void)
{
	return calloc(1, sizeof(struct by_task));
}

struct task_stats *by_task_list(const struct by_task *b, size_t *n)
{
	struct task_stats *list = malloc((b->nr_tasks ? b->nr_tasks : 1) * sizeof(*list));
	size_t i;

	*n = 0;
	if (!list)
		return NULL;
	for (i = 0; i < b->tcap; i++)
		if (b->tasks[i].used)
			list[(*n)++] = b->tasks[i];
	qsort(list, *n, sizeof(*list), cmp_tasks);
	return list;
}

void by_task_each(struct by_task *b, void (*fn)(struct task_stats *t, void *arg), void *arg)
{
	for (size_t i = 0; i < b->tcap; i++)
		if (b->tasks[i].used)
			fn(&b->tasks[i], arg);
}

void by_task_free(struct by_task *b)
{
	if (!b)
		return;
	free(b->tasks);
	free(b->blocks);
	free(b);
}

int stats_by_task(struct pgtrace_reader *r, const char *path, bool json)
{
	struct by_task *b = by_task_new();
	struct pgtrace_analysis_params ap = { .event = by_task_event, .change = by_task_change,
					 .arg = b };
	struct pgtrace_analysis a = { 0 };
	struct task_stats *list;
	size_t i, n = 0;
	int ret;

	if (!b) {
		fprintf(stderr, "pagetrace: %s: out of memory\n", path);
		return -ENOMEM;
	}
	ret = pgtrace_analysis_collect(r, &a, &ap);
	if (ret < 0) {
		trace_error(path, r, ret);
		goto out;
	}
	list = by_task_list(b, &n);
	if (!list) {
		ret = -ENOMEM;
		fprintf(stderr, "pagetrace: %s: out of memory\n", path);
		goto out;
	}
	if (json) {
		printf("{\"tasks\": [");
		for (i = 0; i < n; i++) {
			const struct task_stats *t = &list[i];

			printf("%s{\"tgid\": %" PRId64 ", \"comm\": ", i ? ", " : "", t->tgid);
			json_str(task_name(r, t->tgid));
			printf(", \"events\": {\"alloc\": %" PRIu64 ", \"free\": %" PRIu64
			       ", \"reclaim\": %" PRIu64 "}, \"pages\": {\"alloc\": %" PRIu64
			       ", \"free\": %" PRIu64 ", \"reclaim\": %" PRIu64
			       "}, \"in_use_end\": %" PRIu64 "}",
			       t->events[1], t->events[2], t->events[3],
			       t->pages[1], t->pages[2], t->pages[3], t->in_use);
		}
		printf("], \"names_dropped\": %" PRIu64 "}\n", pgtrace_reader_names_dropped(r));
	} else {
		printf("%8s %-16s %10s %10s %10s %10s %10s %10s %10s\n", "tgid", "comm",
		       "alloc", "alloc_pg", "free", "free_pg", "reclaim", "reclm_pg",
		       "in_use_pg");
		for (i = 0; i < n; i++) {
			const struct task_stats *t = &list[i];

			printf("%8" PRId64 " %-16s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
			       " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
			       t->tgid, task_name(r, t->tgid), t->events[1], t->pages[1],
			       t->events[2], t->pages[2], t->events[3], t->pages[3],
			       t->in_use);
		}
	}
	free(list);
out:
	pgtrace_analysis_free(&a);
	by_task_free(b);
	return ret;
}
