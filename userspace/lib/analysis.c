// SPDX-License-Identifier: GPL-2.0
/*
 * Analysis in time order: per-CPU queues merged by time, a hash map of the
 * allocated blocks, lifetimes, pages in use, zones and the rate time line.
 * See the comment above struct pt_analysis in libpagetrace.h.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

#define DEFAULT_MAX_HELD	(1ULL << 21)
#define RATE_BIN0_NS		1000000ULL
#define MAP_MIN_BITS		10
/* Events ahead whose hash slot is prefetched: the map misses the cache. */
#define PREFETCH_AHEAD		8

/* An allocated block, or a piece of one that was partly freed. */
struct block {
	uint64_t	pfn;
	uint64_t	npages;		/* 0: empty slot */
	uint64_t	time_ns;	/* allocation time */
	uint32_t	zone;
	uint8_t		order;		/* of the whole allocation */
	uint8_t		snap;		/* from a snapshot: no start time */
};

/* One CPU's events waiting for the merge: a ring buffer, cap a power of 2. */
struct queue {
	struct pt_event	*ev;
	size_t		head;
	size_t		len;
	size_t		cap;
	bool		active;		/* has had events */
	unsigned int	hpos;		/* index in the heap, if len */
};

struct pt_analysis_priv {
	struct pt_analysis_params p;
	struct block	*map;
	unsigned int	map_bits;
	uint64_t	map_used;
	/* Queue i holds cpu i - 1: index 0 is PT_CPU_NONE (Go's P -1). */
	struct queue	*q;
	unsigned int	nr_q;
	unsigned int	nr_active;	/* queues that have had events */
	/* Non-empty queues, a min-heap by the time of their first event. */
	unsigned int	*heap;
	unsigned int	nr_nonempty;
	uint64_t	held;
	uint64_t	max_seen;
	uint64_t	last_released;
	bool		released_any;
	bool		all_cpus_known;	/* v1: the header lists every CPU */
	int		err;		/* from a hook */
	/* The rate bin last used, [bin_lo, bin_hi); empty at first. */
	unsigned int	bin_idx;
	uint64_t	bin_lo, bin_hi;
};

/* ------------------------------------------------------------ helpers */

unsigned int pt_life_order(uint64_t npages)
{
	unsigned int o;

	if (npages <= 1)
		return 0;
	o = 64 - __builtin_clzll(npages - 1);
	return o < PT_LIFE_ORDERS ? o : PT_LIFE_ORDERS - 1;
}

static unsigned int life_bucket(uint64_t ns)
{
	uint64_t v = ns >> PAGETRACE_TIME_LOST_BITS;
	unsigned int e;

	if (v < PT_LIFE_EXACT)
		return (unsigned int)v;
	e = 63 - __builtin_clzll(v);
	return PT_LIFE_EXACT + (e - 6) * PT_LIFE_SUB + ((v >> (e - 5)) & (PT_LIFE_SUB - 1));
}

uint64_t pt_life_bucket_ns(unsigned int b)
{
	unsigned int e, m;

	if (b < PT_LIFE_EXACT)
		return (uint64_t)b << PAGETRACE_TIME_LOST_BITS;
	e = (b - PT_LIFE_EXACT) / PT_LIFE_SUB + 6;
	m = (b - PT_LIFE_EXACT) % PT_LIFE_SUB;
	return ((uint64_t)(PT_LIFE_SUB + m) << (e - 5)) << PAGETRACE_TIME_LOST_BITS;
}

uint64_t pt_life_percentile(const struct pt_life_hist *h, double pct)
{
	uint64_t rank, sum = 0, v;
	double x;

	if (!h->count)
		return 0;
	if (pct < 0)
		pct = 0;
	if (pct > 100)
		pct = 100;
	x = pct / 100.0 * (double)h->count;
	rank = (uint64_t)x;
	if ((double)rank < x)
		rank++;
	if (!rank)
		rank = 1;
	for (unsigned int b = 0; b < PT_LIFE_BUCKETS; b++) {
		sum += h->buckets[b];
		if (sum >= rank) {
			v = pt_life_bucket_ns(b);
			if (v < h->min_ns)
				v = h->min_ns;
			return v > h->max_ns ? h->max_ns : v;
		}
	}
	return h->max_ns;
}

static void life_add(struct pt_life_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->buckets[life_bucket(ns)]++;
}

unsigned int pt_analysis_zone(const struct pt_analysis *a, uint64_t pfn)
{
	unsigned int lo = 0, hi = a->nr_zones;

	/* Few zones (the usual): count those starting at or before, no branches. */
	if (hi <= 16) {
		for (unsigned int i = 0; i < hi; i++)
			lo += a->zones[i].start_pfn <= pfn;
		hi = lo;
	}
	/* The last zone starting at or before pfn. */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (a->zones[mid].start_pfn <= pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pfn < a->zones[lo - 1].end_pfn)
		return lo - 1;
	return PT_ZONE_OTHER;
}

static struct pt_zone_stats *zone_stats(struct pt_analysis *a, uint32_t z)
{
	return z == PT_ZONE_OTHER ? &a->other_zone : &a->zone_stats[z];
}

/* ---------------------------------------------------------------- map */

static uint64_t map_slot(const struct pt_analysis_priv *m, uint64_t pfn)
{
	return (pfn * 0x9e3779b97f4a7c15ULL) >> (64 - m->map_bits);
}

static void map_prefetch(const struct pt_analysis_priv *m, uint64_t pfn)
{
	__builtin_prefetch(&m->map[map_slot(m, pfn)]);
}

static struct block *map_find(struct pt_analysis_priv *m, uint64_t pfn)
{
	uint64_t mask = (1ULL << m->map_bits) - 1;

	for (uint64_t i = map_slot(m, pfn);; i = (i + 1) & mask) {
		struct block *b = &m->map[i];

		if (!b->npages)
			return NULL;
		if (b->pfn == pfn)
			return b;
	}
}

static void map_put_raw(struct block *map, unsigned int bits, const struct block *nb)
{
	uint64_t mask = (1ULL << bits) - 1;
	uint64_t i = (nb->pfn * 0x9e3779b97f4a7c15ULL) >> (64 - bits);

	while (map[i].npages)
		i = (i + 1) & mask;
	map[i] = *nb;
}

/* Insert a block whose pfn is not in the map. */
static int map_insert(struct pt_analysis_priv *m, const struct block *nb)
{
	if ((m->map_used + 1) * 2 > (1ULL << m->map_bits)) {
		unsigned int bits = m->map_bits + 1;
		struct block *n = calloc(1ULL << bits, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint64_t i = 0; i < (1ULL << m->map_bits); i++)
			if (m->map[i].npages)
				map_put_raw(n, bits, &m->map[i]);
		free(m->map);
		m->map = n;
		m->map_bits = bits;
	}
	map_put_raw(m->map, m->map_bits, nb);
	m->map_used++;
	return 0;
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void map_delete(struct pt_analysis_priv *m, struct block *b)
{
	uint64_t mask = (1ULL << m->map_bits) - 1;
	uint64_t i = b - m->map, j = i;

	for (;;) {
		uint64_t k;

		j = (j + 1) & mask;
		if (!m->map[j].npages)
			break;
		k = map_slot(m, m->map[j].pfn);
		/* Move j back to i unless its home slot k lies in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		m->map[i] = m->map[j];
		i = j;
	}
	m->map[i].npages = 0;
	m->map_used--;
}

/* The block holding @pfn: it starts there, or at an aligned start below. */
static struct block *find_containing(struct pt_analysis_priv *m, uint64_t pfn)
{
	struct block *b = map_find(m, pfn);

	for (unsigned int k = 1; !b && k <= PT_SPLIT_ORDERS; k++) {
		uint64_t s = pfn & ~((1ULL << k) - 1);

		if (s == pfn)
			continue;
		b = map_find(m, s);
		if (b && b->pfn + b->npages <= pfn)
			b = NULL;
	}
	return b;
}

/* ------------------------------------------------------------ in use */

static void in_use_add(struct pt_analysis *a, const struct block *b, uint64_t t)
{
	struct pt_zone_stats *z = zone_stats(a, b->zone);

	a->in_use += b->npages;
	a->in_use_blocks++;
	a->in_use_by_order[b->order] += b->npages;
	z->in_use += b->npages;
	if (z->in_use > z->peak_in_use)
		z->peak_in_use = z->in_use;
	if (a->in_use > a->peak_in_use) {
		a->peak_in_use = a->in_use;
		a->peak_ns = t;
	}
}

static void in_use_sub(struct pt_analysis *a, const struct block *b, uint64_t npages)
{
	a->in_use -= npages;
	a->in_use_by_order[b->order] -= npages;
	zone_stats(a, b->zone)->in_use -= npages;
}

/*
 * Put [from, to) of block @b back as naturally aligned pieces, so that a
 * later free of any page in them is found by find_containing().
 */
static int put_pieces(struct pt_analysis *a, const struct block *b, uint64_t from,
		      uint64_t to)
{
	while (from < to) {
		unsigned int k = from ? __builtin_ctzll(from) : 63;
		struct block nb = *b;
		int ret;

		while (k && (k >= 63 || from + (1ULL << k) > to))
			k--;
		nb.pfn = from;
		nb.npages = 1ULL << k;
		ret = map_insert(a->priv, &nb);
		if (ret)
			return ret;
		a->in_use_blocks++;
		from += nb.npages;
	}
	return 0;
}

static int do_alloc(struct pt_analysis *a, const struct pt_event *ev, bool snap)
{
	struct pt_analysis_priv *m = a->priv;
	struct block nb, *old = map_find(m, ev->pfn);
	int ret;

	if (old) {
		/* Allocated again without a free in between: the free was lost. */
		a->realloc_events++;
		in_use_sub(a, old, old->npages);
		a->in_use_blocks--;
		if (m->p.change)
			m->p.change(ev->time_ns, old->pfn, old->npages, -1, old->order, m->p.arg);
		map_delete(m, old);
	}
	nb.pfn = ev->pfn;
	nb.npages = ev->npages;
	nb.time_ns = ev->time_ns;
	nb.zone = pt_analysis_zone(a, ev->pfn);
	nb.order = (uint8_t)pt_life_order(ev->npages);
	nb.snap = snap;
	ret = map_insert(m, &nb);
	if (ret)
		return ret;
	in_use_add(a, &nb, ev->time_ns);
	if (m->p.change)
		m->p.change(ev->time_ns, nb.pfn, nb.npages, 1, nb.order, m->p.arg);
	return 0;
}

static int do_end(struct pt_analysis *a, const struct pt_event *ev)
{
	struct pt_analysis_priv *m = a->priv;
	uint64_t cur = ev->pfn, rem = ev->npages;
	bool matched = false;
	int ret;

	while (rem) {
		struct block *e = find_containing(m, cur), b;
		uint64_t end, oend, len;

		if (!e)
			break;
		b = *e;
		map_delete(m, e);
		a->in_use_blocks--;
		end = b.pfn + b.npages;
		oend = cur + rem < end ? cur + rem : end;
		len = oend - cur;
		in_use_sub(a, &b, len);
		ret = put_pieces(a, &b, b.pfn, cur);
		if (!ret)
			ret = put_pieces(a, &b, oend, end);
		if (ret)
			return ret;
		if (m->p.change)
			m->p.change(ev->time_ns, cur, len, -1, b.order, m->p.arg);
		if (!b.snap) {
			uint64_t life = ev->time_ns > b.time_ns ? ev->time_ns - b.time_ns : 0;

			life_add(&a->life[b.order], life);
			life_add(&a->life_all, life);
		}
		matched = true;
		cur = oend;
		rem -= len;
	}
	if (rem) {
		a->unmatched_pages[ev->type] += rem;
		if (!matched)
			a->unmatched_events[ev->type]++;
	}
	return 0;
}

static int process(struct pt_analysis *a, const struct pt_event *ev, bool snap)
{
	struct pt_analysis_priv *m = a->priv;
	int ret;

	if (ev->type == PT_EV_ALLOC)
		ret = do_alloc(a, ev, snap);
	else
		ret = do_end(a, ev);
	if (!ret && m->p.event) {
		ret = m->p.event(ev, a, m->p.arg);
		if (ret)
			m->err = ret;
	}
	return ret;
}

/* -------------------------------------------------------- time order */

static struct queue *get_queue(struct pt_analysis_priv *m, uint32_t cpu)
{
	unsigned int i = cpu + 1U, nr;
	struct queue *n;

	if (i < m->nr_q)
		return &m->q[i];
	if (i > PT_GO_MAX_P)
		return NULL;
	/* Doubling: CPUs (and Go Ps) come by one at a time. */
	nr = i + 1 > 2 * m->nr_q ? i + 1 : 2 * m->nr_q;
	if (nr > PT_GO_MAX_P + 1)
		nr = PT_GO_MAX_P + 1;
	n = realloc(m->q, nr * sizeof(*n));
	if (!n)
		return NULL;
	memset(n + m->nr_q, 0, (nr - m->nr_q) * sizeof(*n));
	m->q = n;
	m->nr_q = nr;
	return &m->q[i];
}

static uint64_t head_ns(const struct pt_analysis_priv *m, unsigned int qi)
{
	const struct queue *q = &m->q[qi];

	return q->ev[q->head].time_ns;
}

static void heap_set(struct pt_analysis_priv *m, unsigned int pos, unsigned int qi)
{
	m->heap[pos] = qi;
	m->q[qi].hpos = pos;
}

static void heap_up(struct pt_analysis_priv *m, unsigned int pos)
{
	unsigned int qi = m->heap[pos];
	uint64_t t = head_ns(m, qi);

	while (pos) {
		unsigned int parent = (pos - 1) / 2;

		if (head_ns(m, m->heap[parent]) <= t)
			break;
		heap_set(m, pos, m->heap[parent]);
		pos = parent;
	}
	heap_set(m, pos, qi);
}

static void heap_down(struct pt_analysis_priv *m, unsigned int pos)
{
	unsigned int qi = m->heap[pos], n = m->nr_nonempty;
	uint64_t t = head_ns(m, qi);

	for (;;) {
		unsigned int c = 2 * pos + 1;

		if (c >= n)
			break;
		if (c + 1 < n && head_ns(m, m->heap[c + 1]) < head_ns(m, m->heap[c]))
			c++;
		if (t <= head_ns(m, m->heap[c]))
			break;
		heap_set(m, pos, m->heap[c]);
		pos = c;
	}
	heap_set(m, pos, qi);
}

static int push(struct pt_analysis *a, const struct pt_event *ev)
{
	struct pt_analysis_priv *m = a->priv;
	struct queue *q = get_queue(m, ev->cpu);
	size_t i;

	if (!q)
		return -ENOMEM;
	if (q->len == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 256;
		struct pt_event *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t k = 0; k < q->len; k++)
			n[k] = q->ev[(q->head + k) & (q->cap - 1)];
		free(q->ev);
		q->ev = n;
		q->cap = cap;
		q->head = 0;
	}
	if (!q->active) {
		q->active = true;
		m->nr_active++;
	}
	/*
	 * A CPU's events come in order (the reader checks it), but Go's may
	 * not quite: insert from the back to keep the queue sorted.
	 */
	i = q->len;
	while (i && q->ev[(q->head + i - 1) & (q->cap - 1)].time_ns > ev->time_ns) {
		q->ev[(q->head + i) & (q->cap - 1)] = q->ev[(q->head + i - 1) & (q->cap - 1)];
		i--;
	}
	q->ev[(q->head + i) & (q->cap - 1)] = *ev;
	q->len++;
	if (q->len == 1) {
		heap_set(m, m->nr_nonempty++, (unsigned int)(q - m->q));
		heap_up(m, q->hpos);
	} else if (!i) {
		heap_up(m, q->hpos);	/* a new first event, earlier */
	}
	m->held++;
	if (m->held > a->max_held_seen)
		a->max_held_seen = m->held;
	if (ev->time_ns > m->max_seen)
		m->max_seen = ev->time_ns;
	return 0;
}

/* May the earliest queued event, at @t, go now? */
static bool may_release(const struct pt_analysis_priv *m, uint64_t t, bool drain)
{
	if (drain || m->held > m->p.max_held)
		return true;
	/* Every CPU has a later event queued: nothing earlier can come. */
	if (m->all_cpus_known && m->nr_nonempty == m->nr_active)
		return true;
	return m->p.hold_ns != UINT64_MAX && t + m->p.hold_ns <= m->max_seen &&
	       t + m->p.hold_ns >= t;
}

static int release(struct pt_analysis *a, bool drain)
{
	struct pt_analysis_priv *m = a->priv;

	while (m->held) {
		struct queue *best = &m->q[m->heap[0]];
		uint64_t t2 = UINT64_MAX;

		/* The next CPU's first event: the smaller child of the root. */
		if (m->nr_nonempty > 1)
			t2 = head_ns(m, m->heap[1]);
		if (m->nr_nonempty > 2 && head_ns(m, m->heap[2]) < t2)
			t2 = head_ns(m, m->heap[2]);
		if (!may_release(m, head_ns(m, m->heap[0]), drain))
			return 0;
		/* Events of the earliest CPU up to the next CPU's first. */
		do {
			struct pt_event ev = best->ev[best->head];
			int ret;

			if (best->len > PREFETCH_AHEAD)
				map_prefetch(m, best->ev[(best->head + PREFETCH_AHEAD) &
							 (best->cap - 1)].pfn);
			best->head = (best->head + 1) & (best->cap - 1);
			best->len--;
			m->held--;
			if (!best->len) {
				/* Out of the heap: the last leaf takes the root. */
				if (--m->nr_nonempty) {
					heap_set(m, 0, m->heap[m->nr_nonempty]);
					heap_down(m, 0);
				}
			}
			if (m->released_any && ev.time_ns < m->last_released)
				a->late_events++;
			else
				m->last_released = ev.time_ns;
			m->released_any = true;
			ret = process(a, &ev, false);
			if (ret)
				return ret;
		} while (best->len && best->ev[best->head].time_ns <= t2 &&
			 may_release(m, best->ev[best->head].time_ns, drain));
		if (best->len)
			heap_down(m, best->hpos);
	}
	return 0;
}

/* ---------------------------------------------------------- arrival */

static void rate_add(struct pt_analysis *a, uint64_t t, unsigned int type,
		     uint64_t npages, uint64_t lost)
{
	struct pt_analysis_priv *m = a->priv;
	uint64_t idx;
	struct pt_rate_bin *b;

	/* Events come in runs of one CPU in time order: mostly the same bin. */
	if (likely(t >= m->bin_lo && t < m->bin_hi)) {
		b = &a->bins[m->bin_idx];
		if (type) {
			b->events[type]++;
			b->pages[type] += npages;
		}
		b->lost += lost;
		return;
	}
	idx = t < a->origin_ns ? 0 : (t - a->origin_ns) / a->bin_ns;
	while (idx >= PT_RATE_BINS) {
		for (unsigned int i = 0; i < PT_RATE_BINS / 2; i++) {
			struct pt_rate_bin x = a->bins[2 * i];

			for (int k = 0; k < 4; k++) {
				x.events[k] += a->bins[2 * i + 1].events[k];
				x.pages[k] += a->bins[2 * i + 1].pages[k];
			}
			x.lost += a->bins[2 * i + 1].lost;
			a->bins[i] = x;
		}
		memset(a->bins + PT_RATE_BINS / 2, 0,
		       PT_RATE_BINS / 2 * sizeof(*a->bins));
		a->nr_bins = (a->nr_bins + 1) / 2;
		a->bin_ns *= 2;
		m->bin_lo = m->bin_hi = 0;
		idx = (t - a->origin_ns) / a->bin_ns;
	}
	if (idx >= a->nr_bins)
		a->nr_bins = (unsigned int)idx + 1;
	b = &a->bins[idx];
	if (t >= a->origin_ns) {
		m->bin_idx = (unsigned int)idx;
		m->bin_lo = a->origin_ns + idx * a->bin_ns;
		m->bin_hi = m->bin_lo + a->bin_ns;
	}
	if (type) {
		b->events[type]++;
		b->pages[type] += npages;
	}
	b->lost += lost;
}

static int on_chunk(const struct pt_chunk *c, void *arg)
{
	struct pt_analysis *a = arg;

	pt_stats_add_chunk(&a->stats, c);
	if (c->lost) {
		if (a->nr_lost_sites < PT_MAX_LOST_SITES) {
			struct pt_lost_site *l = &a->lost_sites[a->nr_lost_sites++];

			l->offset = c->offset;
			l->time_ns = c->time_ns;
			l->lost = c->lost;
			l->cpu = c->cpu;
		}
		rate_add(a, c->time_ns, 0, 0, c->lost);
	}
	return 0;
}

static int arrive(struct pt_analysis *a, const struct pt_event *ev)
{
	struct pt_zone_stats *z;

	if (ev->type < PT_EV_ALLOC || ev->type > PT_EV_RECLAIM)
		return 0;
	pt_stats_add_event(&a->stats, ev);
	z = zone_stats(a, pt_analysis_zone(a, ev->pfn));
	z->events[ev->type]++;
	z->pages[ev->type] += ev->npages;
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) {
		/* The state at the start: seeds the map, outside the time line. */
		if (ev->type == PT_EV_ALLOC) {
			a->snapshot_events++;
			a->snapshot_pages += ev->npages;
		}
		return process(a, ev, true);
	}
	rate_add(a, ev->time_ns, ev->type, ev->npages, 0);
	return push(a, ev);
}

/* ------------------------------------------------------------- api */

static int cmp_zone(const void *x, const void *y)
{
	const struct pt_zone *a = x, *b = y;

	return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

static int init(struct pt_reader *r, struct pt_analysis *a,
		const struct pt_analysis_params *p)
{
	const struct pagetrace_header *h = pt_reader_header(r);
	const struct pt_session *ses = pt_reader_session(r);
	const struct pt_zone *z;
	struct pt_analysis_priv *m;
	int ret;

	memset(a, 0, sizeof(*a));
	ret = pt_stats_init(&a->stats, h->nr_cpus);
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
	a->nr_zones = pt_reader_zones(r, &z);
	a->zones = calloc(a->nr_zones + 1, sizeof(*a->zones));
	a->zone_stats = calloc(a->nr_zones + 1, sizeof(*a->zone_stats));
	a->bins = calloc(PT_RATE_BINS, sizeof(*a->bins));
	a->life = calloc(PT_LIFE_ORDERS, sizeof(*a->life));
	m->map_bits = MAP_MIN_BITS;
	m->map = calloc(1ULL << m->map_bits, sizeof(*m->map));
	m->heap = calloc(PT_GO_MAX_P + 1, sizeof(*m->heap));
	if (!a->zones || !a->zone_stats || !a->bins || !a->life || !m->map || !m->heap)
		return -ENOMEM;
	/*
	 * v1 streams name their CPUs up front, so a CPU that has logged
	 * nothing yet holds the merge back.  Go traces do not: their Ps are
	 * learnt on the way, so events wait for the end (or max_held).
	 */
	if (h->header_size) {
		m->all_cpus_known = true;
		for (unsigned int c = 0; c < h->nr_cpus; c++) {
			struct queue *q = get_queue(m, c);

			if (!q)
				return -ENOMEM;
			q->active = true;
			m->nr_active++;
		}
	}
	if (a->nr_zones)
		memcpy(a->zones, z, a->nr_zones * sizeof(*z));
	qsort(a->zones, a->nr_zones, sizeof(*a->zones), cmp_zone);
	a->origin_ns = h->start_ns;
	a->bin_ns = RATE_BIN0_NS;
	return 0;
}

/* PT_ANALYSIS_UNORDERED: compact runs straight into the counts. */
static int collect_unordered(struct pt_reader *r, struct pt_analysis *a)
{
	struct pt_cevent evs[256];
	const struct pt_chunk *c;
	int ret;

	while ((ret = pt_reader_next_run(r, evs, 256, &c)) > 0) {
		bool snap = c->flags & PAGETRACE_CHUNK_SNAPSHOT;

		pt_stats_add_run(&a->stats, evs, ret, c->cpu);
		for (int i = 0; i < ret; i++) {
			unsigned int t = pt_cevent_type(&evs[i]);
			uint64_t np = pt_cevent_npages(&evs[i]);
			struct pt_zone_stats *z = zone_stats(a, pt_analysis_zone(a, evs[i].pfn));

			z->events[t]++;
			z->pages[t] += np;
			if (!snap) {
				rate_add(a, evs[i].time_ns, t, np, 0);
			} else if (t == PT_EV_ALLOC) {
				a->snapshot_events++;
				a->snapshot_pages += np;
			}
		}
	}
	return ret;
}

int pt_analysis_collect(struct pt_reader *r, struct pt_analysis *a,
			const struct pt_analysis_params *p)
{
	struct pt_event evs[256];
	int ret, ret2;

	ret = init(r, a, p);
	if (ret)
		return ret;
	pt_reader_set_chunk_cb(r, on_chunk, a);
	if (a->priv->p.flags & PT_ANALYSIS_UNORDERED) {
		ret = collect_unordered(r, a);
		goto out;
	}
	while ((ret = pt_reader_next_batch(r, evs, 256)) > 0) {
		int n = ret;

		ret = 0;
		for (int i = 0; i < n && !ret; i++) {
			ret = arrive(a, &evs[i]);
			if (!ret && a->priv->held > a->priv->p.max_held)
				ret = release(a, false);
		}
		if (!ret)
			ret = release(a, false);
		if (ret)
			break;
	}
	/* Whatever came before a reader error still counts; a hook's stops all. */
	ret2 = a->priv->err ? 0 : release(a, true);
	if (!ret)
		ret = ret2;
out:
	pt_reader_set_chunk_cb(r, NULL, NULL);
	if (a->stats.nr_cpus > pt_reader_header(r)->nr_cpus)
		a->stats.nr_cpus = pt_reader_header(r)->nr_cpus;
	a->stats.tasks = pt_reader_counters(r)->tasks;
	a->stats.bytes = pt_reader_counters(r)->bytes;
	if (!a->stats.events)
		a->stats.first_ns = 0;
	return ret;
}

void pt_analysis_free(struct pt_analysis *a)
{
	struct pt_analysis_priv *m = a->priv;

	pt_stats_free(&a->stats);
	free(a->zones);
	free(a->zone_stats);
	free(a->bins);
	free(a->life);
	a->zones = NULL;
	a->zone_stats = NULL;
	a->bins = NULL;
	a->life = NULL;
	if (m) {
		for (unsigned int i = 0; i < m->nr_q; i++)
			free(m->q[i].ev);
		free(m->q);
		free(m->map);
		free(m->heap);
		free(m);
		a->priv = NULL;
	}
}
