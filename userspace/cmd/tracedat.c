// SPDX-License-Identifier: GPL-2.0
/*
 * A pagetrace trace as a trace-cmd data file, version 6 (the layout of
 * trace-cmd.dat.v6(5), which trace-cmd wrote before version 7 and still
 * reads; tested with Debian 12's trace-cmd 3.1.6 and KernelShark 2.2).
 * Version 7's sections and compression would buy nothing here.
 *
 * The file pretends to be a recording of the kernel's own page events, so
 * that trace-cmd's filters and KernelShark work on it as on a native one:
 *
 *   alloc            kmem:mm_page_alloc
 *   free             kmem:mm_page_free
 *   reclaim          pagetrace:page_reclaim (a free done by reclaim; an
 *                    event of its own so that the two can be told apart)
 *   snapshot runs    pagetrace:page_snapshot (pages in use at the start)
 *
 * Every one has the fields pfn, order and npages.  order is log2 of npages
 * rounded up, as the module's order filter counts it; npages is exact
 * (the kernel's events have no such field, but pagetrace's blocks need
 * not be a power of two).  The kernel's mm_page_alloc also has gfp_flags
 * and migratetype, which pagetrace does not record: they are left out
 * rather than made up.  common_pid is the tgid of the task record before
 * the event (0: the kernel, -1: none yet), the comm names go to the
 * file's cmdlines.
 *
 * Each CPU's events become ring-buffer pages as the kernel's ring buffer
 * hands them to trace-cmd: a page header (time stamp, commit), then events
 * with 5-bit type_len and 27-bit time deltas, with a time-extend entry in
 * front of an event whose delta does not fit.  Events a chunk reports lost
 * go into the commit field's missed-events flag of a page that starts with
 * the first event after the loss, their count after the page's data, so
 * trace-cmd prints "CPU:N [COUNT EVENTS DROPPED]" there.
 *
 * The events are kept in memory (40 bytes each) because the file needs
 * every CPU's data in one piece, with its offset in the header.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracedat.h"

/* The ring buffer's page: a 16-byte header, then data. */
#define TD_PAGE_SIZE		4096U
#define TD_PAGE_HDR		16U
#define TD_PAGE_DATA		(TD_PAGE_SIZE - TD_PAGE_HDR)
/* Commit field flags, as the kernel's RB_MISSED_EVENTS / RB_MISSED_STORED. */
#define TD_MISSED_EVENTS	(1ULL << 31)
#define TD_MISSED_STORED	(1ULL << 30)

/* Event header: type_len in bits 4..0, the time delta in bits 31..5. */
#define TD_TS_SHIFT		27
#define TD_TS_MASK		((1ULL << TD_TS_SHIFT) - 1)
#define TD_TYPE_TIME_EXTEND	30U
/* A time extend holds 27 + 32 bits of delta; a larger gap opens a page. */
#define TD_MAX_DELTA		((1ULL << (TD_TS_SHIFT + 32)) - 1)

/*
 * An event's record: the common fields (type, flags, preempt count, pid),
 * pfn, order, 4 bytes of padding (pfn's alignment), npages.  32 bytes, a
 * multiple of 4, so its length fits type_len (8 words).
 */
#define TD_REC_SIZE		32U
#define TD_ENTRY_SIZE		(4U + TD_REC_SIZE)
#define TD_EXTEND_SIZE		8U

enum td_kind { TD_ALLOC, TD_FREE, TD_RECLAIM, TD_SNAPSHOT, TD_NR_KINDS };

/* Event ids: any unused ones do; these stay clear of ftrace's own. */
static const struct {
	const char	*system;
	const char	*name;
	unsigned int	id;
} td_kinds[TD_NR_KINDS] = {
	[TD_ALLOC]	= { "kmem", "mm_page_alloc", 1001 },
	[TD_FREE]	= { "kmem", "mm_page_free", 1002 },
	[TD_RECLAIM]	= { "pagetrace", "page_reclaim", 1003 },
	[TD_SNAPSHOT]	= { "pagetrace", "page_snapshot", 1004 },
};

/* td_event.missed */
#define TD_LOST_KNOWN		(1U << 0)	/* @lost events lost before this one */
#define TD_LOST_UNKNOWN		(1U << 1)	/* chunks went missing before it */

struct td_event {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	lost;
	int32_t		pid;
	uint8_t		kind;
	uint8_t		missed;
};

struct td_cpu {
	struct td_event	*ev;
	size_t		n, cap;
	/* Losses reported by chunks not followed by an event yet. */
	uint64_t	pending_lost;
	bool		pending_unknown;
	uint64_t	pages;
};

struct td_page {
	uint8_t		buf[TD_PAGE_SIZE];
	unsigned int	len;		/* data bytes used */
	unsigned int	room;		/* data bytes that may be used */
	uint64_t	ts;		/* the page's time stamp */
	uint64_t	prev;		/* time of its last event */
	uint64_t	missed;		/* commit flags */
	uint64_t	lost;
	bool		open;
};

struct td {
	FILE		*out;
	uint64_t	pos;		/* bytes written */
	unsigned int	nr_cpus;
	struct td_cpu	*cpus;
	struct td_page	pg;		/* the page being laid out */
};

static void put(struct td *t, const void *p, size_t n)
{
	/* A failed write leaves the stream's error flag set: the caller checks it. */
	if (n)
		fwrite(p, 1, n, t->out);
	t->pos += n;
}

static void put16(struct td *t, uint16_t v)
{
	v = htole16(v);
	put(t, &v, 2);
}

static void put32(struct td *t, uint32_t v)
{
	v = htole32(v);
	put(t, &v, 4);
}

static void put64(struct td *t, uint64_t v)
{
	v = htole64(v);
	put(t, &v, 8);
}

static void put_str(struct td *t, const char *s)
{
	put(t, s, strlen(s) + 1);
}

/* A section of the header: its size (4 or 8 bytes wide), then its text. */
static void put_sized(struct td *t, const char *s, unsigned int width)
{
	if (width == 4)
		put32(t, strlen(s));
	else
		put64(t, strlen(s));
	put(t, s, strlen(s));
}

/* log2 of @npages rounded up: the order pagetrace's filter gives a block. */
static unsigned int td_order(uint64_t npages)
{
	return npages <= 1 ? 0 : 64 - __builtin_clzll(npages - 1);
}

static int td_add(struct td *t, const struct pgtrace_event *ev)
{
	struct td_cpu *c = &t->cpus[ev->cpu];
	struct td_event *e;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct td_event *p = realloc(c->ev, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->ev = p;
		c->cap = cap;
	}
	e = &c->ev[c->n++];
	memset(e, 0, sizeof(*e));
	e->time_ns = ev->time_ns;
	e->pfn = ev->pfn;
	e->npages = ev->npages;
	e->pid = ev->task < INT32_MIN || ev->task > INT32_MAX ? -1 : (int32_t)ev->task;
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
		e->kind = TD_SNAPSHOT;
	else if (ev->type == PGTRACE_EV_ALLOC)
		e->kind = TD_ALLOC;
	else if (ev->type == PGTRACE_EV_FREE)
		e->kind = TD_FREE;
	else
		e->kind = TD_RECLAIM;
	/* A loss belongs in front of the first event its CPU logged after it. */
	if (c->pending_lost) {
		e->missed |= TD_LOST_KNOWN;
		e->lost = c->pending_lost;
	}
	if (c->pending_unknown)
		e->missed |= TD_LOST_UNKNOWN;
	c->pending_lost = 0;
	c->pending_unknown = false;
	return 0;
}

static int td_chunk(const struct pgtrace_chunk *ch, void *arg)
{
	struct td *t = arg;
	struct td_cpu *c = &t->cpus[ch->cpu];

	c->pending_lost += ch->lost;
	if (ch->missing)
		c->pending_unknown = true;
	return 0;
}

/*
 * Each CPU's events are in time order, but for the snapshot's: they are
 * stamped with the session start and may come after an event logged a
 * little earlier.  A ring buffer has no negative deltas, so sort, keeping
 * the stream's order among equal times (a merge sort is stable).
 */
static int td_sort(struct td_cpu *c)
{
	struct td_event *tmp, *a = c->ev, *b;
	size_t i;

	for (i = 1; i < c->n; i++)
		if (c->ev[i].time_ns < c->ev[i - 1].time_ns)
			break;
	if (i >= c->n)
		return 0;
	tmp = malloc(c->n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	b = tmp;
	for (size_t w = 1; w < c->n; w *= 2) {
		struct td_event *swap;

		for (size_t lo = 0; lo < c->n; lo += 2 * w) {
			size_t mid = lo + w < c->n ? lo + w : c->n;
			size_t hi = lo + 2 * w < c->n ? lo + 2 * w : c->n;
			size_t p = lo, q = mid, k = lo;

			while (p < mid && q < hi)
				b[k++] = a[q].time_ns < a[p].time_ns ? a[q++] : a[p++];
			while (p < mid)
				b[k++] = a[p++];
			while (q < hi)
				b[k++] = a[q++];
		}
		swap = a;
		a = b;
		b = swap;
	}
	if (a != c->ev)
		memcpy(c->ev, a, c->n * sizeof(*a));
	free(tmp);
	return 0;
}

static void le32_at(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void le64_at(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}


/* Close the page: header, the lost count after the data; write it if @write. */
static void td_page_close(struct td *t, struct td_page *pg, struct td_cpu *c, bool write)
{
	if (!pg->open)
		return;
	if (pg->missed & TD_MISSED_STORED)
		le64_at(pg->buf + TD_PAGE_HDR + pg->len, pg->lost);
	le64_at(pg->buf, pg->ts);
	le64_at(pg->buf + 8, pg->len | pg->missed);
	if (write)
		put(t, pg->buf, TD_PAGE_SIZE);
	c->pages++;
	pg->open = false;
}

static void td_page_open(struct td_page *pg, const struct td_event *e)
{
	memset(pg->buf, 0, sizeof(pg->buf));
	pg->len = 0;
	pg->room = TD_PAGE_DATA;
	pg->ts = pg->prev = e->time_ns;
	pg->missed = 0;
	pg->lost = 0;
	/*
	 * trace-cmd reports a page's missed events with its first event only,
	 * and only if no time extend comes first: the page's time stamp is
	 * that event's time, so its delta is 0.  The count goes after the data:
	 * keep room for it.
	 */
	if (e->missed & TD_LOST_UNKNOWN) {
		pg->missed = TD_MISSED_EVENTS;
	} else if (e->missed & TD_LOST_KNOWN) {
		pg->missed = TD_MISSED_EVENTS | TD_MISSED_STORED;
		pg->lost = e->lost;
		pg->room -= 8;
	}
	pg->open = true;
}

/*
 * Lay out @c's events as ring-buffer pages, counted into c->pages, and
 * written if @write (the header needs the counts first).
 */
static void td_pages(struct td *t, struct td_cpu *c, bool write)
{
	struct td_page *pg = &t->pg;

	c->pages = 0;
	pg->open = false;
	for (size_t i = 0; i < c->n; i++) {
		const struct td_event *e = &c->ev[i];
		uint64_t delta = pg->open ? e->time_ns - pg->prev : 0;
		unsigned int need = TD_ENTRY_SIZE + (delta > TD_TS_MASK ? TD_EXTEND_SIZE : 0);
		uint8_t *p;

		if (!pg->open || e->missed || delta > TD_MAX_DELTA || pg->len + need > pg->room) {
			td_page_close(t, pg, c, write);
			td_page_open(pg, e);
			delta = 0;
			need = TD_ENTRY_SIZE;
		}
		p = pg->buf + TD_PAGE_HDR + pg->len;
		if (delta > TD_TS_MASK) {
			le32_at(p, TD_TYPE_TIME_EXTEND | (uint32_t)((delta & TD_TS_MASK) << 5));
			le32_at(p + 4, (uint32_t)(delta >> TD_TS_SHIFT));
			p += TD_EXTEND_SIZE;
			delta = 0;
		}
		le32_at(p, TD_REC_SIZE / 4 | (uint32_t)(delta << 5));
		p += 4;
		p[0] = td_kinds[e->kind].id & 0xff;
		p[1] = td_kinds[e->kind].id >> 8;
		/* common_flags, common_preempt_count: not known, 0 */
		le32_at(p + 4, (uint32_t)e->pid);
		le64_at(p + 8, e->pfn);
		le32_at(p + 16, td_order(e->npages));
		le64_at(p + 24, e->npages);
		pg->len += need;
		pg->prev = e->time_ns;
	}
	td_page_close(t, pg, c, write);
}

/*
 * The page and event header descriptions, as the kernel's tracefs files
 * header_page and header_event give them for a 64-bit kernel.
 */
static void td_headers(struct td *t)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		 "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
		 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		 "\tfield: char data;\toffset:%u;\tsize:%u;\tsigned:1;\n",
		 TD_PAGE_HDR, TD_PAGE_DATA);
	put_str(t, "header_page");
	put_sized(t, buf, 8);
	snprintf(buf, sizeof(buf),
		 "# compressed entry header\n"
		 "\ttype_len    :    5 bits\n"
		 "\ttime_delta  :   %d bits\n"
		 "\tarray       :   32 bits\n"
		 "\n"
		 "\tpadding     : type == 29\n"
		 "\ttime_extend : type == %u\n"
		 "\ttime_stamp : type == 31\n"
		 "\tdata max type_len  == 28\n", TD_TS_SHIFT, TD_TYPE_TIME_EXTEND);
	put_str(t, "header_event");
	put_sized(t, buf, 8);
}

/* The format file of event @k, matching the records td_pages() writes. */
static void td_format(struct td *t, enum td_kind k)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "name: %s\n"
		 "ID: %u\n"
		 "format:\n"
		 "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		 "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		 "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		 "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		 "\n"
		 "\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
		 "\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n"
		 "\tfield:unsigned long npages;\toffset:24;\tsize:8;\tsigned:0;\n"
		 "\n"
		 "print fmt: \"pfn=0x%%lx order=%%u npages=%%lu\", REC->pfn, REC->order,"
		 " REC->npages\n", td_kinds[k].name, td_kinds[k].id);
	put_sized(t, buf, 8);
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The cmdlines section, "PID COMM" lines as in tracefs's saved_cmdlines,
 * for every tgid the events name that has a name.
 */
static int td_cmdlines(struct td *t, struct pgtrace_reader *r)
{
	size_t n = 0, total = 0, len = 0, cap = 256;
	int32_t *pids;
	char *text;

	for (unsigned int i = 0; i < t->nr_cpus; i++)
		total += t->cpus[i].n;
	pids = malloc((total ? total : 1) * sizeof(*pids));
	text = malloc(cap);
	if (!pids || !text) {
		free(pids);
		free(text);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		for (size_t j = 0; j < t->cpus[i].n; j++)
			if (t->cpus[i].ev[j].pid > 0 &&
			    (!n || pids[n - 1] != t->cpus[i].ev[j].pid))
				pids[n++] = t->cpus[i].ev[j].pid;
	qsort(pids, n, sizeof(*pids), cmp_pid);
	text[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = pgtrace_reader_task_name(r, pids[i]);
		char line[64];
		int l;

		if ((i && pids[i] == pids[i - 1]) || !name || !*name)
			continue;
		l = snprintf(line, sizeof(line), "%" PRId32 " %s\n", pids[i], name);
		/* A comm may hold any byte; a newline would end the line early. */
		for (int k = 0; k < l - 1; k++)
			if (line[k] == '\n')
				line[k] = '?';
		if (len + l + 1 > cap) {
			char *p = realloc(text, cap * 2 + l);

			if (!p) {
				free(pids);
				free(text);
				return -ENOMEM;
			}
			text = p;
			cap = cap * 2 + l;
		}
		memcpy(text + len, line, l + 1);
		len += l;
	}
	put_sized(t, text, 8);
	free(pids);
	free(text);
	return 0;
}

static const uint8_t td_zero[TD_PAGE_SIZE];

static int td_write_file(struct td *t, struct pgtrace_reader *r)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	/* pagetrace's clocks: local_clock() (read from the TSC or not), or mono. */
	const char *clock = (h->flags & PAGETRACE_CLOCK_MASK) == PAGETRACE_CLOCK_MONOTONIC ?
			    "[mono]" : "[local]";
	uint64_t off, size;
	int ret;

	put(t, "\x17\x08\x44" "tracing" "6", 11);
	/* little endian, 8-byte longs, the ring buffer's page size */
	put(t, "\0\0\x08", 3);
	put32(t, TD_PAGE_SIZE);
	td_headers(t);
	put32(t, 0);			/* no ftrace (function tracer) formats */
	put32(t, 2);			/* event systems, two events each */
	put_str(t, td_kinds[TD_ALLOC].system);
	put32(t, 2);
	td_format(t, TD_ALLOC);
	td_format(t, TD_FREE);
	put_str(t, td_kinds[TD_RECLAIM].system);
	put32(t, 2);
	td_format(t, TD_RECLAIM);
	td_format(t, TD_SNAPSHOT);
	put32(t, 0);			/* kallsyms */
	put32(t, 0);			/* trace_printk formats */
	ret = td_cmdlines(t, r);
	if (ret)
		return ret;
	put32(t, t->nr_cpus);
	/*
	 * One option, TRACECLOCK (4): the clock's name follows the CPU
	 * offsets.  trace-cmd writes it empty, but 3.1 parses its payload as
	 * a clock name too, and an empty one leaves it reading whatever its
	 * buffer held: give it the name, NUL-terminated.  Then the end (0).
	 */
	put(t, "options  ", 10);
	put16(t, 4);
	put32(t, strlen(clock) + 1);
	put_str(t, clock);
	put16(t, 0);
	put(t, "flyrecord", 10);
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		td_pages(t, &t->cpus[i], false);
	/* Where the header ends: the CPU data starts at the next page. */
	off = t->pos + 16ULL * t->nr_cpus + 8 + strlen(clock);
	off = (off + TD_PAGE_SIZE - 1) / TD_PAGE_SIZE * TD_PAGE_SIZE;
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		size = t->cpus[i].pages * TD_PAGE_SIZE;
		put64(t, off);
		put64(t, size);
		off += size;
	}
	put_sized(t, clock, 8);
	put(t, td_zero, (TD_PAGE_SIZE - t->pos % TD_PAGE_SIZE) % TD_PAGE_SIZE);
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		td_pages(t, &t->cpus[i], true);
	return 0;
}

int tracedat_write(struct pgtrace_reader *r, FILE *out)
{
	struct td t = { .out = out };
	struct pgtrace_event ev;
	int ret, err;

	t.nr_cpus = pgtrace_reader_header(r)->nr_cpus;
	t.cpus = calloc(t.nr_cpus ? t.nr_cpus : 1, sizeof(*t.cpus));
	if (!t.cpus)
		return -ENOMEM;
	/*
	 * One event at a time: the chunk callback then runs after every
	 * event of the chunks before it was returned, so a loss lands on
	 * the right event.
	 */
	pgtrace_reader_set_chunk_cb(r, td_chunk, &t);
	while ((ret = pgtrace_reader_next(r, &ev)) > 0) {
		ret = td_add(&t, &ev);
		if (ret)
			goto out;
	}
	/*
	 * A corrupt or cut-off stream still gives a file of the events before
	 * the damage, as the other formats do; its error is returned after.
	 */
	err = ret;
	ret = 0;
	for (unsigned int i = 0; !ret && i < t.nr_cpus; i++)
		ret = td_sort(&t.cpus[i]);
	if (!ret)
		ret = td_write_file(&t, r);
	for (unsigned int i = 0; !ret && !err && i < t.nr_cpus; i++) {
		struct td_cpu *c = &t.cpus[i];

		if (c->pending_lost || c->pending_unknown)
			fprintf(stderr, "pagetrace: note: CPU %u lost %" PRIu64 " events after"
				" its last one%s; trace-cmd marks losses on the next event,"
				" so these are not in the file\n", i, c->pending_lost,
				c->pending_unknown ? " (and whole chunks)" : "");
	}
out:
	for (unsigned int i = 0; i < t.nr_cpus; i++)
		free(t.cpus[i].ev);
	free(t.cpus);
	return ret ? ret : err;
}
