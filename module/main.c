// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace: record every page the kernel allocates and frees.
 *
 * Module init/exit, the parameters, and the session lifecycle.  A session
 * is one open of /dev/pagetrace: it allocates the buffers, builds the
 * header, attaches the probes and starts the flush timer; stopping undoes
 * that in reverse.  Probes are attached only while a session runs, so a
 * loaded but idle module costs the allocator nothing.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "pagetrace.h"

unsigned int pt_buf_size = 64 << 10;
unsigned int pt_nr_bufs = 16;
unsigned int pt_flush_ms = 250;

/*
 * Parameters are read when a session starts; a change through
 * /sys/module/pagetrace/parameters applies to the next session.  Each is
 * range-checked when set, so a bad value fails insmod with a message that
 * names the parameter and the allowed range.
 */
struct pt_uint_param {
	unsigned int	*value;
	unsigned int	min;
	unsigned int	max;
	unsigned int	step;	/* the value must be a multiple of this */
};

static int pt_param_set(const char *val, const struct kernel_param *kp)
{
	const struct pt_uint_param *p = kp->arg;
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < p->min || v > p->max ||
	    v % p->step) {
		pr_err("pagetrace: %s=%s is invalid: allowed %u..%u%s\n",
		       kp->name, val, p->min, p->max,
		       p->step > 1 ? ", a multiple of the page size" : "");
		return -EINVAL;
	}
	WRITE_ONCE(*p->value, v);
	return 0;
}

static int pt_param_get(char *buf, const struct kernel_param *kp)
{
	const struct pt_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*p->value));
}

static const struct kernel_param_ops pt_param_ops = {
	.set = pt_param_set,
	.get = pt_param_get,
};

/*
 * Parameters that take one of a list of names (hook=, clock=): the value
 * is the name's index.  A bad name is refused with the allowed ones named.
 */
static int pt_choice_param_set(const char *val, const struct kernel_param *kp)
{
	const struct pt_choice_param *p = kp->arg;
	int i = __sysfs_match_string(p->names, p->nr, val);
	char allowed[64];
	size_t len = 0;
	unsigned int k;

	if (i < 0) {
		for (k = 0; k < p->nr; k++)
			len += scnprintf(allowed + len, sizeof(allowed) - len,
					 "%s%s", k ? ", " : "", p->names[k]);
		pr_err("pagetrace: %s=%s is invalid: allowed %s\n", kp->name,
		       val, allowed);
		return -EINVAL;
	}
	WRITE_ONCE(*p->value, i);
	return 0;
}

static int pt_choice_param_get(char *buf, const struct kernel_param *kp)
{
	const struct pt_choice_param *p = kp->arg;

	return sysfs_emit(buf, "%s\n", p->names[READ_ONCE(*p->value)]);
}

const struct kernel_param_ops pt_choice_param_ops = {
	.set = pt_choice_param_set,
	.get = pt_choice_param_get,
};

static struct pt_uint_param pt_buf_size_param = {
	&pt_buf_size, PAGE_SIZE, 16 << 20, PAGE_SIZE
};
module_param_cb(buf_size, &pt_param_ops, &pt_buf_size_param, 0644);
MODULE_PARM_DESC(buf_size,
		 "Bytes per buffer, chunk header included (default 65536)");

static struct pt_uint_param pt_nr_bufs_param = { &pt_nr_bufs, 2, 4096, 1 };
module_param_cb(nr_bufs, &pt_param_ops, &pt_nr_bufs_param, 0644);
MODULE_PARM_DESC(nr_bufs, "Buffers per CPU (default 16)");

static struct pt_uint_param pt_flush_ms_param = { &pt_flush_ms, 10, 500, 1 };
module_param_cb(flush_ms, &pt_param_ops, &pt_flush_ms_param, 0644);
MODULE_PARM_DESC(flush_ms,
		 "Flush timer period in ms; events reach the reader within twice this (default 250)");

/*
 * Task records and names (writer.c); read at session start.  On by
 * default: both are pid words, which any v1 decoder takes in its stride.
 */
bool pt_tasks_on = true;
module_param_named(tasks, pt_tasks_on, bool, 0644);
MODULE_PARM_DESC(tasks,
		 "Record which process each event belongs to: task records and names (default 1)");

/* Call stacks of about one allocation in this many pages (stacks.c). */
unsigned int pt_stack_rate;
static struct pt_uint_param pt_stack_rate_param = { &pt_stack_rate, 0, 1 << 20, 1 };
module_param_cb(stack_rate, &pt_param_ops, &pt_stack_rate_param, 0644);
MODULE_PARM_DESC(stack_rate,
		 "Take the call stack of about one allocation in this many pages per CPU; 0: none (default 0)");

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
	if (sess->filter.active)
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
	/* Moves the positions into the meta area, which copies the header. */
	ret = pt_meta_init(sess);
	if (ret)
		goto free_header;

	pt_writers_publish(sess);
	ret = pt_hooks_register(sess->backend, &sess->uncovered);
	if (ret)
		goto clear_writers;
	pt_header_set_backend(sess);
	/*
	 * The memory map, with the probes already attached: a page allocated
	 * or freed meanwhile shows up in the snapshot or as an event (or
	 * both), never in neither.
	 */
	if (sess->header_flags & PAGETRACE_FLAG_SNAPSHOT) {
		ret = pt_snapshot_build(sess);
		if (ret)
			goto unregister_hooks;
	}
	pt_flush_work_arm(sess);
	*out = sess;
	return 0;

unregister_hooks:
	pt_hooks_unregister();
clear_writers:
	pt_writers_clear();
	synchronize_rcu();
	pt_meta_free(sess);
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

	/* Hooks still running finish on their own; new ones see NULL. */
	pt_writers_clear();
	pt_hooks_unregister();
	/* Also waits out handlers that read a writer before it was cleared. */
	synchronize_rcu();
	cancel_delayed_work_sync(&sess->flush_work);
	/* A flight recorder still overwrites here, keeping the newest. */
	pt_flush(sess, true);
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
	pt_snapshot_free(sess);
	pt_stacks_free(sess);
	pt_buffers_free(sess);
	pt_meta_free(sess);
	pt_filter_release(&sess->filter);
	kfree(sess->header);
	kfree(sess);
}

static int __init pt_init(void)
{
	int ret;

	/*
	 * Choose the hooks, attaching none, so that a kernel we cannot
	 * trace completely fails here, with what is missing named, not at
	 * the first open.
	 */
	ret = pt_hooks_init();
	if (ret)
		return ret;

	return pt_device_register();
}

static void __exit pt_exit(void)
{
	/* The open file pins the module, so no session is left here. */
	pt_device_unregister();
}

module_init(pt_init);
module_exit(pt_exit);

MODULE_AUTHOR("pagetrace developers");
MODULE_DESCRIPTION("Trace every page allocation and free in the Go page trace format");
MODULE_LICENSE("GPL");
