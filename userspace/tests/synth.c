// SPDX-License-Identifier: GPL-2.0
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "synth.h"

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		abort();
	return p;
}

void synth_put(struct synth *s, const void *p, size_t n)
{
	if (!n)
		return;
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->buf = xrealloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void put32(struct synth *s, uint32_t v)
{
	v = htole32(v);
	synth_put(s, &v, 4);
}

static void put64(struct synth *s, uint64_t v)
{
	v = htole64(v);
	synth_put(s, &v, 8);
}

static void put_record(struct synth *s, uint32_t type, const void *p, uint32_t size)
{
	static const unsigned char zero[8];

	put32(s, type);
	put32(s, size);
	synth_put(s, p, size);
	synth_put(s, zero, (8 - size % 8) % 8);
}

static const struct pgtrace_zone synth_zone = {
	.node = 0, .zone = 1, .start_pfn = 0x1000, .end_pfn = 0x100000,
	.present_pages = 0xfe000, .name = "DMA32",
};

static void init_header(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			unsigned int flags, const struct pgtrace_zone *zones,
			unsigned int nr_zones, uint64_t counters_ns,
			const struct pagetrace_rec_snapshot *snap);

void synth_init(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
		unsigned int flags)
{
	init_header(s, nr_cpus, chunk_size, flags, &synth_zone, 1, 0, NULL);
}

void synth_init_counted(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			unsigned int flags, uint64_t counters_ns)
{
	init_header(s, nr_cpus, chunk_size, flags, &synth_zone, 1, counters_ns, NULL);
}

void synth_init_zones(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
		      unsigned int flags, const struct pgtrace_zone *zones, unsigned int nr_zones)
{
	init_header(s, nr_cpus, chunk_size, flags, zones, nr_zones, 0, NULL);
}

void synth_init_zones_counted(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			      unsigned int flags, const struct pgtrace_zone *zones,
			      unsigned int nr_zones, uint64_t counters_ns)
{
	init_header(s, nr_cpus, chunk_size, flags, zones, nr_zones, counters_ns, NULL);
}

void synth_init_snapshot_rec(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			     uint64_t counters_ns, const struct pagetrace_rec_snapshot *snap)
{
	init_header(s, nr_cpus, chunk_size, PAGETRACE_FLAG_SNAPSHOT, &synth_zone, 1,
		    counters_ns, snap);
}

static void init_header(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			unsigned int flags, const struct pgtrace_zone *zones,
			unsigned int nr_zones, uint64_t counters_ns,
			const struct pagetrace_rec_snapshot *snap)
{
	struct pagetrace_rec_session ses = {
		.nr_bufs = htole32(4), .backend = htole32(PAGETRACE_BACKEND_KPROBE),
		.flush_ms = htole32(100),
	};
	static const char rel[] = "6.1.0-synth";
	struct pagetrace_header *h = &s->hdr;
	size_t hdr_start;

	memset(s, 0, sizeof(*s));
	memcpy(h->magic, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN);
	h->version = PAGETRACE_VERSION;
	h->page_shift = 12;
	h->time_lost_bits = PAGETRACE_TIME_LOST_BITS;
	h->time_delta_bits = PAGETRACE_TIME_DELTA_BITS;
	h->nr_cpus = nr_cpus;
	h->start_ns = 1000000000ULL;
	h->start_mono_ns = 2000000000ULL;
	h->start_real_ns = 1700000000000000000ULL;
	h->chunk_size = chunk_size;
	h->flags = flags;
	s->max_words = (chunk_size - sizeof(struct pagetrace_chunk)) / 8;
	s->cpus = calloc(nr_cpus, sizeof(*s->cpus));
	if (!s->cpus)
		abort();
	for (unsigned int i = 0; i < nr_cpus; i++) {
		s->cpus[i].words = calloc(s->max_words, 8);
		s->cpus[i].pending = calloc(s->max_words, sizeof(struct pgtrace_event));
		if (!s->cpus[i].words || !s->cpus[i].pending)
			abort();
		s->cpus[i].last = h->start_ns;
	}

	/* Header fields first with header_size patched in once known. */
	hdr_start = s->len;
	synth_put(s, h->magic, 8);
	put32(s, h->version);
	put32(s, 0);
	put32(s, h->page_shift);
	put32(s, h->time_lost_bits);
	put32(s, h->time_delta_bits);
	put32(s, h->nr_cpus);
	put64(s, h->start_ns);
	put64(s, h->start_mono_ns);
	put64(s, h->start_real_ns);
	put32(s, h->chunk_size);
	put32(s, h->flags);
	put_record(s, PAGETRACE_REC_RELEASE, rel, sizeof(rel));
	for (unsigned int i = 0; i < nr_zones; i++) {
		struct pagetrace_rec_zone z = {
			.node = htole32(zones[i].node), .zone = htole32(zones[i].zone),
			.start_pfn = htole64(zones[i].start_pfn),
			.end_pfn = htole64(zones[i].end_pfn),
			.present_pages = htole64(zones[i].present_pages),
		};

		memcpy(z.name, zones[i].name, sizeof(z.name));
		put_record(s, PAGETRACE_REC_ZONE, &z, sizeof(z));
	}
	put_record(s, PAGETRACE_REC_SESSION, &ses, sizeof(ses));
	if (flags & PAGETRACE_FLAG_STACKS) {
		struct pagetrace_rec_stacks st = {
			.rate = htole32(SYNTH_RATE),
			.max_depth = htole32(PAGETRACE_STACK_MAX_DEPTH),
			.anchor_addr = htole64(SYNTH_ANCHOR_ADDR),
			.anchor_name = SYNTH_ANCHOR_NAME,
		};

		s->stacks_rec_off = s->len + 8;
		put_record(s, PAGETRACE_REC_STACKS, &st, sizeof(st));
	}
	if (flags & PAGETRACE_FLAG_FILTERED) {
		struct pagetrace_rec_filter f = {
			.types = htole32(1U << PAGETRACE_EV_ALLOC | 1U << PAGETRACE_EV_FREE),
			.orders = htole64(0xf),
			.nodes = { htole64(1) },
			.cgroup_id = htole64(1234),
		};

		s->filter_rec_off = s->len + 8;
		put_record(s, PAGETRACE_REC_FILTER, &f, sizeof(f));
	}
	if (counters_ns) {
		struct {
			struct pagetrace_rec_counters c;
			struct pagetrace_zone_counters z;
		} rc = {
			.c = { .time_ns = htole64(counters_ns), .nr_zones = htole32(1) },
			.z = { .node = htole32(zones[0].node), .zone = htole32(zones[0].zone),
			       .present_pages = htole64(zones[0].present_pages),
			       .managed_pages = htole64(zones[0].present_pages),
			       .free_pages = htole64(zones[0].present_pages / 2) },
		};

		put_record(s, PAGETRACE_REC_COUNTERS, &rc, sizeof(rc));
	}
	if (snap) {
		struct pagetrace_rec_snapshot le;
		const uint64_t *from = (const uint64_t *)snap;
		uint64_t *to = (uint64_t *)&le;

		for (size_t i = 0; i < sizeof(le) / 8; i++)
			to[i] = htole64(from[i]);
		put_record(s, PAGETRACE_REC_SNAPSHOT, &le, sizeof(le));
	}
	put_record(s, PAGETRACE_REC_END, NULL, 0);
	h->header_size = s->len - hdr_start;
	{
		uint32_t hs = htole32(h->header_size);

		memcpy(s->buf + hdr_start + 12, &hs, 4);
	}
}

void synth_free(struct synth *s)
{
	for (unsigned int i = 0; i < s->hdr.nr_cpus; i++) {
		free(s->cpus[i].words);
		free(s->cpus[i].pending);
	}
	free(s->cpus);
	free(s->buf);
	free(s->exp);
	memset(s, 0, sizeof(*s));
}

void synth_put_chunk(struct synth *s, unsigned int cpu, unsigned int flags,
		     uint64_t seq, uint64_t lost, const uint64_t *words, unsigned int n)
{
	synth_put(s, PAGETRACE_CHUNK_MAGIC, 4);
	{
		uint16_t c = htole16(cpu), f = htole16(flags);

		synth_put(s, &c, 2);
		synth_put(s, &f, 2);
	}
	put32(s, n);
	put32(s, 0);
	put64(s, seq);
	put64(s, lost);
	for (unsigned int i = 0; i < n; i++)
		put64(s, words[i]);
}

void synth_flush(struct synth *s, unsigned int cpu, unsigned int flags)
{
	struct synth_cpu *c = &s->cpus[cpu];
	uint64_t word0 = s->len + sizeof(struct pagetrace_chunk);

	if (!c->nr)
		return;
	if (c->snapshot)
		flags |= PAGETRACE_CHUNK_SNAPSHOT;
	synth_put_chunk(s, cpu, flags, c->snapshot ? 0 : c->seq, c->lost, c->words, c->nr);
	if (s->nexp + c->npending > s->capexp) {
		s->capexp = (s->nexp + c->npending) * 2;
		s->exp = xrealloc(s->exp, s->capexp * sizeof(*s->exp));
	}
	for (unsigned int i = 0; i < c->npending; i++) {
		struct pgtrace_event *e = &s->exp[s->nexp++];

		*e = c->pending[i];
		/* Pending offsets are word indexes until the chunk lands. */
		e->offset = word0 + 8 * e->offset;
		e->seq = c->snapshot ? 0 : c->seq;
		e->chunk_flags = flags;
	}
	if (c->snapshot) {
		c->snapshot = false;
		c->last = c->saved_last;
	} else {
		c->seq++;
	}
	c->lost = 0;
	c->nr = 0;
	c->npending = 0;
	c->task = PGTRACE_TASK_UNKNOWN;
}

void synth_flush_all(struct synth *s)
{
	for (unsigned int i = 0; i < s->hdr.nr_cpus; i++)
		synth_flush(s, i, PAGETRACE_CHUNK_FLUSHED);
}

void synth_snapshot(struct synth *s, unsigned int cpu)
{
	struct synth_cpu *c = &s->cpus[cpu];

	synth_flush(s, cpu, PAGETRACE_CHUNK_FLUSHED);
	c->snapshot = true;
	c->saved_last = c->last;
	c->last = 0;
}

/* Room for @need more words, opening a chunk at time @t if there is none. */
static void reserve(struct synth *s, unsigned int cpu, uint64_t t, unsigned int need)
{
	struct synth_cpu *c = &s->cpus[cpu];

	if (c->nr && c->nr + need > s->max_words)
		synth_flush(s, cpu, 0);
	if (!c->nr) {
		c->words[c->nr++] = pagetrace_pid_word(cpu);
		c->words[c->nr++] = pagetrace_sync_word(t);
		c->base = t & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
		c->task = PGTRACE_TASK_UNKNOWN;
	}
}

void synth_event(struct synth *s, unsigned int cpu, uint64_t t, unsigned int type,
		 uint64_t pfn, uint64_t npages)
{
	struct synth_cpu *c = &s->cpus[cpu];
	bool large = npages > PAGETRACE_NPAGES_MAX;
	unsigned int need = large ? 2 : 1;
	struct pgtrace_event *e;

	if (t < c->last)
		t = c->last;
	c->last = t;
	/* One more word in case a sync has to go first. */
	reserve(s, cpu, t, need + 1);
	if (t - c->base >= PAGETRACE_TIME_MAX_DELTA) {
		c->words[c->nr++] = pagetrace_sync_word(t);
		c->base = t & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
		s->nsyncs++;
	}
	e = &c->pending[c->npending++];
	memset(e, 0, sizeof(*e));
	e->offset = c->nr;
	if (large) {
		c->words[c->nr++] = pagetrace_large_event_word(t - c->base, pfn, type);
		c->words[c->nr++] = npages;
	} else {
		c->words[c->nr++] = pagetrace_event_word(t - c->base, pfn, npages, type);
	}
	e->time_ns = c->base + (((t - c->base) >> PAGETRACE_TIME_LOST_BITS)
				<< PAGETRACE_TIME_LOST_BITS);
	e->pfn = pfn & PAGETRACE_PFN_MAX;
	e->npages = npages;
	e->task = c->task;
	e->cpu = cpu;
	e->type = type;
}

void synth_task(struct synth *s, unsigned int cpu, uint32_t tgid)
{
	struct synth_cpu *c = &s->cpus[cpu];

	reserve(s, cpu, c->last, 1);
	c->words[c->nr++] = pagetrace_pid_word(PAGETRACE_ID_TASK | tgid);
	c->task = tgid;
}

void synth_name(struct synth *s, unsigned int cpu, uint32_t tgid, const char *comm)
{
	struct synth_cpu *c = &s->cpus[cpu];
	unsigned char b[PAGETRACE_COMM_LEN] = { 0 };
	size_t len = strlen(comm);
	unsigned int n;

	memcpy(b, comm, len < sizeof(b) ? len : sizeof(b));
	n = pagetrace_name_slices(len < sizeof(b) ? len : sizeof(b));
	reserve(s, cpu, c->last, n + 1);
	for (unsigned int i = 0; i < n; i++)
		c->words[c->nr++] = pagetrace_name_word(i, b);
	c->words[c->nr++] = pagetrace_task_word(tgid);
	c->task = tgid;
}

void synth_stack_def(struct synth *s, unsigned int cpu, uint32_t id, unsigned int depth,
		     bool cut, const uint64_t *frames)
{
	struct synth_cpu *c = &s->cpus[cpu];

	/* Room for the SAMPLE and a large event (and a sync) after it. */
	reserve(s, cpu, c->last, depth + 1 + 4);
	c->words[c->nr++] = pagetrace_stack_def_word(id, depth, cut);
	for (unsigned int i = 0; i < depth; i++)
		c->words[c->nr++] = pagetrace_frame_word(frames[i]);
}

void synth_sample(struct synth *s, unsigned int cpu, uint64_t t, uint32_t id,
		  uint64_t pfn, uint64_t npages)
{
	struct synth_cpu *c = &s->cpus[cpu];
	unsigned int nr;

	if (t < c->last)
		t = c->last;
	/* A sync (if due) must come before the SAMPLE, not between. */
	reserve(s, cpu, t, 4);
	if (t - c->base >= PAGETRACE_TIME_MAX_DELTA) {
		c->words[c->nr++] = pagetrace_sync_word(t);
		c->base = t & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
		s->nsyncs++;
	}
	c->words[c->nr++] = pagetrace_sample_word(id);
	nr = c->nr;
	synth_event(s, cpu, t, PAGETRACE_EV_ALLOC, pfn, npages);
	/* synth_event() found room and needed no sync: same chunk, next word. */
	if (c->nr <= nr)
		abort();
	c->pending[c->npending - 1].stack = id ? id : PGTRACE_STACK_UNKNOWN;
}

void synth_symbols(struct synth *s, unsigned int n, const uint64_t *addrs,
		   const char *const *names, const uint64_t *offsets)
{
	uint64_t *w = NULL;
	unsigned int nw = 0;

	for (unsigned int i = 0; i < n; i++) {
		size_t len = strlen(names[i]), k = (len + 7) / 8;

		w = xrealloc(w, (nw + 2 + k) * 8);
		w[nw++] = addrs[i];
		w[nw++] = len | offsets[i] << PAGETRACE_SYM_OFFSET_SHIFT;
		memset(w + nw, 0, 8 * k);
		memcpy(w + nw, names[i], len);
		/* synth_put_chunk() stores words little-endian. */
		for (size_t j = 0; j < k; j++)
			w[nw + j] = le64toh(w[nw + j]);
		nw += k;
	}
	synth_put_chunk(s, 0, PAGETRACE_CHUNK_SYMBOLS, 0, 0, w, nw);
	free(w);
}

int synth_write_slowly(int fd, const void *buf, size_t len, unsigned int max_piece,
		       unsigned int seed)
{
	const unsigned char *p = buf;
	uint64_t st = seed | 1;

	while (len) {
		size_t n = 1 + synth_rand(&st) % max_piece;
		ssize_t w;

		if (n > len)
			n = len;
		w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= w;
	}
	return 0;
}

int synth_read_all(struct pgtrace_reader *r, unsigned int batch, struct pgtrace_event **evs,
		   size_t *n)
{
	size_t cap = 1024;
	int ret;

	*n = 0;
	*evs = xrealloc(NULL, cap * sizeof(**evs));
	for (;;) {
		if (*n + batch > cap) {
			cap = (*n + batch) * 2;
			*evs = xrealloc(*evs, cap * sizeof(**evs));
		}
		if (batch == 1)
			ret = pgtrace_reader_next(r, *evs + *n);
		else
			ret = pgtrace_reader_next_batch(r, *evs + *n, batch);
		if (ret <= 0)
			return ret;
		*n += ret;
	}
}

long synth_compare(const struct synth *s, const struct pgtrace_event *got, size_t n,
		   bool exact, char *why, size_t whylen)
{
	size_t i;

	if (n > s->nexp || (exact && n != s->nexp)) {
		snprintf(why, whylen, "got %zu events, expected %zu", n, s->nexp);
		return (long)(n < s->nexp ? n : s->nexp);
	}
	for (i = 0; i < n; i++) {
		const struct pgtrace_event *e = &s->exp[i], *g = &got[i];

		if (memcmp(e, g, sizeof(*e))) {
			snprintf(why, whylen,
				 "event %zu: got t=%llu pfn=%llx np=%llu off=%llu seq=%llu task=%lld cpu=%u fl=%x type=%u; "
				 "expected t=%llu pfn=%llx np=%llu off=%llu seq=%llu task=%lld cpu=%u fl=%x type=%u",
				 i, (unsigned long long)g->time_ns, (unsigned long long)g->pfn,
				 (unsigned long long)g->npages, (unsigned long long)g->offset,
				 (unsigned long long)g->seq, (long long)g->task, g->cpu,
				 g->chunk_flags, g->type,
				 (unsigned long long)e->time_ns, (unsigned long long)e->pfn,
				 (unsigned long long)e->npages, (unsigned long long)e->offset,
				 (unsigned long long)e->seq, (long long)e->task, e->cpu,
				 e->chunk_flags, e->type);
			return (long)i;
		}
	}
	return -1;
}

int synth_run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p);
}

void synth_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fwrite(p, 1, n, f);
	fclose(f);
}
