// SPDX-License-Identifier: GPL-2.0
/*
 * Buffer memory, the handoff of closed buffers to the reader, and flushing.
 *
 * Each CPU owns a ring of nr_bufs buffers of chunk_size bytes (see the
 * drawing above struct pt_cpu).  The writer fills them in order and
 * publishes each closed one by advancing @produced; the reader copies
 * closed buffers out and gives them back by advancing @consumed.  When the
 * reader falls behind and the ring is full, the writer counts events as
 * lost instead of overwriting: the stream never silently loses data.
 *
 * Flushing closes buffers that are only partly full, so that events reach
 * the reader at a trickle too.  A CPU's open buffer may only be touched by
 * that CPU, so a flush runs on each CPU that has something to flush, in an
 * IPI (interrupts off there, like the writer): a ragged barrier, as the
 * Go runtime's tracer uses to flush its per-P buffers.
 * Offline CPUs run no writer; their buffers are flushed from here directly,
 * under cpus_read_lock() so that they stay offline meanwhile.
 *
 * The same ragged barrier switches the writers between stream and flight
 * recorder behaviour (pt_set_overwrite()): once on_each_cpu() has returned,
 * every online CPU has run the IPI with interrupts off, so no writer is in
 * the middle of an event and every later one sees the new setting.
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "clock.h"
#include "compat.h"
#include "pagetrace.h"

/*
 * The readers' wakeup, which a writer that closed a chunk asks for (it
 * never wakes them itself: it may hold allocator locks) with an
 * irq_work: it runs in an interrupt on the writer's CPU soon after, and
 * wakes them there.  On PREEMPT_RT a plain irq_work would wait for the
 * CPU's irq_work thread, of the lowest real-time priority: any real-time
 * task busy on the CPU would hold it off, and the session's close
 * (irq_work_sync() in pt_buffers_free()) with it, for as long.  There it
 * is a hard one, which runs in the interrupt; a wait queue's lock sleeps
 * there, so it only queues the session's wake work on an unbound
 * workqueue (whose locks spin), which wakes the readers from whichever
 * CPU is free (a wakeup that real-time load may delay, but the close no
 * longer waits for).  Elsewhere a hard irq_work would be told by lockdep
 * not to take the wait queue's lock.  (Not reproduced here: on 7.3-rt in
 * the VM a close beside a SCHED_FIFO task spinning on the CPU that had
 * closed a chunk returned at once with the plain irq_work too; the
 * starvation is the irq_work thread's documented priority, and the hard
 * irq_work the kernel's own remedy.)
 */
static void pt_wake_work_fn(struct work_struct *work)
{
	struct pt_session *sess = container_of(work, struct pt_session,
					       wake_work);

	wake_up_interruptible(&sess->wq);
}

static void pt_wake(struct irq_work *work)
{
	struct pt_cpu *c = container_of(work, struct pt_cpu, wake);

	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		queue_work(pt_unbound_wq, &c->sess->wake_work);
	else
		wake_up_interruptible(&c->sess->wq);
}

int pt_buffers_alloc(struct pt_session *sess)
{
	unsigned int cpu;

	INIT_WORK(&sess->wake_work, pt_wake_work_fn);
	/* 768 bytes a CPU on Debian's kernels: may be too many for kmalloc. */
	sess->cpus = kvcalloc(nr_cpu_ids, sizeof(*sess->cpus), GFP_KERNEL);
	sess->flushed_seq = kcalloc(nr_cpu_ids, sizeof(*sess->flushed_seq),
				    GFP_KERNEL);
	if (!sess->cpus || !sess->flushed_seq) {
		pt_buffers_free(sess);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		struct pt_cpu *c = &sess->cpus[cpu];

		c->bufs = vmalloc_user((size_t)sess->nr_bufs * sess->chunk_size);
		if (!c->bufs) {
			pt_buffers_free(sess);
			return -ENOMEM;
		}
		c->cpu = cpu;
		c->sess = sess;
		c->tasks = sess->header_flags & PAGETRACE_FLAG_TASKS;
		c->cap = (sess->chunk_size - sizeof(struct pagetrace_chunk)) /
			 sizeof(u64);
#if defined(CONFIG_PREEMPT_RT) && defined(IRQ_WORK_INIT_HARD)
		c->wake = IRQ_WORK_INIT_HARD(pt_wake);
#else
		init_irq_work(&c->wake, pt_wake);
#endif
	}
	return 0;
}

/* Called once no hook can run and no flush is pending. */
void pt_buffers_free(struct pt_session *sess)
{
	unsigned int cpu;

	kfree(sess->flushed_seq);
	sess->flushed_seq = NULL;
	if (!sess->cpus)
		return;
	for_each_possible_cpu(cpu) {
		irq_work_sync(&sess->cpus[cpu].wake);
		vfree(sess->cpus[cpu].bufs);
	}
	/*
	 * PREEMPT_RT: after the irq_works, which queue it.  A wakeup it has
	 * not begun is dropped: the session is closed.  irq_work_single()
	 * reads a hard irq_work's flags once more after clearing the busy
	 * bit irq_work_sync() waits for, in the interrupt: it ends before a
	 * grace period does.
	 */
	cancel_work_sync(&sess->wake_work);
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		synchronize_rcu();
	kvfree(sess->cpus);
	sess->cpus = NULL;
}

/*
 * A time for an offline CPU, from @now read on another CPU, whose clock
 * may lag its own (local_clock() is per CPU; TSCs the kernel stopped
 * trusting need not agree): no earlier than the CPU's last event, which
 * is no later than its last time base and the largest delta an event
 * word holds.
 */
static u64 pt_offline_time(const struct pt_cpu *c, u64 now)
{
	return max(now, c->base + PAGETRACE_TIME_MAX_DELTA);
}

/*
 * Close a CPU's open buffer if it holds events, or if losses wait to be
 * reported (in a buffer of their own if none is open).  Runs on the CPU
 * with interrupts off, or for an offline CPU from the flusher.
 */
static void pt_flush_one(struct pt_cpu *c, bool offline)
{
	u64 now;

	pt_writer_fold(c);
	if (!c->chunk && c->lost) {
		now = c->clock_local ? local_clock() : pt_clock_now();
		if (offline)
			now = pt_offline_time(c, now);
		if (!pt_open_chunk(c, now))
			return;
	}
	if (c->chunk && (c->len > 2 || c->lost))
		pt_close_chunk(c, PAGETRACE_CHUNK_FLUSHED);
}

static void pt_flush_ipi(void *info)
{
	struct pt_session *sess = info;
	struct pt_cpu *c = &sess->cpus[smp_processor_id()];

	if (WARN_ON_ONCE(!pt_writer_enter(c)))
		return;
	pt_flush_one(c, false);
	pt_writer_exit(c);
}

struct pt_missed {
	struct pt_session	*sess;
	unsigned long		count;
};

static void pt_add_missed_ipi(void *info)
{
	struct pt_missed *m = info;
	struct pt_cpu *c = &m->sess->cpus[smp_processor_id()];

	if (WARN_ON_ONCE(!pt_writer_enter(c)))
		return;
	c->lost += m->count;
	c->stats.lost += m->count;
	pt_writer_exit(c);
}

/* Decide, on the flushing CPU, whether @cpu has anything to flush. */
static bool pt_needs_flush(int cpu, void *info)
{
	struct pt_session *sess = info;
	struct pt_cpu *c = &sess->cpus[cpu];

	return pt_writer_pending(c) || (READ_ONCE(c->chunk) &&
				      READ_ONCE(c->len) > 2);
}

/*
 * The timer's variant: flush only buffers that stayed open for a whole
 * period, so that a busy CPU, whose buffers fill up anyway, gets no IPI.
 */
static bool pt_needs_timed_flush(int cpu, void *info)
{
	struct pt_session *sess = info;
	struct pt_cpu *c = &sess->cpus[cpu];
	u64 seq = READ_ONCE(c->seq);
	bool stale = seq == sess->flushed_seq[cpu];

	/* The flusher's own record (flush_lock), not the CPU's cache line. */
	sess->flushed_seq[cpu] = seq;
	return stale && pt_needs_flush(cpu, info);
}

/**
 * pt_flush - close every CPU's partly filled buffer
 * @sess: the session
 * @all: every buffer with events (ioctl, stop), not only those the timer
 *       saw open for a whole period
 * @missed: the probe misses counted so far (pt_hooks_missed()), of which
 *          those not yet in the stream are added to its losses; 0 adds none
 *
 * May sleep.  Returns when every buffer open at the call is closed.
 */
void pt_flush(struct pt_session *sess, bool all, unsigned long missed)
{
	unsigned int cpu;

	mutex_lock(&sess->flush_lock);
	cpus_read_lock();

	/*
	 * Hits the kprobe core dropped (a probe firing inside another on
	 * the same CPU) are only counted globally.  Report them as lost on
	 * the first online CPU, so that the stream's loss total stays exact;
	 * the flush below then carries them out in that CPU's next chunk.
	 * The count only grows; an older one than the last reported adds
	 * nothing.
	 */
	if (missed > sess->missed_seen) {
		struct pt_missed arg = {
			.sess = sess,
			.count = missed - sess->missed_seen,
		};

		sess->missed_seen = missed;
		smp_call_function_single(cpumask_first(cpu_online_mask),
					 pt_add_missed_ipi, &arg, true);
	}

	on_each_cpu_cond(all ? pt_needs_flush : pt_needs_timed_flush,
			 pt_flush_ipi, sess, true);
	for_each_possible_cpu(cpu) {
		if (!cpu_online(cpu))
			pt_flush_one(&sess->cpus[cpu], true);
	}

	cpus_read_unlock();
	mutex_unlock(&sess->flush_lock);
}

struct pt_overwrite {
	struct pt_session	*sess;
	bool			on;
};

static void pt_overwrite_ipi(void *info)
{
	struct pt_overwrite *o = info;

	/*
	 * One bool, which the writer reads once per buffer rotation: an NMI
	 * that comes between sees the old or the new setting, either sound,
	 * so this change needs no @busy.
	 */
	o->sess->cpus[smp_processor_id()].overwrite = o->on;
}

/**
 * pt_set_overwrite - switch every writer to overwriting or to dropping
 * @sess: the session
 * @on: true: a full ring overwrites its oldest chunk (flight recorder);
 *      false: a full ring drops new events and counts them as lost
 *
 * A ragged barrier, like pt_flush(): when it returns, no writer is inside
 * pt_emit() with the old setting, and every writer has published the
 * consumed positions it advanced (the IPI's completion orders the target's
 * stores before our return).  Only then may a consumer move consumed in
 * flight recorder mode.  May sleep.
 */
void pt_set_overwrite(struct pt_session *sess, bool on)
{
	struct pt_overwrite arg = { .sess = sess, .on = on };
	unsigned int cpu;

	mutex_lock(&sess->flush_lock);
	cpus_read_lock();
	on_each_cpu(pt_overwrite_ipi, &arg, true);
	for_each_possible_cpu(cpu) {
		if (!cpu_online(cpu))
			sess->cpus[cpu].overwrite = on;
	}
	cpus_read_unlock();
	mutex_unlock(&sess->flush_lock);
}

struct pt_each {
	struct pt_session	*sess;
	void			(*fn)(struct pt_cpu *c, bool online);
};

static void pt_each_ipi(void *info)
{
	struct pt_each *e = info;
	struct pt_cpu *c = &e->sess->cpus[smp_processor_id()];

	if (WARN_ON_ONCE(!pt_writer_enter(c)))
		return;
	e->fn(c, true);
	pt_writer_exit(c);
}

/*
 * Change every CPU's writer state with @fn, as the flushes do: in an IPI
 * on each online CPU (interrupts off there, the state taken), and here
 * for each offline one, which stays offline meanwhile.  May sleep.
 */
static void pt_writers_each(struct pt_session *sess,
			    void (*fn)(struct pt_cpu *c, bool online))
{
	struct pt_each e = { sess, fn };
	unsigned int cpu;

	mutex_lock(&sess->flush_lock);
	cpus_read_lock();
	on_each_cpu(pt_each_ipi, &e, true);
	for_each_possible_cpu(cpu) {
		if (!cpu_online(cpu))
			fn(&sess->cpus[cpu], false);
	}
	cpus_read_unlock();
	mutex_unlock(&sess->flush_lock);
}

/*
 * An online CPU's floor is its own TSC, read after every event it
 * stamped from it; an offline CPU's, ours as pt_offline_time() bounds it.
 */
static void pt_leave_tsc_one(struct pt_cpu *c, bool online)
{
	u64 floor = pt_tsc_now();

	pt_writer_leave_tsc(c, online ? floor : pt_offline_time(c, floor));
}

/**
 * pt_buffers_leave_tsc - move every CPU's writer from the TSC to local_clock()
 * @sess: a session whose events are stamped from the TSC, static key on
 *
 * A ragged barrier, as pt_flush() is: each online CPU changes over at an
 * instant between two of its events, from a floor at its own TSC time
 * (pt_writer_leave_tsc()).  May sleep.
 */
void pt_buffers_leave_tsc(struct pt_session *sess)
{
	pt_writers_each(sess, pt_leave_tsc_one);
}

static void pt_settle_clock_one(struct pt_cpu *c, bool online)
{
	pt_writer_settle_clock(c);
}

/**
 * pt_buffers_settle_clock - give every CPU its fast path back
 * @sess: the session pt_buffers_leave_tsc() moved
 *
 * Call once the static key is off and every hook that tested it before
 * is done (pt_hooks_sync()): no TSC time can come any more.  May sleep.
 */
void pt_buffers_settle_clock(struct pt_session *sess)
{
	pt_writers_each(sess, pt_settle_clock_one);
}

/**
 * pt_flush_late_losses - report losses the final flush had no buffer for
 * @sess: a stopped session
 *
 * A CPU whose buffers were all waiting for the reader when the session
 * stopped could not put its last losses in a chunk.  Once the reader has
 * drained it, buffers are free again, and one more flush carries them.
 *
 * Return: whether there were such losses (and a chunk now holds them).
 */
bool pt_flush_late_losses(struct pt_session *sess)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		if (pt_writer_pending(&sess->cpus[cpu])) {
			pt_flush(sess, true, 0);
			return true;
		}
	}
	return false;
}

/*
 * The reader's side.  Everything below runs under sess->read_lock.
 */

/* A closed chunk of @c not yet consumed, or NULL. */
static struct pagetrace_chunk *pt_reader_peek(struct pt_session *sess,
					      struct pt_cpu *c)
{
	u64 consumed;

	lockdep_assert_held(&sess->read_lock);
	/* Only we (read_lock) move consumed while read() may be used. */
	consumed = c->meta->consumed;
	/* Pairs with the release in pt_close_chunk(). */
	if (consumed == smp_load_acquire(&c->meta->produced))
		return NULL;
	return c->bufs + (consumed % sess->nr_bufs) * sess->chunk_size;
}

static void pt_reader_put(struct pt_cpu *c)
{
	/*
	 * Our copy of the chunk is done before the writer may reuse it;
	 * pairs with the acquire in pt_open_chunk().
	 */
	smp_store_release(&c->meta->consumed, c->meta->consumed + 1);
}

/* Pick the next CPU with a closed chunk, round-robin; false if none. */
static bool pt_reader_get(struct pt_session *sess)
{
	unsigned int i;

	for (i = 0; i < sess->nr_cpus; i++) {
		int cpu = (sess->rd_next + i) % sess->nr_cpus;
		struct pagetrace_chunk *ch;

		if (!cpu_possible(cpu))
			continue;
		ch = pt_reader_peek(sess, &sess->cpus[cpu]);
		if (!ch)
			continue;
		sess->rd_cpu = cpu;
		sess->rd_off = 0;
		sess->rd_len = sizeof(*ch) +
			       pt_from_le32(ch->nr_words) * sizeof(u64);
		sess->rd_next = (cpu + 1) % sess->nr_cpus;
		return true;
	}
	return false;
}

/* Whether some CPU has a closed chunk not yet consumed; for wait queues. */
bool pt_reader_ready(struct pt_session *sess)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct pagetrace_meta_cpu *m = sess->cpus[cpu].meta;

		/* Acquire: pairs with the release in pt_close_chunk(). */
		if (READ_ONCE(m->consumed) != smp_load_acquire(&m->produced))
			return true;
	}
	return false;
}

/* Whether every closed chunk is consumed (and no read() is mid-chunk). */
bool pt_reader_drained(struct pt_session *sess)
{
	lockdep_assert_held(&sess->read_lock);
	return sess->rd_cpu < 0 && !pt_reader_ready(sess);
}

/**
 * pt_read_chunks - copy closed chunks to userspace
 * @sess: the session, read_lock held
 * @buf: user buffer
 * @count: its size
 *
 * Copies whole and partial chunks without waiting; a chunk is given back
 * to its writer once the last of its bytes is copied.
 *
 * Return: bytes copied (0 when no chunk is ready), or -EFAULT if @buf is
 * bad before anything was copied.
 */
ssize_t pt_read_chunks(struct pt_session *sess, char __user *buf, size_t count)
{
	size_t done = 0;

	lockdep_assert_held(&sess->read_lock);
	while (done < count) {
		struct pt_cpu *c;
		void *src;
		size_t n;

		if (sess->rd_cpu < 0 && !pt_reader_get(sess))
			break;
		c = &sess->cpus[sess->rd_cpu];
		src = c->bufs + (c->meta->consumed % sess->nr_bufs) *
		      sess->chunk_size + sess->rd_off;
		n = min_t(size_t, count - done, sess->rd_len - sess->rd_off);
		if (copy_to_user(buf + done, src, n))
			return done ? done : -EFAULT;
		done += n;
		sess->rd_off += n;
		if (sess->rd_off == sess->rd_len) {
			pt_reader_put(c);
			sess->rd_cpu = -1;
		}
	}
	return done;
}
