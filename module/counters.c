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
 * The free count is the zone's NR_FREE_PAGES with every CPU's pending
 * delta folded in (zone_page_state_snapshot()), read before and after the
 * per-CPU lists' counts (pt_zone_free_read()), and how far it moved
 * meanwhile is recorded with the zone (@spread_pages).  Where the lists
 * have a lock, the allocator keeps running on other CPUs, so a reading
 * holds to within what it does in the microseconds of the reading; where
 * they have none, the other CPUs are stopped for it (pt_counters_run()).
 * NR_FREE_PAGES leaves out
 * the free pages of isolated pageblocks (offlining, alloc_contig_range()),
 * which the snapshot also lists as allocated: both sides count them in
 * use.
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched/clock.h>
#include <linux/stop_machine.h>
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
 * How long a reading may keep preemption off (or, under stop_machine(),
 * every CPU waiting) trying zones again (see pt_zone_free_read()): past
 * it, no zone gets another try, and each remaining zone gets one.  On a
 * machine of a thousand CPUs one try of a zone is some thousands of
 * remote cache lines and as many lock round trips; the budget keeps the
 * whole reading to a few milliseconds there.  On a machine of a few CPUs
 * it never comes into play.
 */
#define PT_COUNTERS_BUDGET_NS	(1000 * 1000)
#define PT_COUNTERS_ZONE_TRIES	8

/*
 * @zone's free pages and the pages on its per-CPU lists, as of one instant
 * as nearly as can be read (the allocator running on, where the lists have
 * a lock: pt_counters_run()); returns how far
 * the free count moved while the lists were read (0: consistent).
 *
 * The allocator moves a batch between the free lists and a CPU's list
 * with that list's lock held across both counts' changes (refills change
 * NR_FREE_PAGES first, drains the list's count first).  The lists are
 * read under their locks (pt_zone_pcp_pages_locked()) between two
 * readings of the free count: when those agree, no batch moved across
 * the reading, but for moves that cancel out.  Under load the free count
 * may never hold still for that long: up to PT_COUNTERS_ZONE_TRIES
 * tries, none begun after @deadline but the first, then the reading that
 * moved least.  Where the lists have no lock (but on
 * PREEMPT_RT), the other CPUs stand still for the reading
 * (pt_counters_run()), and one try holds.
 */
static unsigned long pt_zone_free_read(struct zone *zone, u64 deadline,
				       unsigned long *free, unsigned long *pcp)
{
	unsigned long spread = ULONG_MAX;
	unsigned int tries = PT_COUNTERS_ZONE_TRIES;

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
	} while (spread && --tries && local_clock() < deadline);
	return spread;
}

/* Tries, and the wait between two, for a reading no memory online crosses. */
#define PT_COUNTERS_TRIES	5
#define PT_COUNTERS_WAIT_MS	20

/* An empty reading, of no zone: the time of now. */
static void pt_counters_empty(struct pagetrace_rec_counters *rec,
			      unsigned int max)
{
	memset(rec, 0, pt_counters_size(max));
	rec->time_ns = pt_le64(pt_clock_now());
}

/*
 * Every populated zone's counters into @rec, and their number.  *@torn:
 * some zone counts more pages managed, or free, than present, as a
 * reading across an online that the notifier did not see does (the
 * module loaded while it ran).
 *
 * Context: memory hot-remove held off (pt_mem_read_begin()); in
 * pt_counters_run()'s stretch, sleeping only where the per-CPU lists'
 * lock does.
 */
static void pt_counters_read_zones(struct pagetrace_rec_counters *rec,
				   unsigned int max, bool *torn)
{
	u64 deadline = local_clock() + PT_COUNTERS_BUDGET_NS;
	struct zone *zone = NULL;
	unsigned int n = 0;

	pt_counters_empty(rec, max);
	*torn = false;
	while (n < max && (zone = pt_next_zone(zone))) {
		struct pagetrace_zone_counters *z = &rec->zones[n++];
		unsigned long free, pcp, spread, present, managed;

		spread = pt_zone_free_read(zone, deadline, &free, &pcp);
		z->node = pt_le32(zone_to_nid(zone));
		z->zone = pt_le32(zone_idx(zone));
		present = READ_ONCE(zone->present_pages);
		managed = zone_managed_pages(zone);
		if (managed > present || free + pcp > present)
			*torn = true;
		z->present_pages = pt_le64(present);
		z->managed_pages = pt_le64(managed);
		z->free_pages = pt_le64(free);
		z->pcp_pages = pt_le64(pcp);
		z->spread_pages = pt_le64(spread);
	}
	rec->nr_zones = pt_le32(n);
}

struct pt_counters_reading {
	struct pagetrace_rec_counters	*rec;
	unsigned int			max;
	void				(*stop)(void *arg);	/* at stop */
	void				*arg;
	const struct pt_session		*sess;			/* at start */
	bool				zones;	/* read them (memory held) */
	bool				torn;
};

/*
 * The reading itself, in pt_counters_run()'s stretch (under stop_machine()
 * on the first online CPU's stopper thread, interrupts off): the stop, if
 * any, then the zones, and how far the trace may be from them, into each
 * zone's spread.
 *
 * At stop, the events the hooks turn away from @stop to the end of the
 * reading are in the kernel's counts of the zones read after them and in
 * no event (exact: no hook is turned away while every CPU has its
 * writer).
 *
 * At start, the reading is stamped as it begins and reads the zones one
 * after another, each CPU's lists in turn, while the other CPUs allocate
 * and free (but under stop_machine()): a page freed meanwhile may be in
 * the counts read later, its event (which fires before the page reaches a
 * list) stamped after the reading's time.  The pages of every event
 * written during the reading count.  Seen in the TCG VM with the host's
 * thread of the reading vCPU descheduled: 610 pages of a munmap on the
 * other CPU, in the counts and after the time.  The counts are read while
 * their writers add to them, each a word added to in one instruction (a
 * data race KCSAN would name).
 *
 * Either is an estimate, not a bound: an allocation hooked after the
 * allocator's counts moved (a block taken off the lists whose allocation
 * event comes after the reading: memcg charging may sleep in between),
 * a batch of frees whose events came before the reading and whose pages
 * reach the lists after, a kprobe's miss, are not in it.
 */
static int pt_counters_take(void *data)
{
	struct pt_counters_reading *r = data;
	u64 moved;
	unsigned int i;

	if (r->stop) {
		moved = pt_turned_away_pages();
		r->stop(r->arg);
	} else {
		moved = pt_written_pages(r->sess);
	}
	if (!r->zones)
		return 0;
	pt_counters_read_zones(r->rec, r->max, &r->torn);
	if (r->stop)
		moved = pt_turned_away_pages() - moved;
	else
		moved = pt_written_pages(r->sess) - moved;
	for (i = 0; i < pt_from_le32(r->rec->nr_zones); i++) {
		struct pagetrace_zone_counters *z = &r->rec->zones[i];

		z->spread_pages = pt_le64(pt_from_le64(z->spread_pages) +
					  moved);
	}
	return 0;
}

/*
 * A reading runs in one stretch, so that it takes microseconds, not what
 * a preemption point lets the scheduler make of it: the stop's reading
 * used to follow the clearing through two mutexes and a cond_resched()
 * per zone, and in three stops of 26 on 6.1 a zone was 70 to 446 pages
 * off, the workload having allocated and freed untraced meanwhile, on
 * every CPU.  How the stretch is held depends on what guards the per-CPU
 * lists:
 *
 *   lists' lock, a spinlock      preemption off; interrupts on this CPU,
 *   (6.0 and later)              and the other CPUs, still allocate: what
 *                                they do meanwhile widens the spread
 *   lists' lock, sleeping        nothing held: the reading may sleep too,
 *   (PREEMPT_RT, 6.0 and later)  and what ran meanwhile is counted the
 *                                same way
 *   no lock, interrupts off      stop_machine(): every other CPU waits
 *   (before 6.0: 5.10)           with its interrupts off, outside any
 *                                allocator section.  A CPU's lists are
 *                                changed with only its own interrupts
 *                                off, a batch's move changing the free
 *                                count and the list's count some way
 *                                apart (a refill lowers the first under
 *                                zone->lock and raises the second after
 *                                dropping it), and a reading from another
 *                                CPU may fall between the two with the
 *                                free count holding still: 5.10 in the
 *                                VM, a start reading one batch (15
 *                                pages) off the trace, once in some
 *                                hundreds.
 *   no lock, sleeping            preemption off: a move on another CPU
 *   (5.10's PREEMPT_RT)          may fall between the two counts unseen
 *                                (stop_machine() would not help: a task
 *                                may be preempted inside its CPU's lists)
 *
 * stop_machine() costs every CPU a stop, twice a session: the rendezvous
 * waits for the slowest CPU to reach a point where it may be preempted
 * (milliseconds on a PREEMPT_VOLUNTARY kernel, or with vCPUs the host has
 * descheduled), nohz_full CPUs included, and the reading then takes a few
 * remote cache lines per CPU and zone.  Each CPU's count read on that CPU
 * in an IPI would be before or after a move, never in its middle, too,
 * without stopping anyone; but under load the free count moves on while
 * the IPIs go round (5.10 in the TCG VM: 200 to 3,600 pages each try),
 * and the reading is then as far off.  On a fully preemptible kernel
 * without the lock (upstream 5.10 with CONFIG_PREEMPT), the vmstat
 * worker's fold of a CPU's pending delta into the zone's count (an
 * exchange, then an add) may be preempted by the stop between its two
 * steps, a reading then missing up to the stat threshold's pages; Debian's
 * 5.10 is PREEMPT_VOLUNTARY, where it cannot.
 */
#ifdef PT_HAVE_PCP_LOCK
#define PT_PCP_LOCKED	true
#else
#define PT_PCP_LOCKED	false
#endif

static void pt_counters_run(struct pt_counters_reading *r)
{
	bool locked = PT_PCP_LOCKED;

	if (locked && IS_ENABLED(CONFIG_PREEMPT_RT)) {
		pt_counters_take(r);
		return;
	}
	/*
	 * Without zones to read (memory not held at stop) only the writers'
	 * clearing is left, which needs no stop.  stop_machine() returns
	 * what pt_counters_take() does, 0, if it ran it.
	 */
	if (!locked && !IS_ENABLED(CONFIG_PREEMPT_RT) && r->zones &&
	    !WARN_ON_ONCE(stop_machine(pt_counters_take, r, NULL)))
		return;
	preempt_disable();
	pt_counters_take(r);
	preempt_enable();
}

/*
 * Hold off memory hot-remove for the stop's reading, at a time no online
 * runs: a few tries, PT_COUNTERS_WAIT_MS apart, while the trace still
 * records.  0 and the online sequence it held at, or -EBUSY.
 */
static int pt_counters_hold_memory(unsigned long *seq)
{
	unsigned int tries;

	for (tries = 0; tries < PT_COUNTERS_TRIES; tries++) {
		if (tries)
			msleep(PT_COUNTERS_WAIT_MS);
		*seq = pt_mem_online_seq();
		if (*seq & 1 || pt_mem_read_begin())
			continue;
		return 0;
	}
	return -EBUSY;
}

/**
 * pt_counters_read - every populated zone's counters now
 * @rec: room for @max zones, filled in (entries past nr_zones zeroed)
 * @max: entries @rec has
 * @sess: the session starting, hooks attached: the pages of its events
 *	written during the reading widen each zone's spread
 *	(pt_counters_take())
 *
 * No zone while memory is being offlined (memhotplug.c): the per-CPU
 * lists may be going away.  Nor when memory was onlined across every
 * try: an online adds its pages to the zone's managed count long before
 * its present count, and such a reading would count more pages managed,
 * or free, than present.  (With memmap_on_memory, onlining and offlining
 * a block also move its memmap's pages in and out of present_pages
 * outside the notifier's events: the kernel's pages in use then change by
 * those, which no event records.)
 *
 * Context: process context; may sleep (up to about 80 ms while memory is
 * being onlined or offlined, the reading moving that far from the
 * caller's instant).  Where the per-CPU lists have no lock, takes
 * cpus_read_lock() (stop_machine()): not from a CPU hotplug callback, nor
 * with that lock held.
 */
void pt_counters_read(struct pagetrace_rec_counters *rec, unsigned int max,
		      const struct pt_session *sess)
{
	struct pt_counters_reading r = { .rec = rec, .max = max, .sess = sess };
	unsigned int tries;

	for (tries = 0; tries < PT_COUNTERS_TRIES; tries++) {
		unsigned long seq;

		if (tries)
			msleep(PT_COUNTERS_WAIT_MS);
		seq = pt_mem_online_seq();
		if (seq & 1 || pt_mem_read_begin())
			continue;
		r.zones = true;
		r.torn = true;
		pt_counters_run(&r);
		pt_mem_read_end();
		if (!r.torn && pt_mem_online_seq() == seq)
			return;
	}
	pt_counters_empty(rec, max);
}

/**
 * pt_counters_read_at_stop - end the trace, and read the counters then
 * @rec: as pt_counters_read()
 * @max: as pt_counters_read()
 * @stop: turns the hooks' events away; called in pt_counters_run()'s
 *	stretch (preemption off; or, where the per-CPU lists have no lock,
 *	on another CPU's stopper thread with interrupts off), and must not
 *	sleep
 * @arg: its argument
 *
 * The trace ends at @stop, and the counters must be those of that
 * instant: @stop and the reading run in one stretch of one CPU, with no
 * second try (a reading after the trace's end would be of a later
 * instant).  Before it, while the trace still records, it waits out a
 * memory online or offline as pt_counters_read() does; the record is
 * empty if one still runs then, or an online started across the reading.
 *
 * The pages of the events the hooks turn away from @stop to the end of
 * the reading are added to every zone's @spread_pages (pt_counters_take()).
 *
 * Context: process context; may sleep before @stop and after the reading.
 * Takes cpus_read_lock() as pt_counters_read() does.
 */
void pt_counters_read_at_stop(struct pagetrace_rec_counters *rec,
			      unsigned int max, void (*stop)(void *arg),
			      void *arg)
{
	struct pt_counters_reading r = {
		.rec = rec, .max = max, .stop = stop, .arg = arg, .torn = true,
	};
	unsigned long seq;

	r.zones = !pt_counters_hold_memory(&seq);
	pt_counters_run(&r);
	if (r.zones)
		pt_mem_read_end();
	if (r.torn || pt_mem_online_seq() != seq)
		pt_counters_empty(rec, max);
}
