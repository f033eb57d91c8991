// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace: record every page the kernel allocates and frees.
 *
 * Module init and exit: choose the hooks (attaching none), then offer
 * /dev/pagetrace, whose every open is a session (session.c).
 */
#include <linux/init.h>
#include <linux/module.h>

#include "pagetrace.h"

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
	ret = pt_mem_guard_init();
	if (ret)
		return ret;
	ret = pt_sleep_init();
	if (ret)
		goto exit_mem_guard;
	ret = pt_sessions_init();
	if (ret)
		goto exit_sleep;
	ret = pt_device_register();
	if (ret)
		goto exit_sessions;
	return 0;

exit_sessions:
	pt_sessions_exit();
exit_sleep:
	pt_sleep_exit();
exit_mem_guard:
	pt_mem_guard_exit();
	return ret;
}

static void __exit pt_exit(void)
{
	/* The open file pins the module, so no session is left here. */
	pt_device_unregister();
	pt_sessions_exit();
	pt_sleep_exit();
	pt_mem_guard_exit();
}

module_init(pt_init);
module_exit(pt_exit);

MODULE_AUTHOR("pagetrace developers");
MODULE_DESCRIPTION("Trace every page allocation and free in the Go page trace format");
MODULE_LICENSE("GPL");
