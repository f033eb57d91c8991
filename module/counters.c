// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own count of each zone's pages, read when a session starts
 * and when it stops (struct pagetrace_rec_counters), so that a trace can
 * check its pages in use against the kernel's: present - free - per-CPU.
 *
 *   start  after the snapshot walk (or the hooks' attaching, without one),
 *          into the header's REC_COUNTERS record and its copy in the meta
 *          area: pt_header_set_counters()
 *   stop   right after the writers' clearing, before the hooks' detaching
 *          (handlers that loaded a writer before the clearing may still
 *          finish an event meanwhile), into the session, for
 *          PAGETRACE_IOC_COUNTERS
 *
 * A reading stops nothing: the free count is the zone's NR_FREE_PAGES with
 * every CPU's pending delta folded in (zone_page_state_snapshot()), read
 * before and after the per-CPU lists' counts (pt_zone_free_read()), and
 * how far it moved meanwhile is recorded with the zone (@spread_pages).
 * The allocator keeps running on other CPUs, so a reading holds to within
 * what it does in the microseconds of the walk.  NR_FREE_PAGES leaves out
 * the free pages of isolated pageblocks (offlining, alloc_contig_range()),
 * which the snapshot also lists as allocated: both sides count them in
 * use.
 */
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/vmstat.h>

#include "clock.h"
#include "pagetrace.h"

/**
 * pt_counters_size - bytes of a struct pagetrace_rec_counters
 * @nr_zones: entries it has room for
 *
 * Return: the size, a multiple of 8.
 */
size_t pt_counters_size(unsigned int nr_zones)
{
	return sizeof(struct pagetrace_rec_counters) +
	       nr_zones * sizeof(struct pagetrace_zone_counters);
}

/*
 * @zone's free pages and the pages on its per-CPU lists, as of one instant
 * as nearly as can be read without stopping the allocator; returns how far
 * the free count moved while the lists were read (0: consistent).
 *
 * The allocator moves a batch between the free lists and a CPU's list
 * with that list's lock held across both counts' changes (refills change
 * NR_FREE_PAGES first, drains the list's count first).  The lists are
 * read under their locks (pt_zone_pcp_pages_locked()) between two
 * readings of the free count: when those agree, no batch moved across
 * the reading, but for moves that cancel out.  Under load the free count
 * may never hold still for that long: a few tries, then the reading that
 * moved least.  Before 6.0 the lists have no lock, and a move on another
 * CPU (interrupts off there) may fall between the two counts unseen.
 */
static unsigned long pt_zone_free_read(struct zone *zone, unsigned long *free,
				       unsigned long *pcp)
{
	unsigned long spread = ULONG_MAX;
	unsigned int tries = 8;

	do {
		unsigned long f1, f2, p, d;

		f1 = zone_page_state_snapshot(zone, NR_FREE_PAGES);
		p = pt_zone_pcp_pages_locked(zone);
		f2 = zone_page_state_snapshot(zone, NR_FREE_PAGES);
		d = f1 > f2 ? f1 - f2 : f2 - f1;
		if (d < spread) {
			spread = d;
			*free = f2;
			*pcp = p;
		}
	} while (spread && --tries);
	return spread;
}

/**
 * pt_counters_read - every populated zone's counters now
 * @rec: room for @max zones, filled in (entries past nr_zones zeroed)
 * @max: entries @rec has
 *
 * With memory being offlined (memhotplug.c), no zone: the per-CPU lists
 * may be going away.
 *
 * Context: process context; may sleep (briefly).
 */
void pt_counters_read(struct pagetrace_rec_counters *rec, unsigned int max)
{
	struct zone *zone = NULL;
	unsigned int n = 0;

	memset(rec, 0, pt_counters_size(max));
	rec->time_ns = pt_le64(pt_clock_now());
	if (pt_mem_read_begin())
		return;
	while (n < max && (zone = pt_next_zone(zone))) {
		struct pagetrace_zone_counters *z = &rec->zones[n++];
		unsigned long free, pcp, spread;

		spread = pt_zone_free_read(zone, &free, &pcp);
		z->node = pt_le32(zone_to_nid(zone));
		z->zone = pt_le32(zone_idx(zone));
		z->present_pages = pt_le64(zone->present_pages);
		z->managed_pages = pt_le64(zone_managed_pages(zone));
		z->free_pages = pt_le64(free);
		z->pcp_pages = pt_le64(pcp);
		z->spread_pages = pt_le64(spread);
		cond_resched();
	}
	pt_mem_read_end();
	rec->nr_zones = pt_le32(n);
}
