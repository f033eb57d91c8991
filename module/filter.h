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
#include <linux/compiler.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/types.h>

#include "../uapi/linux/pagetrace.h"
#include "context.h"

struct pagetrace_rec_filter;

/* Event types index pt_filter_fast.keep[] through this mask. */
#define PT_FILTER_TYPE_MASK	3
static_assert(PAGETRACE_EV_RECLAIM <= PT_FILTER_TYPE_MASK);

/* pt_filter.tests: the tests a session's filter makes, one bit each. */
#define PT_FILTER_ORDERS	BIT(0)	/* a type or an order left out */
#define PT_FILTER_NODES		BIT(1)	/* a node left out */
#define PT_FILTER_CGROUP	BIT(2)	/* only tasks of @cgrp and below */

/*
 * pt_filter.kind: which test pt_filter_keeps() makes first, 0 for no
 * filter.  Numbered so that one compare with PT_FILTER_FIRST_CGROUP picks
 * it (below: nodes, equal: cgroup, above: orders).  Filters of several
 * kinds are above too: they start with the order test on an empty table,
 * which sends every event on to the rest.  Copied into each CPU's writer
 * (pt_cpu.filter_kind), in a cache line the fast path reads anyway, so that
 * the compare is one instruction on memory the event touches.
 */
enum pt_filter_kind {
	PT_FILTER_NONE,
	PT_FILTER_FIRST_NODES,
	PT_FILTER_FIRST_CGROUP,
	PT_FILTER_FIRST_ORDERS,
	PT_FILTER_FIRST_SEVERAL,
};

struct pt_filter;

/**
 * struct pt_filter_fast - what pt_filter_keeps() reads
 * @keep: per event type, BIT_ULL(order) of the orders kept, or 0 for a
 *	  type left out; one load decides both.  All 0 with filters of
 *	  several kinds, which go on to pt_filter_keeps_several().
 * @cgrp: only events of tasks in this cgroup or below it, or NULL; the
 *	  session holds a reference (pt_filter_release())
 * @several: the whole filter if it is of several kinds, else NULL
 * @nodes: the nodes kept
 *
 * struct pt_filter holds the session's; each CPU's writer has a copy
 * (pt_cpu.filter_fast), so that a test reads the writer's own lines
 * instead of going through the session pointer.  pt_writers_publish()
 * makes the copy before it releases the writer pointer to the probes;
 * it is read-only from then until pt_writers_clear() and the grace period
 * after it.  @keep and @cgrp come first, in one cache line.
 */
struct pt_filter_fast {
	u64			keep[PT_FILTER_TYPE_MASK + 1];
	struct cgroup		*cgrp;
	const struct pt_filter	*several;
	nodemask_t		nodes;
};

/**
 * struct pt_filter - which events a session keeps
 * @fast: what pt_filter_keeps() reads, copied into each CPU's writer by
 *	  pt_writers_publish(); its @keep is set for a filter of types and
 *	  orders alone
 * @kind: enum pt_filter_kind: the test to make first
 * @tests: PT_FILTER_*: the tests to make, 0 for none (the filter keeps
 *	   every event)
 * @all_nodes: every node kept, @fast.nodes not looked at
 * @types: BIT(PAGETRACE_EV_*) of the types kept
 * @orders: BIT_ULL(order) of the orders kept
 * @keep_several: @fast.keep for filters of several kinds
 *
 * Set up before the probes are attached, read-only while they are.
 */
struct pt_filter {
	struct pt_filter_fast fast;
	u8		kind;
	u8		tests;
	bool		all_nodes;
	u8		types;
	u64		orders;
	u64		keep_several[PT_FILTER_TYPE_MASK + 1];
};

/* The type and order test: a table load and a bit test. */
static __always_inline bool pt_filter_keeps_order(const u64 *keep,
						  unsigned int type,
						  unsigned long npages)
{
	/*
	 * The order as the orders parameter counts it, log2 of npages
	 * rounded up, is fls64(npages - 1); for npages >= 1 (no event is
	 * of no pages) that is __fls(2 * npages - 1), one lea and one bsr,
	 * where fls64() adds the fix-up that makes fls64(0) 0.  Below 64 by
	 * construction; the & 63 tells the compiler so (UBSAN_SHIFT would
	 * test it).
	 */
	unsigned int order = __fls(2 * npages - 1);

	/*
	 * Masked, so that the index is in bounds by construction: an array
	 * bounds check (UBSAN_BOUNDS, which 7.x enables) would be a call,
	 * and a call costs the whole fast path its leaf frame.
	 */
	return (keep[type & PT_FILTER_TYPE_MASK] >> (order & 63)) & 1;
}

/*
 * The node test: the node in the page's flags, a bit of the mask; six
 * instructions.  A bitmap of the memory sections kept, made at session
 * start, would take as many (a shift, a load and compare of its bound,
 * its branch, a bit test) and still need the page's flags for sections
 * added since; the page's flags are in a line the allocator has just
 * touched.
 */
static __always_inline bool
pt_filter_keeps_page(const struct pt_filter_fast *ff, unsigned long pfn)
{
	return node_isset(page_to_nid(pfn_to_page(pfn)), ff->nodes);
}

/*
 * Whether the task running the hook is in the filter's cgroup or below
 * it.  Its own cgroup first: a pointer compare, which is exact because
 * the session holds a reference on @cgrp, so that no other cgroup can be
 * at its address while the session runs; then the ancestry (about eight
 * instructions more), for tasks in a cgroup below it.
 *
 * No cache of decisions per CPU: keyed by the task's css_set or cgroup
 * pointer it would be wrong, as those are freed when their last task
 * leaves and their memory may come back as another css_set or cgroup,
 * elsewhere in the tree, that a pointer compared (never dereferenced)
 * still matches; keyed by what is never reused, the cgroup's id (its
 * kernfs node's, inode number and generation), it takes two loads more
 * than the pointer compare and saves about four of the ancestry's.
 *
 * No rcu_read_lock(): the hooks run with interrupts off, which is an RCU
 * read-side critical section for every flavour of RCU, and css_sets and
 * cgroups are freed only after a grace period.  Task context only (of the
 * code the hook reports on: pt_event_in_task()): an interrupt's task is
 * whoever it interrupted.
 */
static __always_inline bool
pt_filter_keeps_task(const struct pt_filter_fast *ff, enum pt_event_ctx ctx)
{
	struct cgroup *cgrp;

	/* rcu_read_lock_sched_held(), as task_css_set_check() accepts. */
	lockdep_assert_irqs_disabled();
	if (!pt_event_in_task(ctx))
		return false;
	cgrp = task_dfl_cgroup(current);
	return likely(cgrp == ff->cgrp) || cgroup_is_descendant(cgrp, ff->cgrp);
}

/*
 * Filters of several kinds: each test, the cheapest first; the session's
 * filter (@ff->several) for which tests, this CPU's copy for their data.
 */
static __always_inline bool
pt_filter_keeps_several(const struct pt_filter_fast *ff, unsigned int type,
			unsigned long pfn, unsigned long npages,
			enum pt_event_ctx ctx)
{
	const struct pt_filter *f = ff->several;

	/*
	 * Hidden, so that the compiler computes the order here again rather
	 * than keep parts of it from the first order test, which would cost
	 * that test (the hot one) instructions.
	 */
	OPTIMIZER_HIDE_VAR(type);
	OPTIMIZER_HIDE_VAR(npages);
	return pt_filter_keeps_order(f->keep_several, type, npages) &&
	       (!(f->tests & PT_FILTER_NODES) || pt_filter_keeps_page(ff, pfn)) &&
	       (!(f->tests & PT_FILTER_CGROUP) || pt_filter_keeps_task(ff, ctx));
}

/**
 * pt_filter_keeps - whether the session records an event
 * @ff: this CPU's copy of the session's filter
 * @kind: its enum pt_filter_kind, not PT_FILTER_NONE
 * @type: PAGETRACE_EV_ALLOC, _FREE or _RECLAIM
 * @pfn: its first page
 * @npages: its pages, at least 1
 * @ctx: whose context the event is of, for a cgroup filter (a constant)
 *
 * Called from the hot path, interrupts off, in any context.  One compare
 * of @kind, which the caller keeps in the writer's first cache line,
 * picks the test of a filter of one kind, the usual case, which is then
 * made alone on the writer's own copy of its table: counted in pt_emit()
 * on 7.3 (objdump, from the fast path's branch into the filter to the
 * branch back), a type and order filter costs 10 instructions to keep an
 * event (13 to drop one, to the filtered counter), a node filter 10, a
 * cgroup filter 11 for a task in its own cgroup.  Filters of several
 * kinds fail the order test on an empty table and make each test they
 * need.  Nothing that takes a lock, allocates or calls out.  @kind is a
 * u8, as pt_cpu keeps it, so that the compiler compares it in memory
 * (one cmpb) rather than loading and widening it first.
 *
 * Return: true to record the event, false to count it as filtered.
 */
static __always_inline bool pt_filter_keeps(const struct pt_filter_fast *ff,
					    u8 kind,
					    unsigned int type,
					    unsigned long pfn,
					    unsigned long npages,
					    enum pt_event_ctx ctx)
{
	/*
	 * One compare of @kind with PT_FILTER_FIRST_CGROUP, then its flags.
	 * The ifs, not returns of the tests: they compile to bare branches.
	 */
	if (kind == PT_FILTER_FIRST_CGROUP) {
		if (pt_filter_keeps_task(ff, ctx))
			return true;
		return false;
	}
	if (kind > PT_FILTER_FIRST_CGROUP) {
		if (pt_filter_keeps_order(ff->keep, type, npages))
			return true;
		if (likely(!ff->several))
			return false;
		return pt_filter_keeps_several(ff, type, pfn, npages, ctx);
	}
	if (likely(pt_filter_keeps_page(ff, pfn)))
		return true;
	return false;
}

int pt_filter_setup(struct pt_filter *f);
void pt_filter_release(struct pt_filter *f);
bool pt_filter_keeps_node(const struct pt_filter *f, int nid);
void pt_filter_record(const struct pt_filter *f,
		      struct pagetrace_rec_filter *rec);

#endif /* PAGETRACE_FILTER_H */
