/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The context a hook runs in, as the hot path asks it.
 */
#ifndef PAGETRACE_CONTEXT_H
#define PAGETRACE_CONTEXT_H

#include <linux/kconfig.h>
#include <linux/preempt.h>

/*
 * Whether the hook runs for a task, not in an NMI or a hard or soft
 * interrupt: in_task(), which it must equal.  On PREEMPT_RT a softirq runs
 * in a task and in_serving_softirq() reads that task's count, not the
 * preempt count; RT's in_task() ORs the two into one branch, which kept
 * two more callee-saved registers live in the fast path (pushed and popped
 * on every event) and takes two loads, two ands and an or before its
 * branch.  The RT branch below is RT's in_task() of include/linux/preempt.h
 * (5.10-rt to 7.3-rt) as two branches, which need neither: two tests, the
 * preempt count's and the task's softirq count's, each with its branch
 * (7.3-rt, objdump: the cgroup filter keeps an event in 13 instructions,
 * not 14; a free's type is known two instructions sooner).  Elsewhere
 * in_task() is one test of the preempt count, which two branches would
 * make longer.
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

#endif /* PAGETRACE_CONTEXT_H */
