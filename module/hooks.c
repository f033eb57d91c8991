// SPDX-License-Identifier: GPL-2.0
/*
 * Where the probes go: the attach table, per kernel version range, and the
 * handlers that turn a probe hit into pt_emit().  Nothing but this file
 * knows kernel symbol names.
 *
 * Why these symbols (checked against the disassembly of each kernel, and by
 * the ground-truth selftest against pages it allocated itself):
 *
 * 6.1
 *  allocation
 *   __alloc_pages         (kretprobe) every allocation but the bulk
 *                         allocator's; alloc_pages, folio_alloc,
 *                         __get_free_pages, THP and hugetlb all end here.
 *                         Its inner helpers (prep_new_page, post_alloc_hook)
 *                         are inlined, so only its return has the page.
 *   __alloc_pages_bulk    (kretprobe) takes pages off the per-CPU lists
 *                         itself; we diff the caller's array or list between
 *                         entry and return.  Its fallback to __alloc_pages
 *                         is reported here, and skipped by the hook above
 *                         (told apart by the return address).
 *   post_alloc_hook       (kprobe) the out-of-line copy is called only by
 *                         compaction's split_map_pages(): migration targets
 *                         and alloc_contig_range().
 *  free
 *   free_pcp_prepare      (kprobe) free_unref_page() and
 *                         free_unref_page_list(): every order-0..3 and THP
 *                         free, single or batched (release_pages,
 *                         put_pages_list, folio batches).
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
 *                         to free them at once (an alloc then a free).
 *  free
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
 * The 6.1 PREEMPT_RT kernel has 6.1's symbols and call graph.
 *
 * A probe hit that the kprobe core drops because another probe is running
 * on the same CPU (an interrupt that frees a page while a handler runs) is
 * counted in the probe's nmissed; pt_hooks_missed() sums them so they are
 * reported as lost, never silently dropped.
 */
#include <linux/bitmap.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/huge_mm.h>
#include <linux/pagevec.h>
#include <linux/ptrace.h>
#include <linux/utsname.h>

#include "pagetrace.h"

/* The bulk allocator's code range, to spot its fallback into __alloc_pages. */
static unsigned long pt_bulk_start, pt_bulk_size;

static void pt_emit_page(unsigned int type, struct page *page,
			 unsigned int order)
{
	pt_emit(type, page_to_pfn(page), 1UL << order);
}

/* __alloc_pages(gfp, order, nid, nodemask) */
struct pt_alloc_data {
	unsigned int order;
};

static int pt_alloc_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;
	unsigned long caller = *(unsigned long *)kernel_stack_pointer(regs);

	/* Non-zero: no return probe; the bulk hook reports this page. */
	if (caller - pt_bulk_start < pt_bulk_size)
		return 1;
	d->order = regs_get_kernel_argument(regs, 1);
	return 0;
}

static int pt_alloc_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_alloc_data *d = (void *)ri->data;
	struct page *page = (struct page *)regs_return_value(regs);

	if (page)
		pt_emit_page(PAGETRACE_EV_ALLOC, page, d->order);
	return 0;
}

/*
 * __alloc_pages_bulk(gfp, nid, nodemask, nr_pages, page_list, page_array)
 *
 * It fills the NULL slots of page_array, or adds pages at the head of
 * page_list.  At entry we note which slots are empty (the first
 * PT_BULK_SLOTS; callers pass far fewer, and slots beyond are taken to be
 * empty) or which entry heads the list; at return everything new is ours.
 */
#define PT_BULK_SLOTS	1024

struct pt_bulk_data {
	struct list_head	*list;
	struct list_head	*first;
	struct page		**array;
	int			nr;
	DECLARE_BITMAP(empty, PT_BULK_SLOTS);
};

static int pt_bulk_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_bulk_data *d = (void *)ri->data;
	int i;

	d->nr = regs_get_kernel_argument(regs, 3);
	d->list = (void *)regs_get_kernel_argument(regs, 4);
	d->array = (void *)regs_get_kernel_argument(regs, 5);
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

static int pt_bulk_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_bulk_data *d = (void *)ri->data;
	struct list_head *pos;
	int i;

	if (d->array) {
		for (i = 0; i < d->nr; i++) {
			if (d->array[i] &&
			    (i >= PT_BULK_SLOTS || test_bit(i, d->empty)))
				pt_emit_page(PAGETRACE_EV_ALLOC, d->array[i], 0);
		}
		return 0;
	}
	for (pos = d->list->next, i = 0; pos != d->first && pos != d->list &&
	     i < d->nr; pos = pos->next, i++)
		pt_emit_page(PAGETRACE_EV_ALLOC, list_entry(pos, struct page, lru), 0);
	return 0;
}

/* post_alloc_hook(page, order, gfp) */
static int pt_compact_alloc(struct kprobe *p, struct pt_regs *regs)
{
	pt_emit_page(PAGETRACE_EV_ALLOC,
		     (struct page *)regs_get_kernel_argument(regs, 0),
		     regs_get_kernel_argument(regs, 1));
	return 0;
}

/* free_pcp_prepare(page, order), __free_pages_ok(page, order, fpi) */
static int pt_free(struct kprobe *p, struct pt_regs *regs)
{
	pt_emit_page(PAGETRACE_EV_FREE,
		     (struct page *)regs_get_kernel_argument(regs, 0),
		     regs_get_kernel_argument(regs, 1));
	return 0;
}

/*
 * free_unref_page(page, order) on 6.12 keeps the orders the per-CPU lists
 * take and passes the rest on to __free_pages_ok(), by a tail jump, so the
 * return address cannot tell; the test is the kernel's pcp_allowed_order()
 * (checked against its disassembly: order <= 3 || order == 9).
 */
static int pt_free_unref_page(struct kprobe *p, struct pt_regs *regs)
{
	unsigned int order = regs_get_kernel_argument(regs, 1);

	if (order <= PAGE_ALLOC_COSTLY_ORDER ||
	    (IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE) && order == HPAGE_PMD_ORDER))
		return pt_free(p, regs);
	return 0;
}

/* free_unref_folios(folios): every folio of the batch is freed. */
static int pt_free_folios(struct kprobe *p, struct pt_regs *regs)
{
	struct folio_batch *fb = (void *)regs_get_kernel_argument(regs, 0);
	unsigned int i;

	for (i = 0; i < folio_batch_count(fb); i++)
		pt_emit(PAGETRACE_EV_FREE, folio_pfn(fb->folios[i]),
			folio_nr_pages(fb->folios[i]));
	return 0;
}

/*
 * The attach table.  Entries apply to kernels in [since, until).  Every
 * entry that applies must attach, or the module refuses to load.
 */
struct pt_hook {
	u32			since;
	u32			until;
	const char		*symbol;
	kprobe_pre_handler_t	pre;		/* a kprobe, or */
	kretprobe_handler_t	entry;		/* a kretprobe */
	kretprobe_handler_t	ret;
	size_t			data_size;
	unsigned long		*range_start;	/* record the code range */
	unsigned long		*range_size;
};

/* Kernel version as major << 8 | minor, compared with the running kernel. */
#define PT_V(a, b)	((a) << 8 | (b))

static const struct pt_hook pt_hook_table[] = {
	/* Must precede __alloc_pages, whose entry handler uses its range. */
	{ PT_V(6, 1), PT_V(6, 2), "__alloc_pages_bulk",
	  .entry = pt_bulk_entry, .ret = pt_bulk_return,
	  .data_size = sizeof(struct pt_bulk_data),
	  .range_start = &pt_bulk_start, .range_size = &pt_bulk_size },
	{ PT_V(6, 1), PT_V(6, 2), "__alloc_pages",
	  .entry = pt_alloc_entry, .ret = pt_alloc_return,
	  .data_size = sizeof(struct pt_alloc_data) },
	{ PT_V(6, 1), PT_V(6, 2), "post_alloc_hook", .pre = pt_compact_alloc },
	{ PT_V(6, 1), PT_V(6, 2), "free_pcp_prepare", .pre = pt_free },
	{ PT_V(6, 1), PT_V(6, 2), "__free_pages_ok", .pre = pt_free },

	{ PT_V(6, 12), PT_V(6, 13), "alloc_pages_bulk_noprof",
	  .entry = pt_bulk_entry, .ret = pt_bulk_return,
	  .data_size = sizeof(struct pt_bulk_data),
	  .range_start = &pt_bulk_start, .range_size = &pt_bulk_size },
	{ PT_V(6, 12), PT_V(6, 13), "__alloc_pages_noprof",
	  .entry = pt_alloc_entry, .ret = pt_alloc_return,
	  .data_size = sizeof(struct pt_alloc_data) },
	{ PT_V(6, 12), PT_V(6, 13), "post_alloc_hook", .pre = pt_compact_alloc },
	{ PT_V(6, 12), PT_V(6, 13), "free_unref_page", .pre = pt_free_unref_page },
	{ PT_V(6, 12), PT_V(6, 13), "__free_pages_ok", .pre = pt_free },
	{ PT_V(6, 12), PT_V(6, 13), "free_unref_folios", .pre = pt_free_folios },
	{ PT_V(6, 12), PT_V(6, 13), "free_pages_prepare", .pre = pt_free },
};

#define PT_MAX_HOOKS	ARRAY_SIZE(pt_hook_table)

/* The probes of the table entries that apply, registered per session. */
static struct pt_probe {
	const struct pt_hook	*hook;
	struct kprobe		kp;
	struct kretprobe	rp;
	bool			registered;
} pt_probes[PT_MAX_HOOKS];
static unsigned int pt_nr_probes;

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

static bool pt_hook_applies(const struct pt_hook *h, u32 version)
{
	return version >= h->since && version < h->until;
}

/*
 * Fill in a symbol's code range from "name+0xoff/0xsize", which is what
 * kallsyms tells modules (kallsyms_lookup_size_offset() is not exported).
 */
static int pt_symbol_range(unsigned long addr, unsigned long *start,
			   unsigned long *size)
{
	char buf[KSYM_SYMBOL_LEN];
	unsigned long off;
	char *plus;

	sprint_symbol(buf, addr);
	plus = strrchr(buf, '+');
	if (!plus || sscanf(plus, "+%lx/%lx", &off, size) != 2)
		return -ENOENT;
	*start = addr - off;
	return 0;
}

static int pt_probe_register(struct pt_probe *p)
{
	const struct pt_hook *h = p->hook;
	struct kprobe *kp;
	int ret;

	if (h->pre) {
		p->kp = (struct kprobe){ .symbol_name = h->symbol,
					 .pre_handler = h->pre };
		kp = &p->kp;
		ret = register_kprobe(kp);
	} else {
		p->rp = (struct kretprobe){
			.kp.symbol_name = h->symbol,
			.entry_handler = h->entry,
			.handler = h->ret,
			.data_size = h->data_size,
			/*
			 * Allocations sleep in reclaim, so many may be in
			 * flight; an instance short is a counted miss.
			 */
			.maxactive = max_t(int, 1024, 64 * num_possible_cpus()),
		};
		kp = &p->rp.kp;
		ret = register_kretprobe(&p->rp);
	}
	if (ret) {
		pr_err("pagetrace: cannot probe %s on %s: %d%s\n", h->symbol,
		       init_utsname()->release, ret,
		       ret == -ENOENT ? " (symbol missing or inlined)" : "");
		return ret;
	}
	p->registered = true;
	if (h->range_start &&
	    pt_symbol_range((unsigned long)kp->addr, h->range_start,
			    h->range_size)) {
		pr_err("pagetrace: no code range for %s on %s\n", h->symbol,
		       init_utsname()->release);
		return -ENOENT;
	}
	return 0;
}

static void pt_probe_unregister(struct pt_probe *p)
{
	if (!p->registered)
		return;
	if (p->hook->pre)
		unregister_kprobe(&p->kp);
	else
		unregister_kretprobe(&p->rp);
	p->registered = false;
}

/**
 * pt_hooks_register - attach every probe the running kernel needs
 *
 * Return: 0, or the first error after undoing what was attached; the
 * kernel log names the symbol that failed.
 */
int pt_hooks_register(void)
{
	u32 version = pt_running_version();
	unsigned int i;
	int ret;

	pt_nr_probes = 0;
	for (i = 0; i < ARRAY_SIZE(pt_hook_table); i++) {
		if (pt_hook_applies(&pt_hook_table[i], version))
			pt_probes[pt_nr_probes++].hook = &pt_hook_table[i];
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

/* Detach every probe; returns once no handler runs any more. */
void pt_hooks_unregister(void)
{
	unsigned int i;

	for (i = pt_nr_probes; i-- > 0; )
		pt_probe_unregister(&pt_probes[i]);
}

/* Probe hits dropped by the kprobe core in this session so far. */
unsigned long pt_hooks_missed(void)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < pt_nr_probes; i++) {
		const struct pt_probe *p = &pt_probes[i];

		if (p->hook->pre)
			n += READ_ONCE(p->kp.nmissed);
		else
			n += READ_ONCE(p->rp.nmissed) +
			     READ_ONCE(p->rp.kp.nmissed);
	}
	return n;
}
