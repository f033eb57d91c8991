// SPDX-License-Identifier: GPL-2.0
/*
 * Opening a reader: the stream header and its records.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"

/* Copy @n bytes out of the stream; the header may not fit in the buffer. */
static int read_exact(struct pgtrace_reader *r, void *dst, size_t n, size_t *got)
{
	unsigned char *d = dst;

	*got = 0;
	while (n) {
		size_t step = n < r->cap ? n : r->cap;
		ssize_t have = pgtrace_fill(r, step);

		if (have < 0)
			return have;
		if ((size_t)have > n)
			have = n;
		if (!have)
			return -ENODATA;
		memcpy(d, r->buf + r->pos, have);
		r->pos += have;
		d += have;
		n -= have;
		*got += have;
		if ((size_t)have < step)
			return -ENODATA;
	}
	return 0;
}

static int check_header(struct pgtrace_reader *r, const unsigned char *raw)
{
	struct pagetrace_header *h = &r->hdr;

#define LOAD32(f) (h->f = pgtrace_load32(raw + offsetof(struct pagetrace_header, f)))
#define LOAD64(f) (h->f = pgtrace_load64(raw + offsetof(struct pagetrace_header, f)))
#define OFF(f) offsetof(struct pagetrace_header, f)
	memcpy(h->magic, raw, sizeof(h->magic));
	LOAD32(version);
	LOAD32(header_size);
	LOAD32(page_shift);
	LOAD32(time_lost_bits);
	LOAD32(time_delta_bits);
	LOAD32(nr_cpus);
	LOAD64(start_ns);
	LOAD64(start_mono_ns);
	LOAD64(start_real_ns);
	LOAD32(chunk_size);
	LOAD32(flags);

	if (memcmp(h->magic, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN))
	{
		char m[4 * PAGETRACE_MAGIC_LEN + 1];

		pgtrace_escape(m, h->magic, PAGETRACE_MAGIC_LEN);
		return pgtrace_set_error(r, -EBADMSG, 0,
				    "magic is '%s', expected 'PGTRACE\\0'", m);
	}
	if (h->version != PAGETRACE_VERSION)
		return pgtrace_set_error(r, -EBADMSG, OFF(version),
				    "version %u, expected %u",
				    h->version, PAGETRACE_VERSION);
	if (h->header_size < sizeof(*h) || h->header_size % 8 ||
	    h->header_size > PGTRACE_READER_MAX_HEADER)
		return pgtrace_set_error(r, -EBADMSG, OFF(header_size),
				    "header_size %u is not a multiple of 8 in [%zu, %u]",
				    h->header_size, sizeof(*h), PGTRACE_READER_MAX_HEADER);
	if (h->page_shift < 9 || h->page_shift > 30)
		return pgtrace_set_error(r, -EBADMSG, OFF(page_shift),
				    "page_shift %u out of range [9, 30]", h->page_shift);
	/* The decoder hard-codes the word layout, so it must match exactly. */
	if (h->time_lost_bits != PAGETRACE_TIME_LOST_BITS)
		return pgtrace_set_error(r, -EBADMSG, OFF(time_lost_bits),
				    "time_lost_bits %u, expected %u",
				    h->time_lost_bits, PAGETRACE_TIME_LOST_BITS);
	if (h->time_delta_bits != PAGETRACE_TIME_DELTA_BITS)
		return pgtrace_set_error(r, -EBADMSG, OFF(time_delta_bits),
				    "time_delta_bits %u, expected %u",
				    h->time_delta_bits, PAGETRACE_TIME_DELTA_BITS);
	/* Chunk cpu is a __u16, so more CPUs could never be named. */
	if (!h->nr_cpus || h->nr_cpus > 65536)
		return pgtrace_set_error(r, -EBADMSG, OFF(nr_cpus),
				    "nr_cpus %u out of range [1, 65536]", h->nr_cpus);
	if (h->chunk_size < sizeof(struct pagetrace_chunk) + 16 || h->chunk_size % 8)
		return pgtrace_set_error(r, -EBADMSG, OFF(chunk_size),
				    "chunk_size %u is not a multiple of 8 >= %zu",
				    h->chunk_size, sizeof(struct pagetrace_chunk) + 16);
#undef LOAD32
#undef LOAD64
#undef OFF
	return 0;
}

static int parse_records(struct pgtrace_reader *r, const unsigned char *p, size_t len)
{
	uint64_t off = sizeof(struct pagetrace_header);

	while (len >= sizeof(struct pagetrace_record)) {
		uint32_t type = pgtrace_load32(p);
		uint32_t size = pgtrace_load32(p + 4);
		uint64_t padded = ((uint64_t)size + 7) & ~7ULL;
		const unsigned char *pl = p + 8;

		if (type == PAGETRACE_REC_END)
			break;
		if (padded > len - 8)
			return pgtrace_set_error(r, -EBADMSG, off,
					    "header record type %u size %u overruns header_size %u",
					    type, size, r->hdr.header_size);
		switch (type) {
		case PAGETRACE_REC_RELEASE:
			if (r->release)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "second release record");
			if (!size || !memchr(pl, 0, size))
				return pgtrace_set_error(r, -EBADMSG, off,
						    "release record is not NUL-terminated");
			r->release = strdup((const char *)pl);
			if (!r->release)
				return -ENOMEM;
			break;
		case PAGETRACE_REC_ZONE: {
			struct pgtrace_zone *z;

			/* Bigger is fine: a later version may append fields. */
			if (size < sizeof(struct pagetrace_rec_zone))
				return pgtrace_set_error(r, -EBADMSG, off,
						    "zone record size %u, need %zu",
						    size, sizeof(struct pagetrace_rec_zone));
			z = realloc(r->zones, (r->nr_zones + 1) * sizeof(*z));
			if (!z)
				return -ENOMEM;
			r->zones = z;
			z += r->nr_zones;
			z->node = pgtrace_load32(pl + offsetof(struct pagetrace_rec_zone, node));
			z->zone = pgtrace_load32(pl + offsetof(struct pagetrace_rec_zone, zone));
			z->start_pfn = pgtrace_load64(pl + offsetof(struct pagetrace_rec_zone, start_pfn));
			z->end_pfn = pgtrace_load64(pl + offsetof(struct pagetrace_rec_zone, end_pfn));
			z->present_pages = pgtrace_load64(pl + offsetof(struct pagetrace_rec_zone,
								    present_pages));
			memcpy(z->name, pl + offsetof(struct pagetrace_rec_zone, name), 16);
			z->name[16] = '\0';
			if (z->end_pfn < z->start_pfn)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "zone record end_pfn 0x%llx < start_pfn 0x%llx",
						    (unsigned long long)z->end_pfn,
						    (unsigned long long)z->start_pfn);
			r->nr_zones++;
			break;
		}
		case PAGETRACE_REC_SNAPSHOT: {
			uint64_t *w = (uint64_t *)&r->snapshot_rec;

			if (r->has_snapshot_rec)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "second snapshot record");
			/* Fields a shorter (older) record lacks read 0. */
			for (uint32_t i = 0; i < sizeof(r->snapshot_rec) / 8 && 8 * i + 8 <= size; i++)
				w[i] = pgtrace_load64(pl + 8 * i);
			r->has_snapshot_rec = true;
			break;
		}
		case PAGETRACE_REC_SESSION:
			if (r->has_session)
				return pgtrace_set_error(r, -EBADMSG, off,
						    "second session record");
			if (size < sizeof(struct pagetrace_rec_session))
				return pgtrace_set_error(r, -EBADMSG, off,
						    "session record size %u, need %zu",
						    size, sizeof(struct pagetrace_rec_session));
#define PGTRACE_SES(field) offsetof(struct pagetrace_rec_session, field)
			r->session.nr_bufs = pgtrace_load32(pl + PGTRACE_SES(nr_bufs));
			r->session.backend = pgtrace_load32(pl + PGTRACE_SES(backend));
			r->session.flush_ms = pgtrace_load32(pl + PGTRACE_SES(flush_ms));
			r->session.clock_error_ns =
				pgtrace_load32(pl + PGTRACE_SES(clock_error_ns));
			r->session.uncovered = pgtrace_load32(pl + PGTRACE_SES(uncovered));
			r->session.attach_us = pgtrace_load32(pl + PGTRACE_SES(attach_us));
#undef PGTRACE_SES
			r->has_session = true;
			break;
		case PAGETRACE_REC_STACKS: {
			int ret = pgtrace_parse_stacks_rec(r, pl, size, off);

			if (ret)
				return ret;
			break;
		}
		case PAGETRACE_REC_FILTER: {
			int ret = pgtrace_parse_filter_rec(r, pl, size, off);

			if (ret)
				return ret;
			break;
		}
		case PAGETRACE_REC_COUNTERS: {
			int ret = pgtrace_parse_counters_rec(r, pl, size, off);

			if (ret)
				return ret;
			break;
		}
		default:
			/* Unknown types are skipped, as the uapi asks. */
			break;
		}
		p += 8 + padded;
		len -= 8 + padded;
		off += 8 + padded;
	}
	/* The flags and the records that explain them go together. */
	if (!(r->hdr.flags & PAGETRACE_FLAG_STACKS) != !r->has_stacks_rec)
		return pgtrace_set_error(r, -EBADMSG, offsetof(struct pagetrace_header, flags),
				    r->has_stacks_rec ?
				    "stacks record without PAGETRACE_FLAG_STACKS" :
				    "PAGETRACE_FLAG_STACKS without a stacks record");
	if (!(r->hdr.flags & PAGETRACE_FLAG_FILTERED) != !r->has_filter_rec)
		return pgtrace_set_error(r, -EBADMSG, offsetof(struct pagetrace_header, flags),
				    r->has_filter_rec ?
				    "filter record without PAGETRACE_FLAG_FILTERED" :
				    "PAGETRACE_FLAG_FILTERED without a filter record");
	return 0;
}

int pgtrace_read_header(struct pgtrace_reader *r)
{
	unsigned char raw[sizeof(struct pagetrace_header)];
	unsigned char *rest;
	size_t got, n;
	int ret;

	ret = read_exact(r, raw, sizeof(raw), &got);
	if (ret == -ENODATA)
		return pgtrace_set_error(r, -EBADMSG, 0,
				    "file ends inside the header (need %zu bytes, have %zu)",
				    sizeof(raw), got);
	if (ret)
		return ret;
	ret = check_header(r, raw);
	if (ret)
		return ret;

	n = r->hdr.header_size - sizeof(raw);
	rest = malloc(n ? n : 1);
	if (!rest)
		return -ENOMEM;
	ret = read_exact(r, rest, n, &got);
	if (ret == -ENODATA)
		ret = pgtrace_set_error(r, -EBADMSG, 0,
				   "file ends inside the header (need %u bytes, have %zu)",
				   r->hdr.header_size, sizeof(raw) + got);
	if (!ret)
		ret = parse_records(r, rest, n);
	free(rest);
	if (ret)
		return ret;

	r->cpus = calloc(r->hdr.nr_cpus, sizeof(*r->cpus));
	if (!r->cpus)
		return -ENOMEM;
	r->cnt.bytes = r->hdr.header_size;
	return 0;
}

static int open_common(struct pgtrace_reader **out, struct pgtrace_reader *r)
{
	int ret = r->flags & PGTRACE_READER_GO ? pgtrace_go_open(r) : pgtrace_read_header(r);

	if (ret == -EBADMSG || ret == -EIO) {
		/* Keep the reader for its message, but not its big buffer. */
		if (!r->mem) {
			free(r->buf);
			r->buf = NULL;
		}
		r->pos = r->len = r->cap = 0;
		r->eof = true;
		*out = r;
		return ret;
	}
	if (ret) {
		pgtrace_reader_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

static struct pgtrace_reader *alloc_reader(unsigned int flags)
{
	struct pgtrace_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->flags = flags;
	r->fd = -1;
	r->task = PGTRACE_TASK_UNKNOWN;
	r->want = 8;
	return r;
}

int pgtrace_reader_open_fd_params(struct pgtrace_reader **out, int fd,
			     const struct pgtrace_reader_params *p)
{
	struct pgtrace_reader *r;
	size_t cap = p && p->buf_size ? p->buf_size : PGTRACE_READER_DEFAULT_BUF;

	*out = NULL;
	if (fd < 0 || cap < PGTRACE_READER_MIN_BUF)
		return -EINVAL;
	r = alloc_reader(p ? p->flags : 0);
	if (!r)
		return -ENOMEM;
	/* Whole words only, so every word sits at an 8-aligned buffer offset. */
	r->cap = cap & ~(size_t)7;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		free(r);
		return -ENOMEM;
	}
	r->fd = fd;
	return open_common(out, r);
}

int pgtrace_reader_open_fd(struct pgtrace_reader **out, int fd, unsigned int flags)
{
	struct pgtrace_reader_params p = { .flags = flags };

	return pgtrace_reader_open_fd_params(out, fd, &p);
}

int pgtrace_reader_open_mem(struct pgtrace_reader **out, const void *buf, size_t len,
		       unsigned int flags)
{
	struct pgtrace_reader *r;

	*out = NULL;
	if (!buf && len)
		return -EINVAL;
	r = alloc_reader(flags);
	if (!r)
		return -ENOMEM;
	/* Never written: pgtrace_fill() does not move data once eof is set. */
	r->buf = (unsigned char *)buf;
	r->cap = r->len = len;
	r->eof = true;
	r->mem = true;
	return open_common(out, r);
}

void pgtrace_reader_close(struct pgtrace_reader *r)
{
	if (!r)
		return;
	if (!r->mem)
		free(r->buf);
	free(r->release);
	free(r->zones);
	pgtrace_counters_free(r);
	free(r->cpus);
	pgtrace_names_free(r);
	pgtrace_stacks_free(r);
	free(r);
}

const struct pagetrace_header *pgtrace_reader_header(const struct pgtrace_reader *r)
{
	return &r->hdr;
}

const char *pgtrace_reader_kernel_release(const struct pgtrace_reader *r)
{
	return r->release ? r->release : "";
}

unsigned int pgtrace_reader_zones(const struct pgtrace_reader *r, const struct pgtrace_zone **zones)
{
	*zones = r->zones;
	return r->nr_zones;
}

const struct pgtrace_session *pgtrace_reader_session(const struct pgtrace_reader *r)
{
	return r->has_session ? &r->session : NULL;
}

const char *pgtrace_reader_error(const struct pgtrace_reader *r)
{
	return r->errmsg;
}

const struct pgtrace_reader_counters *pgtrace_reader_counters(const struct pgtrace_reader *r)
{
	return &r->cnt;
}

void pgtrace_reader_set_chunk_cb(struct pgtrace_reader *r, pgtrace_chunk_cb cb, void *arg)
{
	r->chunk_cb = cb;
	r->chunk_cb_arg = arg;
}

const char *pgtrace_event_type_name(unsigned int type)
{
	switch (type) {
	case PGTRACE_EV_ALLOC:
		return "alloc";
	case PGTRACE_EV_FREE:
		return "free";
	case PGTRACE_EV_RECLAIM:
		return "reclaim";
	case PGTRACE_EV_TASK:
		return "task";
	}
	return "?";
}

const struct pagetrace_rec_snapshot *pgtrace_reader_snapshot(const struct pgtrace_reader *r)
{
	return r->has_snapshot_rec ? &r->snapshot_rec : NULL;
}
