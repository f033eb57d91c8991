// SPDX-License-Identifier: GPL-2.0
/*
 * What a probe does when it is hit: the handlers of every hook of
 * hooks.c's table, which turn a tracepoint or kprobe hit into pt_emit().
 * They run inside the allocator, in any context, and take no lock.
 *
 * Reclaim: a free is a reclaim (the Go tracer's scavenge) when the task
 * that frees is reclaiming memory, as the kernel itself records in the
 * task: current->reclaim_state is set by kswapd, direct reclaim, memcg
 * reclaim (memory.reclaim, memory.high/max) and node reclaim for their
 * whole run; PF_MEMALLOC marks the reclaim of madvise(MADV_PAGEOUT) and
 * of alloc_contig_range(), and also direct compaction, which is told
 * apart by current->capture_control.  Frees in interrupts, and frees by
 * munmap, truncate, drop_caches or drivers, stay frees.
 *
 * A probe hit that the kprobe core drops because another probe is running
 * on the same CPU is counted in the probe's nmissed (pt_hooks_missed()).
 */
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>

#include "compat.h"
#include "context.h"
#include "handlers.h"
#include "pagetrace.h"

/*
 * What the load-time checks (pt_off_hot_path(), pt_free_check()) watch
 * while their probes are attached: the pages a probe saw the checking
 * task allocate, and the frees of the one page the check frees.  They go
 * by the page, not by the context: a kprobe on a breakpoint runs as an
 * NMI (in_task() is false there), and an interrupt on the task's CPU
 * (RCU callbacks freeing page tables, under munmap() load) allocates and
 * frees pages of its own meanwhile.
 */
struct task_struct *pt_check_task;
struct page *pt_check_seen[16];
atomic_t pt_check_nseen;
struct page *pt_check_page;
atomic_t pt_check_frees;

/* A page a probe saw allocated, noted if the checking task runs. */
static void pt_check_alloc(struct page *page)
{
	unsigned int i;

	if (likely(current != READ_ONCE(pt_check_task)))
		return;
	i = atomic_inc_return(&pt_check_nseen) - 1;
	if (i < ARRAY_SIZE(pt_check_seen))
		WRITE_ONCE(pt_check_seen[i], page);
}

/*
 * A page a probe saw freed, counted if it is the one the check frees and
 * the checking task frees it: once freed, the page may be allocated and
 * freed again by a task that preempts the check (seen under churn on
 * PREEMPT_RT, where the page heads the CPU's free list).
 */
static void pt_check_free(struct page *page)
{
	if (unlikely(page == READ_ONCE(pt_check_page)) &&
	    current == READ_ONCE(pt_check_task))
		atomic_inc(&pt_check_frees);
}

/*
 * Reclaim when the freeing task is reclaiming memory; see above.  @ctx:
 * whose context the free is of (context.h).
 */
static __always_inline unsigned int pt_free_type_ctx(enum pt_event_ctx ctx)
{
	unsigned int flags;

	if (!pt_event_in_task(ctx))
		return PAGETRACE_EV_FREE;
	if (READ_ONCE(current->reclaim_state))
		return PAGETRACE_EV_RECLAIM;
	flags = READ_ONCE(current->flags);
	if ((flags & PF_MEMALLOC) && !pt_in_direct_compaction())
		return PAGETRACE_EV_RECLAIM;
	return PAGETRACE_EV_FREE;
}

/* The tracepoint's, inlined or not as the compiler likes. */
static unsigned int pt_free_type(void)
{
	return pt_free_type_ctx(PT_CTX_HOOK);
}

static void pt_free_page(struct page *page, unsigned int order)
{
	pt_emit(pt_free_type(), page_to_pfn(page), 1UL << order);
}

/*
 * Whose context a kprobe's hit is of.  A kprobe on an ftrace site runs its
 * handler from ftrace's, in the probed function's context; any other is a
 * breakpoint (hooks.c keeps the kprobe core from optimizing it into a
 * jump), whose handler runs as an NMI.
 */
static enum pt_event_ctx pt_kprobe_ctx(struct kprobe *p)
{
	return kprobe_ftrace(p) ? PT_CTX_HOOK : PT_CTX_STOPPED;
}

/*
 * pt_emit() or pt_emit_alloc() for a kprobe's hit, of its context.  Only
 * allocations carry @origin: it is for their sampled stacks.
 */
static void pt_kprobe_emit(enum pt_event_ctx ctx, unsigned int type,
			   unsigned long pfn, unsigned long npages,
			   const struct pt_origin *origin)
{
	if (ctx == PT_CTX_STOPPED)
		pt_emit_breakpoint(type, pfn, npages, origin);
	else if (type == PAGETRACE_EV_ALLOC)
		pt_emit_alloc(pfn, npages, origin);
	else
		pt_emit(type, pfn, npages);
}

/* Where a kretprobe's function returns, for the call stack of a sample. */
static struct pt_origin pt_return_origin(struct kretprobe_instance *ri,
					 struct pt_regs *regs)
{
	return (struct pt_origin){ regs, (unsigned long)get_kretprobe(ri)->kp.addr };
}

/*
 * Calls in flight.  Where kretprobes run on rethook (x86 since 5.18), each
 * call of a kretprobed function pushes a node on the calling task's
 * rethook list at entry and pops it at return; a node of a probe's
 * rethook marks a task inside that function, and its kretprobe instance
 * holds the call's data.  Only the task itself, and interrupts on its CPU
 * (which pop what they push before they return), change the list, so with
 * interrupts off it holds still.  The rethooks we look for are published
 * (pt_probe_register()) before their probe is armed, and only compared,
 * never dereferenced.
 */
#ifdef PT_CALLS_IN_FLIGHT
/* The data of the current task's innermost call through @rh, or NULL. */
static void *pt_call_data(const struct rethook *rh)
{
	struct llist_node *n;

	lockdep_assert_irqs_disabled();
	if (!rh)
		return NULL;
	for (n = current->rethooks.first; n; n = n->next) {
		struct rethook_node *rn = container_of(n, struct rethook_node,
						       llist);

		if (rn->rethook == rh)
			return container_of(rn, struct kretprobe_instance,
					    node)->data;
	}
	return NULL;
}
#endif

/*
 * The bulk allocator, bulk(gfp, nid, nodemask, nr_pages, page_list,
 * page_array) (the list is gone in 6.14; its argument slot then holds
 * page_array).
 *
 * It fills the NULL slots of page_array, or adds pages at the head of
 * page_list.  At entry we note which slots are empty (the first
 * PT_BULK_SLOTS, more than callers pass; past them only how many pages
 * there are) or which entry heads the list; at return everything new is
 * ours, but for a page its fallback got from the allocator, which that
 * hook reported and noted in @fallback.  Past PT_BULK_SLOTS, where pages
 * were there at entry, how many are new is known but not which: that many
 * are counted lost, none recorded twice.
 */
#ifdef PT_BULK_HOOKS
/* The bulk kretprobe's rethook: see "Calls in flight" above. */
struct rethook *pt_bulk_rh;

/*
 * A page the allocator returned: the bulk fallback's if the innermost bulk
 * call on the task's rethook list runs in this context (softirqs run bulk
 * calls too, e.g. the network's page pools).
 */
static noinline void notrace pt_bulk_note_call(struct page *page)
{
	struct pt_bulk_data *d;
	unsigned long flags;

	local_irq_save(flags);
	d = pt_call_data(READ_ONCE(pt_bulk_rh));
	if (d && d->context == pt_context())
		d->fallback = page;
	local_irq_restore(flags);
}

NOKPROBE_SYMBOL(pt_bulk_note_call);

/*
 * Inlined into every allocation's hook: two loads decide that no bulk
 * call can be in flight on this task (no rethook on its list), which is
 * almost always; a call here would cost the tracepoint's probe its leaf
 * shape (registers saved around it).
 */
static __always_inline void pt_bulk_note_fallback(struct page *page)
{
	if (unlikely(READ_ONCE(pt_bulk_rh) && READ_ONCE(current->rethooks.first)))
		pt_bulk_note_call(page);
}

int notrace pt_bulk_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_bulk_data *d = (void *)ri->data;
	int i;

	d->context = pt_probed_context();
	d->nr = regs_get_kernel_argument(regs, 3);
	d->list = PT_BULK_LIST_ARG(regs);
	d->array = PT_BULK_ARRAY_ARG(regs);
	d->fallback = NULL;
	if (d->nr <= 0)
		return 1;
	if (d->array) {
		for (i = 0; i < min(d->nr, PT_BULK_SLOTS); i++)
			__assign_bit(i, d->empty, !d->array[i]);
		for (d->beyond = 0; i < d->nr; i++)
			d->beyond += !!d->array[i];
	} else if (d->list) {
		d->first = d->list->next;
	} else {
		return 1;
	}
	return 0;
}

static void pt_bulk_page(struct pt_bulk_data *d, struct page *page,
			 const struct pt_origin *origin)
{
	if (page != d->fallback)
		pt_emit_alloc(page_to_pfn(page), 1, origin);
}

int notrace pt_bulk_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_origin origin = pt_return_origin(ri, regs);
	struct pt_bulk_data *d = (void *)ri->data;
	struct list_head *pos;
	int i, beyond = 0;

	if (d->array) {
		for (i = 0; i < d->nr; i++) {
			if (!d->array[i] || d->array[i] == d->fallback)
				continue;
			if (i < PT_BULK_SLOTS ? test_bit(i, d->empty) : !d->beyond)
				pt_bulk_page(d, d->array[i], &origin);
			else if (i >= PT_BULK_SLOTS)
				beyond++;
		}
		if (beyond > d->beyond)
			pt_emit_lost(beyond - d->beyond);
		return 0;
	}
	for (pos = d->list->next, i = 0; pos != d->first && pos != d->list &&
	     i < d->nr; pos = pos->next, i++)
		pt_bulk_page(d, list_entry(pos, struct page, lru), &origin);
	return 0;
}
#else
static __always_inline void pt_bulk_note_fallback(struct page *page)
{
}
#endif /* PT_BULK_HOOKS */

/* Inlined: on the tail calls from pt_tp_alloc() (see there). */
static __always_inline void pt_alloc_page(struct page *page,
					  unsigned int order,
					  const struct pt_origin *origin)
{
	pt_bulk_note_fallback(page);
	pt_emit_alloc(page_to_pfn(page), 1UL << order, origin);
}

/* The allocator's entry point (gfp, order, nid, nodemask): its return. */
int notrace pt_alloc_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;

	d->order = (unsigned int)regs_get_kernel_argument(regs, 1);
	return 0;
}

int notrace pt_alloc_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;
	struct page *page = (struct page *)regs_return_value(regs);
	struct pt_origin origin;

	if (page) {
		pt_check_alloc(page);
		origin = pt_return_origin(ri, regs);
		pt_alloc_page(page, d->order, &origin);
	}
	return 0;
}

#ifdef PT_HAVE_NOLOCK
/* alloc_pages_nolock() and its frozen variant: ([gfp,] nid, order). */
int notrace pt_nolock_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;

	d->order = (unsigned int)regs_get_kernel_argument(regs, PT_NOLOCK_ORDER_ARG);
	return 0;
}
#endif

/* Tracepoint mm_page_alloc(page, order, gfp, migratetype); page may be NULL. */
void notrace pt_tp_alloc(void *data, struct page *page, unsigned int order,
			 gfp_t gfp, int migratetype)
{
	/*
	 * No registers: a sampled stack is unwound from the frame of the
	 * writer's slow path, which this reaches by tail calls (stacks.c);
	 * no kprobe on the way (NOKPROBE_SYMBOL(), see pt_emit_slow()).
	 */
	if (page)
		pt_alloc_page(page, order, NULL);
}

NOKPROBE_SYMBOL(pt_tp_alloc);

/* Tracepoint mm_page_free(page, order) */
void notrace pt_tp_free(void *data, struct page *page, unsigned int order)
{
	pt_free_page(page, order);
}

/*
 * isolate_freepages_range(cc, start_pfn, end_pfn): only
 * alloc_contig_range() calls it, and takes [start_pfn, return value) off
 * the free lists for good (its post_alloc_hook() calls are inlined).  One
 * allocation of that range; the parts it trims are freed page by page.
 */
/* The contig kretprobe's rethook: see "Calls in flight" above. */
struct rethook *pt_contig_rh;

int notrace pt_contig_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_contig_data *d = (void *)ri->data;

	d->start = regs_get_kernel_argument(regs, 1);
	d->context = pt_probed_context();
	return 0;
}

/*
 * Whether a post_alloc_hook() the probe sees comes from the current
 * task's isolate_freepages_range() (where the split of its blocks calls
 * it out of line), which reports its whole range at return.
 */
static bool pt_in_contig(void)
{
#ifdef PT_CALLS_IN_FLIGHT
	struct pt_contig_data *d;
	unsigned long flags;
	bool in;

	if (!READ_ONCE(pt_contig_rh) || !READ_ONCE(current->rethooks.first))
		return false;
	local_irq_save(flags);
	d = pt_call_data(READ_ONCE(pt_contig_rh));
	in = d && d->context == pt_probed_context();
	local_irq_restore(flags);
	return in;
#else
	return false;
#endif
}

int notrace pt_contig_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long start = ((struct pt_contig_data *)ri->data)->start;
	unsigned long end = regs_return_value(regs);
	struct pt_origin origin;

	if (end > start) {
		origin = pt_return_origin(ri, regs);
		pt_emit_alloc(start, end - start, &origin);
	}
	return 0;
}

#ifndef NR_PAGE_ORDERS
/*
 * split_map_pages(list) before 6.8 (which renamed the orders to
 * NR_PAGE_ORDERS; 6.9 then gave it one list per order, and 6.8 is left to
 * the post_alloc_hook set): @list holds the free blocks compaction isolated,
 * each with its order in page_private(); the function then calls
 * post_alloc_hook() on each and splits it into pages.  The list is the
 * calling task's own (compact_control's free list, or a list on the stack
 * of isolate_freepages_range()), nobody else links or unlinks its entries,
 * and we run in that task at the function's entry, so it holds still while
 * we walk it.
 */
int notrace pt_split_map_pages(struct kprobe *p, struct pt_regs *regs)
{
	struct list_head *list = (void *)regs_get_kernel_argument(regs, 0);
	enum pt_event_ctx ctx = pt_kprobe_ctx(p);
	struct pt_origin origin = { regs };
	struct page *page;

	list_for_each_entry(page, list, lru)
		pt_kprobe_emit(ctx, PAGETRACE_EV_ALLOC, page_to_pfn(page),
			       1UL << page_private(page), &origin);
	return 0;
}
#endif

#ifdef PT_HAVE_COMPACT_TARGETS
/*
 * compaction_alloc(src, data) since 6.9 returns the migration target it
 * took off compaction's per-order free lists and prepared with
 * post_alloc_hook() (which the allocator's fast path calls out of line
 * on 7.x, so it cannot be hooked there: pt_off_hot_path()).
 */
int notrace pt_compact_target(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct folio *folio = (struct folio *)regs_return_value(regs);
	struct pt_origin origin;

	if (folio) {
		origin = pt_return_origin(ri, regs);
		pt_emit_alloc(folio_pfn(folio), folio_nr_pages(folio), &origin);
	}
	return 0;
}

/*
 * release_free_list(freepages) since 6.9: the free blocks compaction
 * isolated but did not use, one list per order, which it marks allocated
 * only to free them at once: an allocation here, then a free from
 * mm_page_free.  The lists are the calling task's own (its
 * compact_control's), so they hold still while we walk them.
 */
int notrace pt_release_free_list(struct kprobe *p, struct pt_regs *regs)
{
	struct list_head *lists = (void *)regs_get_kernel_argument(regs, 0);
	enum pt_event_ctx ctx = pt_kprobe_ctx(p);
	struct pt_origin origin = { regs };
	struct page *page;
	unsigned int order;

	for (order = 0; order < NR_PAGE_ORDERS; order++)
		list_for_each_entry(page, &lists[order], lru)
			pt_kprobe_emit(ctx, PAGETRACE_EV_ALLOC,
				       page_to_pfn(page), 1UL << order,
				       &origin);
	return 0;
}
#endif

/* post_alloc_hook(page, order, gfp, ...) */
int notrace pt_compact_alloc(struct kprobe *p, struct pt_regs *regs)
{
	struct page *page = (struct page *)regs_get_kernel_argument(regs, 0);
	struct pt_origin origin = { regs };

	pt_check_alloc(page);
	if (pt_in_contig())
		return 0;
	pt_kprobe_emit(pt_kprobe_ctx(p), PAGETRACE_EV_ALLOC, page_to_pfn(page),
		       1UL << (unsigned int)regs_get_kernel_argument(regs, 1),
		       &origin);
	return 0;
}

/* A free the kprobe backend saw; pt_free_check() proves the hooks by it. */
static void pt_kp_free_page(struct kprobe *p, struct page *page,
			    unsigned int order)
{
	enum pt_event_ctx ctx = pt_kprobe_ctx(p);

	pt_check_free(page);
	pt_kprobe_emit(ctx, pt_free_type_ctx(ctx), page_to_pfn(page), 1UL << order,
		       NULL);
}

/* free_pcp_prepare(page, order), __free_pages_ok(page, order, fpi), ... */
int notrace pt_free(struct kprobe *p, struct pt_regs *regs)
{
	pt_kp_free_page(p, (struct page *)regs_get_kernel_argument(regs, 0),
			(unsigned int)regs_get_kernel_argument(regs, 1));
	return 0;
}

#ifdef PT_HAVE_FREE_UNREF_PAGE0
/* free_pcp_prepare(page) before 5.15: order 0 only, and no order argument. */
int notrace pt_free0(struct kprobe *p, struct pt_regs *regs)
{
	pt_kp_free_page(p, (struct page *)regs_get_kernel_argument(regs, 0), 0);
	return 0;
}
#endif

#ifdef PT_HAVE_FOLIOS
/*
 * free_unref_page(page, order) (6.12), __free_frozen_pages(page, order,
 * fpi) (7.x): they keep the orders the per-CPU lists take and pass the
 * rest on to __free_pages_ok() by a tail jump, so the return address
 * cannot tell; the test is the kernel's pcp_allowed_order().
 */
int notrace pt_free_pcp(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int order = (unsigned int)regs_get_kernel_argument(regs, 1);

	if (order <= PAGE_ALLOC_COSTLY_ORDER ||
	    (IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE) && order == HPAGE_PMD_ORDER))
		pt_kp_free_page(p,
				(struct page *)regs_get_kernel_argument(regs, 0),
				order);
	return 0;
}

/*
 * __free_frozen_pages(page, order, fpi) and __free_pages_ok() on 7.x are
 * also handed ranges whose pages free_pages_prepare() (hooked, and so
 * reported) already prepared one by one: free_contig_range() and vfree()
 * pass FPI_PREPARED, BIT(3) of mm/page_alloc.c's fpi_t there.  Only the
 * 7.x alternative, found by __free_frozen_pages, uses these two.
 */
#define PT_FPI_PREPARED		BIT(3)

int notrace pt_free_fpi(struct kprobe *p, struct pt_regs *regs)
{
	if (regs_get_kernel_argument(regs, 2) & PT_FPI_PREPARED)
		return 0;
	return pt_free(p, regs);
}

int notrace pt_free_pcp_fpi(struct kprobe *p, struct pt_regs *regs)
{
	if (regs_get_kernel_argument(regs, 2) & PT_FPI_PREPARED)
		return 0;
	return pt_free_pcp(p, regs);
}

/* free_unref_folios(folios): every folio of the batch is freed. */
int notrace pt_free_folios(struct kprobe *p, struct pt_regs *regs)
{
	struct folio_batch *fb = (void *)regs_get_kernel_argument(regs, 0);
	enum pt_event_ctx ctx = pt_kprobe_ctx(p);
	unsigned int type = pt_free_type_ctx(ctx);
	unsigned int i;

	for (i = 0; i < folio_batch_count(fb); i++) {
		pt_check_free(&fb->folios[i]->page);
		pt_kprobe_emit(ctx, type, folio_pfn(fb->folios[i]),
			       folio_nr_pages(fb->folios[i]), NULL);
	}
	return 0;
}
#endif

