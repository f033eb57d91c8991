// SPDX-License-Identifier: GPL-2.0
/*
 * The Go runtime's page trace (runtime/pagetrace.go, GOEXPERIMENT=pagetrace):
 * the words of the v1 stream without the file and chunk headers.  The
 * runtime writes whole per-P buffers of up to 32 KiB; each starts with a
 * pid word and a sync word.  Nothing else marks a buffer boundary, so the
 * words must be decoded in order (the second word of a large event may
 * look like anything, a pid word included).
 *
 * What the runtime guarantees, and so what is checked:
 * - the file is whole words, the first one a pid word;
 * - every pid word holds a P id from -1 up (sign-extended int32), and is
 *   followed by a sync word;
 * - a sync word inside a buffer comes only once the delta would overflow:
 *   its time is at least 2^23 ns past the previous one;
 * - events have npages >= 1, or the large bit, npages field 0, and a next
 *   word of at least 1024 pages (and at most the 2^35 pages of a 48-bit
 *   address space).
 * Event times are not checked for order: callers of pageTraceAlloc() may
 * pass a timestamp taken before an event already logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

#define GO_PAGE_SHIFT	13
#define GO_BUF_SIZE	(32U << 10)
#define GO_NPAGES_MAX	(1ULL << (48 - GO_PAGE_SHIFT))

static uint64_t cur_off(const struct pgtrace_reader *r)
{
	return r->buf_off + r->pos;
}

/* The P id of a pid word: the runtime shifts a sign-extended int32 left by 3. */
static int64_t go_pid(uint64_t w)
{
	return (int64_t)w >> PAGETRACE_ID_SHIFT;
}

static struct pgtrace_cpu_state *go_state(struct pgtrace_reader *r, int64_t pid)
{
	unsigned int i = (unsigned int)(pid + 1), nr;
	struct pgtrace_cpu_state *n;

	if (i < r->nr_cpu_states)
		return &r->cpus[i];
	nr = i + 1 > 2 * r->nr_cpu_states ? i + 1 : 2 * r->nr_cpu_states;
	n = realloc(r->cpus, nr * sizeof(*n));
	if (!n)
		return NULL;
	memset(n + r->nr_cpu_states, 0, (nr - r->nr_cpu_states) * sizeof(*n));
	r->cpus = n;
	r->nr_cpu_states = nr;
	return &r->cpus[i];
}

int pgtrace_go_open(struct pgtrace_reader *r)
{
	struct pagetrace_header *h = &r->hdr;
	ssize_t have;

	memcpy(h->magic, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN);
	h->version = PAGETRACE_VERSION;
	h->header_size = 0;
	h->page_shift = GO_PAGE_SHIFT;
	h->time_lost_bits = PAGETRACE_TIME_LOST_BITS;
	h->time_delta_bits = PAGETRACE_TIME_DELTA_BITS;
	h->nr_cpus = 0;
	h->chunk_size = GO_BUF_SIZE;
	h->flags = PAGETRACE_CLOCK_MONOTONIC;
	if (!go_state(r, -1))
		return -ENOMEM;
	/* Peek for the start time; decoding starts at offset 0 and checks. */
	have = pgtrace_fill(r, 16);
	if (have < 0)
		return have;
	if (have >= 16) {
		uint64_t w1 = pgtrace_load64(r->buf + r->pos + 8);

		if (!(w1 & (PAGETRACE_TYPE_MASK | PAGETRACE_IS_PID)))
			h->start_ns = pagetrace_word_sync_ns(w1);
	}
	h->start_mono_ns = h->start_ns;
	return 0;
}

/* A buffer starts: @w is its pid word at @off, @w1 the word after it. */
static int go_start_buffer(struct pgtrace_reader *r, uint64_t off, uint64_t w, uint64_t w1)
{
	int64_t pid = go_pid(w);
	struct pgtrace_chunk *c = &r->chunk;
	struct pgtrace_cpu_state *cs;

	if (pid < -1 || pid >= (int64_t)PGTRACE_GO_MAX_P)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "pid word 0x%016llx has P id %lld, expected -1..%u",
				    (unsigned long long)w, (long long)pid, PGTRACE_GO_MAX_P - 1);
	if (w1 & (PAGETRACE_TYPE_MASK | PAGETRACE_IS_PID))
		return pgtrace_set_error(r, -EBADMSG, off + 8,
				    "word 0x%016llx after a pid word is not a sync word",
				    (unsigned long long)w1);
	cs = go_state(r, pid);
	if (!cs)
		return pgtrace_set_error(r, -ENOMEM, off, "out of memory");
	if (pid >= (int64_t)r->hdr.nr_cpus)
		r->hdr.nr_cpus = (uint32_t)pid + 1;
	memset(c, 0, sizeof(*c));
	c->offset = off;
	c->cpu = pid < 0 ? PGTRACE_CPU_NONE : (uint32_t)pid;
	c->seq = cs->next_seq++;
	c->time_ns = pagetrace_word_sync_ns(w1);
	r->base_ns = r->last_ns = c->time_ns;
	r->cnt.chunks++;
	/* Buffers are counted as they start: their length is not known. */
	r->words_left = 1;
	if (r->chunk_cb) {
		int ret = r->chunk_cb(c, r->chunk_cb_arg);

		if (ret < 0) {
			r->err = ret;
			snprintf(r->errmsg, sizeof(r->errmsg),
				 "offset %llu: stopped by the chunk callback (%d)",
				 (unsigned long long)off, ret);
			return ret;
		}
	}
	return 0;
}

/* Where go_decode() may stop before it has @max events. */
enum go_stop {
	GO_ACROSS_BUFFERS,	/* never: decode across buffers */
	GO_BUFFER_END,		/* at a buffer's end, once it has events */
	GO_ANY_BUFFER_END,	/* at a buffer's end, even with none */
};

static int go_decode(struct pgtrace_reader *r, struct pgtrace_event *evs, unsigned int max,
		     enum go_stop stop)
{
	unsigned int n = 0;
	int ret = 0;

	while (n < max) {
		const unsigned char *p;
		uint64_t w, off, npages;
		size_t have;
		ssize_t got;

		/* Two words: a pid word's sync word, a large event's npages. */
		got = pgtrace_fill(r, 16);
		if (got < 0) {
			ret = (int)got;
			break;
		}
		have = (size_t)got;
		off = cur_off(r);
		if (!have)
			break;
		if (have < 8) {
			ret = pgtrace_set_error(r, -EBADMSG, off,
					   "file ends inside a word (%zu bytes left)", have);
			break;
		}
		p = r->buf + r->pos;
		w = pgtrace_load64(p);
		if (pagetrace_word_is_pid(w)) {
			if (stop == GO_ANY_BUFFER_END || (n && stop == GO_BUFFER_END))
				break;
			if (have < 16) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "file ends after a pid word, expected a sync word");
				break;
			}
			ret = go_start_buffer(r, off, w, pgtrace_load64(p + 8));
			if (ret)
				break;
			r->pos += 16;
			r->cnt.bytes += 16;
			continue;
		}
		if (!r->words_left) {
			ret = pgtrace_set_error(r, -EBADMSG, off,
					   "word 0x%016llx before any pid word",
					   (unsigned long long)w);
			break;
		}
		if (!(w & PAGETRACE_TYPE_MASK)) {
			uint64_t t = pagetrace_word_sync_ns(w);

			if (t < r->base_ns + PAGETRACE_TIME_MAX_DELTA) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "sync to %llu ns only %lld ns after %llu ns (at least %llu expected)",
						   (unsigned long long)t,
						   (long long)(t - r->base_ns),
						   (unsigned long long)r->base_ns,
						   PAGETRACE_TIME_MAX_DELTA);
				break;
			}
			r->base_ns = t;
			r->pos += 8;
			r->cnt.bytes += 8;
			continue;
		}
		npages = pagetrace_word_npages(w);
		if (pagetrace_word_is_large(w)) {
			if (have < 16) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "file ends inside a large event");
				break;
			}
			if (npages) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "large event word 0x%016llx has npages field %llu, expected 0",
						   (unsigned long long)w,
						   (unsigned long long)npages);
				break;
			}
			npages = pgtrace_load64(p + 8);
			if (npages <= PAGETRACE_NPAGES_MAX || npages > GO_NPAGES_MAX) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "large event has npages %llu, expected %llu..%llu",
						   (unsigned long long)npages,
						   PAGETRACE_NPAGES_MAX + 1, GO_NPAGES_MAX);
				break;
			}
			r->pos += 16;
			r->cnt.bytes += 16;
		} else {
			if (!npages) {
				ret = pgtrace_set_error(r, -EBADMSG, off,
						   "event word 0x%016llx has npages 0",
						   (unsigned long long)w);
				break;
			}
			r->pos += 8;
			r->cnt.bytes += 8;
		}
		evs[n].time_ns = r->base_ns + pagetrace_word_delta_ns(w);
		evs[n].pfn = pagetrace_word_pfn(w);
		evs[n].npages = npages;
		evs[n].offset = off;
		evs[n].seq = r->chunk.seq;
		evs[n].task = PGTRACE_TASK_UNKNOWN;
		evs[n].cpu = r->chunk.cpu;
		evs[n].chunk_flags = 0;
		evs[n].type = (uint8_t)(w & PAGETRACE_TYPE_MASK);
		evs[n].__pad = 0;
		evs[n].stack = 0;
		evs[n].__pad2 = 0;
		if (evs[n].time_ns > r->last_ns)
			r->last_ns = evs[n].time_ns;
		r->cnt.events++;
		n++;
	}
	if (ret && !r->err)
		r->err = ret;
	return n ? (int)n : ret;
}

int pgtrace_go_next_batch(struct pgtrace_reader *r, struct pgtrace_event *evs, unsigned int max)
{
	return go_decode(r, evs, max, GO_ACROSS_BUFFERS);
}

/* Go traces are small: runs go through struct pgtrace_event, one buffer each. */
int pgtrace_go_next_run(struct pgtrace_reader *r, struct pgtrace_compact_event *evs, unsigned int max)
{
	struct pgtrace_event tmp[64];
	unsigned int n = 0;
	int ret = 0;

	while (n < max) {
		unsigned int want = max - n < 64 ? max - n : 64;
		/* A run is one buffer's events: the next buffer waits. */
		ret = go_decode(r, tmp, want, n ? GO_ANY_BUFFER_END : GO_BUFFER_END);
		if (ret <= 0)
			break;
		for (int i = 0; i < ret; i++) {
			evs[n + i].time_ns = tmp[i].time_ns;
			evs[n + i].pfn = tmp[i].pfn;
			evs[n + i].npages_type = tmp[i].npages << 2 | tmp[i].type;
		}
		n += ret;
		if ((unsigned int)ret < want)
			break;
	}
	return n ? (int)n : ret;
}
