// SPDX-License-Identifier: GPL-2.0
/*
 * The session lifecycle.  A session is one open of /dev/pagetrace: it
 * allocates the buffers, builds the header, attaches the probes and starts
 * the flush timer; stopping undoes that in reverse.  Probes are attached
 * only while a session runs, so a loaded but idle module costs the
 * allocator nothing.
 */
#include <linux/completion.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "pagetrace.h"

/*
 * Parameters are read when a session starts; a change through
 * /sys/module/pagetrace/parameters applies to the next session.  Each is
 * range-checked when set, so a bad value fails insmod with a message that
 * names the parameter and the allowed range.
 */
static unsigned int pt_buf_size = 64 << 10;
static unsigned int pt_nr_bufs = 16;
static unsigned int pt_flush_ms = 250;

static struct pt_uint_param pt_buf_size_param = {
	&pt_buf_size, PAGE_SIZE, 16 << 20, PAGE_SIZE
};
module_param_cb(buf_size, &pt_uint_param_ops, &pt_buf_size_param, 0644);
MODULE_PARM_DESC(buf_size,
		 "Bytes per buffer, chunk header included (default 65536)");

static struct pt_uint_param pt_nr_bufs_param = { &pt_nr_bufs, 2, 4096, 1 };
module_param_cb(nr_bufs, &pt_uint_param_ops, &pt_nr_bufs_param, 0644);
MODULE_PARM_DESC(nr_bufs, "Buffers per CPU (default 16)");

static struct pt_uint_param pt_flush_ms_param = { &pt_flush_ms, 10, 500, 1 };
module_param_cb(flush_ms, &pt_uint_param_ops, &pt_flush_ms_param, 0644);
MODULE_PARM_DESC(flush_ms,
		 "Flush timer period in ms; events reach the reader within twice this (default 250)");

/*
 * recording (read-only): whether a session records now, from the moment
 * every CPU writes (all its probes attached) to the moment they stop.
 * For scripts and tests that must allocate only once their pages will be
 * seen: a probe listed in /sys/kernel/debug/kprobes is no sign of it.
 */
static bool pt_recording;
module_param_named(recording, pt_recording, bool, 0444);
MODULE_PARM_DESC(recording, "Read-only: a session is recording now");

/*
 * Task records and names (writer.c); read at session start.  On by
 * default: both are pid words, which any v1 decoder takes in its stride.
 */
static bool pt_tasks_on = true;
module_param_named(tasks, pt_tasks_on, bool, 0644);
MODULE_PARM_DESC(tasks,
		 "Record which process each event belongs to: task records and names (default 1)");

/* Call stacks of about one allocation in this many pages (stacks.c). */
static unsigned int pt_stack_rate;
static struct pt_uint_param pt_stack_rate_param = { &pt_stack_rate, 0, 1 << 20, 1 };
module_param_cb(stack_rate, &pt_uint_param_ops, &pt_stack_rate_param, 0644);
MODULE_PARM_DESC(stack_rate,
		 "Take the call stack of about one allocation in this many pages per CPU; 0: none (default 0)");

/**
 * pt_session_flush - close every CPU's partly filled buffer, losses included
 * @sess: the session
 * @all: every buffer with events, not only those open a whole period
 *
 * pt_flush(), with the probe misses the hooks counted since the last
 * flush added to the stream's losses.  May sleep.
 */
void pt_session_flush(struct pt_session *sess, bool all)
{
	pt_flush(sess, all, pt_session_missed(sess));
}

/**
 * pt_session_missed - the probe misses that cost this session events
 * @sess: the session
 *
 * Those counted between the writers' publishing and their clearing: a
 * probe that missed before or after could have recorded nothing.
 *
 * Return: the count so far; it only grows.
 */
unsigned long pt_session_missed(struct pt_session *sess)
{
	unsigned long now;

	/* Acquire: @missed_end is set before @writers_cleared. */
	if (smp_load_acquire(&sess->writers_cleared))
		now = sess->missed_end;
	else
		now = pt_hooks_missed();
	return now - sess->missed_base;
}

/**
 * pt_flush_work_arm - run the timed flush again in flush_ms
 * @sess: the session
 *
 * On the unbound workqueue: the flush reaches every CPU by IPI anyway, so
 * the work need not run on the CPU whose timer fired, and it keeps to the
 * CPUs unbound work may use (not those isolated from it).
 */
static void pt_flush_work_arm(struct pt_session *sess)
{
	queue_delayed_work(pt_unbound_wq, &sess->flush_work,
			   msecs_to_jiffies(sess->flush_ms));
}

static void pt_flush_work_fn(struct work_struct *work)
{
	struct pt_session *sess = container_of(to_delayed_work(work),
					       struct pt_session, flush_work);

	/*
	 * A flight recorder keeps whole buffers: closing stale ones early
	 * would only shorten the history its ring holds.  FREEZE and stop
	 * flush it.
	 */
	if (READ_ONCE(sess->mode) != PAGETRACE_MODE_FLIGHT)
		pt_session_flush(sess, false);
	/* Chunks closed on a CPU going down queued no wakeup: pt_close_chunk(). */
	if (READ_ONCE(sess->wake_pending)) {
		WRITE_ONCE(sess->wake_pending, false);
		wake_up_interruptible(&sess->wq);
	}
	pt_flush_work_arm(sess);
}

/*
 * How long a start waits for its Tasks RCU grace period.  A task that
 * neither blocks nor returns to user space holds the grace period back
 * (a kthread looping on cond_resched(), which is no quiescent state for
 * Tasks RCU), and the opener waits in open() meanwhile: past this the
 * start goes on without it.
 */
#define PT_TASKS_WAIT_MAX	HZ

/*
 * The grace period is waited for by synchronize_rcu_tasks() on
 * pt_tasks_wq, not by a call_rcu_tasks() callback: newer kernels batch
 * call_rcu_tasks() callbacks for a while before they start a grace period
 * for them (rcupdate.rcu_tasks_lazy_ms), synchronize_rcu_tasks() never
 * (design.rst has the figures).  The work item may outlive an opener that
 * stops waiting (a timeout or a fatal signal): the wait's state is freed
 * by whichever of the two is last, and pt_sessions_exit() destroys the
 * workqueue, which waits for the item.  A grace period held back for
 * minutes leaves the kworker blocked that long: the kernel's hung task
 * check reports it on kernels whose Tasks RCU waits uninterruptibly
 * (5.10, 6.1), as it would any synchronize_rcu_tasks() caller.
 */
static struct workqueue_struct *pt_tasks_wq;

struct pt_tasks_wait {
	struct work_struct	work;
	struct completion	done;
	refcount_t		users;
};

static void pt_tasks_wait_fn(struct work_struct *work)
{
	struct pt_tasks_wait *w = container_of(work, struct pt_tasks_wait, work);

	synchronize_rcu_tasks();
	complete(&w->done);
	if (refcount_dec_and_test(&w->users))
		kfree(w);
}

/*
 * Wait for a Tasks RCU grace period, at most PT_TASKS_WAIT_MAX: 0 (ended
 * or given up on, which the kernel log says), or -ERESTARTSYS on a fatal
 * signal, -ENOMEM.  Without CONFIG_TASKS_RCU, synchronize_rcu_tasks() is
 * synchronize_rcu(), enough on 5.10's non-preemptible kernels: the
 * window has no preemption point.
 */
static int pt_wait_tasks(void)
{
	struct pt_tasks_wait *w = kmalloc(sizeof(*w), GFP_KERNEL);
	long left;

	if (!w)
		return -ENOMEM;
	INIT_WORK(&w->work, pt_tasks_wait_fn);
	init_completion(&w->done);
	refcount_set(&w->users, 2);
	queue_work(pt_tasks_wq, &w->work);
	left = wait_for_completion_killable_timeout(&w->done, PT_TASKS_WAIT_MAX);
	if (refcount_dec_and_test(&w->users))
		kfree(w);
	if (!left)
		pr_info_ratelimited("pagetrace: a session started before a Tasks RCU grace period ended (a task held it back for %u ms): an allocation preempted across the memory map's walk may show as an allocation of an allocated block\n",
				    jiffies_to_msecs(PT_TASKS_WAIT_MAX));
	return left < 0 ? left : 0;
}

/**
 * pt_sessions_init - set up what session starts share, at module init
 *
 * Return: 0 or -ENOMEM.
 */
int pt_sessions_init(void)
{
	pt_tasks_wq = alloc_workqueue("pagetrace_wait", WQ_UNBOUND, 0);
	return pt_tasks_wq ? 0 : -ENOMEM;
}

/**
 * pt_sessions_exit - wait for what sessions left running, at module exit
 *
 * A start given up on leaves its grace period's work item running;
 * destroying the workqueue waits for it.
 */
void pt_sessions_exit(void)
{
	destroy_workqueue(pt_tasks_wq);
}

/*
 * The session whose writers may run or still be flushed, for
 * pt_sessions_leave_tsc(): set before they are published, cleared when
 * the session is freed (a stopped session's flushes open chunks too).
 * pt_live_lock guards it, and is held across the whole change of clock,
 * so that a session cannot start on the TSC in the middle of it, nor be
 * freed under it.  Lock order: sess->state_lock (stop), pt_live_lock,
 * then pt_clock_lock or sess->flush_lock.
 */
static struct pt_session *pt_live;
static DEFINE_MUTEX(pt_live_lock);

static void pt_session_set_live(struct pt_session *sess)
{
	mutex_lock(&pt_live_lock);
	pt_live = sess;
	mutex_unlock(&pt_live_lock);
}

static void pt_session_clear_live(struct pt_session *sess)
{
	mutex_lock(&pt_live_lock);
	if (pt_live == sess)
		pt_live = NULL;
	mutex_unlock(&pt_live_lock);
}

/**
 * pt_sessions_leave_tsc - the system is about to sleep: off the TSC
 *
 * No session may choose the TSC from here until the resume
 * (pt_clock_sleep_end()).  If one stamps with it, each CPU's writer
 * changes over to local_clock() from a floor at its own last TSC time
 * (pt_buffers_leave_tsc()), then the TSC's fast path is turned off, and
 * once no hook can still be on it (pt_hooks_sync(): a hook tests the
 * static key before it turns interrupts off, and may be preempted there
 * on kernels whose tracepoints run under SRCU) the writers get their
 * fast path back.
 * May sleep.
 */
void pt_sessions_leave_tsc(void)
{
	struct pt_session *sess;

	mutex_lock(&pt_live_lock);
	if (!pt_clock_sleep_begin())
		goto unlock;
	sess = pt_live;
	/* The key is on for the newest session's choice: this one's. */
	if (sess && (sess->header_flags & PAGETRACE_CLOCK_MASK) !=
		    PAGETRACE_CLOCK_TSC)
		sess = NULL;
	if (sess)
		pt_buffers_leave_tsc(sess);
	pt_clock_leave_tsc();
	/*
	 * Also with no session: one about to publish its writers, which
	 * waits for pt_live_lock, must find no hook still on the TSC's path.
	 */
	pt_hooks_sync();
	if (sess)
		pt_buffers_settle_clock(sess);
unlock:
	mutex_unlock(&pt_live_lock);
}

/**
 * pt_session_start - set up buffers, header and probes for a new session
 * @out: the session, on success
 *
 * Called by open(); the device lets only one session exist at a time.
 * Sessions start in stream mode; PAGETRACE_IOC_SET_MODE may switch to
 * flight recorder mode right after.
 *
 * Return: 0 or -errno.
 */
int pt_session_start(struct pt_session **out)
{
	struct pt_session *sess;
	int ret;

	ret = pt_header_pfns_fit();
	if (ret)
		return ret;
	sess = kzalloc(sizeof(*sess), GFP_KERNEL);
	if (!sess)
		return -ENOMEM;
	sess->nr_cpus = nr_cpu_ids;
	sess->chunk_size = READ_ONCE(pt_buf_size);
	sess->nr_bufs = READ_ONCE(pt_nr_bufs);
	sess->flush_ms = READ_ONCE(pt_flush_ms);
	sess->backend = pt_hooks_backend();
	sess->stack_rate = READ_ONCE(pt_stack_rate);
	sess->header_flags = pt_clock_select();
	if (pt_snapshot_wanted())
		sess->header_flags |= PAGETRACE_FLAG_SNAPSHOT;
	if (READ_ONCE(pt_tasks_on))
		sess->header_flags |= PAGETRACE_FLAG_TASKS;
	if (sess->stack_rate)
		sess->header_flags |= PAGETRACE_FLAG_STACKS;
	sess->rd_cpu = -1;
	mutex_init(&sess->read_lock);
	mutex_init(&sess->flush_lock);
	mutex_init(&sess->state_lock);
	init_waitqueue_head(&sess->wq);
	INIT_DELAYED_WORK(&sess->flush_work, pt_flush_work_fn);

	ret = pt_filter_setup(&sess->filter);
	if (ret)
		goto free_session;
	if (sess->filter.tests)
		sess->header_flags |= PAGETRACE_FLAG_FILTERED;
	ret = pt_buffers_alloc(sess);
	if (ret)
		goto release_filter;
	ret = pt_stacks_alloc(sess);
	if (ret)
		goto free_buffers;
	/* The header's start time precedes every event. */
	ret = pt_header_build(sess);
	if (ret)
		goto free_stacks;
	/* Room for the counters at stop, which may not fail for want of it. */
	sess->stop_counters = kzalloc(pt_counters_size(sess->counters_max),
				      GFP_KERNEL);
	if (!sess->stop_counters) {
		ret = -ENOMEM;
		goto free_header;
	}
	/* Moves the positions into the meta area, which copies the header. */
	ret = pt_meta_init(sess);
	if (ret)
		goto free_stop_counters;

	ret = pt_hooks_register(sess->backend, &sess->uncovered);
	if (ret)
		goto free_meta;
	/*
	 * Every probe attached, then every CPU writes: attaching takes
	 * milliseconds per probe (text patching, grace periods), and a
	 * session that wrote as each came on would record allocations whose
	 * frees no probe saw yet (seen on every kernel: the first 100 ms of
	 * a trace held allocations and not one free).  Until here the probes
	 * find no writer and record nothing, and what they miss costs the
	 * session nothing.
	 */
	sess->missed_base = pt_hooks_missed();
	pt_session_set_live(sess);
	/* Right before the first writer is published: no event precedes it. */
	pt_header_set_attach(sess, ktime_get_ns() - sess->start_mono_ns);
	pt_writers_publish(sess);
	WRITE_ONCE(pt_recording, true);
	/*
	 * The memory map, with the probes already attached: a page allocated
	 * or freed meanwhile shows up in the snapshot or as an event (or
	 * both), never in neither.
	 */
	if (sess->header_flags & PAGETRACE_FLAG_SNAPSHOT) {
		ret = pt_snapshot_build(sess);
		if (ret)
			goto clear_writers;
		/*
		 * An allocation takes its page off the free lists before its
		 * event fires.  A task preempted in between, across the
		 * walk's end, would have its page listed by the walk and its
		 * event after the start counters: an allocation of an
		 * allocated block to the analysis.  A Tasks RCU grace period
		 * ends once every task runnable at its start has blocked or
		 * run in user space, so a task preempted there has fired its
		 * event by then.  A task that sleeps in that window (memcg
		 * charging, a contended lock on PREEMPT_RT) is not waited
		 * for: see design.rst.
		 */
		ret = pt_wait_tasks();
		if (ret)
			goto free_snapshot;
	}
	/* The kernel's count as the trace's own starts: snapshot + events. */
	pt_header_set_counters(sess);
	pt_flush_work_arm(sess);
	*out = sess;
	return 0;

free_snapshot:
	pt_snapshot_free(sess);
clear_writers:
	WRITE_ONCE(pt_recording, false);
	pt_writers_clear();
	pt_hooks_unregister();
	synchronize_rcu();
	pt_session_clear_live(sess);
free_meta:
	pt_meta_free(sess);
free_stop_counters:
	kfree(sess->stop_counters);
free_header:
	kfree(sess->header);
free_stacks:
	pt_stacks_free(sess);
free_buffers:
	pt_buffers_free(sess);
release_filter:
	pt_filter_release(&sess->filter);
free_session:
	kfree(sess);
	return ret;
}

/*
 * The end of the trace: hooks still running finish on their own; new ones
 * see NULL.  Called from pt_counters_read_at_stop(): must not sleep.
 */
static void pt_session_end_writes(void *arg)
{
	struct pt_session *sess = arg;

	WRITE_ONCE(pt_recording, false);
	pt_writers_clear();
	sess->missed_end = pt_hooks_missed();
}

/**
 * pt_session_stop - stop recording and close every buffer
 * @sess: the session
 *
 * After it returns no event is added, and every event recorded is in a
 * closed chunk (or counted as lost); readers get the rest, then EOF.
 * Idempotent; may sleep.
 */
void pt_session_stop(struct pt_session *sess)
{
	mutex_lock(&sess->state_lock);
	if (sess->stopped)
		goto unlock;

	/*
	 * The writers' clearing, and the kernel's count at that instant, the
	 * trace's end (counters.c): before the detaching, which takes
	 * milliseconds of grace periods.
	 */
	pt_counters_read_at_stop(sess->stop_counters, sess->counters_max,
				 pt_session_end_writes, sess);
	/* Release: pt_session_missed() reads @missed_end after this. */
	smp_store_release(&sess->writers_cleared, true);
	pt_hooks_unregister();
	/* Also waits out handlers that read a writer before it was cleared. */
	synchronize_rcu();
	cancel_delayed_work_sync(&sess->flush_work);
	/* A flight recorder still overwrites here, keeping the newest. */
	pt_session_flush(sess, true);
	/*
	 * From now on only consumers move consumed: late-loss flushes must
	 * not overwrite chunks a reader is copying.
	 */
	if (sess->mode == PAGETRACE_MODE_FLIGHT)
		pt_set_overwrite(sess, false);

	/* Release: the chunks flushed above are visible before this. */
	smp_store_release(&sess->stopped, true);
	pt_meta_set_flags(sess, PAGETRACE_META_STOPPED, 0);
	wake_up_interruptible(&sess->wq);
unlock:
	mutex_unlock(&sess->state_lock);
}

/* Free a stopped session; nothing may use it any more. */
void pt_session_free(struct pt_session *sess)
{
	pt_session_clear_live(sess);
	pt_snapshot_free(sess);
	pt_stacks_free(sess);
	pt_buffers_free(sess);
	pt_meta_free(sess);
	pt_filter_release(&sess->filter);
	kfree(sess->stop_counters);
	kfree(sess->header);
	kfree(sess);
}
