/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session's filter as the hooks test it: set up by filter.c from the
 * filter_* parameters when a session starts, read-only while its probes
 * are attached, and tested inline on every event (pt_filter_keeps()), so
 * that a filter which keeps everything costs a few instructions and no
 * call, and one which drops an event costs less than recording it.
 */
#ifndef PAGETRACE_FILTER_H
#define PAGETRACE_FILTER_H

#include <linux/bitops.h>
#include <linux/cgroup.h>
#include <linux/lockdep.h>
#include <linux/compiler.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/types.h>

#include "../uapi/linux/pagetrace.h"

struct pagetrace_rec_filter;

/* Event types index pt_filter.keep[] through this mask. */
#define PT_FILTER_TYPE_MASK	3
static_assert(PAGETRACE_EV_RECLAIM <= PT_FILTER_TYPE_MASK);

/**
 * struct pt_filter - which events a session keeps
 * @active: any of the rest leaves something out
 * @all_nodes: every node kept, @nodes not looked at
 * @more: a node or cgroup filter: more to test than @keep
 * @types: BIT(PAGETRACE_EV_*) of the types kept
 * @orders: BIT_ULL(order) of the orders kept
 * @keep: per event type, BIT_ULL(order) of the orders kept: @orders, or 0
 *	  for a type left out; one load decides both
 * @nodes: the nodes kept
 * @cgrp: only events of tasks in this cgroup or below it, or NULL; the
 *	  session holds a reference
 *
 * Set up before the probes are attached, read-only while they are.
 */
struct pt_filter {
	bool		active;
	bool		all_nodes;
	bool		more;
	u8		types;
	u64		orders;
	u64		keep[PT_FILTER_TYPE_MASK + 1];
	nodemask_t	nodes;
	struct cgroup	*cgrp;
};

/*
 * Whether the task running the hook is in the filter's cgroup.  No
 * rcu_read_lock(): the hooks run with interrupts off, which is an RCU
 * read-side critical section for every flavour of RCU, and css_sets and
 * cgroups are freed only after a grace period.
 */
static __always_inline bool pt_filter_keeps_task(const struct pt_filter *f)
{
	/* rcu_read_lock_sched_held(), as task_css_set_check() accepts. */
	lockdep_assert_irqs_disabled();
	return in_task() &&
	       cgroup_is_descendant(task_dfl_cgroup(current), f->cgrp);
}

/**
 * pt_filter_keeps - whether the session records an event
 * @f: the session's filter, active
 * @type: PAGETRACE_EV_ALLOC, _FREE or _RECLAIM
 * @pfn: its first page
 * @npages: its pages
 *
 * Called from the hot path, interrupts off: a table load and a bit test
 * for the type and order, the page's flags for a node filter, the task's
 * css_set for a cgroup filter.  Nothing that takes a lock or calls out.
 *
 * Return: true to record the event, false to count it as filtered.
 */
static __always_inline bool pt_filter_keeps(const struct pt_filter *f,
					    unsigned int type,
					    unsigned long pfn,
					    unsigned long npages)
{
	/*
	 * log2 of npages rounded up, as the orders parameter counts them;
	 * no branch: fls64(0) is 0 for a single page.
	 */
	unsigned int order = fls64(npages - 1);

	/*
	 * Masked, so that the index is in bounds by construction: an array
	 * bounds check (UBSAN_BOUNDS, which 7.x enables) would be a call,
	 * and a call costs the whole fast path its leaf frame.
	 */
	if (!(f->keep[type & PT_FILTER_TYPE_MASK] & BIT_ULL(order & 63)))
		return false;
	if (likely(!f->more))
		return true;
	if (!f->all_nodes &&
	    !node_isset(page_to_nid(pfn_to_page(pfn)), f->nodes))
		return false;
	return !f->cgrp || pt_filter_keeps_task(f);
}

int pt_filter_setup(struct pt_filter *f);
void pt_filter_release(struct pt_filter *f);
bool pt_filter_keeps_node(const struct pt_filter *f, int nid);
void pt_filter_record(const struct pt_filter *f,
		      struct pagetrace_rec_filter *rec);

#endif /* PAGETRACE_FILTER_H */
