// SPDX-License-Identifier: GPL-2.0
/*
 * The hot path: encode one event into this CPU's open buffer.
 *
 * pt_emit() runs inside the allocator, in any context (task, softirq,
 * hardirq), on the CPU where the event happened.  It takes no lock, allocates
 * nothing and never sleeps.  The window in which it touches the CPU's writer
 * state runs with interrupts disabled: an interrupt that frees a page in the
 * middle of an encode would otherwise write into the same buffer between our
 * read of @len and our store of it.  Disabling interrupts costs a few cycles
 * and keeps the writer a plain sequence of loads and stores (no atomics).
 * NMIs are not kept out that way, and they do allocate pages since 6.15
 * (alloc_pages_nolock(), from BPF programs): an NMI that comes while its
 * CPU is changing the writer state drops its event and counts it
 * (pt_writer_enter()), and an NMI that comes at any other time writes
 * its event like any other context.
 *
 * The hot functions are notrace: no __fentry__ call site, which costs an
 * instruction even as a nop, and no way to trace the tracer.
 *
 * The clock is local_clock() (what perf and ftrace use by default) or the
 * same nanoseconds read from the TSC (clock.h), read with interrupts off
 * so that one CPU's timestamps never go backwards within its stream.
 */
#include <asm/local.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "clock.h"
#include "context.h"
#include "pagetrace.h"

/* Time bases are kept in 128 ns steps, exactly what a sync word can hold. */
static inline u64 pt_time_base(u64 now)
{
	return now & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
}

/*
 * Flight recorder: drop the oldest closed chunk so that a buffer is free.
 * Only the writer advances consumed while @overwrite is set (see pt_cpu), so
 * a plain read-modify-write is enough; the release orders nothing we need
 * but keeps the rule "consumed is stored with release" without exception.
 */
static void pt_overwrite_oldest(struct pt_cpu *c, u64 consumed)
{
	u64 newest = c->produced_w - (c->sess->nr_bufs - 1);

	c->overwritten += newest - consumed;
	WRITE_ONCE(c->meta->overwritten, c->overwritten);
	/* Release: the same rule as every consumer (see above). */
	smp_store_release(&c->meta->consumed, newest);
}

/**
 * pt_open_chunk - start filling the next free buffer of a CPU
 * @c: the CPU, owned by the caller (interrupts off on that CPU, or offline)
 * @now: the chunk's time base
 *
 * Return: false when every buffer is still held by the reader (stream
 * mode; in flight recorder mode the oldest is overwritten instead).
 */
bool pt_open_chunk(struct pt_cpu *c, u64 now)
{
	struct pt_session *sess = c->sess;
	u64 consumed;

	/*
	 * Pairs with the release in pt_reader_put() and pt_consume_apply(): the
	 * reader is done with the buffer before we write into it.
	 */
	consumed = smp_load_acquire(&c->meta->consumed);
	if (c->produced_w - consumed >= sess->nr_bufs) {
		if (!c->overwrite)
			return false;
		pt_overwrite_oldest(c, consumed);
	}

	c->chunk = c->bufs + (c->produced_w % sess->nr_bufs) * sess->chunk_size;
	c->words = (__le64 *)(c->chunk + 1);
	/*
	 * Never before the CPU's last time base: a flush of an offline CPU
	 * reads another CPU's clock, and the change from the TSC raises the
	 * base to a floor the new clock may not have reached yet
	 * (pt_writer_leave_tsc()).
	 */
	c->base = pt_time_base(max(now, c->base));
	c->words[0] = cpu_to_le64(pagetrace_pid_word(c->cpu));
	c->words[1] = cpu_to_le64(pagetrace_sync_word(c->base));
	c->len = 2;
	/* A CPU leaving the TSC keeps its events off the fast path. */
	c->end = c->clock_local ? 0 : c->cap;
	/* Every chunk names its tasks again: chunks may be lost or dropped. */
	c->task = PT_TASK_NONE;
	memset(c->named, 0, sizeof(c->named));
	return true;
}

/**
 * pt_writer_fold - count what NMIs dropped as lost
 * @c: the CPU, owned by the caller as for pt_open_chunk()
 *
 * The NMIs only increment @c->nested; the owner keeps how much of it is
 * counted already, so neither side ever writes what the other writes.
 * The dropped events count as attempts too, which they were.
 */
void pt_writer_fold(struct pt_cpu *c)
{
	u64 n = local_read(&c->nested) - c->nested_seen;

	if (likely(!n))
		return;
	/* Read from other CPUs by the stats ioctl. */
	WRITE_ONCE(c->nested_seen, c->nested_seen + n);
	c->lost += n;
	c->stats.lost += n;
	c->stats.attempts += n;
}

/**
 * pt_writer_pending - whether a CPU has losses not yet in a chunk
 * @c: any CPU's writer; read racily, for the flusher's decision
 *
 * Return: true if a flush should carry losses of @c out.
 */
bool pt_writer_pending(const struct pt_cpu *c)
{
	return READ_ONCE(c->lost) ||
	       (u64)local_read(&c->nested) != READ_ONCE(c->nested_seen);
}

/**
 * pt_close_chunk - finish the open buffer and hand it to the reader
 * @c: the CPU, owned by the caller as for pt_open_chunk()
 * @flags: PAGETRACE_CHUNK_* to set, e.g. FLUSHED when closed early
 */
void pt_close_chunk(struct pt_cpu *c, u16 flags)
{
	struct pagetrace_chunk *ch = c->chunk;
	struct pagetrace_meta_cpu *m = c->meta;

	pt_writer_fold(c);
	memcpy(ch->magic, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN);
	ch->cpu = pt_le16(c->cpu);
	ch->flags = pt_le16(flags | READ_ONCE(pt_clock_chunk_flags));
	ch->nr_words = pt_le32(c->len);
	ch->reserved = 0;
	ch->seq = pt_le64(c->seq);
	ch->lost = pt_le64(c->lost);

	c->stats.chunks++;
	c->stats.bytes += sizeof(*ch) + c->len * sizeof(u64);
	c->seq++;
	c->lost = 0;
	c->chunk = NULL;
	c->end = 0;
	c->produced_w++;
	/*
	 * With no buffer open, every event and loss so far is in a published
	 * chunk: the totals are exactly those of chunks [0, produced).
	 */
	WRITE_ONCE(m->events, c->stats.events);
	WRITE_ONCE(m->lost, c->stats.lost);
	WRITE_ONCE(m->chunks, c->stats.chunks);
	WRITE_ONCE(m->bytes, c->stats.bytes);
	WRITE_ONCE(m->allocated_pages, c->pages[PAGETRACE_EV_ALLOC - 1]);
	WRITE_ONCE(m->freed_pages, c->pages[PAGETRACE_EV_FREE - 1] +
				  c->pages[PAGETRACE_EV_RECLAIM - 1]);
	/* Publish the chunk and the counters before the position; see pt_cpu. */
	smp_store_release(&m->produced, c->produced_w);
	/*
	 * Never wake the reader from here: we may hold allocator locks.  The
	 * irq_work does, soon, from this CPU's interrupt (pt_wake()); but
	 * not on a CPU going down (no longer active): past the point where
	 * hotplug runs its last irq_works, one queued would never run, and
	 * the session's close (irq_work_sync() in pt_buffers_free()) would
	 * wait for it for ever.  There the timed flush wakes the reader
	 * instead.  (Not reproduced here: selftests/
	 * pagetrace_offline_close_test.c closed a session with CPU 1 down 20
	 * times under an allocation storm on 7.3-rt, when the irq_work ran
	 * in a thread that hotplug parks, and each close returned, without
	 * this test.)
	 */
	if (likely(cpu_active(raw_smp_processor_id())))
		irq_work_queue(&c->wake);
	else
		WRITE_ONCE(c->sess->wake_pending, true);
}

/**
 * pt_writer_leave_tsc - stamp a CPU's events with local_clock() from now on
 * @c: the CPU, owned by the caller as for pt_open_chunk()
 * @floor: a time on the TSC clock at or after every event @c stamped
 *
 * local_clock() may be behind the TSC clock, by any amount if the kernel
 * stopped trusting the TSC during the session (clock.c).  So the CPU's
 * time base goes up to @floor first: a sync word in the open buffer, or,
 * with no room or no buffer open, the base the next buffer opens at
 * (pt_open_chunk() never opens before it).  pt_write() stamps an event
 * before its base at the base, so no later event of the CPU goes before
 * its earlier ones, whatever the two clocks say; the times stay at the
 * floor until local_clock() passes it.
 *
 * Until the static key is off (pt_clock_leave_tsc()) and every caller
 * that tested it before is done, the TSC's fast path may still run and
 * would stamp with the TSC: @end at 0 sends each of the CPU's events to
 * pt_emit_slow(), which stamps it with local_clock() instead, until
 * pt_writer_settle_clock() gives the fast path back.
 */
void pt_writer_leave_tsc(struct pt_cpu *c, u64 floor)
{
	u64 base = pt_time_base(floor);

	c->clock_local = true;
	c->end = 0;
	if (base <= c->base)
		return;
	if (c->chunk && c->len < c->cap)
		c->words[c->len++] = cpu_to_le64(pagetrace_sync_word(base));
	else if (c->chunk)
		pt_close_chunk(c, 0);
	c->base = base;
}

/**
 * pt_writer_settle_clock - give the fast path back after leaving the TSC
 * @c: the CPU, owned by the caller as for pt_open_chunk()
 *
 * Called once no caller can still be on the TSC's fast path: every event
 * from here on comes with a local_clock() time.
 */
void pt_writer_settle_clock(struct pt_cpu *c)
{
	c->clock_local = false;
	c->end = c->chunk ? c->cap : 0;
}

/*
 * Make room for @need words in the open buffer, rotating to a fresh one
 * when it is full.  A fresh buffer starts with pid + sync at @now.
 */
static bool pt_reserve(struct pt_cpu *c, u64 now, unsigned int need)
{
	if (likely(c->chunk && c->len + need <= c->cap))
		return true;
	if (c->chunk)
		pt_close_chunk(c, 0);
	return pt_open_chunk(c, now);
}

/* Words a task change may add before an event: a name and a task record. */
#define PT_TASK_WORDS	(PAGETRACE_NAME_MAX_SLICES + 1)

/*
 * The events from here on belong to @owner: write a task record, preceded
 * by the slices of its name unless this chunk named @owner already (as far
 * as the direct-mapped cache remembers).  The caller reserved
 * PT_TASK_WORDS.  @owner != 0 means the event is of task context, so
 * current is its thread (in a breakpoint's NMI too: the task it stopped);
 * the name is its group leader's comm, which RCU (we run with interrupts
 * off, or in that NMI) keeps valid even if an exec changes the leader
 * meanwhile.
 * It is copied without task_lock() (a spinlock, which sleeps on RT): a
 * racing rename may tear it, but the slices are cut from one
 * NUL-terminated copy, so their count and bytes agree.
 */
static noinline void pt_write_task(struct pt_cpu *c, u32 owner)
{
	u32 *slot = &c->named[owner & (PT_NAME_CACHE - 1)];
	char comm[PAGETRACE_COMM_LEN];
	unsigned int i, n;

	BUILD_BUG_ON(TASK_COMM_LEN != PAGETRACE_COMM_LEN);
	BUILD_BUG_ON(PAGETRACE_NAME_MAX_SLICES * PAGETRACE_NAME_SLICE_BYTES <
		     PAGETRACE_COMM_LEN);
	if (owner && *slot != owner) {
		*slot = owner;
		memcpy(comm, current->group_leader->comm, sizeof(comm));
		comm[PAGETRACE_COMM_LEN - 1] = '\0';
		n = pagetrace_name_slices(strnlen(comm, sizeof(comm)));
		for (i = 0; i < n; i++)
			c->words[c->len++] =
				cpu_to_le64(pagetrace_name_word(i, (u8 *)comm));
	}
	c->words[c->len++] = cpu_to_le64(pagetrace_task_word(owner));
	c->task = owner;
}

/*
 * The tgid of the task an event is of: 0 outside task context (NMI, hard
 * or soft interrupt; on PREEMPT_RT most interrupt handlers run in threads:
 * their events are their thread's), the context being the code's the hook
 * reports on (@ctx).  See pt_in_task() for its form.
 */
static __always_inline u32 pt_event_tgid(enum pt_event_ctx ctx)
{
	if (pt_event_in_task(ctx))
		return current->tgid;
	return 0;
}

/*
 * Count @npages pages of an event of @type (PAGETRACE_EV_ALLOC, _FREE or
 * _RECLAIM: 1 to 3, from every caller) in @c->pages[type - 1].  As an
 * unsigned long the - 1 folds into the displacement: one add to memory.
 * Through a pointer, not an index into the array: the kernel's bounds
 * sanitizer (CONFIG_UBSAN_BOUNDS, on in Debian's 7.x kernels) checks an
 * array index at every use, and the call to its report would cost the
 * fast path its registers saved and restored (~10 instructions an event).
 * The range is checked instead at pt_emit()'s entry on kernels that pay
 * for their own such checks (CONFIG_DEBUG_VM, as make check's debug
 * kernel); pt_emit_alloc() passes a constant.
 */
static __always_inline void pt_count_pages(struct pt_cpu *c, unsigned int type,
					   unsigned long npages)
{
	u64 *pages = c->pages;

	pages[(unsigned long)type - 1] += npages;
}

/*
 * The whole encoder, for every event the fast path below does not take:
 * a full or closed buffer, a delta too large for the word, a large block,
 * a task change, a sampled stack.  Inlined into pt_emit_slow() only.
 */
static __always_inline void pt_write(struct pt_cpu *c, unsigned int type,
				     unsigned long pfn, unsigned long npages,
				     const struct pt_origin *origin,
				     const unsigned long *frame, u64 now,
				     enum pt_event_ctx ctx)
{
	unsigned int need = npages > PAGETRACE_NPAGES_MAX ? 2 : 1;
	unsigned int extra = 0;
	bool sample = false;
	u64 delta, word;
	u32 owner = 0;

	/*
	 * A block beyond the stream's PFN field (memory hot-added above it
	 * after the session started; pt_header_pfns_fit() refuses a session
	 * on such memory) would alias to a wrong PFN: lost, and counted.
	 */
	if (unlikely(pfn + npages - 1 > PAGETRACE_PFN_MAX))
		goto lost;

	/*
	 * With task records on, the owner of this event: interrupts (hard,
	 * soft, NMI) belong to the kernel, 0, but for a breakpoint's NMI,
	 * whose events are of the code it stopped (@ctx).  A change needs
	 * room for a name and a task record, reserved with the event so that
	 * no rotation comes between them; a rotation resets c->task, and a
	 * fresh buffer has room for them in any case.
	 */
	if (c->tasks) {
		owner = pt_event_tgid(ctx);
		if (unlikely(owner != c->task))
			extra = PT_TASK_WORDS;
	}
	/*
	 * A sampled allocation's stack words go right before its event word
	 * (stacks.c); reserved with it, like the task words.
	 */
	if (unlikely(c->stacks) && type == PAGETRACE_EV_ALLOC &&
	    pt_sample_due(c, npages)) {
		sample = true;
		extra += pt_stacks_words();
	}

	if (unlikely(!pt_reserve(c, now, need + extra)))
		goto lost;
	/*
	 * A time before the base is clamped: clock skew after migration, or
	 * a floor the change from the TSC left (pt_writer_leave_tsc()).
	 */
	if (unlikely(now < c->base))
		now = c->base;
	delta = now - c->base;
	if (unlikely(delta >= PAGETRACE_TIME_MAX_DELTA)) {
		if (unlikely(!pt_reserve(c, now, need + extra + 1)))
			goto lost;
		/* pt_reserve() may have opened a buffer based at now already. */
		if (now - c->base >= PAGETRACE_TIME_MAX_DELTA) {
			c->base = pt_time_base(now);
			c->words[c->len++] =
				cpu_to_le64(pagetrace_sync_word(c->base));
		}
		delta = now - c->base;
	}

	if (unlikely(c->tasks && owner != c->task))
		pt_write_task(c, owner);
	if (unlikely(sample))
		pt_write_sample(c, origin, frame);
	if (likely(need == 1)) {
		word = pagetrace_event_word(delta, pfn, npages, type);
		c->words[c->len++] = cpu_to_le64(word);
	} else {
		word = pagetrace_large_event_word(delta, pfn, type);
		c->words[c->len++] = cpu_to_le64(word);
		c->words[c->len++] = cpu_to_le64(npages);
	}
	c->stats.events++;
	pt_count_pages(c, type, npages);
	return;
lost:
	c->lost++;
	c->stats.lost++;
}

/*
 * The slow path's body, for the two out-of-line copies below; @frame is
 * the copy's own frame, @ctx whose context the event is of (a constant).
 */
static __always_inline void pt_emit_slow_body(struct pt_cpu *c,
					      unsigned int type,
					      unsigned long pfn,
					      unsigned long npages,
					      const struct pt_origin *origin,
					      unsigned long flags,
					      const unsigned long *frame,
					      enum pt_event_ctx ctx)
{
	/*
	 * A CPU that left the TSC (pt_writer_leave_tsc()) may still get an
	 * event from the TSC's fast path, with a TSC time, until every
	 * caller that tested the static key before it went off is done
	 * (pt_writer_settle_clock()); @end 0 sends each such event here.
	 */
	pt_write(c, type, pfn, npages, origin, frame,
		 unlikely(c->clock_local) ? local_clock() : c->now, ctx);
	pt_writer_exit(c);
	local_irq_restore(flags);
}

/*
 * Everything unusual, out of line so that the fast path saves no register
 * for a call.  Entered by a tail call with interrupts off (@flags is what
 * they were before), which it restores; @c->now holds the event's time.
 * The event is one the session's filter keeps (pt_emit_event() decided).
 *
 * Its own frame (a frame pointer, which taking its address makes the
 * compiler keep) goes to a sampled stack: when the hook reached here by
 * tail calls alone, as the tracepoint probes do, its return address is in
 * the code that fired the tracepoint, and the stack is unwound from there,
 * past this module's frames (stacks.c checks, and falls back otherwise).
 * No kprobes here or on the way (NOKPROBE_SYMBOL()): a kretprobe's
 * trampoline would be that return address.
 */
static noinline void notrace pt_emit_slow(struct pt_cpu *c, unsigned int type,
					  unsigned long pfn,
					  unsigned long npages,
					  const struct pt_origin *origin,
					  unsigned long flags)
{
	pt_emit_slow_body(c, type, pfn, npages, origin, flags,
			  __builtin_frame_address(0), PT_CTX_HOOK);
}

NOKPROBE_SYMBOL(pt_emit_slow);

/*
 * pt_emit_slow() for the events of breakpoint kprobes, whose task is the
 * stopped code's (pt_event_in_task()): a function of its own, not a flag
 * in an argument, so that the other hooks' slow path tests nothing more.
 * No frame: a breakpoint's allocation has the registers to unwind from.
 */
static noinline void notrace
pt_emit_slow_breakpoint(struct pt_cpu *c, unsigned int type,
			unsigned long pfn, unsigned long npages,
			const struct pt_origin *origin, unsigned long flags)
{
	pt_emit_slow_body(c, type, pfn, npages, origin, flags, NULL,
			  PT_CTX_STOPPED);
}

NOKPROBE_SYMBOL(pt_emit_slow_breakpoint);

/*
 * The CPU's writer while a session is live, else NULL.  Set for every CPU
 * once all the session's hooks are attached (one CPU after another, within
 * microseconds), cleared before they are detached.  A hook reads it with
 * interrupts off, which makes the rest of pt_emit() an RCU-sched read
 * side: synchronize_rcu() after clearing waits out every hook still using
 * the old value.  Its stores are ordered before the pointer's by
 * smp_store_release(); the module is x86-only, where the hook's dependent
 * loads need nothing more.
 */
static DEFINE_PER_CPU(struct pt_cpu *, pt_writer);

/*
 * Pages of the events the hooks brought while the CPU had no writer: only
 * in the windows between a session's attaching and publishing, and its
 * clearing and detaching, when the hooks are attached and turned away.
 * The stop's reading of the counters takes what came meanwhile as its
 * uncertainty (counters.c).  Written on its own CPU only, by one
 * instruction (this_cpu_add()), which an NMI cannot split.
 */
static DEFINE_PER_CPU(unsigned long, pt_turned_away);

/**
 * pt_turned_away_pages - pages of the events turned away so far
 *
 * Return: the sum over every CPU; it only grows.
 */
unsigned long pt_turned_away_pages(void)
{
	unsigned long n = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		n += READ_ONCE(per_cpu(pt_turned_away, cpu));
	return n;
}

/**
 * pt_written_pages - pages of the events a session's CPUs wrote so far
 * @sess: the session
 *
 * Read from other CPUs while they write: each count is one word that only
 * its CPU's writer changes, by one add to memory, and only up.
 *
 * Return: the sum over every CPU and event type.
 */
u64 pt_written_pages(const struct pt_session *sess)
{
	unsigned int cpu, i;
	u64 n = 0;

	for_each_possible_cpu(cpu)
		for (i = 0; i < ARRAY_SIZE(sess->cpus[cpu].pages); i++)
			n += READ_ONCE(sess->cpus[cpu].pages[i]);
	return n;
}

/**
 * pt_writers_publish - let the hooks write into a session
 * @sess: the session, set up, with all its hooks attached
 *
 * Context: process context.
 */
void pt_writers_publish(struct pt_session *sess)
{
	unsigned int cpu;

	/* pt_cpu.pages[] is indexed by event type - 1; the meta entry's layout. */
	BUILD_BUG_ON(PAGETRACE_EV_ALLOC != 1);
	BUILD_BUG_ON(ARRAY_SIZE(sess->cpus[0].pages) != PAGETRACE_EV_RECLAIM);
	BUILD_BUG_ON(sizeof(struct pagetrace_meta_cpu) != 128 ||
		     offsetof(struct pagetrace_meta_cpu, consumed) != 64);

	for_each_possible_cpu(cpu) {
		struct pt_cpu *c = &sess->cpus[cpu];

		c->checks = (sess->filter.tests ? PT_CHECK_FILTER : 0) |
			    (c->stacks ? PT_CHECK_SAMPLE : 0);
		c->filter_kind = sess->filter.kind;
		c->filter_fast = sess->filter.fast;
		/* Release: the writer state above before the pointer. */
		smp_store_release(per_cpu_ptr(&pt_writer, cpu), c);
	}
}

/**
 * pt_writers_clear - turn new hook calls away from the session
 *
 * The caller then waits for those running with synchronize_rcu().
 */
void pt_writers_clear(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		WRITE_ONCE(*per_cpu_ptr(&pt_writer, cpu), NULL);
}

/*
 * The fast path: an event of fewer than 1024 pages well inside the PFN
 * field (pt_write() checks those near its top), by the task of the
 * previous event, that fits in the open buffer within a delta of its time
 * base, that the session's filter keeps and that is not the allocation a
 * stack is sampled at.  That is almost every event.  With the TSC clock
 * (@tsc, a constant) it is a leaf: about 60 instructions, no call, one
 * register saved.  Anything else goes to
 * pt_emit_slow() with the same @now.
 *
 * Interrupts are off from the pointer's load to the word's store (see the
 * top of this file); the tail call carries that window into the slow path.
 * @ctx (whose context the event is of: context.h) is a constant in every
 * caller, and @tsc in every caller but pt_emit_breakpoint().
 */
static __always_inline void pt_emit_event(unsigned int type, unsigned long pfn,
					  unsigned long npages,
					  const struct pt_origin *origin,
					  bool tsc, enum pt_event_ctx ctx)
{
	struct pt_cpu *c;
	unsigned long flags;
	u64 now, delta;

	local_irq_save(flags);
	c = this_cpu_read(pt_writer);
	if (unlikely(!c)) {
		this_cpu_add(pt_turned_away, npages);
		goto out;
	}
	if (unlikely(!pt_writer_enter(c)))
		goto out;
	/*
	 * Counted before anything is decided, so that a path that neither
	 * keeps nor counts an event as filtered or lost shows up as
	 * attempts != events + lost + filtered (checked by the selftests).
	 */
	c->stats.attempts++;
	/*
	 * The filter first, before the clock is read: an event left out costs
	 * less than one recorded.  It is decided here, once; the slow path
	 * takes only events the filter keeps.
	 */
	if (unlikely(c->checks & PT_CHECK_FILTER) &&
	    !pt_filter_keeps(&c->filter_fast, c->filter_kind, type, pfn,
			     npages, ctx)) {
		c->stats.filtered++;
		goto done;
	}
	now = tsc ? pt_tsc_now() : local_clock();
	if (unlikely(c->len >= c->end))
		goto slow;
	/* Unsigned: a time before the base (skew) takes the slow path too. */
	delta = now - c->base;
	if (unlikely(delta >= PAGETRACE_TIME_MAX_DELTA ||
		     npages > PAGETRACE_NPAGES_MAX ||
		     pfn > PAGETRACE_PFN_MAX - PAGETRACE_NPAGES_MAX))
		goto slow;
	if (likely(c->tasks) && unlikely(pt_event_tgid(ctx) != c->task))
		goto slow;
	/*
	 * Sampled stacks count allocated pages down to the next sample; the
	 * allocation that reaches it goes to the slow path, whose
	 * pt_sample_due() counts it and takes the stack.  Counted only here,
	 * after the last goto slow, so that no allocation is counted twice.
	 */
	if (unlikely(c->checks & PT_CHECK_SAMPLE) &&
	    type == PAGETRACE_EV_ALLOC) {
		if (c->sample_left <= (s64)npages)
			goto slow;
		c->sample_left -= npages;
	}
	c->words[c->len++] =
		cpu_to_le64(pagetrace_event_word(delta, pfn, npages, type));
	c->stats.events++;
	pt_count_pages(c, type, npages);
done:
	pt_writer_exit(c);
out:
	local_irq_restore(flags);
	return;
slow:
	c->now = now;
	if (ctx == PT_CTX_STOPPED)
		pt_emit_slow_breakpoint(c, type, pfn, npages, origin, flags);
	else
		pt_emit_slow(c, type, pfn, npages, origin, flags);
}

/*
 * The fast path with local_clock(): a call, so not a leaf; kept out of
 * line so that the TSC's fast path stays one.
 */
static noinline void notrace pt_emit_local(unsigned int type,
					   unsigned long pfn,
					   unsigned long npages,
					   const struct pt_origin *origin)
{
	pt_emit_event(type, pfn, npages, origin, false, PT_CTX_HOOK);
}

/**
 * pt_emit - record one event on this CPU
 * @type: PAGETRACE_EV_ALLOC, _FREE or _RECLAIM
 * @pfn: first page frame of the block
 * @npages: pages in the block
 *
 * Called from the hooks in any context, NMI included, preemptible or not.
 */
void notrace pt_emit(unsigned int type, unsigned long pfn, unsigned long npages)
{
	/* A bad type would count its pages outside pt_cpu.pages[]. */
	if (IS_ENABLED(CONFIG_DEBUG_VM) &&
	    WARN_ON_ONCE(type - 1 >= PAGETRACE_EV_RECLAIM))
		return;
	if (pt_clock_is_tsc())
		pt_emit_event(type, pfn, npages, NULL, true, PT_CTX_HOOK);
	else
		pt_emit_local(type, pfn, npages, NULL);
}

/**
 * pt_emit_alloc - record an allocation on this CPU
 * @pfn: first page frame of the block
 * @npages: pages in the block
 * @origin: where it was hooked, for its call stack if it is sampled
 *
 * As pt_emit().  On the tail calls from a tracepoint's probe to
 * pt_emit_slow(), like pt_emit_local(): no kprobes (see there).
 */
void notrace pt_emit_alloc(unsigned long pfn, unsigned long npages,
			   const struct pt_origin *origin)
{
	if (pt_clock_is_tsc())
		pt_emit_event(PAGETRACE_EV_ALLOC, pfn, npages, origin, true,
			      PT_CTX_HOOK);
	else
		pt_emit_local(PAGETRACE_EV_ALLOC, pfn, npages, origin);
}

NOKPROBE_SYMBOL(pt_emit_alloc);
NOKPROBE_SYMBOL(pt_emit_local);

/**
 * pt_emit_breakpoint - record an event a breakpoint kprobe's handler saw
 * @type: PAGETRACE_EV_ALLOC, _FREE or _RECLAIM
 * @pfn: first page frame of the block
 * @npages: pages in the block
 * @origin: where it was hooked, for its call stack if it is sampled
 *
 * As pt_emit_alloc(), for an event of any type, and of the task the
 * breakpoint stopped: the handler runs as an NMI, in which pt_emit()
 * would take the event for the kernel's (tgid 0), and a cgroup filter
 * would leave it out.  Only from a kprobe handler that runs from a
 * breakpoint (kprobe_ftrace() false; none is jump-optimized, hooks.c).
 *
 * Context: a breakpoint kprobe's handler: an NMI, interrupts off.
 */
void notrace pt_emit_breakpoint(unsigned int type, unsigned long pfn,
				unsigned long npages,
				const struct pt_origin *origin)
{
	if (IS_ENABLED(CONFIG_DEBUG_VM) &&
	    WARN_ON_ONCE(type - 1 >= PAGETRACE_EV_RECLAIM))
		return;
	pt_emit_event(type, pfn, npages, origin, pt_clock_is_tsc(),
		      PT_CTX_STOPPED);
}

NOKPROBE_SYMBOL(pt_emit_breakpoint);

/**
 * pt_emit_lost - count events a hook saw but cannot tell apart
 * @n: how many
 *
 * For a hook that knows how many order-0 allocations happened but not
 * which pages (pt_bulk_return()): counted lost on this CPU, as the writer
 * counts an event it has no room for, and in the attempts, so that
 * attempts still equal events + lost + filtered.  The session's filter is
 * not asked (a node filter needs the pages): lost even where it would
 * have left them out.
 */
void notrace pt_emit_lost(unsigned long n)
{
	unsigned long flags;
	struct pt_cpu *c;

	local_irq_save(flags);
	c = this_cpu_read(pt_writer);
	if (!c) {
		/* Order-0 pages, as pt_emit_event() counts them. */
		this_cpu_add(pt_turned_away, n);
		goto out;
	}
	if (!n)
		goto out;
	if (unlikely(!pt_writer_enter(c))) {
		/* Counted one as dropped; the rest likewise. */
		local_add(n - 1, &c->nested);
		goto out;
	}
	c->stats.attempts += n;
	c->lost += n;
	c->stats.lost += n;
	pt_writer_exit(c);
out:
	local_irq_restore(flags);
}
