// SPDX-License-Identifier: GPL-2.0
/*
 * Read a trace-cmd data file of kmem page events as a pagetrace stream.
 *
 * `trace-cmd record -e kmem:mm_page_alloc -e kmem:mm_page_free` records
 * what pagetrace's hooks see, on kernels where the module cannot load.
 * kmem:mm_page_free_batched is no free of its own: the kernel fires
 * mm_page_free for each of those pages too (free_unref_page_list() and
 * free_unref_folios() free through free_pages_prepare()), so with
 * mm_page_free in the file it is not counted; a file of batched frees
 * only counts them as frees of one page each (the event has no order), and
 * says that the other frees are missing.  Rather than teach every command a
 * second input, the file is read with libtracecmd (not a parser of ours)
 * and turned into a v1 stream in an anonymous memory file: the commands
 * then read that as they read any trace.  What the kernel's events cannot
 * give is told on stderr, never made up:
 *
 *   - no snapshot: pages allocated before the recording are unknown;
 *   - no reclaim type: kmem:mm_page_free fires for reclaimed pages too, so
 *     reclaims count as frees;
 *   - stacks only with -T: the kernel stack trace-cmd writes after each
 *     event (ftrace:kernel_stack) is, for an allocation, its sampled stack
 *     (every allocation a sample), named from the file's kallsyms; those
 *     of frees are left out, as pagetrace samples allocations only;
 *   - tasks are the events' thread ids (common_pid), named from the file's
 *     saved cmdlines, not process ids.
 *
 * The static CLI is built without libtracecmd (Debian ships no static
 * libtracecmd.a): it says so for such files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cmd.h"
#include "tracedat_in.h"

/* The first bytes of every trace-cmd data file (trace-cmd.dat(5)). */
static const char td_magic[] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

bool tracedat_in_is(int fd)
{
	char buf[sizeof(td_magic)];

	return pread(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) &&
	       !memcmp(buf, td_magic, sizeof(buf));
}

#ifndef PT_HAVE_LIBTRACECMD

int tracedat_in_open(const char *path, int *fd)
{
	(void)fd;
	fprintf(stderr, "pagetrace: %s: a trace-cmd data file, but this pagetrace was built "
		"without libtracecmd (the static build): read it with a dynamically linked "
		"pagetrace\n", path);
	return -ENOTSUP;
}

const char *tracedat_in_notes(void)
{
	return NULL;
}

#else

#include <trace-cmd.h>

/* 64 KiB chunks: far below the reader's buffer, few chunk headers. */
#define TI_CHUNK_SIZE	65536U
#define TI_CHUNK_WORDS	((TI_CHUNK_SIZE - sizeof(struct pagetrace_chunk)) / 8)
/* Most words one event adds: name slices, task, sync, a large event's two. */
#define TI_EVENT_WORDS	(PAGETRACE_NAME_MAX_SLICES + 1 + 1 + 2)

enum { TI_ALLOC, TI_FREE, TI_FREE_BATCHED, TI_RECLAIM, TI_STACK, TI_SNAPSHOT, TI_KINDS };

static const struct {
	const char *system, *name;
} ti_events[TI_KINDS] = {
	[TI_ALLOC]		= { "kmem", "mm_page_alloc" },
	[TI_FREE]		= { "kmem", "mm_page_free" },
	[TI_FREE_BATCHED]	= { "kmem", "mm_page_free_batched" },
	/* The events `pagetrace convert --to trace-cmd` adds for its own types. */
	[TI_RECLAIM]		= { "pagetrace", "page_reclaim" },
	[TI_STACK]		= { "ftrace", "kernel_stack" },
	[TI_SNAPSHOT]		= { "pagetrace", "page_snapshot" },
};

struct ti_kind {
	int			id;	/* -1: not in the file */
	struct tep_format_field	*pfn, *order, *npages;
	struct tep_format_field	*size, *caller;	/* kernel_stack's */
};

/* An allocation held back until its CPU's next record: its -T stack, if any. */
struct ti_pending {
	uint64_t	t, pfn, npages;
	int		pid;
	bool		has;
};

struct ti_cpu {
	uint64_t	*w;
	size_t		n;
	uint64_t	base, last_t, seq, lost_next;
	uint64_t	chunk;	/* this CPU's open chunk, numbered across CPUs */
	int64_t		task;	/* -2: none yet in this chunk */
	bool		open;
	struct ti_pending pend;
};

/* A distinct call stack: id - 1 indexes the table. */
struct ti_stack {
	size_t		off;	/* first frame in ti_stacks.frames */
	uint32_t	depth;
	bool		cut;
	uint64_t	chunk;	/* the last chunk that defined it, 0: none */
};

struct ti_stacks {
	struct ti_stack	*v;
	size_t		n, cap;
	uint64_t	*frames;
	size_t		nf, capf;
	uint32_t	*hash;	/* open addressing: ids, 0 empty */
	size_t		hcap;
};

struct ti_state {
	struct tep_handle	*tep;
	struct ti_kind		k[TI_KINDS];
	struct ti_cpu		*cpus;
	unsigned int		nr_cpus;
	unsigned char		*out;	/* the chunks, one after another */
	size_t			len, cap;
	uint64_t		first_ns;
	bool			have_first;
	uint64_t		seen[TI_KINDS], reordered, unknown_cpu;
	uint64_t		next_flush;	/* trace time of the next flush of all CPUs */
	uint64_t		samples, chunks, drops, unknown_drops;
	struct ti_stacks	st;
	int			err;
};

static int ti_put(struct ti_state *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1 << 20;
		unsigned char *q;

		while (cap < s->len + n)
			cap *= 2;
		q = realloc(s->out, cap);
		if (!q)
			return -ENOMEM;
		s->out = q;
		s->cap = cap;
	}
	memcpy(s->out + s->len, p, n);
	s->len += n;
	return 0;
}

static int ti_flush(struct ti_state *s, unsigned int cpu)
{
	struct ti_cpu *c = &s->cpus[cpu];
	struct pagetrace_chunk ch;
	int ret;

	if (!c->open)
		return 0;
	memset(&ch, 0, sizeof(ch));
	memcpy(ch.magic, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN);
	ch.cpu = cpu;
	ch.nr_words = c->n;
	ch.seq = c->seq++;
	ch.lost = c->lost_next;
	c->lost_next = 0;
	c->chunk = 0;
	c->open = false;
	ret = ti_put(s, &ch, sizeof(ch));
	return ret ? ret : ti_put(s, c->w, c->n * 8);
}

static void ti_word(struct ti_cpu *c, uint64_t w)
{
	c->w[c->n++] = w;
}

static int ti_event(struct ti_state *s, unsigned int cpu, uint64_t t, int pid,
		    unsigned int type, uint64_t pfn, uint64_t npages, uint32_t stack)
{
	struct ti_cpu *c = &s->cpus[cpu];
	struct ti_stack *st = stack ? &s->st.v[stack - 1] : NULL;
	size_t need = TI_EVENT_WORDS + (st ? 2 + st->depth : 0);
	int ret;

	if (c->open && c->n + need > TI_CHUNK_WORDS) {
		ret = ti_flush(s, cpu);
		if (ret)
			return ret;
	}
	/* A CPU's ring buffer is in time order; keep the stream's rule if not. */
	if (t < c->last_t) {
		t = c->last_t;
		s->reordered++;
	}
	c->last_t = t;
	if (!c->open) {
		c->n = 0;
		ti_word(c, pagetrace_pid_word(cpu));
		ti_word(c, pagetrace_sync_word(t));
		c->base = pagetrace_word_sync_ns(c->w[1]);
		c->task = -2;
		c->chunk = ++s->chunks;
		c->open = true;
	}
	if (t - c->base >= PAGETRACE_TIME_MAX_DELTA) {
		ti_word(c, pagetrace_sync_word(t));
		c->base = pagetrace_word_sync_ns(c->w[c->n - 1]);
	}
	if (c->task != pid) {
		const char *comm = pid > 0 ? tep_data_comm_from_pid(s->tep, pid) : NULL;

		/* libtraceevent says "<...>" for a pid the cmdlines lack. */
		if (comm && strcmp(comm, "<...>")) {
			__u8 name[PAGETRACE_COMM_LEN] = { 0 };
			unsigned int len = strnlen(comm, PAGETRACE_COMM_LEN);

			memcpy(name, comm, len);
			for (unsigned int i = 0; i < pagetrace_name_slices(len); i++)
				ti_word(c, pagetrace_name_word(i, name));
		}
		ti_word(c, pagetrace_task_word(pid < 0 ? 0 : (__u32)pid));
		c->task = pid;
	}
	if (st) {
		/* Every chunk defines the stacks it names, before it names them. */
		if (st->chunk != c->chunk) {
			ti_word(c, pagetrace_stack_def_word(stack, st->depth, st->cut));
			for (uint32_t i = 0; i < st->depth; i++)
				ti_word(c, pagetrace_frame_word(s->st.frames[st->off + i]));
			st->chunk = c->chunk;
		}
		ti_word(c, pagetrace_sample_word(stack));
		s->samples++;
	}
	if (npages > PAGETRACE_NPAGES_MAX) {
		ti_word(c, pagetrace_large_event_word(t - c->base, pfn, type));
		ti_word(c, npages);
	} else {
		ti_word(c, pagetrace_event_word(t - c->base, pfn, npages, type));
	}
	return 0;
}

static uint64_t ti_hash(const uint64_t *f, uint32_t depth, bool cut)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ depth ^ ((uint64_t)cut << 8);

	for (uint32_t i = 0; i < depth; i++)
		h = (h ^ f[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static int ti_stacks_grow(struct ti_stacks *t)
{
	size_t hcap = t->hcap ? t->hcap * 2 : 1024;
	uint32_t *h = calloc(hcap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t id = 1; id <= t->n; id++) {
		const struct ti_stack *st = &t->v[id - 1];
		size_t i = ti_hash(t->frames + st->off, st->depth, st->cut) & (hcap - 1);

		while (h[i])
			i = (i + 1) & (hcap - 1);
		h[i] = id;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = hcap;
	return 0;
}

/* The id of the stack @f (depth frames), added if new; 0 if out of memory. */
static uint32_t ti_stack_id(struct ti_stacks *t, const uint64_t *f, uint32_t depth, bool cut)
{
	struct ti_stack *st;
	size_t i;

	if ((t->n + 1) * 2 > t->hcap && ti_stacks_grow(t))
		return 0;
	for (i = ti_hash(f, depth, cut) & (t->hcap - 1); t->hash[i]; i = (i + 1) & (t->hcap - 1)) {
		st = &t->v[t->hash[i] - 1];
		if (st->depth == depth && st->cut == cut &&
		    !memcmp(t->frames + st->off, f, depth * sizeof(*f)))
			return t->hash[i];
	}
	if (t->n == t->cap || t->nf + depth > t->capf) {
		size_t cap = t->cap ? t->cap * 2 : 256, capf = t->capf ? t->capf * 2 : 4096;
		struct ti_stack *v = t->n == t->cap ? realloc(t->v, cap * sizeof(*v)) : t->v;
		uint64_t *fr;

		if (!v)
			return 0;
		t->v = v;
		if (t->n == t->cap)
			t->cap = cap;
		while (capf < t->nf + depth)
			capf *= 2;
		fr = realloc(t->frames, capf * sizeof(*fr));
		if (!fr)
			return 0;
		t->frames = fr;
		t->capf = capf;
	}
	st = &t->v[t->n++];
	st->off = t->nf;
	st->depth = depth;
	st->cut = cut;
	st->chunk = 0;
	memcpy(t->frames + t->nf, f, depth * sizeof(*f));
	t->nf += depth;
	t->hash[i] = t->n;
	return t->n;
}

/*
 * The stack of a kernel_stack record: innermost frame first, as pagetrace
 * keeps them.  Its size field counts the entries; the record may hold
 * fewer.  0 if it has none, or out of memory (s->err).
 */
static uint32_t ti_read_stack(struct ti_state *s, struct tep_record *rec)
{
	const struct ti_kind *k = &s->k[TI_STACK];
	uint64_t f[PAGETRACE_STACK_MAX_DEPTH];
	unsigned long long nr;
	int lsize = tep_get_long_size(s->tep);
	uint32_t depth = 0;
	uint64_t avail, i;
	bool cut = false;
	uint32_t id;

	if (!k->caller || (lsize != 4 && lsize != 8) || rec->size < k->caller->offset ||
	    tep_read_number_field(k->size, rec->data, &nr))
		return 0;
	avail = (uint64_t)(rec->size - k->caller->offset) / lsize;
	if (nr > avail)
		nr = avail;
	for (i = 0; i < nr; i++) {
		uint64_t a = tep_read_number(s->tep, (const char *)rec->data +
					     k->caller->offset + i * lsize, lsize);

		/* Older kernels end the list with ULONG_MAX or 0. */
		if (!a || a == (lsize == 8 ? UINT64_MAX : UINT32_MAX))
			break;
		if (depth == PAGETRACE_STACK_MAX_DEPTH) {
			cut = true;
			break;
		}
		f[depth++] = a;
	}
	if (!depth)
		return 0;
	id = ti_stack_id(&s->st, f, depth, cut);
	if (!id)
		s->err = -ENOMEM;
	return id;
}

/* Write out @cpu's held-back allocation, with stack @stack (0: none). */
static int ti_release(struct ti_state *s, unsigned int cpu, uint32_t stack)
{
	struct ti_pending *p = &s->cpus[cpu].pend;

	if (!p->has)
		return 0;
	p->has = false;
	return ti_event(s, cpu, p->t, p->pid, PAGETRACE_EV_ALLOC, p->pfn, p->npages, stack);
}

/*
 * libtracecmd hands the events over in time order across CPUs; the chunks
 * must keep to it within the analysis's wait for a slow CPU (1 s).  A CPU
 * whose chunk filled only when full would put a quiet CPU's chunk,
 * spanning the whole file, at the end: every CPU's open chunk is written
 * out every 100 ms of trace time instead.  An allocation still waiting
 * for its -T stack goes without it once 200 ms have passed: its CPU's
 * next record is that stack, but under KASAN the kernel took up to 5 ms to
 * write it, and a quiet CPU's allocation must not wait for the CPU's next
 * event, however late (at most 300 ms late this way, well within 1 s).
 */
#define TI_FLUSH_NS		100000000ULL
#define TI_STACK_WAIT_NS	200000000ULL

static int ti_flush_all(struct ti_state *s, uint64_t now)
{
	int ret = 0;

	for (unsigned int i = 0; i < s->nr_cpus && !ret; i++) {
		const struct ti_pending *p = &s->cpus[i].pend;

		if (p->has && now > p->t + TI_STACK_WAIT_NS)
			ret = ti_release(s, i, 0);
		if (!ret)
			ret = ti_flush(s, i);
	}
	return ret;
}

static int ti_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *arg)
{
	struct ti_state *s = arg;
	unsigned long long pfn, order = 0, npages;
	unsigned int type;
	int id, kind;

	(void)h;
	if (cpu < 0 || (unsigned int)cpu >= s->nr_cpus) {
		s->unknown_cpu++;
		return 0;
	}
	if (rec->ts >= s->next_flush) {
		if (s->next_flush) {
			s->err = ti_flush_all(s, rec->ts);
			if (s->err)
				return -1;
		}
		s->next_flush = rec->ts + TI_FLUSH_NS;
	}
	id = tep_data_type(s->tep, rec);
	if (id == s->k[TI_STACK].id && s->cpus[cpu].pend.has && !rec->missed_events) {
		/* trace-cmd -T: the stack of the allocation just before. */
		uint32_t stack = ti_read_stack(s, rec);

		s->seen[TI_STACK]++;
		if (!s->err)
			s->err = ti_release(s, cpu, stack);
		return s->err ? -1 : 0;
	}
	s->err = ti_release(s, cpu, 0);
	if (s->err)
		return -1;
	if (rec->missed_events) {
		/* A new chunk carries the losses, as the module's would. */
		s->err = ti_flush(s, cpu);
		/* -1: the ring buffer knew events were dropped, not how many. */
		s->cpus[cpu].lost_next += rec->missed_events > 0 ? (uint64_t)rec->missed_events : 1;
		s->drops++;
		s->unknown_drops += rec->missed_events < 0;
		if (s->err)
			return -1;
	}
	for (kind = 0; kind < TI_KINDS; kind++)
		if (s->k[kind].id == id)
			break;
	if (kind == TI_KINDS)
		return 0;
	s->seen[kind]++;
	if (kind == TI_STACK || kind == TI_SNAPSHOT)
		return 0;
	/* The kernel reported this free as mm_page_free too: not a second one. */
	if (kind == TI_FREE_BATCHED && s->k[TI_FREE].id >= 0)
		return 0;
	if (tep_read_number_field(s->k[kind].pfn, rec->data, &pfn) ||
	    (s->k[kind].order && tep_read_number_field(s->k[kind].order, rec->data, &order))) {
		s->err = -EBADMSG;
		return -1;
	}
	/* A failed allocation: the kernel logs pfn -1 (page NULL). */
	if (kind == TI_ALLOC && pfn > PAGETRACE_PFN_MAX) {
		s->seen[kind]--;
		return 0;
	}
	npages = 1ULL << (order & 63);
	if (s->k[kind].npages && tep_read_number_field(s->k[kind].npages, rec->data, &npages)) {
		s->err = -EBADMSG;
		return -1;
	}
	type = kind == TI_ALLOC ? PAGETRACE_EV_ALLOC :
	       kind == TI_RECLAIM ? PAGETRACE_EV_RECLAIM : PAGETRACE_EV_FREE;
	if (!s->have_first || rec->ts < s->first_ns) {
		s->first_ns = rec->ts;
		s->have_first = true;
	}
	if (type == PAGETRACE_EV_ALLOC) {
		struct ti_pending *p = &s->cpus[cpu].pend;

		p->t = rec->ts;
		p->pfn = pfn;
		p->npages = npages;
		p->pid = tep_data_pid(s->tep, rec);
		p->has = true;
		return 0;
	}
	s->err = ti_event(s, cpu, rec->ts, tep_data_pid(s->tep, rec), type, pfn, npages, 0);
	return s->err ? -1 : 0;
}

/* Find the events and their fields; -EINVAL with *why set if they are not usable. */
static int ti_find(struct ti_state *s, const char **why)
{
	bool any = false;

	for (int kind = 0; kind < TI_KINDS; kind++) {
		struct tep_event *e = tep_find_event_by_name(s->tep, ti_events[kind].system,
							     ti_events[kind].name);
		struct ti_kind *k = &s->k[kind];

		k->id = e ? e->id : -1;
		if (e && kind == TI_STACK) {
			k->size = tep_find_field(e, "size");
			k->caller = k->size ? tep_find_field(e, "caller") : NULL;
		}
		if (!e || kind == TI_STACK || kind == TI_SNAPSHOT)
			continue;
		k->pfn = tep_find_field(e, "pfn");
		k->order = kind == TI_FREE_BATCHED ? NULL : tep_find_field(e, "order");
		k->npages = tep_find_field(e, "npages");
		if (!k->pfn || (kind != TI_FREE_BATCHED && !k->order)) {
			/* Kernels before 3.16 logged a struct page pointer, not a PFN. */
			*why = "its kmem page events have no pfn and order fields (a kernel before 3.16?)";
			return -EINVAL;
		}
		any = true;
	}
	if (!any) {
		*why = "holds no kmem page events (record with trace-cmd record "
		       "-e kmem:mm_page_alloc -e kmem:mm_page_free)";
		return -EINVAL;
	}
	return 0;
}

/* The file's kallsyms, through libtraceevent, as libpagetrace asks. */
static const char *ti_lookup(void *arg, uint64_t addr, uint64_t *offset)
{
	struct ti_state *s = arg;
	const char *name = NULL;
	unsigned long long start = 0;
	unsigned long size = 0;

	if (!tep_find_function_info(s->tep, addr, &name, &start, &size) || !name)
		return NULL;
	*offset = addr - start;
	return name;
}

/*
 * Name the stacks' frames from the kallsyms the file holds (trace-cmd
 * saves them), in symbol chunks after the events, as `pagetrace
 * symbolize` would: pprof and report then need no kallsyms of their own.
 */
static int ti_symbols(struct ti_state *s)
{
	size_t len;
	void *buf;
	int ret;

	if (!s->st.nf)
		return 0;
	ret = pgtrace_symbol_chunks_by(ti_lookup, s, s->st.frames, s->st.nf, &buf, &len);
	if (ret < 0)
		return ret;
	ret = len ? ti_put(s, buf, len) : 0;
	free(buf);
	return ret;
}

/*
 * The stacks record's anchor lets a kallsyms file be checked against the
 * trace: the function of the first frame, as the file's kallsyms name it.
 */
static void ti_anchor(struct ti_state *s, struct pagetrace_rec_stacks *sr)
{
	const char *name = NULL;
	unsigned long long start = 0;
	unsigned long size = 0;

	if (!s->st.nf || !tep_find_function_info(s->tep, s->st.frames[0], &name, &start, &size) ||
	    !name || strlen(name) >= sizeof(sr->anchor_name))
		return;
	sr->anchor_addr = start;
	memcpy(sr->anchor_name, name, strlen(name));
}

static int ti_header(struct ti_state *s, struct tracecmd_input *h)
{
	struct pagetrace_header hdr;
	struct pagetrace_record end = { .type = PAGETRACE_REC_END, .size = 0 };
	struct pagetrace_rec_stacks sr;
	int page = tep_get_page_size(s->tep);
	unsigned int shift = 12;

	while (page > 0 && (1 << shift) < page && shift < 30)
		shift++;
	memset(&hdr, 0, sizeof(hdr));
	memset(&sr, 0, sizeof(sr));
	ti_anchor(s, &sr);
	memcpy(hdr.magic, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN);
	hdr.version = PAGETRACE_VERSION;
	hdr.header_size = sizeof(hdr) + sizeof(end);
	hdr.page_shift = shift;
	hdr.time_lost_bits = PAGETRACE_TIME_LOST_BITS;
	hdr.time_delta_bits = PAGETRACE_TIME_DELTA_BITS;
	hdr.nr_cpus = s->nr_cpus;
	/* trace-cmd's default clock is ftrace's "local", local_clock(). */
	hdr.start_ns = s->have_first ? s->first_ns : tracecmd_get_first_ts(h);
	hdr.chunk_size = TI_CHUNK_SIZE;
	hdr.flags = PAGETRACE_CLOCK_LOCAL | PAGETRACE_FLAG_TASKS;
	if (s->samples) {
		struct pagetrace_record rec = { .type = PAGETRACE_REC_STACKS, .size = sizeof(sr) };

		/* -T stacks every event: each allocation is a sample, one per page or more. */
		hdr.flags |= PAGETRACE_FLAG_STACKS;
		hdr.header_size += sizeof(rec) + sizeof(sr);
		sr.rate = 1;
		sr.max_depth = PAGETRACE_STACK_MAX_DEPTH;
		if (ti_put(s, &hdr, sizeof(hdr)) || ti_put(s, &rec, sizeof(rec)) ||
		    ti_put(s, &sr, sizeof(sr)) || ti_put(s, &end, sizeof(end)))
			return -ENOMEM;
		return 0;
	}
	if (ti_put(s, &hdr, sizeof(hdr)) || ti_put(s, &end, sizeof(end)))
		return -ENOMEM;
	return 0;
}

/* The notes of the file read, for the HTML report; "" until one is read. */
static char ti_said[2048];

/* One note: on stderr at once, and kept for tracedat_in_notes(). */
static void __attribute__((format(printf, 2, 3))) ti_note(bool told, const char *fmt, ...)
{
	size_t n = strlen(ti_said);
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!told)
		fprintf(stderr, "pagetrace: note: %s\n", line);
	snprintf(ti_said + n, sizeof(ti_said) - n, "%s%s", n ? "; " : "", line);
}

/* What the file cannot tell, once per run (pprof and dump open it twice). */
static void ti_notes(const struct ti_state *s, const char *path)
{
	static bool told;
	uint64_t events = s->seen[TI_ALLOC] + s->seen[TI_FREE] + s->seen[TI_FREE_BATCHED] +
			  s->seen[TI_RECLAIM];

	if (!told)
		fprintf(stderr, "pagetrace: %s: trace-cmd data file, read with libtracecmd\n", path);
	ti_said[0] = '\0';
	ti_note(told, "a trace-cmd data file of %" PRIu64 " kmem page events (%" PRIu64
		" mm_page_alloc, %" PRIu64 " mm_page_free, %" PRIu64 " mm_page_free_batched)",
		events, s->seen[TI_ALLOC], s->seen[TI_FREE], s->seen[TI_FREE_BATCHED]);
	if (!s->seen[TI_ALLOC])
		ti_note(told, "no mm_page_alloc events: allocations were not recorded "
			"(trace-cmd record -e kmem:mm_page_alloc), every free is of a page "
			"not known allocated");
	if (!s->seen[TI_FREE] && !s->seen[TI_FREE_BATCHED])
		ti_note(told, "no mm_page_free events: frees were not recorded "
			"(trace-cmd record -e kmem:mm_page_free), every page allocated stays "
			"in use");
	if (s->seen[TI_FREE_BATCHED] && s->k[TI_FREE].id >= 0)
		ti_note(told, "%" PRIu64 " mm_page_free_batched not counted: the kernel reports "
			"each of those frees as mm_page_free too", s->seen[TI_FREE_BATCHED]);
	else if (s->seen[TI_FREE_BATCHED])
		ti_note(told, "no mm_page_free recorded: only the %" PRIu64 " mm_page_free_batched "
			"count as frees (of one page each, the event has no order); the other "
			"frees are missing", s->seen[TI_FREE_BATCHED]);
	if (s->seen[TI_RECLAIM])
		ti_note(told, "%" PRIu64 " pagetrace:page_reclaim events (a file of pagetrace "
			"convert) read as reclaims", s->seen[TI_RECLAIM]);
	ti_note(told, "no snapshot: pages allocated before the recording are unknown");
	if (!s->seen[TI_RECLAIM])
		ti_note(told, "kmem events do not tell reclaim from free: reclaimed pages count "
			"as frees");
	if (s->samples)
		ti_note(told, "%" PRIu64 " kernel stacks (trace-cmd -T) of allocations imported "
			"as sampled stacks (every allocation a sample, %" PRIu64 " distinct); "
			"the %" PRIu64 " of other events left out", s->samples, (uint64_t)s->st.n,
			s->seen[TI_STACK] - s->samples);
	else if (s->seen[TI_STACK])
		ti_note(told, "%" PRIu64 " kernel stacks (trace-cmd -T) not imported: none "
			"followed an allocation", s->seen[TI_STACK]);
	else
		ti_note(told, "no sampled stacks (none recorded)");
	if (s->seen[TI_SNAPSHOT])
		ti_note(told, "%" PRIu64 " pagetrace:page_snapshot runs not imported",
			s->seen[TI_SNAPSHOT]);
	ti_note(told, "tasks are thread ids (common_pid), named from the file's saved cmdlines");
	if (s->unknown_drops)
		ti_note(told, "%" PRIu64 " of the file's %" PRIu64 " drops do not say how many "
			"events they lost: counted as 1 lost each", s->unknown_drops, s->drops);
	if (s->reordered)
		ti_note(told, "%" PRIu64 " events out of time order on their CPU were given the "
			"time of the one before", s->reordered);
	if (s->unknown_cpu)
		ti_note(told, "%" PRIu64 " events of CPUs past the file's CPU count left out",
			s->unknown_cpu);
	told = true;
}

const char *tracedat_in_notes(void)
{
	return ti_said[0] ? ti_said : NULL;
}

static int ti_convert(struct ti_state *s, struct tracecmd_input *h, const char **why)
{
	size_t hdr_len;
	unsigned char *hdr;
	int ret;

	ret = ti_find(s, why);
	if (ret)
		return ret;
	ret = tep_get_cpus(s->tep);
	if (ret <= 0 || ret > 65536) {
		*why = "its CPU count is out of range";
		return -EINVAL;
	}
	s->nr_cpus = ret;
	s->cpus = calloc(s->nr_cpus, sizeof(*s->cpus));
	if (!s->cpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->nr_cpus; i++) {
		s->cpus[i].w = malloc(TI_CHUNK_WORDS * 8);
		if (!s->cpus[i].w)
			return -ENOMEM;
	}
	if (tracecmd_iterate_events(h, NULL, 0, ti_record, s) < 0 && !s->err) {
		*why = "libtracecmd could not read its events (truncated?)";
		return -EBADMSG;
	}
	if (s->err) {
		if (s->err == -EBADMSG)
			*why = "an event's pfn or order field could not be read";
		return s->err;
	}
	for (unsigned int i = 0; i < s->nr_cpus; i++) {
		ret = ti_release(s, i, 0);
		if (!ret)
			ret = ti_flush(s, i);
		if (ret)
			return ret;
	}
	ret = ti_symbols(s);
	if (ret)
		return ret;
	/* The header goes first but needs the first time: build it, then swap. */
	hdr_len = s->len;
	ret = ti_header(s, h);
	if (ret)
		return ret;
	hdr = malloc(s->len);
	if (!hdr)
		return -ENOMEM;
	memcpy(hdr, s->out + hdr_len, s->len - hdr_len);
	memcpy(hdr + (s->len - hdr_len), s->out, hdr_len);
	free(s->out);
	s->out = hdr;
	s->cap = s->len;
	return 0;
}

/*
 * libtracecmd 1.3 prints some complaints ("File possibly truncated") on
 * stdout, where they would mix with the command's output: stdout points at
 * /dev/null while it reads.  Returns the saved stdout, or -1.
 */
static int ti_mute_stdout(void)
{
	int save, null;

	fflush(stdout);
	save = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (save >= 0 && null >= 0)
		dup2(null, STDOUT_FILENO);
	if (null >= 0)
		close(null);
	return save;
}

static void ti_unmute_stdout(int save)
{
	if (save < 0)
		return;
	fflush(stdout);
	dup2(save, STDOUT_FILENO);
	close(save);
}

/* One write() stops short of 2 GiB (MAX_RW_COUNT): write it all. */
static int ti_write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;
		p += n;
		len -= n;
	}
	return 0;
}

int tracedat_in_open(const char *path, int *fd)
{
	struct ti_state s = { .err = 0 };
	struct tracecmd_input *h;
	const char *why = NULL;
	int mfd = -1, ret, out;

	/* One line of ours, not libtracecmd's warnings, for a bad file. */
	tracecmd_set_loglevel(TEP_LOG_NONE);
	out = ti_mute_stdout();
	h = tracecmd_open_head(path, TRACECMD_FL_LOAD_NO_PLUGINS |
				     TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
	if (h && tracecmd_init_data(h) < 0) {
		/*
		 * Not closed: tracecmd_close() of a handle whose data did not
		 * load (a cut file) crashes in libtracecmd 1.3.  The process
		 * exits with the error anyway.
		 */
		h = NULL;
	}
	if (!h) {
		ti_unmute_stdout(out);
		fprintf(stderr, "pagetrace: %s: libtracecmd cannot read this trace-cmd data file "
			"(truncated or corrupt?)\n", path);
		return -EBADMSG;
	}
	s.tep = tracecmd_get_tep(h);
	ret = ti_convert(&s, h, &why);
	ti_unmute_stdout(out);
	if (!ret) {
		mfd = memfd_create("pagetrace-tracedat", MFD_CLOEXEC);
		ret = mfd < 0 ? -errno : ti_write_all(mfd, s.out, s.len);
		if (!ret && lseek(mfd, 0, SEEK_SET))
			ret = -errno;
		if (ret)
			why = "cannot hold it in a memory file";
	}
	if (!ret)
		ti_notes(&s, path);
	tracecmd_close(h);
	if (s.cpus)
		for (unsigned int i = 0; i < s.nr_cpus; i++)
			free(s.cpus[i].w);
	free(s.cpus);
	free(s.out);
	free(s.st.v);
	free(s.st.frames);
	free(s.st.hash);
	if (ret) {
		if (mfd >= 0)
			close(mfd);
		fprintf(stderr, "pagetrace: %s: trace-cmd data file: %s\n", path,
			why ? why : strerror(-ret));
		return ret;
	}
	*fd = mfd;
	return 0;
}

#endif
