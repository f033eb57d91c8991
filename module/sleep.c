// SPDX-License-Identifier: GPL-2.0
/*
 * What a system sleep does to a session: its clock.
 *
 * The TSC may restart across a suspend or a hibernation, and the kernel
 * re-bases local_clock() on resume, which a session stamping from the TSC
 * with a fixed offset would not follow (clock.c).  So before the system
 * sleeps, a session on the TSC moves to local_clock() for the rest of its
 * life (pt_sessions_leave_tsc()).  After the resume, new sessions may
 * choose the TSC again.
 */
#include <linux/notifier.h>
#include <linux/suspend.h>

#include "pagetrace.h"

/* Runs in the task that started the transition; may sleep. */
static int pt_sleep_pm_event(struct notifier_block *nb, unsigned long action,
			     void *unused)
{
	switch (action) {
	case PM_SUSPEND_PREPARE:
	case PM_HIBERNATION_PREPARE:
	case PM_RESTORE_PREPARE:
		pt_sessions_leave_tsc();
		break;
	case PM_POST_SUSPEND:
	case PM_POST_HIBERNATION:
	case PM_POST_RESTORE:
		pt_clock_sleep_end();
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block pt_sleep_pm_nb = {
	.notifier_call = pt_sleep_pm_event,
};

/**
 * pt_sleep_init - watch for suspend and hibernation
 *
 * Return: 0 or -errno.
 */
int pt_sleep_init(void)
{
	return register_pm_notifier(&pt_sleep_pm_nb);
}

/** pt_sleep_exit - undo pt_sleep_init() */
void pt_sleep_exit(void)
{
	unregister_pm_notifier(&pt_sleep_pm_nb);
}
