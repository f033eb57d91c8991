// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled call stacks: the stack words of a chunk (DEF and its FRAME
 * words, SAMPLE before a sampled allocation), the table of stack ids, the
 * symbol chunks and the stacks and filter header records.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

/* Bits of a stack word's id that each kind may use. */
#define STACK_ID_BASE	(PAGETRACE_ID_STACK | \
			 PAGETRACE_STACK_KIND_MASK << PAGETRACE_STACK_KIND_SHIFT)
#define SAMPLE_BITS	(STACK_ID_BASE | PAGETRACE_STACK_ID_MASK)
#define DEF_BITS	(STACK_ID_BASE | PAGETRACE_STACK_CUT | PAGETRACE_STACK_ID_MASK | \
			 PAGETRACE_STACK_DEPTH_MASK << PAGETRACE_STACK_DEPTH_SHIFT)
#define FRAME_BITS	(STACK_ID_BASE | PAGETRACE_STACK_ADDR_MASK)

#define ARENA_BLOCK	(64 * 1024)

struct pgtrace_arena {
	struct pgtrace_arena	*next;
	size_t		used;
	size_t		size;
	unsigned char	data[];
};

void *pgtrace_arena_alloc(struct pgtrace_arena **a, size_t n)
{
	struct pgtrace_arena *b = *a;

	n = (n + 7) & ~(size_t)7;
	if (!b || b->size - b->used < n) {
		size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->next = *a;
		b->used = 0;
		b->size = size;
		*a = b;
	}
	b->used += n;
	return b->data + b->used - n;
}

void pgtrace_arena_free(struct pgtrace_arena **a)
{
	while (*a) {
		struct pgtrace_arena *next = (*a)->next;

		free(*a);
		*a = next;
	}
}

static unsigned int hash32(uint32_t v, unsigned int cap)
{
	return (unsigned int)((v * 0x9e3779b1U) & (cap - 1));
}

static unsigned int hash64(uint64_t v, unsigned int cap)
{
	return (unsigned int)(((v * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1));
}

static struct pgtrace_stack *stack_slot(struct pgtrace_stack *t, unsigned int cap, uint32_t id)
{
	unsigned int i = hash32(id, cap);

	while (t[i].frames && t[i].id != id)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static const struct pgtrace_stack *stack_find(const struct pgtrace_reader *r, uint32_t id)
{
	const struct pgtrace_stack *s;

	if (!r->stacks_cap)
		return NULL;
	s = stack_slot(r->stacks, r->stacks_cap, id);
	return s->frames ? s : NULL;
}

static int stacks_grow(struct pgtrace_reader *r)
{
	unsigned int cap = r->stacks_cap ? 2 * r->stacks_cap : 256;
	struct pgtrace_stack *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (unsigned int i = 0; i < r->stacks_cap; i++)
		if (r->stacks[i].frames)
			*stack_slot(t, cap, r->stacks[i].id) = r->stacks[i];
	free(r->stacks);
	r->stacks = t;
	r->stacks_cap = cap;
	return 0;
}

static struct pgtrace_defined *defined_slot(struct pgtrace_defined *t, unsigned int cap,
				       uint32_t gen, uint32_t id)
{
	unsigned int i = hash32(id, cap);

	while (t[i].gen == gen && t[i].id != id)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static bool defined_in_chunk(const struct pgtrace_reader *r, uint32_t id)
{
	if (!r->defined_cap)
		return false;
	return defined_slot(r->defined, r->defined_cap, r->chunk_gen, id)->gen == r->chunk_gen;
}

/* Note @id as defined in the current chunk; at most one id per 2 words of it. */
static int defined_add(struct pgtrace_reader *r, uint32_t id)
{
	struct pgtrace_defined *d;

	if (2 * (r->nr_defined + 1) > r->defined_cap) {
		unsigned int cap = r->defined_cap ? 2 * r->defined_cap : 64;
		struct pgtrace_defined *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (unsigned int i = 0; i < r->defined_cap; i++)
			if (r->defined[i].gen == r->chunk_gen)
				*defined_slot(t, cap, r->chunk_gen, r->defined[i].id) =
					r->defined[i];
		free(r->defined);
		r->defined = t;
		r->defined_cap = cap;
	}
	d = defined_slot(r->defined, r->defined_cap, r->chunk_gen, id);
	if (d->gen != r->chunk_gen) {
		d->gen = r->chunk_gen;
		d->id = id;
		r->nr_defined++;
	}
	return 0;
}

/*
 * Keep stack @id, or check it against the frames the table has.  Returns
 * 0, 1 if it differs from its earlier definition, or -ENOMEM.
 */
static int stack_define(struct pgtrace_reader *r, uint32_t id, unsigned int depth, bool cut,
			const uint64_t *frames)
{
	struct pgtrace_stack *s = NULL;

	if (r->stacks_cap)
		s = stack_slot(r->stacks, r->stacks_cap, id);
	if (s && s->frames)
		return s->depth != depth || s->cut != cut ||
		       memcmp(s->frames, frames, depth * sizeof(*frames)) ? 1 : 0;
	if (r->cnt.stacks >= PGTRACE_READER_MAX_STACKS) {
		r->cnt.stacks_dropped++;
		return 0;
	}
	if (2 * (r->cnt.stacks + 1) > r->stacks_cap) {
		int ret = stacks_grow(r);

		if (ret)
			return ret;
	}
	s = stack_slot(r->stacks, r->stacks_cap, id);
	s->frames = pgtrace_arena_alloc(&r->arena, depth * sizeof(*frames));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, depth * sizeof(*frames));
	s->id = id;
	s->depth = (uint8_t)depth;
	s->cut = cut;
	r->cnt.stacks++;
	return 0;
}

static int decode_sample(struct pgtrace_reader *r, const unsigned char *p, uint64_t navail,
			 uint64_t left, uint64_t off, uint32_t *sample)
{
	uint64_t w = pgtrace_load64(p), ev;
	uint32_t id = pagetrace_word_stack_id(w);
	uint64_t need;

	if (pagetrace_word_id(w) & ~SAMPLE_BITS)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "SAMPLE word 0x%016llx has reserved bits set",
				    (unsigned long long)w);
	if (id && !defined_in_chunk(r, id))
		return pgtrace_set_error(r, -EBADMSG, off,
				    "SAMPLE word names stack %u, which this chunk has not defined before it",
				    id);
	if (left < 2)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "SAMPLE word is the last word of its chunk");
	if (navail < 2) {
		r->want = 16;
		return 0;
	}
	ev = pgtrace_load64(p + 8);
	if (pagetrace_word_type(ev) != PAGETRACE_EV_ALLOC)
		return pgtrace_set_error(r, -EBADMSG, off + 8,
				    "word 0x%016llx after a SAMPLE word is not an alloc event",
				    (unsigned long long)ev);
	/* The whole event must be at hand: its decode may not stop halfway. */
	need = pagetrace_word_is_large(ev) ? 3 : 2;
	if (left < need)
		return pgtrace_set_error(r, -EBADMSG, off + 8,
				    "large event is the last word of its chunk");
	if (navail < need) {
		r->want = 8 * need;
		return 0;
	}
	r->cnt.samples++;
	if (!id)
		r->cnt.samples_unknown++;
	*sample = id ? id : PGTRACE_STACK_UNKNOWN;
	return 1;
}

static int decode_def(struct pgtrace_reader *r, const unsigned char *p, uint64_t navail,
		      uint64_t left, uint64_t off)
{
	uint64_t w = pgtrace_load64(p);
	uint32_t id = pagetrace_word_stack_id(w);
	unsigned int depth = pagetrace_word_stack_depth(w), j;
	uint64_t frames[PAGETRACE_STACK_MAX_DEPTH];
	int ret;

	if (pagetrace_word_id(w) & ~DEF_BITS)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "DEF word 0x%016llx has reserved bits set",
				    (unsigned long long)w);
	if (!id)
		return pgtrace_set_error(r, -EBADMSG, off, "DEF word defines stack id 0");
	if (!depth || depth > PAGETRACE_STACK_MAX_DEPTH)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "DEF word of stack %u has depth %u, expected 1..%u",
				    id, depth, PAGETRACE_STACK_MAX_DEPTH);
	for (j = 1; j <= depth && j < navail; j++) {
		uint64_t f = pgtrace_load64(p + 8 * j);

		if (!pagetrace_word_is_stack(f) ||
		    pagetrace_word_stack_kind(f) != PAGETRACE_STACK_FRAME)
			return pgtrace_set_error(r, -EBADMSG, off + 8 * j,
					    "word 0x%016llx is not a FRAME word, but stack %u has %u frames and this is frame %u",
					    (unsigned long long)f, id, depth, j);
		if (pagetrace_word_id(f) & ~FRAME_BITS)
			return pgtrace_set_error(r, -EBADMSG, off + 8 * j,
					    "FRAME word 0x%016llx has reserved bits set",
					    (unsigned long long)f);
		frames[j - 1] = pagetrace_word_frame_addr(f);
	}
	if (j <= depth) {
		if (left < depth + 1ULL)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "stack %u has %u frames, but its chunk ends after %llu",
					    id, depth, (unsigned long long)(left - 1));
		r->want = 8 * (depth + 1);
		return 0;
	}
	ret = stack_define(r, id, depth, pagetrace_word_id(w) & PAGETRACE_STACK_CUT, frames);
	if (ret > 0)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "stack %u is defined again with other frames", id);
	if (!ret)
		ret = defined_add(r, id);
	if (ret)
		return ret;
	r->cnt.stack_defs++;
	return (int)depth + 1;
}

int pgtrace_decode_stack(struct pgtrace_reader *r, const unsigned char *p, uint64_t navail,
		    uint64_t left, uint64_t off, uint32_t *sample)
{
	uint64_t w = pgtrace_load64(p);

	if (!(r->hdr.flags & PAGETRACE_FLAG_STACKS))
		return pgtrace_set_error(r, -EBADMSG, off,
				    "stack word 0x%016llx in a trace without PAGETRACE_FLAG_STACKS",
				    (unsigned long long)w);
	switch (pagetrace_word_stack_kind(w)) {
	case PAGETRACE_STACK_SAMPLE:
		return decode_sample(r, p, navail, left, off, sample);
	case PAGETRACE_STACK_DEF:
		return decode_def(r, p, navail, left, off);
	case PAGETRACE_STACK_FRAME:
		return pgtrace_set_error(r, -EBADMSG, off,
				    "FRAME word 0x%016llx outside a stack definition",
				    (unsigned long long)w);
	}
	return pgtrace_set_error(r, -EBADMSG, off, "stack word 0x%016llx is of unknown kind 3",
			    (unsigned long long)w);
}

static struct pgtrace_sym *sym_slot(struct pgtrace_sym *t, unsigned int cap, uint64_t addr)
{
	unsigned int i = hash64(addr, cap);

	while (t[i].name && t[i].addr != addr)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* Keep an entry: 0, 1 if @addr has a name already, or -ENOMEM. */
static int sym_add(struct pgtrace_reader *r, uint64_t addr, const unsigned char *name,
		   unsigned int len, uint64_t offset)
{
	struct pgtrace_sym *s = NULL;
	char *copy;

	if (r->syms_cap)
		s = sym_slot(r->syms, r->syms_cap, addr);
	if (s && s->name)
		return 1;
	if (r->nr_syms >= PGTRACE_READER_MAX_SYMBOLS) {
		r->cnt.symbols_dropped++;
		return 0;
	}
	if (2 * (r->nr_syms + 1) > r->syms_cap) {
		unsigned int cap = r->syms_cap ? 2 * r->syms_cap : 256;
		struct pgtrace_sym *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (unsigned int i = 0; i < r->syms_cap; i++)
			if (r->syms[i].name)
				*sym_slot(t, cap, r->syms[i].addr) = r->syms[i];
		free(r->syms);
		r->syms = t;
		r->syms_cap = cap;
	}
	copy = pgtrace_arena_alloc(&r->arena, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len);
	copy[len] = '\0';
	s = sym_slot(r->syms, r->syms_cap, addr);
	s->addr = addr;
	s->name = copy;
	s->offset = offset;
	r->nr_syms++;
	return 0;
}

int pgtrace_decode_symbols(struct pgtrace_reader *r)
{
	while (r->words_left) {
		const unsigned char *p = r->buf + r->pos;
		uint64_t have = (r->len - r->pos) / 8, off = r->buf_off + r->pos;
		uint64_t addr, w1, nw, i;
		unsigned int len;
		int ret;

		if (r->words_left < 3)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "symbol entry cut off by the end of its chunk (%llu words left, need at least 3)",
					    (unsigned long long)r->words_left);
		if (have < 2) {
			r->want = 16;
			return 0;
		}
		addr = pgtrace_load64(p);
		w1 = pgtrace_load64(p + 8);
		len = (unsigned int)(w1 & PAGETRACE_SYM_LEN_MASK);
		if (w1 >> (PAGETRACE_SYM_OFFSET_SHIFT + 32))
			return pgtrace_set_error(r, -EBADMSG, off + 8,
					    "symbol entry word 0x%016llx has reserved bits 63..48 set",
					    (unsigned long long)w1);
		if (!len || len > PAGETRACE_SYM_NAME_MAX)
			return pgtrace_set_error(r, -EBADMSG, off + 8,
					    "symbol name length %u, expected 1..%u", len,
					    PAGETRACE_SYM_NAME_MAX);
		nw = (len + 7) / 8;
		if (2 + nw > r->words_left)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "symbol entry of %llu words overruns its chunk (%llu words left)",
					    (unsigned long long)(2 + nw),
					    (unsigned long long)r->words_left);
		if (have < 2 + nw) {
			r->want = 8 * (2 + nw);
			return 0;
		}
		for (i = 0; i < 8 * nw; i++) {
			unsigned char c = p[16 + i];

			if ((i < len) != (c != 0))
				return pgtrace_set_error(r, -EBADMSG, off + 16 + i,
						    i < len ? "symbol name has a NUL byte inside its length %u" :
						    "symbol name of length %u is not NUL-padded",
						    len);
		}
		ret = sym_add(r, addr, p + 16, len,
			      (w1 >> PAGETRACE_SYM_OFFSET_SHIFT) & PAGETRACE_SYM_OFFSET_MASK);
		if (ret > 0)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "address 0x%016llx is named a second time",
					    (unsigned long long)addr);
		if (ret)
			return ret;
		r->cnt.symbols++;
		r->pos += 8 * (2 + nw);
		r->words_left -= 2 + nw;
	}
	r->in_symbols = false;
	return 0;
}

int pgtrace_parse_stacks_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			uint64_t off)
{
	struct pagetrace_rec_stacks *s = &r->stacks_rec;

	if (r->has_stacks_rec)
		return pgtrace_set_error(r, -EBADMSG, off, "second stacks record");
	if (size < sizeof(*s))
		return pgtrace_set_error(r, -EBADMSG, off, "stacks record size %u, need %zu",
				    size, sizeof(*s));
	s->rate = pgtrace_load32(pl + offsetof(struct pagetrace_rec_stacks, rate));
	s->max_depth = pgtrace_load32(pl + offsetof(struct pagetrace_rec_stacks, max_depth));
	s->anchor_addr = pgtrace_load64(pl + offsetof(struct pagetrace_rec_stacks, anchor_addr));
	memcpy(s->anchor_name, pl + offsetof(struct pagetrace_rec_stacks, anchor_name),
	       sizeof(s->anchor_name));
	for (unsigned int i = 0; i < 4; i++) {
		s->reserved[i] = pgtrace_load64(pl + offsetof(struct pagetrace_rec_stacks,
							 reserved) + 8 * i);
		if (s->reserved[i])
			return pgtrace_set_error(r, -EBADMSG, off,
					    "stacks record reserved[%u] is 0x%llx, expected 0",
					    i, (unsigned long long)s->reserved[i]);
	}
	if (!s->rate)
		return pgtrace_set_error(r, -EBADMSG, off, "stacks record has rate 0");
	if (!s->max_depth || s->max_depth > PAGETRACE_STACK_MAX_DEPTH)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "stacks record max_depth %u, expected 1..%u",
				    s->max_depth, PAGETRACE_STACK_MAX_DEPTH);
	r->has_stacks_rec = true;
	return 0;
}

int pgtrace_parse_filter_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			uint64_t off)
{
	struct pagetrace_rec_filter *f = &r->filter_rec;
	const uint32_t types = 1U << PAGETRACE_EV_ALLOC | 1U << PAGETRACE_EV_FREE |
			       1U << PAGETRACE_EV_RECLAIM;

	if (r->has_filter_rec)
		return pgtrace_set_error(r, -EBADMSG, off, "second filter record");
	if (size < sizeof(*f))
		return pgtrace_set_error(r, -EBADMSG, off, "filter record size %u, need %zu",
				    size, sizeof(*f));
	f->types = pgtrace_load32(pl + offsetof(struct pagetrace_rec_filter, types));
	f->reserved0 = pgtrace_load32(pl + offsetof(struct pagetrace_rec_filter, reserved0));
	f->orders = pgtrace_load64(pl + offsetof(struct pagetrace_rec_filter, orders));
	for (unsigned int i = 0; i < PAGETRACE_FILTER_NODES / 64; i++)
		f->nodes[i] = pgtrace_load64(pl + offsetof(struct pagetrace_rec_filter, nodes) + 8 * i);
	f->cgroup_id = pgtrace_load64(pl + offsetof(struct pagetrace_rec_filter, cgroup_id));
	for (unsigned int i = 0; i < 4; i++)
		f->reserved[i] = pgtrace_load64(pl + offsetof(struct pagetrace_rec_filter,
							 reserved) + 8 * i);
	if (f->types & ~types)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "filter record types 0x%x has bits other than 0x%x",
				    f->types, types);
	if (f->reserved0 || f->reserved[0] || f->reserved[1] || f->reserved[2] ||
	    f->reserved[3])
		return pgtrace_set_error(r, -EBADMSG, off, "filter record reserved fields are not 0");
	r->has_filter_rec = true;
	return 0;
}

void pgtrace_stacks_free(struct pgtrace_reader *r)
{
	free(r->stacks);
	free(r->defined);
	free(r->syms);
	pgtrace_arena_free(&r->arena);
	r->stacks = NULL;
	r->defined = NULL;
	r->syms = NULL;
	r->stacks_cap = r->defined_cap = r->syms_cap = 0;
}

const struct pagetrace_rec_stacks *pgtrace_reader_stacks(const struct pgtrace_reader *r)
{
	return r->has_stacks_rec ? &r->stacks_rec : NULL;
}

const struct pagetrace_rec_filter *pgtrace_reader_filter(const struct pgtrace_reader *r)
{
	return r->has_filter_rec ? &r->filter_rec : NULL;
}

int pgtrace_reader_stack(const struct pgtrace_reader *r, uint32_t id, const uint64_t **frames,
		    int *cut)
{
	const struct pgtrace_stack *s = id && id != PGTRACE_STACK_UNKNOWN ? stack_find(r, id) : NULL;

	if (!s)
		return -ENOENT;
	*frames = s->frames;
	if (cut)
		*cut = s->cut;
	return s->depth;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int pgtrace_reader_stack_addrs(const struct pgtrace_reader *r, uint64_t **addrs, size_t *n)
{
	size_t total = 0, k = 0;
	uint64_t *a;

	*addrs = NULL;
	*n = 0;
	for (unsigned int i = 0; i < r->stacks_cap; i++)
		if (r->stacks[i].frames)
			total += r->stacks[i].depth;
	if (!total)
		return 0;
	a = malloc(total * sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (unsigned int i = 0; i < r->stacks_cap; i++)
		if (r->stacks[i].frames)
			for (unsigned int j = 0; j < r->stacks[i].depth; j++)
				a[k++] = r->stacks[i].frames[j];
	qsort(a, total, sizeof(*a), cmp_u64);
	k = 0;
	for (size_t i = 0; i < total; i++)
		if (!k || a[k - 1] != a[i])
			a[k++] = a[i];
	*addrs = a;
	*n = k;
	return 0;
}

const char *pgtrace_reader_symbol(const struct pgtrace_reader *r, uint64_t addr, uint64_t *offset)
{
	const struct pgtrace_sym *s;

	if (!r->syms_cap)
		return NULL;
	s = sym_slot(r->syms, r->syms_cap, addr);
	if (!s->name)
		return NULL;
	if (offset)
		*offset = s->offset;
	return s->name;
}
