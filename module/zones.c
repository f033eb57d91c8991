// SPDX-License-Identifier: GPL-2.0
/*
 * The populated zones, walked by the header (its zone records), the
 * snapshot, the zone counters and the per-CPU lists' reading, and the
 * pages on a zone's per-CPU lists: below them all, calling nothing of
 * the module.
 */
#include <linux/cpumask.h>
#include <linux/kernel.h>
#include <linux/mmzone.h>
#include <linux/percpu.h>
#include <linux/nodemask.h>
#include <linux/spinlock.h>

#include "pagetrace.h"

/*
 * The populated zone after @zone (the first one for NULL), or NULL.
 * for_each_populated_zone() uses symbols modules cannot reach, so walk the
 * online nodes' zone arrays instead.
 */
struct zone *pt_next_zone(struct zone *zone)
{
	int nid;

	if (zone) {
		nid = zone->zone_pgdat->node_id;
		zone++;
	} else {
		nid = first_online_node;
		zone = NODE_DATA(nid)->node_zones;
	}
	for (;;) {
		for (; zone < NODE_DATA(nid)->node_zones + MAX_NR_ZONES; zone++) {
			if (populated_zone(zone))
				return zone;
		}
		nid = next_online_node(nid);
		if (nid >= MAX_NUMNODES)
			return NULL;
		zone = NODE_DATA(nid)->node_zones;
	}
}

/* How many zones are populated now. */
unsigned int pt_zones_count(void)
{
	struct zone *zone = NULL;
	unsigned int n = 0;

	while ((zone = pt_next_zone(zone)))
		n++;
	return n;
}

/*
 * Pages on @zone's per-CPU free lists, every CPU's: an offline CPU's
 * lists are drained, but not before it is.  The lists' struct has been
 * the zone's per_cpu_pageset since 5.14; before, it sat inside the
 * per-CPU pageset with the vmstat deltas (PT_HAVE_PCP_PAGESET, Kbuild).
 */
unsigned long pt_zone_pcp_pages(struct zone *zone)
{
	unsigned long n = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
#ifdef PT_HAVE_PCP_PAGESET
		n += READ_ONCE(per_cpu_ptr(zone->per_cpu_pageset, cpu)->count);
#else
		n += READ_ONCE(per_cpu_ptr(zone->pageset, cpu)->pcp.count);
#endif
	}
	return n;
}

#ifdef PT_HAVE_PCP_LOCK
/*
 * pt_zone_pcp_pages(), each CPU's count read under its lists' lock, which
 * the allocator holds across a batch's move between the free lists and the
 * CPU's list: the count is then from before or after the move, never from
 * its middle.  Taken from process context without disabling interrupts,
 * as the kernel's own remote drains do: an interrupt on this CPU only ever
 * trylocks the lists.  The caller may hold preemption off (counters.c),
 * except on PREEMPT_RT, where the lock sleeps.
 */
unsigned long pt_zone_pcp_pages_locked(struct zone *zone)
{
	unsigned long n = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct per_cpu_pages *pcp = per_cpu_ptr(zone->per_cpu_pageset,
							cpu);

		spin_lock(&pcp->lock);
		n += pcp->count;
		spin_unlock(&pcp->lock);
	}
	return n;
}
#else
/*
 * Before 6.0 a CPU's lists have no lock: only its interrupts off guard
 * them, and a count is exact only while the other CPUs stand still
 * (counters.c, pt_counters_run()).
 */
unsigned long pt_zone_pcp_pages_locked(struct zone *zone)
{
	return pt_zone_pcp_pages(zone);
}
#endif
