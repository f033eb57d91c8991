// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_gt: a kernel thread that holds Tasks RCU grace periods back.
 * A Tasks RCU grace period ends once every task runnable at its start has
 * blocked or run in user space; this thread does neither, it only yields
 * the CPU (cond_resched(), which is no quiescent state for Tasks RCU).  A
 * session start, which waits for such a grace period after its memory
 * map, then waits as long as spin_on holds it, and the test kills the
 * opener.  spin_off, or the module's exit, stops the thread.
 */
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/sched.h>

#include "gt.h"

static struct task_struct *gt_spinner;

static int gt_spin_fn(void *unused)
{
	while (!kthread_should_stop())
		cond_resched();
	return 0;
}

void gt_spin_on(const char *op)
{
	struct task_struct *t;

	if (!IS_ENABLED(CONFIG_TASKS_RCU)) {
		gt_skip(op, "no CONFIG_TASKS_RCU: the start waits for a normal RCU grace period");
		return;
	}
	if (!gt_spinner) {
		t = kthread_run(gt_spin_fn, NULL, "pt_gt_spin");
		if (IS_ERR(t)) {
			gt_skip(op, "kthread_run() failed");
			return;
		}
		/* The lowest weight: the rest of the machine barely notices. */
		set_user_nice(t, MAX_NICE);
		gt_spinner = t;
	}
	gt_line("%s held\n", op);
}

void gt_spin_off(const char *op)
{
	gt_spin_exit();
	gt_line("%s released\n", op);
}

/* At module exit, and for spin_off: stop the thread if it runs. */
void gt_spin_exit(void)
{
	if (gt_spinner)
		kthread_stop(gt_spinner);
	gt_spinner = NULL;
}
