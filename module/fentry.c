// SPDX-License-Identifier: GPL-2.0
/*
 * The fentry backend's mechanism: attach a trampoline of fentry.h to a
 * function's fentry call site as an ftrace direct call, and keep count of
 * the calls that run below a return (fexit) trampoline.
 *
 * Attach and detach go through an ftrace_ops per hook, filtered on the one
 * function: register_ftrace_direct_multi() on 6.1, register_ftrace_direct()
 * from 6.3 on (the same call, renamed).  If another ftrace user shares the
 * function (a kprobe, the function tracer), ftrace calls it first and then
 * jumps to our trampoline; the trampoline sees the same stack either way.
 *
 * The kprobe backend borrows the return trampoline on kernels that are not
 * PREEMPT_RT: pt_fexit_kprobe_register() puts a kprobe on the allocator's
 * fentry call site whose handler sends the call into the trampoline, in
 * place of a kretprobe (whose rethook costs several times the kprobe).
 *
 * Calls in flight: a return trampoline is on the stack for as long as its
 * function runs, sleeps included (an allocation may wait in reclaim for
 * seconds).  Its text must not go away meanwhile.  pt_fexit_enter() and
 * pt_fexit_exit() count those calls in a per-CPU counter: one
 * this_cpu_inc() or this_cpu_dec() each, a single instruction that needs
 * no lock and no atomic, safe against interrupts and preemption.  A task
 * may enter on one CPU and leave on another, so only the sum over CPUs
 * means anything; once the trampolines are detached no call adds to it,
 * and pt_fentry_drain() (module exit) waits for it to reach zero.  The few
 * instructions outside the counted window (before enter(), after exit())
 * never sleep; an RCU-tasks grace period, which waits for every task to
 * pass a voluntary context switch, covers them.
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/string.h>

#include "fentry.h"
#include "pagetrace.h"

static DEFINE_PER_CPU(long, pt_fexit_calls);
/* A trampoline was attached since the module was loaded. */
static bool pt_fentry_used;

/* Called by a return trampoline before the function's body. */
void notrace pt_fexit_enter(void)
{
	this_cpu_inc(pt_fexit_calls);
}

/* Called by a return trampoline's exit handler, last. */
void notrace pt_fexit_leave(void)
{
	this_cpu_dec(pt_fexit_calls);
}

static long pt_fexit_in_flight(void)
{
	long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(pt_fexit_calls, cpu);
	return sum;
}

#ifdef PT_HAVE_FTRACE_DIRECT_MULTI
#define pt_register_direct(ops, addr)	register_ftrace_direct_multi(ops, addr)
static int pt_unregister_direct(struct ftrace_ops *ops, unsigned long addr)
{
	int ret = unregister_ftrace_direct_multi(ops, addr);

	ftrace_free_filter(ops);
	return ret;
}
#else
#define pt_register_direct(ops, addr)	register_ftrace_direct(ops, addr)
#define pt_unregister_direct(ops, addr)	unregister_ftrace_direct(ops, addr, true)
#endif

/*
 * Where each hooked function starts, looked up once per module lifetime.
 * ftrace_set_filter() by name matches the name against every ftrace
 * record, some 40,000 kallsyms lookups (90 ms per function under TCG, on
 * every session start); ftrace_set_filter_ip() with the address is one.
 * The kprobe core resolves names with kallsyms_lookup_name(), which
 * modules cannot call: a kprobe registered disabled patches nothing and
 * tells the address.  Only session starts and module init use the cache,
 * and they never run at once (one session at a time, and init registers
 * the device last): no lock.
 */
#define PT_FENTRY_MAX_SYMS	8

static struct pt_fentry_addr {
	const char	*symbol;
	unsigned long	addr;
} pt_fentry_addrs[PT_FENTRY_MAX_SYMS];

/* @symbol's address (its fentry call site's function), or 0. */
static unsigned long pt_fentry_lookup(const char *symbol)
{
	struct kprobe kp = { .symbol_name = symbol,
			     .flags = KPROBE_FLAG_DISABLED };
	unsigned int i;

	for (i = 0; i < PT_FENTRY_MAX_SYMS && pt_fentry_addrs[i].symbol; i++)
		if (!strcmp(pt_fentry_addrs[i].symbol, symbol))
			return pt_fentry_addrs[i].addr;
	if (i == PT_FENTRY_MAX_SYMS || register_kprobe(&kp))
		return 0;
	unregister_kprobe(&kp);
	pt_fentry_addrs[i].symbol = symbol;
	pt_fentry_addrs[i].addr = (unsigned long)kp.addr;
	return (unsigned long)kp.addr;
}

/**
 * pt_fentry_attach - make @symbol's fentry call site call @tramp
 * @f: the attachment, zeroed or detached
 * @symbol: the function
 * @tramp: a trampoline of fentry.h
 * @body: for a return trampoline, the address it calls (@symbol +
 *	  PT_FENTRY_END), else 0
 *
 * A return trampoline calls @body directly, so the call site must end
 * exactly there: once attached, the 5 bytes before @body must be the call
 * ftrace patched in (0xe8), or the trampoline would jump into the middle
 * of an instruction.  Checked, never assumed.
 *
 * Return: 0, -ENOENT if @symbol has no fentry call site (missing, inlined
 * or notrace), -EILSEQ if the call site is not where @body says, or
 * another error from ftrace (-EBUSY: another direct call is there
 * already, e.g. a BPF trampoline).
 */
int pt_fentry_attach(struct pt_fentry *f, const char *symbol, void *tramp,
		     unsigned long body)
{
	unsigned long addr = pt_fentry_lookup(symbol);
	char name[KSYM_NAME_LEN];
	int ret;

	pt_fentry_used = true;
	memset(&f->ops, 0, sizeof(f->ops));
	f->tramp = (unsigned long)tramp;
	if (addr) {
		/* The call site at or right after @addr (after an endbr64). */
		ret = ftrace_set_filter_ip(&f->ops, addr, 0, 1);
	} else {
		/* ftrace_set_filter() parses (and may modify) its buffer. */
		strscpy(name, symbol, sizeof(name));
		ret = ftrace_set_filter(&f->ops, name, strlen(name), 1);
	}
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	ret = pt_register_direct(&f->ops, f->tramp);
	if (ret) {
		ftrace_free_filter(&f->ops);
		return ret;
	}
	if (body && *(u8 *)(body - PT_FENTRY_CALL_SIZE) != 0xe8) {
		pt_fentry_detach(f);
		return -EILSEQ;
	}
	return 0;
}

/**
 * pt_fexit_kprobe_register - a kprobe that sends @symbol's calls through a
 *			      PT_FEXIT_AFTER_KPROBE trampoline
 * @kp: the kprobe, unregistered
 * @symbol: the function
 * @redirect: the kprobe's handler: sets the saved instruction pointer to
 *	      the trampoline and returns 1
 * @body: the address the trampoline calls (@symbol + PT_FENTRY_END)
 *
 * The kprobe must sit on @symbol's fentry call site, reached through
 * ftrace, for two reasons: ftrace takes the new instruction pointer only
 * from an ftrace_ops with IPMODIFY (the kprobe core uses one for kprobes
 * with a post handler, hence an empty one), and the trampoline resumes
 * the function right after that call site.  Checked, never assumed.
 * Unregister with unregister_kprobe(); calls already below the trampoline
 * go on, and pt_fentry_drain() waits for them at module exit.
 *
 * Return: 0; -EBUSY if another kprobe is on @symbol, or another ftrace
 * user modifies its instruction pointer already (a live patch); -EILSEQ
 * if the kprobe is not on the fentry call site; or another error of
 * register_kprobe().
 */
int pt_fexit_kprobe_register(struct kprobe *kp, const char *symbol,
			     kprobe_pre_handler_t redirect, unsigned long body)
{
	bool shared;
	int ret;

	/*
	 * Another kprobe there already (perf, a trace kprobe event, BPF)?
	 * Ours would join its aggregate, whose ftrace_ops has no IPMODIFY,
	 * and its handler, running after ours, would never run again.  A
	 * disabled probe without a post handler finds out harmlessly: it
	 * is linked into an aggregate if there is one.
	 */
	*kp = (struct kprobe){ .symbol_name = symbol,
			       .flags = KPROBE_FLAG_DISABLED };
	ret = register_kprobe(kp);
	if (ret)
		return ret;
	shared = !list_empty(&kp->list);
	unregister_kprobe(kp);
	if (shared)
		return -EBUSY;

	*kp = (struct kprobe){ .symbol_name = symbol, .pre_handler = redirect,
			       .post_handler = pt_kprobe_no_post };
	pt_fentry_used = true;
	ret = register_kprobe(kp);
	if (ret)
		return ret;
	if (!(kp->flags & KPROBE_FLAG_FTRACE) ||
	    (unsigned long)kp->addr + PT_FENTRY_CALL_SIZE != body) {
		unregister_kprobe(kp);
		return -EILSEQ;
	}
	return 0;
}

/* Undo pt_fentry_attach(); calls already in a trampoline go on. */
void pt_fentry_detach(struct pt_fentry *f)
{
	WARN_ON_ONCE(pt_unregister_direct(&f->ops, f->tramp));
}

/**
 * pt_fentry_drain - wait until no task is inside a trampoline
 *
 * For module exit, after every trampoline was detached: an RCU-tasks
 * grace period lets every task that entered a trampoline reach its
 * counter, the calls still below a return trampoline finish (waiting for
 * them, however long they take, is what keeps the text they return to in
 * place), then another grace period lets every task off the uncounted
 * instructions at the end.
 */
void pt_fentry_drain(void)
{
	unsigned int waited = 0;

	if (!pt_fentry_used)
		return;
	/*
	 * A task may still be between a redirecting kprobe's handler and
	 * pt_fexit_enter(), preempted or not, uncounted: unregistering a
	 * kprobe waits for its handler, not for that.  Let it count itself
	 * first (a direct call's detach waited for this already).
	 */
	synchronize_rcu_tasks();
	while (pt_fexit_in_flight()) {
		if (++waited % 500 == 0)
			pr_info("pagetrace: waiting for %ld allocation calls to return\n",
				pt_fexit_in_flight());
		msleep(20);
	}
	synchronize_rcu_tasks();
}
