// SPDX-License-Identifier: GPL-2.0
/*
 * Memory hot-remove held off while the module reads what it frees.
 *
 * The snapshot walk reads struct pages for seconds, across cond_resched(),
 * and with the zone counters it reads each zone's per-CPU lists and their
 * counts; offlining the last memory of a zone frees those lists
 * (zone_pcp_reset()), and removing memory frees its struct pages.
 * get_online_mems(), which the kernel's own walkers take, is not exported,
 * so a memory notifier does the same job from the other side: an offline
 * that begins while a reader runs is refused (MEM_GOING_OFFLINE fails with
 * -EBUSY, which offline_pages() reports and undoes), and a reader that
 * begins while an offline runs is refused (pt_mem_read_begin()), the
 * caller going without: a session start fails with -EBUSY, the counters at
 * stop are left empty.
 *
 * Onlining frees nothing a reader holds, and is not refused: it only makes
 * the zone counters disagree for its duration (the onlined pages join the
 * zone's managed count before its present count, so managed may exceed
 * present).  pt_mem_online_seq() lets a reading of the counters see that
 * an online ran across it, and read again (counters.c).
 *
 * Concurrency: pt_mem_lock, a mutex, guards the counts and the flags, and
 * is held only to test and change them, never across the reading or
 * anything that sleeps for long, so that the notifier (called with the
 * memory hotplug lock and cpus_read_lock() held) never waits for a
 * reader.  Offlines and onlines are serialised by the memory hotplug lock,
 * so one flag each is enough for them.
 */
#include <linux/memory.h>
#include <linux/mutex.h>
#include <linux/notifier.h>

#include "pagetrace.h"

static DEFINE_MUTEX(pt_mem_lock);
static unsigned int pt_mem_readers;	/* under pt_mem_lock */
static bool pt_mem_offlining;		/* under pt_mem_lock */
static bool pt_mem_onlining;		/* under pt_mem_lock */
static unsigned long pt_mem_online_events; /* under pt_mem_lock */

/**
 * pt_mem_read_begin - hold off memory hot-remove for a reading
 *
 * Context: process context; may sleep (briefly, on the mutex).
 *
 * Return: 0, then pt_mem_read_end() when done; or -EBUSY while memory is
 * being offlined.
 */
int pt_mem_read_begin(void)
{
	int ret = 0;

	mutex_lock(&pt_mem_lock);
	if (pt_mem_offlining)
		ret = -EBUSY;
	else
		pt_mem_readers++;
	mutex_unlock(&pt_mem_lock);
	return ret;
}

void pt_mem_read_end(void)
{
	mutex_lock(&pt_mem_lock);
	WARN_ON_ONCE(!pt_mem_readers);
	pt_mem_readers--;
	mutex_unlock(&pt_mem_lock);
}

/**
 * pt_mem_online_seq - where memory onlining stands
 *
 * Context: process context; may sleep (briefly, on the mutex).
 *
 * Return: odd while memory is being onlined; changes when an online begins
 * and when it ends.  A reading that takes it before and after has seen no
 * online when the two are equal and even.
 */
unsigned long pt_mem_online_seq(void)
{
	unsigned long seq;

	mutex_lock(&pt_mem_lock);
	seq = pt_mem_online_events << 1 | pt_mem_onlining;
	mutex_unlock(&pt_mem_lock);
	return seq;
}

static int pt_mem_notify(struct notifier_block *nb, unsigned long action,
			 void *arg)
{
	int ret = NOTIFY_OK;

	mutex_lock(&pt_mem_lock);
	switch (action) {
	case MEM_GOING_OFFLINE:
		if (pt_mem_readers)
			ret = notifier_from_errno(-EBUSY);
		else
			pt_mem_offlining = true;
		break;
	case MEM_OFFLINE:
	case MEM_CANCEL_OFFLINE:
		pt_mem_offlining = false;
		break;
	/*
	 * A flag, not the sequence's parity alone: a notifier before this
	 * one may refuse MEM_GOING_ONLINE, and then this one sees only the
	 * MEM_CANCEL_ONLINE; one registered mid-online sees only the end.
	 */
	case MEM_GOING_ONLINE:
		pt_mem_onlining = true;
		pt_mem_online_events++;
		break;
	case MEM_ONLINE:
	case MEM_CANCEL_ONLINE:
		pt_mem_onlining = false;
		pt_mem_online_events++;
		break;
	}
	mutex_unlock(&pt_mem_lock);
	return ret;
}

static struct notifier_block pt_mem_nb = {
	.notifier_call = pt_mem_notify,
};

int pt_mem_guard_init(void)
{
	return register_memory_notifier(&pt_mem_nb);
}

void pt_mem_guard_exit(void)
{
	unregister_memory_notifier(&pt_mem_nb);
}
