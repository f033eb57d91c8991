/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libpagetrace: read the pagetrace v1 stream (see uapi/linux/pagetrace.h).
 *
 * Conventions, as in liburing: every symbol starts with pt_, functions
 * return 0 or a count on success and -errno on failure, and nothing in the
 * library prints or exits.  A corrupt or truncated stream is -EBADMSG;
 * pt_reader_error() then names the byte offset and what was wrong.
 *
 * The reader streams: it holds one fixed-size buffer no matter how large
 * the input is, so it works on pipes and on files of any size.
 */
#ifndef LIBPAGETRACE_H
#define LIBPAGETRACE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/pagetrace.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PT_VERSION_STRING	"0.1"

/* Event types; 1..3 equal the PAGETRACE_EV_* values in the words. */
enum pt_event_type {
	PT_EV_ALLOC	= PAGETRACE_EV_ALLOC,
	PT_EV_FREE	= PAGETRACE_EV_FREE,
	PT_EV_RECLAIM	= PAGETRACE_EV_RECLAIM,
	/* A task record; only returned with PT_READER_TASKS. */
	PT_EV_TASK	= 4,
};

#define PT_TASK_UNKNOWN		(-1)

/**
 * struct pt_event - one decoded event
 * @time_ns: absolute time on the trace clock (compare with header start_ns)
 * @pfn: first page frame
 * @npages: number of pages (0 for PT_EV_TASK)
 * @offset: file offset of the event's (first) word
 * @seq: seq of the chunk holding it
 * @task: tgid from the chunk's last task record, PT_TASK_UNKNOWN before one
 * @cpu: the CPU that logged it
 * @chunk_flags: PAGETRACE_CHUNK_* of its chunk
 * @type: enum pt_event_type
 */
struct pt_event {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	offset;
	uint64_t	seq;
	int64_t		task;
	uint32_t	cpu;
	uint16_t	chunk_flags;
	uint8_t		type;
	uint8_t		__pad;
};

/**
 * struct pt_chunk - a chunk header as it passes, for pt_reader_set_chunk_cb()
 * @offset: file offset of the chunk header
 * @seq, @lost, @nr_words, @cpu, @flags: the chunk header's fields
 * @missing: chunks of this CPU skipped before this one (a seq gap; only
 *	     possible with PAGETRACE_FLAG_OVERWRITE, else the stream is corrupt)
 */
struct pt_chunk {
	uint64_t	offset;
	uint64_t	seq;
	uint64_t	lost;
	uint64_t	missing;
	uint32_t	nr_words;
	uint32_t	cpu;
	uint16_t	flags;
};

/* Running totals of what the reader has passed so far. */
struct pt_reader_counters {
	uint64_t	chunks;		/* all chunks, snapshot ones included */
	uint64_t	snapshot_chunks;
	uint64_t	lost;		/* sum of chunk lost fields */
	uint64_t	seq_gaps;	/* times a CPU's seq jumped */
	uint64_t	missing_chunks;	/* chunks those jumps skipped */
	uint64_t	events;		/* alloc/free/reclaim events returned */
	uint64_t	tasks;		/* task records passed */
	uint64_t	bytes;		/* stream bytes consumed */
};

/* pt_reader_params.flags */
#define PT_READER_TASKS		(1U << 0)	/* return task records as PT_EV_TASK */

#define PT_READER_DEFAULT_BUF	(1U << 20)
#define PT_READER_MIN_BUF	64U
/* Longer headers are refused rather than buffered without bound. */
#define PT_READER_MAX_HEADER	(1U << 20)

struct pt_reader_params {
	unsigned int	flags;		/* PT_READER_* */
	unsigned int	buf_size;	/* 0: PT_READER_DEFAULT_BUF */
};

struct pt_zone {
	uint32_t	node;
	uint32_t	zone;
	uint64_t	start_pfn;
	uint64_t	end_pfn;
	uint64_t	present_pages;
	char		name[17];
};

struct pt_session {
	uint32_t	nr_bufs;
	uint32_t	backend;
	uint32_t	flush_ms;
};

struct pt_reader;

/*
 * Open a reader on @fd (not closed by the reader) and read and check the
 * stream header.  On -EBADMSG or -EIO *out is still set, so that
 * pt_reader_error() can say what was wrong; close it either way.  On other
 * errors (-ENOMEM, -EINVAL) *out is NULL.
 */
int pt_reader_open_fd(struct pt_reader **out, int fd, unsigned int flags);
int pt_reader_open_fd_params(struct pt_reader **out, int fd,
			     const struct pt_reader_params *p);
/* The same over a stream already in memory; @buf must outlive the reader. */
int pt_reader_open_mem(struct pt_reader **out, const void *buf, size_t len,
		       unsigned int flags);
void pt_reader_close(struct pt_reader *r);

/* The header in host byte order. */
const struct pagetrace_header *pt_reader_header(const struct pt_reader *r);
/* The kernel release, or "" without a release record. */
const char *pt_reader_release(const struct pt_reader *r);
/* The zone records; returns how many, *zones points at them. */
unsigned int pt_reader_zones(const struct pt_reader *r, const struct pt_zone **zones);
/* The session record, or NULL without one. */
const struct pt_session *pt_reader_session(const struct pt_reader *r);

/*
 * Decode the next event into @ev: 1 with an event, 0 at a clean end of the
 * stream (at a chunk boundary), -EBADMSG on a corrupt or truncated stream,
 * -EIO on a read error, or what a chunk callback returned.  Errors stick:
 * later calls return the same error.
 */
int pt_reader_next(struct pt_reader *r, struct pt_event *ev);

/*
 * Decode up to @max events into @evs; returns the count (0 at the end), or
 * an error as pt_reader_next() does.  Events decoded before an error are
 * returned first; the error comes with the next call.  This is the fast
 * path: it decodes words in a tight loop straight out of the buffer.
 */
int pt_reader_next_batch(struct pt_reader *r, struct pt_event *evs, unsigned int max);

/*
 * Call @cb for each chunk header once it is checked, before any of its
 * events is returned (with pt_reader_next_batch(), events of earlier chunks
 * may still sit in the same batch).  A negative return from @cb stops the
 * reader with that error.
 */
typedef int (*pt_chunk_cb)(const struct pt_chunk *c, void *arg);
void pt_reader_set_chunk_cb(struct pt_reader *r, pt_chunk_cb cb, void *arg);

const struct pt_reader_counters *pt_reader_counters(const struct pt_reader *r);

/* The last error: "offset N: what was wrong", or "" if there was none. */
const char *pt_reader_error(const struct pt_reader *r);

/* "alloc", "free", "reclaim", "task", or "?" */
const char *pt_event_type_name(unsigned int type);

/*
 * Aggregation (stats.c)
 */
#define PT_STATS_MAX_ORDER	63

struct pt_cpu_stats {
	uint64_t	events;
	uint64_t	chunks;
	uint64_t	lost;
	uint64_t	seq_gaps;
	uint64_t	missing_chunks;
};

/**
 * struct pt_stats - what pt_stats_collect() counts
 * @by_type: events per PT_EV_ALLOC..PT_EV_RECLAIM (index 0 unused)
 * @pages_by_type: pages per type
 * @by_order: events with npages == 1 << order
 * @other_order: events whose npages is not a power of two
 * @nr_cpus: entries in @cpus (the header's nr_cpus)
 * @first_ns, @last_ns: earliest and latest event time (valid if events)
 */
struct pt_stats {
	uint64_t		events;
	uint64_t		by_type[4];
	uint64_t		pages_by_type[4];
	uint64_t		by_order[PT_STATS_MAX_ORDER + 1];
	uint64_t		other_order;
	uint64_t		chunks;
	uint64_t		snapshot_chunks;
	uint64_t		lost;
	uint64_t		seq_gaps;
	uint64_t		missing_chunks;
	uint64_t		tasks;
	uint64_t		bytes;
	uint64_t		first_ns;
	uint64_t		last_ns;
	unsigned int		nr_cpus;
	struct pt_cpu_stats	*cpus;
};

int pt_stats_init(struct pt_stats *s, unsigned int nr_cpus);
void pt_stats_free(struct pt_stats *s);
void pt_stats_add_event(struct pt_stats *s, const struct pt_event *ev);
void pt_stats_add_chunk(struct pt_stats *s, const struct pt_chunk *c);
/*
 * Drain @r into @s (initialised here for the header's nr_cpus; free it with
 * pt_stats_free() even on error).  Replaces any chunk callback.  Returns 0
 * at a clean end, else the reader's error; @s then holds what came before.
 */
int pt_stats_collect(struct pt_reader *r, struct pt_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* LIBPAGETRACE_H */
