// SPDX-License-Identifier: GPL-2.0
/*
 * The blocks on the zones' per-CPU free lists, as a sorted set, for the
 * snapshot walk: a page with a zero reference count that is not on the
 * buddy lists is free if it is on a per-CPU list, and otherwise allocated
 * (a tail page of a block allocated without __GFP_COMP, whose tails keep
 * a zero count, or a page the allocator handed out frozen).  Without the
 * set, such pages can only be taken as free, and every tail of such a
 * block is missing from the snapshot.
 *
 *   struct pt_pcp_set
 *   +------------------------------------------+
 *   | blocks[0 .. nr)  {pfn, order}, by pfn    |  binary search
 *   +------------------------------------------+
 *
 * A CPU's lists of a zone are read under their lock (pcp->lock, one per
 * CPU and zone, taken as the kernel's drain_pages_zone() takes it from
 * another CPU: the allocator's own trylock on that CPU then fails over to
 * the buddy lists).  Where the lists have no such lock (before 6.0),
 * 5.10 touches a CPU's lists only on that CPU with its interrupts off:
 * they are read there, in a function call IPI, as that layout has them
 * (one list of single pages per migratetype, in the per-CPU pageset;
 * PT_HAVE_PCP_PAGESET).  Not on PREEMPT_RT, whose 5.10 guards them with
 * a sleeping per-CPU lock and interrupts on, nor on 5.14-5.19 upstream:
 * there the set is not built, and the walk keeps the old rule (zero
 * count, on no list: free).
 *
 * Memory hot-remove, which frees a zone's lists, is held off meanwhile
 * (memhotplug.c, by the snapshot that calls in here).
 *
 * The lists change while they are read and after: the snapshot runs with
 * the hooks attached, so a page that leaves a list meanwhile is an
 * allocation event and one that joins it a free event, each applied after
 * the snapshot (whose events are stamped with the session's start).
 */
#include <linux/cpu.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/smp.h>
#include <linux/sort.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>

#include "pagetrace.h"

#if defined(PT_HAVE_PCP_LOCK) || \
	(!defined(PT_HAVE_PCP_PAGESET) && !defined(CONFIG_PREEMPT_RT))
#define PT_PCP_READABLE	1
#endif

/* The largest block on a per-CPU list: THP's (pcp.c's lists, below). */
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
#define PT_PCP_MAX_ORDER	HPAGE_PMD_ORDER
#else
#define PT_PCP_MAX_ORDER	PAGE_ALLOC_COSTLY_ORDER
#endif

#ifdef PT_PCP_READABLE
static int pt_pcp_cmp(const void *a, const void *b)
{
	const struct pt_pcp_block *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/* Note the block at @pfn of 2^@order pages if it starts in [@lo, @hi). */
static bool pt_pcp_add(struct pt_pcp_set *set, unsigned long pfn,
		       unsigned int order, unsigned long lo, unsigned long hi)
{
	if (pfn < lo || pfn >= hi)
		return true;
	if (set->nr == set->cap)
		return false;
	set->blocks[set->nr].pfn = pfn;
	set->blocks[set->nr].order = order;
	set->nr++;
	return true;
}

/* What the lists would hold: now, and as much again. */
static unsigned long pt_pcp_room(void)
{
	struct zone *zone = NULL;
	unsigned long n = 0;

	while ((zone = pt_next_zone(zone)))
		n += pt_zone_pcp_pages(zone);
	return 2 * n + 1024;
}

/**
 * pt_pcp_alloc - room for the blocks of every per-CPU list
 * @set: zeroed
 *
 * Return: 0 or -ENOMEM.
 */
int pt_pcp_alloc(struct pt_pcp_set *set)
{
	set->cap = pt_pcp_room();
	set->blocks = vmalloc_array(set->cap, sizeof(*set->blocks));
	return set->blocks ? 0 : -ENOMEM;
}
#endif

#ifdef PT_HAVE_PCP_LOCK
/*
 * The order of the blocks on list @pindex of a CPU's lists: one list per
 * migratetype and order up to PAGE_ALLOC_COSTLY_ORDER, then those of
 * pageblock-sized blocks (THP), as mm/page_alloc.c lays them out.
 */
static unsigned int pt_pcp_order(unsigned int pindex)
{
	if (pindex < NR_LOWORDER_PCP_LISTS)
		return pindex / MIGRATE_PCPTYPES;
	return PT_PCP_MAX_ORDER;
}

/**
 * pt_pcp_collect - read @zone's per-CPU free lists into @set
 * @set: from pt_pcp_alloc(); its blocks are replaced by @zone's that
 *	 start in [@lo, @hi), sorted
 * @zone: the zone
 * @lo: first PFN of interest
 * @hi: one past the last
 *
 * The snapshot walks a zone in slices and reads the lists right before
 * each: the shorter the time between, the fewer blocks have moved
 * between the lists and the buddy allocator unseen (a refill of a list
 * is no allocation event).
 *
 * Context: process context.
 *
 * Return: 0, or -EAGAIN if the lists grew past the room taken for them
 * (@set is then empty).
 */
int pt_pcp_collect(struct pt_pcp_set *set, struct zone *zone,
		   unsigned long lo, unsigned long hi)
{
	unsigned int cpu;

	might_sleep();
	set->nr = 0;
	/* A block of the largest order on a list may start before @lo. */
	lo = lo > (1UL << PT_PCP_MAX_ORDER) ? lo - (1UL << PT_PCP_MAX_ORDER) : 0;
	/* An offline CPU's lists are empty once drained, and safe to read. */
	for_each_possible_cpu(cpu) {
		struct per_cpu_pages *pcp = per_cpu_ptr(zone->per_cpu_pageset,
							cpu);
		struct page *page;
		unsigned int i;

		spin_lock(&pcp->lock);
		for (i = 0; i < NR_PCP_LISTS; i++) {
			list_for_each_entry(page, &pcp->lists[i], pcp_list)
				if (!pt_pcp_add(set, page_to_pfn(page),
						pt_pcp_order(i), lo, hi))
					break;
		}
		spin_unlock(&pcp->lock);
		if (set->nr == set->cap) {
			set->nr = 0;
			return -EAGAIN;
		}
	}
	sort(set->blocks, set->nr, sizeof(*set->blocks), pt_pcp_cmp, NULL);
	return 0;
}
#elif defined(PT_PCP_READABLE)
struct pt_pcp_ipi {
	struct pt_pcp_set	*set;
	struct zone		*zone;
	unsigned long		lo;
	unsigned long		hi;
	bool			full;
};

/* On the CPU whose lists they are, interrupts off: as its allocator. */
static void pt_pcp_read_local(void *arg)
{
	struct pt_pcp_ipi *ipi = arg;
	struct per_cpu_pages *pcp =
		&this_cpu_ptr(ipi->zone->pageset)->pcp;
	struct page *page;
	unsigned int i;

	lockdep_assert_irqs_disabled();
	for (i = 0; i < MIGRATE_PCPTYPES && !ipi->full; i++)
		list_for_each_entry(page, &pcp->lists[i], lru)
			if (!pt_pcp_add(ipi->set, page_to_pfn(page), 0,
					ipi->lo, ipi->hi)) {
				ipi->full = true;
				break;
			}
}

int pt_pcp_collect(struct pt_pcp_set *set, struct zone *zone,
		   unsigned long lo, unsigned long hi)
{
	struct pt_pcp_ipi ipi = { set, zone, lo, hi, false };
	unsigned int cpu;

	might_sleep();
	set->nr = 0;
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		if (smp_call_function_single(cpu, pt_pcp_read_local, &ipi, 1))
			ipi.full = true;
		if (ipi.full)
			break;
	}
	cpus_read_unlock();
	if (ipi.full) {
		set->nr = 0;
		return -EAGAIN;
	}
	sort(set->blocks, set->nr, sizeof(*set->blocks), pt_pcp_cmp, NULL);
	return 0;
}
#else
int pt_pcp_alloc(struct pt_pcp_set *set)
{
	return -EOPNOTSUPP;
}

int pt_pcp_collect(struct pt_pcp_set *set, struct zone *zone,
		   unsigned long lo, unsigned long hi)
{
	return -EOPNOTSUPP;
}
#endif

/**
 * pt_pcp_find - the block of @set that holds @pfn
 * @set: collected
 * @pfn: a page frame
 *
 * Return: the number of pages from @pfn to the block's end, or 0 if no
 * block holds it.
 */
unsigned long pt_pcp_find(const struct pt_pcp_set *set, unsigned long pfn)
{
	unsigned long lo = 0, hi = set->nr;

	/* The last block starting at or before @pfn. */
	while (lo < hi) {
		unsigned long mid = lo + (hi - lo) / 2;

		if (set->blocks[mid].pfn <= pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * The lists are read one CPU after another, so a page may show up on
	 * one as a single page and inside a larger block on another: look at
	 * every block starting close enough below to hold @pfn.
	 */
	for (; lo; lo--) {
		const struct pt_pcp_block *b = &set->blocks[lo - 1];
		unsigned long end = b->pfn + (1UL << b->order);

		if (pfn < end)
			return end - pfn;
		if (b->pfn + (1UL << PT_PCP_MAX_ORDER) <= pfn)
			break;
	}
	return 0;
}

void pt_pcp_free(struct pt_pcp_set *set)
{
	vfree(set->blocks);
	set->blocks = NULL;
	set->nr = 0;
	set->cap = 0;
}
