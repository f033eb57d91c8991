/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libpagetrace: read the pagetrace v1 stream (see uapi/linux/pagetrace.h),
 * from a file or a pipe, or in place from the mapped session (pgtrace_ring_*).
 *
 * Conventions, as in liburing: every symbol starts with pgtrace_, functions
 * return 0 or a count on success and -errno on failure, and nothing in the
 * library prints or exits.  A corrupt or truncated stream is -EBADMSG;
 * pgtrace_reader_error() then names the byte offset and what was wrong.
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

#define PGTRACE_VERSION_STRING	"0.1"

/* Event types; 1..3 equal the PAGETRACE_EV_* values in the words. */
enum pgtrace_event_type {
	PGTRACE_EV_ALLOC	= PAGETRACE_EV_ALLOC,
	PGTRACE_EV_FREE	= PAGETRACE_EV_FREE,
	PGTRACE_EV_RECLAIM	= PAGETRACE_EV_RECLAIM,
	/* A task record; only returned with PGTRACE_READER_TASKS. */
	PGTRACE_EV_TASK	= 4,
};

#define PGTRACE_TASK_UNKNOWN		(-1)
/* pgtrace_event.stack of a sampled allocation whose stack is not known (id 0). */
#define PGTRACE_STACK_UNKNOWN	UINT32_MAX

/**
 * struct pgtrace_event - one decoded event
 * @time_ns: absolute time on the trace clock (compare with header start_ns)
 * @pfn: first page frame
 * @npages: number of pages (0 for PGTRACE_EV_TASK)
 * @offset: file offset of the event's (first) word
 * @seq: seq of the chunk holding it
 * @task: tgid from the chunk's last task record, PGTRACE_TASK_UNKNOWN before one
 * @cpu: the CPU that logged it
 * @chunk_flags: PAGETRACE_CHUNK_* of its chunk
 * @type: enum pgtrace_event_type
 * @stack: 0 if the event was not sampled for its call stack (every event
 *	   but sampled allocations); else the stack id of its SAMPLE word
 *	   (see pgtrace_reader_stack()), PGTRACE_STACK_UNKNOWN when that id was 0
 */
struct pgtrace_event {
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
	uint32_t	stack;
	uint32_t	__pad2;
};

/**
 * struct pgtrace_chunk - a chunk header as it passes, for pgtrace_reader_set_chunk_cb()
 * @offset: file offset of the chunk header
 * @seq, @lost, @nr_words, @cpu, @flags: the chunk header's fields
 * @missing: chunks of this CPU skipped before this one (a seq gap; only
 *	     possible with PAGETRACE_FLAG_OVERWRITE, else the stream is corrupt)
 */
struct pgtrace_chunk {
	uint64_t	offset;
	uint64_t	seq;
	uint64_t	lost;
	uint64_t	missing;
	uint32_t	nr_words;
	uint32_t	cpu;
	uint16_t	flags;
	uint64_t	time_ns;	/* the chunk's first time base (word 1) */
};

/* Running totals of what the reader has passed so far. */
struct pgtrace_reader_counters {
	uint64_t	chunks;		/* all chunks, snapshot ones included */
	uint64_t	snapshot_chunks;
	uint64_t	lost;		/* sum of chunk lost fields */
	uint64_t	seq_gaps;	/* times a CPU's seq jumped */
	uint64_t	missing_chunks;	/* chunks those jumps skipped */
	uint64_t	events;		/* alloc/free/reclaim events returned */
	uint64_t	tasks;		/* task records passed */
	uint64_t	bytes;		/* stream bytes consumed */
	uint64_t	samples;	/* SAMPLE words (sampled allocations) */
	uint64_t	samples_unknown; /* of those, with stack id 0 */
	uint64_t	stack_defs;	/* DEF words (with their FRAME words) */
	uint64_t	stacks;		/* distinct stack ids in the table */
	uint64_t	stacks_dropped;	/* DEFs of new ids past PGTRACE_READER_MAX_STACKS */
	uint64_t	symbol_chunks;	/* PAGETRACE_CHUNK_SYMBOLS chunks */
	uint64_t	symbols;	/* their entries */
	uint64_t	symbols_dropped; /* entries past PGTRACE_READER_MAX_SYMBOLS */
};

/* pgtrace_reader_params.flags */
#define PGTRACE_READER_TASKS		(1U << 0)	/* return task records as PGTRACE_EV_TASK */
/*
 * The input is a Go runtime page trace (GODEBUG=pagetrace=FILE from a
 * program built with GOEXPERIMENT=pagetrace), not a v1 stream.  That format
 * is raw words, no header: per-P buffers, each a pid word (the P's id, -1
 * when the writer had no P), a sync word, then events.  The reader makes
 * up a header for it: page_shift 13 (Go's 8 KiB pages), clock monotonic
 * (Go's nanotime), start_ns the first buffer's time base, header_size 0,
 * chunk_size 32768 (Go's buffer), and nr_cpus one more than the highest P
 * id seen so far (it grows while reading).  Each buffer is a chunk for the
 * chunk callback (seq counts the P's buffers, nr_words is 0: not known
 * up front).  Events carry the P id in @cpu, PGTRACE_CPU_NONE for -1, and the
 * page number (address >> 13) in @pfn, so address = pfn << page_shift;
 * @npages counts 8 KiB pages, and type PGTRACE_EV_RECLAIM is Go's "scavenge".
 * Go times are not checked for order between events: the runtime may log
 * a timestamp taken a little earlier.
 */
#define PGTRACE_READER_GO		(1U << 1)
/* P ids of Go traces must be below this (GOMAXPROCS is rarely near it). */
#define PGTRACE_GO_MAX_P		65536U
/* pgtrace_event.cpu of a Go event logged without a P (P id -1). */
#define PGTRACE_CPU_NONE		UINT32_MAX

#define PGTRACE_READER_DEFAULT_BUF	(1U << 20)
#define PGTRACE_READER_MIN_BUF	64U
/* Longer headers are refused rather than buffered without bound. */
#define PGTRACE_READER_MAX_HEADER	(1U << 20)

struct pgtrace_reader_params {
	unsigned int	flags;		/* PGTRACE_READER_* */
	unsigned int	buf_size;	/* 0: PGTRACE_READER_DEFAULT_BUF */
};

struct pgtrace_zone {
	uint32_t	node;
	uint32_t	zone;
	uint64_t	start_pfn;
	uint64_t	end_pfn;
	uint64_t	present_pages;
	char		name[17];
};

struct pgtrace_session {
	uint32_t	nr_bufs;
	uint32_t	backend;
	uint32_t	flush_ms;
	uint32_t	clock_error_ns;	/* TSC clock: its bound off local_clock() */
	uint32_t	uncovered;	/* PAGETRACE_UNCOVERED_*: not in this trace */
	uint32_t	attach_us;	/* start to first event recordable; 0: unknown */
};

struct pgtrace_reader;

/*
 * Open a reader on @fd (not closed by the reader) and read and check the
 * stream header.  On -EBADMSG or -EIO *out is still set, so that
 * pgtrace_reader_error() can say what was wrong; close it either way.  On other
 * errors (-ENOMEM, -EINVAL) *out is NULL.
 */
int pgtrace_reader_open_fd(struct pgtrace_reader **out, int fd, unsigned int flags);
int pgtrace_reader_open_fd_params(struct pgtrace_reader **out, int fd,
			     const struct pgtrace_reader_params *p);
/* The same over a stream already in memory; @buf must outlive the reader. */
int pgtrace_reader_open_mem(struct pgtrace_reader **out, const void *buf, size_t len,
		       unsigned int flags);
void pgtrace_reader_close(struct pgtrace_reader *r);

/* The header in host byte order. */
const struct pagetrace_header *pgtrace_reader_header(const struct pgtrace_reader *r);
/* The kernel release, or "" without a release record. */
const char *pgtrace_reader_kernel_release(const struct pgtrace_reader *r);
/* The zone records; returns how many, *zones points at them. */
unsigned int pgtrace_reader_zones(const struct pgtrace_reader *r, const struct pgtrace_zone **zones);
/* The session record, or NULL without one. */
const struct pgtrace_session *pgtrace_reader_session(const struct pgtrace_reader *r);

/**
 * struct pgtrace_zone_counters - the kernel's count of one zone, host order
 * @node, @zone: as in struct pgtrace_zone
 * @present_pages, @managed_pages, @free_pages, @pcp_pages, @spread_pages:
 *	as in the uapi's struct pagetrace_zone_counters (@spread_pages: how
 *	far the kernel's count may be off; 0 from older modules)
 */
struct pgtrace_zone_counters {
	uint32_t	node;
	uint32_t	zone;
	uint64_t	present_pages;
	uint64_t	managed_pages;
	uint64_t	free_pages;
	uint64_t	pcp_pages;
	uint64_t	spread_pages;
};

/**
 * struct pgtrace_kernel_counters - every zone's counters at one instant
 * @time_ns: when the kernel read them, on the trace clock
 * @nr_zones: entries of @zones
 * @zones: one per populated zone
 * @valid: nonzero: the stream carries them
 */
struct pgtrace_kernel_counters {
	uint64_t			time_ns;
	unsigned int			nr_zones;
	struct pgtrace_zone_counters	*zones;
	int				valid;
};

#define PGTRACE_KERNEL_COUNTERS_START	0	/* the header's record */
#define PGTRACE_KERNEL_COUNTERS_STOP	1	/* the counters chunk, once read past */

/*
 * The zones' counters when the session started or stopped, or NULL if the
 * stream has none (an older module; the stop counters also when the
 * recorder did not append them, or the reader has not reached them yet:
 * they come after the last event).
 */
const struct pgtrace_kernel_counters *pgtrace_reader_kernel_counters(const struct pgtrace_reader *r,
							unsigned int which);
/* The kernel's pages in use in @z: present - free - per-CPU lists. */
int64_t pgtrace_zone_counters_in_use(const struct pgtrace_zone_counters *z);
/*
 * The snapshot header record (how the memory map was walked at start) in
 * host byte order, or NULL without one.  Where its flags lack
 * PAGETRACE_SNAPSHOT_PCP the trace may start up to its taken_free pages
 * short of the kernel's count.
 */
const struct pagetrace_rec_snapshot *pgtrace_reader_snapshot(const struct pgtrace_reader *r);

/*
 * Decode the next event into @ev: 1 with an event, 0 at a clean end of the
 * stream (at a chunk boundary), -EBADMSG on a corrupt or truncated stream,
 * -EIO on a read error, or what a chunk callback returned.  Errors stick:
 * later calls return the same error.
 */
int pgtrace_reader_next(struct pgtrace_reader *r, struct pgtrace_event *ev);

/*
 * Decode up to @max events into @evs; returns the count (0 at the end), or
 * an error as pgtrace_reader_next() does.  Events decoded before an error are
 * returned first; the error comes with the next call.  This is the fast
 * path: it decodes words in a tight loop straight out of the buffer.
 */
int pgtrace_reader_next_batch(struct pgtrace_reader *r, struct pgtrace_event *evs, unsigned int max);

/**
 * struct pgtrace_compact_event - a compact event, for pgtrace_reader_next_run()
 * @time_ns: absolute time on the trace clock
 * @pfn: first page frame
 * @npages_type: npages << 2 | type; see pgtrace_compact_event_npages(), pgtrace_compact_event_type()
 *
 * Half the size of struct pgtrace_event: what the fast paths (stats) need and
 * nothing else.  The CPU, seq and flags are the run's chunk's.
 */
struct pgtrace_compact_event {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages_type;
};

/**
 * pgtrace_compact_event_type() - the type of a compact event
 * @e: the event
 *
 * Return: PGTRACE_EV_ALLOC, PGTRACE_EV_FREE or PGTRACE_EV_RECLAIM.
 */
static inline unsigned int pgtrace_compact_event_type(const struct pgtrace_compact_event *e)
{
	return (unsigned int)(e->npages_type & 3);
}

/**
 * pgtrace_compact_event_npages() - the pages of a compact event
 * @e: the event
 *
 * Return: npages, at least 1.
 */
static inline uint64_t pgtrace_compact_event_npages(const struct pgtrace_compact_event *e)
{
	return e->npages_type >> 2;
}

/**
 * pgtrace_reader_next_run() - decode a run of compact events of one chunk
 * @r: the reader
 * @evs: room for @max events
 * @max: at most this many
 * @chunk: set to the chunk the events belong to (valid until the next call)
 *
 * The fastest way through a stream: a run never spans two chunks, so the
 * CPU, seq and chunk flags come once per run in *@chunk (for Go traces, a
 * P's buffer).  Task records are counted but not returned.  Runs and
 * pgtrace_reader_next()/pgtrace_reader_next_batch() may be mixed.
 *
 * Return: events in the run (1..@max), 0 at a clean end of the stream, or
 * an error as pgtrace_reader_next() returns it.
 */
int pgtrace_reader_next_run(struct pgtrace_reader *r, struct pgtrace_compact_event *evs, unsigned int max,
		       const struct pgtrace_chunk **chunk);

/*
 * Call @cb for each chunk header once it is checked, before any of its
 * events is returned (with pgtrace_reader_next_batch(), events of earlier chunks
 * may still sit in the same batch).  A negative return from @cb stops the
 * reader with that error.
 */
typedef int (*pgtrace_chunk_cb)(const struct pgtrace_chunk *c, void *arg);
void pgtrace_reader_set_chunk_cb(struct pgtrace_reader *r, pgtrace_chunk_cb cb, void *arg);

const struct pgtrace_reader_counters *pgtrace_reader_counters(const struct pgtrace_reader *r);

/*
 * Task names.  Streams with PAGETRACE_FLAG_TASKS carry names (the
 * slices of a comm, then the task record of its tgid); the reader remembers the last name of each tgid it has
 * decoded so far, for at most PGTRACE_READER_MAX_NAMES tgids (later new tgids
 * stay nameless and are counted by pgtrace_reader_names_dropped()).  Names
 * decoded ahead of the events returned may already be known, so ask once
 * the events of interest are in hand, or at the end.
 */
#define PGTRACE_READER_MAX_NAMES	(1U << 16)

/*
 * pgtrace_reader_task_name() - the name (comm) of process @tgid
 *
 * Return: the last name the stream gave it, NUL-terminated (valid
 * until the reader is closed or decodes another name of @tgid), or NULL
 * if none did (tgid 0, the kernel, has none).
 */
const char *pgtrace_reader_task_name(const struct pgtrace_reader *r, int64_t tgid);
/* New tgids whose names found the table full. */
uint64_t pgtrace_reader_names_dropped(const struct pgtrace_reader *r);

/*
 * Sampled call stacks (PAGETRACE_FLAG_STACKS).  The reader checks every
 * stack word and keeps a table of the stacks the stream defined so far:
 * stack id -> frames.  The table holds at most PGTRACE_READER_MAX_STACKS ids
 * (about 0.5 KiB each at the most, 64 frames); definitions of further new
 * ids are still checked within their chunk but not kept, and counted in
 * pgtrace_reader_counters()->stacks_dropped.  A definition of an id the table
 * holds must repeat its frames exactly, else the stream is corrupt
 * (-EBADMSG).
 */
#define PGTRACE_READER_MAX_STACKS	(1U << 20)

/* The stacks header record in host byte order, or NULL without one. */
const struct pagetrace_rec_stacks *pgtrace_reader_stacks(const struct pgtrace_reader *r);
/* The filter header record in host byte order, or NULL without one. */
const struct pagetrace_rec_filter *pgtrace_reader_filter(const struct pgtrace_reader *r);

/*
 * pgtrace_reader_stack() - the frames of stack @id
 *
 * *@frames points at the addresses (valid until the reader is closed),
 * innermost first; *@cut (if not NULL) is set to 1 when the stack was cut
 * at max_depth, else 0.
 *
 * Return: the depth (1 .. PAGETRACE_STACK_MAX_DEPTH), or -ENOENT if the
 * stream has not defined @id so far (or its definition was dropped).
 */
int pgtrace_reader_stack(const struct pgtrace_reader *r, uint32_t id, const uint64_t **frames,
		    int *cut);

/*
 * pgtrace_reader_stack_addrs() - every frame address of the stacks in the table
 *
 * Sorted, each once, in a malloc'ed array (*@addrs, free() it; NULL when
 * there are none) of *@n entries.  Decode the stream to its end first.
 *
 * Return: 0 or -ENOMEM.
 */
int pgtrace_reader_stack_addrs(const struct pgtrace_reader *r, uint64_t **addrs, size_t *n);

/*
 * Symbol chunks (PAGETRACE_CHUNK_SYMBOLS) may come anywhere after the
 * header.  The reader checks their entries, returns no events for them and
 * leaves them out of the chunk counts, seq checks and chunk callback; it
 * keeps at most PGTRACE_READER_MAX_SYMBOLS entries (later ones are counted in
 * symbols_dropped).  An address named twice is a corrupt stream.
 */
#define PGTRACE_READER_MAX_SYMBOLS	(1U << 20)

/*
 * pgtrace_reader_symbol() - the name of the code at @addr
 *
 * From the symbol chunks decoded so far.  *@offset (if not NULL) is set to
 * @addr's offset from the start of its function.
 *
 * Return: the name ("function" or "function [module]", valid until the
 * reader is closed), or NULL if no entry names @addr.
 */
const char *pgtrace_reader_symbol(const struct pgtrace_reader *r, uint64_t addr, uint64_t *offset);

/*
 * Kernel symbols from a kallsyms file (the format of /proc/kallsyms:
 * "ADDRESS TYPE NAME" and, for module symbols, "\t[MODULE]"), to name the
 * frames of a trace.  Only text symbols count (types t, T, w, W).
 */
struct pgtrace_kallsyms;

/*
 * pgtrace_kallsyms_open() - read a kallsyms file from @fd (not closed)
 *
 * Return: 0 with *@out set; -EPERM if every address is 0 (the file was read
 * without the right to see addresses: kptr_restrict, not root), -ENODATA
 * if it has no text symbol, -ENOMEM, or -errno of a read error.
 */
int pgtrace_kallsyms_open(struct pgtrace_kallsyms **out, int fd);
void pgtrace_kallsyms_close(struct pgtrace_kallsyms *k);

/*
 * pgtrace_kallsyms_check() - is @k the symbol table of the kernel that traced?
 *
 * The address of @st's anchor_name in @k must be @st->anchor_addr.
 *
 * Return: 0 if so, -ESTALE if it differs (another boot or another kernel:
 * KASLR moves the addresses), -ENOENT if @k has no such symbol, -EINVAL if
 * the record names none.
 */
int pgtrace_kallsyms_check(const struct pgtrace_kallsyms *k, const struct pagetrace_rec_stacks *st);

/*
 * pgtrace_kallsyms_lookup() - the text symbol at or before @addr
 *
 * Return: its name ("function" or "function [module]", valid until @k is
 * closed) with *@offset (if not NULL) set to @addr minus its address, or
 * NULL if no text symbol lies at or before @addr within 4 GiB.
 */
const char *pgtrace_kallsyms_lookup(const struct pgtrace_kallsyms *k, uint64_t addr,
			       uint64_t *offset);

/*
 * pgtrace_symbol_chunks() - symbol chunks naming @n addresses
 *
 * Builds, in a malloc'ed buffer (*@buf, free() it; *@len bytes), the
 * PAGETRACE_CHUNK_SYMBOLS chunks that name each of @addrs that @k knows
 * (the others are left out; duplicates are named once), ready to be
 * appended to the trace.  Each chunk holds at most 65536 words.
 *
 * Return: the number of addresses named (0: *@buf is NULL, *@len 0), or
 * -ENOMEM.
 */
int pgtrace_symbol_chunks(const struct pgtrace_kallsyms *k, const uint64_t *addrs, size_t n,
		     void **buf, size_t *len);

/*
 * pgtrace_symbol_lookup_fn - a symbol table of the caller's: the name of the
 * function at or before @addr (valid until pgtrace_symbol_chunks_by()
 * returns) with *@offset set to @addr minus its address, or NULL if none.
 */
typedef const char *(*pgtrace_symbol_lookup_fn)(void *arg, uint64_t addr, uint64_t *offset);

/*
 * pgtrace_symbol_chunks_by() - pgtrace_symbol_chunks() with the caller's lookup
 *
 * The same chunks, each address named by @lookup(@arg, ...) instead of a
 * kallsyms file (a trace-cmd file's own symbols, say).  Names are cut to
 * PAGETRACE_SYM_NAME_MAX bytes; an address too far past its symbol for
 * the offset field is left out.
 *
 * Return: as pgtrace_symbol_chunks().
 */
int pgtrace_symbol_chunks_by(pgtrace_symbol_lookup_fn lookup, void *arg, const uint64_t *addrs,
			size_t n, void **buf, size_t *len);

/* The last error: "offset N: what was wrong", or "" if there was none. */
const char *pgtrace_reader_error(const struct pgtrace_reader *r);

/* "alloc", "free", "reclaim", "task", or "?" */
const char *pgtrace_event_type_name(unsigned int type);

/*
 * Aggregation (stats.c)
 */
#define PGTRACE_STATS_MAX_ORDER	63

struct pgtrace_cpu_stats {
	uint64_t	events;
	uint64_t	chunks;
	uint64_t	lost;
	uint64_t	seq_gaps;
	uint64_t	missing_chunks;
};

/**
 * struct pgtrace_stats - what pgtrace_stats_collect() counts
 * @by_type: events per PGTRACE_EV_ALLOC..PGTRACE_EV_RECLAIM (index 0 unused)
 * @pages_by_type: pages per type
 * @by_order: events with npages == 1 << order
 * @other_order: events whose npages is not a power of two
 * @nr_cpus: entries in @cpus: the header's nr_cpus, more if events of
 *	     higher CPUs came by (Go traces), up to PGTRACE_GO_MAX_P
 * @first_ns, @last_ns: earliest and latest event time outside snapshot
 *	chunks (valid if events; both the header's start_ns if every event is
 *	a snapshot one).  Snapshot events are stamped with start_ns rounded
 *	down to 128 ns, a time at which nothing happened: they would put
 *	first_ns up to 127 ns before the start for no reason.  first_ns may
 *	still be a little before start_ns: times are rounded down to 128 ns,
 *	and CPUs' clocks may differ a little (format.rst, Timing rules)
 * @no_cpu: events and chunks with cpu PGTRACE_CPU_NONE (Go: logged without a P)
 * @clock_local_chunks: chunks flagged PAGETRACE_CHUNK_CLOCK_LOCAL: a session
 *	on the TSC went over to local_clock() before the system slept
 */
struct pgtrace_stats {
	uint64_t		events;
	uint64_t		by_type[4];
	uint64_t		pages_by_type[4];
	uint64_t		by_order[PGTRACE_STATS_MAX_ORDER + 1];
	uint64_t		other_order;
	uint64_t		chunks;
	uint64_t		snapshot_chunks;
	uint64_t		clock_local_chunks;
	uint64_t		lost;
	uint64_t		seq_gaps;
	uint64_t		missing_chunks;
	uint64_t		tasks;
	uint64_t		bytes;
	uint64_t		first_ns;
	uint64_t		last_ns;
	unsigned int		nr_cpus;
	struct pgtrace_cpu_stats	*cpus;
	struct pgtrace_cpu_stats	no_cpu;
};

int pgtrace_stats_init(struct pgtrace_stats *s, unsigned int nr_cpus);
void pgtrace_stats_free(struct pgtrace_stats *s);
void pgtrace_stats_add_event(struct pgtrace_stats *s, const struct pgtrace_event *ev);
void pgtrace_stats_add_chunk(struct pgtrace_stats *s, const struct pgtrace_chunk *c);
/*
 * Drain @r into @s (initialised here for the header's nr_cpus; free it with
 * pgtrace_stats_free() even on error).  Replaces any chunk callback.  Returns 0
 * at a clean end, else the reader's error; @s then holds what came before.
 */
int pgtrace_stats_collect(struct pgtrace_reader *r, struct pgtrace_stats *s);

/*
 * Analysis (analysis.c): what needs the events in time order.
 *
 * Chunks of different CPUs interleave in the stream in no particular
 * order, so an allocation on one CPU may come after its free on another.
 * pgtrace_analysis puts events back in time order: each CPU's events are
 * already ordered, so it queues them per CPU and merges the queues,
 * releasing an event once every CPU that has logged events has a later one
 * queued, once it is @hold_ns older than the newest event seen (a CPU that
 * went quiet), or when more than @max_held events are queued.  Memory is
 * bounded by @max_held and by the page blocks live at once.
 *
 * Events of equal time go in CPU order (Go: P -1 first), each CPU's in
 * the order it logged them.
 *
 * In time order it tracks each allocated block by its first page, in a
 * flat array over the zones' PFNs (a hash map for PFNs outside them): a
 * free or reclaim of a block ends its lifetime; one of part of a block
 * (split pages) ends that part, found by looking up the naturally aligned
 * blocks of orders 1..PGTRACE_SPLIT_ORDERS that could hold it, and the rest
 * stays as naturally aligned pieces (a piece that would start where a
 * later block starts is dropped: a free was lost).  A free of pages never
 * seen allocated is "unmatched": allocated before the trace started,
 * unless snapshot chunks (the memory map at the start) said so; their
 * allocations seed the map with no start time.  In-use counts cover the
 * pages the trace knows to be allocated.  The array takes 16 bytes per
 * PFN of the zones' span at most (its leaves of 1024 PFNs are made as
 * they are first written), the hash map 48 to 96 bytes a block in it.
 */
#define PGTRACE_SPLIT_ORDERS		10
/* Lifetime histograms: per order of the allocation, npages rounded up. */
#define PGTRACE_LIFE_ORDERS		36
/*
 * Lifetime buckets, in units of 128 ns (the trace's time step): exact below
 * 64 units, then 32 buckets per power of two (at most 3% wide).
 */
#define PGTRACE_LIFE_EXACT		64
#define PGTRACE_LIFE_SUB		32
#define PGTRACE_LIFE_BUCKETS		(PGTRACE_LIFE_EXACT + 51 * PGTRACE_LIFE_SUB)
#define PGTRACE_RATE_BINS		1024
#define PGTRACE_MAX_LOST_SITES	64
#define PGTRACE_ZONE_OTHER		UINT32_MAX	/* pgtrace_analysis_zone(): in no zone */

/**
 * struct pgtrace_life_hist - lifetimes (allocation to free or reclaim) of one order
 * @count: lifetimes measured
 * @sum_ns: their sum (for the mean)
 * @min_ns, @max_ns: shortest and longest, exact
 * @buckets: counts per bucket, see pgtrace_life_bucket_ns()
 */
struct pgtrace_life_hist {
	uint64_t	count;
	uint64_t	sum_ns;
	uint64_t	min_ns;
	uint64_t	max_ns;
	uint64_t	buckets[PGTRACE_LIFE_BUCKETS];
};

/**
 * struct pgtrace_zone_stats - one zone's share of a trace
 * @events, @pages: events and pages per type, index as pgtrace_stats.by_type
 * @in_use: pages allocated (known, see above) at the end
 * @peak_in_use: most pages allocated at once
 * @in_use_at_counters: pages allocated at the time of the kernel's start
 *	counters (pgtrace_reader_kernel_counters()), when
 *	pgtrace_analysis.counters_marked says they were taken
 */
struct pgtrace_zone_stats {
	uint64_t	events[4];
	uint64_t	pages[4];
	uint64_t	in_use;
	uint64_t	peak_in_use;
	uint64_t	in_use_at_counters;
};

/**
 * struct pgtrace_rate_bin - one slice of the time line
 * @events, @pages: per type, index as pgtrace_stats.by_type
 * @lost: events lost, by the time of the chunk that reported them
 */
struct pgtrace_rate_bin {
	uint64_t	events[4];
	uint64_t	pages[4];
	uint64_t	lost;
};

/**
 * struct pgtrace_lost_site - a chunk that reported lost events
 * @offset: file offset of the chunk
 * @time_ns: its first time base
 * @lost: events lost before it
 * @cpu: its CPU
 */
struct pgtrace_lost_site {
	uint64_t	offset;
	uint64_t	time_ns;
	uint64_t	lost;
	uint32_t	cpu;
};

struct pgtrace_analysis;

/**
 * struct pgtrace_analysis_params - knobs and hooks of pgtrace_analysis_collect()
 * @hold_ns: how long to wait for a quiet CPU; 0: 4 flush periods plus
 *	     1 s for v1 streams, without limit for Go traces (Go flushes a
 *	     P's buffer only when it is full)
 * @max_held: events queued at most for ordering; 0: 1 << 21
 * @event: called for every event in time order, once the in-use state
 *	   includes it (snapshot events as they arrive, before the rest);
 *	   a negative return stops the analysis with that error
 * @change: called for every change of the pages in use: @sign +1 when
 *	    [pfn, pfn + npages) becomes allocated, -1 when it stops being so
 *	    (it may be part of the event's range, or a replaced block); @order
 *	    is the allocation's
 * @arg: passed to both
 * @flags: PGTRACE_ANALYSIS_*
 * @threads: 0 or 1: all on the calling thread; 2 or more: the events are
 *	     applied to the block map on a second thread while the calling
 *	     one decodes and orders them (no more than two are used).  The
 *	     result is the same to the byte.  Ignored with a hook or
 *	     PGTRACE_ANALYSIS_UNORDERED: one thread then.
 */
struct pgtrace_analysis_params {
	uint64_t	hold_ns;
	uint64_t	max_held;
	int		(*event)(const struct pgtrace_event *ev, const struct pgtrace_analysis *a,
				 void *arg);
	void		(*change)(uint64_t time_ns, uint64_t pfn, uint64_t npages,
				  int sign, unsigned int order, void *arg);
	void		*arg;
	unsigned int	flags;
	unsigned int	threads;
};

/*
 * pgtrace_analysis_params.flags: only what needs no time order (counts by type,
 * order, CPU and zone, the rate time line, lost sites, snapshot counts):
 * no lifetimes, pages in use, peaks or unmatched frees, no hooks.  About
 * 3 times faster: no queues, no block map.
 */
#define PGTRACE_ANALYSIS_UNORDERED	(1U << 0)

/**
 * struct pgtrace_analysis - everything pgtrace_analysis_collect() measures
 * @stats: the counts of pgtrace_stats_collect()
 * @nr_zones: the header's zone records, @zones a copy of them sorted by
 *	      start_pfn, @zone_stats one entry each, @other_zone events
 *	      outside every zone
 * @origin_ns: time of rate bin 0 (the header's start_ns)
 * @bin_ns: width of a rate bin; starts at 1 ms and doubles as needed
 * @nr_bins: rate bins up to the last used one (at most PGTRACE_RATE_BINS)
 * @bins: the rate bins; events before @origin_ns go to bin 0
 * @lost_sites: the first PGTRACE_MAX_LOST_SITES chunks with lost events
 * @nr_lost_sites: entries used in @lost_sites (all of them are in stats.lost)
 * @life: lifetimes per allocation order (snapshot blocks have none)
 * @life_all: all lifetimes (the sum of @life, made at the end)
 * @snapshot_events, @snapshot_pages: allocations in snapshot chunks
 * @in_use: pages allocated now (at the end: still allocated)
 * @in_use_blocks: blocks allocated now
 * @in_use_by_order: pages allocated now, by allocation order
 * @peak_in_use, @peak_ns: most pages allocated at once, and when first
 * @unmatched_events, @unmatched_pages: frees (index PGTRACE_EV_FREE) and
 *	reclaims (PGTRACE_EV_RECLAIM) of pages not known to be allocated
 * @unmatched_in_snapshot_events, @unmatched_in_snapshot_pages: those of
 *	@unmatched_events and @unmatched_pages that came while the snapshot
 *	was taken (up to the kernel's start counters): pages allocated before
 *	the trace and freed before the walk reached them.  In a trace with a
 *	snapshot, unmatched frees after it and @realloc_events each mean an
 *	event the trace does not hold (an allocation, a free).
 * @realloc_events: allocations of a block already allocated (replaced)
 * @late_events: events released out of time order (a CPU silent longer
 *	than hold_ns, or more than max_held queued); 0 means exact order
 * @max_held_seen: most events queued at once
 * @counters_marked: nonzero when the zones' in_use_at_counters were taken
 *		     (the stream has the kernel's start counters)
 */
struct pgtrace_analysis {
	struct pgtrace_stats		stats;
	unsigned int		nr_zones;
	struct pgtrace_zone		*zones;
	struct pgtrace_zone_stats	*zone_stats;
	struct pgtrace_zone_stats	other_zone;
	uint64_t		origin_ns;
	uint64_t		bin_ns;
	unsigned int		nr_bins;
	struct pgtrace_rate_bin	*bins;
	struct pgtrace_lost_site	lost_sites[PGTRACE_MAX_LOST_SITES];
	unsigned int		nr_lost_sites;
	struct pgtrace_life_hist	*life;
	struct pgtrace_life_hist	life_all;
	uint64_t		snapshot_events;
	uint64_t		snapshot_pages;
	uint64_t		in_use;
	uint64_t		in_use_blocks;
	uint64_t		in_use_by_order[PGTRACE_LIFE_ORDERS];
	uint64_t		peak_in_use;
	uint64_t		peak_ns;
	uint64_t		unmatched_events[4];
	uint64_t		unmatched_pages[4];
	uint64_t		unmatched_in_snapshot_events[4];
	uint64_t		unmatched_in_snapshot_pages[4];
	uint64_t		realloc_events;
	uint64_t		late_events;
	uint64_t		max_held_seen;
	int			counters_marked;
	/* private */
	struct pgtrace_analysis_priv	*priv;
};

/**
 * pgtrace_analysis_collect() - drain a reader into a struct pgtrace_analysis
 * @r: an open reader, v1 or Go; its chunk callback is replaced
 * @a: filled in here; free it with pgtrace_analysis_free() even on error
 * @p: knobs and hooks, or NULL for the defaults
 *
 * Return: 0 at a clean end of the stream, -ENOMEM, the reader's error, or
 * what a hook returned; @a then holds what came before.
 */
int pgtrace_analysis_collect(struct pgtrace_reader *r, struct pgtrace_analysis *a,
			const struct pgtrace_analysis_params *p);

/**
 * pgtrace_analysis_free() - free what pgtrace_analysis_collect() allocated
 * @a: the analysis; may be freed twice, or after a failed collect
 */
void pgtrace_analysis_free(struct pgtrace_analysis *a);

/**
 * pgtrace_analysis_zone() - which zone a page is in
 * @a: a collected analysis (its zones)
 * @pfn: the page frame
 *
 * Return: the index into @a->zones, or PGTRACE_ZONE_OTHER.
 */
unsigned int pgtrace_analysis_zone(const struct pgtrace_analysis *a, uint64_t pfn);

/**
 * pgtrace_life_order() - the order that lifetimes of @npages pages count under
 * @npages: pages of the allocation
 *
 * Return: log2 of @npages rounded up, at most PGTRACE_LIFE_ORDERS - 1.
 */
unsigned int pgtrace_life_order(uint64_t npages);

/**
 * pgtrace_life_bucket_ns() - the smallest lifetime of a histogram bucket
 * @bucket: 0 .. PGTRACE_LIFE_BUCKETS - 1
 *
 * Return: the bucket's lower bound in ns.
 */
uint64_t pgtrace_life_bucket_ns(unsigned int bucket);

/**
 * pgtrace_life_percentile() - a lifetime percentile
 * @h: a histogram
 * @pct: 0 .. 100
 *
 * Nearest rank: the lower bound of the bucket holding the ceil(pct% of
 * count)-th shortest lifetime (exact for lifetimes below 64 * 128 ns, else
 * at most 3% low), clamped to [min_ns, max_ns].
 *
 * Return: ns, or 0 if @h is empty.
 */
uint64_t pgtrace_life_percentile(const struct pgtrace_life_hist *h, double pct);

/*
 * Who caused reclaim (reclaim.c): each page a reclaim event takes traced
 * back to the allocation that handed it out, with that allocation's task,
 * sampled stack (if it was sampled), order and time, so that reclaim can
 * be summed up by the tasks and stacks whose pages it took.
 *
 * It runs as an event hook of pgtrace_analysis_collect(), so it sees the
 * events in time order, and keeps its own map of the blocks allocated
 * (96 to 144 bytes a block, besides the analysis's): it follows the same
 * rules as the analysis (a block freed in part leaves naturally aligned
 * pieces, found from any page in them), so a reclaim that the analysis
 * counts as unmatched is "unknown" here too.  Pages reclaimed from a
 * piece count against the allocation the piece came from.
 *
 * Nothing is guessed: pages whose allocation is not in the trace are
 * counted apart, as PGTRACE_RECLAIM_SNAPSHOT (listed in the snapshot:
 * allocated before the session, by nobody known) or PGTRACE_RECLAIM_UNKNOWN
 * (no allocation known at all: before the session without a snapshot, or
 * an allocation event lost).
 */
enum pgtrace_reclaim_origin {
	PGTRACE_RECLAIM_TRACED		= 0,	/* allocated in the trace */
	PGTRACE_RECLAIM_SNAPSHOT	= 1,	/* allocated before it, per the snapshot */
	PGTRACE_RECLAIM_UNKNOWN		= 2,	/* no allocation known */
};

/**
 * struct pgtrace_reclaim_part - pages of one reclaim event from one allocation
 * @time_ns: the reclaim event's time
 * @pfn, @npages: the pages reclaimed, all from one allocation (or none known)
 * @task: the reclaiming task (kswapd, or the task in direct reclaim)
 * @origin: enum pgtrace_reclaim_origin; the @alloc_* fields are valid only
 *	    with PGTRACE_RECLAIM_TRACED (else 0, @alloc_task PGTRACE_TASK_UNKNOWN)
 * @alloc_ns: when the allocation was made
 * @life_ns: @time_ns - @alloc_ns (0 if the clocks of two CPUs say otherwise)
 * @alloc_pfn, @alloc_npages: the whole block the allocation got
 * @alloc_task: the allocating task (tgid; 0 the kernel, PGTRACE_TASK_UNKNOWN
 *		without a task record)
 * @alloc_stack: 0 if the allocation was not sampled, else its stack id,
 *		 PGTRACE_STACK_UNKNOWN if sampled with an unknown stack
 * @alloc_order: log2 of @alloc_npages rounded up (pgtrace_life_order())
 */
struct pgtrace_reclaim_part {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages;
	int64_t		task;
	uint64_t	alloc_ns;
	uint64_t	life_ns;
	uint64_t	alloc_pfn;
	uint64_t	alloc_npages;
	int64_t		alloc_task;
	uint32_t	alloc_stack;
	uint32_t	alloc_order;
	uint32_t	origin;
	uint32_t	__pad;
};

/*
 * Lifetimes of reclaimed pages, one count per page: exact below 8 steps of
 * 128 ns, then 4 buckets per power of two (each at most 25% wide).
 */
#define PGTRACE_RECLAIM_LIFE_EXACT	8
#define PGTRACE_RECLAIM_LIFE_BUCKETS	(PGTRACE_RECLAIM_LIFE_EXACT + 54 * 4)

/**
 * struct pgtrace_reclaim_life - how long reclaimed pages lived
 * @pages: pages counted
 * @sum_ns: the sum of their lifetimes, a page at a time (for the mean)
 * @min_ns, @max_ns: shortest and longest, exact
 * @buckets: pages per bucket; see pgtrace_reclaim_bucket_ns()
 */
struct pgtrace_reclaim_life {
	uint64_t	pages;
	uint64_t	sum_ns;
	uint64_t	min_ns;
	uint64_t	max_ns;
	uint64_t	buckets[PGTRACE_RECLAIM_LIFE_BUCKETS];
};

/**
 * struct pgtrace_reclaim_group - reclaim of the pages of one task or one stack
 * @key: the allocating tgid (by_task), or the stack id (by_stack: 0 for
 *	 allocations that were not sampled, PGTRACE_STACK_UNKNOWN for samples
 *	 with an unknown stack)
 * @pages: its pages reclaimed
 * @blocks: its allocations that lost at least one page to reclaim
 * @parts: pieces of reclaim events (an event takes pages of one or more
 *	   allocations: one part each)
 * @life: the lifetimes of those pages
 */
struct pgtrace_reclaim_group {
	int64_t		key;
	uint64_t	pages;
	uint64_t	blocks;
	uint64_t	parts;
	struct pgtrace_reclaim_life life;
};

/**
 * struct pgtrace_reclaim_params - hooks of the reclaim attribution
 * @part: called for each struct pgtrace_reclaim_part, in time order; a
 *	  negative return stops the analysis with that error
 * @arg: passed to @part
 */
struct pgtrace_reclaim_params {
	int		(*part)(const struct pgtrace_reclaim_part *p, void *arg);
	void		*arg;
};

/**
 * struct pgtrace_reclaim - reclaim by who allocated the pages
 * @events, @pages: reclaim events and their pages (all origins)
 * @traced_pages, @traced_blocks: pages whose allocation is in the trace,
 *	and the allocations they came from
 * @snapshot_pages, @snapshot_events: pages allocated before the session
 *	(the snapshot listed them), and the reclaim events that took some
 * @unknown_pages, @unknown_events: pages with no allocation known, and the
 *	reclaim events that took some
 * @life: lifetimes of the traced pages
 * @by_task, @nr_tasks: one group per allocating task, most pages first
 *	(made by pgtrace_reclaim_finish())
 * @by_stack, @nr_stacks: one group per stack id, the same
 */
struct pgtrace_reclaim {
	uint64_t	events;
	uint64_t	pages;
	uint64_t	traced_pages;
	uint64_t	traced_blocks;
	uint64_t	snapshot_pages;
	uint64_t	snapshot_events;
	uint64_t	unknown_pages;
	uint64_t	unknown_events;
	struct pgtrace_reclaim_life life;
	struct pgtrace_reclaim_group *by_task;
	size_t		nr_tasks;
	struct pgtrace_reclaim_group *by_stack;
	size_t		nr_stacks;
	/* private */
	struct pgtrace_reclaim_priv *priv;
};

/**
 * pgtrace_reclaim_init() - start a reclaim attribution
 * @rc: set up here; free it with pgtrace_reclaim_free() even on error
 * @p: hooks, or NULL
 *
 * Return: 0 or -ENOMEM.
 */
int pgtrace_reclaim_init(struct pgtrace_reclaim *rc, const struct pgtrace_reclaim_params *p);

/**
 * pgtrace_reclaim_event() - the analysis event hook that attributes reclaim
 * @ev: an event, in time order (snapshot allocations first)
 * @a: the analysis (unused)
 * @arg: the struct pgtrace_reclaim
 *
 * Pass it as pgtrace_analysis_params.event with @arg the struct
 * pgtrace_reclaim, or call it from a hook of one's own.
 *
 * Return: 0, -ENOMEM, or what the part hook returned.
 */
int pgtrace_reclaim_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a,
			  void *arg);

/**
 * pgtrace_reclaim_finish() - make the by_task and by_stack lists
 * @rc: after the last event
 *
 * Return: 0 or -ENOMEM.
 */
int pgtrace_reclaim_finish(struct pgtrace_reclaim *rc);

/**
 * pgtrace_reclaim_collect() - drain a reader into an analysis and a reclaim attribution
 * @r: an open reader
 * @a: as pgtrace_analysis_collect() fills it in; free with pgtrace_analysis_free()
 * @rc: filled in here; free with pgtrace_reclaim_free() even on error
 * @p: hooks, or NULL
 *
 * pgtrace_reclaim_init(), pgtrace_analysis_collect() with
 * pgtrace_reclaim_event() as its event hook, then pgtrace_reclaim_finish().
 *
 * Return: 0, or an error as pgtrace_analysis_collect() returns it.
 */
int pgtrace_reclaim_collect(struct pgtrace_reader *r, struct pgtrace_analysis *a,
			    struct pgtrace_reclaim *rc, const struct pgtrace_reclaim_params *p);

/**
 * pgtrace_reclaim_free() - free a reclaim attribution
 * @rc: may be freed twice, or after a failed init
 */
void pgtrace_reclaim_free(struct pgtrace_reclaim *rc);

/**
 * pgtrace_reclaim_bucket_ns() - the shortest lifetime of a bucket
 * @bucket: 0 .. PGTRACE_RECLAIM_LIFE_BUCKETS - 1
 *
 * Return: ns.
 */
uint64_t pgtrace_reclaim_bucket_ns(unsigned int bucket);

/**
 * pgtrace_reclaim_percentile() - a lifetime percentile of reclaimed pages
 * @l: a histogram
 * @pct: 0 .. 100
 *
 * Nearest rank: the lower bound of the bucket holding the ceil(pct% of
 * pages)-th shortest-lived page (exact below 1024 ns, else at most 20%
 * low), clamped to [min_ns, max_ns].
 *
 * Return: ns, or 0 if @l is empty.
 */
uint64_t pgtrace_reclaim_percentile(const struct pgtrace_reclaim_life *l, double pct);

/*
 * The mapped session: zero-copy reading of /dev/pagetrace.
 *
 * The module maps a meta area (positions and counters of every CPU, the
 * header, the snapshot) and every CPU's ring of chunk buffers, read-only
 * (see the drawing in uapi/linux/pagetrace.h).  A CPU's closed chunks are
 * [consumed, produced); the consumer reads them where they are and gives
 * them back with PAGETRACE_IOC_CONSUME.  The library owns that protocol:
 *
 *	pgtrace_ring_map(fd, &r);		map the session open on fd
 *	pgtrace_ring_claim(r);		read() is refused from now on
 *	for each cpu:
 *		n = pgtrace_ring_peek(r, cpu, &pos);	closed chunks pos .. pos+n-1
 *		pgtrace_ring_chunk(r, cpu, pos + i, &ch, &len);	read one
 *		pgtrace_ring_advance(r, cpu, n);	done with them
 *	pgtrace_ring_consume(r);		give every advanced chunk back, one ioctl
 *	pgtrace_ring_unmap(r);
 *
 * One thread at a time per ring.  In flight recorder mode the kernel
 * overwrites unconsumed chunks itself: peek and read only between
 * PAGETRACE_IOC_FREEZE and PAGETRACE_IOC_THAW.
 */
struct pgtrace_ring;

/*
 * Map the session open on @fd (not closed by the ring; it must stay open).
 * -ENOTTY if @fd is not /dev/pagetrace, -EPROTO if the meta area has a
 * version or layout this library does not know, -ENOMEM, or mmap()'s
 * -errno.
 */
int pgtrace_ring_map(int fd, struct pgtrace_ring **out);
/* Unmap and free; NULL is a no-op. */
void pgtrace_ring_unmap(struct pgtrace_ring *r);
/*
 * Claim the session for the mapping (read() fails with EBUSY after):
 * 0, -EBUSY if read() claimed it, -EINTR.
 */
int pgtrace_ring_claim(struct pgtrace_ring *r);
/* The meta area: nr_cpus, chunk_size, nr_bufs, mode, offsets. */
const struct pagetrace_meta *pgtrace_ring_meta(const struct pgtrace_ring *r);
/*
 * The meta area's flags (PAGETRACE_META_*), loaded with acquire: after
 * STOPPED, a peek that finds nothing on every CPU means the end.
 */
uint32_t pgtrace_ring_flags(const struct pgtrace_ring *r);
/* @cpu's positions and counters; NULL if @cpu >= nr_cpus. */
const struct pagetrace_meta_cpu *pgtrace_ring_cpu(const struct pgtrace_ring *r, unsigned int cpu);
/*
 * The stream's prefix, as a file written from the mapping begins: the
 * header, then the snapshot (header_size + snapshot_size bytes, in two
 * pieces).  Returns the header; *@snapshot and *@snapshot_len (if not
 * NULL) give the snapshot.
 */
const struct pagetrace_header *pgtrace_ring_header(const struct pgtrace_ring *r,
					      const void **snapshot,
					      size_t *snapshot_len);
/**
 * struct pgtrace_ring_pages - the session's count of pages in use
 * @snapshot: pages the memory map at start listed (its REC_SNAPSHOT)
 * @alloc: pages of the alloc events recorded so far, every CPU
 * @free: pages of the free and reclaim events recorded so far
 * @in_use: @snapshot + @alloc - @free: the trace's pages in use
 * @has_snapshot: the session has a memory map at start; without one
 *	@snapshot is 0 and @in_use only the change since the start
 *
 * Events still in a CPU's open buffer are not counted yet (a flush or the
 * next chunk close counts them); events overwritten in flight recorder
 * mode stay counted.  Filtered and lost events are not in the trace and
 * not counted.
 */
struct pgtrace_ring_pages {
	uint64_t	snapshot;
	uint64_t	alloc;
	uint64_t	free;
	int64_t		in_use;
	int		has_snapshot;
};
/*
 * The session's pages in use, from the meta counters of every CPU and the
 * header's snapshot record: 0, or -EOPNOTSUPP if the module does not count
 * pages (no PAGETRACE_META_PAGES).  Cheap (one pass over the CPUs' meta
 * entries): made to be polled.
 */
int pgtrace_ring_pages(const struct pgtrace_ring *r, struct pgtrace_ring_pages *p);
/*
 * @cpu's closed chunks not yet advanced past: returns how many (0 if none,
 * or -EINVAL for a CPU the ring does not have) and sets *@pos to the
 * position of the first.  Reads produced with acquire: the chunks it
 * covers are complete.
 */
int64_t pgtrace_ring_peek(struct pgtrace_ring *r, unsigned int cpu, uint64_t *pos);
/*
 * The chunk of @cpu at @pos (from pgtrace_ring_peek()) and its length in
 * bytes, header included: 0, -EINVAL for a CPU the ring does not have or
 * a position that is not a closed chunk still held, or -EBADMSG if its
 * word count does not fit the buffer.
 */
int pgtrace_ring_chunk(const struct pgtrace_ring *r, unsigned int cpu, uint64_t pos,
		  const struct pagetrace_chunk **chunk, size_t *len);
/* Done with the next @n chunks of @cpu; they go back at pgtrace_ring_consume(). */
int pgtrace_ring_advance(struct pgtrace_ring *r, unsigned int cpu, uint64_t n);
/*
 * Give every chunk advanced past back to the kernel, with one
 * PAGETRACE_IOC_CONSUME: returns how many (0 if none: then no system
 * call), or the ioctl's -errno (-EBUSY: a flight recorder that is not
 * frozen).  The chunks must not be read after.
 */
int64_t pgtrace_ring_consume(struct pgtrace_ring *r);

#ifdef __cplusplus
}
#endif

#endif /* LIBPAGETRACE_H */
