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
 * holds until they are detached (the static key and pt_tsc do not change
 * under a running hook).  clock=local forces local_clock().
 *
 * Limitation: if the kernel marks the TSC unstable during a session (its
 * clocksource watchdog saw it drift), the session keeps using it.  Each
 * CPU's times still never go backwards (the writer clamps them), but they
 * may drift against other CPUs' as the TSCs do.
 */
#include <linux/clocksource.h>
#include <linux/cpufreq.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
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
 *    frequency change.
 */
static bool pt_tsc_usable(void)
{
	return boot_cpu_has(X86_FEATURE_TSC) && tsc_khz &&
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
	pt_tsc.offset = at - pt_tsc_scale(mid, mult, shift);
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
 * Context: with no hook attached (the static key and pt_tsc change here).
 * May sleep.
 *
 * Return: PAGETRACE_CLOCK_TSC or PAGETRACE_CLOCK_LOCAL, for the header.
 */
unsigned int pt_clock_select(void)
{
	if (READ_ONCE(pt_clock_choice) == PT_CLOCK_AUTO && pt_tsc_usable()) {
		pt_tsc_setup();
		static_branch_enable(&pt_clock_tsc);
		return PAGETRACE_CLOCK_TSC;
	}
	static_branch_disable(&pt_clock_tsc);
	pt_tsc.error_ns = 0;
	return PAGETRACE_CLOCK_LOCAL;
}
