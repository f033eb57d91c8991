// SPDX-License-Identifier: GPL-2.0
/*
 * pgtrace_analysis_collect() against a slow reference, on random synthetic
 * traces built to reach every path of the fast one: many CPUs and small
 * chunks (the merge, ties of equal times), more than 64 CPUs (wide merge
 * keys), zones whose edges fall inside a leaf of the flat block map, PFNs
 * outside the zones (the hash map), blocks across a zone edge, split,
 * partial and spanning frees, frees of pages never allocated, allocations
 * of allocated blocks, large and odd-sized blocks, snapshot runs, losses.
 *
 * The reference reads every event, counts them one by one, sorts the
 * others by (time, CPU) with a stable sort (what the analysis promises
 * when no event is late) and replays them on a binary tree of blocks
 * (tsearch), keeping every lifetime to compute exact percentiles.  Each
 * figure of struct pgtrace_analysis must match: counts exactly, percentiles as
 * the lower bound of the exact value's bucket (at most 1/32 below it).
 *
 * PT_REF_TRACE=FILE runs the same comparison on a trace file, e.g. the
 * benchmark's (scripts/bench/bench-decode.sh with KEEP=1).
 */
#define _GNU_SOURCE	/* tdestroy() */
#include <fcntl.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define A	PAGETRACE_EV_ALLOC
#define F	PAGETRACE_EV_FREE
#define R	PAGETRACE_EV_RECLAIM
#define ZONE_NONE	UINT32_MAX

/* ------------------------------------------------------- the reference */

struct rblock {
	uint64_t	pfn, npages, time_ns;
	unsigned int	order;
	uint32_t	zone;
	bool		snap;
};

struct rlife {
	uint64_t	*v;
	size_t		n, cap;
};

struct ref {
	struct pgtrace_zone	*zones;		/* sorted by start_pfn */
	unsigned int	nr_zones;
	uint64_t	zev[64][4], zpages[64][4], zin_use[64], zpeak[64]; /* [nr_zones]: outside */
	uint64_t	bin_ns;
	unsigned int	nr_bins;
	struct pgtrace_rate_bin bins[PGTRACE_RATE_BINS];
	uint64_t	snap_events, snap_pages;
	void		*tree;
	uint64_t	blocks, in_use, by_order[PGTRACE_LIFE_ORDERS], peak, peak_ns;
	uint64_t	unmatched_events[4], unmatched_pages[4], realloc;
	struct rlife	life[PGTRACE_LIFE_ORDERS];
	struct pgtrace_lost_site sites[PGTRACE_MAX_LOST_SITES];
	unsigned int	nr_sites;
	/* every chunk with losses: time, lost */
	uint64_t	(*lost)[2];
	size_t		nr_lost;
};

static int cmp_rblock(const void *x, const void *y)
{
	const struct rblock *a = x, *b = y;

	return a->pfn < b->pfn ? -1 : a->pfn > b->pfn;
}

static struct rblock *rfind(struct ref *r, uint64_t pfn)
{
	struct rblock key = { .pfn = pfn };
	void *p = tfind(&key, &r->tree, cmp_rblock);

	return p ? *(struct rblock **)p : NULL;
}

static void rput(struct ref *r, const struct rblock *b)
{
	struct rblock *n = malloc(sizeof(*n));

	*n = *b;
	tsearch(n, &r->tree, cmp_rblock);
	r->blocks++;
}

static void rdel(struct ref *r, struct rblock *b)
{
	tdelete(b, &r->tree, cmp_rblock);
	free(b);
	r->blocks--;
}

/* The zone of @pfn: the last (by start) zone starting at or before it. */
static uint32_t rzone(const struct ref *r, uint64_t pfn)
{
	uint32_t z = ZONE_NONE;

	for (unsigned int i = 0; i < r->nr_zones; i++)
		if (r->zones[i].start_pfn <= pfn)
			z = i;
	return z != ZONE_NONE && pfn < r->zones[z].end_pfn ? z : ZONE_NONE;
}

static unsigned int zi(const struct ref *r, uint32_t z)
{
	return z == ZONE_NONE ? r->nr_zones : z;
}

static unsigned int rorder(uint64_t np)
{
	unsigned int o = 0;

	while ((1ULL << o) < np && o < PGTRACE_LIFE_ORDERS - 1)
		o++;
	return o;
}

static void rin_use(struct ref *r, const struct rblock *b, int64_t d, uint64_t t)
{
	unsigned int z = zi(r, b->zone);

	r->in_use += d;
	r->by_order[b->order] += d;
	r->zin_use[z] += d;
	if (r->zin_use[z] > r->zpeak[z])
		r->zpeak[z] = r->zin_use[z];
	if (d > 0 && r->in_use > r->peak) {
		r->peak = r->in_use;
		r->peak_ns = t;
	}
}

static void ralloc_one(struct ref *r, uint64_t pfn, uint64_t npages, uint64_t t, bool snap)
{
	struct rblock *old = rfind(r, pfn), nb = {
		.pfn = pfn, .npages = npages, .time_ns = t,
		.order = rorder(npages), .zone = rzone(r, pfn), .snap = snap,
	};

	if (old) {
		r->realloc++;
		rin_use(r, old, -(int64_t)old->npages, t);
		rdel(r, old);
	}
	rput(r, &nb);
	rin_use(r, &nb, nb.npages, t);
}

/*
 * An allocation; a snapshot run (pages, not one block) as naturally aligned
 * pieces of at most 2^PGTRACE_SPLIT_ORDERS pages, as the analysis keeps it.
 */
static void ralloc(struct ref *r, const struct pgtrace_event *e, bool snap)
{
	uint64_t pfn = e->pfn, end = e->pfn + e->npages, len;

	if (!snap) {
		ralloc_one(r, e->pfn, e->npages, e->time_ns, false);
		return;
	}
	for (; pfn < end; pfn += len) {
		len = 1ULL << PGTRACE_SPLIT_ORDERS;
		while (pfn & (len - 1) || pfn + len > end)
			len /= 2;
		ralloc_one(r, pfn, len, e->time_ns, true);
	}
}

/*
 * Naturally aligned pieces of [from, to), as the analysis keeps them; not
 * where a block already starts (the piece's pages are then no longer in use).
 */
static void rpieces(struct ref *r, const struct rblock *b, uint64_t from, uint64_t to,
		    uint64_t t)
{
	while (from < to) {
		uint64_t len = 1;
		struct rblock nb = *b;

		while (len < (1ULL << 62) && !(from & len) && from + 2 * len <= to)
			len *= 2;
		nb.pfn = from;
		nb.npages = len;
		if (rfind(r, from))
			rin_use(r, &nb, -(int64_t)len, t);
		else
			rput(r, &nb);
		from += len;
	}
}

static void rend(struct ref *r, const struct pgtrace_event *e)
{
	uint64_t cur = e->pfn, rem = e->npages;
	bool matched = false;

	while (rem) {
		struct rblock *b = rfind(r, cur), copy;
		uint64_t end, oend;

		for (unsigned int k = 1; !b && k <= PGTRACE_SPLIT_ORDERS; k++) {
			uint64_t s = cur & ~((1ULL << k) - 1);

			if (s == cur)
				continue;
			b = rfind(r, s);
			if (b && s + b->npages <= cur)
				b = NULL;
		}
		if (!b)
			break;
		copy = *b;
		rdel(r, b);
		end = copy.pfn + copy.npages;
		oend = cur + rem < end ? cur + rem : end;
		rpieces(r, &copy, copy.pfn, cur, e->time_ns);
		rpieces(r, &copy, oend, end, e->time_ns);
		rin_use(r, &copy, -(int64_t)(oend - cur), e->time_ns);
		if (!copy.snap) {
			struct rlife *l = &r->life[copy.order];

			if (l->n == l->cap) {
				l->cap = l->cap ? 2 * l->cap : 256;
				l->v = realloc(l->v, l->cap * sizeof(*l->v));
			}
			l->v[l->n++] = e->time_ns > copy.time_ns ? e->time_ns - copy.time_ns : 0;
		}
		matched = true;
		rem -= oend - cur;
		cur = oend;
	}
	if (rem) {
		r->unmatched_pages[e->type] += rem;
		if (!matched)
			r->unmatched_events[e->type]++;
	}
}

static int cmp_zone(const void *x, const void *y)
{
	const struct pgtrace_zone *a = x, *b = y;

	return a->start_pfn < b->start_pfn ? -1 : a->start_pfn > b->start_pfn;
}

static int on_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct ref *r = arg;

	if (!c->lost)
		return 0;
	if (r->nr_sites < PGTRACE_MAX_LOST_SITES)
		r->sites[r->nr_sites++] = (struct pgtrace_lost_site){
			.offset = c->offset, .time_ns = c->time_ns, .lost = c->lost, .cpu = c->cpu,
		};
	r->lost = realloc(r->lost, (r->nr_lost + 1) * sizeof(*r->lost));
	r->lost[r->nr_lost][0] = c->time_ns;
	r->lost[r->nr_lost++][1] = c->lost;
	return 0;
}

/* Sort key of the time order: (time, cpu + 1, position in the stream). */
static const struct pgtrace_event *sort_evs;

static int cmp_order(const void *x, const void *y)
{
	const struct pgtrace_event *a = &sort_evs[*(const size_t *)x], *b = &sort_evs[*(const size_t *)y];
	uint32_t ca = a->cpu + 1U, cb = b->cpu + 1U;

	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

static uint64_t rbin_idx(uint64_t t, uint64_t origin, uint64_t w)
{
	return t < origin ? 0 : (t - origin) / w;
}

static void rbin_add(struct ref *r, uint64_t t, uint64_t origin, unsigned int type,
		     uint64_t np, uint64_t lost)
{
	uint64_t i = rbin_idx(t, origin, r->bin_ns);

	if (i + 1 > r->nr_bins)
		r->nr_bins = (unsigned int)i + 1;
	r->bins[i].events[type] += !!type;
	r->bins[i].pages[type] += type ? np : 0;
	r->bins[i].lost += lost;
}

/* Everything the reference computes, from a stream in memory; 0 or an error. */
static int ref_run(struct ref *r, const void *buf, size_t len, unsigned int flags)
{
	struct pgtrace_event *evs = NULL;
	const struct pgtrace_zone *z;
	struct pgtrace_reader *rd;
	size_t n = 0, cap = 0, nsorted = 0, *idx;
	uint64_t origin, maxrel = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = pgtrace_reader_open_mem(&rd, buf, len, flags);
	if (ret)
		return ret;
	r->nr_zones = pgtrace_reader_zones(rd, &z);
	if (r->nr_zones >= 64)
		return -E2BIG;
	r->zones = malloc((r->nr_zones + 1) * sizeof(*r->zones));
	if (r->nr_zones)
		memcpy(r->zones, z, r->nr_zones * sizeof(*z));
	qsort(r->zones, r->nr_zones, sizeof(*r->zones), cmp_zone);
	origin = pgtrace_reader_header(rd)->start_ns;
	pgtrace_reader_set_chunk_cb(rd, on_chunk, r);
	for (;;) {
		if (n + 256 > cap) {
			cap = 2 * (n + 256);
			evs = realloc(evs, cap * sizeof(*evs));
		}
		ret = pgtrace_reader_next_batch(rd, evs + n, 256);
		if (ret <= 0)
			break;
		n += ret;
	}
	pgtrace_reader_close(rd);
	if (ret)
		return ret;

	/* Counts, in stream order. */
	for (size_t i = 0; i < n; i++) {
		const struct pgtrace_event *e = &evs[i];
		unsigned int zz = zi(r, rzone(r, e->pfn));

		r->zev[zz][e->type]++;
		r->zpages[zz][e->type] += e->npages;
		if (e->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) {
			if (e->type == A) {
				r->snap_events++;
				r->snap_pages += e->npages;
			}
		} else if (e->time_ns >= origin && e->time_ns - origin > maxrel) {
			maxrel = e->time_ns - origin;
		}
	}
	for (size_t i = 0; i < r->nr_lost; i++)
		if (r->lost[i][0] >= origin && r->lost[i][0] - origin > maxrel)
			maxrel = r->lost[i][0] - origin;
	/* The bins: 1 ms, doubled until the last time fits 1024 of them. */
	for (r->bin_ns = 1000000; maxrel / r->bin_ns >= PGTRACE_RATE_BINS; r->bin_ns *= 2)
		;
	for (size_t i = 0; i < n; i++)
		if (!(evs[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT))
			rbin_add(r, evs[i].time_ns, origin, evs[i].type, evs[i].npages, 0);
	for (size_t i = 0; i < r->nr_lost; i++)
		rbin_add(r, r->lost[i][0], origin, 0, 0, r->lost[i][1]);

	/* Snapshot events first, as they come; then the rest in time order. */
	idx = malloc((n + 1) * sizeof(*idx));
	for (size_t i = 0; i < n; i++) {
		if (evs[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) {
			if (evs[i].type == A)
				ralloc(r, &evs[i], true);
			else
				rend(r, &evs[i]);
		} else {
			idx[nsorted++] = i;
		}
	}
	sort_evs = evs;
	qsort(idx, nsorted, sizeof(*idx), cmp_order);
	for (size_t i = 0; i < nsorted; i++) {
		const struct pgtrace_event *e = &evs[idx[i]];

		if (e->type == A)
			ralloc(r, e, false);
		else
			rend(r, e);
	}
	free(idx);
	free(evs);
	return 0;
}

static void ref_free(struct ref *r)
{
	tdestroy(r->tree, free);
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++)
		free(r->life[o].v);
	free(r->zones);
	free(r->lost);
}

/* The documented buckets: exact below 64 steps of 128 ns, then 32 an octave. */
static unsigned int rbucket(uint64_t ns)
{
	uint64_t u = ns >> 7;
	unsigned int e = 0;

	if (u < 64)
		return (unsigned int)u;
	while (u >> (e + 1))
		e++;
	return 64 + (e - 6) * 32 + (unsigned int)((u >> (e - 5)) & 31);
}

static uint64_t rbucket_floor(uint64_t ns)
{
	uint64_t u = ns >> 7;
	unsigned int e = 0;

	if (u < 64)
		return u << 7;
	while (u >> (e + 1))
		e++;
	return (u >> (e - 5) << (e - 5)) << 7;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* ---------------------------------------------------------- comparing */

#define SAME(what, got, exp) do {						\
	uint64_t g_ = (got), e_ = (exp);					\
	if (g_ != e_) {								\
		TH_LOG("%s: got %llu, reference %llu", what,			\
		       (unsigned long long)g_, (unsigned long long)e_);	\
		bad++;								\
	}									\
} while (0)

/* Lifetimes of one order (or all: @vals merged) against a histogram. */
static int cmp_life(struct __test_metadata *_metadata, const char *what,
		    const struct pgtrace_life_hist *h, uint64_t *v, size_t n)
{
	static const double pcts[] = { 0, 1, 25, 50, 90, 99, 99.9, 100 };
	uint64_t *buckets = calloc(PGTRACE_LIFE_BUCKETS, sizeof(*buckets)), sum = 0;
	int bad = 0;

	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		buckets[rbucket(v[i])]++;
		sum += v[i];
	}
	SAME(what, h->count, n);
	SAME(what, h->sum_ns, sum);
	if (n) {
		SAME(what, h->min_ns, v[0]);
		SAME(what, h->max_ns, v[n - 1]);
	}
	for (unsigned int b = 0; b < PGTRACE_LIFE_BUCKETS; b++)
		SAME(what, h->buckets[b], buckets[b]);
	for (size_t k = 0; n && k < ARRAY_SIZE(pcts); k++) {
		double x = pcts[k] / 100.0 * (double)n;
		size_t rank = (size_t)x + ((double)(size_t)x < x);
		uint64_t exact = v[(rank ? rank : 1) - 1], floor = rbucket_floor(exact);
		uint64_t got = pgtrace_life_percentile(h, pcts[k]);

		floor = floor < v[0] ? v[0] : floor;
		SAME(what, got, floor);
		/* The documented precision: at most 1/32 below. */
		if (got > exact || exact - got > exact / 32) {
			TH_LOG("%s p%g: %llu for %llu", what, pcts[k], (unsigned long long)got,
			       (unsigned long long)exact);
			bad++;
		}
	}
	free(buckets);
	return bad;
}

/* Every figure of @a against the reference @r; returns how many differ. */
static int compare(struct __test_metadata *_metadata, const struct pgtrace_analysis *a,
		   struct ref *r, const void *buf, size_t len, unsigned int flags)
{
	struct pgtrace_reader *rd;
	struct pgtrace_stats s;
	uint64_t *all = NULL;
	size_t nall = 0;
	int bad = 0;

	/* The plain counts: pgtrace_stats_collect() is the reference. */
	if (pgtrace_reader_open_mem(&rd, buf, len, flags) || pgtrace_stats_collect(rd, &s))
		return 1;
	pgtrace_reader_close(rd);
	SAME("events", a->stats.events, s.events);
	for (int t = 1; t <= 3; t++) {
		SAME("by_type", a->stats.by_type[t], s.by_type[t]);
		SAME("pages_by_type", a->stats.pages_by_type[t], s.pages_by_type[t]);
	}
	for (int o = 0; o <= PGTRACE_STATS_MAX_ORDER; o++)
		SAME("by_order", a->stats.by_order[o], s.by_order[o]);
	SAME("other_order", a->stats.other_order, s.other_order);
	SAME("chunks", a->stats.chunks, s.chunks);
	SAME("lost", a->stats.lost, s.lost);
	SAME("first_ns", a->stats.first_ns, s.first_ns);
	SAME("last_ns", a->stats.last_ns, s.last_ns);
	SAME("nr_cpus", a->stats.nr_cpus, s.nr_cpus);
	for (unsigned int c = 0; c < s.nr_cpus && c < a->stats.nr_cpus; c++) {
		SAME("cpu events", a->stats.cpus[c].events, s.cpus[c].events);
		SAME("cpu chunks", a->stats.cpus[c].chunks, s.cpus[c].chunks);
		SAME("cpu lost", a->stats.cpus[c].lost, s.cpus[c].lost);
	}
	pgtrace_stats_free(&s);

	SAME("nr_zones", a->nr_zones, r->nr_zones);
	for (unsigned int z = 0; z <= r->nr_zones && a->nr_zones == r->nr_zones; z++) {
		const struct pgtrace_zone_stats *zs = z < a->nr_zones ? &a->zone_stats[z] : &a->other_zone;

		if (z < a->nr_zones)
			SAME("zone start", a->zones[z].start_pfn, r->zones[z].start_pfn);
		for (int t = 1; t <= 3; t++) {
			SAME("zone events", zs->events[t], r->zev[z][t]);
			SAME("zone pages", zs->pages[t], r->zpages[z][t]);
		}
		SAME("zone in_use", zs->in_use, r->zin_use[z]);
		SAME("zone peak_in_use", zs->peak_in_use, r->zpeak[z]);
	}
	SAME("bin_ns", a->bin_ns, r->bin_ns);
	SAME("nr_bins", a->nr_bins, r->nr_bins);
	for (unsigned int i = 0; i < r->nr_bins && i < PGTRACE_RATE_BINS; i++) {
		for (int t = 1; t <= 3; t++) {
			SAME("bin events", a->bins[i].events[t], r->bins[i].events[t]);
			SAME("bin pages", a->bins[i].pages[t], r->bins[i].pages[t]);
		}
		SAME("bin lost", a->bins[i].lost, r->bins[i].lost);
	}
	SAME("nr_lost_sites", a->nr_lost_sites, r->nr_sites);
	for (unsigned int i = 0; i < r->nr_sites && i < a->nr_lost_sites; i++) {
		SAME("lost site offset", a->lost_sites[i].offset, r->sites[i].offset);
		SAME("lost site lost", a->lost_sites[i].lost, r->sites[i].lost);
		SAME("lost site time", a->lost_sites[i].time_ns, r->sites[i].time_ns);
	}
	SAME("snapshot_events", a->snapshot_events, r->snap_events);
	SAME("snapshot_pages", a->snapshot_pages, r->snap_pages);

	SAME("in_use", a->in_use, r->in_use);
	SAME("in_use_blocks", a->in_use_blocks, r->blocks);
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++)
		SAME("in_use_by_order", a->in_use_by_order[o], r->by_order[o]);
	SAME("peak_in_use", a->peak_in_use, r->peak);
	SAME("peak_ns", a->peak_ns, r->peak_ns);
	for (int t = 2; t <= 3; t++) {
		SAME("unmatched_events", a->unmatched_events[t], r->unmatched_events[t]);
		SAME("unmatched_pages", a->unmatched_pages[t], r->unmatched_pages[t]);
	}
	SAME("realloc_events", a->realloc_events, r->realloc);
	SAME("late_events", a->late_events, 0);
	for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++) {
		char what[32];

		snprintf(what, sizeof(what), "lifetimes of order %u", o);
		bad += cmp_life(_metadata, what, &a->life[o], r->life[o].v, r->life[o].n);
		all = realloc(all, (nall + r->life[o].n + 1) * sizeof(*all));
		if (r->life[o].n)
			memcpy(all + nall, r->life[o].v, r->life[o].n * sizeof(*all));
		nall += r->life[o].n;
	}
	bad += cmp_life(_metadata, "all lifetimes", &a->life_all, all, nall);
	free(all);
	return bad;
}

/* ---------------------------------------------------- the random traces */

/*
 * Zones with edges inside leaves of 1024 PFNs, a hole between the last
 * two; PFNs below, in the hole and above are in no zone, and those below
 * 0x1000 and from 0x80000 on are outside the flat map.
 */
static const struct pgtrace_zone zones[] = {
	{ .node = 0, .zone = 0, .start_pfn = 0x1000, .end_pfn = 0x1a00,
	  .present_pages = 0xa00, .name = "DMA" },
	{ .node = 0, .zone = 1, .start_pfn = 0x1a00, .end_pfn = 0x40100,
	  .present_pages = 0x3e700, .name = "DMA32" },
	{ .node = 1, .zone = 2, .start_pfn = 0x40400, .end_pfn = 0x80000,
	  .present_pages = 0x3fc00, .name = "Normal" },
};

/* Where allocations go: [lo, hi) */
static const uint64_t areas[][2] = {
	{ 0x1000, 0x1a00 }, { 0x1a00, 0x3000 }, { 0x3f000, 0x40100 },
	{ 0x40100, 0x40400 }, { 0x40400, 0x42000 }, { 0x7f000, 0x80000 },
	{ 0x19c0, 0x1a40 }, { 0x400f0, 0x40410 },	/* across zone edges */
	{ 0xc00, 0x1040 }, { 0x7ffc0, 0x80800 },	/* across the flat map's */
	{ 0x300000, 0x301000 },				/* far outside */
};

struct live {
	uint64_t	pfn, np;
	unsigned int	cpu;
};

static uint64_t gen_npages(uint64_t *st)
{
	uint64_t x = synth_rand(st) % 1000;

	if (x < 5)
		return 1024 + synth_rand(st) % 3000;	/* large, any size */
	if (x < 20)
		return 3 + 2 * (synth_rand(st) % 4);	/* odd sizes */
	if (x < 60)
		return 1ULL << (4 + synth_rand(st) % 7);
	return 1ULL << (synth_rand(st) % 4);
}

/*
 * @nev random events on @ncpu CPUs, with the first @nr_zones of zones[]
 * in the header: allocations, frees (whole, partial,
 * spanning, of nothing), reclaims, reallocations; equal times often, the
 * time moving on in steps of 0..2 x 128 ns (and with @gaps, now and then
 * by up to a millisecond); chunks of @chunk bytes flushed at random.
 */
static void gen(struct synth *s, uint64_t seed, unsigned int ncpu, unsigned int nev,
		unsigned int chunk, bool snapshot, unsigned int nr_zones, bool gaps)
{
	struct live *live = calloc(nev + 64, sizeof(*live));
	uint64_t st = seed * 2654435761ULL + 1, t = SEC;
	unsigned int nlive = 0;

	synth_init_zones(s, ncpu, chunk, snapshot ? PAGETRACE_FLAG_SNAPSHOT : 0, zones, nr_zones);
	if (snapshot) {
		/* Runs in use at the start, some across zone edges. */
		synth_snapshot(s, 0);
		synth_event(s, 0, SEC / 2, A, 0x1800, 0x400);
		synth_event(s, 0, SEC / 2, A, 0x20000, 5000);
		synth_event(s, 0, SEC / 2, A, 0x40000, 0x800);
		synth_event(s, 0, SEC / 2, A, 0x300800, 64);
		synth_event(s, 0, SEC / 2, A, 0x60001, 3);
		live[nlive++] = (struct live){ 0x1800, 0x400, 0 };
		live[nlive++] = (struct live){ 0x20000, 5000, 0 };
		live[nlive++] = (struct live){ 0x40000, 0x800, 0 };
		live[nlive++] = (struct live){ 0x300800, 64, 0 };
		synth_flush(s, 0, 0);
	}
	for (unsigned int i = 0; i < nev; i++) {
		uint64_t x = synth_rand(&st), y = synth_rand(&st);
		unsigned int cpu = x % ncpu, what = (x >> 16) % 100;

		t += 128 * ((x >> 8) % 3);
		if (gaps && (x >> 56) % 32 == 0)
			t += 128 * ((y >> 4) % 8000);
		if (what < 45 || !nlive) {
			const uint64_t *ar = areas[(y >> 8) % (ARRAY_SIZE(areas))];
			uint64_t np = gen_npages(&st), pfn;

			pfn = ar[0] + (y >> 24) % (ar[1] - ar[0]);
			if (!(np & (np - 1)))
				pfn &= ~(np - 1);
			if (what < 3 && nlive)	/* over a block in use: a lost free */
				pfn = live[y % nlive].pfn;
			synth_event(s, cpu, t, A, pfn, np);
			live[nlive++] = (struct live){ pfn, np, cpu };
		} else if (what < 90) {
			unsigned int j = y % nlive;
			struct live b = live[j];
			unsigned int type = (y >> 40) % 8 ? F : R;

			live[j] = live[--nlive];
			/* Freed mostly on another CPU, maybe a little earlier. */
			cpu = (y >> 32) % 4 ? (b.cpu + 1 + (y >> 12) % ncpu) % ncpu : b.cpu;
			if (what < 80) {
				synth_event(s, cpu, t - 128 * ((y >> 20) % 2), type, b.pfn, b.np);
			} else if (what < 86) {
				/* A part: pages at an offset, aligned like split_page(). */
				uint64_t k = (y >> 24) % (b.np > 1 ? b.np : 1);
				uint64_t len = 1ULL << ((y >> 44) % 3);

				synth_event(s, cpu, t, type, b.pfn + k, len);
				if (k)	/* the rest stays, as its own block */
					live[nlive++] = (struct live){ b.pfn, k, b.cpu };
			} else {
				/* Past its end, over whatever follows. */
				synth_event(s, cpu, t, type, b.pfn, b.np + (y >> 24) % 40);
			}
		} else {
			/* Pages never allocated (or long gone). */
			const uint64_t *ar = areas[(y >> 8) % (ARRAY_SIZE(areas))];

			synth_event(s, cpu, t, (y >> 40) % 2 ? F : R,
				    ar[0] + (y >> 24) % (ar[1] - ar[0]), 1 + (y >> 50) % 4);
		}
		if ((x >> 40) % 97 == 0)
			s->cpus[cpu].lost += 1 + (x >> 48) % 9;
		if ((x >> 24) % 61 == 0)
			synth_flush(s, (x >> 32) % ncpu, PAGETRACE_CHUNK_FLUSHED);
	}
	synth_flush_all(s);
	free(live);
}

struct hook_sum {
	uint64_t	events, plus, minus, last_t;
	bool		ordered;
};

static int sum_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct hook_sum *h = arg;

	(void)a;
	if (!(ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)) {
		h->ordered &= ev->time_ns >= h->last_t;
		h->last_t = ev->time_ns;
	}
	h->events++;
	return 0;
}

static void sum_change(uint64_t t, uint64_t pfn, uint64_t npages, int sign,
		       unsigned int order, void *arg)
{
	struct hook_sum *h = arg;

	(void)t;
	(void)pfn;
	(void)order;
	*(sign > 0 ? &h->plus : &h->minus) += npages;
}

static int collect(const void *buf, size_t len, unsigned int flags, struct pgtrace_analysis *a,
		   const struct pgtrace_analysis_params *p)
{
	struct pgtrace_reader *r;
	int ret = pgtrace_reader_open_mem(&r, buf, len, flags);

	if (ret)
		return ret;
	ret = pgtrace_analysis_collect(r, a, p);
	pgtrace_reader_close(r);
	return ret;
}

/*
 * The fast path, the path with hooks (full events, the same merge) and the
 * unordered counts, all against one reference.
 */
static void check_trace(struct __test_metadata *_metadata, const void *buf, size_t len,
			bool hooks)
{
	struct hook_sum h = { .ordered = true };
	struct pgtrace_analysis_params hp = { .event = sum_event, .change = sum_change, .arg = &h };
	struct pgtrace_analysis_params qp = { .flags = PGTRACE_ANALYSIS_UNORDERED };
	struct pgtrace_analysis a, b, q;
	struct ref r;

	ASSERT_EQ(0, ref_run(&r, buf, len, 0));
	ASSERT_EQ(0, collect(buf, len, 0, &a, NULL));
	EXPECT_EQ(0, compare(_metadata, &a, &r, buf, len, 0));
	if (hooks) {
		ASSERT_EQ(0, collect(buf, len, 0, &b, &hp));
		EXPECT_EQ(0, compare(_metadata, &b, &r, buf, len, 0));
		EXPECT_TRUE(h.ordered);
		EXPECT_EQ(a.stats.events, h.events);
		EXPECT_EQ(a.in_use, h.plus - h.minus);
		pgtrace_analysis_free(&b);
	}
	ASSERT_EQ(0, collect(buf, len, 0, &q, &qp));
	for (unsigned int z = 0; z < a.nr_zones; z++) {
		EXPECT_EQ(0, memcmp(a.zone_stats[z].events, q.zone_stats[z].events,
				    sizeof(a.zone_stats[z].events)));
		EXPECT_EQ(0, memcmp(a.zone_stats[z].pages, q.zone_stats[z].pages,
				    sizeof(a.zone_stats[z].pages)));
	}
	EXPECT_EQ(0, memcmp(a.other_zone.events, q.other_zone.events, sizeof(a.other_zone.events)));
	EXPECT_EQ(a.nr_bins, q.nr_bins);
	EXPECT_EQ(0, memcmp(a.bins, q.bins, a.nr_bins * sizeof(*a.bins)));
	EXPECT_EQ(a.snapshot_pages, q.snapshot_pages);
	pgtrace_analysis_free(&q);
	pgtrace_analysis_free(&a);
	ref_free(&r);
}

/* A random trace of gen(), checked (through the hooks too, with @hooks). */
static void check_random(struct __test_metadata *_metadata, uint64_t seed, unsigned int ncpu,
			 unsigned int nev, unsigned int chunk, bool snapshot,
			 unsigned int nr_zones, bool hooks, bool gaps)
{
	struct synth s;

	gen(&s, seed, ncpu, nev, chunk, snapshot, nr_zones, gaps);
	check_trace(_metadata, s.buf, s.len, hooks);
	synth_free(&s);
}

/* Few CPUs, not a power of two; chunks of a few dozen events. */
TEST(random_5_cpus)
{
	for (uint64_t seed = 1; seed <= 4; seed++)
		check_random(_metadata, seed, 5, 30000, 512, seed % 2, 3, true, false);
}

/* One CPU: nothing to merge, every tie in stream order. */
TEST(random_1_cpu)
{
	check_random(_metadata, 11, 1, 20000, 1024, true, 3, true, false);
}

/* More CPUs than 64: the merge's wide keys. */
TEST(random_70_cpus)
{
	check_random(_metadata, 7, 70, 40000, 512, true, 3, true, false);
}

/* Big chunks: long runs of one CPU, the merge held back for the others. */
TEST(random_big_chunks)
{
	check_random(_metadata, 3, 8, 60000, 65536, false, 3, false, false);
}

/*
 * Gaps in time: releases that span too long for the counting sort go
 * through the loser tree, between others that do not (each path must
 * take the queues as the other left them).
 */
TEST(random_gaps)
{
	for (uint64_t seed = 21; seed <= 23; seed++)
		check_random(_metadata, seed, 6, 40000, 1024, seed % 2, 3, false, true);
}

/*
 * Equal times on two CPUs, across chunks: CPU 0 allocates at T in its
 * second chunk, after CPU 1's chunk with the free at T came.  CPU order
 * puts the allocation first, so nothing at T may go before CPU 0's next
 * chunk (or the end) says it has no more events at T.
 */
TEST(ties_across_chunks)
{
	struct pgtrace_analysis a;
	struct ref r;
	struct synth s;
	uint64_t t = SEC + 100 * 128;

	synth_init_zones(&s, 2, 4096, 0, zones, 3);
	synth_event(&s, 0, t - 128, A, 0x2000, 1);
	synth_event(&s, 0, t, A, 0x3000, 1);
	synth_flush(&s, 0, 0);
	synth_event(&s, 1, t - 256, A, 0x4000, 1);
	synth_event(&s, 1, t, F, 0x2000, 1);
	synth_event(&s, 1, t, F, 0x5000, 1);
	synth_flush(&s, 1, 0);
	synth_event(&s, 0, t, A, 0x5000, 1);
	synth_event(&s, 0, t + 128, A, 0x6000, 1);
	synth_flush_all(&s);
	check_trace(_metadata, s.buf, s.len, true);
	ASSERT_EQ(0, ref_run(&r, s.buf, s.len, 0));
	EXPECT_EQ(0, r.unmatched_events[F]);
	ASSERT_EQ(0, collect(s.buf, s.len, 0, &a, NULL));
	EXPECT_EQ(0, a.unmatched_events[F]);
	EXPECT_EQ(2, a.life_all.count);
	EXPECT_EQ(3, a.in_use);
	pgtrace_analysis_free(&a);
	ref_free(&r);
	synth_free(&s);
}

/* No zone records: no flat map, every block in the hash map. */
TEST(random_no_zones)
{
	check_random(_metadata, 5, 4, 30000, 512, true, 0, true, false);
}

/* A trace file, if PT_REF_TRACE names one (no hooks: big traces are slow). */
TEST(trace_file)
{
	const char *path = getenv("PT_REF_TRACE");
	struct stat st;
	void *buf;
	int fd;

	if (!path)
		SKIP(return, "PT_REF_TRACE not set");
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &st));
	buf = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	check_trace(_metadata, buf, st.st_size, false);
	munmap(buf, st.st_size);
	close(fd);
}

TEST_HARNESS_MAIN
