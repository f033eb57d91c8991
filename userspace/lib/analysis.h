/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the analysis (pgtrace_analysis_collect()) share: the
 * state of a collect, the block map's slot and cell encodings, and the
 * small steps of the hot loops that more than one file needs, static
 * inline here so that they stay inline.  Calls go down, never up:
 *
 *   analysis.c   the api (collect, free) and the arrival of the reader's
 *       |        runs: into their CPU's queue, or counted unordered
 *       v
 *   merge.c      time order: the per-CPU queues, merged by a loser tree or
 *       |        a counting sort as far as no earlier event can come
 *       v
 *   apply.c      each event, in time order, applied to the blocks and
 *       |        counted: pages in use, lifetimes, zones, rate bins
 *       v
 *   blocks.c     the block map: flat over the zones' PFNs, hashed outside
 *
 * With a second thread (pipe.c), what apply.c would apply on the reading
 * thread goes, in the same order, to the other thread, which applies it
 * there: the one call up, from pipe.c's thread into apply.c.
 *
 * analysis.c also calls apply.c directly (snapshot and unordered runs, the
 * lifetime total, the zone of a PFN).
 */
#ifndef LIBPAGETRACE_ANALYSIS_H
#define LIBPAGETRACE_ANALYSIS_H

#include "internal.h"

/* Events decoded at a time, and merged before they are applied. */
#define RUN			256
#define OUT			512
/* Events ahead whose block slot is prefetched: the map misses the cache. */
#define PREFETCH_AHEAD		64
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

static inline uint64_t slot_info(uint64_t npages, unsigned int order, bool snap, uint32_t zone)
{
	if (zone == PGTRACE_ZONE_OTHER)
		zone = SLOT_ZONE_OTHER;
	return npages | (uint64_t)order << SLOT_ORDER_SHIFT | (uint64_t)snap << SLOT_SNAP_SHIFT |
	       (uint64_t)zone << SLOT_ZONE_SHIFT;
}

static inline uint64_t slot_npages(const struct slot *s)
{
	return s->info & SLOT_NPAGES_MASK;
}

static inline unsigned int slot_order(const struct slot *s)
{
	return (s->info >> SLOT_ORDER_SHIFT) & 63;
}

static inline bool slot_snap(const struct slot *s)
{
	return (s->info >> SLOT_SNAP_SHIFT) & 1;
}

static inline uint32_t slot_zone(const struct slot *s)
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

/* A leaf's key in the merge, time and leaf: see wide_key() in merge.c. */
typedef unsigned __int128 tkey;

struct pgtrace_pipe;

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
	/* The rate bins are counted as runs arrive (add_run()), not in pgtrace_an_apply(). */
	bool		bin_early;
	/*
	 * The time of the kernel's start counters, until the pages in use
	 * are taken at it (pgtrace_an_mark()): the events up to it applied,
	 * none after.
	 */
	uint64_t	mark_ns;
	bool		mark_pending;
	/*
	 * Until then (the start counters' time, which follows the walk) an
	 * allocation may overlap a snapshot run: trim_snapshot().  0: never.
	 */
	uint64_t	snap_end_ns;
	int		err;		/* from a hook */
	/* With a second thread: what would be applied goes to it (pipe.c). */
	struct pgtrace_pipe *pipe;
	/* The rate bin last used, [bin_lo, bin_hi); empty at first. */
	unsigned int	bin_idx;
	uint64_t	bin_lo, bin_hi;
	struct pgtrace_compact_event run[RUN];
	/* Merged, not yet applied: the last PREFETCH_AHEAD are prefetched. */
	struct pgtrace_compact_event out[OUT];
	unsigned int	nr_out;
	struct pgtrace_event	*batch;		/* RUN, with want_full */
	struct pgtrace_event	*out_full;	/* OUT, with want_full */
	/* The counting sort's (see merge_sort(), merge.c): events and counts. */
	bool		sortable;
	struct pgtrace_compact_event *sorted;
	uint32_t	*counts;
	unsigned int	sorted_cap, counts_cap;
	const struct pgtrace_compact_event **sort_end;	/* per leaf: the end of what goes */
};

/*
 * Small steps that the hot loops inline and more than one file uses: here,
 * so that they stay inline.
 */

/* The hash map (blocks.c has the rest). */

/*
 * Linear probing, at most half full counting tombstones: a freed entry
 * keeps its place (info with npages 0) until the next rehash, so that a
 * free is one store.
 */
static inline bool hslot_live(const struct hslot *h)
{
	return h->s.info & SLOT_NPAGES_MASK;
}

static inline uint64_t map_slot(const struct pgtrace_analysis_priv *m, uint64_t pfn)
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

/* May entry @h, free, take a new block without a rehash? */
static inline bool map_room(const struct pgtrace_analysis_priv *m, const struct hslot *h)
{
	return h->s.info || (m->map_used + m->map_tombs + 1) * 2 <= (1ULL << m->map_bits);
}

/* Put a block at free entry @h. */
static inline void map_fill(struct pgtrace_analysis_priv *m, struct hslot *h, uint64_t pfn,
			    const struct slot *s)
{
	if (h->s.info)
		m->map_tombs--;
	h->pfn = pfn;
	h->s = *s;
	m->map_used++;
}

static inline void map_delete(struct pgtrace_analysis_priv *m, struct hslot *h)
{
	h->s.info = 1ULL << SLOT_ORDER_SHIFT;	/* a tombstone: npages 0 */
	m->map_used--;
	m->map_tombs++;
}

/* The flat map and its cells (blocks.c has the rest). */

static inline bool is_flat(const struct pgtrace_analysis_priv *m, uint64_t pfn)
{
	return pfn - m->flat_lo < m->flat_span;
}

/* The cell of block @s at @pfn, in the flat map: CELL_ESC if it does not fit one. */
static inline uint64_t cell_pack(const struct pgtrace_analysis_priv *m, uint64_t pfn,
				 const struct slot *s)
{
	uint32_t z = m->leaf_zone[(pfn - m->flat_lo) >> LEAF_SHIFT];
	uint64_t np = slot_npages(s);
	bool snap = slot_snap(s);

	if (z == LEAF_MIXED || z != slot_zone(s) || !cell_fits(np, snap ? 0 : s->time_ns))
		return CELL_ESC;
	return cell_make(np, slot_order(s), snap, s->time_ns);
}

/* Cell @c at @pfn, not CELL_ESC, as a slot (a snapshot's without its time). */
static inline void cell_unpack(const struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t c,
			       struct slot *s)
{
	s->time_ns = cell_time(c);
	s->info = slot_info(1ULL << ((c & CELL_CODE_MASK) - 1), cell_order(c), cell_snap(c),
			    m->leaf_zone[(pfn - m->flat_lo) >> LEAF_SHIFT]);
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

/* The figures (apply.c). */

static inline struct pgtrace_zone_stats *zone_stats(struct pgtrace_analysis *a, uint32_t z)
{
	return z == PGTRACE_ZONE_OTHER ? &a->other_zone : &a->zone_stats[z];
}

struct pgtrace_rate_bin *pgtrace_rate_bin_slow(struct pgtrace_analysis *a, uint64_t t);

/* The rate bin of @t; in time order, mostly the one before. */
static __attribute__((always_inline)) inline struct pgtrace_rate_bin *
rate_bin(struct pgtrace_analysis *a, uint64_t t)
{
	struct pgtrace_analysis_priv *m = a->priv;

	if (likely(t >= m->bin_lo && t < m->bin_hi))
		return &a->bins[m->bin_idx];
	return pgtrace_rate_bin_slow(a, t);
}

/* The queues (merge.c). */

/*
 * How many of @n events to queue at once: near max_held, one at a time,
 * so that each one pushes the earliest out.
 */
static inline unsigned int queue_take(const struct pgtrace_analysis_priv *m, unsigned int n)
{
	uint64_t room = m->p.max_held - m->held;

	return room < n ? (unsigned int)room + 1 : n;
}

/* blocks.c: the block map. */
bool pgtrace_blk_get(struct pgtrace_analysis_priv *m, uint64_t pfn, struct slot *out);
void pgtrace_blk_del(struct pgtrace_analysis_priv *m, uint64_t pfn);
int pgtrace_blk_put(struct pgtrace_analysis_priv *m, uint64_t pfn, const struct slot *s);
bool pgtrace_find_containing(struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t *start,
			     struct slot *b);

/* apply.c: events applied and counted (and pgtrace_rate_bin_slow(), above). */
void pgtrace_life_total(struct pgtrace_analysis *a);
void pgtrace_count_run(struct pgtrace_analysis *a, const struct pgtrace_compact_event *evs,
		       unsigned int n, bool snap);
int pgtrace_apply_snapshot(struct pgtrace_analysis *a, const struct pgtrace_compact_event *evs,
			   const struct pgtrace_event *full, unsigned int n);
void pgtrace_an_mark(struct pgtrace_analysis *a);
unsigned int pgtrace_an_apply(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			      const struct pgtrace_event *full, unsigned int upto, unsigned int n,
			      int *ret);
int pgtrace_process_out(struct pgtrace_analysis *a, bool keep);
int pgtrace_apply_merged(struct pgtrace_analysis *a, const struct pgtrace_compact_event *ev,
			 unsigned int n);
void pgtrace_mark_zones(struct pgtrace_analysis *a);

/* pipe.c: the applying thread (with pgtrace_analysis_params.threads > 1). */
enum pipe_kind {
	PIPE_MERGED,		/* events in time order: pgtrace_apply_merged() */
	PIPE_SNAPSHOT,		/* a snapshot run: pgtrace_apply_snapshot() */
	PIPE_MARK,		/* the kernel's start counters: pgtrace_mark_zones() */
	PIPE_END,
};
int pgtrace_pipe_start(struct pgtrace_analysis *a);
int pgtrace_pipe_put(struct pgtrace_analysis *a, unsigned int kind,
		     const struct pgtrace_compact_event *ev, unsigned int n);
int pgtrace_pipe_mark(struct pgtrace_analysis *a);
int pgtrace_pipe_finish(struct pgtrace_analysis *a);

/* merge.c: time order. */
struct queue *pgtrace_get_queue(struct pgtrace_analysis_priv *m, uint32_t cpu);
int pgtrace_queue_room(struct pgtrace_analysis_priv *m, struct queue *q, size_t n);
int pgtrace_queue_commit(struct pgtrace_analysis *a, struct queue *q, unsigned int n);
int pgtrace_an_release(struct pgtrace_analysis *a, bool drain);

#endif
