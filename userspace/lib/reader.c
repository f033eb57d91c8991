// SPDX-License-Identifier: GPL-2.0
/*
 * The streaming decoder: chunk headers and the word loop.
 */
#include <errno.h>
#include <stdio.h>
#include "internal.h"

#define CHUNK_HDR	sizeof(struct pagetrace_chunk)
/* npages of a large event must also fit the PFN space it describes. */
#define LARGE_NPAGES_MAX (PAGETRACE_PFN_MAX + 1)
/* Bits of a task record's id between the tgid and PAGETRACE_ID_TASK. */
#define TASK_ID_RESERVED (~(PAGETRACE_ID_TASK | 0xffffffffULL) & \
			  (~0ULL >> PAGETRACE_ID_SHIFT))

static uint64_t cur_off(const struct pgtrace_reader *r)
{
	return r->buf_off + r->pos;
}

static int truncated_chunk(struct pgtrace_reader *r)
{
	uint64_t have = r->buf_off + r->len - r->chunk.offset;

	return pgtrace_set_error(r, -EBADMSG, r->chunk.offset,
			    "file ends inside a chunk (need %llu bytes, have %llu)",
			    (unsigned long long)(CHUNK_HDR + 8ULL * r->chunk.nr_words),
			    (unsigned long long)have);
}

/* Chunks of one CPU are stitched together only outside snapshots. */
static void end_chunk(struct pgtrace_reader *r)
{
	if (!(r->chunk.flags & PAGETRACE_CHUNK_SNAPSHOT))
		r->cpus[r->chunk.cpu].last_ns = r->last_ns;
}

/*
 * The chunk header at buf + pos (fields in r->chunk) is a symbol chunk's:
 * check it and read all its entries.  Returns 0 or an error.
 */
static int symbol_chunk(struct pgtrace_reader *r, uint32_t reserved)
{
	const struct pgtrace_chunk *c = &r->chunk;
	int ret;

	if (c->flags != PAGETRACE_CHUNK_SYMBOLS || c->cpu || c->seq || c->lost || reserved)
		return pgtrace_set_error(r, -EBADMSG, c->offset,
				    "symbol chunk has flags 0x%x cpu %u seq %llu lost %llu reserved 0x%x, expected 0x%llx and zeroes",
				    c->flags, c->cpu, (unsigned long long)c->seq,
				    (unsigned long long)c->lost, reserved,
				    (unsigned long long)PAGETRACE_CHUNK_SYMBOLS);
	if (c->nr_words < 3)
		return pgtrace_set_error(r, -EBADMSG, c->offset,
				    "symbol chunk has %u words, need at least 3 (one entry)",
				    c->nr_words);
	r->pos += CHUNK_HDR;
	r->words_left = c->nr_words;
	r->in_symbols = true;
	r->want = 8;
	r->cnt.symbol_chunks++;
	r->cnt.bytes += CHUNK_HDR + 8ULL * c->nr_words;
	while (r->words_left) {
		if (r->len - r->pos < r->want) {
			ssize_t have = pgtrace_fill(r, r->want);

			if (have < 0)
				return (int)have;
			if ((size_t)have < r->want)
				return truncated_chunk(r);
		}
		r->want = 8;
		ret = pgtrace_decode_symbols(r);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The chunk header at buf + pos (fields in r->chunk) is a counters chunk's:
 * check it and read it whole.  Returns 0 or an error.
 */
static int counters_chunk(struct pgtrace_reader *r, uint32_t reserved)
{
	const struct pgtrace_chunk *c = &r->chunk;
	size_t need = CHUNK_HDR + 8ULL * c->nr_words;
	ssize_t have;
	int ret;

	if (c->flags != PAGETRACE_CHUNK_COUNTERS || c->cpu || c->seq || c->lost || reserved)
		return pgtrace_set_error(r, -EBADMSG, c->offset,
				    "counters chunk has flags 0x%x cpu %u seq %llu lost %llu reserved 0x%x, expected 0x%llx and zeroes",
				    c->flags, c->cpu, (unsigned long long)c->seq,
				    (unsigned long long)c->lost, reserved,
				    (unsigned long long)PAGETRACE_CHUNK_COUNTERS);
	/* A struct pagetrace_rec_counters and 4096 zones at most. */
	if (c->nr_words > 4 + 4096 * 6)
		return pgtrace_set_error(r, -EBADMSG, c->offset,
				    "counters chunk has %u words, more than 4096 zones take",
				    c->nr_words);
	have = pgtrace_fill(r, need);
	if (have < 0)
		return (int)have;
	if ((size_t)have < need)
		return truncated_chunk(r);
	ret = pgtrace_parse_counters_chunk(r, r->buf + r->pos + CHUNK_HDR, c->nr_words,
					   c->offset);
	if (ret)
		return ret;
	r->pos += need;
	r->cnt.bytes += need;
	return 0;
}

/* Returns 1 with a chunk started, 0 at a clean end, or an error. */
static int start_chunk(struct pgtrace_reader *r)
{
	const struct pagetrace_header *h = &r->hdr;
	struct pgtrace_chunk *c = &r->chunk;
	struct pgtrace_cpu_state *cs;
	const unsigned char *p;
	uint64_t off, w0, w1, base, expect;
	uint32_t reserved;
	bool snap;
	ssize_t have;
	int ret;

again:
	have = pgtrace_fill(r, CHUNK_HDR + 16);
	if (have < 0)
		return have;
	if (have == 0)
		return 0;
	off = cur_off(r);
	if ((size_t)have < CHUNK_HDR)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "file ends inside a chunk header (need %zu bytes, have %zd)",
				    CHUNK_HDR, have);
	p = r->buf + r->pos;
	if (memcmp(p, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN)) {
		char m[4 * PAGETRACE_CHUNK_MAGIC_LEN + 1];

		pgtrace_escape(m, p, PAGETRACE_CHUNK_MAGIC_LEN);
		return pgtrace_set_error(r, -EBADMSG, off,
				    "chunk magic is '%s', expected '%s'", m,
				    PAGETRACE_CHUNK_MAGIC);
	}
	c->offset = off;
	c->cpu = pgtrace_load16(p + offsetof(struct pagetrace_chunk, cpu));
	c->flags = pgtrace_load16(p + offsetof(struct pagetrace_chunk, flags));
	c->nr_words = pgtrace_load32(p + offsetof(struct pagetrace_chunk, nr_words));
	reserved = pgtrace_load32(p + offsetof(struct pagetrace_chunk, reserved));
	c->seq = pgtrace_load64(p + offsetof(struct pagetrace_chunk, seq));
	c->lost = pgtrace_load64(p + offsetof(struct pagetrace_chunk, lost));
	c->missing = 0;
	snap = c->flags & PAGETRACE_CHUNK_SNAPSHOT;

	if (c->flags & PAGETRACE_CHUNK_SYMBOLS) {
		ret = symbol_chunk(r, reserved);
		if (ret)
			return ret;
		goto again;
	}
	if (c->flags & PAGETRACE_CHUNK_COUNTERS) {
		ret = counters_chunk(r, reserved);
		if (ret)
			return ret;
		goto again;
	}

	if (c->cpu >= h->nr_cpus)
		return pgtrace_set_error(r, -EBADMSG, off, "chunk cpu %u >= nr_cpus %u",
				    c->cpu, h->nr_cpus);
	if (reserved)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "chunk reserved field is 0x%x, expected 0", reserved);
	if (c->nr_words < 2)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "chunk has %u words, need at least 2 (pid, sync)",
				    c->nr_words);
	if (CHUNK_HDR + 8ULL * c->nr_words > h->chunk_size)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "chunk has %u words, more than chunk_size %u holds",
				    c->nr_words, h->chunk_size);

	cs = &r->cpus[c->cpu];
	if (snap) {
		if (c->seq)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "snapshot chunk has seq %llu, expected 0",
					    (unsigned long long)c->seq);
	} else {
		expect = cs->seen ? cs->next_seq : 0;
		if (c->seq < expect ||
		    (c->seq > expect && !(h->flags & PAGETRACE_FLAG_OVERWRITE)))
			return pgtrace_set_error(r, -EBADMSG, off,
					    "cpu %u chunk seq %llu, expected %llu",
					    c->cpu, (unsigned long long)c->seq,
					    (unsigned long long)expect);
		c->missing = c->seq - expect;
	}

	if ((size_t)have < CHUNK_HDR + 16)
		return truncated_chunk(r);
	w0 = pgtrace_load64(p + CHUNK_HDR);
	w1 = pgtrace_load64(p + CHUNK_HDR + 8);
	if (!pagetrace_word_is_pid(w0))
		return pgtrace_set_error(r, -EBADMSG, off + CHUNK_HDR,
				    "chunk word 0 is 0x%016llx, not a pid word",
				    (unsigned long long)w0);
	if (pagetrace_word_id(w0) != c->cpu)
		return pgtrace_set_error(r, -EBADMSG, off + CHUNK_HDR,
				    "chunk word 0 has id %llu, expected cpu %u",
				    (unsigned long long)pagetrace_word_id(w0), c->cpu);
	if (w1 & (PAGETRACE_TYPE_MASK | PAGETRACE_IS_PID))
		return pgtrace_set_error(r, -EBADMSG, off + CHUNK_HDR + 8,
				    "chunk word 1 is 0x%016llx, not a sync word",
				    (unsigned long long)w1);
	base = pagetrace_word_sync_ns(w1);
	if (!snap && base < cs->last_ns)
		return pgtrace_set_error(r, -EBADMSG, off + CHUNK_HDR + 8,
				    "time goes backwards on cpu %u: %llu ns after %llu ns",
				    c->cpu, (unsigned long long)base,
				    (unsigned long long)cs->last_ns);

	if (!snap) {
		cs->seen = true;
		cs->next_seq = c->seq + 1;
		if (c->missing) {
			r->cnt.seq_gaps++;
			r->cnt.missing_chunks += c->missing;
		}
	} else {
		r->cnt.snapshot_chunks++;
	}
	r->cnt.chunks++;
	r->cnt.lost += c->lost;
	r->cnt.bytes += CHUNK_HDR + 8ULL * c->nr_words;

	r->pos += CHUNK_HDR + 16;
	r->words_left = c->nr_words - 2;
	r->base_ns = base;
	r->last_ns = base;
	c->time_ns = base;
	r->task = PGTRACE_TASK_UNKNOWN;
	r->want = 8;
	/* A new generation of the ids defined in this chunk. */
	r->nr_defined = 0;
	if (!++r->chunk_gen) {
		if (r->defined_cap)
			memset(r->defined, 0, r->defined_cap * sizeof(*r->defined));
		r->chunk_gen = 1;
	}
	if (!r->words_left)
		end_chunk(r);

	if (r->chunk_cb) {
		ret = r->chunk_cb(c, r->chunk_cb_arg);
		if (ret < 0) {
			r->err = ret;
			snprintf(r->errmsg, sizeof(r->errmsg),
				 "offset %llu: stopped by the chunk callback (%d)",
				 (unsigned long long)off, ret);
			return ret;
		}
	}
	return 1;
}

/*
 * Store event @k of a decode into @out, compact or full.  Inlined into both
 * decode loops, the fast one and the careful one, with @compact constant.
 */
static __attribute__((always_inline)) inline void
put_event(void *out, unsigned int k, const bool compact, uint64_t w,
	  uint64_t t, uint64_t npages, uint64_t offset, uint64_t seq,
	  int64_t task, uint32_t cpu, uint16_t cflags, uint32_t stack)
{
	if (compact) {
		struct pgtrace_compact_event *ce = (struct pgtrace_compact_event *)out + k;

		ce->time_ns = t;
		ce->pfn = pagetrace_word_pfn(w);
		ce->npages_type = npages << 2 | (w & PAGETRACE_TYPE_MASK);
	} else {
		struct pgtrace_event *ev = (struct pgtrace_event *)out + k;

		ev->time_ns = t;
		ev->pfn = pagetrace_word_pfn(w);
		ev->npages = npages;
		ev->offset = offset;
		ev->seq = seq;
		ev->task = task;
		ev->cpu = cpu;
		ev->chunk_flags = cflags;
		ev->type = (uint8_t)(w & PAGETRACE_TYPE_MASK);
		ev->__pad = 0;
		ev->stack = stack;
		ev->__pad2 = 0;
	}
}

/*
 * A name: slices 0, 1 ... at @p, then the task record of the tgid they
 * name, which takes the name.  @navail words are in the buffer, @left in
 * the chunk.  Returns the slices taken (the task record is left to the
 * caller), 0 when the buffer must hold more first (r->want is set), or an
 * error.
 */
static int decode_name(struct pgtrace_reader *r, const unsigned char *p, uint64_t navail,
		       uint64_t left, uint64_t off)
{
	unsigned char comm[PAGETRACE_COMM_LEN] = { 0 };
	unsigned int n = 0;
	uint64_t w;

	for (;;) {
		if (n >= navail) {
			if (n >= left)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "name cut off by the end of its chunk");
			/* Its next words are not read yet. */
			r->want = 8 * (n + 1);
			return 0;
		}
		w = pgtrace_load64(p + 8 * n);
		if (n && pagetrace_word_is_task(w))
			break;
		if (!pagetrace_word_is_name(w) || pagetrace_word_name_index(w) != n) {
			if (!n)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "name slice 0x%016llx does not start a name",
						    (unsigned long long)w);
			return pgtrace_set_error(r, -EBADMSG, off + 8 * n,
					    "word 0x%016llx after name slice %u is neither its next slice nor a task record",
					    (unsigned long long)w, n - 1);
		}
		if (pagetrace_word_name_bytes(w, comm))
			return pgtrace_set_error(r, -EBADMSG, off + 8 * n,
					    "name slice 0x%016llx has bytes past the name's %u",
					    (unsigned long long)w, PAGETRACE_COMM_LEN);
		n++;
	}
	pgtrace_set_name(r, pagetrace_word_tgid(w), comm);
	return (int)n;
}

/*
 * Decode words of the current chunk that are in the buffer, up to @max
 * events.  The hot state lives in locals so the loop stays in registers;
 * it is written back once at the end.  Returns events decoded, or an error
 * (then r->err is set and events before it count as not decoded: the caller
 * returns them first via *@n).
 */
static __attribute__((always_inline)) inline int
decode_words_t(struct pgtrace_reader *r, void *out, unsigned int max, unsigned int *n,
	       const bool compact)
{
	struct pgtrace_event *evs = out;
	const unsigned char *p = r->buf + r->pos;
	uint64_t navail = (r->len - r->pos) / 8;
	uint64_t left = r->words_left;
	uint64_t base = r->base_ns, last = r->last_ns;
	uint64_t seq = r->chunk.seq;
	uint32_t cpu = r->chunk.cpu;
	uint16_t cflags = r->chunk.flags;
	int64_t task = r->task;
	unsigned int k = *n, k0 = *n, ktasks = 0;
	uint64_t i = 0, ntasks = 0;
	uint32_t stack = 0;
	int ret = 0;

	if (navail > left)
		navail = left;
	while (i < navail && k < max) {
		uint64_t w;

		/*
		 * The fast path: plain events (not large, npages > 0, in
		 * time order) in a loop with a single branch on all the
		 * checks.  Anything else leaves it for the full checks below,
		 * one word at a time.
		 */
		while (i < navail && k < max) {
			uint64_t t, np;

			w = pgtrace_load64(p + 8 * i);
			t = base + pagetrace_word_delta_ns(w);
			np = pagetrace_word_npages(w);
			if (unlikely(!((w & PAGETRACE_TYPE_MASK) != 0) |
				     ((w & PAGETRACE_LARGE) != 0) | (np == 0) | (t < last)))
				break;
			put_event(out, k, compact, w, t, np, cur_off(r) + 8 * i,
				  seq, task, cpu, cflags, 0);
			last = t;
			k++;
			i++;
		}
		if (!(i < navail && k < max))
			break;
		w = pgtrace_load64(p + 8 * i);
event:
		if (likely(w & PAGETRACE_TYPE_MASK)) {
			uint64_t npages = pagetrace_word_npages(w);
			uint64_t t = base + pagetrace_word_delta_ns(w);
			uint64_t at = i;

			if (unlikely(pagetrace_word_is_large(w))) {
				if (i + 1 >= navail) {
					if (left - i == 1) {
						ret = -EBADMSG;
						pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
							     "large event is the last word of its chunk");
						break;
					}
					/* Its npages word is not read yet. */
					r->want = 16;
					break;
				}
				if (npages) {
					ret = -EBADMSG;
					pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
						     "large event word 0x%016llx has npages field %llu, expected 0",
						     (unsigned long long)w,
						     (unsigned long long)npages);
					break;
				}
				npages = pgtrace_load64(p + 8 * (i + 1));
				if (npages <= PAGETRACE_NPAGES_MAX || npages > LARGE_NPAGES_MAX) {
					ret = -EBADMSG;
					pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
						     "large event has npages %llu, expected %llu..%llu",
						     (unsigned long long)npages,
						     PAGETRACE_NPAGES_MAX + 1,
						     (unsigned long long)LARGE_NPAGES_MAX);
					break;
				}
				i += 2;
			} else {
				if (unlikely(!npages)) {
					ret = -EBADMSG;
					pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
						     "event word 0x%016llx has npages 0",
						     (unsigned long long)w);
					break;
				}
				i++;
			}
			if (unlikely(t < last)) {
				ret = -EBADMSG;
				pgtrace_set_error(r, ret, cur_off(r) + 8 * at,
					     "time goes backwards on cpu %u: %llu ns after %llu ns",
					     cpu, (unsigned long long)t,
					     (unsigned long long)last);
				i = at;
				break;
			}
			last = t;
			put_event(out, k, compact, w, t, npages, cur_off(r) + 8 * at,
				  seq, task, cpu, cflags, stack);
			stack = 0;
			k++;
		} else if (w & PAGETRACE_IS_PID) {
			uint64_t id = pagetrace_word_id(w);

			if (pagetrace_word_is_stack(w)) {
				int got = pgtrace_decode_stack(r, p + 8 * i, navail - i, left - i,
							  cur_off(r) + 8 * i, &stack);

				if (got <= 0) {
					ret = got;
					break;
				}
				i += got;
				if (stack) {
					/* A SAMPLE: its event is in the buffer. */
					w = pgtrace_load64(p + 8 * i);
					goto event;
				}
				continue;
			}
			if (pagetrace_word_is_name(w)) {
				int got = decode_name(r, p + 8 * i, navail - i, left - i,
						      cur_off(r) + 8 * i);

				if (got <= 0) {
					ret = got;
					break;
				}
				i += got;
				continue;
			}
			if (!(id & PAGETRACE_ID_TASK) || (id & TASK_ID_RESERVED)) {
				ret = -EBADMSG;
				pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
					     "pid word 0x%016llx inside a chunk is not a task record",
					     (unsigned long long)w);
				break;
			}
			task = (int64_t)(id & 0xffffffffULL);
			ntasks++;
			if (!compact && (r->flags & PGTRACE_READER_TASKS)) {
				struct pgtrace_event *ev = &evs[k++];

				ev->time_ns = last;
				ev->pfn = 0;
				ev->npages = 0;
				ev->offset = cur_off(r) + 8 * i;
				ev->seq = seq;
				ev->task = task;
				ev->cpu = cpu;
				ev->chunk_flags = cflags;
				ev->type = PGTRACE_EV_TASK;
				ev->__pad = 0;
				ev->stack = 0;
				ev->__pad2 = 0;
				ktasks++;
			}
			i++;
		} else {
			uint64_t t = pagetrace_word_sync_ns(w);

			if (unlikely(t < last)) {
				ret = -EBADMSG;
				pgtrace_set_error(r, ret, cur_off(r) + 8 * i,
					     "time goes backwards on cpu %u: sync to %llu ns after %llu ns",
					     cpu, (unsigned long long)t,
					     (unsigned long long)last);
				break;
			}
			base = last = t;
			i++;
		}
	}

	r->pos += 8 * i;
	r->words_left = left - i;
	r->base_ns = base;
	r->last_ns = last;
	r->task = task;
	r->cnt.events += k - k0 - ktasks;
	r->cnt.tasks += ntasks;
	*n = k;
	if (!ret && !r->words_left)
		end_chunk(r);
	return ret;
}

static int decode_words(struct pgtrace_reader *r, struct pgtrace_event *evs,
			unsigned int max, unsigned int *n)
{
	return decode_words_t(r, evs, max, n, false);
}

static int decode_words_compact(struct pgtrace_reader *r, struct pgtrace_compact_event *evs,
				unsigned int max, unsigned int *n)
{
	return decode_words_t(r, evs, max, n, true);
}

int pgtrace_reader_next_batch(struct pgtrace_reader *r, struct pgtrace_event *evs, unsigned int max)
{
	unsigned int n = 0;
	int ret;

	if (r->err)
		return r->err;
	if (r->flags & PGTRACE_READER_GO)
		return pgtrace_go_next_batch(r, evs, max);
	while (n < max) {
		if (!r->words_left) {
			ret = start_chunk(r);
			if (ret <= 0)
				return n ? (int)n : ret;
			continue;
		}
		if (r->len - r->pos < r->want) {
			ssize_t have = pgtrace_fill(r, r->want);

			if (have < 0)
				return n ? (int)n : (int)have;
			if ((size_t)have < r->want) {
				ret = truncated_chunk(r);
				return n ? (int)n : ret;
			}
			r->want = 8;
		}
		ret = decode_words(r, evs, max, &n);
		if (ret)
			return n ? (int)n : ret;
	}
	return n;
}

int pgtrace_reader_next(struct pgtrace_reader *r, struct pgtrace_event *ev)
{
	return pgtrace_reader_next_batch(r, ev, 1);
}

int pgtrace_reader_peek_chunk(struct pgtrace_reader *r, const struct pgtrace_chunk **chunk)
{
	int ret;

	*chunk = &r->chunk;
	if (r->err)
		return r->err;
	if (r->flags & PGTRACE_READER_GO)
		return -EOPNOTSUPP;
	while (!r->words_left) {
		ret = start_chunk(r);
		if (ret <= 0)
			return ret;
	}
	return 1;
}

int pgtrace_reader_next_run(struct pgtrace_reader *r, struct pgtrace_compact_event *evs, unsigned int max,
		       const struct pgtrace_chunk **chunk)
{
	unsigned int n = 0;
	int ret;

	*chunk = &r->chunk;
	if (r->err)
		return r->err;
	if (r->flags & PGTRACE_READER_GO)
		return pgtrace_go_next_run(r, evs, max);
	while (n < max) {
		if (!r->words_left) {
			/* A run is one chunk's events. */
			if (n)
				break;
			ret = start_chunk(r);
			if (ret <= 0)
				return ret;
			continue;
		}
		if (r->len - r->pos < r->want) {
			ssize_t have = pgtrace_fill(r, r->want);

			if (have < 0)
				return n ? (int)n : (int)have;
			if ((size_t)have < r->want) {
				ret = truncated_chunk(r);
				return n ? (int)n : ret;
			}
			r->want = 8;
		}
		ret = decode_words_compact(r, evs, max, &n);
		if (ret)
			return n ? (int)n : ret;
	}
	return n;
}
