// SPDX-License-Identifier: GPL-2.0
/*
 * Which clock a session's events are stamped with.
 *
 * The format needs a clock that never goes backwards on one CPU and that
 * orders events across CPUs: local_clock() is the cheapest the kernel
 * offers for that, and is what we use unless something cheaper gives the
 * same nanoseconds.  On x86, local_clock() is sched_clock(), which is the
 * TSC scaled by a multiplier and a shift derived from tsc_khz, plus an
 * offset.  When the kernel itself trusts that (see pt_tsc_usable()), we
 * read the TSC and apply the same multiplier and shift ourselves, with an
 * offset taken from local_clock() when the session starts: the header says
 * PAGETRACE_CLOCK_TSC, and the times are local_clock() nanoseconds to
 * within the rounding of the scaling.
 *
 * The choice is made once per session, before its hooks are attached, and
 * holds until they are detached, but for a sleep of the system (below):
 * pt_tsc never changes under a running hook, and the static key only
 * from TSC to local_clock().  clock=local forces local_clock().
 *
 * Limitation: if the kernel marks the TSC unstable during a session (its
 * clocksource watchdog saw it drift), the session keeps using it.  Each
 * CPU's times still never go backwards (the writer clamps them), but they
 * may drift against other CPUs' as the TSCs do.
 *
 * Suspend and hibernation are another matter: the TSC may restart from 0
 * across them, and on resume x86 re-bases sched_clock()
 * (tsc_restore_sched_clock_state()) so that local_clock() carries on
 * where it stopped.  Our offset, fixed at the session start, would not
 * follow: if the TSC restarts lower, every event after the resume could
 * be stamped before the ones before the suspend.  So when the system is
 * about to sleep (sleep.c), a session on the TSC goes over to
 * local_clock() for the rest of its life (pt_sessions_leave_tsc()):
 * pt_clock_sleep_begin() keeps new sessions off the TSC and marks every
 * chunk closed from then on with PAGETRACE_CHUNK_CLOCK_LOCAL
 * (pt_clock_chunk_flags), the session moves each CPU's writer over
 * (pt_writer_leave_tsc()), and pt_clock_leave_tsc() switches the static
 * key off.  The restart itself is not reproduced here: QEMU's TSC keeps
 * counting across the guest's suspend to RAM.  The clock tests suspend a
 * guest with a session on the TSC and check that its times stay in order
 * (selftests/pagetrace_clock_test.c, suspend_to_ram_keeps_order_*).
 *
 * The two clocks disagree by pt_tsc.error_ns while the kernel trusts the
 * TSC, and by any amount once it has marked the TSC unstable (above):
 * local_clock() may be behind the TSC's last times.  The writer moves
 * over on each CPU at one instant, with interrupts off, and from a floor
 * at that CPU's TSC time then; its events never go before it
 * (pt_writer_leave_tsc()), so a CPU's times stay in order across the
 * change, whatever the two clocks say.
 */
#include <linux/clocksource.h>
#include <linux/cpufreq.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/time64.h>
#include <linux/timekeeping.h>

#ifdef CONFIG_X86_TSC
#include <asm/cpufeature.h>
#include <asm/hypervisor.h>
#endif

#include "clock.h"
#include "pagetrace.h"

struct pt_tsc pt_tsc __read_mostly;
DEFINE_STATIC_KEY_FALSE(pt_clock_tsc);
/* Or'ed into every chunk's flags by pt_close_chunk(); see above. */
u16 pt_clock_chunk_flags __read_mostly;

/*
 * Serialises the clock's changes: a session choosing its clock against
 * the system leaving the TSC before it sleeps.  Guards pt_clock_sleeping
 * and the writes of pt_clock_tsc and pt_clock_chunk_flags.
 */
static DEFINE_MUTEX(pt_clock_lock);
/* Between the notice of a suspend or hibernation and the resume. */
static bool pt_clock_sleeping;

enum pt_clock_choice { PT_CLOCK_AUTO, PT_CLOCK_LOCAL };

static const char * const pt_clock_names[] = {
	[PT_CLOCK_AUTO]		= "auto",
	[PT_CLOCK_LOCAL]	= "local",
};

static unsigned int pt_clock_choice = PT_CLOCK_AUTO;
static struct pt_choice_param pt_clock_param = {
	&pt_clock_choice, pt_clock_names, ARRAY_SIZE(pt_clock_names)
};
module_param_cb(clock, &pt_choice_param_ops, &pt_clock_param, 0644);
MODULE_PARM_DESC(clock,
		 "Event clock: auto (the TSC scaled as sched_clock scales it, where the kernel trusts it; else local_clock) or local (default auto)");

/*
 * For tests only: nanoseconds added to the TSC clock, so that it runs
 * ahead of local_clock() as a TSC the kernel stopped trusting may; a test
 * then sees that a CPU's times stay in order when its session leaves the
 * TSC (selftests/pagetrace_clock_test.c).  0 in use; only root may read
 * or set it.
 */
static ulong pt_tsc_skew_ns;
module_param_named(tsc_skew_ns, pt_tsc_skew_ns, ulong, 0600);
MODULE_PARM_DESC(tsc_skew_ns,
		 "Testing: nanoseconds the TSC clock runs ahead of local_clock() (default 0)");

#ifdef CONFIG_X86_TSC
/*
 * Whether local_clock() is the TSC scaled by constant factors we can
 * reproduce:
 *  - the kernel still trusts the TSC: it marks it unstable when the CPUs'
 *    TSCs are not synchronised, or its watchdog saw it drift, and then
 *    local_clock() stops being sched_clock() alone;
 *  - no hypervisor: under KVM, Xen, Hyper-V or VMware sched_clock() may be
 *    a paravirtual clock of its own rate (QEMU's TCG announces none);
 *  - the TSC rate does not follow the CPU frequency, or no cpufreq driver
 *    changes it: otherwise the kernel rescales sched_clock() on every
 *    frequency change;
 *  - no kexec jump: a jump to another kernel and back (KEXEC_JUMP, which
 *    no Debian kernel enables) re-bases sched_clock() on the return like
 *    a resume, without the PM notice that moves a session off the TSC.
 */
static bool pt_tsc_usable(void)
{
	return !IS_ENABLED(CONFIG_KEXEC_JUMP) &&
	       boot_cpu_has(X86_FEATURE_TSC) && tsc_khz &&
	       !check_tsc_unstable() &&
	       hypervisor_is_type(X86_HYPER_NATIVE) &&
	       (boot_cpu_has(X86_FEATURE_CONSTANT_TSC) ||
		!cpufreq_get_current_driver());
}

/* Tries at anchoring the TSC to local_clock(); the tightest one is kept. */
#define PT_TSC_ANCHOR_TRIES	8

/*
 * The kernel's cyc2ns factors for tsc_khz (arch/x86/kernel/tsc.c), and an
 * offset to local_clock().  local_clock() reads the TSC somewhere between
 * our two reads around it, so the midpoint is off by at most half their
 * distance: that bound is @error_ns (a few ns on hardware; under TCG the
 * TSC counts instructions, and it is some 100 ns).
 */
static void pt_tsc_setup(void)
{
	u64 ns, c1, c2, mid = 0, at = 0, best = U64_MAX;
	unsigned long flags;
	u32 mult, shift;
	int i;

	clocks_calc_mult_shift(&mult, &shift, tsc_khz, NSEC_PER_MSEC, 0);
	/* The kernel keeps the shift below 32, for its 32-bit helpers. */
	if (shift == 32) {
		shift = 31;
		mult >>= 1;
	}
	for (i = 0; i < PT_TSC_ANCHOR_TRIES; i++) {
		local_irq_save(flags);
		c1 = rdtsc_ordered();
		ns = local_clock();
		c2 = rdtsc_ordered();
		local_irq_restore(flags);
		if (c2 - c1 < best) {
			best = c2 - c1;
			mid = c1 + best / 2;
			at = ns;
		}
	}
	pt_tsc.mult = mult;
	pt_tsc.shift = shift;
	pt_tsc.offset = at - pt_tsc_scale(mid, mult, shift) +
			READ_ONCE(pt_tsc_skew_ns);
	pt_tsc.error_ns = pt_tsc_scale(best - best / 2, mult, shift) + 1;
}
#else
static bool pt_tsc_usable(void)
{
	return false;
}

static void pt_tsc_setup(void)
{
}
#endif

/**
 * pt_clock_select - choose the clock of a session about to start
 *
 * Context: before the session's hooks are attached (pt_tsc and the static
 * key change here; the key also in pt_clock_leave_tsc(), hooks attached).
 * May sleep.
 *
 * Return: PAGETRACE_CLOCK_TSC or PAGETRACE_CLOCK_LOCAL, for the header.
 */
unsigned int pt_clock_select(void)
{
	unsigned int clock = PAGETRACE_CLOCK_LOCAL;

	mutex_lock(&pt_clock_lock);
	WRITE_ONCE(pt_clock_chunk_flags, 0);
	if (READ_ONCE(pt_clock_choice) == PT_CLOCK_AUTO &&
	    !pt_clock_sleeping && pt_tsc_usable()) {
		pt_tsc_setup();
		static_branch_enable(&pt_clock_tsc);
		clock = PAGETRACE_CLOCK_TSC;
	} else {
		static_branch_disable(&pt_clock_tsc);
		pt_tsc.error_ns = 0;
	}
	mutex_unlock(&pt_clock_lock);
	return clock;
}

/**
 * pt_clock_sleep_begin - the system is about to sleep: keep new sessions
 * off the TSC
 *
 * Context: process context; may sleep.
 *
 * Return: whether events are stamped from the TSC now, so that the
 * caller moves the session's writers over and calls pt_clock_leave_tsc();
 * chunks closed from here on say they may hold local_clock() times.
 */
bool pt_clock_sleep_begin(void)
{
	bool tsc;

	mutex_lock(&pt_clock_lock);
	pt_clock_sleeping = true;
	tsc = static_key_enabled(&pt_clock_tsc);
	/*
	 * Chunks closed from here on may hold local_clock() times: the
	 * writers change over one by one before the key goes off.
	 */
	if (tsc)
		WRITE_ONCE(pt_clock_chunk_flags, PAGETRACE_CHUNK_CLOCK_LOCAL);
	mutex_unlock(&pt_clock_lock);
	return tsc;
}

/**
 * pt_clock_leave_tsc - stamp every event with local_clock() from now on
 *
 * Called after pt_clock_sleep_begin() and once the writers of the session
 * on the TSC, if one runs, left it (pt_writer_leave_tsc()): this turns
 * the TSC's fast path off.  May sleep.
 */
void pt_clock_leave_tsc(void)
{
	mutex_lock(&pt_clock_lock);
	if (static_key_enabled(&pt_clock_tsc)) {
		static_branch_disable(&pt_clock_tsc);
		pr_info("pagetrace: the system is going to sleep: events are stamped with local_clock(), not the TSC, until the next session\n");
	}
	mutex_unlock(&pt_clock_lock);
}

/**
 * pt_clock_sleep_end - the system is back: sessions may choose the TSC
 *
 * Context: process context; may sleep.
 */
void pt_clock_sleep_end(void)
{
	mutex_lock(&pt_clock_lock);
	pt_clock_sleeping = false;
	mutex_unlock(&pt_clock_lock);
}
