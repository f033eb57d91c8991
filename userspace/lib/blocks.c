// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis's block map: each allocated block, or piece of one, under
 * its first PFN.  Flat over the zones' PFNs, one 8-byte cell a PFN in
 * leaves made when first written, from huge-page arenas; hashed outside
 * them, and for blocks that do not fit a cell.  The encodings, and the
 * steps that the apply loop inlines (probing, packing a cell,
 * prefetching), are in analysis.h; here is the rest: the hash map's
 * rehash and insert, new leaves, and a block's get, put and delete in
 * whichever map holds it.
 * The bottom layer: it calls nothing else of the analysis.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "analysis.h"

/* ----------------------------------------------------------- hash map */

/* Probing, and the steps of an insert and a delete, are in analysis.h. */

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

/* ----------------------------------------------------------- flat map */

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

/* The block starting at @pfn into *@out: false if there is none. */
bool pgtrace_blk_get(struct pgtrace_analysis_priv *m, uint64_t pfn, struct slot *out)
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
void pgtrace_blk_del(struct pgtrace_analysis_priv *m, uint64_t pfn)
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
int pgtrace_blk_put(struct pgtrace_analysis_priv *m, uint64_t pfn, const struct slot *s)
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

/*
 * The block holding @pfn into *@b: it starts there, or at an aligned start
 * below.  *@start gets where it starts.  False if there is none.
 */
bool pgtrace_find_containing(struct pgtrace_analysis_priv *m, uint64_t pfn, uint64_t *start,
			     struct slot *b)
{
	bool found = pgtrace_blk_get(m, pfn, b);

	*start = pfn;
	for (unsigned int k = 1; !found && k <= PGTRACE_SPLIT_ORDERS; k++) {
		uint64_t s = pfn & ~((1ULL << k) - 1);

		if (s == pfn)
			continue;
		found = pgtrace_blk_get(m, s, b);
		if (found && s + slot_npages(b) <= pfn)
			found = false;
		*start = s;
	}
	return found;
}
