/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagetrace_gt: what its parts share.  gt_main.c runs an operation and
 * keeps its report; the operations (gt_alloc.c, gt_context.c, gt_spin.c) write it
 * with gt_event() for each block they allocated or freed, with the
 * local_clock() window [t0, t1] around the call (GT_TIMED()), or with
 * gt_skip() for why they could not.  The report's format is in gt_main.c.
 */
#ifndef PAGETRACE_GT_H
#define PAGETRACE_GT_H

#include <linux/compiler.h>
#include <linux/sched/clock.h>
#include <linux/types.h>

/* Run a statement inside a clock window named t0/t1. */
#define GT_TIMED(stmt) do { t0 = local_clock(); stmt; t1 = local_clock(); } while (0)

/* The report (gt_main.c), written under its lock by the running op. */
__printf(1, 2) void gt_line(const char *fmt, ...);
void gt_event(const char *op, const char *ev, unsigned long pfn,
	      unsigned long npages, u64 t0, u64 t1);
void gt_skip(const char *op, const char *why);

/*
 * The operations of gt_main.c's table, each run under the report's lock
 * with @op its name for the report's lines; the *_exit() functions undo
 * at module exit what an operation may have left.  The allocator's entry
 * points (gt_alloc.c):
 */
void gt_order0(const char *op);
void gt_order3(const char *op);
void gt_order5(const char *op);
void gt_order10(const char *op);
void gt_atomic(const char *op);
void gt_get_free_pages(const char *op);
void gt_page_put(const char *op);
void gt_folio0(const char *op);
void gt_folio2(const char *op);
void gt_folio_thp(const char *op);
void gt_node(const char *op);
void gt_exact(const char *op);
void gt_bulk_array(const char *op);
void gt_bulk_list(const char *op);
void gt_bulk_prefilled(const char *op);
void gt_bulk_large(const char *op);
void gt_bulk_large_beyond(const char *op);
void gt_bulk_single(const char *op);
void gt_bulk_in_kprobe(const char *op);
void gt_vmalloc(const char *op);
void gt_split_free(const char *op);
void gt_marker(const char *op);
void gt_contig(const char *op);
void gt_vmalloc_exit(void);

/* Odd contexts, another ftrace user (gt_context.c): */
void gt_softirq(const char *op);
void gt_hardirq(const char *op);
void gt_nolock(const char *op);
void gt_reenter_nmi(const char *op);
void gt_reenter_kprobe(const char *op);
void gt_ipmodify_on(const char *op);
void gt_ipmodify_off(const char *op);
void gt_ipmodify_exit(void);

/* A kernel thread that holds Tasks RCU grace periods back (gt_spin.c): */
void gt_spin_on(const char *op);
void gt_spin_off(const char *op);
void gt_spin_exit(void);

#endif /* PAGETRACE_GT_H */
