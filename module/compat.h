/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences pagetrace meets, in one place.  Each PT_HAVE_*
 * comes from a test of the headers we build against, run by Kbuild (see
 * Kbuild), never from the kernel's version: distributions backport.
 */
#ifndef _PAGETRACE_COMPAT_H
#define _PAGETRACE_COMPAT_H

#include <linux/gfp.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

/* struct folio_batch moved out of <linux/pagevec.h> in 7.0. */
#ifdef PT_HAVE_FOLIO_BATCH_H
#include <linux/folio_batch.h>
#elif defined(PT_HAVE_FOLIO_BATCH)
#include <linux/pagevec.h>
#endif
#if defined(PT_HAVE_FOLIO_BATCH) || defined(PT_HAVE_FOLIO_BATCH_H)
#define PT_HAVE_FOLIOS	1
#endif

/*
 * The bulk allocator (5.13+).  A page its fallback takes from the
 * allocator must be told apart from the pages it takes itself, which
 * hooks.c does by finding the bulk call's kretprobe instance on the
 * task's rethook list: x86 kernels since 5.18 have one.  Without it (5.13
 * to 5.17) the bulk hooks are not built, and the load fails naming the
 * bulk allocator's pages as what would go unrecorded (partial=1 traces
 * without them).
 */
#ifdef PT_HAVE_BULK
#define PT_BULK_ALLOCATOR	true
#ifdef CONFIG_KRETPROBE_ON_RETHOOK
#define PT_BULK_HOOKS		1
#endif
#else
#define PT_BULK_ALLOCATOR	false
#endif

#ifdef CONFIG_KRETPROBE_ON_RETHOOK
#include <linux/rethook.h>
#endif

#ifdef PT_BULK_HOOKS
/* (gfp, nid, nodemask, nr_pages, page_list, page_array); 6.14 drops the list */
#ifdef PT_HAVE_BULK_LIST
#define PT_BULK_LIST_ARG(regs)	((void *)regs_get_kernel_argument(regs, 4))
#define PT_BULK_ARRAY_ARG(regs)	((void *)regs_get_kernel_argument(regs, 5))
#else
#define PT_BULK_LIST_ARG(regs)	NULL
#define PT_BULK_ARRAY_ARG(regs)	((void *)regs_get_kernel_argument(regs, 4))
#endif
#endif /* PT_BULK_HOOKS */

/*
 * alloc_pages_nolock(), the allocator for any context, NMI included:
 * try_alloc_pages() in 6.15 (no Debian kernel of 6.15 is left to run it
 * on; the check at load, pt_nolock_missed(), still proves the hooks on a
 * page of its own), renamed in 6.16, and given a gfp argument first later.
 */
#ifdef PT_HAVE_NOLOCK
#if defined(PT_HAVE_TRY_ALLOC_PAGES)
#define pt_nolock_alloc()	try_alloc_pages(NUMA_NO_NODE, 0)
#define PT_NOLOCK_ORDER_ARG	1
#elif defined(PT_HAVE_NOLOCK_GFP)
#define pt_nolock_alloc()	alloc_pages_nolock(0, NUMA_NO_NODE, 0)
#define PT_NOLOCK_ORDER_ARG	2
#else
#define pt_nolock_alloc()	alloc_pages_nolock(NUMA_NO_NODE, 0)
#define PT_NOLOCK_ORDER_ARG	1
#endif
#endif

/*
 * The system's unbound workqueue: system_dfl_wq is its new name (6.17;
 * Debian's 6.12 has it backported), and since 7.2 work queued on the old
 * one, system_unbound_wq, logs a deprecation warning.
 */
#ifdef PT_HAVE_SYSTEM_DFL_WQ
#define pt_unbound_wq		system_dfl_wq
#else
#define pt_unbound_wq		system_unbound_wq
#endif

/* 5.11 hid a kretprobe instance's probe behind get_kretprobe(). */
#ifndef PT_HAVE_GET_KRETPROBE
#define get_kretprobe(ri)	((ri)->rp)
#endif

/*
 * Direct compaction runs with PF_MEMALLOC, like reclaim, and is told
 * apart by the capture_control it sets in the task for its whole run.
 */
static inline bool pt_in_direct_compaction(void)
{
#ifdef CONFIG_COMPACTION
	return READ_ONCE(current->capture_control);
#else
	return false;
#endif
}

#endif /* _PAGETRACE_COMPAT_H */
