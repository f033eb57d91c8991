/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe handlers of handlers.c, as the hook table of hooks.c names
 * them, and what the two share: each kretprobe's per-call data (its size
 * goes in the table), the rethooks of the calls others look for, and the
 * state the load-time checks of hooks.c read while the handlers fill it.
 * Private to those two files.
 */
#ifndef _PAGETRACE_HANDLERS_H
#define _PAGETRACE_HANDLERS_H

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/kprobes.h>
#include <linux/types.h>

#include "compat.h"

/* Kretprobes on rethook (x86 since 5.18): see "Calls in flight", handlers.c. */
#ifdef CONFIG_KRETPROBE_ON_RETHOOK
#define PT_CALLS_IN_FLIGHT	1
#endif

/* Compaction's per-order free lists (6.9+): compaction_alloc() returns a folio. */
#if defined(PT_HAVE_FOLIOS) && defined(NR_PAGE_ORDERS)
#define PT_HAVE_COMPACT_TARGETS	1
#endif

/* The allocator's entry point (kprobe backend): the order asked for. */
struct pt_alloc_data {
	unsigned int order;
};

#ifdef PT_BULK_HOOKS
/* The bulk allocator's call: see pt_bulk_entry(). */
/*
 * Slots whose emptiness the entry notes one by one: more than the largest
 * array a caller passes (NFS server threads fill up to RPCSVC_MAXPAGES,
 * 1,027 with 7.x's 4 MiB payload; vmalloc() asks for 100 at a time).
 */
#define PT_BULK_SLOTS	2048

struct pt_bulk_data {
	struct list_head	*list;
	struct list_head	*first;
	struct page		**array;
	struct page		*fallback;
	unsigned int		context;	/* pt_context() of the call */
	int			nr;
	int			beyond;		/* pages past PT_BULK_SLOTS at entry */
	DECLARE_BITMAP(empty, PT_BULK_SLOTS);
};
#endif

/* isolate_freepages_range()'s call: see pt_contig_entry(). */
struct pt_contig_data {
	unsigned long start;
	unsigned int context;	/* pt_probed_context() of the call */
};

/* Published by pt_probe_register() before their probes are armed. */
extern struct rethook *pt_bulk_rh;
extern struct rethook *pt_contig_rh;

/* What the load-time checks watch: see the top of handlers.c. */
extern struct task_struct *pt_check_task;
extern struct page *pt_check_seen[16];
extern atomic_t pt_check_nseen;
extern struct page *pt_check_page;
extern atomic_t pt_check_frees;

/* Tracepoints (the tracepoint backend). */
void notrace pt_tp_alloc(void *data, struct page *page, unsigned int order,
			 gfp_t gfp, int migratetype);
void notrace pt_tp_free(void *data, struct page *page, unsigned int order);

/* Kretprobes: entry and return handlers. */
int notrace pt_alloc_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_alloc_return(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_nolock_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_bulk_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_bulk_return(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_contig_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_contig_return(struct kretprobe_instance *ri, struct pt_regs *regs);
int notrace pt_compact_target(struct kretprobe_instance *ri, struct pt_regs *regs);

/* Kprobes: pre handlers. */
int notrace pt_free(struct kprobe *p, struct pt_regs *regs);
int notrace pt_free0(struct kprobe *p, struct pt_regs *regs);
int notrace pt_free_pcp(struct kprobe *p, struct pt_regs *regs);
int notrace pt_free_fpi(struct kprobe *p, struct pt_regs *regs);
int notrace pt_free_pcp_fpi(struct kprobe *p, struct pt_regs *regs);
int notrace pt_free_folios(struct kprobe *p, struct pt_regs *regs);
int notrace pt_split_map_pages(struct kprobe *p, struct pt_regs *regs);
int notrace pt_release_free_list(struct kprobe *p, struct pt_regs *regs);
int notrace pt_compact_alloc(struct kprobe *p, struct pt_regs *regs);

#endif /* _PAGETRACE_HANDLERS_H */
