/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pagetrace: the v1 stream format, the /dev/pagetrace ioctls, and the
 * word encode/decode helpers shared by the kernel module and userspace.
 *
 * This header is the one contract between the module and its readers.  It
 * depends on nothing but <linux/const.h>, <linux/ioctl.h> and <linux/types.h>.
 *
 * All integers in the stream are little-endian.
 *
 * The stream
 * ==========
 *
 *   +---------------------------+  offset 0
 *   | struct pagetrace_header   |  64 bytes, fixed
 *   +---------------------------+  offset 64
 *   | header records            |  struct pagetrace_record + payload, each
 *   |   ...                     |  8-byte aligned, up to header_size; a
 *   |   PAGETRACE_REC_END       |  record of type END (or the end of the
 *   +---------------------------+  header) stops the list.  offset header_size
 *   | chunk                     |
 *   |   pagetrace_chunk (32 B)  |
 *   |   nr_words x __u64        |
 *   +---------------------------+
 *   | chunk ...                 |  until end of file
 *   +---------------------------+
 *
 * A chunk is one per-CPU buffer's worth of words.  Chunks of one CPU appear
 * in seq order; chunks of different CPUs interleave in no particular order.
 *
 * The words (bit for bit the Go runtime's page trace, with a PFN where Go
 * has an address):
 *
 *   event:  [63..48 time delta][47..13 pfn][12..3 npages][2 large][1..0 type]
 *           type 1 alloc, 2 free, 3 reclaim (Go's "scavenge").
 *           time delta = (t - base) >> 7, base from the last sync word.
 *           large = 1 when npages >= 1024: the npages field is 0 and the next
 *           word holds npages.
 *   sync:   [63..3 t >> 7][2 0][1..0 0]        t = new time base in ns
 *   pid:    [63..3 id][2 1][1..0 0]            id = cpu at the start of a
 *                                              chunk; with bit 60 of id set,
 *                                              a task record (tgid in the
 *                                              low bits); with bit 59 set,
 *                                              a name slice: 7 bytes of a
 *                                              process name (comm); the
 *                                              slices of a name come right
 *                                              before the task record of
 *                                              the tgid they name; with
 *                                              bit 58 set, a stack word
 *                                              (sampled call stacks)
 *
 * Every chunk starts with a pid word (its cpu) and a sync word.  A new sync
 * word follows whenever t - base reaches 2^23 ns.
 */
#ifndef _UAPI_LINUX_PAGETRACE_H
#define _UAPI_LINUX_PAGETRACE_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define PAGETRACE_VERSION		1
#define PAGETRACE_MAGIC			"PGTRACE"	/* 8 bytes with the NUL */
#define PAGETRACE_MAGIC_LEN		8
#define PAGETRACE_CHUNK_MAGIC		"PTCK"		/* 4 bytes, no NUL */
#define PAGETRACE_CHUNK_MAGIC_LEN	4

/* Header flags, bits 3..0: the trace clock. */
#define PAGETRACE_CLOCK_MASK		0xfU
#define PAGETRACE_CLOCK_LOCAL		0U	/* local_clock() */
#define PAGETRACE_CLOCK_MONOTONIC	1U	/* CLOCK_MONOTONIC */
#define PAGETRACE_CLOCK_TSC		2U	/* local_clock() ns, read from the TSC */
/* Header flags: chunks were overwritten (flight recorder); seq gaps expected. */
#define PAGETRACE_FLAG_OVERWRITE	_BITUL(4)
/* Header flags: snapshot chunks of the memory map at start follow. */
#define PAGETRACE_FLAG_SNAPSHOT		_BITUL(5)
/* Header flags: chunks may carry task records. */
#define PAGETRACE_FLAG_TASKS		_BITUL(6)
/* Header flags: sampled allocations carry call stacks (REC_STACKS). */
#define PAGETRACE_FLAG_STACKS		_BITUL(7)
/* Header flags: only the events a filter kept were recorded (REC_FILTER). */
#define PAGETRACE_FLAG_FILTERED		_BITUL(8)

/**
 * struct pagetrace_header - the first 64 bytes of every stream
 * @magic: "PGTRACE\0"
 * @version: PAGETRACE_VERSION
 * @header_size: bytes before the first chunk; a multiple of 8, at least 64
 * @page_shift: log2 of the page size (12 on x86-64)
 * @time_lost_bits: low bits of a time dropped in a word (7)
 * @time_delta_bits: width of an event's time delta (16)
 * @nr_cpus: every chunk's cpu is below this
 * @start_ns: session start on the trace clock
 * @start_mono_ns: CLOCK_MONOTONIC at that same instant
 * @start_real_ns: CLOCK_REALTIME at that same instant
 * @chunk_size: bytes of one full per-CPU buffer, its chunk header included
 * @flags: PAGETRACE_CLOCK_* in bits 3..0, PAGETRACE_FLAG_* above
 */
struct pagetrace_header {
	__u8	magic[PAGETRACE_MAGIC_LEN];
	__u32	version;
	__u32	header_size;
	__u32	page_shift;
	__u32	time_lost_bits;
	__u32	time_delta_bits;
	__u32	nr_cpus;
	__u64	start_ns;
	__u64	start_mono_ns;
	__u64	start_real_ns;
	__u32	chunk_size;
	__u32	flags;
};

/*
 * Header records follow struct pagetrace_header.  Each is a
 * struct pagetrace_record and @size bytes of payload, padded with zeroes to
 * a multiple of 8.  Readers skip types they do not know.
 */
struct pagetrace_record {
	__u32	type;
	__u32	size;		/* payload bytes, padding excluded */
};

#define PAGETRACE_REC_END	0	/* no payload; the rest of the header is padding */
#define PAGETRACE_REC_RELEASE	1	/* utsname release, NUL-terminated */
#define PAGETRACE_REC_ZONE	2	/* struct pagetrace_rec_zone */
#define PAGETRACE_REC_SESSION	3	/* struct pagetrace_rec_session */
#define PAGETRACE_REC_SNAPSHOT	4	/* struct pagetrace_rec_snapshot */
#define PAGETRACE_REC_STACKS	5	/* struct pagetrace_rec_stacks */
#define PAGETRACE_REC_FILTER	6	/* struct pagetrace_rec_filter */
#define PAGETRACE_REC_COUNTERS	7	/* struct pagetrace_rec_counters */

/**
 * struct pagetrace_rec_zone - one populated zone of one node
 * @node: NUMA node id
 * @zone: zone index within the node (ZONE_DMA = 0 ...)
 * @start_pfn: first PFN the zone spans
 * @end_pfn: one past the last PFN it spans
 * @present_pages: pages physically present in that span
 * @name: zone name ("DMA", "DMA32", "Normal", "Movable" ...), NUL-padded
 */
struct pagetrace_rec_zone {
	__u32	node;
	__u32	zone;
	__u64	start_pfn;
	__u64	end_pfn;
	__u64	present_pages;
	__u8	name[16];
};

/**
 * struct pagetrace_zone_counters - the kernel's own count of one zone
 * @node: NUMA node id
 * @zone: zone index within the node, as in struct pagetrace_rec_zone
 * @present_pages: pages physically present in the zone's span
 * @managed_pages: of those, the pages the page allocator manages (the
 *		   rest is reserved memory, allocated for good)
 * @free_pages: the zone's NR_FREE_PAGES, per-CPU deltas folded in: pages
 *		on its free lists
 * @pcp_pages: pages on the zone's per-CPU free lists, every CPU
 * @spread_pages: how far @free_pages moved while @pcp_pages was read (0:
 *		  the two are of one instant; else the count may be off by
 *		  about as much); at start, plus the pages of the events
 *		  written while the zones were read (an estimate: see
 *		  Documentation/pagetrace/format.rst); at stop, plus the pages
 *		  of the events the hooks turned away, the trace having
 *		  ended, while the zones were read.  0 in traces of modules
 *		  before it was kept.
 *
 * The kernel's pages in use are @present_pages - @free_pages - @pcp_pages:
 * the number the trace's own count (snapshot plus allocations minus frees
 * and reclaims) is checked against.
 */
struct pagetrace_zone_counters {
	__u32	node;
	__u32	zone;
	__u64	present_pages;
	__u64	managed_pages;
	__u64	free_pages;
	__u64	pcp_pages;
	__u64	spread_pages;
};

/**
 * struct pagetrace_rec_counters - every zone's counters at one instant
 * @time_ns: when they were read, on the trace clock
 * @nr_zones: entries of @zones filled in (the rest are zero)
 * @reserved0: 0
 * @reserved: 0
 * @zones: one entry per populated zone
 *
 * The header record (PAGETRACE_REC_COUNTERS) holds them as read when the
 * session started, right after the snapshot (or the hooks, without one);
 * the counters chunk (PAGETRACE_CHUNK_COUNTERS), as read when it stopped,
 * in the instant between the hooks' last event and their detaching.  The
 * allocator runs on other CPUs while a reading walks the zones, so the
 * two counts agree to within what it does in those microseconds.
 */
struct pagetrace_rec_counters {
	__u64	time_ns;
	__u32	nr_zones;
	__u32	reserved0;
	__u64	reserved[2];
	struct pagetrace_zone_counters zones[];
};

/* Hook backends, struct pagetrace_rec_session.backend */
#define PAGETRACE_BACKEND_KPROBE	0
#define PAGETRACE_BACKEND_TRACEPOINT	1
#define PAGETRACE_BACKEND_FENTRY	2	/* retired; in older traces */

/*
 * struct pagetrace_rec_session.uncovered: the kinds of event no hook saw,
 * because the running kernel has no function or tracepoint the module
 * knows for them and it was loaded with partial=1.  0 in a complete trace.
 */
#define PAGETRACE_UNCOVERED_ALLOC	_BITUL(0)	/* page allocations */
#define PAGETRACE_UNCOVERED_FREE	_BITUL(1)	/* page frees */
#define PAGETRACE_UNCOVERED_BULK	_BITUL(2)	/* the bulk allocator's pages */
#define PAGETRACE_UNCOVERED_COMPACT	_BITUL(3)	/* compaction, alloc_contig_range() */
#define PAGETRACE_UNCOVERED_REQUIRED	_BITUL(31)	/* the require= test function */

/**
 * struct pagetrace_rec_session - how the session was set up
 * @nr_bufs: buffers per CPU
 * @backend: PAGETRACE_BACKEND_*
 * @flush_ms: period of the flush timer
 * @clock_error_ns: with PAGETRACE_CLOCK_TSC, how far event times may be
 *	from local_clock()'s at the same instant (the TSC is anchored to
 *	local_clock() once, between two TSC reads); 0 with other clocks
 * @uncovered: PAGETRACE_UNCOVERED_*: what this trace cannot hold
 * @attach_us: on CLOCK_MONOTONIC, from the header's start_mono_ns to the
 *	moment the probes were attached, before which the session recorded
 *	no event; in microseconds, rounded down, at least 1 and saturating
 *	at U32_MAX.  0: unknown (traces of earlier versions)
 * @reserved: 0
 */
struct pagetrace_rec_session {
	__u32	nr_bufs;
	__u32	backend;
	__u32	flush_ms;
	__u32	clock_error_ns;
	__u32	uncovered;
	__u32	attach_us;
	__u32	reserved[2];
};

/**
 * struct pagetrace_rec_snapshot - the memory map taken at session start
 * @walk_ns: how long the walk over every zone took
 * @runs: alloc events in the snapshot chunks (runs of allocated pages)
 * @pages: pages in those runs
 * @unlisted: runs that found no room (also the last snapshot chunk's lost)
 * @flags: PAGETRACE_SNAPSHOT_*
 * @taken_free: pages, over all zones, with a zero reference count on no
 *	free list that the walk took as free, the per-CPU lists unread
 *	(never with PAGETRACE_SNAPSHOT_PCP): at most this many allocated
 *	pages are left out.  Kept where PAGETRACE_SNAPSHOT_TAKEN_FREE is
 *	set; else 0, unknown.
 * @reserved: 0
 *
 * Present when the header flags have PAGETRACE_FLAG_SNAPSHOT; the snapshot
 * chunks follow the header, before any other chunk.
 */
struct pagetrace_rec_snapshot {
	__u64	walk_ns;
	__u64	runs;
	__u64	pages;
	__u64	unlisted;
	__u64	flags;
	__u64	taken_free;
	__u64	reserved[2];
};

/*
 * struct pagetrace_rec_snapshot.flags: the walk told the pages on the
 * per-CPU free lists apart, so that a page with a zero reference count on
 * no free list (a tail of a block allocated without __GFP_COMP, a frozen
 * page) is listed as allocated.  Without it such pages are left out.
 */
#define PAGETRACE_SNAPSHOT_PCP	_BITULL(0)
/* struct pagetrace_rec_snapshot.flags: @taken_free is kept. */
#define PAGETRACE_SNAPSHOT_TAKEN_FREE	_BITULL(1)

/**
 * struct pagetrace_rec_stacks - how allocations were sampled for call stacks
 * @rate: mean pages allocated between two samples, per CPU
 * @max_depth: frames a stack holds at most (deeper ones are cut, outermost
 *	       frames first)
 * @anchor_addr: the run-time address of the function named @anchor_name,
 *		 so that a symbol table (/proc/kallsyms) can be checked
 *		 against the kernel that made the addresses
 * @anchor_name: NUL-padded
 * @reserved: 0
 *
 * Present when the header flags have PAGETRACE_FLAG_STACKS.
 */
struct pagetrace_rec_stacks {
	__u32	rate;
	__u32	max_depth;
	__u64	anchor_addr;
	__u8	anchor_name[32];
	__u64	reserved[4];
};

/* struct pagetrace_rec_filter.nodes: bits for nodes 0 .. this - 1 */
#define PAGETRACE_FILTER_NODES		1024

/**
 * struct pagetrace_rec_filter - which events the hooks kept
 * @types: bit (1 << PAGETRACE_EV_*) set for each event type kept
 * @reserved0: 0
 * @orders: bit n set: events of order n kept (the order of an event of
 *	    npages pages is log2 of npages rounded up)
 * @nodes: bit n set: events of pages on NUMA node n kept
 * @cgroup_id: 0, or only events of tasks in this cgroup (v2) or below it
 *	       were kept, none from interrupts; the id is the cgroup
 *	       directory's inode number
 * @reserved: 0
 *
 * Present when the header flags have PAGETRACE_FLAG_FILTERED.  Snapshot
 * chunks are filtered by node only.
 */
struct pagetrace_rec_filter {
	__u32	types;
	__u32	reserved0;
	__u64	orders;
	__u64	nodes[PAGETRACE_FILTER_NODES / 64];
	__u64	cgroup_id;
	__u64	reserved[4];
};

/* Chunk flags */
#define PAGETRACE_CHUNK_FLUSHED		_BITUL(0)	/* closed early by a flush */
#define PAGETRACE_CHUNK_SNAPSHOT	_BITUL(1)	/* memory map at session start */
/* Symbol names for stack addresses; see "Symbol chunks" below. */
#define PAGETRACE_CHUNK_SYMBOLS		_BITUL(2)
/*
 * The zones' counters when the session stopped: the words are a struct
 * pagetrace_rec_counters (cpu, seq, lost 0; no pid or sync word), read with
 * PAGETRACE_IOC_COUNTERS and appended by the recorder, at most once.
 */
#define PAGETRACE_CHUNK_COUNTERS	_BITUL(3)
/*
 * The session's clock was PAGETRACE_CLOCK_TSC and went over to
 * local_clock() before the system suspended or hibernated: set on every
 * chunk closed from then on.  Times stay local_clock() nanoseconds;
 * decoders need do nothing about it.
 */
#define PAGETRACE_CHUNK_CLOCK_LOCAL	_BITUL(4)

/**
 * struct pagetrace_chunk - the 32-byte header of every chunk
 * @magic: "PTCK"
 * @cpu: the CPU whose events these are
 * @flags: PAGETRACE_CHUNK_*
 * @nr_words: 64-bit words after this header
 * @reserved: 0
 * @seq: per-CPU chunk number: 0, 1, 2 ... (snapshot chunks: 0, not counted)
 * @lost: events this CPU dropped since its previous chunk
 */
struct pagetrace_chunk {
	__u8	magic[PAGETRACE_CHUNK_MAGIC_LEN];
	__u16	cpu;
	__u16	flags;
	__u32	nr_words;
	__u32	reserved;
	__u64	seq;
	__u64	lost;
};

/* Word layout */
#define PAGETRACE_TIME_LOST_BITS	7
#define PAGETRACE_TIME_DELTA_BITS	16
#define PAGETRACE_TIME_MAX_DELTA	(1ULL << (PAGETRACE_TIME_LOST_BITS + \
						  PAGETRACE_TIME_DELTA_BITS))

#define PAGETRACE_EV_SYNC	0
#define PAGETRACE_EV_ALLOC	1
#define PAGETRACE_EV_FREE	2
#define PAGETRACE_EV_RECLAIM	3

#define PAGETRACE_TYPE_MASK	0x3ULL
#define PAGETRACE_LARGE		_BITULL(2)	/* events: npages in next word */
#define PAGETRACE_IS_PID	_BITULL(2)	/* sync words: a pid record */
#define PAGETRACE_NPAGES_SHIFT	3
#define PAGETRACE_NPAGES_BITS	10
#define PAGETRACE_NPAGES_MAX	((1ULL << PAGETRACE_NPAGES_BITS) - 1)
#define PAGETRACE_PFN_SHIFT	13
#define PAGETRACE_PFN_BITS	35
#define PAGETRACE_PFN_MAX	((1ULL << PAGETRACE_PFN_BITS) - 1)
#define PAGETRACE_DELTA_SHIFT	(64 - PAGETRACE_TIME_DELTA_BITS)
#define PAGETRACE_ID_SHIFT	3
/* A pid record whose id has this bit is a task record, tgid in bits 31..0. */
#define PAGETRACE_ID_TASK	_BITULL(60)
/*
 * A pid record whose id has this bit (and not PAGETRACE_ID_TASK) is a name
 * slice: bits 58..56 of the id are its index, bits 55..0 hold bytes
 * 7 * index ... 7 * index + 6 of a process name (its comm, NUL-padded),
 * byte 7 * index in bits 7..0.  A name is slices 0, 1 ... (as many as its
 * length needs, at least one, at most PAGETRACE_NAME_MAX_SLICES) followed
 * at once by the task record of the tgid it names.  Every word is a pid
 * word, so a decoder that knows only events, sync and pid words sees a
 * few pid changes with no event between them.
 */
#define PAGETRACE_ID_NAME		_BITULL(59)
#define PAGETRACE_ID_TGID_MASK		0xffffffffULL
#define PAGETRACE_COMM_LEN		16
#define PAGETRACE_NAME_INDEX_SHIFT	56
#define PAGETRACE_NAME_INDEX_MASK	0x7ULL
#define PAGETRACE_NAME_SLICE_BYTES	7
#define PAGETRACE_NAME_MAX_SLICES	3	/* 16 bytes in slices of 7 */
#define PAGETRACE_NAME_BYTES_MASK	((1ULL << PAGETRACE_NAME_INDEX_SHIFT) - 1)

/*
 * Sampled call stacks (PAGETRACE_FLAG_STACKS).  About one allocation in
 * every rate pages of a CPU is sampled: the event word of a sampled
 * allocation comes right after a stack word of kind SAMPLE that names its
 * call stack.  A stack word is a pid word whose id has PAGETRACE_ID_STACK
 * (and neither PAGETRACE_ID_TASK nor PAGETRACE_ID_NAME) set; bits 57..56
 * of the id are its kind:
 *
 *   SAMPLE  bits 31..0: the stack id, 0 if the stack is not known (the
 *           CPU's stack table was full); the next word of the chunk is
 *           the sampled allocation's event word.
 *   DEF     bits 31..0: a stack id (not 0); bits 39..32: depth, 1 ..
 *           PAGETRACE_STACK_MAX_DEPTH; bit 40: the stack was cut at
 *           max_depth.  Exactly depth FRAME words follow.
 *   FRAME   bits 47..0: the low 48 bits of a code address (sign-extend
 *           bit 47 for the address); the innermost frame comes first.
 *
 * Every chunk defines the stacks it refers to, before the first SAMPLE
 * word that names them, so a chunk can be decoded alone.  A stack id
 * means the same frames in every chunk of a session, on every CPU; one
 * call stack may have several ids.  Other bits of the id are 0.
 */
#define PAGETRACE_ID_STACK		_BITULL(58)
#define PAGETRACE_STACK_KIND_SHIFT	56
#define PAGETRACE_STACK_KIND_MASK	0x3ULL
#define PAGETRACE_STACK_SAMPLE		0U
#define PAGETRACE_STACK_DEF		1U
#define PAGETRACE_STACK_FRAME		2U
#define PAGETRACE_STACK_ID_MASK		0xffffffffULL
#define PAGETRACE_STACK_DEPTH_SHIFT	32
#define PAGETRACE_STACK_DEPTH_MASK	0xffULL
#define PAGETRACE_STACK_CUT		_BITULL(40)
#define PAGETRACE_STACK_MAX_DEPTH	64
#define PAGETRACE_STACK_ADDR_BITS	48
#define PAGETRACE_STACK_ADDR_MASK	((1ULL << PAGETRACE_STACK_ADDR_BITS) - 1)

/*
 * Symbol chunks (chunk flag PAGETRACE_CHUNK_SYMBOLS; cpu 0, seq 0, lost 0,
 * not part of any CPU's seq numbering) name the addresses of stack
 * frames.  The kernel writes none: a recorder that knows the kernel's
 * symbols (pagetrace record, pagetrace symbolize) appends them at the end
 * of the stream.  Their words are entries, one after another:
 *
 *   word 0   the address (all 64 bits)
 *   word 1   bits 15..0: the name's length in bytes, 1 ..
 *            PAGETRACE_SYM_NAME_MAX; bits 47..16: the address's offset
 *            from the start of its function; bits 63..48: 0
 *   then     the name (the function, followed by " [module]" for module
 *            code), NUL-padded to whole words
 */
#define PAGETRACE_SYM_LEN_MASK		0xffffULL
#define PAGETRACE_SYM_OFFSET_SHIFT	16
#define PAGETRACE_SYM_OFFSET_MASK	0xffffffffULL
#define PAGETRACE_SYM_NAME_MAX		512

/* Encoders.  t and base are ns on the trace clock, t >= base. */
static inline __u64 pagetrace_sync_word(__u64 t)
{
	return (t >> PAGETRACE_TIME_LOST_BITS) << PAGETRACE_ID_SHIFT;
}

static inline __u64 pagetrace_pid_word(__u64 id)
{
	return (id << PAGETRACE_ID_SHIFT) | PAGETRACE_IS_PID;
}

/* A task record: the events after it belong to process @tgid (0: kernel). */
static inline __u64 pagetrace_task_word(__u32 tgid)
{
	return pagetrace_pid_word(PAGETRACE_ID_TASK | tgid);
}

/*
 * Slice @index of the name @comm (PAGETRACE_COMM_LEN bytes): a pid word
 * with its bytes 7 * index ... 7 * index + 6, zero past the 16th.
 */
static inline __u64 pagetrace_name_word(unsigned int index, const __u8 *comm)
{
	unsigned int i = PAGETRACE_NAME_SLICE_BYTES;
	__u64 bytes = 0;

	while (i--) {
		unsigned int at = index * PAGETRACE_NAME_SLICE_BYTES + i;

		bytes = bytes << 8 | (at < PAGETRACE_COMM_LEN ? comm[at] : 0);
	}
	return pagetrace_pid_word(PAGETRACE_ID_NAME |
				  (__u64)index << PAGETRACE_NAME_INDEX_SHIFT |
				  bytes);
}

/* Slices a name of @len bytes (its strnlen) takes: 1 to 3. */
static inline unsigned int pagetrace_name_slices(unsigned int len)
{
	return len ? (len + PAGETRACE_NAME_SLICE_BYTES - 1) /
		     PAGETRACE_NAME_SLICE_BYTES : 1;
}

/* A stack word: @kind PAGETRACE_STACK_*, @bits the kind's fields. */
static inline __u64 pagetrace_stack_word(unsigned int kind, __u64 bits)
{
	return pagetrace_pid_word(PAGETRACE_ID_STACK |
				  (__u64)kind << PAGETRACE_STACK_KIND_SHIFT |
				  bits);
}

/* The stack of the next event (a sampled allocation) is stack @id. */
static inline __u64 pagetrace_sample_word(__u32 id)
{
	return pagetrace_stack_word(PAGETRACE_STACK_SAMPLE, id);
}

/* Stack @id has @depth frames (the FRAME words that follow); @cut: cut. */
static inline __u64 pagetrace_stack_def_word(__u32 id, unsigned int depth,
					     int cut)
{
	return pagetrace_stack_word(PAGETRACE_STACK_DEF,
				    (__u64)depth << PAGETRACE_STACK_DEPTH_SHIFT |
				    (cut ? PAGETRACE_STACK_CUT : 0) | id);
}

static inline __u64 pagetrace_frame_word(__u64 addr)
{
	return pagetrace_stack_word(PAGETRACE_STACK_FRAME,
				    addr & PAGETRACE_STACK_ADDR_MASK);
}

/*
 * The first word of an event; npages must be below 1024, else use
 * pagetrace_large_event_word() and follow it with a word holding npages.
 */
static inline __u64 pagetrace_event_word(__u64 delta, __u64 pfn,
					 __u64 npages, __u64 type)
{
	return ((delta >> PAGETRACE_TIME_LOST_BITS) << PAGETRACE_DELTA_SHIFT) |
	       ((pfn & PAGETRACE_PFN_MAX) << PAGETRACE_PFN_SHIFT) |
	       (npages << PAGETRACE_NPAGES_SHIFT) | type;
}

static inline __u64 pagetrace_large_event_word(__u64 delta, __u64 pfn,
					       __u64 type)
{
	return pagetrace_event_word(delta, pfn, 0, type) | PAGETRACE_LARGE;
}

/* Decoders */
static inline unsigned int pagetrace_word_type(__u64 w)
{
	return (unsigned int)(w & PAGETRACE_TYPE_MASK);
}

static inline int pagetrace_word_is_pid(__u64 w)
{
	return (w & (PAGETRACE_TYPE_MASK | PAGETRACE_IS_PID)) == PAGETRACE_IS_PID;
}

/* The id of a pid word, or the time base (ns, 128 ns steps) of a sync word. */
static inline __u64 pagetrace_word_id(__u64 w)
{
	return w >> PAGETRACE_ID_SHIFT;
}

/* A pid word that is a task record (inside a chunk). */
static inline int pagetrace_word_is_task(__u64 w)
{
	return pagetrace_word_is_pid(w) &&
	       (pagetrace_word_id(w) & ~PAGETRACE_ID_TGID_MASK) == PAGETRACE_ID_TASK;
}

/* A pid word that is a name slice (inside a chunk). */
static inline int pagetrace_word_is_name(__u64 w)
{
	return pagetrace_word_is_pid(w) &&
	       (pagetrace_word_id(w) & (PAGETRACE_ID_TASK | PAGETRACE_ID_NAME)) ==
	       PAGETRACE_ID_NAME;
}

/* The index of a name slice. */
static inline unsigned int pagetrace_word_name_index(__u64 w)
{
	return (unsigned int)((pagetrace_word_id(w) >> PAGETRACE_NAME_INDEX_SHIFT) &
			      PAGETRACE_NAME_INDEX_MASK);
}

/*
 * Store the bytes of name slice @w at their place in @comm
 * (PAGETRACE_COMM_LEN bytes).  Returns 0, or -1 if the index is past the
 * last slice or bytes past the 16th are not zero.
 */
static inline int pagetrace_word_name_bytes(__u64 w, __u8 *comm)
{
	unsigned int at = pagetrace_word_name_index(w) * PAGETRACE_NAME_SLICE_BYTES;
	__u64 bytes = pagetrace_word_id(w) & PAGETRACE_NAME_BYTES_MASK;
	unsigned int i;

	if (at >= PAGETRACE_COMM_LEN)
		return -1;
	for (i = 0; i < PAGETRACE_NAME_SLICE_BYTES; i++, at++, bytes >>= 8) {
		if (at < PAGETRACE_COMM_LEN)
			comm[at] = (__u8)bytes;
		else if (bytes & 0xff)
			return -1;
	}
	return 0;
}

/* A pid word that is a stack word (inside a chunk). */
static inline int pagetrace_word_is_stack(__u64 w)
{
	return pagetrace_word_is_pid(w) &&
	       (pagetrace_word_id(w) & (PAGETRACE_ID_TASK | PAGETRACE_ID_NAME |
					PAGETRACE_ID_STACK)) == PAGETRACE_ID_STACK;
}

/* The kind of a stack word: PAGETRACE_STACK_*. */
static inline unsigned int pagetrace_word_stack_kind(__u64 w)
{
	return (unsigned int)((pagetrace_word_id(w) >> PAGETRACE_STACK_KIND_SHIFT) &
			      PAGETRACE_STACK_KIND_MASK);
}

/* The stack id of a SAMPLE or DEF word. */
static inline __u32 pagetrace_word_stack_id(__u64 w)
{
	return (__u32)(pagetrace_word_id(w) & PAGETRACE_STACK_ID_MASK);
}

/* The depth of a DEF word. */
static inline unsigned int pagetrace_word_stack_depth(__u64 w)
{
	return (unsigned int)((pagetrace_word_id(w) >> PAGETRACE_STACK_DEPTH_SHIFT) &
			      PAGETRACE_STACK_DEPTH_MASK);
}

/* The address of a FRAME word, sign-extended from bit 47. */
static inline __u64 pagetrace_word_frame_addr(__u64 w)
{
	__u64 a = pagetrace_word_id(w) & PAGETRACE_STACK_ADDR_MASK;
	__u64 sign = 1ULL << (PAGETRACE_STACK_ADDR_BITS - 1);

	return (a ^ sign) - sign;
}

/* The tgid of a task record. */
static inline __u32 pagetrace_word_tgid(__u64 w)
{
	return (__u32)(pagetrace_word_id(w) & PAGETRACE_ID_TGID_MASK);
}

static inline __u64 pagetrace_word_sync_ns(__u64 w)
{
	return (w >> PAGETRACE_ID_SHIFT) << PAGETRACE_TIME_LOST_BITS;
}

static inline __u64 pagetrace_word_delta_ns(__u64 w)
{
	return (w >> PAGETRACE_DELTA_SHIFT) << PAGETRACE_TIME_LOST_BITS;
}

static inline __u64 pagetrace_word_pfn(__u64 w)
{
	return (w >> PAGETRACE_PFN_SHIFT) & PAGETRACE_PFN_MAX;
}

/* npages of an event word; 0 when large (the next word holds it). */
static inline __u64 pagetrace_word_npages(__u64 w)
{
	return (w >> PAGETRACE_NPAGES_SHIFT) & PAGETRACE_NPAGES_MAX;
}

static inline int pagetrace_word_is_large(__u64 w)
{
	return (w & PAGETRACE_LARGE) != 0;
}

/*
 * ioctls on /dev/pagetrace
 * ========================
 */
#define PAGETRACE_IOC_MAGIC	0xB9

/**
 * struct pagetrace_info - PAGETRACE_IOC_INFO: the session's geometry
 * @version: PAGETRACE_VERSION
 * @header_size: bytes of the stream header
 * @chunk_size: bytes of one per-CPU buffer (chunk header included)
 * @nr_bufs: buffers per CPU
 * @nr_cpus: CPU ids are below this
 * @page_shift: log2 of the page size
 * @flags: the header's flags
 * @flush_ms: flush timer period
 * @backend: PAGETRACE_BACKEND_*
 * @reserved: 0
 */
struct pagetrace_info {
	__u32	version;
	__u32	header_size;
	__u32	chunk_size;
	__u32	nr_bufs;
	__u32	nr_cpus;
	__u32	page_shift;
	__u32	flags;
	__u32	flush_ms;
	__u32	backend;
	__u32	reserved[7];
};

/**
 * struct pagetrace_cpu_stats - one CPU's counters in this session
 * @events: events written to buffers
 * @lost: events dropped (no free buffer, or missed by a probe)
 * @chunks: chunks completed (full or flushed)
 * @bytes: bytes of those chunks, chunk headers included
 * @attempts: hook hits that reached the writer, counted on entry, before
 *	      it decides to keep, filter or drop the event: events + lost +
 *	      filtered of all CPUs = attempts of all CPUs + probe_missed of
 *	      PAGETRACE_IOC_STATS
 * @filtered: events the session's filter left out (not lost: unwanted)
 * @samples: allocations sampled for their call stack
 * @stacks_unknown: samples whose stack found the CPU's table full (their
 *		    SAMPLE word has stack id 0)
 */
struct pagetrace_cpu_stats {
	__u64	events;
	__u64	lost;
	__u64	chunks;
	__u64	bytes;
	__u64	attempts;
	__u64	filtered;
	__u64	samples;
	__u64	stacks_unknown;
};

/**
 * struct pagetrace_stats - PAGETRACE_IOC_STATS argument
 * @cpus: user pointer to an array of struct pagetrace_cpu_stats
 * @nr_cpus: in, entries in that array; out, entries filled (nr_cpus of info)
 * @reserved0: 0
 * @probe_missed: hits the kernel's probe core dropped (counted in lost too)
 * @reserved: 0
 */
struct pagetrace_stats {
	__u64	cpus;
	__u32	nr_cpus;
	__u32	reserved0;
	__u64	probe_missed;
	__u64	reserved[5];
};

#define PAGETRACE_IOC_INFO	_IOR(PAGETRACE_IOC_MAGIC, 0x01, struct pagetrace_info)
/* Close every CPU's partly filled buffer now (a ragged barrier). */
#define PAGETRACE_IOC_FLUSH	_IO(PAGETRACE_IOC_MAGIC, 0x02)
#define PAGETRACE_IOC_STATS	_IOWR(PAGETRACE_IOC_MAGIC, 0x03, struct pagetrace_stats)
/*
 * Stop recording: detach the probes and flush every buffer.  read() then
 * returns what is left and 0 (end of file) after it.
 */
#define PAGETRACE_IOC_STOP	_IO(PAGETRACE_IOC_MAGIC, 0x04)

/* struct pagetrace_counters_req.which */
#define PAGETRACE_COUNTERS_START	0	/* as in the header record */
#define PAGETRACE_COUNTERS_STOP		1	/* -EAGAIN until stopped */

/**
 * struct pagetrace_counters_req - PAGETRACE_IOC_COUNTERS argument
 * @buf: user pointer to room for a struct pagetrace_rec_counters and its
 *	 zones
 * @size: in, bytes at @buf; out, bytes of the counters (copied if they
 *	  fit, else -ENOSPC with @size set to what they need)
 * @which: PAGETRACE_COUNTERS_START or _STOP
 * @reserved: 0
 */
struct pagetrace_counters_req {
	__u64	buf;
	__u32	size;
	__u32	which;
	__u64	reserved[2];
};

#define PAGETRACE_IOC_COUNTERS	_IOWR(PAGETRACE_IOC_MAGIC, 0x05, struct pagetrace_counters_req)

/*
 * Zero-copy reading: mmap of /dev/pagetrace
 * =========================================
 *
 * The whole session is one read-only, shared mapping: offset 0, length
 * pagetrace_mmap_info.mmap_size (PAGETRACE_IOC_MMAP_INFO), exactly.
 *
 *   offset 0     +---------------------------------+  meta area, meta_size
 *                | struct pagetrace_meta  (256 B)  |  bytes (whole pages)
 *   cpu_offset   | struct pagetrace_meta_cpu [0]   |  128 B each, one per
 *                | struct pagetrace_meta_cpu [1]   |  cpu id below nr_cpus
 *                | ...                             |
 *   header_off   | the stream header (header_size) |  write this first
 *                | zero padding                    |
 *   data_offset  +---------------------------------+  = meta_size
 *                | CPU 0's ring: nr_bufs buffers   |  ring_size bytes =
 *                |   buffer 0 (chunk_size bytes)   |  nr_bufs * chunk_size
 *                |   buffer 1 ...                  |
 *   + ring_size  +---------------------------------+
 *                | CPU 1's ring ...                |
 *   snapshot_off +---------------------------------+  after the last ring
 *                | snapshot chunks (snapshot_size) |  write these second
 *                | zero padding to a page          |
 *                +---------------------------------+  mmap_size
 *
 * Every buffer is laid out as one chunk of the stream: struct
 * pagetrace_chunk, then nr_words words.  The chunk at position pos of cpu
 * (positions count chunks: 0, 1, 2 ... and never wrap) starts at
 *
 *   data_offset + cpu * ring_size + (pos % nr_bufs) * chunk_size
 *
 * and is 32 + 8 * nr_words bytes long.  Writing the header and then each
 * CPU's chunks in position order gives a v1 stream, the same bytes read()
 * gives (chunks of different CPUs may interleave differently).
 *
 * The meta area is in host byte order (it is not part of the stream); the
 * header and chunks in the mapping are little-endian like the stream.
 *
 * Handoff, per CPU (the meta_cpu positions; see Documentation/pagetrace):
 *
 *   consumed <= produced <= consumed + nr_bufs
 *
 *   Chunks [consumed, produced) are closed and belong to the reader.  The
 *   kernel stores produced with release semantics after the chunk is
 *   complete: load it with acquire (__atomic_load_n(p, __ATOMIC_ACQUIRE))
 *   before reading the chunks it covers.  When done with them (write(2)
 *   returned), give them back with PAGETRACE_IOC_CONSUME; the kernel stores
 *   consumed with release semantics and the writer loads it with acquire
 *   before it reuses a buffer.  Never hand the mapped pages to a pipe
 *   (vmsplice): the pipe would keep referring to a buffer the writer
 *   reuses once it is consumed.
 *
 * One session has one consumer: the first read() of a chunk or the first
 * PAGETRACE_IOC_CONSUME (even one that moves nothing) decides which, and
 * the other then fails with EBUSY.  A mapping alone consumes nothing, so a
 * read() consumer may map the session to watch it.
 */
#define PAGETRACE_META_MAGIC		0x4154454d54504750ULL	/* "PGPTMETA" */

/* pagetrace_meta.flags */
#define PAGETRACE_META_STOPPED		_BITUL(0)	/* no chunk will follow */
#define PAGETRACE_META_OVERWRITE	_BITUL(1)	/* flight recorder mode */
#define PAGETRACE_META_FROZEN		_BITUL(2)	/* PAGETRACE_IOC_FREEZE */
/* pagetrace_meta_cpu.allocated_pages and freed_pages are counted. */
#define PAGETRACE_META_PAGES		_BITUL(3)

/**
 * struct pagetrace_meta - the first bytes of the mapping
 * @magic: PAGETRACE_META_MAGIC
 * @version: PAGETRACE_VERSION
 * @meta_size: bytes of the meta area, a multiple of the page size
 * @cpu_offset: offset of the struct pagetrace_meta_cpu array
 * @cpu_stride: bytes between its entries (sizeof, 128)
 * @nr_cpus: entries in it; cpu ids are below this
 * @header_offset: offset of a copy of the stream header
 * @header_size: its length (the header's own header_size)
 * @chunk_size: bytes of one buffer
 * @nr_bufs: buffers per CPU
 * @page_shift: log2 of the page size
 * @flags: PAGETRACE_META_*; STOPPED is stored with release after the last
 *	   chunk is published, so seeing it (acquire) and then finding no
 *	   chunk means the end
 * @mode: PAGETRACE_MODE_*
 * @data_offset: offset of CPU 0's ring (= meta_size)
 * @ring_size: bytes of one CPU's ring (nr_bufs * chunk_size)
 * @mmap_size: bytes of the whole mapping
 * @snapshot_offset: offset of the snapshot chunks (after the last ring)
 * @snapshot_size: their bytes, 0 without a snapshot; write them right
 *		   after the header
 * @reserved: 0
 */
struct pagetrace_meta {
	__u64	magic;
	__u32	version;
	__u32	meta_size;
	__u32	cpu_offset;
	__u32	cpu_stride;
	__u32	nr_cpus;
	__u32	header_offset;
	__u32	header_size;
	__u32	chunk_size;
	__u32	nr_bufs;
	__u32	page_shift;
	__u32	flags;
	__u32	mode;
	__u64	data_offset;
	__u64	ring_size;
	__u64	mmap_size;
	__u64	snapshot_offset;
	__u64	snapshot_size;
	__u64	reserved[20];
};

/**
 * struct pagetrace_meta_cpu - one CPU's positions and counters
 * @produced: chunks published; written by the writer (release)
 * @events: events in the chunks published so far
 * @lost: sum of the lost fields of the chunks published so far
 * @chunks: chunks published (equals @produced)
 * @bytes: bytes of those chunks, chunk headers included
 * @overwritten: chunks the writer overwrote before anyone consumed them
 *		 (flight recorder mode only)
 * @allocated_pages: pages of the alloc events in the chunks published so far
 * @freed_pages: pages of the free and reclaim events in the chunks
 *		published so far
 * @consumed: chunks given back by the reader; written by the kernel on
 *	      PAGETRACE_IOC_CONSUME (release), or by the writer itself when it
 *	      overwrites in flight recorder mode
 * @reserved1: 0
 *
 * The counters are updated each time a chunk is published, before
 * @produced (so once @produced is seen, the counters cover at least those
 * chunks); events still in the open buffer are not counted yet.  Chunks
 * overwritten later (flight recorder) stay counted: @allocated_pages and
 * @freed_pages are those of every event the session recorded, so the
 * snapshot's pages (struct pagetrace_rec_snapshot) plus the sum of
 * @allocated_pages minus the sum of @freed_pages over all CPUs is the
 * session's running count of pages in use, whatever the rings still hold.
 * It is off by what the allocator did while the snapshot was taken (pages
 * both in the snapshot and allocated, pages freed before the walk reached
 * them), which a decoder tells apart page by page.  Each field only grows;
 * a pair, and the sums over the CPUs, may be a chunk apart.  Events a filter
 * left out or that were lost are not counted.  Modules that count them
 * set PAGETRACE_META_PAGES; older ones leave both fields 0.  The writer's
 * fields and @consumed sit on different cache lines.
 */
struct pagetrace_meta_cpu {
	__u64	produced;
	__u64	events;
	__u64	lost;
	__u64	chunks;
	__u64	bytes;
	__u64	overwritten;
	__u64	allocated_pages;
	__u64	freed_pages;
	__u64	consumed;
	__u64	reserved1[7];
};

/**
 * struct pagetrace_mmap_info - PAGETRACE_IOC_MMAP_INFO: what to map
 * @mmap_size: length to pass to mmap(); the offset must be 0
 * @data_offset: offset of CPU 0's ring
 * @ring_size: bytes of one CPU's ring
 * @meta_size: bytes of the meta area (= data_offset)
 * @nr_cpus: rings in the mapping
 * @reserved: 0
 */
struct pagetrace_mmap_info {
	__u64	mmap_size;
	__u64	data_offset;
	__u64	ring_size;
	__u32	meta_size;
	__u32	nr_cpus;
	__u64	reserved[4];
};

/**
 * struct pagetrace_consume - PAGETRACE_IOC_CONSUME: give chunks back
 * @pos: user pointer to @nr_cpus __u64s: the new consumed position of cpu
 *	 0, 1 ... ; each must lie in [consumed, produced] of its CPU
 *	 (equal to consumed: unchanged)
 * @nr_cpus: entries at @pos, at most the session's nr_cpus (CPUs above
 *	     are left alone); 0 just claims the session for mmap reading
 * @flags: 0
 * @reserved: 0
 *
 * All positions are checked before any is applied: on EINVAL nothing moved.
 */
struct pagetrace_consume {
	__u64	pos;
	__u32	nr_cpus;
	__u32	flags;
	__u64	reserved[2];
};

/* Session modes, PAGETRACE_IOC_SET_MODE */
#define PAGETRACE_MODE_STREAM	0	/* a full ring drops new events (lost) */
#define PAGETRACE_MODE_FLIGHT	1	/* a full ring overwrites its oldest chunk */

/**
 * struct pagetrace_mode - PAGETRACE_IOC_SET_MODE argument
 * @mode: PAGETRACE_MODE_*
 * @reserved: 0
 *
 * Call it right after open(), before reading anything: it is refused with
 * EBUSY once the session has a consumer or header bytes were read, and
 * FLIGHT cannot be turned back into STREAM.  FLIGHT sets
 * PAGETRACE_FLAG_OVERWRITE in the header.
 */
struct pagetrace_mode {
	__u32	mode;
	__u32	reserved[3];
};

#define PAGETRACE_IOC_MMAP_INFO	_IOR(PAGETRACE_IOC_MAGIC, 0x10, struct pagetrace_mmap_info)
#define PAGETRACE_IOC_CONSUME	_IOW(PAGETRACE_IOC_MAGIC, 0x11, struct pagetrace_consume)
#define PAGETRACE_IOC_SET_MODE	_IOW(PAGETRACE_IOC_MAGIC, 0x12, struct pagetrace_mode)
/*
 * Flight recorder snapshot.  FREEZE stops overwriting (a ragged barrier on
 * every CPU) and closes every partly filled buffer: when it returns, each
 * CPU's newest chunks are [consumed, produced) and stay put until consumed;
 * while frozen, events that find no free buffer are counted as lost.  Read
 * them (mapping + CONSUME, which is refused in flight mode unless frozen or
 * stopped), then THAW to resume overwriting.  FREEZE in stream mode is
 * EINVAL; both are no-ops after STOP.
 */
#define PAGETRACE_IOC_FREEZE	_IO(PAGETRACE_IOC_MAGIC, 0x13)
#define PAGETRACE_IOC_THAW	_IO(PAGETRACE_IOC_MAGIC, 0x14)

#endif /* _UAPI_LINUX_PAGETRACE_H */
