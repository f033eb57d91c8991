// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the pagetrace selftests for the stream itself: growing
 * buffers, the raw stream walked without libpagetrace, and decoding with
 * it; see pt_selftest.h.  The module, its parameters, the kernel log and
 * page traffic are in pt_selftest.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/mempolicy.h>

#include "pt_selftest.h"

/* --------------------------------------------------------- stream buffers */

void pt_st_buf_reserve(struct pt_st_buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? 2 * b->cap : 1 << 20;
	b->p = realloc(b->p, b->cap);
	if (!b->p)
		abort();
}

void pt_st_buf_add(struct pt_st_buf *b, const void *p, size_t len)
{
	pt_st_buf_reserve(b, len);
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

void pt_st_buf_free(struct pt_st_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

ssize_t pt_st_buf_read(int fd, struct pt_st_buf *b)
{
	ssize_t n;

	pt_st_buf_reserve(b, 1 << 20);
	n = read(fd, b->p + b->len, 1 << 20);
	if (n > 0)
		b->len += n;
	return n;
}

int pt_st_buf_drain(int fd, struct pt_st_buf *b)
{
	for (;;) {
		ssize_t n = pt_st_buf_read(fd, b);

		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EAGAIN ? 1 : -errno;
	}
}

int pt_st_load_file(const char *path, struct pt_st_buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	b->len = 0;
	if (fd < 0)
		return -errno;
	ret = pt_st_buf_drain(fd, b);
	close(fd);
	return ret;
}

void pt_st_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

/* ------------------------------------------ the raw stream, without libpagetrace */

void pt_st_parse_header(const unsigned char *raw, size_t len,
			struct pt_st_hdr *hi)
{
	size_t pos = sizeof(hi->h), hsize;

	memset(hi, 0, sizeof(*hi));
	if (len < sizeof(hi->h)) {
		snprintf(hi->why, sizeof(hi->why), "only %zu bytes", len);
		return;
	}
	memcpy(&hi->h, raw, sizeof(hi->h));
	hsize = hi->h.header_size;
	if (hsize > len || hsize < sizeof(hi->h)) {
		snprintf(hi->why, sizeof(hi->why), "header_size %zu, have %zu",
			 hsize, len);
		return;
	}
	while (pos + sizeof(struct pagetrace_record) <= hsize) {
		struct pagetrace_record rec;
		const unsigned char *pl;
		size_t space;

		memcpy(&rec, raw + pos, sizeof(rec));
		if (rec.type == PAGETRACE_REC_END) {
			hi->have_end = true;
			if (rec.size)
				snprintf(hi->why, sizeof(hi->why),
					 "END record at %zu has size %u",
					 pos, rec.size);
			return;
		}
		space = (rec.size + 7) & ~7UL;
		pl = raw + pos + sizeof(rec);
		if (pos + sizeof(rec) + space > hsize) {
			snprintf(hi->why, sizeof(hi->why),
				 "record type %u at %zu overruns header_size %zu",
				 rec.type, pos, hsize);
			return;
		}
		for (size_t i = rec.size; i < space; i++) {
			if (pl[i]) {
				snprintf(hi->why, sizeof(hi->why),
					 "record at %zu: nonzero padding", pos);
				return;
			}
		}
		switch (rec.type) {
		case PAGETRACE_REC_RELEASE:
			if (!rec.size || rec.size > sizeof(hi->release) ||
			    pl[rec.size - 1]) {
				snprintf(hi->why, sizeof(hi->why),
					 "bad release record (size %u)", rec.size);
				return;
			}
			memcpy(hi->release, pl, rec.size);
			hi->have_release = true;
			break;
		case PAGETRACE_REC_SESSION:
			if (rec.size != sizeof(hi->sess)) {
				snprintf(hi->why, sizeof(hi->why),
					 "session record size %u", rec.size);
				return;
			}
			memcpy(&hi->sess, pl, sizeof(hi->sess));
			hi->have_session = true;
			break;
		case PAGETRACE_REC_ZONE:
			if (rec.size != sizeof(hi->zones[0]) ||
			    hi->nr_zones == 64) {
				snprintf(hi->why, sizeof(hi->why),
					 "zone record size %u (#%u)", rec.size,
					 hi->nr_zones);
				return;
			}
			memcpy(&hi->zones[hi->nr_zones++], pl, rec.size);
			break;
		}
		pos += sizeof(rec) + space;
	}
}

int pt_st_read_header(int fd, struct pt_st_buf *b, struct pt_st_hdr *hi)
{
	struct pagetrace_header h;
	ssize_t n;

	pt_st_buf_reserve(b, sizeof(h));
	n = read(fd, b->p + b->len, sizeof(h));
	if (n != sizeof(h))
		return n < 0 ? -errno : -EIO;
	memcpy(&h, b->p + b->len, sizeof(h));
	b->len += n;
	if (h.header_size < sizeof(h) || h.header_size > (1 << 20))
		return -EBADMSG;
	pt_st_buf_reserve(b, h.header_size);
	while (b->len < h.header_size) {
		n = read(fd, b->p + b->len, h.header_size - b->len);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		b->len += n;
	}
	pt_st_parse_header(b->p, b->len, hi);
	return 0;
}

size_t pt_st_walk_chunks(const struct pt_st_buf *b,
			 const struct pagetrace_header *h,
			 struct pt_st_raw_cpu *cpus, char *why, size_t whylen)
{
	size_t pos = h->header_size;
	uint64_t start_base = h->start_ns & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
	uint32_t max_words = (h->chunk_size - sizeof(struct pagetrace_chunk)) / 8;

	why[0] = 0;
	while (pos + sizeof(struct pagetrace_chunk) <= b->len) {
		struct pagetrace_chunk ch;
		uint64_t w0, w1;
		size_t size;

		memcpy(&ch, b->p + pos, sizeof(ch));
		size = sizeof(ch) + (size_t)ch.nr_words * 8;
		if (memcmp(ch.magic, PAGETRACE_CHUNK_MAGIC, 4)) {
			snprintf(why, whylen, "offset %zu: no chunk magic", pos);
			break;
		}
		if (ch.cpu >= h->nr_cpus || ch.reserved ||
		    ch.nr_words < 2 || ch.nr_words > max_words) {
			snprintf(why, whylen,
				 "offset %zu: chunk cpu %u reserved %u nr_words %u (max %u)",
				 pos, ch.cpu, ch.reserved, ch.nr_words, max_words);
			break;
		}
		if (pos + size > b->len)
			break;	/* partial: the caller reads more */
		/*
		 * Unflushed chunks close only when the next event won't fit:
		 * at most 3 words, 7 with a name and a task record before it.
		 */
		if (!(ch.flags & PAGETRACE_CHUNK_FLUSHED) &&
		    ch.nr_words + (h->flags & PAGETRACE_FLAG_TASKS ? 7 : 3) <= max_words) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu not flushed but only %u of %u words",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 ch.nr_words, max_words);
			break;
		}
		if (ch.flags & ~PAGETRACE_CHUNK_FLUSHED) {
			snprintf(why, whylen, "offset %zu: chunk flags %#x",
				 pos, ch.flags);
			break;
		}
		memcpy(&w0, b->p + pos + sizeof(ch), 8);
		memcpy(&w1, b->p + pos + sizeof(ch) + 8, 8);
		if (!pagetrace_word_is_pid(w0) ||
		    pagetrace_word_id(w0) != ch.cpu) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu: word 0 is %#llx, not pid(%u)",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 (unsigned long long)w0, ch.cpu);
			break;
		}
		if (pagetrace_word_type(w1) != PAGETRACE_EV_SYNC ||
		    pagetrace_word_is_pid(w1) ||
		    pagetrace_word_sync_ns(w1) < start_base) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu: word 1 %#llx is not a sync at or after start %llu",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 (unsigned long long)w1,
				 (unsigned long long)h->start_ns);
			break;
		}
		if (cpus) {
			cpus[ch.cpu].chunks++;
			cpus[ch.cpu].bytes += size;
			cpus[ch.cpu].lost += ch.lost;
			if (!(ch.flags & PAGETRACE_CHUNK_FLUSHED))
				cpus[ch.cpu].full_chunks++;
			if (ch.nr_words > cpus[ch.cpu].max_words)
				cpus[ch.cpu].max_words = ch.nr_words;
		}
		pos += size;
	}
	return pos;
}

/* ------------------------------------------- decoding with libpagetrace */

static __attribute__((format(printf, 2, 3)))
void pt_st_problem(struct pt_st_decoded *d, const char *fmt, ...)
{
	va_list ap;

	if (d->first_problem[0])
		return;
	va_start(ap, fmt);
	vsnprintf(d->first_problem, sizeof(d->first_problem), fmt, ap);
	va_end(ap);
}

static int pt_st_dec_chunk_cb(const struct pgtrace_chunk *c, void *arg)
{
	struct pt_st_decoded *d = arg;

	if (c->cpu >= d->nr_cpus) {
		d->cpu_errors++;
		pt_st_problem(d, "chunk at %llu: cpu %u >= nr_cpus %u",
			      (unsigned long long)c->offset, c->cpu, d->nr_cpus);
		return 0;
	}
	if (c->seq != d->cpus[c->cpu].next_seq || c->missing) {
		d->seq_errors++;
		pt_st_problem(d, "cpu %u: chunk seq %llu, expected %llu (missing %llu)",
			      c->cpu, (unsigned long long)c->seq,
			      (unsigned long long)d->cpus[c->cpu].next_seq,
			      (unsigned long long)c->missing);
	}
	d->cpus[c->cpu].next_seq = c->seq + 1;
	d->cpus[c->cpu].chunks++;
	d->cpus[c->cpu].lost += c->lost;
	d->chunks++;
	d->lost += c->lost;
	return 0;
}

void pt_st_decode_mem(const unsigned char *p, size_t len,
		      struct pt_st_decoded *d)
{
	struct pgtrace_event evs[512];
	const struct pagetrace_header *h;
	struct pgtrace_reader *r = NULL;
	uint64_t want = d->want_pfn;
	int n;

	memset(d, 0, sizeof(*d));
	d->want_pfn = want;
	d->err = pgtrace_reader_open_mem(&r, p, len, 0);
	if (d->err) {
		if (r)
			snprintf(d->errmsg, sizeof(d->errmsg), "%s",
				 pgtrace_reader_error(r));
		pgtrace_reader_close(r);
		return;
	}
	h = pgtrace_reader_header(r);
	d->nr_cpus = h->nr_cpus;
	d->cpus = calloc(d->nr_cpus, sizeof(*d->cpus));
	pgtrace_reader_set_chunk_cb(r, pt_st_dec_chunk_cb, d);
	while ((n = pgtrace_reader_next_batch(r, evs, 512)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pgtrace_event *e = &evs[i];
			struct pt_st_dec_cpu *c;

			if (e->cpu >= d->nr_cpus) {
				d->cpu_errors++;
				continue;
			}
			c = &d->cpus[e->cpu];
			if (e->time_ns < c->last_ns) {
				d->time_errors++;
				pt_st_problem(d, "cpu %u: event at %llu after one at %llu",
					      e->cpu, (unsigned long long)e->time_ns,
					      (unsigned long long)c->last_ns);
			}
			c->last_ns = e->time_ns;
			if (e->time_ns < h->start_ns) {
				d->before_start++;
				pt_st_problem(d, "cpu %u: event at %llu before start %llu",
					      e->cpu, (unsigned long long)e->time_ns,
					      (unsigned long long)h->start_ns);
			}
			c->events++;
			d->events++;
			if (e->type < 5)
				d->by_type[e->type]++;
			if (want && e->pfn == want && e->npages == 1) {
				if (e->type == PGTRACE_EV_ALLOC && !d->found_alloc) {
					d->found_alloc = true;
					d->found_alloc_ns = e->time_ns;
				}
				if (e->type == PGTRACE_EV_FREE && d->found_alloc &&
				    !d->found_free) {
					d->found_free = true;
					d->found_free_ns = e->time_ns;
				}
			}
		}
	}
	d->err = n;
	if (n < 0)
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", pgtrace_reader_error(r));
	d->ctr = *pgtrace_reader_counters(r);
	pgtrace_reader_close(r);
}

void pt_st_decoded_free(struct pt_st_decoded *d)
{
	free(d->cpus);
	d->cpus = NULL;
}

static int pt_st_count_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct pt_st_counts *d = arg;

	if (c->cpu >= PT_ST_MAX_CPUS || (c->flags & PAGETRACE_CHUNK_SNAPSHOT))
		return 0;
	if (!d->chunks[c->cpu])
		d->first_seq[c->cpu] = c->seq;
	d->last_seq[c->cpu] = c->seq;
	d->chunks[c->cpu]++;
	d->lost[c->cpu] += c->lost;
	d->bytes[c->cpu] += 32 + 8ULL * c->nr_words;
	d->missing[c->cpu] += c->missing;
	return 0;
}

void pt_st_count_stream(const struct pt_st_buf *b, struct pt_st_counts *d,
			uint64_t want_pfn)
{
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	int ret;

	memset(d, 0, sizeof(*d));
	d->found_cpu = -1;
	ret = pgtrace_reader_open_mem(&r, b->p, b->len, 0);
	if (ret) {
		d->err = ret;
		snprintf(d->why, sizeof(d->why), "%s", r ? pgtrace_reader_error(r) : "open");
		pgtrace_reader_close(r);
		return;
	}
	pgtrace_reader_set_chunk_cb(r, pt_st_count_chunk, d);
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		/* The memory map at start is no CPU's traffic: not counted. */
		if (ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
			continue;
		if (ev.cpu < PT_ST_MAX_CPUS)
			d->events[ev.cpu]++;
		if (want_pfn && ev.type == PGTRACE_EV_ALLOC && ev.pfn <= want_pfn &&
		    want_pfn < ev.pfn + ev.npages) {
			d->found_alloc = true;
			d->found_cpu = ev.cpu;
			d->found_seq = ev.seq;
		}
	}
	if (ret < 0) {
		d->err = ret;
		snprintf(d->why, sizeof(d->why), "%s", pgtrace_reader_error(r));
	}
	pgtrace_reader_close(r);
}

int pt_st_start_session(int *fd, int flags, struct pt_st_buf *b, struct pt_st_hdr *hi)
{
	*fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC | flags);
	if (*fd < 0)
		return -errno;
	return pt_st_read_header(*fd, b, hi);
}

int pt_st_session_cleanup(struct pt_st_buf *b, struct pt_st_decoded *d)
{
	pt_st_buf_free(b);
	pt_st_decoded_free(d);
	pt_st_set_param("snapshot", "1");
	return pt_st_mod_ensure_default();
}
