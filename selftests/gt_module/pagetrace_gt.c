// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_gt: ground truth for the pagetrace selftests.
 *
 * Allocates and frees pages through every entry point of the page
 * allocator, and reports what it did: for each block, the operation, the
 * PFN, the number of pages, and a window [t0, t1] on local_clock() (the
 * trace clock) around the call.  The test then asks the trace for exactly
 * one matching event inside each window.
 *
 *   echo OP > /sys/kernel/debug/pagetrace_gt/run     run one group of ops
 *   cat /sys/kernel/debug/pagetrace_gt/run           read its report
 *
 * Report lines:
 *   <op> <alloc|free> pfn=<pfn> npages=<n> t0=<ns> t1=<ns>
 *   <op> alloc-cover ...       one allocation that covers the range
 *   <op> skip <reason>         the allocation itself failed (no memory),
 *                              or this kernel cannot do it
 *
 * The test pins itself to one CPU, so that the window and the event are
 * taken on one CPU's clock.
 *
 * The module builds on every kernel from 5.10 to 7.x.  Where a call we
 * make came, went or was renamed, the Kbuild asks the headers for it
 * (GT_HAVE_*), or we ask #ifdef of a macro: never the version.  An
 * operation the kernel cannot do (folios before 5.16, the bulk allocator
 * before 5.13, its list variant after 6.13) reports a skip saying why.
 */
#include <linux/debugfs.h>
#include <linux/completion.h>
#include <linux/ftrace.h>
#include <linux/gfp.h>
#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

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

#define GT_REPORT_SIZE	(64 << 10)

static DEFINE_MUTEX(gt_lock);		/* guards the report */
static char *gt_report;
static size_t gt_len;
static struct dentry *gt_dir;

static __printf(1, 2) void gt_line(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	gt_len += vscnprintf(gt_report + gt_len, GT_REPORT_SIZE - gt_len,
			     fmt, args);
	va_end(args);
}

static void gt_event(const char *op, const char *ev, unsigned long pfn,
		     unsigned long npages, u64 t0, u64 t1)
{
	gt_line("%s %s pfn=%lu npages=%lu t0=%llu t1=%llu\n", op, ev, pfn,
		npages, t0, t1);
}

static void gt_skip(const char *op, const char *why)
{
	gt_line("%s skip %s\n", op, why);
}

static unsigned long gt_virt_to_pfn(void *addr)
{
	return page_to_pfn(virt_to_page(addr));
}

/* Run a statement inside a clock window named t0/t1. */
#define GT_TIMED(stmt) do { t0 = local_clock(); stmt; t1 = local_clock(); } while (0)

static void gt_pages(const char *op, gfp_t gfp, unsigned int order)
{
	struct page *page;
	u64 t0, t1;

	GT_TIMED(page = alloc_pages(gfp | __GFP_NOWARN, order));
	if (!page)
		return gt_skip(op, "alloc_pages failed");
	gt_event(op, "alloc", page_to_pfn(page), 1UL << order, t0, t1);
	GT_TIMED(__free_pages(page, order));
	gt_event(op, "free", page_to_pfn(page), 1UL << order, t0, t1);
}

static void gt_get_free_pages(const char *op)
{
	unsigned long addr;
	u64 t0, t1;

	GT_TIMED(addr = __get_free_pages(GFP_KERNEL, 2));
	if (!addr)
		return gt_skip(op, "__get_free_pages failed");
	gt_event(op, "alloc", gt_virt_to_pfn((void *)addr), 4, t0, t1);
	GT_TIMED(free_pages(addr, 2));
	gt_event(op, "free", gt_virt_to_pfn((void *)addr), 4, t0, t1);

	GT_TIMED(addr = __get_free_page(GFP_KERNEL));
	if (!addr)
		return gt_skip(op, "__get_free_page failed");
	gt_event(op, "alloc", gt_virt_to_pfn((void *)addr), 1, t0, t1);
	GT_TIMED(free_page(addr));
	gt_event(op, "free", gt_virt_to_pfn((void *)addr), 1, t0, t1);

	GT_TIMED(addr = get_zeroed_page(GFP_KERNEL));
	if (!addr)
		return gt_skip(op, "get_zeroed_page failed");
	gt_event(op, "alloc", gt_virt_to_pfn((void *)addr), 1, t0, t1);
	GT_TIMED(free_page(addr));
	gt_event(op, "free", gt_virt_to_pfn((void *)addr), 1, t0, t1);
}

/* Only the last reference frees: exactly one free event, at the last put. */
static void gt_page_put(const char *op)
{
	struct page *page;
	u64 t0, t1;

	GT_TIMED(page = alloc_page(GFP_KERNEL));
	if (!page)
		return gt_skip(op, "alloc_page failed");
	gt_event(op, "alloc", page_to_pfn(page), 1, t0, t1);
	get_page(page);
	put_page(page);
	GT_TIMED(put_page(page));
	gt_event(op, "free", page_to_pfn(page), 1, t0, t1);
}

#ifdef GT_HAVE_FOLIO_ALLOC
static void gt_folio(const char *op, unsigned int order)
{
	struct folio *folio;
	u64 t0, t1;

	GT_TIMED(folio = folio_alloc(GFP_KERNEL | __GFP_NOWARN, order));
	if (!folio)
		return gt_skip(op, "folio_alloc failed");
	gt_event(op, "alloc", folio_pfn(folio), 1UL << order, t0, t1);
	GT_TIMED(folio_put(folio));
	gt_event(op, "free", folio_pfn(folio), 1UL << order, t0, t1);
}
#else
static void gt_folio(const char *op, unsigned int order)
{
	gt_skip(op, "no folios in this kernel (folio_alloc)");
}

/*
 * Without folios a THP is a compound page of the PMD order, allocated as a
 * THP fault does and freed with its last reference.
 */
static void gt_thp_page(const char *op)
{
	struct page *page;
	u64 t0, t1;

	GT_TIMED(page = alloc_pages(GFP_TRANSHUGE | __GFP_NOWARN, HPAGE_PMD_ORDER));
	if (!page)
		return gt_skip(op, "alloc_pages failed");
	gt_event(op, "alloc", page_to_pfn(page), HPAGE_PMD_NR, t0, t1);
	GT_TIMED(put_page(page));
	gt_event(op, "free", page_to_pfn(page), HPAGE_PMD_NR, t0, t1);
}
#endif

static void gt_node(const char *op)
{
	struct page *page;
	u64 t0, t1;

	GT_TIMED(page = alloc_pages_node(numa_node_id(), GFP_KERNEL, 1));
	if (!page)
		return gt_skip(op, "alloc_pages_node failed");
	gt_event(op, "alloc", page_to_pfn(page), 2, t0, t1);
	GT_TIMED(__free_pages(page, 1));
	gt_event(op, "free", page_to_pfn(page), 2, t0, t1);
}

/*
 * alloc_pages_exact(3 pages) takes an order-2 block and frees its tail page
 * at once; free_pages_exact() then frees the three pages one by one.
 */
static void gt_exact(const char *op)
{
	unsigned long pfn;
	void *p;
	u64 t0, t1;

	GT_TIMED(p = alloc_pages_exact(3 * PAGE_SIZE, GFP_KERNEL));
	if (!p)
		return gt_skip(op, "alloc_pages_exact failed");
	pfn = gt_virt_to_pfn(p);
	gt_event(op, "alloc", pfn, 4, t0, t1);
	gt_event(op, "free", pfn + 3, 1, t0, t1);
	GT_TIMED(free_pages_exact(p, 3 * PAGE_SIZE));
	gt_event(op, "free", pfn, 1, t0, t1);
	gt_event(op, "free", pfn + 1, 1, t0, t1);
	gt_event(op, "free", pfn + 2, 1, t0, t1);
}

#define GT_BULK	16

/* The bulk allocator's array call, which lost its suffix in 6.14. */
#if defined(GT_HAVE_BULK_ARRAY)
#define gt_bulk_fill(gfp, nr, pages)	alloc_pages_bulk_array(gfp, nr, pages)
#define GT_BULK_FAILED			"alloc_pages_bulk_array failed"
#elif defined(GT_HAVE_BULK)
#define gt_bulk_fill(gfp, nr, pages)	alloc_pages_bulk(gfp, nr, pages)
#define GT_BULK_FAILED			"alloc_pages_bulk failed"
#endif

#ifdef gt_bulk_fill
/* The bulk allocator fills an array; release_pages() frees it in a batch. */
static void gt_bulk_array(const char *op)
{
	struct page *pages[GT_BULK] = { };
	unsigned long n, i;
	u64 t0, t1;

	GT_TIMED(n = gt_bulk_fill(GFP_KERNEL, GT_BULK, pages));
	if (!n)
		return gt_skip(op, GT_BULK_FAILED);
	for (i = 0; i < n; i++)
		gt_event(op, "alloc", page_to_pfn(pages[i]), 1, t0, t1);
	GT_TIMED(release_pages(pages, n));
	for (i = 0; i < n; i++)
		gt_event(op, "free", page_to_pfn(pages[i]), 1, t0, t1);
}

/*
 * A partly filled array: the bulk allocator fills only the holes, and the
 * pages already there must not be reported again.
 */
static void gt_bulk_prefilled(const char *op)
{
	struct page *pages[GT_BULK] = { };
	unsigned long i;
	u64 t0, t1;

	for (i = 0; i < GT_BULK; i += 4) {
		GT_TIMED(pages[i] = alloc_page(GFP_KERNEL));
		if (!pages[i])
			goto free;
		gt_event(op, "alloc", page_to_pfn(pages[i]), 1, t0, t1);
	}
	GT_TIMED((void)gt_bulk_fill(GFP_KERNEL, GT_BULK, pages));
	for (i = 0; i < GT_BULK; i++) {
		if (pages[i] && i % 4)
			gt_event(op, "alloc", page_to_pfn(pages[i]), 1, t0, t1);
	}
free:
	for (i = 0; i < GT_BULK; i++) {
		if (!pages[i])
			continue;
		GT_TIMED(__free_page(pages[i]));
		gt_event(op, "free", page_to_pfn(pages[i]), 1, t0, t1);
	}
}

/* One missing page: the bulk allocator falls back to __alloc_pages(). */
static void gt_bulk_single(const char *op)
{
	struct page *pages[1] = { };
	unsigned long n;
	u64 t0, t1;

	GT_TIMED(n = gt_bulk_fill(GFP_KERNEL, 1, pages));
	if (!n)
		return gt_skip(op, GT_BULK_FAILED);
	gt_event(op, "alloc", page_to_pfn(pages[0]), 1, t0, t1);
	GT_TIMED(__free_page(pages[0]));
	gt_event(op, "free", page_to_pfn(pages[0]), 1, t0, t1);
}
#else
static void gt_bulk_array(const char *op)
{
	gt_skip(op, "no bulk allocator in this kernel (alloc_pages_bulk)");
}

static void gt_bulk_prefilled(const char *op) { gt_bulk_array(op); }
static void gt_bulk_single(const char *op) { gt_bulk_array(op); }
#endif

#if defined(GT_HAVE_BULK_LIST) && defined(GT_HAVE_PUT_PAGES_LIST)
/* The bulk allocator's list call; put_pages_list() frees it in a batch. */
static void gt_bulk_list(const char *op)
{
	unsigned long pfns[GT_BULK];
	struct page *page;
	unsigned long n, i = 0;
	LIST_HEAD(list);
	u64 t0, t1;

	GT_TIMED(n = alloc_pages_bulk_list(GFP_KERNEL, GT_BULK, &list));
	if (!n)
		return gt_skip(op, "alloc_pages_bulk_list failed");
	list_for_each_entry(page, &list, lru) {
		if (i < GT_BULK)
			pfns[i++] = page_to_pfn(page);
	}
	for (n = 0; n < i; n++)
		gt_event(op, "alloc", pfns[n], 1, t0, t1);
	GT_TIMED(put_pages_list(&list));
	for (n = 0; n < i; n++)
		gt_event(op, "free", pfns[n], 1, t0, t1);
}
#else
static void gt_bulk_list(const char *op)
{
	gt_skip(op, "no list variant of the bulk allocator in this kernel (alloc_pages_bulk_list)");
}
#endif

/*
 * A real bulk user: vmalloc's pages come from the bulk allocator (before
 * it, from alloc_page() one by one).  But a newer vmalloc first asks the
 * allocator for blocks as large as fit, and splits them; it falls back to
 * single pages only where those fail.  Such a block is one allocation of
 * many pages, and which way each page came only the kernel knows: its
 * mm_page_alloc tracepoint, which fires for every allocation but the bulk
 * allocator's own pages, tells the blocks of order > 0 that our task got
 * inside vmalloc().  vfree() frees the pages one by one either way.
 */
static struct {
	struct task_struct	*task;		/* inside vmalloc(), or NULL */
	unsigned int		nr;
	unsigned long		pfn[GT_BULK];
	unsigned int		order[GT_BULK];
} gt_vm;
static bool gt_vm_probed;		/* tracepoint_synchronize_unregister() */

static void gt_vm_alloc(void *data, struct page *page, unsigned int order,
			gfp_t gfp, int migratetype)
{
	if (READ_ONCE(gt_vm.task) != current || !in_task() || !page ||
	    !order || gt_vm.nr == GT_BULK)
		return;
	gt_vm.pfn[gt_vm.nr] = page_to_pfn(page);
	gt_vm.order[gt_vm.nr++] = order;
}

static void gt_find_mm_page_alloc(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "mm_page_alloc"))
		*(struct tracepoint **)priv = tp;
}

/* How many of the @n pages from @pfns[0] on came as one block. */
static unsigned long gt_vm_block(const unsigned long *pfns, unsigned long n)
{
	unsigned long j, len;
	unsigned int k;

	for (k = 0; k < gt_vm.nr; k++) {
		if (gt_vm.pfn[k] != pfns[0])
			continue;
		len = 1UL << gt_vm.order[k];
		for (j = 1; j < len; j++) {
			if (j >= n || pfns[j] != pfns[0] + j)
				return 1;
		}
		return len;
	}
	return 1;
}

static void gt_vmalloc(const char *op)
{
	struct tracepoint *tp = NULL;
	unsigned long pfns[GT_BULK], i, n;
	void *p;
	u64 t0, t1;

	/* Without tracepoints, take it that every page came on its own. */
	for_each_kernel_tracepoint(gt_find_mm_page_alloc, &tp);
	if (tp && tracepoint_probe_register(tp, gt_vm_alloc, NULL))
		tp = NULL;
	if (tp)
		gt_vm_probed = true;
	gt_vm.nr = 0;
	WRITE_ONCE(gt_vm.task, current);
	GT_TIMED(p = vmalloc(GT_BULK * PAGE_SIZE));
	WRITE_ONCE(gt_vm.task, NULL);
	if (tp)
		tracepoint_probe_unregister(tp, gt_vm_alloc, NULL);
	if (!p)
		return gt_skip(op, "vmalloc failed");
	for (i = 0; i < GT_BULK; i++)
		pfns[i] = vmalloc_to_pfn(p + i * PAGE_SIZE);
	for (i = 0; i < GT_BULK; i += n) {
		n = gt_vm_block(pfns + i, GT_BULK - i);
		gt_event(op, "alloc", pfns[i], n, t0, t1);
	}
	GT_TIMED(vfree(p));
	for (i = 0; i < GT_BULK; i++)
		gt_event(op, "free", pfns[i], 1, t0, t1);
}

/*
 * __free_pages() of a non-compound order-3 block that someone else still
 * references frees the tail halves at once (orders 2, 1, 0); the head page
 * goes with the last reference.
 */
static void gt_split_free(const char *op)
{
	struct page *page;
	unsigned long pfn;
	u64 t0, t1;

	GT_TIMED(page = alloc_pages(GFP_KERNEL, 3));
	if (!page)
		return gt_skip(op, "alloc_pages failed");
	pfn = page_to_pfn(page);
	gt_event(op, "alloc", pfn, 8, t0, t1);
	get_page(page);
	GT_TIMED(__free_pages(page, 3));
	gt_event(op, "free", pfn + 4, 4, t0, t1);
	gt_event(op, "free", pfn + 2, 2, t0, t1);
	gt_event(op, "free", pfn + 1, 1, t0, t1);
	GT_TIMED(put_page(page));
	gt_event(op, "free", pfn, 1, t0, t1);
}

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

static void gt_softirq(const char *op)
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

static void gt_hardirq(const char *op)
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

static void gt_nolock(const char *op)
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
 *  reenter_kprobe  stack_trace_save(), called for a sampled allocation's
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
 * task call stack_trace_save() too (lockdep, KASAN, page_owner), from
 * places where allocating is no good.
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

static void gt_reenter_nmi(const char *op)
{
	gt_reenter(op, "irq_work_queue", gt_reenter_post);
}

static void gt_reenter_kprobe(const char *op)
{
	gt_reenter(op, "stack_trace_save", NULL);
}

/*
 * A marker for tests that compare tracers: an order-7 block, which nothing
 * else in an idle VM allocates, brackets a window on the calling CPU.
 */
static void gt_marker(const char *op) { gt_pages(op, GFP_KERNEL, 7); }
/*
 * alloc_contig_range() on a pageblock we just freed whole: 6.1 reports it
 * through compaction's split_map_pages(), 6.12 through
 * isolate_freepages_range(); free_contig_range() frees it page by page
 * (newer kernels prepare each page, then hand the range back in blocks).
 */
#ifdef CONFIG_CONTIG_ALLOC
/* Its migratetype argument became flags (6.16): an ordinary request. */
#ifdef ACR_FLAGS_NONE
#define GT_CONTIG_ORDINARY	ACR_FLAGS_NONE
#else
#define GT_CONTIG_ORDINARY	MIGRATE_MOVABLE
#endif

/*
 * Before 5.19 alloc_contig_range() isolated whole MAX_ORDER blocks around
 * the range, so a free pageblock next to a busy one failed: there the
 * range is a largest block.  The last order the allocator hands out:
 */
#ifdef MAX_PAGE_ORDER
#define GT_TOP_ORDER	MAX_PAGE_ORDER
#else
#define GT_TOP_ORDER	(MAX_ORDER - 1)	/* one below the top from 6.4 on: fine */
#endif

/* Free a block and take it back with alloc_contig_range(): 0 or -errno. */
static int gt_contig_try(const char *op, unsigned int order, unsigned long *pfn)
{
	unsigned long n = 1UL << order;
	struct page *page;
	u64 t0, t1;
	int ret;

	/* The setup is reported too: under a coarse clock it shares windows. */
	GT_TIMED(page = alloc_pages(GFP_KERNEL | __GFP_NOWARN, order));
	if (!page)
		return -ENOMEM;
	*pfn = page_to_pfn(page);
	gt_event(op, "alloc", *pfn, n, t0, t1);
	GT_TIMED(__free_pages(page, order));
	gt_event(op, "free", *pfn, n, t0, t1);
	GT_TIMED(ret = alloc_contig_range(*pfn, *pfn + n, GT_CONTIG_ORDINARY,
					  GFP_KERNEL | __GFP_NOWARN));
	if (!ret)
		/* The free block may have merged with its buddy: any covering one. */
		gt_event(op, "alloc-cover", *pfn, n, t0, t1);
	return ret;
}

static void gt_contig(const char *op)
{
	unsigned long pfn, i, n = 1UL << pageblock_order;
	u64 t0, t1;
	int ret;

	ret = gt_contig_try(op, pageblock_order, &pfn);
	if (ret && ret != -ENOMEM && GT_TOP_ORDER > pageblock_order) {
		n = 1UL << GT_TOP_ORDER;
		ret = gt_contig_try(op, GT_TOP_ORDER, &pfn);
	}
	if (ret == -ENOMEM)
		return gt_skip(op, "no free pageblock");
	if (ret)
		return gt_skip(op, "alloc_contig_range failed");
	GT_TIMED(free_contig_range(pfn, n));
	for (i = 0; i < n; i++)
		gt_event(op, "free", pfn + i, 1, t0, t1);
}
#else
static void gt_contig(const char *op)
{
	gt_skip(op, "no alloc_contig_range() in this kernel (CONFIG_CONTIG_ALLOC)");
}
#endif

static void gt_order0(const char *op) { gt_pages(op, GFP_KERNEL, 0); }
static void gt_order3(const char *op) { gt_pages(op, GFP_KERNEL, 3); }
static void gt_order5(const char *op) { gt_pages(op, GFP_KERNEL, 5); }
static void gt_order10(const char *op) { gt_pages(op, GFP_KERNEL | __GFP_COMP, 10); }
static void gt_atomic(const char *op) { gt_pages(op, GFP_ATOMIC, 0); }
static void gt_folio0(const char *op) { gt_folio(op, 0); }
static void gt_folio2(const char *op) { gt_folio(op, 2); }
static void gt_folio_thp(const char *op)
{
	if (!IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		return gt_skip(op, "no THP in this kernel");
#ifdef GT_HAVE_FOLIO_ALLOC
	gt_folio(op, HPAGE_PMD_ORDER);
#else
	gt_thp_page(op);
#endif
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

static void gt_ipmodify_on(const char *op)
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

static void gt_ipmodify_off(const char *op)
{
	if (gt_ipmodify_held)
		unregister_ftrace_function(&gt_ipmodify_ops);
	gt_ipmodify_held = false;
	gt_line("%s released\n", op);
}

static const struct gt_op {
	const char	*name;
	void		(*run)(const char *op);
} gt_ops[] = {
	{ "pages_order0",	gt_order0 },
	{ "pages_order3",	gt_order3 },
	{ "pages_order5",	gt_order5 },
	{ "pages_order10",	gt_order10 },
	{ "pages_atomic",	gt_atomic },
	{ "get_free_pages",	gt_get_free_pages },
	{ "page_put",		gt_page_put },
	{ "folio_order0",	gt_folio0 },
	{ "folio_order2",	gt_folio2 },
	{ "folio_thp",		gt_folio_thp },
	{ "pages_node",		gt_node },
	{ "pages_exact",	gt_exact },
	{ "bulk_array",		gt_bulk_array },
	{ "bulk_list",		gt_bulk_list },
	{ "bulk_prefilled",	gt_bulk_prefilled },
	{ "bulk_single",	gt_bulk_single },
	{ "vmalloc",		gt_vmalloc },
	{ "split_free",		gt_split_free },
	{ "softirq",		gt_softirq },
	{ "hardirq",		gt_hardirq },
	{ "marker",		gt_marker },
	{ "contig",		gt_contig },
	{ "nolock",		gt_nolock },
	{ "reenter_nmi",	gt_reenter_nmi },
	{ "reenter_kprobe",	gt_reenter_kprobe },
	{ "ipmodify_on",	gt_ipmodify_on },
	{ "ipmodify_off",	gt_ipmodify_off },
};

static ssize_t gt_write(struct file *file, const char __user *ubuf,
			size_t count, loff_t *ppos)
{
	char name[32];
	unsigned int i;
	ssize_t ret = -EINVAL;

	if (count >= sizeof(name))
		return -EINVAL;
	if (copy_from_user(name, ubuf, count))
		return -EFAULT;
	name[count] = '\0';
	strim(name);

	mutex_lock(&gt_lock);
	for (i = 0; i < ARRAY_SIZE(gt_ops); i++) {
		if (strcmp(name, gt_ops[i].name))
			continue;
		gt_len = 0;
		gt_report[0] = '\0';
		gt_ops[i].run(gt_ops[i].name);
		ret = count;
		break;
	}
	mutex_unlock(&gt_lock);
	return ret;
}

static ssize_t gt_read(struct file *file, char __user *ubuf, size_t count,
		       loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&gt_lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, gt_report, gt_len);
	mutex_unlock(&gt_lock);
	return ret;
}

static const struct file_operations gt_fops = {
	.owner	= THIS_MODULE,
	.read	= gt_read,
	.write	= gt_write,
	.llseek	= default_llseek,
};

/* The list of op names, for the test to iterate over. */
static int gt_ops_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(gt_ops); i++)
		seq_printf(m, "%s\n", gt_ops[i].name);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gt_ops);

static int __init gt_init(void)
{
	gt_report = kzalloc(GT_REPORT_SIZE, GFP_KERNEL);
	if (!gt_report)
		return -ENOMEM;
	gt_dir = debugfs_create_dir("pagetrace_gt", NULL);
	debugfs_create_file("run", 0600, gt_dir, NULL, &gt_fops);
	debugfs_create_file("ops", 0400, gt_dir, NULL, &gt_ops_fops);
	return 0;
}

static void __exit gt_exit(void)
{
	debugfs_remove_recursive(gt_dir);
	if (gt_ipmodify_held)
		unregister_ftrace_function(&gt_ipmodify_ops);
	if (gt_vm_probed)
		tracepoint_synchronize_unregister();
	kfree(gt_report);
}

module_init(gt_init);
module_exit(gt_exit);

MODULE_DESCRIPTION("pagetrace selftest: pages of known fate");
MODULE_LICENSE("GPL");
