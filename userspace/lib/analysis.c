// SPDX-License-Identifier: GPL-2.0
/*
 * Analysis in time order: per-CPU queues merged by time with a loser tree,
 * a map of the allocated blocks (flat over the zones' PFNs, hashed
 * outside them), lifetimes, pages in use, zones and the rate time line.
 * See the comment above struct pgtrace_analysis in libpagetrace.h.
 *
 * Per event, the hot path: decode a run of one chunk into compact events
 * and append it to its CPU's queue; when the queues allow, merge them into
 * a buffer in time order; apply each merged event to the block map and
 * count it, the block's slot prefetched PREFETCH_AHEAD events before.
 * With PGTRACE_ANALYSIS_UNORDERED the runs are counted as they come instead.
 *
 * Here: the api and the arrival of the runs.  The time order, the apply
 * loop and the block map are in merge.c, apply.c and blocks.c, each
 * calling only those after it (analysis.h draws the layers).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "analysis.h"

#define DEFAULT_MAX_HELD	(1ULL << 21)
#define RATE_BIN0_NS		1000000ULL
#define MAP_MIN_BITS		10

/* ---------------------------------------------------------- arrival */

static int on_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct pgtrace_analysis *a = arg;

	pgtrace_stats_add_chunk(&a->stats, c);
	if (c->lost) {
		if (a->nr_lost_sites < PGTRACE_MAX_LOST_SITES) {
			struct pgtrace_lost_site *l = &a->lost_sites[a->nr_lost_sites++];

			l->offset = c->offset;
			l->time_ns = c->time_ns;
			l->lost = c->lost;
			l->cpu = c->cpu;
		}
		rate_bin(a, c->time_ns)->lost += c->lost;
	}
	return 0;
}

/*
 * pgtrace_stats_add_run(), and with @bin (bin_early, not a snapshot) the run's
 * rate bins: they need no time order, and a run mostly falls in one bin,
 * whose counts then grow by what pgtrace_stats_add_run() added by type.  A v1
 * run is @sorted by time.
 */
static void add_run(struct pgtrace_analysis *a, const struct pgtrace_compact_event *evs, unsigned int n,
		    uint32_t cpu, bool bin, bool sorted)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t ev[4], pg[4], lo = UINT64_MAX, hi = 0;
	struct pgtrace_rate_bin *b;

	if (!bin || !n) {
		if (sorted)
			pgtrace_stats_add_sorted_run(&a->stats, evs, n, cpu);
		else
			pgtrace_stats_add_run(&a->stats, evs, n, cpu);
		return;
	}
	memcpy(ev, a->stats.by_type, sizeof(ev));
	memcpy(pg, a->stats.pages_by_type, sizeof(pg));
	if (sorted)
		pgtrace_stats_add_sorted_run(&a->stats, evs, n, cpu);
	else
		pgtrace_stats_add_run(&a->stats, evs, n, cpu);
	if (sorted) {
		lo = evs[0].time_ns;
		hi = evs[n - 1].time_ns;
	} else {
		for (unsigned int i = 0; i < n; i++) {
			lo = evs[i].time_ns < lo ? evs[i].time_ns : lo;
			hi = evs[i].time_ns > hi ? evs[i].time_ns : hi;
		}
	}
	/* The latest first: it may halve the resolution. */
	b = rate_bin(a, hi);
	if (lo >= m->bin_lo && hi < m->bin_hi) {
		for (unsigned int k = PGTRACE_EV_ALLOC; k <= PGTRACE_EV_RECLAIM; k++) {
			b->events[k] += a->stats.by_type[k] - ev[k];
			b->pages[k] += a->stats.pages_by_type[k] - pg[k];
		}
		return;
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int type = pgtrace_compact_event_type(&evs[i]);

		b = rate_bin(a, evs[i].time_ns);
		b->events[type]++;
		b->pages[type] += pgtrace_compact_event_npages(&evs[i]);
	}
}

/* A run of one CPU's events from one chunk; @full with the event hook. */
static int arrive_run(struct pgtrace_analysis *a, uint32_t cpu, uint16_t chunk_flags,
		      const struct pgtrace_compact_event *evs, const struct pgtrace_event *full,
		      unsigned int n)
{
	struct pgtrace_analysis_priv *m = a->priv;
	bool snap = chunk_flags & PAGETRACE_CHUNK_SNAPSHOT;
	struct queue *q;
	int ret;

	if (snap)
		pgtrace_stats_add_snapshot_run(&a->stats, evs, n, cpu);
	else
		add_run(a, evs, n, cpu, m->bin_early, m->all_cpus_known);
	if (m->p.flags & PGTRACE_ANALYSIS_UNORDERED) {
		pgtrace_count_run(a, evs, n, snap);
		return 0;
	}
	/* The state at the start: seeds the map, outside the time line. */
	if (snap)
		return m->pipe ? pgtrace_pipe_put(a, PIPE_SNAPSHOT, evs, n) :
				 pgtrace_apply_snapshot(a, evs, full, n);
	q = pgtrace_get_queue(m, cpu);
	if (!q)
		return -ENOMEM;
	while (n) {
		unsigned int k = queue_take(m, n);

		ret = pgtrace_queue_room(m, q, k);
		if (ret)
			return ret;
		memcpy(q->ev + q->tail, evs, k * sizeof(*evs));
		if (m->want_full)
			memcpy(q->full + q->tail, full, k * sizeof(*full));
		ret = pgtrace_queue_commit(a, q, k);
		if (ret)
			return ret;
		evs += k;
		if (full)
			full += k;
		n -= k;
	}
	return 0;
}

/* With the event hook: a batch of full events, cut into runs of one CPU. */
static int arrive_batch(struct pgtrace_analysis *a, unsigned int n)
{
	struct pgtrace_analysis_priv *m = a->priv;
	const struct pgtrace_event *b = m->batch;
	unsigned int i = 0;

	while (i < n) {
		unsigned int j = i, k = 0;
		int ret;

		if (b[i].type < PGTRACE_EV_ALLOC || b[i].type > PGTRACE_EV_RECLAIM) {
			i++;	/* a task record */
			continue;
		}
		while (j < n && b[j].cpu == b[i].cpu && b[j].chunk_flags == b[i].chunk_flags &&
		       b[j].type >= PGTRACE_EV_ALLOC && b[j].type <= PGTRACE_EV_RECLAIM) {
			m->run[k].time_ns = b[j].time_ns;
			m->run[k].pfn = b[j].pfn;
			m->run[k].npages_type = b[j].npages << 2 | b[j].type;
			j++;
			k++;
		}
		ret = arrive_run(a, b[i].cpu, b[i].chunk_flags, m->run, &b[i], k);
		if (ret)
			return ret;
		i = j;
	}
	return 0;
}

/*
 * Without the event hook, each run of a v1 stream is decoded straight into
 * its CPU's queue: 0 at the end of the stream, or an error.
 */
static int collect_in_place(struct pgtrace_reader *r, struct pgtrace_analysis *a)
{
	struct pgtrace_analysis_priv *m = a->priv;
	const struct pgtrace_chunk *c;
	int ret;

	while ((ret = pgtrace_reader_peek_chunk(r, &c)) > 0) {
		uint64_t offset = c->offset;
		uint32_t cpu = c->cpu;
		struct queue *q;
		unsigned int k;

		if (c->flags & PAGETRACE_CHUNK_SNAPSHOT) {
			ret = pgtrace_reader_next_run(r, m->run, RUN, &c);
			if (ret > 0)
				ret = arrive_run(a, c->cpu, c->flags, m->run, NULL, ret);
			if (ret < 0)
				return ret;
			continue;
		}
		q = pgtrace_get_queue(m, cpu);
		if (!q)
			return -ENOMEM;
		k = queue_take(m, RUN);
		ret = pgtrace_queue_room(m, q, k);
		if (!ret)
			ret = pgtrace_reader_next_run(r, q->ev + q->tail, k, &c);
		if (ret <= 0)
			return ret;
		if (c->offset != offset) {
			/* That chunk had no events left: these are a later one's. */
			memcpy(m->run, q->ev + q->tail, ret * sizeof(*m->run));
			ret = arrive_run(a, c->cpu, c->flags, m->run, NULL, ret);
		} else {
			add_run(a, q->ev + q->tail, ret, cpu, m->bin_early, true);
			ret = pgtrace_queue_commit(a, q, ret);
		}
		if (ret)
			return ret;
	}
	return ret;
}

/* ------------------------------------------------------------- api */

static int cmp_zone(const void *x, const void *y)
{
	const struct pgtrace_zone *a = x, *b = y;

	return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

/*
 * The flat map spans the zones from a leaf boundary, FLAT_MAX_PFNS at
 * most; each leaf's zone is known up front unless a zone edge is in it.
 */
static int flat_init(struct pgtrace_analysis *a)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t lo = UINT64_MAX, hi = 0, nr;

	for (unsigned int i = 0; i < a->nr_zones; i++) {
		const struct pgtrace_zone *z = &a->zones[i];

		if (z->start_pfn >= z->end_pfn || z->start_pfn > PAGETRACE_PFN_MAX)
			continue;
		lo = z->start_pfn < lo ? z->start_pfn : lo;
		hi = z->end_pfn > hi ? z->end_pfn : hi;
	}
	if (lo >= hi)
		return 0;
	lo &= ~LEAF_MASK;
	if (hi > PAGETRACE_PFN_MAX + 1)
		hi = PAGETRACE_PFN_MAX + 1;
	if (hi - lo > FLAT_MAX_PFNS)
		hi = lo + FLAT_MAX_PFNS;
	nr = (hi - lo + LEAF_MASK) >> LEAF_SHIFT;
	m->dir = calloc(nr, sizeof(*m->dir));
	m->leaf_zone = malloc(nr * sizeof(*m->leaf_zone));
	m->leaf_zs = malloc(nr * sizeof(*m->leaf_zs));
	if (!m->dir || !m->leaf_zone || !m->leaf_zs)
		return -ENOMEM;
	m->flat_lo = lo;
	m->flat_span = nr << LEAF_SHIFT;
	for (uint64_t i = 0; i < nr; i++)
		m->leaf_zone[i] = pgtrace_analysis_zone(a, lo + (i << LEAF_SHIFT));
	/* A zone starting or ending inside a leaf: its PFNs differ. */
	for (unsigned int i = 0; i < a->nr_zones; i++) {
		uint64_t edge[2] = { a->zones[i].start_pfn, a->zones[i].end_pfn };

		for (int k = 0; k < 2; k++)
			if (edge[k] > lo && edge[k] - lo < m->flat_span &&
			    ((edge[k] - lo) & LEAF_MASK))
				m->leaf_zone[(edge[k] - lo) >> LEAF_SHIFT] = LEAF_MIXED;
	}
	for (uint64_t i = 0; i < nr; i++)
		m->leaf_zs[i] = m->leaf_zone[i] == LEAF_MIXED ? NULL : zone_stats(a, m->leaf_zone[i]);
	return 0;
}

static int an_init(struct pgtrace_reader *r, struct pgtrace_analysis *a,
		   const struct pgtrace_analysis_params *p)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	const struct pgtrace_session *ses = pgtrace_reader_session(r);
	const struct pgtrace_zone *z;
	const struct pgtrace_kernel_counters *kc;
	struct pgtrace_analysis_priv *m;
	int ret;

	memset(a, 0, sizeof(*a));
	ret = pgtrace_stats_init(&a->stats, h->nr_cpus);
	if (ret)
		return ret;
	m = a->priv = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (p)
		m->p = *p;
	if (!m->p.max_held)
		m->p.max_held = DEFAULT_MAX_HELD;
	if (!m->p.hold_ns) {
		if (!h->header_size)	/* Go: buffers flush only when full */
			m->p.hold_ns = UINT64_MAX;
		else
			m->p.hold_ns = 1000000000ULL +
				       4000000ULL * (ses ? ses->flush_ms : 0);
	}
	m->want_full = m->p.event;
	m->bin_early = !m->p.event && !m->p.change && !(m->p.flags & PGTRACE_ANALYSIS_UNORDERED);
	m->sortable = h->header_size && !m->want_full;
	a->nr_zones = pgtrace_reader_zones(r, &z);
	/* Zone indexes fit a slot: a header of 1 MiB holds fewer zones. */
	if (a->nr_zones >= SLOT_ZONE_OTHER)
		return -EOVERFLOW;
	a->zones = calloc(a->nr_zones + 1, sizeof(*a->zones));
	a->zone_stats = calloc(a->nr_zones + 1, sizeof(*a->zone_stats));
	a->bins = calloc(PGTRACE_RATE_BINS, sizeof(*a->bins));
	a->life = calloc(PGTRACE_LIFE_ORDERS, sizeof(*a->life));
	m->map_bits = MAP_MIN_BITS;
	m->map = calloc(1ULL << m->map_bits, sizeof(*m->map));
	if (m->want_full) {
		m->batch = calloc(RUN, sizeof(*m->batch));
		m->out_full = calloc(OUT, sizeof(*m->out_full));
		if (!m->batch || !m->out_full)
			return -ENOMEM;
	}
	if (!a->zones || !a->zone_stats || !a->bins || !a->life || !m->map)
		return -ENOMEM;
	if (a->nr_zones)
		memcpy(a->zones, z, a->nr_zones * sizeof(*z));
	qsort(a->zones, a->nr_zones, sizeof(*a->zones), cmp_zone);
	ret = flat_init(a);
	if (ret)
		return ret;
	/*
	 * v1 streams name their CPUs up front, so a CPU that has logged
	 * nothing yet holds the merge back.  Go traces do not: their Ps are
	 * learnt on the way, so events wait for the end (or max_held).
	 */
	m->q_off = UINT_MAX;
	m->tree_dirty = true;
	if (h->header_size) {
		m->all_cpus_known = true;
		for (unsigned int c = 0; c < h->nr_cpus; c++) {
			struct queue *q = pgtrace_get_queue(m, c);

			if (!q)
				return -ENOMEM;
			q->active = true;
			m->nr_active++;
		}
	}
	a->origin_ns = h->start_ns;
	a->bin_ns = RATE_BIN0_NS;
	/* The kernel's count at start: the pages in use are taken then too. */
	kc = pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_START);
	if (kc && !(m->p.flags & PGTRACE_ANALYSIS_UNORDERED)) {
		m->mark_ns = kc->time_ns;
		m->mark_pending = true;
		m->snap_end_ns = kc->time_ns;
	}
	return 0;
}

int pgtrace_analysis_collect(struct pgtrace_reader *r, struct pgtrace_analysis *a,
			const struct pgtrace_analysis_params *p)
{
	struct pgtrace_analysis_priv *m;
	const struct pgtrace_chunk *c;
	int ret, ret2;

	ret = an_init(r, a, p);
	if (ret)
		return ret;
	m = a->priv;
	/*
	 * Hooks see the state as each event is applied: on this thread, then.
	 * Without a second thread (none to be had), all goes on this one,
	 * to the same result.
	 */
	if (m->p.threads > 1 && m->bin_early)
		pgtrace_pipe_start(a);
	pgtrace_reader_set_chunk_cb(r, on_chunk, a);
	if (m->want_full) {
		while ((ret = pgtrace_reader_next_batch(r, m->batch, RUN)) > 0) {
			ret = arrive_batch(a, ret);
			if (ret)
				break;
		}
	} else if (!(m->p.flags & PGTRACE_ANALYSIS_UNORDERED) && pgtrace_reader_header(r)->header_size) {
		ret = collect_in_place(r, a);
	} else {
		/* Unordered, or a Go trace (header_size 0: no peeking). */
		while ((ret = pgtrace_reader_next_run(r, m->run, RUN, &c)) > 0) {
			ret = arrive_run(a, c->cpu, c->flags, m->run, NULL, ret);
			if (ret)
				break;
		}
	}
	/* Whatever came before a reader error still counts; a hook's stops all. */
	ret2 = m->err ? 0 : pgtrace_an_release(a, true);
	if (!ret)
		ret = ret2;
	/* No event came after the kernel's start counters. */
	if (m->mark_pending)
		pgtrace_an_mark(a);
	/* All applied: the figures of both threads are in. */
	ret2 = pgtrace_pipe_finish(a);
	if (!ret)
		ret = ret2;
	pgtrace_reader_set_chunk_cb(r, NULL, NULL);
	pgtrace_life_total(a);
	if (a->stats.nr_cpus > pgtrace_reader_header(r)->nr_cpus)
		a->stats.nr_cpus = pgtrace_reader_header(r)->nr_cpus;
	a->stats.tasks = pgtrace_reader_counters(r)->tasks;
	a->stats.bytes = pgtrace_reader_counters(r)->bytes;
	pgtrace_stats_end_times(&a->stats, pgtrace_reader_header(r)->start_ns);
	return ret;
}

void pgtrace_analysis_free(struct pgtrace_analysis *a)
{
	struct pgtrace_analysis_priv *m = a->priv;

	if (m)
		pgtrace_pipe_finish(a);	/* the thread uses what is freed below */
	pgtrace_stats_free(&a->stats);
	free(a->zones);
	free(a->zone_stats);
	free(a->bins);
	free(a->life);
	a->zones = NULL;
	a->zone_stats = NULL;
	a->bins = NULL;
	a->life = NULL;
	if (m) {
		for (unsigned int i = 0; i < m->nr_q; i++) {
			free(m->q[i].ev);
			free(m->q[i].full);
		}
		free(m->q);
		for (unsigned int i = 0; i < m->nr_arenas; i++)
			munmap(m->arenas[i], ARENA_BYTES);
		free(m->arenas);
		free(m->dir);
		free(m->leaf_zone);
		free(m->leaf_zs);
		free(m->map);
		free(m->lt64);
		free(m->lt128);
		free(m->win);
		free(m->cur);
		free(m->sort_end);
		free(m->sorted);
		free(m->counts);
		free(m->batch);
		free(m->out_full);
		free(m);
		a->priv = NULL;
	}
}
