/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagetrace internals shared by the module's files.
 *
 * Data flows one way:
 *
 *   hooks.c    which allocator paths to probe: roles, checks, attach
 *   handlers.c what a probe hit does: the allocator's paths -> pt_emit()
 *   writer.c   pt_emit(): encode into this CPU's open buffer (the hot path)
 *   clock.c    the clock it stamps events with (clock.h: its reader)
 *   buffers.c  buffer memory, the writer/reader handoff, flush, loss counts
 *   filter.c   which events a session keeps (filter_* parameters)
 *   stacks.c   call stacks of sampled allocations (stack_rate=)
 *   header.c   the stream header built at session start
 *   snapshot.c the memory map at session start
 *   pcp.c      the per-CPU free lists' blocks, which the snapshot skips
 *   counters.c the kernel's own count of each zone, at start and stop
 *   memhotplug.c memory hot-remove held off while those two read
 *   zones.c    the populated zones
 *   mmap.c     the read-only mapping of the meta area and the buffers
 *   session.c  session start/stop/flush, with its parameters
 *   device.c   /dev/pagetrace: open (a session), read, ioctl, release
 *   main.c     module init/exit
 *   params.c   the parameter kinds every file's parameters use
 *
 * Calls go down, never up: main -> device -> session -> hooks, buffers,
 * snapshot, header, mmap; snapshot -> pcp, header, mmap; header ->
 * counters; mmap -> writer -> stacks, filter, clock; hooks -> handlers ->
 * writer.  zones.c (the populated zones), memhotplug.c and params.c are
 * below them all.  (hooks.c names the handlers in its table and reads what
 * they note during its load-time checks; handlers.c calls nothing of
 * hooks.c.)
 */
#ifndef _PAGETRACE_INTERNAL_H
#define _PAGETRACE_INTERNAL_H

#include <asm/byteorder.h>
#include <asm/local.h>
#include <linux/bug.h>
#include <linux/cache.h>
#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/prandom.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "../uapi/linux/pagetrace.h"
#include "filter.h"

struct cgroup;
struct file;
struct pt_regs;
struct pt_stacks;
struct vm_area_struct;

/*
 * Where an allocation was hooked, for its call stack (stacks.c): the
 * probe's registers (NULL in a tracepoint, which has none) and, for a
 * probe on a function's return, the function's address.
 */
struct pt_origin {
	struct pt_regs	*regs;
	unsigned long	func;
};

/* pt_cpu.checks: what the fast path tests besides room and time. */
#define PT_CHECK_FILTER		BIT(0)	/* the session has a filter */
#define PT_CHECK_SAMPLE		BIT(1)	/* allocations' stacks are sampled */

/* Entries of a CPU's cache of tgids already named in its open chunk. */
#define PT_NAME_CACHE		64
/* pt_cpu.task when no task record was written in the open chunk yet. */
#define PT_TASK_NONE		U32_MAX

/*
 * struct pt_cpu - one CPU's buffers and the state of their handoff
 *
 * The CPU's nr_bufs buffers form a ring.  Each buffer is laid out exactly
 * as a chunk of the stream, so the reader copies (or maps) it out as it is:
 *
 *   bufs -> +--------------------+ buffer (produced + k) % nr_bufs
 *           | pagetrace_chunk    |  32 bytes, filled when the buffer closes
 *           | words[0] pid(cpu)  |
 *           | words[1] sync(t)   |
 *           | words[2..len) ...  |
 *           +--------------------+  chunk_size bytes
 *           | next buffer ...    |
 *
 *   consumed <= (buffers the reader holds) < produced <= open buffer
 *
 * Buffers [consumed, produced) are closed and belong to the reader; the
 * buffer at produced, if @chunk is set, is being filled by the writer;
 * the rest are free.  The writer may open a buffer only while
 * produced - consumed < nr_bufs; in flight recorder mode (@overwrite) it
 * makes room by advancing consumed itself.
 *
 * The positions live in the meta area (@meta, struct pagetrace_meta_cpu),
 * which userspace may map read-only: they are the one source of truth for
 * read() and for mmap readers alike.
 *
 * Concurrency rules:
 *  - Writer fields (@chunk ... @named) are touched only by the owning
 *    CPU with interrupts disabled (pt_emit() and the flush, mode and
 *    clock IPIs), or, while the CPU is offline and so cannot run a
 *    writer, by a flusher holding sess->flush_lock and cpus_read_lock().
 *    No lock.  Before the writer pointer is released to the probes,
 *    pt_writers_publish() sets @checks and @filter_kind from the session
 *    (and @filter_fast), which no one changes until the session ends.
 *    Interrupts off do not keep out an NMI, and since 6.15 an NMI may
 *    allocate and free pages (alloc_pages_nolock()); nor do they keep out
 *    a kprobe (or BPF program) on a function the writer calls that
 *    allocates.  So the owner sets @busy around every change
 *    (pt_writer_enter()), and an event that finds it set is not written
 *    but counted in @nested, a local_t that only such events increment;
 *    the owner adds it to the losses (pt_writer_fold()).
 *  - @meta->produced is written only by the writer side, with
 *    smp_store_release() after the chunk header, its words and the meta
 *    counters are complete; readers (kernel or user) load it with acquire
 *    and may then read the chunks below it.
 *  - @meta->consumed is written by the consumer - the kernel on behalf of
 *    read() or PAGETRACE_IOC_CONSUME, under sess->read_lock - with
 *    smp_store_release() once it is done with the chunks; the writer loads
 *    it with acquire before reusing a buffer, so its stores cannot pass the
 *    reader's loads.  In flight recorder mode the writer is the one that
 *    advances it while @overwrite is set; consumers may move it only while
 *    no CPU has @overwrite set (frozen or stopped; see pt_set_overwrite()).
 *  - The other @meta counters are written by the writer side at chunk
 *    close (WRITE_ONCE) and read racily.
 *  - @stats is written by the writer side and read racily (whole u64s) by
 *    the stats ioctl.  @pages is written by the writer side only, and
 *    published at chunk close with the other meta counters.
 */
struct pt_cpu {
	/* Writer side */
	struct pagetrace_chunk	*chunk;		/* open buffer, NULL if none */
	__le64			*words;		/* chunk's words */
	u32			len;		/* words used */
	u32			end;		/* @cap while @chunk is set, else 0;
						 * or 0 to send every event to
						 * the slow path (clock_local)
						 */
	u32			cap;		/* words that fit */
	u8			checks;		/* PT_CHECK_*: per-event tests */
	bool			busy;		/* writer state being changed */
	u8			filter_kind;	/* enum pt_filter_kind */
	u64			base;		/* time base of the last sync */
	u64			seq;		/* seq of the next chunk to close */
	u64			lost;		/* dropped since the last close */
	u64			produced_w;	/* writer's copy of produced */
	u64			overwritten;	/* chunks overwritten (flight) */
	bool			overwrite;	/* full ring: overwrite the oldest */
	bool			tasks;		/* write task records and names */
	bool			clock_local;	/* left the TSC; see pt_emit_slow */
	u32			task;		/* owner of the last event, see pt_write */
	u64			now;		/* the event pt_emit_slow() takes */
	u64			nested_seen;	/* @nested already counted lost */
	struct pt_stacks	*stacks;	/* NULL: no sampling (stacks.c) */
	s64			sample_left;	/* pages to the next sample */
	/*
	 * Pages of the events written, by type - 1 (alloc, free, reclaim):
	 * next to @stats, on the cache lines every event touches.
	 */
	u64			pages[PAGETRACE_EV_RECLAIM];
	struct pagetrace_cpu_stats stats;
	struct rnd_state	rnd;		/* draws the sampling intervals */
	/* tgids named in the open chunk, direct-mapped; 0: empty */
	u32			named[PT_NAME_CACHE];
	/* Events an NMI dropped because @busy was set; see pt_writer_enter() */
	local_t			nested;

	/* Set up at session start, then read-only */
	struct pagetrace_meta_cpu *meta ____cacheline_aligned_in_smp;
	void			*bufs;
	unsigned int		cpu;
	struct irq_work		wake;		/* wakes the reader, see pt_wake */
	struct pt_session	*sess;
	/* The session's filter, tested on this CPU's lines (filter.h) */
	struct pt_filter_fast	filter_fast ____cacheline_aligned_in_smp;
};

/**
 * pt_writer_enter - take this CPU's writer state for a change
 * @c: this CPU's writer, interrupts off
 *
 * Interrupts are off wherever @c->busy is set, so only an NMI, or a probe
 * (kprobe, BPF) on a function the writer calls, can find it set.  Such an
 * event is dropped and counted, never written into the middle of the
 * interrupted one.  The flush and clock IPIs take the state the same
 * way; they run with interrupts off and call nothing probed before taking
 * it, so they never find it taken.
 *
 * Return: false if the event must be dropped (it is counted already).
 */
static __always_inline bool pt_writer_enter(struct pt_cpu *c)
{
	if (unlikely(READ_ONCE(c->busy))) {
		local_inc(&c->nested);
		return false;
	}
	WRITE_ONCE(c->busy, true);
	/* The flag is in memory before any store an NMI could tear. */
	barrier();
	return true;
}

/* pt_writer_exit - give back what pt_writer_enter() took */
static __always_inline void pt_writer_exit(struct pt_cpu *c)
{
	/* Every store of the change is done before the flag is cleared. */
	barrier();
	WRITE_ONCE(c->busy, false);
}

/* Who consumes the session's chunks; see pt_claim_consumer(). */
enum pt_consumer {
	PT_CONSUMER_NONE,
	PT_CONSUMER_READ,	/* read() */
	PT_CONSUMER_MMAP,	/* the mapping and PAGETRACE_IOC_CONSUME */
};

/*
 * struct pt_session - one open of /dev/pagetrace
 *
 * Locks, always taken in this order: @read_lock, @state_lock, then
 * session.c's pt_live_lock, then clock.c's pt_clock_lock or @flush_lock,
 * then cpus_read_lock().
 *
 * @read_lock serialises consumers (read(), PAGETRACE_IOC_CONSUME, FREEZE,
 * THAW, SET_MODE): the reader's position, every meta consumed written by
 * the kernel, @consumer, @frozen.  @state_lock serialises stopping against
 * mode changes (FREEZE, THAW, SET_MODE), so that THAW cannot turn
 * overwriting back on after stop turned it off.  @flush_lock serialises
 * flushes and overwrite switches (timer, ioctls, stop), so that two never
 * touch an offline CPU's writer state at once.  @stopped is set with
 * smp_store_release() after the last chunk is published, so a reader that
 * sees it with smp_load_acquire() and then finds no chunk is at the end.
 * @mode is written under @read_lock and @state_lock and read with
 * READ_ONCE() elsewhere (the flush timer).
 */
struct pt_session {
	struct pt_cpu		*cpus;		/* nr_cpu_ids entries */
	unsigned int		nr_cpus;
	unsigned int		nr_bufs;
	unsigned int		chunk_size;
	unsigned int		flush_ms;
	unsigned int		backend;
	u32			uncovered;	/* PAGETRACE_UNCOVERED_* */
	unsigned int		stack_rate;	/* pages per sample, 0: off */
	struct pt_filter	filter;

	void			*header;	/* the stream header */
	u64			start_mono_ns;	/* the header's, host order */
	unsigned int		header_size;
	unsigned int		snap_rec_off;	/* REC_SNAPSHOT payload, or 0 */
	unsigned int		sess_rec_off;	/* REC_SESSION payload */
	unsigned int		counters_rec_off; /* REC_COUNTERS payload */
	unsigned int		counters_max;	/* its zones, and the stop's */
	/* The zones' counters at stop (counters.c), filled in by stop */
	struct pagetrace_rec_counters *stop_counters;

	/* The memory map at start (snapshot.c): set up before open returns */
	void			*snap;		/* snapshot chunks, vmalloc_user */
	size_t			snap_len;	/* their bytes */
	u64			snap_offset;	/* where the mapping shows them */
	u32			header_flags;

	/* The mapping: meta area, then one ring per CPU (see mmap.c) */
	struct pagetrace_meta	*meta;		/* vmalloc_user, meta_size */
	unsigned int		meta_size;
	u64			ring_size;
	u64			mmap_size;

	/* Reader position, under read_lock */
	struct mutex		read_lock;	/* the reader's side */
	enum pt_consumer	consumer;
	bool			frozen;		/* PAGETRACE_IOC_FREEZE */
	u64			read_off;	/* bytes of the stream returned */
	int			rd_cpu;		/* chunk being copied, or -1 */
	u32			rd_off;		/* bytes of it copied */
	u32			rd_len;		/* bytes it has */
	int			rd_next;	/* next CPU to look at */

	wait_queue_head_t	wq;		/* readers waiting for a chunk */
	struct work_struct	wake_work;	/* PREEMPT_RT: wakes them, pt_wake */
	/*
	 * A chunk closed on a CPU going down, which queued no wakeup: the
	 * timed flush wakes the readers (pt_close_chunk()).  Set by the
	 * writers, cleared by the flush work; a lost race only delays the
	 * wakeup by a period.
	 */
	bool			wake_pending;
	struct mutex		state_lock;	/* serialises stop */
	bool			stopped;	/* no more chunks will come */
	u32			mode;		/* PAGETRACE_MODE_* */

	struct mutex		flush_lock;	/* one flush at a time */
	struct delayed_work	flush_work;
	/* Per CPU, its seq at the last timed flush; under flush_lock */
	u64			*flushed_seq;

	unsigned long		missed_seen;	/* probe misses already counted */
	/*
	 * The probes' miss count when the writers were published, and when
	 * they were cleared (@missed_end, valid once @writers_cleared is
	 * set, with release): misses outside that window cost no event.
	 */
	unsigned long		missed_base;
	unsigned long		missed_end;
	bool			writers_cleared;
};

/*
 * The stream is little-endian, but the uapi structs use plain __u* fields
 * (so that userspace needs no endian types): store through these.
 */
static inline u16 pt_le16(u16 v) { return (__force u16)cpu_to_le16(v); }
static inline u32 pt_le32(u32 v) { return (__force u32)cpu_to_le32(v); }
static inline u64 pt_le64(u64 v) { return (__force u64)cpu_to_le64(v); }
static inline u32 pt_from_le32(u32 v) { return le32_to_cpu((__force __le32)v); }
static inline u64 pt_from_le64(u64 v) { return le64_to_cpu((__force __le64)v); }

/* params.c */
/**
 * struct pt_uint_param - a parameter that is a number in a range
 * @value: the number, read with READ_ONCE()
 * @min: the smallest allowed
 * @max: the largest allowed
 * @step: the value must be a multiple of this
 *
 * For module_param_cb() with pt_uint_param_ops.
 */
struct pt_uint_param {
	unsigned int	*value;
	unsigned int	min;
	unsigned int	max;
	unsigned int	step;
};

extern const struct kernel_param_ops pt_uint_param_ops;
/*
 * struct pt_choice_param - a parameter naming one of @nr choices
 * @value: the index of the name set, read with READ_ONCE()
 * @names: the choices, as the user writes them
 * @nr: how many
 *
 * For module_param_cb() with pt_choice_param_ops.
 */
struct pt_choice_param {
	unsigned int		*value;
	const char * const	*names;
	unsigned int		nr;
};

extern const struct kernel_param_ops pt_choice_param_ops;

/* session.c */
int pt_sessions_init(void);
void pt_sessions_exit(void);
int pt_session_start(struct pt_session **out);
void pt_session_stop(struct pt_session *sess);
void pt_session_free(struct pt_session *sess);
void pt_session_flush(struct pt_session *sess, bool all);
unsigned long pt_session_missed(struct pt_session *sess);
void pt_sessions_leave_tsc(void);

/* writer.c */
void pt_emit(unsigned int type, unsigned long pfn, unsigned long npages);
void pt_emit_alloc(unsigned long pfn, unsigned long npages,
		   const struct pt_origin *origin);
void pt_emit_breakpoint(unsigned int type, unsigned long pfn,
			unsigned long npages, const struct pt_origin *origin);
void pt_emit_lost(unsigned long n);
bool pt_open_chunk(struct pt_cpu *c, u64 now);
void pt_close_chunk(struct pt_cpu *c, u16 flags);
void pt_writer_fold(struct pt_cpu *c);
void pt_writer_leave_tsc(struct pt_cpu *c, u64 floor);
void pt_writer_settle_clock(struct pt_cpu *c);
bool pt_writer_pending(const struct pt_cpu *c);
void pt_writers_publish(struct pt_session *sess);
unsigned long pt_turned_away_pages(void);
u64 pt_written_pages(const struct pt_session *sess);
void pt_writers_clear(void);

/* buffers.c */
int pt_buffers_alloc(struct pt_session *sess);
void pt_buffers_free(struct pt_session *sess);
void pt_flush(struct pt_session *sess, bool all, unsigned long missed);
void pt_set_overwrite(struct pt_session *sess, bool on);
void pt_buffers_leave_tsc(struct pt_session *sess);
void pt_buffers_settle_clock(struct pt_session *sess);
bool pt_flush_late_losses(struct pt_session *sess);
bool pt_reader_ready(struct pt_session *sess);
ssize_t pt_read_chunks(struct pt_session *sess, char __user *buf, size_t count);
bool pt_reader_drained(struct pt_session *sess);

/* mmap.c */
int pt_meta_init(struct pt_session *sess);
void pt_meta_add_snapshot(struct pt_session *sess);
void pt_meta_set_flags(struct pt_session *sess, u32 set, u32 clear);
void pt_meta_free(struct pt_session *sess);
int pt_mmap(struct file *file, struct vm_area_struct *vma);

/* clock.c (the hot path's reader is in clock.h) */
unsigned int pt_clock_select(void);
bool pt_clock_sleep_begin(void);
void pt_clock_leave_tsc(void);
void pt_clock_sleep_end(void);

/* sleep.c */
int pt_sleep_init(void);
void pt_sleep_exit(void);

/* header.c */
int pt_header_pfns_fit(void);
int pt_header_build(struct pt_session *sess);
void pt_header_set_attach(struct pt_session *sess, u64 attach_ns);
void pt_header_set_flags(struct pt_session *sess, u32 flags);
void pt_header_set_counters(struct pt_session *sess);

/* zones.c */
struct zone *pt_next_zone(struct zone *zone);
unsigned int pt_zones_count(void);
unsigned long pt_zone_pcp_pages(struct zone *zone);
unsigned long pt_zone_pcp_pages_locked(struct zone *zone);

/* pcp.c: the per-CPU free lists' blocks, for the snapshot */
struct pt_pcp_block {
	unsigned long	pfn;
	unsigned int	order;
};

struct pt_pcp_set {
	struct pt_pcp_block	*blocks;
	unsigned long		nr;
	unsigned long		cap;
};

int pt_pcp_alloc(struct pt_pcp_set *set);
int pt_pcp_collect(struct pt_pcp_set *set, struct zone *zone,
		   unsigned long lo, unsigned long hi);
unsigned long pt_pcp_find(const struct pt_pcp_set *set, unsigned long pfn);
void pt_pcp_free(struct pt_pcp_set *set);

/* memhotplug.c: memory hot-remove held off while struct pages are read */
int pt_mem_read_begin(void);
void pt_mem_read_end(void);
unsigned long pt_mem_online_seq(void);
int pt_mem_guard_init(void);
void pt_mem_guard_exit(void);

/* counters.c */
size_t pt_counters_size(unsigned int nr_zones);
void pt_counters_read(struct pagetrace_rec_counters *rec, unsigned int max,
		      const struct pt_session *sess);
void pt_counters_read_at_stop(struct pagetrace_rec_counters *rec,
			      unsigned int max, void (*stop)(void *arg),
			      void *arg);

/* stacks.c */
int pt_stacks_alloc(struct pt_session *sess);
void pt_stacks_free(struct pt_session *sess);
unsigned int pt_stacks_words(void);
bool pt_sample_due(struct pt_cpu *c, unsigned long npages);
void pt_write_sample(struct pt_cpu *c, const struct pt_origin *origin,
		     const unsigned long *frame);
void pt_stacks_record(struct pagetrace_rec_stacks *rec, unsigned int rate);

/* snapshot.c */
bool pt_snapshot_wanted(void);
int pt_snapshot_build(struct pt_session *sess);
void pt_snapshot_free(struct pt_session *sess);

/* hooks.c */
unsigned int pt_hooks_backend(void);
int pt_hooks_init(void);
int pt_hooks_register(unsigned int backend, u32 *uncovered);
void pt_hooks_unregister(void);
void pt_hooks_sync(void);
unsigned long pt_hooks_missed(void);

/* device.c */
int pt_device_register(void);
void pt_device_unregister(void);

#endif /* _PAGETRACE_INTERNAL_H */
