// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_gt: the page allocator's entry points.  Each operation
 * allocates and frees through one of them (alloc_pages() at several
 * orders and flags, __get_free_pages(), the last put_page(), folios,
 * NUMA node, exact sizes, the bulk allocator's array and list calls,
 * vmalloc(), a split free, alloc_contig_range()) and reports each block
 * it got or gave back, with the clock window around the call (gt.h).
 */
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/tracepoint.h>
#include <linux/vmalloc.h>

#include "gt.h"

static unsigned long gt_virt_to_pfn(void *addr)
{
	return page_to_pfn(virt_to_page(addr));
}

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

void gt_get_free_pages(const char *op)
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
void gt_page_put(const char *op)
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

void gt_node(const char *op)
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
void gt_exact(const char *op)
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
void gt_bulk_array(const char *op)
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
void gt_bulk_prefilled(const char *op)
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

/*
 * An array longer than the slots pagetrace's bulk hook notes one by one
 * (PT_BULK_SLOTS in module/handlers.h, 2048), as NFS server threads pass
 * on 7.x: every slot below holds one page of ours but for one in each 128,
 * so that the hook must skip the 2,032 pages already there, and the 64
 * slots past it are empty (bulk_large: each new page recorded once) or
 * hold that page in every eighth (bulk_large_beyond: how many are new
 * there is known, not which: "alloc-or-lost", recorded once or counted
 * lost).
 */
#define GT_BULK_NOTED	2048
#define GT_BULK_LARGE	(GT_BULK_NOTED + 64)

static void gt_bulk_large_fill(const char *op, bool beyond)
{
	struct page **pages, *page;
	unsigned long i, pfn;
	u64 t0, t1;

	pages = kvcalloc(GT_BULK_LARGE, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return gt_skip(op, "no memory for the array");
	GT_TIMED(page = alloc_page(GFP_KERNEL));
	if (!page) {
		kvfree(pages);
		return gt_skip(op, "alloc_page failed");
	}
	pfn = page_to_pfn(page);
	gt_event(op, "alloc", pfn, 1, t0, t1);
	for (i = 0; i < GT_BULK_LARGE; i++)
		if (i < GT_BULK_NOTED ? i % 128 != 1 : beyond && !(i % 8))
			pages[i] = page;
	GT_TIMED((void)gt_bulk_fill(GFP_KERNEL, GT_BULK_LARGE, pages));
	/* Nothing past the noted slots (a fallback to one page) tests nothing. */
	for (i = GT_BULK_NOTED; i < GT_BULK_LARGE; i++)
		if (pages[i] && pages[i] != page)
			break;
	if (i == GT_BULK_LARGE) {
		gt_skip(op, "the bulk allocator filled nothing past slot 2048");
		goto free;
	}
	for (i = 0; i < GT_BULK_LARGE; i++) {
		if (!pages[i] || pages[i] == page)
			continue;
		gt_event(op, i < GT_BULK_NOTED || !beyond ? "alloc" : "alloc-or-lost",
			 page_to_pfn(pages[i]), 1, t0, t1);
	}
	for (i = 0; i < GT_BULK_LARGE; i++) {
		if (!pages[i] || pages[i] == page)
			continue;
		GT_TIMED(__free_page(pages[i]));
		gt_event(op, "free", page_to_pfn(pages[i]), 1, t0, t1);
	}
	GT_TIMED(__free_page(page));
	gt_event(op, "free", pfn, 1, t0, t1);
	kvfree(pages);
	return;
free:
	for (i = 0; i < GT_BULK_LARGE; i++)
		if (pages[i] && pages[i] != page)
			__free_page(pages[i]);
	__free_page(page);
	kvfree(pages);
}

void gt_bulk_large(const char *op)
{
	gt_bulk_large_fill(op, false);
}

void gt_bulk_large_beyond(const char *op)
{
	gt_bulk_large_fill(op, true);
}

/* One missing page: the bulk allocator falls back to __alloc_pages(). */
void gt_bulk_single(const char *op)
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

/*
 * The bulk allocator called from another kprobe's handler: the kprobe core
 * drops pagetrace's bulk kretprobe there (a probe is already running on
 * the CPU) and counts one miss, however many pages the call takes.  The
 * report lists the pages as "unseen": the trace must hold their frees,
 * after which its analysis counts each as a free of a page it never saw
 * allocated.
 */
static struct {
	struct task_struct	*task;
	struct page		*pages[GT_BULK];
	unsigned long		n;
} gt_bulk_probe;

static noinline void gt_bulk_probe_target(void)
{
	/* Something to probe, not optimized away. */
	asm volatile("" ::: "memory");
}

static int gt_bulk_probe_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (current == READ_ONCE(gt_bulk_probe.task))
		gt_bulk_probe.n = gt_bulk_fill(GFP_ATOMIC | __GFP_NOWARN, GT_BULK,
					       gt_bulk_probe.pages);
	return 0;
}

void gt_bulk_in_kprobe(const char *op)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)gt_bulk_probe_target,
			     .pre_handler = gt_bulk_probe_pre };
	unsigned long i;
	u64 t0, t1;
	int ret;

	/* GFP_ATOMIC takes sleeping locks there, with preemption off. */
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return gt_skip(op, "PREEMPT_RT: the bulk allocator cannot run with preemption off");
	ret = register_kprobe(&kp);
	if (ret) {
		gt_line("%s skip cannot probe gt_bulk_probe_target: %d\n", op, ret);
		return;
	}
	/* A breakpoint's handler runs as an NMI, where GFP_ATOMIC is no good. */
	if (!(kp.flags & KPROBE_FLAG_FTRACE)) {
		unregister_kprobe(&kp);
		return gt_skip(op, "the probe is a breakpoint, run as an NMI: no allocator there");
	}
	memset(gt_bulk_probe.pages, 0, sizeof(gt_bulk_probe.pages));
	gt_bulk_probe.n = 0;
	WRITE_ONCE(gt_bulk_probe.task, current);
	gt_bulk_probe_target();
	WRITE_ONCE(gt_bulk_probe.task, NULL);
	unregister_kprobe(&kp);
	if (!gt_bulk_probe.n)
		return gt_skip(op, GT_BULK_FAILED);
	for (i = 0; i < gt_bulk_probe.n; i++) {
		struct page *page = gt_bulk_probe.pages[i];

		gt_line("%s unseen pfn=%lu\n", op, page_to_pfn(page));
		GT_TIMED(__free_page(page));
		gt_event(op, "free", page_to_pfn(page), 1, t0, t1);
	}
}
#else
void gt_bulk_array(const char *op)
{
	gt_skip(op, "no bulk allocator in this kernel (alloc_pages_bulk)");
}

void gt_bulk_prefilled(const char *op) { gt_bulk_array(op); }
void gt_bulk_large(const char *op) { gt_bulk_array(op); }
void gt_bulk_large_beyond(const char *op) { gt_bulk_array(op); }
void gt_bulk_single(const char *op) { gt_bulk_array(op); }
void gt_bulk_in_kprobe(const char *op) { gt_bulk_array(op); }
#endif

#if defined(GT_HAVE_BULK_LIST) && defined(GT_HAVE_PUT_PAGES_LIST)
/* The bulk allocator's list call; put_pages_list() frees it in a batch. */
void gt_bulk_list(const char *op)
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
void gt_bulk_list(const char *op)
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

void gt_vmalloc(const char *op)
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

/* At module exit: no call of gt_vm_alloc() may be still running. */
void gt_vmalloc_exit(void)
{
	if (gt_vm_probed)
		tracepoint_synchronize_unregister();
}

/*
 * __free_pages() of a non-compound order-3 block that someone else still
 * references frees the tail halves at once (orders 2, 1, 0); the head page
 * goes with the last reference.
 */
void gt_split_free(const char *op)
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
 * A marker for tests that compare tracers: an order-7 block, which nothing
 * else in an idle VM allocates, brackets a window on the calling CPU.
 */
void gt_marker(const char *op) { gt_pages(op, GFP_KERNEL, 7); }

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

void gt_contig(const char *op)
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
void gt_contig(const char *op)
{
	gt_skip(op, "no alloc_contig_range() in this kernel (CONFIG_CONTIG_ALLOC)");
}
#endif

void gt_order0(const char *op) { gt_pages(op, GFP_KERNEL, 0); }
void gt_order3(const char *op) { gt_pages(op, GFP_KERNEL, 3); }
void gt_order5(const char *op) { gt_pages(op, GFP_KERNEL, 5); }
void gt_order10(const char *op) { gt_pages(op, GFP_KERNEL | __GFP_COMP, 10); }
void gt_atomic(const char *op) { gt_pages(op, GFP_ATOMIC, 0); }
void gt_folio0(const char *op) { gt_folio(op, 0); }
void gt_folio2(const char *op) { gt_folio(op, 2); }
void gt_folio_thp(const char *op)
{
	if (!IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE))
		return gt_skip(op, "no THP in this kernel");
#ifdef GT_HAVE_FOLIO_ALLOC
	gt_folio(op, HPAGE_PMD_ORDER);
#else
	gt_thp_page(op);
#endif
}
