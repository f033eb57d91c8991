/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trace clock, read on the hot path (clock.c chooses it per session).
 *
 * local_clock() is sched_clock() behind a call, a stability check, a
 * preemption-disabled section and a seqcount-latched read of per-CPU
 * scaling data: about 40 instructions, a third of the whole hook.  Where
 * sched_clock() is the TSC scaled by constant factors (a stable,
 * synchronised TSC on bare metal), the same nanoseconds come from the TSC
 * and one multiply with those factors, in 7 instructions.
 */
#ifndef _PAGETRACE_CLOCK_H
#define _PAGETRACE_CLOCK_H

#include <linux/jump_label.h>
#include <linux/sched/clock.h>
#include <linux/types.h>

#ifdef CONFIG_X86_TSC
#include <asm/tsc.h>
#endif

/*
 * struct pt_tsc - TSC cycles to local_clock() nanoseconds
 * @mult: as the kernel's cyc2ns scale for tsc_khz
 * @shift: as the kernel's cyc2ns shift
 * @offset: local_clock() - (tsc * @mult >> @shift) at the session start
 * @error_ns: how far that offset may be off (pagetrace_rec_session)
 *
 * Written by pt_clock_select() before the session's hooks are attached,
 * read-only while they are.
 */
struct pt_tsc {
	u32	mult;
	u32	shift;
	u64	offset;
	u32	error_ns;
};

extern struct pt_tsc pt_tsc;
DECLARE_STATIC_KEY_FALSE(pt_clock_tsc);
extern u16 pt_clock_chunk_flags;

/* Whether events are stamped from the TSC now (the header may say TSC when not). */
static __always_inline bool pt_clock_is_tsc(void)
{
	return IS_ENABLED(CONFIG_X86_TSC) &&
	       static_branch_likely(&pt_clock_tsc);
}

#ifdef CONFIG_X86_TSC
/*
 * @cycles * @mult >> @shift, as mul_u64_u32_shr() but without its
 * unsigned __int128, which makes GCC realign the stack (the kernel's is
 * 8-byte aligned) and so give the hot path a frame.  @shift < 64.
 */
static __always_inline u64 pt_tsc_scale(u64 cycles, u32 mult, u32 shift)
{
	u64 lo, hi;

	asm ("mulq %[mult]\n\t"
	     "shrdq %%cl, %%rdx, %%rax"
	     : "=a" (lo), "=d" (hi)
	     : "a" (cycles), [mult] "rm" ((u64)mult), "c" (shift)
	     : "cc");
	return lo;
}

/*
 * The TSC in local_clock() nanoseconds: while pt_clock_is_tsc(), and for
 * the floors of the change to local_clock() (pt_buffers_leave_tsc(),
 * before the key goes off).
 */
static __always_inline u64 pt_tsc_now(void)
{
	return pt_tsc_scale(rdtsc(), pt_tsc.mult, pt_tsc.shift) +
	       pt_tsc.offset;
}
#else
static __always_inline u64 pt_tsc_now(void)
{
	return 0;
}
#endif

/* Now on the session's clock (PAGETRACE_CLOCK_LOCAL or _TSC), in ns. */
static __always_inline u64 pt_clock_now(void)
{
	return pt_clock_is_tsc() ? pt_tsc_now() : local_clock();
}

#endif /* _PAGETRACE_CLOCK_H */
