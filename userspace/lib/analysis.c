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
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "internal.h"

#define DEFAULT_MAX_HELD	(1ULL << 21)
#define RATE_BIN0_NS		1000000ULL
#define MAP_MIN_BITS		10
/* Events decoded at a time, and merged before they are applied. */
#define RUN			256
#define OUT			512
/* Events ahead whose block slot is prefetched: the map misses the cache. */
#define PREFETCH_AHEAD		32
/*
 * The flat map: one cell per PFN in leaves of LEAF_PFNS, made when first
 * written.  Leaves start at multiples of LEAF_PFNS, so a naturally aligned
 * block of order up to PGTRACE_SPLIT_ORDERS, and every piece of it, lies in one.
 */
#define LEAF_SHIFT		PGTRACE_SPLIT_ORDERS
#define LEAF_PFNS		(1ULL << LEAF_SHIFT)
#define LEAF_MASK		(LEAF_PFNS - 1)
/* PFNs the flat map spans at most (1 TiB of 4 KiB pages); others are hashed. */
#define FLAT_MAX_PFNS		(1ULL << 28)
/*
 * Leaves come from arenas of 2 MiB, huge pages where the kernel has them:
 * slots are written and read at random, and each TLB miss costs.
 */
#define ARENA_BYTES		(2UL << 20)
#define LEAF_MIXED		(UINT32_MAX - 1)	/* PGTRACE_ZONE_OTHER is UINT32_MAX */
/*
 * A release of at most SORT_MAX events whose times span at most SORT_SPAN
 * steps of 128 ns per event is merged by a counting sort, not the tree.
 */
#define SORT_MAX		(1U << 15)
#define SORT_SPAN		4
/* Up to this many queues, merge keys are 64 bits: time | leaf. */
#define NARROW_LEAVES		64

/*
 * An allocated block, or a piece of one that was partly freed, keyed by its
 * first PFN: as the hash map keeps it, and as the flat map's cells (below)
 * hold it in half the space.  @info packs npages (0: an empty
 * slot; at most 2^35), the order of the whole allocation, whether it comes
 * from a snapshot (no start time) and its zone (SLOT_ZONE_OTHER: in none).
 * Not bitfields: a field-by-field build on the stack stalls store forwarding.
 */
struct slot {
	uint64_t	time_ns;	/* allocation time */
	uint64_t	info;		/* 0: empty */
};

#define SLOT_NPAGES_MASK	((1ULL << 36) - 1)
#define SLOT_ORDER_SHIFT	36
#define SLOT_SNAP_SHIFT		42
#define SLOT_ZONE_SHIFT		43
#define SLOT_ZONE_OTHER		((1U << 21) - 1)

_Static_assert(PAGETRACE_PFN_MAX + 1 <= SLOT_NPAGES_MASK, "npages fits a slot");
_Static_assert(PGTRACE_LIFE_ORDERS <= 64, "an order fits a slot");

static uint64_t slot_info(uint64_t npages, unsigned int order, bool snap, uint32_t zone)
{
	if (zone == PGTRACE_ZONE_OTHER)
		zone = SLOT_ZONE_OTHER;
	return npages | (uint64_t)order << SLOT_ORDER_SHIFT | (uint64_t)snap << SLOT_SNAP_SHIFT |
	       (uint64_t)zone << SLOT_ZONE_SHIFT;
}

static uint64_t slot_npages(const struct slot *s)
{
	return s->info & SLOT_NPAGES_MASK;
}

static unsigned int slot_order(const struct slot *s)
{
	return (s->info >> SLOT_ORDER_SHIFT) & 63;
}

static bool slot_snap(const struct slot *s)
{
	return (s->info >> SLOT_SNAP_SHIFT) & 1;
}

static uint32_t slot_zone(const struct slot *s)
{
	uint32_t z = (uint32_t)(s->info >> SLOT_ZONE_SHIFT);

	return z == SLOT_ZONE_OTHER ? PGTRACE_ZONE_OTHER : z;
}

/*
 * The flat map holds a block in one 8-byte cell (0: none), so that it
 * takes half the memory and cache of a struct slot: the low CELL_CODE_BITS
 * are log2(npages) + 1, then the order, whether from a snapshot and the
 * time in steps of 128 ns; the zone is the leaf's.  A block that does not
 * fit (npages not a power of two, a time off the 128 ns grid or too late,
 * another zone than its leaf's, a leaf of several zones) is in the hash
 * map under its PFN, and its cell is CELL_ESC.
 */
#define CELL_CODE_BITS		6
#define CELL_CODE_MASK		((1ULL << CELL_CODE_BITS) - 1)
#define CELL_ESC		CELL_CODE_MASK
#define CELL_ORDER_SHIFT	CELL_CODE_BITS
#define CELL_SNAP_SHIFT		(CELL_ORDER_SHIFT + 6)
#define CELL_TIME_SHIFT		(CELL_SNAP_SHIFT + 1)
/* Times at or past this do not fit a cell (2^58 ns: 9 years). */
#define CELL_TIME_END_SHIFT	(64 - CELL_TIME_SHIFT + PAGETRACE_TIME_LOST_BITS)

/* Times that do not fit a cell: off the 128 ns grid, or at or past 2^58 ns. */
#define CELL_TIME_BAD		(((1ULL << PAGETRACE_TIME_LOST_BITS) - 1) | ~0ULL << CELL_TIME_END_SHIFT)

_Static_assert(PGTRACE_LIFE_ORDERS <= 64, "an order fits a cell");
/*
 * The reader keeps npages at most PAGETRACE_PFN_MAX + 1: so a power of two
 * has a code below CELL_ESC, and its order (of the whole allocation) is
 * log2(npages); apply_fast() counts on both.
 */
_Static_assert(PAGETRACE_PFN_BITS + 1 < CELL_CODE_MASK, "a code is never CELL_ESC");
_Static_assert(PAGETRACE_PFN_BITS < PGTRACE_LIFE_ORDERS, "log2(npages) is the order");

struct leaf {
	uint64_t	c[LEAF_PFNS];
};

/* The code of a cell of @npages: never that of an empty cell, nor CELL_ESC. */
static __attribute__((always_inline)) inline uint64_t cell_code(uint64_t npages)
{
	return (npages & (npages - 1)) | (npages >> 40) ? CELL_CODE_MASK + 1 :
							  __builtin_ctzll(npages) + 1ULL;
}

/* May an allocation of @npages at @t (not from a snapshot) have a cell? */
static __attribute__((always_inline)) inline bool cell_fits(uint64_t npages, uint64_t t)
{
	return !((npages & (npages - 1)) | (npages >> 40) |
		 (t & ((1ULL << PAGETRACE_TIME_LOST_BITS) - 1)) | (t >> CELL_TIME_END_SHIFT));
}

static __attribute__((always_inline)) inline uint64_t
cell_make(uint64_t npages, unsigned int order, bool snap, uint64_t t)
{
	return cell_code(npages) | (uint64_t)order << CELL_ORDER_SHIFT |
	       (uint64_t)snap << CELL_SNAP_SHIFT |
	       (snap ? 0 : t >> PAGETRACE_TIME_LOST_BITS << CELL_TIME_SHIFT);
}

static __attribute__((always_inline)) inline unsigned int cell_order(uint64_t c)
{
	return (c >> CELL_ORDER_SHIFT) & 63;
}

static __attribute__((always_inline)) inline bool cell_snap(uint64_t c)
{
	return (c >> CELL_SNAP_SHIFT) & 1;
}

static __attribute__((always_inline)) inline uint64_t cell_time(uint64_t c)
{
	return c >> CELL_TIME_SHIFT << PAGETRACE_TIME_LOST_BITS;
}

/* The hash map, for blocks starting outside the flat map. */
struct hslot {
	uint64_t	pfn;
	struct slot	s;
};

/* One CPU's events waiting for the merge: ev[head, tail), in time order. */
struct queue {
	struct pgtrace_compact_event *ev;
	struct pgtrace_event	*full;		/* the same events in full, for the event hook */
	size_t		head;
	size_t		tail;
	size_t		cap;
	bool		active;		/* has had events */
};

/* A leaf's queue during a merge. */
struct cursor {
	const struct pgtrace_compact_event	*p;
	const struct pgtrace_compact_event	*end;
	const struct pgtrace_event	*full;
};

/*
 * A leaf's key in the merge: the time of its queue's first event
 * (UINT64_MAX if none) and the leaf, so that ties go to the lower CPU and
 * one branchless compare decides.  Times are multiples of 128 ns (the
 * stream's step), so with NARROW_LEAVES leaves at most the key fits 64
 * bits: time | leaf.
 */
typedef unsigned __int128 tkey;

static tkey wide_key(uint64_t t, unsigned int leaf)
{
	return (tkey)t << 32 | leaf;
}

static uint64_t narrow_key(uint64_t t, unsigned int leaf)
{
	return t == UINT64_MAX ? UINT64_MAX : (t & ~(uint64_t)(NARROW_LEAVES - 1)) | leaf;
}

struct pgtrace_analysis_priv {
	struct pgtrace_analysis_params p;
	/*
	 * Blocks starting in [flat_lo, flat_lo + flat_span) are in dir, the
	 * others hashed.  leaf_zone has the zone of each leaf's PFNs, or
	 * LEAF_MIXED if a zone starts or ends inside it.
	 */
	uint64_t	flat_lo;
	uint64_t	flat_span;
	struct leaf	**dir;
	uint32_t	*leaf_zone;
	struct pgtrace_zone_stats **leaf_zs;	/* the same, NULL for LEAF_MIXED */
	void		**arenas;
	unsigned int	nr_arenas;
	unsigned int	arena_left;	/* leaves left in the last arena */
	struct hslot	*map;
	unsigned int	map_bits;
	uint64_t	map_used;
	uint64_t	map_tombs;
	/* Queue i holds cpu i - 1: index 0 is PGTRACE_CPU_NONE (Go's P -1). */
	struct queue	*q;
	unsigned int	nr_q;
	unsigned int	nr_active;	/* queues that have had events */
	unsigned int	nr_nonempty;
	unsigned int	q_off, q_hi;	/* the tree's leaves: queues [q_off, q_hi) */
	/*
	 * The loser tree over nl leaves, leaf i for queue q_off + i: lt[n]
	 * for n >= 1 is the key of the loser at node n, lt[0] the winner's;
	 * lt64 with narrow keys, else lt128.
	 */
	uint64_t	*lt64;
	tkey		*lt128;
	tkey		*win;		/* scratch for building it */
	struct cursor	*cur;
	unsigned int	nl;
	bool		wide;
	bool		tree_dirty;	/* a key other than the winner's changed */
	uint64_t	held;
	uint64_t	max_seen;
	uint64_t	last_released;
	bool		all_cpus_known;	/* v1: the header lists every CPU */
	bool		want_full;	/* the event hook needs struct pgtrace_event */
	/* The rate bins are counted as runs arrive (add_run()), not in an_apply(). */
	bool		bin_early;
	int		err;		/* from a hook */
	/* The rate bin last used, [bin_lo, bin_hi); empty at first. */
	unsigned int	bin_idx;
	uint64_t	bin_lo, bin_hi;
	struct pgtrace_compact_event run[RUN];
	/* Merged, not yet applied: the last PREFETCH_AHEAD are prefetched. */
	struct pgtrace_compact_event out[OUT];
	unsigned int	nr_out;
	struct pgtrace_event	*batch;		/* RUN, with want_full */
	struct pgtrace_event	*out_full;	/* OUT, with want_full */
	/* The counting sort's (see merge_sort()): events and counts. */
	bool		sortable;
	struct pgtrace_compact_event *sorted;
	uint32_t	*counts;
	unsigned int	sorted_cap, counts_cap;
	const struct pgtrace_compact_event **sort_end;	/* per leaf: the end of what goes */
};

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

static struct pgtrace_zone_stats *zone_stats(struct pgtrace_analysis *a, uint32_t z)
{
	return z == PGTRACE_ZONE_OTHER ? &a->other_zone : &a->zone_stats[z];
}


/* life_all: the sum of the per-order histograms, made at the end. */
static void life_total(struct pgtrace_analysis *a)
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

/* ----------------------------------------------------------- hash map */

/*
 * Linear probing, at most half full counting tombstones: a freed entry
 * keeps its place (info with npages 0) until the next rehash, so that a
 * free is one store.
 */
static bool hslot_live(const struct hslot *h)
{
	return h->s.info & SLOT_NPAGES_MASK;
}

static uint64_t map_slot(const struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	return (pfn * 0x9e3779b97f4a7c15ULL) >> (64 - m->map_bits);
}

/* The live entry of @pfn, or the first free one (tombstone or empty) where it would go. */
static __attribute__((always_inline)) inline struct hslot *
map_probe(struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	uint64_t mask = (1ULL << m->map_bits) - 1;
	struct hslot *free = NULL;

	for (uint64_t i = map_slot(m, pfn);; i = (i + 1) & mask) {
		struct hslot *h = &m->map[i];

		if (!h->s.info)
			return free ? free : h;
		if (!hslot_live(h))
			free = free ? free : h;
		else if (h->pfn == pfn)
			return h;
	}
}

static struct hslot *map_find(struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	struct hslot *h = map_probe(m, pfn);

	return hslot_live(h) ? h : NULL;
}

/* Rehash without tombstones, growing if it is over a quarter full. */
static int map_rehash(struct pgtrace_analysis_priv *m)
{
	unsigned int bits = m->map_bits;
	struct hslot *n;

	while ((m->map_used + 1) * 4 > (1ULL << bits))
		bits++;
	n = calloc(1ULL << bits, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (uint64_t i = 0; i < (1ULL << m->map_bits); i++) {
		const struct hslot *h = &m->map[i];
		uint64_t mask = (1ULL << bits) - 1, j;

		if (!hslot_live(h))
			continue;
		for (j = (h->pfn * 0x9e3779b97f4a7c15ULL) >> (64 - bits); n[j].s.info;
		     j = (j + 1) & mask)
			;
		n[j] = *h;
	}
	free(m->map);
	m->map = n;
	m->map_bits = bits;
	m->map_tombs = 0;
	return 0;
}

/* May entry @h, free, take a new block without a rehash? */
static bool map_room(const struct pgtrace_analysis_priv *m, const struct hslot *h)
{
	return h->s.info || (m->map_used + m->map_tombs + 1) * 2 <= (1ULL << m->map_bits);
}

/* Put a block at free entry @h. */
static void map_fill(struct pgtrace_analysis_priv *m, struct hslot *h, uint64_t pfn,
		     const struct slot *s)
{
	if (h->s.info)
		m->map_tombs--;
	h->pfn = pfn;
	h->s = *s;
	m->map_used++;
}

/* Insert a block whose pfn is not in the map. */
static int map_insert(struct pgtrace_analysis_priv *m, uint64_t pfn, const struct slot *s)
{
	struct hslot *h = map_probe(m, pfn);

	if (!map_room(m, h)) {
		int ret = map_rehash(m);

		if (ret)
			return ret;
		h = map_probe(m, pfn);
	}
	map_fill(m, h, pfn, s);
	return 0;
}

static void map_delete(struct pgtrace_analysis_priv *m, struct hslot *h)
{
	h->s.info = 1ULL << SLOT_ORDER_SHIFT;	/* a tombstone: npages 0 */
	m->map_used--;
	m->map_tombs++;
}

/* ----------------------------------------------------------- flat map */

static bool is_flat(const struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	return pfn - m->flat_lo < m->flat_span;
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

/* A zeroed arena, aligned so that it can be a huge page. */
static void *arena_map(void)
{
	char *p = mmap(NULL, 2 * ARENA_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + ARENA_BYTES - 1) & ~(uintptr_t)(ARENA_BYTES - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + ARENA_BYTES, p + ARENA_BYTES - a);
	madvise(a, ARENA_BYTES, MADV_HUGEPAGE);
	return a;
}

/* Make the leaf of flat offset @off. */
static struct leaf *leaf_new(struct pgtrace_analysis_priv *m, uint64_t off)
{
	struct leaf *l;

	if (!m->arena_left) {
		void **n = realloc(m->arenas, (m->nr_arenas + 1) * sizeof(*n));

		if (!n)
			return NULL;
		m->arenas = n;
		n[m->nr_arenas] = arena_map();
		if (!n[m->nr_arenas])
			return NULL;
		m->nr_arenas++;
		m->arena_left = ARENA_BYTES / sizeof(*l);
	}
	l = (struct leaf *)m->arenas[m->nr_arenas - 1] + --m->arena_left;
	m->dir[off >> LEAF_SHIFT] = l;
	return l;
}

/* ------------------------------------------------- blocks, either map */

/* The cell of block @s at @pfn, in the flat map: CELL_ESC if it does not fit one. */
static uint64_t cell_pack(const struct pgtrace_analysis_priv *m, uint64_t pfn, const struct slot *s)
{
	uint32_t z = m->leaf_zone[(pfn - m->flat_lo) >> LEAF_SHIFT];
	uint64_t np = slot_npages(s);
	bool snap = slot_snap(s);

	if (z == LEAF_MIXED || z != slot_zone(s) || !cell_fits(np, snap ? 0 : s->time_ns))
		return CELL_ESC;
	return cell_make(np, slot_order(s), snap, s->time_ns);
}

/* Cell @c at @pfn, not CELL_ESC, as a slot (a snapshot's without its time). */
static void cell_unpack(const struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t c,
			struct slot *s)
{
	s->time_ns = cell_time(c);
	s->info = slot_info(1ULL << ((c & CELL_CODE_MASK) - 1), cell_order(c), cell_snap(c),
			    m->leaf_zone[(pfn - m->flat_lo) >> LEAF_SHIFT]);
}

/* The block starting at @pfn into *@out: false if there is none. */
static bool blk_get(struct pgtrace_analysis_priv *m, uint64_t pfn, struct slot *out)
{
	uint64_t off = pfn - m->flat_lo, c;
	struct hslot *h;

	if (likely(off < m->flat_span)) {
		const struct leaf *l = m->dir[off >> LEAF_SHIFT];

		c = l ? l->c[off & LEAF_MASK] : 0;
		if (!c)
			return false;
		if (c != CELL_ESC) {
			cell_unpack(m, pfn, c, out);
			return true;
		}
	}
	h = map_find(m, pfn);
	if (!h)
		return false;
	*out = h->s;
	return true;
}

/* Forget the block at @pfn, which is there. */
static void blk_del(struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	uint64_t off = pfn - m->flat_lo;

	if (likely(off < m->flat_span)) {
		uint64_t *c = &m->dir[off >> LEAF_SHIFT]->c[off & LEAF_MASK];
		bool esc = *c == CELL_ESC;

		*c = 0;
		if (!esc)
			return;
	}
	map_delete(m, map_find(m, pfn));
}

/* Put block @s at @pfn, over the one there if any. */
static int blk_put(struct pgtrace_analysis_priv *m, uint64_t pfn, const struct slot *s)
{
	uint64_t off = pfn - m->flat_lo;
	struct hslot *h;

	if (likely(off < m->flat_span)) {
		struct leaf *l = m->dir[off >> LEAF_SHIFT];
		uint64_t *cp, c;

		if (!l)
			l = leaf_new(m, off);
		if (!l)
			return -ENOMEM;
		cp = &l->c[off & LEAF_MASK];
		c = cell_pack(m, pfn, s);
		if (*cp == CELL_ESC) {
			h = map_find(m, pfn);
			if (c == CELL_ESC) {
				h->s = *s;
				return 0;
			}
			map_delete(m, h);
		} else if (c == CELL_ESC) {
			int ret = map_insert(m, pfn, s);

			if (ret)
				return ret;
		}
		*cp = c;
		return 0;
	}
	h = map_find(m, pfn);
	if (h) {
		h->s = *s;
		return 0;
	}
	return map_insert(m, pfn, s);
}

/* Inlined: GCC takes a function that only prefetches as pure, and drops calls. */
static __attribute__((always_inline)) inline void
blk_prefetch(const struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	if (likely(is_flat(m, pfn))) {
		uint64_t off = pfn - m->flat_lo;
		const struct leaf *l = m->dir[off >> LEAF_SHIFT];

		if (l)
			__builtin_prefetch(&l->c[off & LEAF_MASK]);
	} else {
		__builtin_prefetch(&m->map[map_slot(m, pfn)]);
	}
}

/*
 * The block holding @pfn into *@b: it starts there, or at an aligned start
 * below.  *@start gets where it starts.  False if there is none.
 */
static bool find_containing(struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t *start,
			    struct slot *b)
{
	bool found = blk_get(m, pfn, b);

	*start = pfn;
	for (unsigned int k = 1; !found && k <= PGTRACE_SPLIT_ORDERS; k++) {
		uint64_t s = pfn & ~((1ULL << k) - 1);

		if (s == pfn)
			continue;
		found = blk_get(m, s, b);
		if (found && s + slot_npages(b) <= pfn)
			found = false;
		*start = s;
	}
	return found;
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
 * later free of any page in them is found by find_containing().  A piece
 * that would start where another block starts (allocated over @b: a free
 * was lost) goes: the later block stays, and the piece's pages stop being
 * in use at @t.
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
		if (unlikely(blk_get(a->priv, from, &old))) {
			in_use_sub(a, &nb, 1ULL << k);
			if (a->priv->p.change)
				a->priv->p.change(t, from, 1ULL << k, -1, slot_order(b),
						  a->priv->p.arg);
		} else {
			ret = blk_put(a->priv, from, &nb);
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

	if (!blk_get(m, pfn, &old))
		return blk_put(m, pfn, nb);
	/* Allocated again without a free in between: the free was lost. */
	a->realloc_events++;
	in_use_sub(a, &old, slot_npages(&old));
	a->in_use_blocks--;
	if (m->p.change)
		m->p.change(nb->time_ns, pfn, slot_npages(&old), -1, slot_order(&old), m->p.arg);
	return blk_put(m, pfn, nb);
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

		if (!find_containing(m, cur, &start, &b))
			break;
		blk_del(m, start);
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
static __attribute__((noinline)) struct pgtrace_rate_bin *rate_bin_slow(struct pgtrace_analysis *a,
								   uint64_t t)
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

/* The rate bin of @t; in time order, mostly the one before. */
static __attribute__((always_inline)) inline struct pgtrace_rate_bin *
rate_bin(struct pgtrace_analysis *a, uint64_t t)
{
	struct pgtrace_analysis_priv *m = a->priv;

	if (likely(t >= m->bin_lo && t < m->bin_hi))
		return &a->bins[m->bin_idx];
	return rate_bin_slow(a, t);
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
	if (type == PGTRACE_EV_ALLOC)
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
 * an_apply() without hooks: what an_process() does, with the usual case (a
 * whole block allocated into an empty flat slot, or freed from one, in a
 * leaf of one zone) inline and the figures it changes most in registers;
 * anything else goes through an_process().
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
			if (unlikely(c | (np & (np - 1)) | (t & CELL_TIME_BAD)))
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
static unsigned int an_apply(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			     const struct pgtrace_event *full, unsigned int upto, unsigned int n,
			     int *ret)
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
 * Apply the merged events out[0, nr_out), all of them or (@keep) all but
 * the last PREFETCH_AHEAD: the slots of those are being prefetched, and
 * the merge goes on after them.
 */
static int process_out(struct pgtrace_analysis *a, bool keep)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int i, n = m->nr_out;
	int ret;

	i = an_apply(a, m->out, m->want_full ? m->out_full : NULL,
		     keep ? n - PREFETCH_AHEAD : n, n, &ret);
	m->nr_out = n - i;
	memmove(m->out, m->out + i, m->nr_out * sizeof(*m->out));
	if (m->want_full)
		memmove(m->out_full, m->out_full + i, m->nr_out * sizeof(*m->out_full));
	return ret;
}

/* -------------------------------------------------------- time order */

static struct queue *get_queue(struct pgtrace_analysis_priv *m, uint32_t cpu)
{
	unsigned int i = cpu + 1U, nr;
	struct queue *n;

	if (i >= m->nr_q) {
		if (i > PGTRACE_GO_MAX_P)
			return NULL;
		/* Doubling: CPUs (and Go Ps) come by one at a time. */
		nr = i + 1 > 2 * m->nr_q ? i + 1 : 2 * m->nr_q;
		if (nr > PGTRACE_GO_MAX_P + 1)
			nr = PGTRACE_GO_MAX_P + 1;
		n = realloc(m->q, nr * sizeof(*n));
		if (!n)
			return NULL;
		memset(n + m->nr_q, 0, (nr - m->nr_q) * sizeof(*n));
		m->q = n;
		m->nr_q = nr;
	}
	if (i >= m->q_hi) {
		m->q_hi = i + 1;
		m->tree_dirty = true;
	}
	if (i < m->q_off) {
		m->q_off = i;
		m->tree_dirty = true;
	}
	return &m->q[i];
}

static uint64_t head_time(const struct queue *q)
{
	return q->head < q->tail ? q->ev[q->head].time_ns : UINT64_MAX;
}

/* Build the loser tree over the queues' first events. */
static int tree_build(struct pgtrace_analysis_priv *m)
{
	unsigned int used = m->q_hi > m->q_off ? m->q_hi - m->q_off : 1, nl = 1;
	const struct pgtrace_compact_event **end;
	struct cursor *cur;
	tkey *win;

	while (nl < used)
		nl *= 2;
	if (nl != m->nl) {
		uint64_t *lt64 = realloc(m->lt64, nl * sizeof(*lt64));
		tkey *lt128 = lt64 ? realloc(m->lt128, nl * sizeof(*lt128)) : NULL;

		if (lt64)
			m->lt64 = lt64;
		if (lt128)
			m->lt128 = lt128;
		win = lt128 ? realloc(m->win, 2 * nl * sizeof(*win)) : NULL;
		if (win)
			m->win = win;
		cur = win ? realloc(m->cur, nl * sizeof(*cur)) : NULL;
		if (cur)
			m->cur = cur;
		end = cur ? realloc(m->sort_end, nl * sizeof(*end)) : NULL;
		if (!end)
			return -ENOMEM;
		m->sort_end = end;
		m->nl = nl;
	}
	m->wide = nl > NARROW_LEAVES;
	win = m->win;
	for (unsigned int i = 0; i < nl; i++)
		win[nl + i] = wide_key(i < used && i + m->q_off < m->nr_q ?
				       head_time(&m->q[i + m->q_off]) : UINT64_MAX, i);
	/* Winners bottom up; each node keeps the loser. */
	for (unsigned int n = nl - 1; n >= 1; n--) {
		tkey x = win[2 * n], y = win[2 * n + 1];

		win[n] = y < x ? y : x;
		m->lt128[n] = y < x ? x : y;
	}
	m->lt128[0] = win[1];
	/* Narrow keys order the same. */
	for (unsigned int n = 0; n < nl && !m->wide; n++)
		m->lt64[n] = narrow_key((uint64_t)(m->lt128[n] >> 32), (unsigned int)m->lt128[n]);
	m->tree_dirty = false;
	return 0;
}

/*
 * Play key @k of leaf @w, the winner's, up the loser tree @lt of @nl
 * leaves; return the new winner's key (for lt[0]).  One for each width.
 */
#define DEFINE_REPLAY(name, type)						\
static __attribute__((always_inline)) inline type				\
name(type *lt, unsigned int nl, unsigned int w, type k)				\
{										\
	for (unsigned int i = (w + nl) >> 1; i; i >>= 1) {			\
		type o = lt[i];							\
		bool sw = o < k;						\
										\
		lt[i] = sw ? k : o;						\
		k = sw ? o : k;							\
	}									\
	return k;								\
}
DEFINE_REPLAY(replay64, uint64_t)
DEFINE_REPLAY(replay128, tkey)

/*
 * Merge what may go: events before @bound, and the earliest ones past
 * max_held, into out in time order, applying them as it fills.
 */
static __attribute__((always_inline)) inline int
an_merge(struct pgtrace_analysis *a, uint64_t bound, const bool wide)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t excess = m->held > m->p.max_held ? m->held - m->p.max_held : 0;
	uint64_t n = 0, late = 0, last = m->last_released;
	struct cursor *cur = m->cur;
	unsigned int nl = m->nl;
	int ret = 0;

	for (;;) {
		unsigned int w;
		uint64_t t, next;
		struct cursor *c;

		if (wide) {
			w = (unsigned int)m->lt128[0];
			t = (uint64_t)(m->lt128[0] >> 32);
		} else {
			if (m->lt64[0] == UINT64_MAX)
				break;	/* all empty */
			w = m->lt64[0] & (NARROW_LEAVES - 1);
			t = m->lt64[0] & ~(uint64_t)(NARROW_LEAVES - 1);
		}
		if (t >= bound && n >= excess)
			break;
		c = &cur[w];
		m->out[m->nr_out] = *c->p++;
		if (m->want_full)
			m->out_full[m->nr_out] = *c->full++;
		__builtin_prefetch(c->p + 8);
		next = c->p < c->end ? c->p->time_ns : UINT64_MAX;
		/* Play the winner's next event up the tree. */
		if (wide)
			m->lt128[0] = replay128(m->lt128, nl, w, wide_key(next, w));
		else
			m->lt64[0] = replay64(m->lt64, nl, w, narrow_key(next, w));
		n++;
		/* Released before an earlier event: a CPU was held up too long. */
		if (t < last)
			late++;
		else
			last = t;
		if (++m->nr_out == OUT) {
			ret = process_out(a, true);
			if (ret)
				break;
		}
	}
	m->held -= n;
	m->last_released = last;
	a->late_events += late;
	return ret;
}

/* The first of @p[0, @n) at or after @t (sorted by time). */
static const struct pgtrace_compact_event *first_at(const struct pgtrace_compact_event *p, size_t n, uint64_t t)
{
	while (n) {
		size_t h = n / 2;

		if (p[h].time_ns < t) {
			p += h + 1;
			n -= h + 1;
		} else {
			n = h;
		}
	}
	return p;
}

/*
 * What an_merge() does for events before @bound, by a counting sort on their
 * time, when they are few and close in time (the usual release of a v1
 * stream): stable, queue by queue, it gives the same (time, CPU) order in
 * a few operations an event instead of a walk up the tree.  v1 times are
 * multiples of 128 ns, so the time of a bucket is exact.  Return 1 if it
 * does not apply, else what an_apply() returned.
 */
static int merge_sort(struct pgtrace_analysis *a, uint64_t bound)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t lo = UINT64_MAX, hi = 0, total = 0, span, last = m->last_released, late = 0;
	const struct pgtrace_compact_event **end = m->sort_end;
	struct pgtrace_compact_event *out;
	unsigned int used = m->q_hi - m->q_off;
	uint32_t *cnt;
	int ret;

	for (unsigned int i = 0; i < used; i++) {
		const struct cursor *c = &m->cur[i];

		end[i] = c->p;
		if (c->p == c->end)
			continue;
		end[i] = first_at(c->p, c->end - c->p, bound);
		if (end[i] == c->p)
			continue;
		lo = c->p->time_ns < lo ? c->p->time_ns : lo;
		hi = end[i][-1].time_ns > hi ? end[i][-1].time_ns : hi;
		total += end[i] - c->p;
	}
	if (!total)
		return 0;
	span = ((hi - lo) >> PAGETRACE_TIME_LOST_BITS) + 1;
	if (total > SORT_MAX || span > SORT_SPAN * total)
		return 1;
	if (m->sorted_cap < total) {
		out = realloc(m->sorted, SORT_MAX * sizeof(*out));
		if (!out)
			return -ENOMEM;
		m->sorted = out;
		m->sorted_cap = SORT_MAX;
	}
	if (m->counts_cap < span) {
		cnt = realloc(m->counts, SORT_SPAN * SORT_MAX * sizeof(*cnt));
		if (!cnt)
			return -ENOMEM;
		m->counts = cnt;
		m->counts_cap = SORT_SPAN * SORT_MAX;
	}
	cnt = m->counts;
	out = m->sorted;
	memset(cnt, 0, span * sizeof(*cnt));
	for (unsigned int i = 0; i < used; i++)
		for (const struct pgtrace_compact_event *e = m->cur[i].p; e < end[i]; e++)
			cnt[(e->time_ns - lo) >> PAGETRACE_TIME_LOST_BITS]++;
	for (uint64_t b = 0, sum = 0; b < span; b++) {
		uint32_t k = cnt[b];

		cnt[b] = (uint32_t)sum;
		sum += k;
	}
	for (unsigned int i = 0; i < used; i++) {
		for (const struct pgtrace_compact_event *e = m->cur[i].p; e < end[i]; e++)
			out[cnt[(e->time_ns - lo) >> PAGETRACE_TIME_LOST_BITS]++] = *e;
		m->cur[i].p = end[i];
	}
	/* Released before an earlier event: a CPU was held up too long. */
	while (late < total && out[late].time_ns < last)
		late++;
	m->last_released = hi > last ? hi : last;
	a->late_events += late;
	m->held -= total;
	m->tree_dirty = true;	/* the tree still has the old first events */
	/* What an_merge() left first, then these. */
	ret = process_out(a, false);
	if (!ret)
		an_apply(a, out, NULL, (unsigned int)total, (unsigned int)total, &ret);
	return ret;
}

/* Queued events before this time may go now (0: none may). */
static uint64_t release_bound(const struct pgtrace_analysis_priv *m, bool drain)
{
	uint64_t b = 0;

	if (drain)
		return UINT64_MAX;
	/*
	 * Every CPU has events queued: none earlier than its last can come.
	 * Those at the earliest last time wait, so that ties keep CPU order.
	 */
	if (m->all_cpus_known && m->nr_nonempty == m->nr_active && m->nr_active) {
		b = UINT64_MAX;
		for (unsigned int i = 0; i < m->nr_q; i++) {
			const struct queue *q = &m->q[i];

			if (q->active && q->ev[q->tail - 1].time_ns < b)
				b = q->ev[q->tail - 1].time_ns;
		}
	}
	/* A CPU quiet for hold_ns: what is older than that goes. */
	if (m->p.hold_ns != UINT64_MAX && m->max_seen >= m->p.hold_ns &&
	    m->max_seen - m->p.hold_ns + 1 > b)
		b = m->max_seen - m->p.hold_ns + 1;
	return b;
}

/* Release what may go; with @drain, everything, and apply it all. */
static int an_release(struct pgtrace_analysis *a, bool drain)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int used;
	uint64_t bound;
	int ret = 0;

	if (m->held) {
		bound = release_bound(m, drain);
		if (m->tree_dirty) {
			ret = tree_build(m);
			if (ret)
				return ret;
		}
		used = m->q_hi - m->q_off;
		for (unsigned int i = 0; i < used; i++) {
			const struct queue *q = &m->q[m->q_off + i];

			/* A queue that never had events has no array. */
			memset(&m->cur[i], 0, sizeof(m->cur[i]));
			if (!q->ev)
				continue;
			m->cur[i].p = q->ev + q->head;
			m->cur[i].end = q->ev + q->tail;
			if (m->want_full)
				m->cur[i].full = q->full + q->head;
		}
		ret = 1;
		if (m->sortable && m->held <= m->p.max_held)
			ret = merge_sort(a, bound);
		if (ret == 1)
			ret = m->wide ? an_merge(a, bound, true) : an_merge(a, bound, false);
		m->nr_nonempty = 0;
		for (unsigned int i = 0; i < used; i++) {
			struct queue *q = &m->q[m->q_off + i];

			if (!q->ev)
				continue;
			q->head = m->cur[i].p - q->ev;
			if (q->head == q->tail)
				q->head = q->tail = 0;
			else
				m->nr_nonempty++;
		}
	}
	if (!ret && drain)
		ret = process_out(a, false);
	return ret;
}

/* Room for @n more events at the tail of @q. */
static int queue_room(struct pgtrace_analysis_priv *m, struct queue *q, size_t n)
{
	size_t len = q->tail - q->head, cap;

	if (q->tail + n <= q->cap)
		return 0;
	if (q->head) {
		memmove(q->ev, q->ev + q->head, len * sizeof(*q->ev));
		if (m->want_full)
			memmove(q->full, q->full + q->head, len * sizeof(*q->full));
		q->head = 0;
		q->tail = len;
	}
	/* Keep half free after a move, so that moves cost O(1) an event. */
	if (len + n <= q->cap / 2)
		return 0;
	for (cap = q->cap ? 2 * q->cap : 1024; cap < 2 * (len + n); cap *= 2)
		;
	{
		struct pgtrace_compact_event *ev = realloc(q->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		q->ev = ev;
	}
	if (m->want_full) {
		struct pgtrace_event *full = realloc(q->full, cap * sizeof(*full));

		if (!full)
			return -ENOMEM;
		q->full = full;
	}
	q->cap = cap;
	return 0;
}

/* Event @i of @q is earlier than the one before it (Go): move it back. */
static void queue_sort_in(struct pgtrace_analysis_priv *m, struct queue *q, size_t i)
{
	struct pgtrace_compact_event ev = q->ev[i];
	struct pgtrace_event full;
	size_t j = i;

	if (m->want_full)
		full = q->full[i];
	while (j > q->head && q->ev[j - 1].time_ns > ev.time_ns) {
		q->ev[j] = q->ev[j - 1];
		if (m->want_full)
			q->full[j] = q->full[j - 1];
		j--;
	}
	q->ev[j] = ev;
	if (m->want_full)
		q->full[j] = full;
	if (j == q->head)
		m->tree_dirty = true;	/* a new first event */
}

/* @n events were written at the tail of @q: queue them, and release. */
static int queue_commit(struct pgtrace_analysis *a, struct queue *q, unsigned int n)
{
	struct pgtrace_analysis_priv *m = a->priv;
	bool was_empty = q->head == q->tail;
	uint64_t max = m->max_seen;

	/*
	 * A v1 stream's CPU logs its events in time order (the reader checks
	 * it), but a Go P may not quite: insert from the back to keep the
	 * queue sorted.
	 */
	if (m->all_cpus_known) {
		max = n && q->ev[q->tail + n - 1].time_ns > max ? q->ev[q->tail + n - 1].time_ns : max;
	} else {
		for (size_t i = q->tail; i < q->tail + n; i++) {
			uint64_t t = q->ev[i].time_ns;

			max = t > max ? t : max;
			if (unlikely(i > q->head && q->ev[i - 1].time_ns > t))
				queue_sort_in(m, q, i);
		}
	}
	q->tail += n;
	if (was_empty) {
		m->nr_nonempty++;
		m->tree_dirty = true;
	}
	if (!q->active) {
		q->active = true;
		m->nr_active++;
	}
	m->held += n;
	if (m->held > a->max_held_seen)
		a->max_held_seen = m->held;
	m->max_seen = max;
	return an_release(a, false);
}

/*
 * How many of @n events to queue at once: near max_held, one at a time,
 * so that each one pushes the earliest out.
 */
static unsigned int queue_take(const struct pgtrace_analysis_priv *m, unsigned int n)
{
	uint64_t room = m->p.max_held - m->held;

	return room < n ? (unsigned int)room + 1 : n;
}

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

	add_run(a, evs, n, cpu, m->bin_early && !snap, m->all_cpus_known && !snap);
	if (m->p.flags & PGTRACE_ANALYSIS_UNORDERED) {
		for (unsigned int i = 0; i < n; i++)
			count_event(a, evs[i].time_ns, pgtrace_compact_event_type(&evs[i]),
				    pgtrace_compact_event_npages(&evs[i]), zone_of(a, evs[i].pfn), snap);
		return 0;
	}
	if (snap) {
		/* The state at the start: seeds the map, outside the time line. */
		for (unsigned int i = 0; i < n; i++) {
			ret = an_process(a, &evs[i], full ? &full[i] : NULL, true);
			if (ret)
				return ret;
		}
		return 0;
	}
	q = get_queue(m, cpu);
	if (!q)
		return -ENOMEM;
	while (n) {
		unsigned int k = queue_take(m, n);

		ret = queue_room(m, q, k);
		if (ret)
			return ret;
		memcpy(q->ev + q->tail, evs, k * sizeof(*evs));
		if (m->want_full)
			memcpy(q->full + q->tail, full, k * sizeof(*full));
		ret = queue_commit(a, q, k);
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
		q = get_queue(m, cpu);
		if (!q)
			return -ENOMEM;
		k = queue_take(m, RUN);
		ret = queue_room(m, q, k);
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
			ret = queue_commit(a, q, ret);
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
			struct queue *q = get_queue(m, c);

			if (!q)
				return -ENOMEM;
			q->active = true;
			m->nr_active++;
		}
	}
	a->origin_ns = h->start_ns;
	a->bin_ns = RATE_BIN0_NS;
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
	ret2 = m->err ? 0 : an_release(a, true);
	if (!ret)
		ret = ret2;
	pgtrace_reader_set_chunk_cb(r, NULL, NULL);
	life_total(a);
	if (a->stats.nr_cpus > pgtrace_reader_header(r)->nr_cpus)
		a->stats.nr_cpus = pgtrace_reader_header(r)->nr_cpus;
	a->stats.tasks = pgtrace_reader_counters(r)->tasks;
	a->stats.bytes = pgtrace_reader_counters(r)->bytes;
	if (!a->stats.events)
		a->stats.first_ns = 0;
	return ret;
}

void pgtrace_analysis_free(struct pgtrace_analysis *a)
{
	struct pgtrace_analysis_priv *m = a->priv;

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
