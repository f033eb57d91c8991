// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis's events applied, in time order, to the block map
 * (blocks.c) and counted: pages in use, lifetimes, each zone's figures and
 * the rate time line; and the lifetime and zone helpers of libpagetrace.h.
 * The hot loop, apply_fast(), and all that it and an_process() inline per
 * event are in this file or in analysis.h: blocks.c has only what they
 * call out of line.  merge.c hands over the merged events.
 */
#include "analysis.h"

/* ------------------------------------------------------------ helpers */

unsigned int pgtrace_life_order(uint64_t npages)
{
	unsigned int o;

	if (npages <= 1)
		return 0;
	o = 64 - __builtin_clzll(npages - 1);
	return o < PGTRACE_LIFE_ORDERS ? o : PGTRACE_LIFE_ORDERS - 1;
}

static unsigned int life_bucket(uint64_t ns)
{
	uint64_t v = ns >> PAGETRACE_TIME_LOST_BITS;
	unsigned int e;

	if (v < PGTRACE_LIFE_EXACT)
		return (unsigned int)v;
	e = 63 - __builtin_clzll(v);
	return PGTRACE_LIFE_EXACT + (e - 6) * PGTRACE_LIFE_SUB + ((v >> (e - 5)) & (PGTRACE_LIFE_SUB - 1));
}

uint64_t pgtrace_life_bucket_ns(unsigned int b)
{
	unsigned int e, m;

	if (b < PGTRACE_LIFE_EXACT)
		return (uint64_t)b << PAGETRACE_TIME_LOST_BITS;
	e = (b - PGTRACE_LIFE_EXACT) / PGTRACE_LIFE_SUB + 6;
	m = (b - PGTRACE_LIFE_EXACT) % PGTRACE_LIFE_SUB;
	return ((uint64_t)(PGTRACE_LIFE_SUB + m) << (e - 5)) << PAGETRACE_TIME_LOST_BITS;
}

uint64_t pgtrace_life_percentile(const struct pgtrace_life_hist *h, double pct)
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
	for (unsigned int b = 0; b < PGTRACE_LIFE_BUCKETS; b++) {
		sum += h->buckets[b];
		if (sum >= rank) {
			v = pgtrace_life_bucket_ns(b);
			if (v < h->min_ns)
				v = h->min_ns;
			return v > h->max_ns ? h->max_ns : v;
		}
	}
	return h->max_ns;
}

static __attribute__((always_inline)) inline void life_add(struct pgtrace_life_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->buckets[life_bucket(ns)]++;
}

unsigned int pgtrace_analysis_zone(const struct pgtrace_analysis *a, uint64_t pfn)
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
	return PGTRACE_ZONE_OTHER;
}

/* The zone of @pfn: pgtrace_analysis_zone(), from a table inside the flat map. */
static uint32_t zone_of(const struct pgtrace_analysis *a, uint64_t pfn)
{
	const struct pgtrace_analysis_priv *m = a->priv;

	if (likely(is_flat(m, pfn))) {
		uint32_t z = m->leaf_zone[(pfn - m->flat_lo) >> LEAF_SHIFT];

		if (likely(z != LEAF_MIXED))
			return z;
	}
	return pgtrace_analysis_zone(a, pfn);
}

/* life_all: the sum of the per-order histograms, made at the end. */
void pgtrace_life_total(struct pgtrace_analysis *a)
{
	struct pgtrace_life_hist *all = &a->life_all;

	memset(all, 0, sizeof(*all));
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++) {
		const struct pgtrace_life_hist *h = &a->life[o];

		if (!h->count)
			continue;
		if (!all->count || h->min_ns < all->min_ns)
			all->min_ns = h->min_ns;
		if (h->max_ns > all->max_ns)
			all->max_ns = h->max_ns;
		all->count += h->count;
		all->sum_ns += h->sum_ns;
		for (unsigned int b = 0; b < PGTRACE_LIFE_BUCKETS; b++)
			all->buckets[b] += h->buckets[b];
	}
}

/* ------------------------------------------------------------ in use */

static __attribute__((always_inline)) inline void
in_use_add(struct pgtrace_analysis *a, const struct slot *b)
{
	struct pgtrace_zone_stats *z = zone_stats(a, slot_zone(b));
	uint64_t np = slot_npages(b);

	a->in_use += np;
	a->in_use_blocks++;
	a->in_use_by_order[slot_order(b)] += np;
	z->in_use += np;
	if (z->in_use > z->peak_in_use)
		z->peak_in_use = z->in_use;
	if (a->in_use > a->peak_in_use) {
		a->peak_in_use = a->in_use;
		a->peak_ns = b->time_ns;
	}
}

static __attribute__((always_inline)) inline void
in_use_sub(struct pgtrace_analysis *a, const struct slot *b, uint64_t npages)
{
	a->in_use -= npages;
	a->in_use_by_order[slot_order(b)] -= npages;
	zone_stats(a, slot_zone(b))->in_use -= npages;
}

/*
 * Put [from, to) of block @b back as naturally aligned pieces, so that a
 * later free of any page in them is found by pgtrace_find_containing().
 * A piece that would start where another block starts (allocated over @b:
 * a free was lost) goes: the later block stays, and the piece's pages stop
 * being in use at @t.
 */
static int put_pieces(struct pgtrace_analysis *a, const struct slot *b, uint64_t t, uint64_t from,
		      uint64_t to)
{
	while (from < to) {
		unsigned int k = from ? __builtin_ctzll(from) : 63;
		struct slot nb = *b, old;
		int ret;

		while (k && (k >= 63 || from + (1ULL << k) > to))
			k--;
		nb.info = (b->info & ~SLOT_NPAGES_MASK) | 1ULL << k;
		if (unlikely(pgtrace_blk_get(a->priv, from, &old))) {
			in_use_sub(a, &nb, 1ULL << k);
			if (a->priv->p.change)
				a->priv->p.change(t, from, 1ULL << k, -1, slot_order(b),
						  a->priv->p.arg);
		} else {
			ret = pgtrace_blk_put(a->priv, from, &nb);
			if (ret)
				return ret;
			a->in_use_blocks++;
		}
		from += 1ULL << k;
	}
	return 0;
}

/*
 * Place new block @nb at @pfn where do_alloc() found no empty flat slot:
 * a new leaf, the hash map, or over a block already there.
 */
static __attribute__((noinline)) int place_slow(struct pgtrace_analysis *a, uint64_t pfn,
						const struct slot *nb)
{
	struct pgtrace_analysis_priv *m = a->priv;
	struct slot old;

	if (!pgtrace_blk_get(m, pfn, &old))
		return pgtrace_blk_put(m, pfn, nb);
	/* Allocated again without a free in between: the free was lost. */
	a->realloc_events++;
	in_use_sub(a, &old, slot_npages(&old));
	a->in_use_blocks--;
	if (m->p.change)
		m->p.change(nb->time_ns, pfn, slot_npages(&old), -1, slot_order(&old), m->p.arg);
	return pgtrace_blk_put(m, pfn, nb);
}

static __attribute__((always_inline)) inline void
end_part(struct pgtrace_analysis *a, const struct slot *b, uint64_t t, uint64_t cur, uint64_t len);

/*
 * An allocation of [@pfn, @pfn + @np) at @t, while the snapshot was being
 * taken: the walk may have listed some of its pages already (it runs with
 * the hooks attached), in a run of the snapshot that the allocation's
 * pages are only part of.  They leave the run, whose other pages stay,
 * so that the allocation counts them once.
 */
static __attribute__((noinline)) int trim_snapshot(struct pgtrace_analysis *a, uint64_t t,
						   uint64_t pfn, uint64_t np)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t cur = pfn, end = pfn + np;
	int ret;

	while (cur < end) {
		uint64_t start, bend, oend;
		struct slot b;

		if (!pgtrace_find_containing(m, cur, &start, &b) || !slot_snap(&b)) {
			cur++;
			continue;
		}
		pgtrace_blk_del(m, start);
		a->in_use_blocks--;
		bend = start + slot_npages(&b);
		oend = end < bend ? end : bend;
		ret = put_pieces(a, &b, t, start, cur);
		if (!ret)
			ret = put_pieces(a, &b, t, oend, bend);
		if (ret)
			return ret;
		end_part(a, &b, t, cur, oend - cur);
		cur = oend;
	}
	return 0;
}

static __attribute__((always_inline)) inline int
do_alloc(struct pgtrace_analysis *a, uint64_t t, uint64_t pfn, uint64_t np, uint32_t zone,
	 bool snap)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int order = pgtrace_life_order(np);
	struct slot nb = { .time_ns = t, .info = slot_info(np, order, snap, zone) };
	uint64_t off = pfn - m->flat_lo;
	struct hslot *h;
	struct leaf *l;

	if (unlikely(t <= m->snap_end_ns) && !snap) {
		int ret = trim_snapshot(a, t, pfn, np);

		if (ret)
			return ret;
	}
	if (off < m->flat_span) {
		l = m->dir[off >> LEAF_SHIFT];
		if (likely(l && !l->c[off & LEAF_MASK])) {
			uint64_t c = cell_pack(m, pfn, &nb);

			if (likely(c != CELL_ESC)) {
				l->c[off & LEAF_MASK] = c;
				goto placed;
			}
		}
	} else {
		h = map_probe(m, pfn);
		if (likely(!hslot_live(h) && map_room(m, h))) {
			map_fill(m, h, pfn, &nb);
			goto placed;
		}
	}
	{
		int ret = place_slow(a, pfn, &nb);

		if (ret)
			return ret;
	}
placed:
	in_use_add(a, &nb);
	if (m->p.change)
		m->p.change(t, pfn, np, 1, order, m->p.arg);
	return 0;
}

/*
 * A run of the snapshot: consecutive allocated pages, not one block, of any
 * length and alignment.  Kept as naturally aligned pieces of order up to
 * PGTRACE_SPLIT_ORDERS, as a partly freed block is, so that a later free or
 * allocation of any page in it finds its piece (pgtrace_find_containing()).
 */
static __attribute__((noinline)) int alloc_snapshot_run(struct pgtrace_analysis *a, uint64_t t,
							uint64_t pfn, uint64_t np)
{
	uint64_t end = pfn + np;

	while (pfn < end) {
		unsigned int k = pfn ? __builtin_ctzll(pfn) : PGTRACE_SPLIT_ORDERS;
		int ret;

		if (k > PGTRACE_SPLIT_ORDERS)
			k = PGTRACE_SPLIT_ORDERS;
		while (pfn + (1ULL << k) > end)
			k--;
		ret = do_alloc(a, t, pfn, 1ULL << k, zone_of(a, pfn), true);
		if (ret)
			return ret;
		pfn += 1ULL << k;
	}
	return 0;
}

/* Block @b loses [cur, cur + len) at @t. */
static __attribute__((always_inline)) inline void
end_part(struct pgtrace_analysis *a, const struct slot *b, uint64_t t, uint64_t cur, uint64_t len)
{
	struct pgtrace_analysis_priv *m = a->priv;

	in_use_sub(a, b, len);
	if (m->p.change)
		m->p.change(t, cur, len, -1, slot_order(b), m->p.arg);
	if (!slot_snap(b))
		life_add(&a->life[slot_order(b)], t > b->time_ns ? t - b->time_ns : 0);
}

/*
 * A free or reclaim that is not of one whole block: of part of one, of
 * several, of none, or in the hash map.
 */
static __attribute__((noinline)) int end_slow(struct pgtrace_analysis *a, uint64_t t, uint64_t pfn,
					      uint64_t np, unsigned int type)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t cur = pfn, rem = np;
	bool matched = false;
	int ret;

	while (rem) {
		uint64_t start, end, oend, len;
		struct slot b;

		if (!pgtrace_find_containing(m, cur, &start, &b))
			break;
		pgtrace_blk_del(m, start);
		a->in_use_blocks--;
		end = start + slot_npages(&b);
		oend = cur + rem < end ? cur + rem : end;
		len = oend - cur;
		ret = put_pieces(a, &b, t, start, cur);
		if (!ret)
			ret = put_pieces(a, &b, t, oend, end);
		if (ret)
			return ret;
		end_part(a, &b, t, cur, len);
		matched = true;
		cur = oend;
		rem -= len;
	}
	if (rem) {
		a->unmatched_pages[type] += rem;
		if (!matched)
			a->unmatched_events[type]++;
		/*
		 * Freed while the snapshot's walk ran, before it reached the
		 * page: allocated before the trace, as a free without a
		 * snapshot is.  After the walk, a page not known allocated
		 * means an allocation the trace does not hold.
		 */
		if (t <= m->snap_end_ns) {
			a->unmatched_in_snapshot_pages[type] += rem;
			if (!matched)
				a->unmatched_in_snapshot_events[type]++;
		}
	}
	return 0;
}

static __attribute__((always_inline)) inline int
do_end(struct pgtrace_analysis *a, uint64_t t, uint64_t pfn, uint64_t np, unsigned int type)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t off = pfn - m->flat_lo;
	struct hslot *h;
	struct leaf *l;
	struct slot b;

	/* The usual: a whole block goes. */
	if (off < m->flat_span) {
		l = m->dir[off >> LEAF_SHIFT];
		if (likely(l)) {
			uint64_t *cp = &l->c[off & LEAF_MASK];

			if (likely((*cp & CELL_CODE_MASK) == cell_code(np))) {
				cell_unpack(m, pfn, *cp, &b);
				*cp = 0;
				a->in_use_blocks--;
				end_part(a, &b, t, pfn, np);
				return 0;
			}
		}
	} else {
		h = map_probe(m, pfn);
		if (likely(slot_npages(&h->s) == np)) {
			b = h->s;
			map_delete(m, h);
			a->in_use_blocks--;
			end_part(a, &b, t, pfn, np);
			return 0;
		}
	}
	return end_slow(a, t, pfn, np, type);
}

/* ------------------------------------------------------------- counts */

/* The rate bin of @t has moved: find it, halving the resolution as needed. */
__attribute__((noinline)) struct pgtrace_rate_bin *
pgtrace_rate_bin_slow(struct pgtrace_analysis *a, uint64_t t)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t idx = t < a->origin_ns ? 0 : (t - a->origin_ns) / a->bin_ns;

	while (idx >= PGTRACE_RATE_BINS) {
		for (unsigned int i = 0; i < PGTRACE_RATE_BINS / 2; i++) {
			struct pgtrace_rate_bin x = a->bins[2 * i];

			for (int k = 0; k < 4; k++) {
				x.events[k] += a->bins[2 * i + 1].events[k];
				x.pages[k] += a->bins[2 * i + 1].pages[k];
			}
			x.lost += a->bins[2 * i + 1].lost;
			a->bins[i] = x;
		}
		memset(a->bins + PGTRACE_RATE_BINS / 2, 0,
		       PGTRACE_RATE_BINS / 2 * sizeof(*a->bins));
		a->nr_bins = (a->nr_bins + 1) / 2;
		a->bin_ns *= 2;
		m->bin_lo = m->bin_hi = 0;
		idx = (t - a->origin_ns) / a->bin_ns;
	}
	if (idx >= a->nr_bins)
		a->nr_bins = (unsigned int)idx + 1;
	if (t >= a->origin_ns) {
		m->bin_idx = (unsigned int)idx;
		m->bin_lo = a->origin_ns + idx * a->bin_ns;
		m->bin_hi = m->bin_lo + a->bin_ns;
	}
	return &a->bins[idx];
}

/* The counts of an event that need no order: its zone's, its time's. */
static __attribute__((always_inline)) inline void
count_event(struct pgtrace_analysis *a, uint64_t t, unsigned int type, uint64_t np, uint32_t zone,
	    bool snap)
{
	struct pgtrace_zone_stats *z = zone_stats(a, zone);

	z->events[type]++;
	z->pages[type] += np;
	if (!snap) {
		struct pgtrace_rate_bin *b;

		if (a->priv->bin_early)
			return;	/* counted by add_run() */
		b = rate_bin(a, t);
		b->events[type]++;
		b->pages[type] += np;
	} else if (type == PGTRACE_EV_ALLOC) {
		/* The state at the start: outside the time line. */
		a->snapshot_events++;
		a->snapshot_pages += np;
	}
}

/* Count event @e and apply it to the blocks. */
static __attribute__((always_inline)) inline int
an_process(struct pgtrace_analysis *a, const struct pgtrace_compact_event *e, const struct pgtrace_event *full,
	   bool snap)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int type = pgtrace_compact_event_type(e);
	uint64_t np = pgtrace_compact_event_npages(e);
	uint32_t zone = zone_of(a, e->pfn);
	int ret;

	count_event(a, e->time_ns, type, np, zone, snap);
	if (type == PGTRACE_EV_ALLOC && unlikely(snap))
		ret = alloc_snapshot_run(a, e->time_ns, e->pfn, np);
	else if (type == PGTRACE_EV_ALLOC)
		ret = do_alloc(a, e->time_ns, e->pfn, np, zone, snap);
	else
		ret = do_end(a, e->time_ns, e->pfn, np, type);
	if (!ret && m->p.event) {
		ret = m->p.event(full, a, m->p.arg);
		if (ret)
			m->err = ret;
	}
	return ret;
}

/* Count a run as it comes, without applying it (PGTRACE_ANALYSIS_UNORDERED). */
void pgtrace_count_run(struct pgtrace_analysis *a, const struct pgtrace_compact_event *evs,
		       unsigned int n, bool snap)
{
	for (unsigned int i = 0; i < n; i++)
		count_event(a, evs[i].time_ns, pgtrace_compact_event_type(&evs[i]),
			    pgtrace_compact_event_npages(&evs[i]), zone_of(a, evs[i].pfn), snap);
}

/*
 * Count and apply a run of a snapshot chunk as it comes, not in time
 * order; @full with the event hook.
 */
int pgtrace_apply_snapshot(struct pgtrace_analysis *a, const struct pgtrace_compact_event *evs,
			   const struct pgtrace_event *full, unsigned int n)
{
	int ret;

	for (unsigned int i = 0; i < n; i++) {
		ret = an_process(a, &evs[i], full ? &full[i] : NULL, true);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The cell of @pfn in the flat map and *@zs its leaf's zone figures, or
 * NULL if it is in no leaf of one zone (the block's slot is prefetched if
 * it is hashed).
 */
static __attribute__((always_inline)) inline uint64_t *
cell_at(const struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t flat_lo, uint64_t flat_span,
	struct leaf *const *dir, struct pgtrace_zone_stats *const *leaf_zs,
	struct pgtrace_zone_stats **zs)
{
	uint64_t off = pfn - flat_lo;
	struct leaf *l;

	if (unlikely(off >= flat_span)) {
		blk_prefetch(m, pfn);
		return NULL;
	}
	l = dir[off >> LEAF_SHIFT];
	*zs = leaf_zs[off >> LEAF_SHIFT];
	return l && *zs ? &l->c[off & LEAF_MASK] : NULL;
}

/*
 * pgtrace_an_apply() without hooks: what an_process() does, with the usual
 * case (a whole block allocated into an empty flat slot, or freed from
 * one, in a leaf of one zone) inline and the figures it changes most in
 * registers; anything else goes through an_process().
 */
static unsigned int apply_fast(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			       unsigned int upto, unsigned int n, int *ret)
{
	struct pgtrace_analysis_priv *m = a->priv;
	const uint64_t flat_lo = m->flat_lo, flat_span = m->flat_span;
	struct leaf *const *dir = m->dir;
	struct pgtrace_zone_stats *const *leaf_zs = m->leaf_zs;
	uint64_t in_use = a->in_use, blocks = a->in_use_blocks;
	uint64_t peak = a->peak_in_use, peak_ns = a->peak_ns;
	const uint64_t snap_end = m->snap_end_ns;
	/*
	 * Event j's cell (NULL: not in a leaf of one zone, or no leaf yet)
	 * and its leaf's zone figures, found when its cell is prefetched.
	 */
	uint64_t *ring_cp[PREFETCH_AHEAD];
	struct pgtrace_zone_stats *ring_zs[PREFETCH_AHEAD];
	unsigned int i;

	_Static_assert(!(PREFETCH_AHEAD & (PREFETCH_AHEAD - 1)), "a ring");
	for (i = 0; i < PREFETCH_AHEAD && i < n; i++)
		ring_cp[i] = cell_at(m, ev[i].pfn, flat_lo, flat_span, dir, leaf_zs, &ring_zs[i]);
	for (i = 0; i < upto; i++) {
		const struct pgtrace_compact_event *e = &ev[i];
		uint64_t t = e->time_ns, np = pgtrace_compact_event_npages(e);
		unsigned int type = pgtrace_compact_event_type(e), r = i & (PREFETCH_AHEAD - 1);
		struct pgtrace_zone_stats *zs = ring_zs[r];
		uint64_t *cp = ring_cp[r], c;

		if (i + PREFETCH_AHEAD < n) {
			ring_cp[r] = cell_at(m, ev[i + PREFETCH_AHEAD].pfn, flat_lo, flat_span, dir,
					     leaf_zs, &ring_zs[r]);
			if (ring_cp[r])
				__builtin_prefetch(ring_cp[r]);
		}
		if (unlikely(!cp))
			goto slow;
		c = *cp;
		if (type == PGTRACE_EV_ALLOC) {
			/* An empty cell, and a block that fits one. */
			if (unlikely(c | (np & (np - 1)) | (t & CELL_TIME_BAD)) ||
			    unlikely(t <= snap_end))
				goto slow;
		} else if (unlikely(np != (1ULL << (c & CELL_CODE_MASK)) >> 1)) {
			/* Not a whole block in a cell: empty (0) or escaped. */
			goto slow;
		}
		zs->events[type]++;
		zs->pages[type] += np;
		if (type == PGTRACE_EV_ALLOC) {
			unsigned int order = __builtin_ctzll(np);

			*cp = (order + 1ULL) | (uint64_t)order << CELL_ORDER_SHIFT |
			      t >> PAGETRACE_TIME_LOST_BITS << CELL_TIME_SHIFT;
			in_use += np;
			blocks++;
			a->in_use_by_order[order] += np;
			zs->in_use += np;
			if (zs->in_use > zs->peak_in_use)
				zs->peak_in_use = zs->in_use;
			if (in_use > peak) {
				peak = in_use;
				peak_ns = t;
			}
		} else {
			unsigned int order = cell_order(c);

			/* The cell's zone is its leaf's. */
			*cp = 0;
			blocks--;
			in_use -= np;
			a->in_use_by_order[order] -= np;
			zs->in_use -= np;
			if (!cell_snap(c)) {
				uint64_t bt = cell_time(c);

				life_add(&a->life[order], t > bt ? t - bt : 0);
			}
		}
		continue;
slow:
		a->in_use = in_use;
		a->in_use_blocks = blocks;
		a->peak_in_use = peak;
		a->peak_ns = peak_ns;
		*ret = an_process(a, e, NULL, false);
		in_use = a->in_use;
		blocks = a->in_use_blocks;
		peak = a->peak_in_use;
		peak_ns = a->peak_ns;
		if (*ret) {
			i++;
			break;
		}
	}
	a->in_use = in_use;
	a->in_use_blocks = blocks;
	a->peak_in_use = peak;
	a->peak_ns = peak_ns;
	return i;
}

/*
 * Apply merged events @ev[0, @upto) of @n in time order, the block slot of
 * each prefetched PREFETCH_AHEAD events before: return how many were.
 */
static unsigned int an_apply_run(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
				 const struct pgtrace_event *full, unsigned int upto,
				 unsigned int n, int *ret)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int i;

	*ret = 0;
	if (m->bin_early)
		return apply_fast(a, ev, upto, n, ret);
	for (i = 0; i < upto && !*ret; i++) {
		if (i + PREFETCH_AHEAD < n)
			blk_prefetch(m, ev[i + PREFETCH_AHEAD].pfn);
		*ret = an_process(a, &ev[i], full ? &full[i] : NULL, false);
	}
	return i;
}

/*
 * Apply merged events @ev[0, @n), on whichever thread applies: 0 or an
 * error.  Each prefetches for the events after it in @ev only.
 */
int pgtrace_apply_merged(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			 unsigned int n)
{
	int ret;

	an_apply_run(a, ev, NULL, n, n, &ret);
	return ret;
}

/* Take every zone's pages in use as those at the kernel's start counters. */
void pgtrace_mark_zones(struct pgtrace_analysis *a)
{
	for (unsigned int i = 0; i <= a->nr_zones; i++)
		a->zone_stats[i].in_use_at_counters = a->zone_stats[i].in_use;
	a->other_zone.in_use_at_counters = a->other_zone.in_use;
	a->counters_marked = 1;
}

/* The mark, here or (pipe.c) where the events are applied, in their order. */
void pgtrace_an_mark(struct pgtrace_analysis *a)
{
	struct pgtrace_analysis_priv *m = a->priv;

	m->mark_pending = false;
	if (m->pipe)
		pgtrace_pipe_mark(a);	/* an error shows at the next hand-over */
	else
		pgtrace_mark_zones(a);
}

/* an_apply_run(), or with a second thread its events handed to it. */
static unsigned int an_hand_run(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
				const struct pgtrace_event *full, unsigned int upto,
				unsigned int n, int *ret)
{
	if (a->priv->pipe) {
		*ret = pgtrace_pipe_put(a, PIPE_MERGED, ev, upto);
		return upto;
	}
	return an_apply_run(a, ev, full, upto, n, ret);
}

unsigned int pgtrace_an_apply(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			      const struct pgtrace_event *full, unsigned int upto, unsigned int n,
			      int *ret)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int k = 0, done;

	/*
	 * The events are in time order: those up to the kernel's start
	 * counters are applied, the pages in use taken, then the rest.  A
	 * test per batch, not per event.
	 */
	if (!m->mark_pending || !upto || ev[upto - 1].time_ns <= m->mark_ns)
		return an_hand_run(a, ev, full, upto, n, ret);
	while (ev[k].time_ns <= m->mark_ns)
		k++;
	done = k ? an_hand_run(a, ev, full, k, n, ret) : (*ret = 0);
	if (*ret || done < k)
		return done;
	pgtrace_an_mark(a);
	return k + an_hand_run(a, ev + k, full ? full + k : NULL, upto - k, n - k, ret);
}

/*
 * Apply the merged events out[0, nr_out), all of them or (@keep) all but
 * the last PREFETCH_AHEAD: the slots of those are being prefetched, and
 * the merge goes on after them.
 */
int pgtrace_process_out(struct pgtrace_analysis *a, bool keep)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int i, n = m->nr_out;
	int ret;

	i = pgtrace_an_apply(a, m->out, m->want_full ? m->out_full : NULL,
			     keep ? n - PREFETCH_AHEAD : n, n, &ret);
	m->nr_out = n - i;
	memmove(m->out, m->out + i, m->nr_out * sizeof(*m->out));
	if (m->want_full)
		memmove(m->out_full, m->out_full + i, m->nr_out * sizeof(*m->out_full));
	return ret;
}
