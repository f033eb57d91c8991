/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The context a hook runs in, as the hooks ask it: for a task or in an
 * interrupt, and which one.
 */
#ifndef PAGETRACE_CONTEXT_H
#define PAGETRACE_CONTEXT_H

#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/types.h>

/*
 * Whether the hook runs for a task: in_task()'s answer, false in an NMI
 * and in a hard or soft interrupt.  On PREEMPT_RT a softirq runs in a
 * task and in_serving_softirq() reads that task's count, not the preempt
 * count; RT's in_task() ORs the two into one value before its branch,
 * which on the hot path kept two more callee-saved registers live (pushed
 * and popped on every event).  Made as two tests, each with its branch,
 * it needs neither.  Elsewhere in_task() is one test of the preempt count,
 * which two branches would make longer.
 */
static __always_inline bool pt_in_task(void)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		return in_task();
	if (preempt_count() & (NMI_MASK | HARDIRQ_MASK))
		return false;
	if (in_serving_softirq())
		return false;
	return true;
}

/*
 * The context a hook runs in: NMI and hardirq nesting, and whether a
 * softirq is being served (task, bottom halves disabled or not, counts as
 * task).  A call and the allocations it makes run in one context; an
 * interrupt that allocates while a call of the task it interrupted is on
 * the task's rethook list runs in another.
 */
static __always_inline unsigned int pt_context(void)
{
	return (preempt_count() & (NMI_MASK | HARDIRQ_MASK)) |
	       (in_serving_softirq() ? SOFTIRQ_OFFSET : 0);
}

/*
 * The context of the function a kprobe handler probes.  A kprobe that is
 * a breakpoint runs its handler as an NMI (one that the kprobe core
 * turned into a jump does not): the caller's context is the handler's
 * without it.  For probes on functions no real NMI calls.
 */
static __always_inline unsigned int pt_probed_context(void)
{
	unsigned int ctx = pt_context();

	return in_nmi() ? ctx - (NMI_OFFSET + HARDIRQ_OFFSET) : ctx;
}

/*
 * Whose context an event is of: the hook's own (a tracepoint's probe, a
 * kprobe run from an ftrace site, a kretprobe's handlers), or, for a
 * kprobe that is a breakpoint, the code the breakpoint stopped.  A
 * constant wherever the writer is inlined, so that the tracepoints' path
 * tests nothing more.
 */
enum pt_event_ctx {
	PT_CTX_HOOK,
	PT_CTX_STOPPED,
};

/*
 * pt_in_task() of the code an event's hook reports on.  On x86 a kprobe's
 * breakpoint enters exc_int3(), which for kernel code runs the handler
 * under irqentry_nmi_enter(): one NMI level (and its hardirq count) above
 * the code it stopped, which pt_probed_context() takes off, so that a
 * reclaiming task's free seen there is still the task's, and a reclaim,
 * and a cgroup filter keeps it.  pt_probed_context() tests in_nmi() first:
 * a breakpoint kprobe whose address another user's optimized probe
 * shares may, for a moment, be run from the jump (no NMI) instead.
 */
static __always_inline bool pt_event_in_task(enum pt_event_ctx ctx)
{
	if (ctx == PT_CTX_STOPPED)
		return !(pt_probed_context() &
			 (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET));
	return pt_in_task();
}

#endif /* PAGETRACE_CONTEXT_H */
