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
 * A reading takes no lock: the free count is the zone's NR_FREE_PAGES with
 * every CPU's pending delta folded in (zone_page_state_snapshot()), and the
 * per-CPU lists' counts are read as they are, each zone until two readings
 * agree (pt_zone_free_read()).  The allocator keeps running on other CPUs
 * meanwhile, so a reading is exact to within what it does in the
 * microseconds of the walk.  NR_FREE_PAGES leaves out the free pages
 * of isolated pageblocks (offlining, alloc_contig_range()), which the
 * snapshot also lists as allocated: both sides count them in use.
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
 * @zone's free pages and the pages on its per-CPU lists, read until two
 * readings in a row agree.  The allocator moves a batch between the free
 * lists and a CPU's list by changing NR_FREE_PAGES first and the list's
 * count after, outside the zone lock: a reading that falls between the two
 * is a batch off (seen on 7.3: 24 pages).  A few tries, then the last
 * reading if the zone never holds still.
 */
static void pt_zone_free_read(struct zone *zone, unsigned long *free,
			      unsigned long *pcp)
{
	unsigned int tries = 8;
	unsigned long f, p;

	*pcp = pt_zone_pcp_pages(zone);
	*free = zone_page_state_snapshot(zone, NR_FREE_PAGES);
	while (--tries) {
		p = pt_zone_pcp_pages(zone);
		f = zone_page_state_snapshot(zone, NR_FREE_PAGES);
		if (p == *pcp && f == *free)
			return;
		*pcp = p;
		*free = f;
	}
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
		unsigned long free, pcp;

		pt_zone_free_read(zone, &free, &pcp);
		z->node = pt_le32(zone_to_nid(zone));
		z->zone = pt_le32(zone_idx(zone));
		z->present_pages = pt_le64(zone->present_pages);
		z->managed_pages = pt_le64(zone_managed_pages(zone));
		z->free_pages = pt_le64(free);
		z->pcp_pages = pt_le64(pcp);
	}
	pt_mem_read_end();
	rec->nr_zones = pt_le32(n);
}
