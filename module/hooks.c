// SPDX-License-Identifier: GPL-2.0
/*
 * Where the probes go: the attach table, per kernel version range and
 * backend, and the handlers that turn a probe hit into pt_emit().  Nothing
 * but this file knows kernel symbol names.
 *
 * Three backends, chosen by the hook= parameter when a session starts
 * (hook=auto, the default: fentry, but kprobe on PREEMPT_RT and wherever
 * fentry cannot attach):
 *
 *  kprobe      kprobes and kretprobes on the allocator itself; the
 *              allocator's return is reached through a kprobe that sends
 *              the call into the fentry backend's return trampoline
 *              (a kretprobe on PREEMPT_RT, see pt_alloc_redirect()).
 *  fentry      the same functions, reached by ftrace direct calls from
 *              their fentry call sites into our own trampolines
 *              (fentry.h): a return trampoline on the allocator entry, an
 *              entry trampoline on each free function.  No kprobe lookup
 *              and no pt_regs: about half the kprobe backend's cost.
 *              Where a function has no fentry call site
 *              (free_pages_prepare on 6.12) it keeps its kprobe.
 *  tracepoint  the kmem tracepoints mm_page_alloc and mm_page_free where
 *              they see the same events (cheaper than kprobes), and the
 *              kprobes below for what no tracepoint sees: the bulk
 *              allocator, compaction, and the reclaim scopes.
 *
 * Why these symbols (checked against the disassembly of each kernel, and by
 * the ground-truth selftest against pages it allocated itself):
 *
 * 6.1 (also the 6.1 PREEMPT_RT kernel: same symbols and call graph)
 *  allocation
 *   __alloc_pages         (return; or tracepoint mm_page_alloc, which
 *                         fires there only) every allocation but the bulk
 *                         allocator's: alloc_pages, folio_alloc,
 *                         __get_free_pages, THP and hugetlb all end here.
 *                         Its inner helpers (prep_new_page,
 *                         post_alloc_hook) are inlined, or have no ftrace
 *                         site, so only its return has the page.
 *   __alloc_pages_bulk    (kretprobe) takes pages off the per-CPU lists
 *                         itself; we diff the caller's array or list
 *                         between entry and return.  Its fallback into
 *                         __alloc_pages is reported by that hook, which
 *                         notes the page in the bulk call's data so that
 *                         the diff skips it.
 *   split_map_pages       (kprobe) compaction hands out free blocks taken
 *                         straight off the free lists: migration targets
 *                         and alloc_contig_range().  It calls
 *                         post_alloc_hook() on each, but we cannot probe
 *                         that one: prep_new_page() calls it for every
 *                         allocation, inlined or not as the compiler
 *                         likes (Debian's build inlines it; the KASAN/
 *                         lockdep one of make check-debug calls the
 *                         out-of-line copy from __alloc_pages_bulk(),
 *                         whose pages would be reported twice).
 *  free (tracepoint mm_page_free fires in exactly these two)
 *   free_pcp_prepare      (kprobe) free_unref_page() and
 *                         free_unref_page_list(): every order-0..3 and THP
 *                         free, single or batched (release_pages,
 *                         put_pages_list, folio batches, reclaim).
 *   __free_pages_ok       (kprobe) every other order, alloc_pages_exact's
 *                         tail pages, page_frag, and memory handed to the
 *                         allocator at boot or hotplug.
 *
 * 6.12 (the allocator entry points gained _noprof; free_pages_prepare() is
 * inlined into the free paths)
 *  allocation
 *   __alloc_pages_noprof, alloc_pages_bulk_noprof  as on 6.1.
 *   post_alloc_hook       (kprobe) compaction_alloc() and
 *                         release_free_list(), which turns compaction's
 *                         unused free pages back into allocated pages only
 *                         to free them at once (an alloc, then a free).
 *   isolate_freepages_range (kretprobe) alloc_contig_range() (gigantic
 *                         hugetlb pages, virtio-mem): it inlines its
 *                         post_alloc_hook() calls, so the range it isolates
 *                         is recorded as one allocation.
 *  free (tracepoint mm_page_free fires in exactly these four)
 *   free_unref_page       (kprobe) orders <= 3 and THP; it tail-jumps to
 *                         __free_pages_ok for the others, so it reports
 *                         only what it keeps (see pt_free_unref_page()).
 *   __free_pages_ok       (kprobe) every other order, alloc_pages_exact's
 *                         tail pages, boot and hotplug memory.
 *   free_unref_folios     (kprobe) folio batches: folios_put_refs (and so
 *                         release_pages), put_pages_list, and reclaim.
 *   free_pages_prepare    (kprobe) the out-of-line copy serves only
 *                         compaction_free(): a migration target handed back.
 *
 * Reclaim: a free is a reclaim (the seed's scavenge) when the task that
 * frees is inside the LRU shrinking code: shrink_lruvec() (the classic LRU,
 * with shrink_inactive_list() and shrink_active_list() inlined),
 * evict_folios() (multi-gen LRU) or shrink_folio_list() (also reached by
 * MADV_PAGEOUT).  kswapd, direct reclaim and memcg reclaim (memory.reclaim,
 * memory.high/max) all run these.  Frees in interrupts, and frees by
 * munmap, truncate, drop_caches or drivers, are not inside them and stay
 * frees.  We know a task is inside such a function because we hold a
 * kretprobe on it without handlers (a "scope"): while the function runs,
 * a node of that kretprobe's rethook sits on the task's rethook list.
 *
 * A probe hit that the kprobe core drops because another probe is running
 * on the same CPU (an interrupt that frees a page while a handler runs) is
 * counted in the probe's nmissed; pt_hooks_missed() sums them so they are
 * reported as lost, never silently dropped.  A scope's misses lose no event
 * (at worst a reclaim is reported as a free) and are not counted as lost.
 */
#include <linux/bitmap.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pagevec.h>
#include <linux/ptrace.h>
#include <linux/rethook.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/utsname.h>

#include "fentry.h"
#include "pagetrace.h"

#ifndef CONFIG_KRETPROBE_ON_RETHOOK
#error "pagetrace finds a task's scopes on its rethook list: needs KRETPROBE_ON_RETHOOK"
#endif

/*
 * The hook= parameter.  Read when a session starts, like the others; a bad
 * value fails insmod (or the write to sysfs) with the allowed ones named.
 *
 * hook=auto picks fentry, at half of kprobe's cost (see
 * Documentation/pagetrace/design.rst), except on PREEMPT_RT: ftrace frees
 * a direct call's ops after an RCU-tasks grace period at each detach,
 * which a task busy in the kernel can hold off there for a long time.  If
 * fentry cannot attach (another direct call on the same function, such as
 * a BPF trampoline: -EBUSY), the session falls back to kprobes.  The
 * session record names the backend that ran.
 */
static const char * const pt_backend_names[] = {
	[PAGETRACE_BACKEND_KPROBE]	= "kprobe",
	[PAGETRACE_BACKEND_TRACEPOINT]	= "tracepoint",
	[PAGETRACE_BACKEND_FENTRY]	= "fentry",
	[PT_BACKEND_AUTO]		= "auto",
};

static unsigned int pt_backend = PT_BACKEND_AUTO;
static struct pt_choice_param pt_backend_param = {
	&pt_backend, pt_backend_names, ARRAY_SIZE(pt_backend_names)
};
module_param_cb(hook, &pt_choice_param_ops, &pt_backend_param, 0644);
MODULE_PARM_DESC(hook,
		 "Probe mechanism: auto (fentry, or kprobe on PREEMPT_RT or where fentry fails), kprobe, tracepoint or fentry (default auto)");

/*
 * require=SYMBOL: one more function the next session (and insmod) must be
 * able to probe.  For the selftests, which show that a missing or inlined
 * symbol fails the load with its name, whatever the kernel.
 */
static char *pt_require;
module_param_named(require, pt_require, charp, 0644);
MODULE_PARM_DESC(require, "Also require a kprobe on this function (for tests)");

/* The backend the next session asks for: PAGETRACE_BACKEND_* or auto. */
unsigned int pt_hooks_backend(void)
{
	return READ_ONCE(pt_backend);
}

/*
 * Scopes: kretprobes that only mark "this task is inside that function".
 * Their rethooks are set when registered, before any hook that looks for
 * them, and only compared, never dereferenced, so a stale value is
 * harmless.
 */
enum pt_scope {
	PT_SCOPE_NONE,
	PT_SCOPE_BULK,		/* the bulk allocator */
	PT_SCOPE_RECLAIM,	/* LRU shrinking */
	PT_NR_SCOPES,
};

#define PT_SCOPE_MAX_FUNCS	4

static struct rethook *pt_scope_rh[PT_NR_SCOPES][PT_SCOPE_MAX_FUNCS];

/*
 * The current task's innermost call of a function of @scope, or NULL.
 *
 * Each call of a kretprobed function pushes a node on the task's rethook
 * list at entry and pops it at return.  Only the task itself, and
 * interrupts on its CPU (which pop what they push before they return),
 * change the list, so with interrupts off it holds still.
 */
static struct kretprobe_instance *pt_scope_find(enum pt_scope scope)
{
	struct llist_node *n;
	unsigned int i;

	lockdep_assert_irqs_disabled();
	for (n = current->rethooks.first; n; n = n->next) {
		struct rethook_node *rn = container_of(n, struct rethook_node,
						       llist);

		for (i = 0; i < PT_SCOPE_MAX_FUNCS && pt_scope_rh[scope][i]; i++) {
			if (rn->rethook == pt_scope_rh[scope][i])
				return container_of(rn, struct kretprobe_instance,
						    node);
		}
	}
	return NULL;
}

/* Whether a task (not an interrupt) may be inside some kretprobed call. */
static bool pt_task_has_scopes(void)
{
	return in_task() && READ_ONCE(current->rethooks.first);
}

/* Reclaim when the freeing task is inside LRU shrinking; see above. */
static unsigned int pt_free_type(void)
{
	unsigned int type = PAGETRACE_EV_FREE;
	unsigned long flags;

	if (!pt_task_has_scopes())
		return type;
	local_irq_save(flags);
	if (pt_scope_find(PT_SCOPE_RECLAIM))
		type = PAGETRACE_EV_RECLAIM;
	local_irq_restore(flags);
	return type;
}

static void pt_free_block(unsigned long pfn, unsigned long npages)
{
	pt_emit(pt_free_type(), pfn, npages);
}

/* Also the fentry trampolines' handler, hence __used (see below). */
static __used void notrace pt_free_page(struct page *page, unsigned int order)
{
	pt_free_block(page_to_pfn(page), 1UL << order);
}

/*
 * __alloc_pages_bulk(gfp, nid, nodemask, nr_pages, page_list, page_array)
 *
 * It fills the NULL slots of page_array, or adds pages at the head of
 * page_list.  At entry we note which slots are empty (the first
 * PT_BULK_SLOTS; callers pass far fewer, and slots beyond are taken to be
 * empty) or which entry heads the list; at return everything new is ours,
 * but for a page its fallback got from __alloc_pages(), which that hook
 * reported and noted in @fallback.
 */
#define PT_BULK_SLOTS	1024

struct pt_bulk_data {
	struct list_head	*list;
	struct list_head	*first;
	struct page		**array;
	struct page		*fallback;
	int			nr;
	DECLARE_BITMAP(empty, PT_BULK_SLOTS);
};

static int notrace pt_bulk_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_bulk_data *d = (void *)ri->data;
	int i;

	d->nr = regs_get_kernel_argument(regs, 3);
	d->list = (void *)regs_get_kernel_argument(regs, 4);
	d->array = (void *)regs_get_kernel_argument(regs, 5);
	d->fallback = NULL;
	if (d->nr <= 0)
		return 1;
	if (d->array) {
		for (i = 0; i < min(d->nr, PT_BULK_SLOTS); i++)
			__assign_bit(i, d->empty, !d->array[i]);
	} else if (d->list) {
		d->first = d->list->next;
	} else {
		return 1;
	}
	return 0;
}

/* Where a kretprobe's function returns, for the call stack of a sample. */
static struct pt_origin pt_return_origin(struct kretprobe_instance *ri,
					 struct pt_regs *regs)
{
	return (struct pt_origin){ regs, (unsigned long)get_kretprobe(ri)->kp.addr };
}

static void pt_bulk_page(struct pt_bulk_data *d, struct page *page,
			 const struct pt_origin *origin)
{
	if (page != d->fallback)
		pt_emit_alloc(page_to_pfn(page), 1, origin);
}

static int notrace pt_bulk_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_origin origin = pt_return_origin(ri, regs);
	struct pt_bulk_data *d = (void *)ri->data;
	struct list_head *pos;
	int i;

	if (d->array) {
		for (i = 0; i < d->nr; i++) {
			if (d->array[i] &&
			    (i >= PT_BULK_SLOTS || test_bit(i, d->empty)))
				pt_bulk_page(d, d->array[i], &origin);
		}
		return 0;
	}
	for (pos = d->list->next, i = 0; pos != d->first && pos != d->list &&
	     i < d->nr; pos = pos->next, i++)
		pt_bulk_page(d, list_entry(pos, struct page, lru), &origin);
	return 0;
}

/*
 * An allocation from __alloc_pages().  If a task inside the bulk allocator
 * made it, it may be the bulk fallback's page: note it there.  Nested
 * allocations (reclaim inside the fallback) come before the fallback's own
 * return, so the last page noted is the fallback's.
 */
static void pt_alloc_page(struct page *page, unsigned int order,
			  const struct pt_origin *origin)
{
	struct kretprobe_instance *ri;
	unsigned long flags;

	if (pt_task_has_scopes()) {
		local_irq_save(flags);
		ri = pt_scope_find(PT_SCOPE_BULK);
		if (ri)
			((struct pt_bulk_data *)ri->data)->fallback = page;
		local_irq_restore(flags);
	}
	pt_emit_alloc(page_to_pfn(page), 1UL << order, origin);
}

/* __alloc_pages(gfp, order, nid, nodemask): only the return has the page. */
struct pt_alloc_data {
	unsigned int order;
};

static int notrace pt_alloc_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;

	d->order = regs_get_kernel_argument(regs, 1);
	return 0;
}

static int notrace pt_alloc_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;
	struct page *page = (struct page *)regs_return_value(regs);
	struct pt_origin origin;

	if (page) {
		origin = pt_return_origin(ri, regs);
		pt_alloc_page(page, d->order, &origin);
	}
	return 0;
}

/* Tracepoint mm_page_alloc(page, order, gfp, migratetype); page may be NULL. */
static void notrace pt_tp_alloc(void *data, struct page *page,
				unsigned int order, gfp_t gfp, int migratetype)
{
	/* No registers: the stack is taken from here (stacks.c). */
	if (page)
		pt_alloc_page(page, order, NULL);
}

/*
 * isolate_freepages_range(cc, start_pfn, end_pfn) on 6.12: only
 * alloc_contig_range() calls it, and takes [start_pfn, return value) off
 * the free lists for good (its post_alloc_hook() calls are inlined).  One
 * allocation of that range; the parts it trims are freed page by page.
 */
struct pt_contig_data {
	unsigned long start;
};

static int notrace pt_contig_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	((struct pt_contig_data *)ri->data)->start =
		regs_get_kernel_argument(regs, 1);
	return 0;
}

static int notrace pt_contig_return(struct kretprobe_instance *ri, struct pt_regs *regs)
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

/*
 * split_map_pages(list) on 6.1: @list holds the free blocks compaction
 * isolated, each with its order in page_private(); the function then calls
 * post_alloc_hook() on each and splits it into pages.  The list is the
 * calling task's own (compact_control's free list, or a list on the stack
 * of isolate_freepages_range()), nobody else links or unlinks its entries,
 * and we run in that task at the function's entry, so it holds still while
 * we walk it.
 */
static int notrace pt_split_map_pages(struct kprobe *p, struct pt_regs *regs)
{
	struct list_head *list = (void *)regs_get_kernel_argument(regs, 0);
	struct pt_origin origin = { regs };
	struct page *page;

	list_for_each_entry(page, list, lru)
		pt_emit_alloc(page_to_pfn(page), 1UL << page_private(page),
			      &origin);
	return 0;
}

/* post_alloc_hook(page, order, gfp) */
static int notrace pt_compact_alloc(struct kprobe *p, struct pt_regs *regs)
{
	struct page *page = (struct page *)regs_get_kernel_argument(regs, 0);
	struct pt_origin origin = { regs };

	pt_emit_alloc(page_to_pfn(page), 1UL << regs_get_kernel_argument(regs, 1),
		      &origin);
	return 0;
}

/* free_pcp_prepare(page, order), __free_pages_ok(page, order, fpi), ... */
static int notrace pt_free(struct kprobe *p, struct pt_regs *regs)
{
	pt_free_page((struct page *)regs_get_kernel_argument(regs, 0),
		     regs_get_kernel_argument(regs, 1));
	return 0;
}

/* Tracepoint mm_page_free(page, order) */
static void notrace pt_tp_free(void *data, struct page *page, unsigned int order)
{
	pt_free_page(page, order);
}

/*
 * free_unref_page(page, order) on 6.12 keeps the orders the per-CPU lists
 * take and passes the rest on to __free_pages_ok(), by a tail jump, so the
 * return address cannot tell; the test is the kernel's pcp_allowed_order()
 * (checked against its disassembly: order <= 3 || order == 9).  Called
 * with the function's arguments, by its kprobe or its fentry trampoline.
 */
static __used void notrace pt_free_unref(struct page *page, unsigned int order)
{
	if (order <= PAGE_ALLOC_COSTLY_ORDER ||
	    (IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE) && order == HPAGE_PMD_ORDER))
		pt_free_page(page, order);
}

static int notrace pt_free_unref_page(struct kprobe *p, struct pt_regs *regs)
{
	pt_free_unref((struct page *)regs_get_kernel_argument(regs, 0),
		      regs_get_kernel_argument(regs, 1));
	return 0;
}

/* free_unref_folios(folios): every folio of the batch is freed. */
static __used void notrace pt_free_batch(struct folio_batch *fb)
{
	unsigned int type = pt_free_type();
	unsigned int i;

	for (i = 0; i < folio_batch_count(fb); i++)
		pt_emit(type, folio_pfn(fb->folios[i]),
			folio_nr_pages(fb->folios[i]));
}

static int notrace pt_free_folios(struct kprobe *p, struct pt_regs *regs)
{
	pt_free_batch((void *)regs_get_kernel_argument(regs, 0));
	return 0;
}

/*
 * The fentry backend: the same functions as the kprobe backend, reached by
 * direct calls from their fentry call sites (fentry.h).  The handlers get
 * the functions' own arguments, run preemptible in whatever context the
 * function runs, and leave everything else to pt_emit().
 */

/*
 * Each trampoline calls the handler its kprobe calls too, with the
 * function's own arguments: free_pcp_prepare and __free_pages_ok (page,
 * order, ...), free_unref_page (page, order), free_unref_folios (folios).
 */
PT_FENTRY_TRAMPOLINE(pt_free_tramp, pt_free_page);
PT_FENTRY_TRAMPOLINE(pt_free_unref_page_tramp, pt_free_unref);
PT_FENTRY_TRAMPOLINE(pt_free_folios_tramp, pt_free_batch);

/*
 * The page allocator's entry point, whose return the fexit trampoline
 * sees.  The trampoline calls it by name, so it is chosen by the headers
 * we are built against, and the attach table names the same symbol.
 */
#ifdef PT_HAVE_ALLOC_NOPROF
#define PT_ALLOC_FUNC		__alloc_pages_noprof
#else
#define PT_ALLOC_FUNC		__alloc_pages
#endif

/* PT_ALLOC_FUNC returned @page for (gfp, @order, nid, nodemask). */
static __used void notrace pt_fexit_alloc(struct page *page, unsigned long order)
{
	struct pt_origin origin = { NULL, (unsigned long)PT_ALLOC_FUNC };

	if (page)
		pt_alloc_page(page, order, &origin);
	pt_fexit_leave();
}

PT_FEXIT_TRAMPOLINE(pt_alloc_tramp, PT_ALLOC_FUNC, pt_fexit_enter,
		    pt_fexit_alloc);

/*
 * The kprobe backend's allocation hook, except on PREEMPT_RT: a kprobe on
 * PT_ALLOC_FUNC's call site that sends the call through the same return
 * trampoline (pt_fexit_kprobe_register()), at a fraction of a kretprobe's
 * cost.  Its detach waits for no RCU-tasks grace period (the kprobe
 * core's ftrace_ops is the kernel's own); module exit does, as for
 * fentry, for the trampoline's few uncounted instructions.  PREEMPT_RT,
 * where that wait can last minutes, keeps the kretprobe, and so does a
 * kernel where the kprobe cannot redirect (another user of IPMODIFY on
 * the function: a live patch).
 */
PT_FEXIT_AFTER_KPROBE(pt_alloc_kprobe_tramp, PT_ALLOC_FUNC, pt_fexit_enter,
		      pt_fexit_alloc);

static int notrace pt_alloc_redirect(struct kprobe *p, struct pt_regs *regs)
{
	instruction_pointer_set(regs, (unsigned long)pt_alloc_kprobe_tramp);
	return 1;	/* resume at the new instruction pointer */
}

/*
 * The attach table.  Entries apply to kernels in [since, until) and to the
 * backends in @backends.  Every entry that applies must attach, or the
 * session (and, for the hook= given at load, the module) fails with the
 * symbol named.  Scopes come first: the hooks after them look them up.
 */
enum pt_kind { PT_KPROBE, PT_KRETPROBE, PT_TRACEPOINT, PT_FENTRY };

#define PT_ON_KPROBE	BIT(PAGETRACE_BACKEND_KPROBE)
#define PT_ON_TP	BIT(PAGETRACE_BACKEND_TRACEPOINT)
#define PT_ON_FENTRY	BIT(PAGETRACE_BACKEND_FENTRY)
#define PT_ON_ALL	(PT_ON_KPROBE | PT_ON_TP | PT_ON_FENTRY)

struct pt_versions {
	u32			since;
	u32			until;
};

struct pt_hook {
	struct pt_versions	ver;
	u32			backends;
	enum pt_kind		kind;
	const char		*symbol;	/* function or tracepoint */
	bool			breakpoint;	/* notrace: see PT_KP_BREAKPOINT */
	kprobe_pre_handler_t	pre;		/* PT_KPROBE */
	kretprobe_handler_t	entry;		/* PT_KRETPROBE */
	kretprobe_handler_t	ret;
	size_t			data_size;
	enum pt_scope		scope;		/* publish the rethook here */
	void			*tp_probe;	/* PT_TRACEPOINT */
	void			(*tramp)(void);	/* PT_FENTRY */
	bool			fexit;		/* tramp calls symbol's body */
	/* PT_KRETPROBE: a kprobe with this handler instead, if it can */
	kprobe_pre_handler_t	redirect;
};

/* Kernel version as major << 8 | minor, compared with the running kernel. */
#define PT_V(a, b)	((a) << 8 | (b))
#define PT_6_1		{ PT_V(6, 1), PT_V(6, 2) }
#define PT_6_12		{ PT_V(6, 12), PT_V(6, 13) }

#define PT_SCOPE(ver, sym, sc)						\
	{ ver, PT_ON_ALL, PT_KRETPROBE, sym, .scope = sc }
#define PT_KP(ver, on, sym, handler)					\
	{ ver, on, PT_KPROBE, sym, .pre = handler }
/*
 * A function without an ftrace site (an "inline" one: the kernel's inline
 * implies notrace) gets a breakpoint kprobe, which the kprobe core would
 * turn into a jump ("optimized") a moment later.  Removing a jump-optimized
 * probe waits for an RCU-tasks grace period, which a task busy in the
 * kernel on a PREEMPT_RT CPU can hold off for minutes: the session stop
 * hung (seen on 6.1-rt under munmap churn).  A post handler is what keeps
 * the kprobe core from optimizing a probe, so these get an empty one; they
 * sit on rare paths (compaction), where a breakpoint's cost does not show.
 */
#define PT_KP_BREAKPOINT(ver, on, sym, handler)				\
	{ ver, on, PT_KPROBE, sym, .breakpoint = true, .pre = handler }
#define PT_TP(ver, sym, probe)						\
	{ ver, PT_ON_TP, PT_TRACEPOINT, sym, .tp_probe = probe }
#define PT_BULK(ver, sym)						\
	{ ver, PT_ON_ALL, PT_KRETPROBE, sym, .entry = pt_bulk_entry,	\
	  .ret = pt_bulk_return, .data_size = sizeof(struct pt_bulk_data), \
	  .scope = PT_SCOPE_BULK }
#define PT_FE(ver, sym, trampoline)					\
	{ ver, PT_ON_FENTRY, PT_FENTRY, sym, .tramp = trampoline }
#define PT_FEXIT(ver, sym, trampoline)					\
	{ ver, PT_ON_FENTRY, PT_FENTRY, sym, .tramp = trampoline,	\
	  .fexit = true }
#define PT_ALLOC(ver, sym)						\
	{ ver, PT_ON_KPROBE, PT_KRETPROBE, sym, .entry = pt_alloc_entry, \
	  .ret = pt_alloc_return, .data_size = sizeof(struct pt_alloc_data), \
	  .redirect = IS_ENABLED(CONFIG_PREEMPT_RT) ? NULL : pt_alloc_redirect }

static const struct pt_hook pt_hook_table[] = {
	PT_SCOPE(PT_6_1, "shrink_lruvec", PT_SCOPE_RECLAIM),
	PT_SCOPE(PT_6_1, "evict_folios", PT_SCOPE_RECLAIM),
	PT_SCOPE(PT_6_1, "shrink_folio_list", PT_SCOPE_RECLAIM),
	PT_BULK(PT_6_1, "__alloc_pages_bulk"),
	PT_ALLOC(PT_6_1, __stringify(PT_ALLOC_FUNC)),
	PT_TP(PT_6_1, "mm_page_alloc", pt_tp_alloc),
	PT_KP(PT_6_1, PT_ON_ALL, "split_map_pages", pt_split_map_pages),
	PT_KP(PT_6_1, PT_ON_KPROBE, "free_pcp_prepare", pt_free),
	PT_KP(PT_6_1, PT_ON_KPROBE, "__free_pages_ok", pt_free),
	PT_TP(PT_6_1, "mm_page_free", pt_tp_free),
	PT_FEXIT(PT_6_1, __stringify(PT_ALLOC_FUNC), pt_alloc_tramp),
	PT_FE(PT_6_1, "free_pcp_prepare", pt_free_tramp),
	PT_FE(PT_6_1, "__free_pages_ok", pt_free_tramp),

	PT_SCOPE(PT_6_12, "shrink_lruvec", PT_SCOPE_RECLAIM),
	PT_SCOPE(PT_6_12, "evict_folios", PT_SCOPE_RECLAIM),
	PT_SCOPE(PT_6_12, "shrink_folio_list", PT_SCOPE_RECLAIM),
	PT_BULK(PT_6_12, "alloc_pages_bulk_noprof"),
	PT_ALLOC(PT_6_12, __stringify(PT_ALLOC_FUNC)),
	PT_TP(PT_6_12, "mm_page_alloc", pt_tp_alloc),
	PT_KP_BREAKPOINT(PT_6_12, PT_ON_ALL, "post_alloc_hook", pt_compact_alloc),
	{ PT_6_12, PT_ON_ALL, PT_KRETPROBE, "isolate_freepages_range",
	  .entry = pt_contig_entry, .ret = pt_contig_return,
	  .data_size = sizeof(struct pt_contig_data) },
	PT_KP(PT_6_12, PT_ON_KPROBE, "free_unref_page", pt_free_unref_page),
	PT_KP(PT_6_12, PT_ON_KPROBE, "__free_pages_ok", pt_free),
	PT_KP(PT_6_12, PT_ON_KPROBE, "free_unref_folios", pt_free_folios),
	/* Inline, so notrace: no fentry call site; a kprobe for both. */
	PT_KP(PT_6_12, PT_ON_KPROBE | PT_ON_FENTRY, "free_pages_prepare", pt_free),
	PT_TP(PT_6_12, "mm_page_free", pt_tp_free),
	PT_FEXIT(PT_6_12, __stringify(PT_ALLOC_FUNC), pt_alloc_tramp),
	PT_FE(PT_6_12, "free_unref_page", pt_free_unref_page_tramp),
	PT_FE(PT_6_12, "__free_pages_ok", pt_free_tramp),
	PT_FE(PT_6_12, "free_unref_folios", pt_free_folios_tramp),
};

#define PT_MAX_HOOKS	(ARRAY_SIZE(pt_hook_table) + 1)

static int pt_nop(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

/*
 * An empty post handler changes how the kprobe core treats a kprobe: it
 * never jump-optimizes it (PT_KP_BREAKPOINT), and on an ftrace site it
 * arms it with its IPMODIFY ftrace_ops (pt_fexit_kprobe_register()).
 */
void pt_kprobe_no_post(struct kprobe *p, struct pt_regs *regs,
		       unsigned long flags)
{
}

/* The entry for require=, filled in when a session starts: any symbol. */
static char pt_required_sym[KSYM_NAME_LEN];
static struct pt_hook pt_required_hook = {
	.backends = PT_ON_ALL, .kind = PT_KPROBE, .breakpoint = true,
	.pre = pt_nop,
};

/* The probes of the table entries that apply, registered per session. */
static struct pt_probe {
	const struct pt_hook	*hook;
	enum pt_kind		kind;	/* as registered: see PT_ALLOC */
	struct kprobe		kp;
	struct kretprobe	rp;
	struct tracepoint	*tp;
	struct pt_fentry	fe;
	bool			registered;
} pt_probes[PT_MAX_HOOKS];
static unsigned int pt_nr_probes;
static bool pt_have_tracepoints;

/*
 * The running kernel's version, from its release string: the table is
 * about what the kernel in memory does, whatever headers built us.
 */
static u32 pt_running_version(void)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(init_utsname()->release, "%u.%u", &major, &minor) != 2)
		return 0;
	return PT_V(major, minor);
}

static void pt_tp_match(struct tracepoint *tp, void *priv)
{
	struct pt_probe *p = priv;

	if (!strcmp(tp->name, p->hook->symbol))
		p->tp = tp;
}

static int pt_tp_register(struct pt_probe *p)
{
	p->tp = NULL;
	for_each_kernel_tracepoint(pt_tp_match, p);
	if (!p->tp)
		return -ENOENT;
	return tracepoint_probe_register(p->tp, p->hook->tp_probe, NULL);
}

static void pt_scope_publish(struct pt_probe *p)
{
	struct rethook **slot = pt_scope_rh[p->hook->scope];
	unsigned int i;

	for (i = 0; i < PT_SCOPE_MAX_FUNCS; i++) {
		if (!slot[i]) {
			slot[i] = p->rp.rh;
			return;
		}
	}
	WARN_ONCE(1, "pagetrace: too many functions in one scope\n");
}

static int pt_probe_register(struct pt_probe *p)
{
	const struct pt_hook *h = p->hook;
	int ret;

	p->kind = h->kind;
	switch (h->kind) {
	case PT_KPROBE:
		p->kp = (struct kprobe){ .symbol_name = h->symbol,
					 .pre_handler = h->pre };
		/* Never jump-optimized; see PT_KP_BREAKPOINT. */
		if (h->breakpoint)
			p->kp.post_handler = pt_kprobe_no_post;
		ret = register_kprobe(&p->kp);
		break;
	case PT_KRETPROBE:
		if (h->redirect) {
			ret = pt_fexit_kprobe_register(&p->kp, h->symbol,
						       h->redirect,
						       (unsigned long)PT_ALLOC_FUNC +
						       PT_FENTRY_END);
			if (!ret) {
				p->kind = PT_KPROBE;
				break;
			}
			pr_info("pagetrace: cannot send %s through a trampoline (%d), using a kretprobe\n",
				h->symbol, ret);
		}
		p->rp = (struct kretprobe){
			.kp.symbol_name = h->symbol,
			.entry_handler = h->entry,
			.handler = h->ret,
			.data_size = h->data_size,
			/*
			 * Allocations and reclaim sleep, so many calls may be
			 * in flight; an instance short is a counted miss.
			 */
			.maxactive = max_t(int, 1024, 64 * num_possible_cpus()),
		};
		ret = register_kretprobe(&p->rp);
		break;
	case PT_TRACEPOINT:
		ret = pt_tp_register(p);
		pt_have_tracepoints |= !ret;
		break;
	case PT_FENTRY:
		ret = pt_fentry_attach(&p->fe, h->symbol, h->tramp,
				       h->fexit ? (unsigned long)PT_ALLOC_FUNC +
				       PT_FENTRY_END : 0);
		break;
	default:
		ret = -EINVAL;
	}
	if (ret) {
		pr_err("pagetrace: cannot attach to %s %s on %s: %d%s\n",
		       h->kind == PT_TRACEPOINT ? "tracepoint" : "function",
		       h->symbol, init_utsname()->release, ret,
		       ret == -ENOENT ? " (missing or inlined)" : "");
		return ret;
	}
	p->registered = true;
	if (h->scope)
		pt_scope_publish(p);
	return 0;
}

/*
 * Detach every probe registered, kprobes and kretprobes each in one batch:
 * unregistering waits for an RCU grace period, and a batch waits once for
 * all its probes (a session stop under TCG took a second with one wait per
 * probe).
 */
static void pt_probes_unregister(void)
{
	struct kretprobe *rps[PT_MAX_HOOKS];
	struct kprobe *kps[PT_MAX_HOOKS];
	unsigned int i, nk = 0, nr = 0;

	for (i = 0; i < pt_nr_probes; i++) {
		struct pt_probe *p = &pt_probes[i];

		if (!p->registered)
			continue;
		switch (p->kind) {
		case PT_KPROBE:
			kps[nk++] = &p->kp;
			break;
		case PT_KRETPROBE:
			rps[nr++] = &p->rp;
			break;
		case PT_TRACEPOINT:
			tracepoint_probe_unregister(p->tp, p->hook->tp_probe,
						    NULL);
			break;
		case PT_FENTRY:
			pt_fentry_detach(&p->fe);
			break;
		}
		p->registered = false;
	}
	/* The event hooks first, then the scopes they look up. */
	if (nk)
		unregister_kprobes(kps, nk);
	if (nr)
		unregister_kretprobes(rps, nr);
}

/**
 * pt_hooks_register - attach every probe a backend needs on this kernel
 * @backend: PAGETRACE_BACKEND_*, or PT_BACKEND_AUTO
 *
 * Return: 0, or the first error after undoing what was attached; the
 * kernel log names the symbol that failed.
 */
static int pt_backend_register(unsigned int backend)
{
	u32 version = pt_running_version();
	unsigned int i;
	int ret;

	pt_nr_probes = 0;
	for (i = 0; i < ARRAY_SIZE(pt_hook_table); i++) {
		const struct pt_hook *h = &pt_hook_table[i];

		if (version >= h->ver.since && version < h->ver.until &&
		    (h->backends & BIT(backend)))
			pt_probes[pt_nr_probes++].hook = h;
	}
	/* A write to the parameter frees the old string: copy it locked. */
	kernel_param_lock(THIS_MODULE);
	strscpy(pt_required_sym, pt_require ? pt_require : "",
		sizeof(pt_required_sym));
	kernel_param_unlock(THIS_MODULE);
	if (pt_required_sym[0]) {
		pt_required_hook.symbol = pt_required_sym;
		pt_probes[pt_nr_probes++].hook = &pt_required_hook;
	}
	if (!pt_nr_probes) {
		pr_err("pagetrace: no attach points known for %s\n",
		       init_utsname()->release);
		return -EOPNOTSUPP;
	}
	for (i = 0; i < pt_nr_probes; i++) {
		ret = pt_probe_register(&pt_probes[i]);
		if (ret)
			goto unregister_probes;
	}
	return 0;

unregister_probes:
	pt_hooks_unregister();
	return ret;
}

/**
 * pt_hooks_register - attach the probes of the backend hook= asks for
 * @backend: PAGETRACE_BACKEND_* or PT_BACKEND_AUTO; on success, the
 *	     backend attached
 *
 * Return: 0, or the first error after undoing what was attached; the
 * kernel log names the symbol that failed.
 */
int pt_hooks_register(unsigned int *backend)
{
	int ret;

	if (*backend != PT_BACKEND_AUTO)
		return pt_backend_register(*backend);
	if (!IS_ENABLED(CONFIG_PREEMPT_RT)) {
		ret = pt_backend_register(PAGETRACE_BACKEND_FENTRY);
		if (!ret) {
			*backend = PAGETRACE_BACKEND_FENTRY;
			return 0;
		}
		pr_info("pagetrace: hook=auto: fentry failed (%d), using kprobes\n",
			ret);
	}
	*backend = PAGETRACE_BACKEND_KPROBE;
	return pt_backend_register(*backend);
}

/* Detach every probe; returns once no handler runs any more. */
void pt_hooks_unregister(void)
{
	pt_probes_unregister();
	if (pt_have_tracepoints)
		tracepoint_synchronize_unregister();
	pt_have_tracepoints = false;
	memset(pt_scope_rh, 0, sizeof(pt_scope_rh));
}

/* Probe hits dropped by the kprobe core in this session so far. */
unsigned long pt_hooks_missed(void)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < pt_nr_probes; i++) {
		const struct pt_probe *p = &pt_probes[i];

		if (p->kind == PT_KPROBE)
			n += READ_ONCE(p->kp.nmissed);
		else if (p->kind == PT_KRETPROBE &&
			 p->hook->scope != PT_SCOPE_RECLAIM)
			n += READ_ONCE(p->rp.nmissed) +
			     READ_ONCE(p->rp.kp.nmissed);
	}
	return n;
}
