/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the library's files share.  Calls go down, never up:
 *
 *   reclaim.c             who allocated what reclaim took: an analysis hook
 *   analysis.c, stats.c   what the tools ask for, over a reader
 *     (analysis.c over merge.c, apply.c, blocks.c, pipe.c: see analysis.h)
 *   header.c, reader.c    opening a stream, decoding its chunks
 *   go.c, stacks.c, names.c   the Go format, stack and symbol records, names
 *   input.c               the input buffer and the first error
 *
 * symbols.c (kallsyms) uses stacks.c's arena; ring.c (the mapped session)
 * stands alone.
 */
#ifndef LIBPAGETRACE_INTERNAL_H
#define LIBPAGETRACE_INTERNAL_H

#include <endian.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include "libpagetrace.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* memcpy, not a cast: buffers from pgtrace_reader_open_mem() need not be aligned. */
static inline uint64_t pgtrace_load64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint32_t pgtrace_load32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint16_t pgtrace_load16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

struct pgtrace_cpu_state {
	uint64_t	next_seq;
	uint64_t	last_ns;	/* latest time of its non-snapshot chunks */
	bool		seen;		/* a non-snapshot chunk came by */
};

struct pgtrace_reader {
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
	struct pgtrace_zone		*zones;
	unsigned int		nr_zones;
	struct pgtrace_session	session;
	bool			has_session;

	struct pgtrace_cpu_state	*cpus;
	/* Go traces: entries of cpus, P id + 1 (index 0 is P -1). */
	unsigned int		nr_cpu_states;

	/* The chunk being decoded; words_left == 0 between chunks. */
	struct pgtrace_chunk		chunk;
	uint64_t		words_left;
	uint64_t		base_ns;
	uint64_t		last_ns;
	int64_t			task;
	/* Bytes that must be buffered before the decode loop can go on. */
	size_t			want;

	/* Task names from name slices (names.c), open addressing. */
	struct pgtrace_name		*names;
	unsigned int		names_cap;	/* slots, a power of 2 or 0 */
	unsigned int		nr_names;
	uint64_t		names_dropped;	/* new tgids past the limit */

	/* Header records of sampled stacks and filters (stacks.c). */
	struct pagetrace_rec_stacks stacks_rec;
	struct pagetrace_rec_filter filter_rec;
	bool			has_stacks_rec;
	bool			has_filter_rec;
	/* The memory map's header record (header.c). */
	struct pagetrace_rec_snapshot	snapshot_rec;
	bool			has_snapshot_rec;
	/* The zones' counters, PGTRACE_KERNEL_COUNTERS_START and _STOP (counters.c). */
	struct pgtrace_kernel_counters	counters[2];
	/* The chunk being decoded is a symbol chunk. */
	bool			in_symbols;

	/* Stack ids -> frames, open addressing; frames in the arena. */
	struct pgtrace_stack		*stacks;
	unsigned int		stacks_cap;	/* slots, a power of 2 or 0 */
	/* Ids defined in the current chunk: slots whose gen is chunk_gen. */
	struct pgtrace_defined	*defined;
	unsigned int		defined_cap;
	unsigned int		nr_defined;
	uint32_t		chunk_gen;
	/* Address -> name from symbol chunks, open addressing. */
	struct pgtrace_sym		*syms;
	unsigned int		syms_cap;
	unsigned int		nr_syms;
	struct pgtrace_arena		*arena;

	pgtrace_chunk_cb		chunk_cb;
	void			*chunk_cb_arg;
	struct pgtrace_reader_counters cnt;
};

struct pgtrace_name {
	uint32_t	tgid;
	bool		used;
	char		comm[PAGETRACE_COMM_LEN + 1];
};

struct pgtrace_stack {
	uint64_t	*frames;	/* NULL: slot unused */
	uint32_t	id;
	uint8_t		depth;
	bool		cut;
};

struct pgtrace_defined {
	uint32_t	id;
	uint32_t	gen;
};

struct pgtrace_sym {
	uint64_t	addr;
	const char	*name;		/* NULL: slot unused */
	uint64_t	offset;
};

/* Memory handed out in blocks that never move, freed all at once. */
struct pgtrace_arena;
void *pgtrace_arena_alloc(struct pgtrace_arena **a, size_t n);
void pgtrace_arena_free(struct pgtrace_arena **a);

/*
 * A stack word at @p (stacks.c): a DEF and its FRAME words, or a SAMPLE
 * and the event word after it (returned in *@sample: the id, or
 * PGTRACE_STACK_UNKNOWN for 0, and the event is left to the caller).  Same
 * @navail, @left and return as decode_name().
 */
int pgtrace_decode_stack(struct pgtrace_reader *r, const unsigned char *p, uint64_t navail,
		    uint64_t left, uint64_t off, uint32_t *sample);
/* Entries of a symbol chunk that are in the buffer: 0 or an error. */
int pgtrace_decode_symbols(struct pgtrace_reader *r);
int pgtrace_parse_stacks_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			uint64_t off);
int pgtrace_parse_counters_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			       uint64_t off);
int pgtrace_parse_counters_chunk(struct pgtrace_reader *r, const unsigned char *words,
				 uint32_t nr_words, uint64_t off);
void pgtrace_counters_free(struct pgtrace_reader *r);
int pgtrace_parse_filter_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			uint64_t off);
void pgtrace_stacks_free(struct pgtrace_reader *r);

/* Remember @comm (PAGETRACE_COMM_LEN bytes) as the name of @tgid. */
void pgtrace_set_name(struct pgtrace_reader *r, uint32_t tgid, const unsigned char *comm);
void pgtrace_names_free(struct pgtrace_reader *r);

int pgtrace_set_error(struct pgtrace_reader *r, int err, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Printable bytes as they are, others as \\xNN; dst holds 4 * n + 1. */
void pgtrace_escape(char *dst, const unsigned char *src, size_t n);
ssize_t pgtrace_fill(struct pgtrace_reader *r, size_t need);
int pgtrace_read_header(struct pgtrace_reader *r);
int pgtrace_go_open(struct pgtrace_reader *r);
/* pgtrace_stats_add_event() for a run of one chunk's events. */
void pgtrace_stats_add_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs, unsigned int n,
		      uint32_t cpu);
/* The same for a run in time order (of a v1 stream): a little faster. */
void pgtrace_stats_add_sorted_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs, unsigned int n,
			     uint32_t cpu);
/* The same for a snapshot chunk's run: counted, but outside first_ns/last_ns. */
void pgtrace_stats_add_snapshot_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs,
				    unsigned int n, uint32_t cpu);
/* first_ns and last_ns once every event is in: see struct pgtrace_stats. */
void pgtrace_stats_end_times(struct pgtrace_stats *s, uint64_t start_ns);
/*
 * The chunk that the next pgtrace_reader_next_run() decodes, started if need be
 * (its callback runs): 1, 0 at the end of the stream, or an error;
 * -EOPNOTSUPP for Go traces.  The run still comes from a later chunk if
 * this one has only task records and sync words left.
 */
int pgtrace_reader_peek_chunk(struct pgtrace_reader *r, const struct pgtrace_chunk **chunk);
int pgtrace_go_next_batch(struct pgtrace_reader *r, struct pgtrace_event *evs, unsigned int max);
int pgtrace_go_next_run(struct pgtrace_reader *r, struct pgtrace_compact_event *evs, unsigned int max);

#endif
