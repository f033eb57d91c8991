// SPDX-License-Identifier: GPL-2.0
/*
 * Who caused reclaim: each page a reclaim event takes, traced back to the
 * allocation that handed it out (see the comment above enum
 * pgtrace_reclaim_origin in libpagetrace.h).
 *
 * An event hook of the analysis, so it sees the events in time order.  It
 * keeps a map of its own, not the analysis's: the analysis packs a block
 * into 8 bytes so that stats stays fast, and the task, stack and first
 * page of an allocation do not fit there; only a run that asks for reclaim
 * pays for them.  The map follows the analysis's rules (an allocation
 * over a block replaces it; a free of part of a block leaves naturally
 * aligned pieces; a piece that would start where a later block starts is
 * dropped), so both agree on which pages were known to be allocated.
 *
 * Each allocation is one record (struct owner); the pieces it leaves point
 * at it and hold a reference, so that pages reclaimed from any piece count
 * against the whole allocation, and it counts as one block however many
 * of its pieces go.  Snapshot runs have no record: nobody known owns them.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

#define NO_OWNER	UINT32_MAX	/* a piece of a snapshot run */
#define EMPTY		UINT64_MAX	/* a free map entry's pfn */

/* An allocation seen in the trace. */
struct owner {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages;
	int64_t		task;
	uint32_t	stack;
	uint32_t	refs;		/* pieces pointing here; on the free list: next */
	uint8_t		order;
	bool		reclaimed;	/* counted in a group's blocks already */
};

/* A block, or a piece of one, under its first page. */
struct piece {
	uint64_t	pfn;		/* EMPTY: a free entry */
	uint64_t	npages;
	uint32_t	owner;		/* index into owners, or NO_OWNER */
};

/*
 * An allocation costs an owner and a piece, in a map between a quarter and
 * a half full: the 96 to 144 bytes a block that libpagetrace.h gives.
 */
_Static_assert(sizeof(struct owner) == 48 && sizeof(struct piece) == 24, "sizes as documented");

/* Groups by key (tgid or stack id), open addressing. */
struct gtab {
	struct pgtrace_reclaim_group *g;
	bool		*used;
	size_t		cap, nr;
};

struct pgtrace_reclaim_priv {
	struct pgtrace_reclaim_params p;
	struct piece	*map;
	size_t		cap, nr;
	struct owner	*owners;
	uint32_t	nr_owners, cap_owners;
	uint32_t	free_owner;	/* head of the free list, NO_OWNER if empty */
	struct gtab	tasks, stacks;
};

/* ----------------------------------------------------------- lifetimes */

static unsigned int life_bucket(uint64_t ns)
{
	uint64_t v = ns >> PAGETRACE_TIME_LOST_BITS;
	unsigned int e;

	if (v < PGTRACE_RECLAIM_LIFE_EXACT)
		return (unsigned int)v;
	e = 63 - __builtin_clzll(v);
	return PGTRACE_RECLAIM_LIFE_EXACT + (e - 3) * 4 + ((v >> (e - 2)) & 3);
}

uint64_t pgtrace_reclaim_bucket_ns(unsigned int b)
{
	unsigned int e, m;

	if (b < PGTRACE_RECLAIM_LIFE_EXACT)
		return (uint64_t)b << PAGETRACE_TIME_LOST_BITS;
	if (b >= PGTRACE_RECLAIM_LIFE_BUCKETS)
		b = PGTRACE_RECLAIM_LIFE_BUCKETS - 1;
	e = (b - PGTRACE_RECLAIM_LIFE_EXACT) / 4 + 3;
	m = (b - PGTRACE_RECLAIM_LIFE_EXACT) % 4;
	return ((uint64_t)(4 + m) << (e - 2)) << PAGETRACE_TIME_LOST_BITS;
}

uint64_t pgtrace_reclaim_percentile(const struct pgtrace_reclaim_life *l, double pct)
{
	uint64_t rank, sum = 0, v;
	double x;

	if (!l->pages)
		return 0;
	if (pct < 0)
		pct = 0;
	if (pct > 100)
		pct = 100;
	x = pct / 100.0 * (double)l->pages;
	rank = (uint64_t)x;
	if ((double)rank < x)
		rank++;
	if (!rank)
		rank = 1;
	for (unsigned int b = 0; b < PGTRACE_RECLAIM_LIFE_BUCKETS; b++) {
		sum += l->buckets[b];
		if (sum >= rank) {
			v = pgtrace_reclaim_bucket_ns(b);
			if (v < l->min_ns)
				v = l->min_ns;
			return v > l->max_ns ? l->max_ns : v;
		}
	}
	return l->max_ns;
}

static void life_add(struct pgtrace_reclaim_life *l, uint64_t ns, uint64_t pages)
{
	if (!l->pages || ns < l->min_ns)
		l->min_ns = ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
	l->pages += pages;
	l->sum_ns += ns * pages;
	l->buckets[life_bucket(ns)] += pages;
}

/* -------------------------------------------------------------- groups */

static size_t hash64(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static struct pgtrace_reclaim_group *group_get(struct gtab *t, int64_t key)
{
	size_t i;

	if (2 * (t->nr + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct pgtrace_reclaim_group *g = calloc(cap, sizeof(*g));
		bool *used = calloc(cap, sizeof(*used));

		if (!g || !used) {
			free(g);
			free(used);
			return NULL;
		}
		for (i = 0; i < t->cap; i++) {
			size_t j;

			if (!t->used[i])
				continue;
			for (j = hash64(t->g[i].key, cap); used[j]; j = (j + 1) & (cap - 1))
				;
			g[j] = t->g[i];
			used[j] = true;
		}
		free(t->g);
		free(t->used);
		t->g = g;
		t->used = used;
		t->cap = cap;
	}
	for (i = hash64(key, t->cap); t->used[i]; i = (i + 1) & (t->cap - 1))
		if (t->g[i].key == key)
			return &t->g[i];
	t->used[i] = true;
	t->g[i].key = key;
	t->nr++;
	return &t->g[i];
}

static int cmp_groups(const void *x, const void *y)
{
	const struct pgtrace_reclaim_group *p = x, *q = y;

	if (p->pages != q->pages)
		return p->pages > q->pages ? -1 : 1;
	return p->key < q->key ? -1 : p->key > q->key;
}

/* The groups of @t as an array, most pages first. */
static int group_list(const struct gtab *t, struct pgtrace_reclaim_group **out, size_t *n)
{
	struct pgtrace_reclaim_group *l = malloc((t->nr ? t->nr : 1) * sizeof(*l));
	size_t k = 0;

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->used[i])
			l[k++] = t->g[i];
	qsort(l, k, sizeof(*l), cmp_groups);
	free(*out);
	*out = l;
	*n = k;
	return 0;
}

/* -------------------------------------------------------------- owners */

static uint32_t owner_new(struct pgtrace_reclaim_priv *m)
{
	uint32_t i = m->free_owner;

	if (i != NO_OWNER) {
		m->free_owner = m->owners[i].refs;
		return i;
	}
	if (m->nr_owners == m->cap_owners) {
		uint32_t cap = m->cap_owners ? 2 * m->cap_owners : 1024;
		struct owner *o;

		/* Index NO_OWNER stays free: it marks snapshot pieces. */
		if (m->cap_owners >= NO_OWNER / 2)
			return NO_OWNER;
		o = realloc(m->owners, cap * sizeof(*o));
		if (!o)
			return NO_OWNER;
		m->owners = o;
		m->cap_owners = cap;
	}
	return m->nr_owners++;
}

static void owner_put(struct pgtrace_reclaim_priv *m, uint32_t i)
{
	if (i == NO_OWNER || --m->owners[i].refs)
		return;
	m->owners[i].refs = m->free_owner;
	m->free_owner = i;
}

/* ----------------------------------------------------------------- map */

static struct piece *map_slot(const struct pgtrace_reclaim_priv *m, uint64_t pfn)
{
	size_t i;

	for (i = hash64(pfn, m->cap); m->map[i].pfn != EMPTY && m->map[i].pfn != pfn;
	     i = (i + 1) & (m->cap - 1))
		;
	return &m->map[i];
}

static struct piece *map_get(const struct pgtrace_reclaim_priv *m, uint64_t pfn)
{
	struct piece *s = map_slot(m, pfn);

	return s->pfn == EMPTY ? NULL : s;
}

static int map_grow(struct pgtrace_reclaim_priv *m)
{
	size_t cap = 2 * m->cap, old_cap = m->cap;
	struct piece *old = m->map, *n = malloc(cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		n[i].pfn = EMPTY;
	m->map = n;
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].pfn != EMPTY)
			*map_slot(m, old[i].pfn) = old[i];
	free(old);
	return 0;
}

/* Backward-shift deletion: probe chains stay whole without tombstones. */
static void map_del(struct pgtrace_reclaim_priv *m, struct piece *s)
{
	size_t i = (size_t)(s - m->map), j = i;

	owner_put(m, s->owner);
	for (;;) {
		size_t h;

		j = (j + 1) & (m->cap - 1);
		if (m->map[j].pfn == EMPTY)
			break;
		h = hash64(m->map[j].pfn, m->cap);
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			m->map[i] = m->map[j];
			i = j;
		}
	}
	m->map[i].pfn = EMPTY;
	m->nr--;
}

/* A new piece at @pfn, where none is. */
static int map_add(struct pgtrace_reclaim_priv *m, uint64_t pfn, uint64_t npages, uint32_t owner)
{
	struct piece *s;
	int ret;

	if (2 * (m->nr + 1) > m->cap) {
		ret = map_grow(m);
		if (ret)
			return ret;
	}
	s = map_slot(m, pfn);
	s->pfn = pfn;
	s->npages = npages;
	s->owner = owner;
	if (owner != NO_OWNER)
		m->owners[owner].refs++;
	m->nr++;
	return 0;
}

/* The piece holding @pfn: starting there, or at an aligned start below. */
static struct piece *map_find(const struct pgtrace_reclaim_priv *m, uint64_t pfn)
{
	struct piece *s = map_get(m, pfn);

	for (unsigned int k = 1; !s && k <= PGTRACE_SPLIT_ORDERS; k++) {
		uint64_t start = pfn & ~((1ULL << k) - 1);

		if (start == pfn)
			continue;
		s = map_get(m, start);
		if (s && s->pfn + s->npages <= pfn)
			s = NULL;
	}
	return s;
}

/*
 * What is left of a piece of @owner, [from, to), as naturally aligned
 * pieces, so that any page of them is found again; a piece that would
 * start where another block starts is dropped (a free was lost there).
 */
static int put_pieces(struct pgtrace_reclaim_priv *m, uint32_t owner, uint64_t from, uint64_t to)
{
	while (from < to) {
		unsigned int k = from ? __builtin_ctzll(from) : 63;
		int ret;

		while (k && (k >= 63 || from + (1ULL << k) > to))
			k--;
		if (!map_get(m, from)) {
			ret = map_add(m, from, 1ULL << k, owner);
			if (ret)
				return ret;
		}
		from += 1ULL << k;
	}
	return 0;
}

/* ------------------------------------------------------------ events */

/*
 * A snapshot run: pages, not one block, so kept as the analysis keeps it,
 * in naturally aligned pieces of at most 2^PGTRACE_SPLIT_ORDERS pages.
 */
static int on_snapshot_run(struct pgtrace_reclaim_priv *m, const struct pgtrace_event *ev)
{
	uint64_t pfn = ev->pfn, end = ev->pfn + ev->npages, len;

	for (; pfn < end; pfn += len) {
		struct piece *s;
		int ret;

		len = 1ULL << PGTRACE_SPLIT_ORDERS;
		while (pfn & (len - 1) || pfn + len > end)
			len /= 2;
		/* Allocated again without a free in between: the free was lost. */
		s = map_get(m, pfn);
		if (s)
			map_del(m, s);
		ret = map_add(m, pfn, len, NO_OWNER);
		if (ret)
			return ret;
	}
	return 0;
}

static int on_alloc(struct pgtrace_reclaim_priv *m, const struct pgtrace_event *ev)
{
	uint32_t o = NO_OWNER;
	struct piece *s;

	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
		return on_snapshot_run(m, ev);

	/* Allocated again without a free in between: the free was lost. */
	s = map_get(m, ev->pfn);
	if (s)
		map_del(m, s);
	if (!(ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)) {
		struct owner *w;

		o = owner_new(m);
		if (o == NO_OWNER)
			return -ENOMEM;
		w = &m->owners[o];
		w->time_ns = ev->time_ns;
		w->pfn = ev->pfn;
		w->npages = ev->npages;
		w->task = ev->task;
		w->stack = ev->stack;
		w->refs = 0;
		w->order = (uint8_t)pgtrace_life_order(ev->npages);
		w->reclaimed = false;
	}
	return map_add(m, ev->pfn, ev->npages, o);
}

static int count_group(struct gtab *t, int64_t key, const struct pgtrace_reclaim_part *p,
		       bool new_block)
{
	struct pgtrace_reclaim_group *g = group_get(t, key);

	if (!g)
		return -ENOMEM;
	g->pages += p->npages;
	g->blocks += new_block;
	g->parts++;
	life_add(&g->life, p->life_ns, p->npages);
	return 0;
}

/* Reclaim part @p (of allocation @o, NULL if none is known) counted. */
static int count_part(struct pgtrace_reclaim *rc, struct pgtrace_reclaim_part *p, struct owner *o)
{
	struct pgtrace_reclaim_priv *m = rc->priv;
	bool new_block = false;
	int ret;

	if (o) {
		new_block = !o->reclaimed;
		o->reclaimed = true;
		rc->traced_pages += p->npages;
		rc->traced_blocks += new_block;
		life_add(&rc->life, p->life_ns, p->npages);
		ret = count_group(&m->tasks, p->alloc_task, p, new_block);
		if (!ret)
			ret = count_group(&m->stacks, p->alloc_stack, p, new_block);
		if (ret)
			return ret;
	} else if (p->origin == PGTRACE_RECLAIM_SNAPSHOT) {
		rc->snapshot_pages += p->npages;
	} else {
		rc->unknown_pages += p->npages;
	}
	return m->p.part ? m->p.part(p, m->p.arg) : 0;
}

/*
 * A free or reclaim: each piece it covers goes, what is left of the
 * piece is put back, and for a reclaim each part is attributed.
 */
static int on_end(struct pgtrace_reclaim *rc, const struct pgtrace_event *ev)
{
	struct pgtrace_reclaim_priv *m = rc->priv;
	bool reclaim = ev->type == PGTRACE_EV_RECLAIM, snap = false;
	uint64_t cur = ev->pfn, rem = ev->npages;
	struct pgtrace_reclaim_part p = {
		.time_ns = ev->time_ns, .task = ev->task, .alloc_task = PGTRACE_TASK_UNKNOWN,
	};
	int ret;

	while (rem) {
		struct piece *s = map_find(m, cur);
		uint64_t start, end, oend;
		uint32_t oi;
		struct owner *o = NULL;

		if (!s)
			break;
		start = s->pfn;
		end = start + s->npages;
		oend = cur + rem < end ? cur + rem : end;
		oi = s->owner;
		/* The piece's reference keeps the owner while its rest goes back. */
		if (oi != NO_OWNER)
			m->owners[oi].refs++;
		map_del(m, s);
		ret = put_pieces(m, oi, start, cur);
		if (!ret)
			ret = put_pieces(m, oi, oend, end);
		if (!ret && reclaim) {
			p.pfn = cur;
			p.npages = oend - cur;
			if (oi != NO_OWNER) {
				o = &m->owners[oi];
				p.origin = PGTRACE_RECLAIM_TRACED;
				p.alloc_ns = o->time_ns;
				p.life_ns = ev->time_ns > o->time_ns ? ev->time_ns - o->time_ns : 0;
				p.alloc_pfn = o->pfn;
				p.alloc_npages = o->npages;
				p.alloc_task = o->task;
				p.alloc_stack = o->stack;
				p.alloc_order = o->order;
			} else {
				snap = true;
				p.origin = PGTRACE_RECLAIM_SNAPSHOT;
				p.alloc_ns = p.life_ns = p.alloc_pfn = p.alloc_npages = 0;
				p.alloc_task = PGTRACE_TASK_UNKNOWN;
				p.alloc_stack = p.alloc_order = 0;
			}
			ret = count_part(rc, &p, o);
		}
		owner_put(m, oi);
		if (ret)
			return ret;
		rem -= oend - cur;
		cur = oend;
	}
	if (!reclaim)
		return 0;
	rc->events++;
	rc->pages += ev->npages;
	rc->snapshot_events += snap;
	if (!rem)
		return 0;
	rc->unknown_events++;
	memset(&p, 0, sizeof(p));
	p.time_ns = ev->time_ns;
	p.task = ev->task;
	p.pfn = cur;
	p.npages = rem;
	p.origin = PGTRACE_RECLAIM_UNKNOWN;
	p.alloc_task = PGTRACE_TASK_UNKNOWN;
	return count_part(rc, &p, NULL);
}

/* ----------------------------------------------------------------- api */

int pgtrace_reclaim_init(struct pgtrace_reclaim *rc, const struct pgtrace_reclaim_params *p)
{
	struct pgtrace_reclaim_priv *m;

	memset(rc, 0, sizeof(*rc));
	m = rc->priv = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (p)
		m->p = *p;
	m->free_owner = NO_OWNER;
	m->cap = 1024;
	m->map = malloc(m->cap * sizeof(*m->map));
	if (!m->map)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		m->map[i].pfn = EMPTY;
	return 0;
}

int pgtrace_reclaim_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a,
			  void *arg)
{
	struct pgtrace_reclaim *rc = arg;

	(void)a;
	if (!rc || !rc->priv)
		return -EINVAL;
	switch (ev->type) {
	case PGTRACE_EV_ALLOC:
		return ev->npages ? on_alloc(rc->priv, ev) : -EINVAL;
	case PGTRACE_EV_FREE:
	case PGTRACE_EV_RECLAIM:
		return on_end(rc, ev);
	default:
		return 0;	/* a task record */
	}
}

int pgtrace_reclaim_finish(struct pgtrace_reclaim *rc)
{
	struct pgtrace_reclaim_priv *m = rc->priv;
	int ret;

	if (!m)
		return -EINVAL;
	ret = group_list(&m->tasks, &rc->by_task, &rc->nr_tasks);
	if (!ret)
		ret = group_list(&m->stacks, &rc->by_stack, &rc->nr_stacks);
	return ret;
}

int pgtrace_reclaim_collect(struct pgtrace_reader *r, struct pgtrace_analysis *a,
			    struct pgtrace_reclaim *rc, const struct pgtrace_reclaim_params *p)
{
	struct pgtrace_analysis_params ap = { .event = pgtrace_reclaim_event, .arg = rc };
	int ret;

	memset(a, 0, sizeof(*a));
	ret = pgtrace_reclaim_init(rc, p);
	if (ret)
		return ret;
	ret = pgtrace_analysis_collect(r, a, &ap);
	if (!ret)
		ret = pgtrace_reclaim_finish(rc);
	return ret;
}

void pgtrace_reclaim_free(struct pgtrace_reclaim *rc)
{
	struct pgtrace_reclaim_priv *m = rc->priv;

	free(rc->by_task);
	free(rc->by_stack);
	rc->by_task = rc->by_stack = NULL;
	rc->nr_tasks = rc->nr_stacks = 0;
	if (!m)
		return;
	free(m->map);
	free(m->owners);
	free(m->tasks.g);
	free(m->tasks.used);
	free(m->stacks.g);
	free(m->stacks.used);
	free(m);
	rc->priv = NULL;
}
