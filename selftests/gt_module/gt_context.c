// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_gt: allocations in contexts other than a task's plain call,
 * and another user of the allocator's ftrace sites.  softirq and hardirq
 * allocate in a timer and an irq_work; nolock through the allocator for
 * any context (6.15+); reenter_nmi and reenter_kprobe from a kprobe on a
 * function pagetrace calls while it writes an event, as an NMI or a BPF
 * program would; ipmodify_on and ipmodify_off hold and release the
 * allocator's functions as a live patch would (gt.h).
 */
#include <linux/completion.h>
#include <linux/ftrace.h>
#include <linux/gfp.h>
#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/timer.h>

#include "gt.h"

/* Calls renamed between our kernels: the new name where there is one. */
#ifdef timer_container_of
#define gt_from_timer(var, timer, field)	timer_container_of(var, timer, field)
#else
#define gt_from_timer(var, timer, field)	from_timer(var, timer, field)
#endif
#ifdef GT_HAVE_TIMER_DELETE_SYNC
#define gt_timer_delete_sync(timer)		timer_delete_sync(timer)
#else
#define gt_timer_delete_sync(timer)		del_timer_sync(timer)
#endif
#ifdef GT_HAVE_TIMER_DESTROY_ON_STACK
#define gt_timer_destroy_on_stack(timer)	timer_destroy_on_stack(timer)
#else
#define gt_timer_destroy_on_stack(timer)	destroy_timer_on_stack(timer)
#endif
#ifdef in_hardirq
#define gt_in_hardirq()				in_hardirq()
#else
#define gt_in_hardirq()				in_irq()
#endif

/*
 * Allocations in interrupts: a timer (softirq) and an irq_work (a hard
 * interrupt, by self-IPI).  The callback allocates and frees one page and
 * keeps its own window; the op waits for it.
 */
struct gt_irq {
	struct timer_list	timer;
	struct irq_work		work;
	struct completion	done;
	unsigned long		pfn;
	u64			t[4];
	bool			in_irq;
};

static void gt_irq_alloc(struct gt_irq *g, bool in_irq)
{
	struct page *page;

	g->in_irq = in_irq;
	g->t[0] = local_clock();
	page = alloc_page(GFP_ATOMIC | __GFP_NOWARN);
	g->t[1] = local_clock();
	if (page) {
		g->pfn = page_to_pfn(page);
		g->t[2] = local_clock();
		__free_page(page);
		g->t[3] = local_clock();
	}
	complete(&g->done);
}

static void gt_softirq_fn(struct timer_list *t)
{
	struct gt_irq *g = gt_from_timer(g, t, timer);

	gt_irq_alloc(g, in_serving_softirq());
}

static void gt_hardirq_fn(struct irq_work *w)
{
	struct gt_irq *g = container_of(w, struct gt_irq, work);

	gt_irq_alloc(g, gt_in_hardirq());
}

static void gt_irq_report(const char *op, struct gt_irq *g)
{
	if (!g->in_irq)
		return gt_skip(op, "the callback did not run in that context");
	if (!g->pfn)
		return gt_skip(op, "GFP_ATOMIC allocation failed");
	gt_event(op, "alloc", g->pfn, 1, g->t[0], g->t[1]);
	gt_event(op, "free", g->pfn, 1, g->t[2], g->t[3]);
}

void gt_softirq(const char *op)
{
	struct gt_irq g = { };

	init_completion(&g.done);
	timer_setup_on_stack(&g.timer, gt_softirq_fn, TIMER_PINNED);
	mod_timer(&g.timer, jiffies + 1);
	wait_for_completion(&g.done);
	gt_timer_delete_sync(&g.timer);
	gt_timer_destroy_on_stack(&g.timer);
	gt_irq_report(op, &g);
}

void gt_hardirq(const char *op)
{
	struct gt_irq g = { };

	/* PREEMPT_RT's page allocator takes sleeping locks. */
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return gt_skip(op, "PREEMPT_RT allocates no pages in hard interrupts");
	init_completion(&g.done);
	init_irq_work(&g.work, gt_hardirq_fn);
	irq_work_queue(&g.work);
	wait_for_completion(&g.done);
	irq_work_sync(&g.work);
	gt_irq_report(op, &g);
}

/*
 * The allocator that runs in any context (6.15+), as BPF programs use it:
 * try_alloc_pages() in 6.15, alloc_pages_nolock() since, which took a gfp
 * argument later on.
 */
#ifdef GT_HAVE_NOLOCK
#if defined(GT_HAVE_TRY_ALLOC_PAGES)
#define gt_nolock_alloc()	try_alloc_pages(NUMA_NO_NODE, 0)
#elif defined(GT_HAVE_NOLOCK_GFP)
#define gt_nolock_alloc()	alloc_pages_nolock(0, NUMA_NO_NODE, 0)
#else
#define gt_nolock_alloc()	alloc_pages_nolock(NUMA_NO_NODE, 0)
#endif
#endif

void gt_nolock(const char *op)
{
#ifdef GT_HAVE_NOLOCK
	struct page *page;
	u64 t0, t1;

	GT_TIMED(page = gt_nolock_alloc());
	if (!page)
		return gt_skip(op, "alloc_pages_nolock failed");
	gt_event(op, "alloc", page_to_pfn(page), 1, t0, t1);
	/* free_pages_nolock() is not exported: an ordinary free. */
	GT_TIMED(__free_page(page));
	gt_event(op, "free", page_to_pfn(page), 1, t0, t1);
#else
	gt_skip(op, "no alloc_pages_nolock() before 6.15");
#endif
}

/*
 * Allocations that come while pagetrace is writing an event on the same
 * CPU, as an NMI or a BPF program on a kprobe can make them: a kprobe on a
 * function the writer calls allocates a page, in this task only.
 *  reenter_nmi     irq_work_queue(), called as a buffer closes (to wake
 *                  the reader); it has no ftrace site, so its kprobe is a
 *                  breakpoint (kept one by a post handler), whose handler
 *                  runs as an NMI
 *  reenter_kprobe  __unwind_start(), called for a sampled allocation's
 *                  call stack (the test samples every one): an ftrace
 *                  site, so the handler runs where the writer does
 * The op meanwhile allocates and frees enough pages to close buffers of a
 * few KiB, and frees the probe's pages at the end (PREEMPT_RT frees none
 * with preemption off).  Each page the probe allocated is reported; the
 * test expects each event either traced or counted lost, never gone
 * silently.
 */
#define GT_REENTER_MAX	256

/*
 * Where the probed function must return to for the probe to allocate:
 * pagetrace.ko's memory, set by the test; 0, 0: anywhere.  Others in this
 * task unwind stacks too (lockdep, KASAN, page_owner), from places where
 * allocating is no good.
 */
static unsigned long gt_reenter_lo, gt_reenter_hi;
module_param_named(reenter_lo, gt_reenter_lo, ulong, 0600);
module_param_named(reenter_hi, gt_reenter_hi, ulong, 0600);

static struct {
	struct task_struct	*task;
	unsigned int		n;
	struct page		*page[GT_REENTER_MAX];
	u64			t[GT_REENTER_MAX][4];
} gt_reenter_state;

static int gt_reenter_pre(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int i = gt_reenter_state.n;
	struct page *page;
	u64 *t;

	unsigned long caller = regs_get_kernel_stack_nth(regs, 0);

	if (current != READ_ONCE(gt_reenter_state.task) || i >= GT_REENTER_MAX)
		return 0;
	/* At the function's entry, the stack's top is the return address. */
	if (gt_reenter_hi && (caller < gt_reenter_lo || caller >= gt_reenter_hi))
		return 0;
	t = gt_reenter_state.t[i];
	t[0] = local_clock();
#ifdef GT_HAVE_NOLOCK
	page = gt_nolock_alloc();
#else
	page = alloc_page(GFP_ATOMIC | __GFP_NOWARN);
#endif
	t[1] = local_clock();
	if (!page)
		return 0;
	gt_reenter_state.page[i] = page;
	gt_reenter_state.n = i + 1;
	return 0;
}

/* Keeps a breakpoint a breakpoint: the kprobe core optimizes none with one. */
static void gt_reenter_post(struct kprobe *p, struct pt_regs *regs,
			    unsigned long flags)
{
}

static void gt_reenter(const char *op, const char *symbol,
		       kprobe_post_handler_t post)
{
	struct kprobe kp = { .symbol_name = symbol,
			     .pre_handler = gt_reenter_pre,
			     .post_handler = post,
			     .flags = KPROBE_FLAG_DISABLED };
	unsigned int i;
	u64 t0, t1;
	int ret;

#ifndef GT_HAVE_NOLOCK
	/* GFP_ATOMIC takes sleeping locks there, with preemption off. */
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return gt_skip(op, "PREEMPT_RT: no allocator for preemption off before 6.15");
#endif
	ret = register_kprobe(&kp);
	if (ret) {
		gt_line("%s skip cannot probe %s: %d\n", op, symbol, ret);
		return;
	}
#ifndef GT_HAVE_NOLOCK
	/* A breakpoint's handler runs as an NMI, where GFP_ATOMIC is no good. */
	if (!(kp.flags & KPROBE_FLAG_FTRACE)) {
		unregister_kprobe(&kp);
		gt_line("%s skip %s: a breakpoint, run as an NMI: no allocator there before 6.15\n",
			op, symbol);
		return;
	}
#endif
	gt_reenter_state.n = 0;
	WRITE_ONCE(gt_reenter_state.task, current);
	enable_kprobe(&kp);
	/* Order 1, so that no event of ours looks like one of the probe's. */
	for (i = 0; i < 4096 && gt_reenter_state.n < GT_REENTER_MAX; i++) {
		struct page *page = alloc_pages(GFP_KERNEL | __GFP_NOWARN, 1);

		if (page)
			__free_pages(page, 1);
		cond_resched();
	}
	unregister_kprobe(&kp);
	WRITE_ONCE(gt_reenter_state.task, NULL);
	for (i = 0; i < gt_reenter_state.n; i++) {
		u64 *t = gt_reenter_state.t[i];

		GT_TIMED(__free_page(gt_reenter_state.page[i]));
		t[2] = t0;
		t[3] = t1;
	}
	for (i = 0; i < gt_reenter_state.n; i++) {
		const u64 *t = gt_reenter_state.t[i];
		unsigned long pfn = page_to_pfn(gt_reenter_state.page[i]);

		gt_event(op, "alloc", pfn, 1, t[0], t[1]);
		gt_event(op, "free", pfn, 1, t[2], t[3]);
	}
	if (!gt_reenter_state.n)
		gt_line("%s skip the probe on %s allocated nothing\n", op, symbol);
}

void gt_reenter_nmi(const char *op)
{
	gt_reenter(op, "irq_work_queue", gt_reenter_post);
}

void gt_reenter_kprobe(const char *op)
{
	gt_reenter(op, "__unwind_start", NULL);
}

/*
 * Another ftrace user on the allocator's entry and free paths that may
 * change the instruction pointer, as a live patch or a BPF fmod_ret
 * program does: only one such user may hold a function, so a pagetrace
 * session must neither need IPMODIFY there nor be refused next to it.
 * ipmodify_on and ipmodify_off hold and release it.
 */
#ifdef GT_HAVE_FTRACE_REGS
static void gt_ipmodify_func(unsigned long ip, unsigned long parent_ip,
			     struct ftrace_ops *op, struct ftrace_regs *fregs)
#else
static void gt_ipmodify_func(unsigned long ip, unsigned long parent_ip,
			     struct ftrace_ops *op, struct pt_regs *regs)
#endif
{
}

static struct ftrace_ops gt_ipmodify_ops = {
	.func	= gt_ipmodify_func,
	.flags	= FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

static bool gt_ipmodify_held;

/*
 * The allocator's entry, by kernel: we hold every one of these that this
 * kernel has (with an ftrace call site), so as to hold whichever pagetrace
 * hooks.  From 6.14 __alloc_pages_noprof() is a wrapper around
 * __alloc_frozen_pages_noprof(), which alloc_pages() calls directly.
 */
static const char *const gt_alloc_entries[] = {
	"__alloc_frozen_pages_noprof",	/* 6.14 */
	"__alloc_pages_noprof",		/* 6.10 */
	"__alloc_pages",		/* 5.13 */
	"__alloc_pages_nodemask",	/* before 5.13 */
};

/*
 * The free paths a live patch on the allocator may hold too: those
 * pagetrace's kprobe backend probes on some kernel (module/hooks.c).
 */
static const char *const gt_free_funcs[] = {
	"free_pcp_prepare", "__free_pages_ok", "free_unref_page",
	"free_unref_folios", "__free_frozen_pages", "free_frozen_pages",
};

/* Add @name to the ops' filter: whether this kernel has it in ftrace. */
static bool gt_ipmodify_add(const char *name, bool first)
{
	/* Fails, and changes nothing, where there is no such function. */
	return !ftrace_set_filter(&gt_ipmodify_ops, (unsigned char *)name,
				  strlen(name), first);
}

void gt_ipmodify_on(const char *op)
{
	char held[256];
	size_t len = 0;
	unsigned int i;
	int ret;

	if (gt_ipmodify_held)
		return gt_skip(op, "already held");
	held[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(gt_alloc_entries); i++)
		if (gt_ipmodify_add(gt_alloc_entries[i], !len))
			len += scnprintf(held + len, sizeof(held) - len, " %s",
					 gt_alloc_entries[i]);
	if (!len)
		return gt_skip(op, "none of the allocator's entry points is in ftrace here");
	for (i = 0; i < ARRAY_SIZE(gt_free_funcs); i++)
		if (gt_ipmodify_add(gt_free_funcs[i], false))
			len += scnprintf(held + len, sizeof(held) - len, " %s",
					 gt_free_funcs[i]);
	ret = register_ftrace_function(&gt_ipmodify_ops);
	if (ret) {
		gt_line("%s error %d\n", op, ret);
		return;
	}
	gt_ipmodify_held = true;
	gt_line("%s held%s\n", op, held);
}

void gt_ipmodify_off(const char *op)
{
	if (gt_ipmodify_held)
		unregister_ftrace_function(&gt_ipmodify_ops);
	gt_ipmodify_held = false;
	gt_line("%s released\n", op);
}

/* At module exit: let go of the functions if ipmodify_on holds them. */
void gt_ipmodify_exit(void)
{
	if (gt_ipmodify_held)
		unregister_ftrace_function(&gt_ipmodify_ops);
}
