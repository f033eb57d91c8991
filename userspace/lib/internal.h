/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LIBPAGETRACE_INTERNAL_H
#define LIBPAGETRACE_INTERNAL_H

#include <endian.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include "libpagetrace.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* memcpy, not a cast: buffers from pt_reader_open_mem() need not be aligned. */
static inline uint64_t pt_load64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint32_t pt_load32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint16_t pt_load16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

struct pt_cpu_state {
	uint64_t	next_seq;
	uint64_t	last_ns;	/* latest time of its non-snapshot chunks */
	bool		seen;		/* a non-snapshot chunk came by */
};

struct pt_reader {
	/* Input: buf[pos, len) is unread; buf[0] sits at file offset buf_off. */
	unsigned char		*buf;
	size_t			cap;
	size_t			pos;
	size_t			len;
	uint64_t		buf_off;
	int			fd;
	bool			eof;
	bool			mem;
	unsigned int		flags;

	int			err;
	char			errmsg[256];

	struct pagetrace_header	hdr;
	char			*release;
	struct pt_zone		*zones;
	unsigned int		nr_zones;
	struct pt_session	session;
	bool			has_session;

	struct pt_cpu_state	*cpus;
	/* Go traces: entries of cpus, P id + 1 (index 0 is P -1). */
	unsigned int		nr_cpu_states;

	/* The chunk being decoded; words_left == 0 between chunks. */
	struct pt_chunk		chunk;
	uint64_t		words_left;
	uint64_t		base_ns;
	uint64_t		last_ns;
	int64_t			task;
	/* Bytes that must be buffered before the decode loop can go on. */
	size_t			want;

	/* Task names from name slices (names.c), open addressing. */
	struct pt_name		*names;
	unsigned int		names_cap;	/* slots, a power of 2 or 0 */
	unsigned int		nr_names;
	uint64_t		names_dropped;	/* new tgids past the limit */

	pt_chunk_cb		chunk_cb;
	void			*chunk_cb_arg;
	struct pt_reader_counters cnt;
};

struct pt_name {
	uint32_t	tgid;
	bool		used;
	char		comm[PAGETRACE_COMM_LEN + 1];
};

/* Remember @comm (PAGETRACE_COMM_LEN bytes) as the name of @tgid. */
void pt_set_name(struct pt_reader *r, uint32_t tgid, const unsigned char *comm);
void pt_names_free(struct pt_reader *r);

int pt_set_error(struct pt_reader *r, int err, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Printable bytes as they are, others as \\xNN; dst holds 4 * n + 1. */
void pt_escape(char *dst, const unsigned char *src, size_t n);
ssize_t pt_fill(struct pt_reader *r, size_t need);
int pt_read_header(struct pt_reader *r);
int pt_go_open(struct pt_reader *r);
/* pt_stats_add_event() for a run of one chunk's events. */
void pt_stats_add_run(struct pt_stats *s, const struct pt_cevent *evs, unsigned int n,
		      uint32_t cpu);
/*
 * The chunk that the next pt_reader_next_run() decodes, started if need be
 * (its callback runs): 1, 0 at the end of the stream, or an error;
 * -EOPNOTSUPP for Go traces.  The run still comes from a later chunk if
 * this one has only task records and sync words left.
 */
int pt_reader_peek_chunk(struct pt_reader *r, const struct pt_chunk **chunk);
int pt_go_next_batch(struct pt_reader *r, struct pt_event *evs, unsigned int max);
int pt_go_next_run(struct pt_reader *r, struct pt_cevent *evs, unsigned int max);

#endif
