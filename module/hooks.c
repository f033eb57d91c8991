// SPDX-License-Identifier: GPL-2.0
/*
 * Where the probes go: which functions and tracepoints to hook on the
 * running kernel, checked at load, attached per session.  Nothing but this
 * file knows kernel symbol names; what a hit does is in handlers.c.
 *
 * Two backends, chosen by the hook= parameter when a session starts:
 *
 *  tracepoint  (the default; hook=auto) the kmem tracepoints mm_page_alloc
 *              and mm_page_free, which have kept their names and arguments
 *              since 2.6.33, and kprobes only for what no tracepoint sees.
 *  kprobe      kprobes and kretprobes on the allocator's functions instead
 *              of the two tracepoints.
 *
 * What each backend must see is split into roles: allocations, frees, the
 * bulk allocator, and compaction.  A role lists alternatives, each a set
 * of hooks; at module load the first alternative whose every hook exists
 * on the running kernel is chosen, by looking the symbols up, never by
 * the kernel's version.  A role the kernel needs (the bulk allocator where
 * <linux/gfp.h> declares one, compaction where it is built in) that no
 * alternative covers fails the load, with the events that would go
 * unrecorded named: never a silently partial trace.
 *
 * Roles and their alternatives (each checked, on every kernel of the test
 * matrix, by the ground-truth selftest against pages it allocated itself):
 *
 *  allocations   tracepoint mm_page_alloc, fired on the allocator's one
 *                entry point; or a kretprobe on that entry point, which
 *                is __alloc_frozen_pages_noprof (7.x), __alloc_pages_noprof
 *                (6.10+), __alloc_pages (5.13+) or __alloc_pages_nodemask.
 *                Every allocation but the bulk allocator's and
 *                compaction's ends there; on 6.15-7.2 but for
 *                alloc_pages_nolock(), which the kprobe backend then
 *                takes with one more kretprobe (pt_nolock_missed()).
 *  frees         tracepoint mm_page_free, fired in free_pages_prepare(),
 *                which the kernel inlines into each free path; or kprobes
 *                on those paths, one set per generation of the allocator:
 *                 free_pcp_prepare, __free_pages_ok              (5.10-6.1;
 *                 5.10's free_pcp_prepare() takes no order)
 *                 free_unref_page, __free_pages_ok, free_unref_folios,
 *                 free_pages_prepare                             (6.12)
 *                 __free_frozen_pages, __free_pages_ok,
 *                 free_unref_folios, free_pages_prepare          (7.x;
 *                 the first two skip what free_pages_prepare() reported
 *                 already: pt_free_fpi())
 *                The per-CPU-list function of the last two passes orders
 *                the lists do not take on to __free_pages_ok() by a tail
 *                jump, so its hook reports only the orders it keeps
 *                (pt_free_pcp()).
 *  bulk          alloc_pages_bulk_noprof or __alloc_pages_bulk
 *                (kretprobe): it takes pages off the per-CPU lists
 *                without the tracepoint; we diff the caller's array or
 *                list between entry and return.  Its fallback into the
 *                allocator is reported by the allocation hook, which
 *                notes the page in the bulk call's data so that the diff
 *                skips it.
 *  compaction    compaction hands out free blocks taken straight off the
 *                free lists, as migration targets and to
 *                alloc_contig_range():
 *                 compaction_alloc (kretprobe), the target it returns,
 *                 release_free_list (kprobe), the blocks it hands back,
 *                 and isolate_freepages_range (kretprobe), the range
 *                 alloc_contig_range() takes       (per-order lists, 6.9+)
 *                 split_map_pages (kprobe), which prepares each block it
 *                 isolated                 (one list, before 6.8: 5.10-6.1)
 *                 post_alloc_hook (kprobe), which compaction calls for
 *                 each target and for the blocks it hands back, and
 *                 isolate_freepages_range                (where the sets
 *                 above are inlined)
 *                post_alloc_hook() is also the allocator's own, inlined
 *                or not as the compiler likes: it is used only after a
 *                page we allocate at load has shown that the ordinary
 *                allocation path does not call the out-of-line copy
 *                (pt_off_hot_path()); 7.x calls it.
 *
 * What a probe does when it is hit is in handlers.c: hooks.c decides
 * which probes to attach, checks them at load and attaches them.
 *
 * A probe hit that the kprobe core drops because another probe is running
 * on the same CPU is counted in the probe's nmissed; pt_hooks_missed()
 * sums them so they are reported as lost, never silently dropped.
 */
#include <linux/bitmap.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/utsname.h>

#include "compat.h"
#include "handlers.h"
#include "pagetrace.h"

/*
 * The hook= parameter.  Read when a session starts, like the others; a bad
 * value fails insmod (or the write to sysfs) with the allowed ones named.
 * Its values are its own, mapped to PAGETRACE_BACKEND_* by
 * pt_hooks_backend(): auto is never a backend.
 */
enum pt_hook_choice { PT_HOOK_KPROBE, PT_HOOK_TRACEPOINT, PT_HOOK_AUTO };

static const char * const pt_hook_names[] = {
	[PT_HOOK_KPROBE]	= "kprobe",
	[PT_HOOK_TRACEPOINT]	= "tracepoint",
	[PT_HOOK_AUTO]		= "auto",
};

/* A backend's name, for messages. */
static const char * const pt_backend_names[] = {
	[PAGETRACE_BACKEND_KPROBE]	= "kprobe",
	[PAGETRACE_BACKEND_TRACEPOINT]	= "tracepoint",
};

static unsigned int pt_hook = PT_HOOK_AUTO;
static struct pt_choice_param pt_hook_param = {
	&pt_hook, pt_hook_names, ARRAY_SIZE(pt_hook_names)
};
module_param_cb(hook, &pt_choice_param_ops, &pt_hook_param, 0644);
MODULE_PARM_DESC(hook,
		 "Probe mechanism: auto (tracepoint), tracepoint or kprobe (default auto)");

/*
 * require=SYMBOL: one more function the next session (and insmod) must be
 * able to probe.  For the selftests, which show that a missing or inlined
 * symbol fails the load with its name, whatever the kernel.
 */
static char *pt_require;
module_param_named(require, pt_require, charp, 0644);
MODULE_PARM_DESC(require, "Also require a kprobe on this function (for tests)");

/*
 * partial=1: load and trace even where the running kernel has nothing the
 * module knows to hook for some kind of event; each session's record
 * (pagetrace_rec_session.uncovered) and so `pagetrace stats` say which.
 * Off by default: a trace that silently misses events is worse than none.
 */
static bool pt_partial;
module_param_named(partial, pt_partial, bool, 0644);
MODULE_PARM_DESC(partial,
		 "Load and trace even if some kind of event cannot be hooked on this kernel; the trace says which (default 0)");

/* The backend the next session asks for: PAGETRACE_BACKEND_*. */
unsigned int pt_hooks_backend(void)
{
	/* auto is the tracepoint backend, on every kernel */
	return READ_ONCE(pt_hook) == PT_HOOK_KPROBE ?
	       PAGETRACE_BACKEND_KPROBE : PAGETRACE_BACKEND_TRACEPOINT;
}

/*
 * The hook table.  Each entry belongs to a role and to one alternative of
 * it (see the top of this file), and to the backends in @backends.
 */
enum pt_role {
	PT_ROLE_ALLOC,
	PT_ROLE_FREE,
	PT_ROLE_BULK,
	PT_ROLE_COMPACT,
	PT_ROLE_NOLOCK,
	PT_NR_ROLES,
};

/* What goes unrecorded without a role, for the message that says so. */
static const char * const pt_role_events[PT_NR_ROLES] = {
	[PT_ROLE_ALLOC]		= "page allocations",
	[PT_ROLE_FREE]		= "page frees",
	[PT_ROLE_BULK]		= "bulk allocations (alloc_pages_bulk)",
	[PT_ROLE_COMPACT]	= "pages compaction and alloc_contig_range() take",
	[PT_ROLE_NOLOCK]	= "allocations by alloc_pages_nolock()",
};

/* The bit of pagetrace_rec_session.uncovered for a role that is missing. */
static const u32 pt_role_bit[PT_NR_ROLES] = {
	[PT_ROLE_ALLOC]		= PAGETRACE_UNCOVERED_ALLOC,
	[PT_ROLE_FREE]		= PAGETRACE_UNCOVERED_FREE,
	[PT_ROLE_BULK]		= PAGETRACE_UNCOVERED_BULK,
	[PT_ROLE_COMPACT]	= PAGETRACE_UNCOVERED_COMPACT,
	[PT_ROLE_NOLOCK]	= PAGETRACE_UNCOVERED_ALLOC,
};

enum pt_kind { PT_KPROBE, PT_KRETPROBE, PT_TRACEPOINT };

#define PT_ON_KPROBE	BIT(PAGETRACE_BACKEND_KPROBE)
#define PT_ON_TP	BIT(PAGETRACE_BACKEND_TRACEPOINT)
#define PT_ON_ALL	(PT_ON_KPROBE | PT_ON_TP)

struct pt_hook {
	enum pt_role		role;
	unsigned int		alt;		/* alternative within the role */
	u32			backends;
	enum pt_kind		kind;
	const char		*symbol;	/* function or tracepoint */
	bool			off_hot_path;	/* see pt_off_hot_path() */
	kprobe_pre_handler_t	pre;		/* PT_KPROBE */
	kretprobe_handler_t	entry;		/* PT_KRETPROBE */
	kretprobe_handler_t	ret;
	size_t			data_size;
	struct rethook		**calls;	/* published: "Calls in flight" */
	void			*tp_probe;	/* PT_TRACEPOINT */
};

#define PT_TP(role, sym, probe)						\
	{ role, 0, PT_ON_TP, PT_TRACEPOINT, sym, .tp_probe = probe }
#define PT_KP(role, alt, on, sym, handler)				\
	{ role, alt, on, PT_KPROBE, sym, .pre = handler }
#define PT_ALLOC(alt, sym)						\
	{ PT_ROLE_ALLOC, alt, PT_ON_KPROBE, PT_KRETPROBE, sym,		\
	  .entry = pt_alloc_entry, .ret = pt_alloc_return,		\
	  .data_size = sizeof(struct pt_alloc_data) }
#define PT_BULK(alt, sym)						\
	{ PT_ROLE_BULK, alt, PT_ON_ALL, PT_KRETPROBE, sym,		\
	  .entry = pt_bulk_entry, .ret = pt_bulk_return,		\
	  .data_size = sizeof(struct pt_bulk_data), .calls = &pt_bulk_rh }

#define PT_NOLOCK(alt, sym)						\
	{ PT_ROLE_NOLOCK, alt, PT_ON_KPROBE, PT_KRETPROBE, sym,		\
	  .entry = pt_nolock_entry, .ret = pt_alloc_return,		\
	  .data_size = sizeof(struct pt_alloc_data) }

#define PT_CONTIG(alt)							\
	{ PT_ROLE_COMPACT, alt, PT_ON_ALL, PT_KRETPROBE,		\
	  "isolate_freepages_range", .entry = pt_contig_entry,		\
	  .ret = pt_contig_return, .data_size = sizeof(struct pt_contig_data), \
	  .calls = &pt_contig_rh }

static const struct pt_hook pt_hook_table[] = {
	PT_TP(PT_ROLE_ALLOC, "mm_page_alloc", pt_tp_alloc),
	PT_ALLOC(0, "__alloc_frozen_pages_noprof"),
	PT_ALLOC(1, "__alloc_pages_noprof"),
	PT_ALLOC(2, "__alloc_pages"),
	PT_ALLOC(3, "__alloc_pages_nodemask"),

	PT_TP(PT_ROLE_FREE, "mm_page_free", pt_tp_free),
#ifdef PT_HAVE_FREE_UNREF_PAGE0
	PT_KP(PT_ROLE_FREE, 1, PT_ON_KPROBE, "free_pcp_prepare", pt_free0),
	PT_KP(PT_ROLE_FREE, 1, PT_ON_KPROBE, "__free_pages_ok", pt_free),
#else
	PT_KP(PT_ROLE_FREE, 1, PT_ON_KPROBE, "free_pcp_prepare", pt_free),
	PT_KP(PT_ROLE_FREE, 1, PT_ON_KPROBE, "__free_pages_ok", pt_free),
#endif
#ifdef PT_HAVE_FOLIOS
	PT_KP(PT_ROLE_FREE, 2, PT_ON_KPROBE, "free_unref_page", pt_free_pcp),
	PT_KP(PT_ROLE_FREE, 2, PT_ON_KPROBE, "__free_pages_ok", pt_free),
	PT_KP(PT_ROLE_FREE, 2, PT_ON_KPROBE, "free_unref_folios", pt_free_folios),
	PT_KP(PT_ROLE_FREE, 2, PT_ON_KPROBE, "free_pages_prepare", pt_free),
	PT_KP(PT_ROLE_FREE, 3, PT_ON_KPROBE, "__free_frozen_pages", pt_free_pcp_fpi),
	PT_KP(PT_ROLE_FREE, 3, PT_ON_KPROBE, "__free_pages_ok", pt_free_fpi),
	PT_KP(PT_ROLE_FREE, 3, PT_ON_KPROBE, "free_unref_folios", pt_free_folios),
	PT_KP(PT_ROLE_FREE, 3, PT_ON_KPROBE, "free_pages_prepare", pt_free),
#endif

#ifdef PT_HAVE_NOLOCK
	/* Only where the entry point above misses them: pt_nolock_missed(). */
	/*
	 * The frozen variant, which the other calls and slab calls too; both,
	 * where it is inlined into the other but kept for slab; the other.
	 * Each set is checked to see every page once: pt_nolock_check().
	 */
	PT_NOLOCK(0, "alloc_frozen_pages_nolock_noprof"),
	PT_NOLOCK(1, "alloc_pages_nolock_noprof"),
	PT_NOLOCK(1, "alloc_frozen_pages_nolock_noprof"),
	PT_NOLOCK(2, "alloc_pages_nolock_noprof"),
	PT_NOLOCK(3, "try_alloc_pages_noprof"),	/* its 6.15 name */
#endif

#ifdef PT_BULK_HOOKS
	PT_BULK(0, "alloc_pages_bulk_noprof"),
	PT_BULK(1, "__alloc_pages_bulk"),
#endif

	/*
	 * The per-order free lists first: where they exist (6.9+), the
	 * functions of the older sets that remain take other arguments.
	 */
#ifdef PT_HAVE_COMPACT_TARGETS
	{ PT_ROLE_COMPACT, 0, PT_ON_ALL, PT_KRETPROBE, "compaction_alloc",
	  .ret = pt_compact_target },
	PT_KP(PT_ROLE_COMPACT, 0, PT_ON_ALL, "release_free_list", pt_release_free_list),
	PT_CONTIG(0),
#endif
	/*
	 * Before post_alloc_hook: where split_map_pages() calls it out of
	 * line (6.1), isolate_freepages_range() would count its blocks twice.
	 */
#ifndef NR_PAGE_ORDERS
	PT_KP(PT_ROLE_COMPACT, 1, PT_ON_ALL, "split_map_pages", pt_split_map_pages),
#endif
	/* Checked off the allocator's fast path at load: pt_off_hot_path(). */
	{ PT_ROLE_COMPACT, 2, PT_ON_ALL, PT_KPROBE, "post_alloc_hook",
	  .off_hot_path = true, .pre = pt_compact_alloc },
	PT_CONTIG(2),
};

#define PT_MAX_HOOKS	(ARRAY_SIZE(pt_hook_table) + 1)
/* Alternatives a role may have: alt is below this. */
#define PT_MAX_ALTS	4

/* Whether the kernel has what a role covers, so that it must be hooked. */
static bool pt_role_needed(enum pt_role role)
{
	switch (role) {
	case PT_ROLE_BULK:
		return PT_BULK_ALLOCATOR;
	case PT_ROLE_NOLOCK:	/* asked only where missed: pt_nolock_missed() */
		return true;
	case PT_ROLE_COMPACT:
		return IS_ENABLED(CONFIG_COMPACTION) ||
		       IS_ENABLED(CONFIG_CONTIG_ALLOC);
	default:
		return true;
	}
}

static int pt_nop(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

/*
 * A kprobe on a function without an ftrace site (an "inline" one: the
 * kernel's inline implies notrace) is a breakpoint, which the kprobe core
 * would turn into a jump ("optimized") a moment later.  Removing a
 * jump-optimized probe waits for an RCU-tasks grace period, which a task
 * busy in the kernel on a PREEMPT_RT CPU can hold off for minutes: the
 * session stop hung (seen on 6.1-rt under munmap churn).  A post handler
 * is what keeps the kprobe core from optimizing a probe, so breakpoints
 * get this empty one (never a probe on an ftrace site: there a post
 * handler would take the function's IPMODIFY, which a live patch needs).
 * pt_exists() learns which probes are breakpoints.
 */
static void pt_kprobe_no_post(struct kprobe *p, struct pt_regs *regs,
			      unsigned long flags)
{
}

/* The entry for require=, filled in at load and at session start. */
static char pt_required_sym[KSYM_NAME_LEN];
static struct pt_hook pt_required_hook = {
	.backends = PT_ON_ALL, .kind = PT_KPROBE,
	.pre = pt_nop,
};

/*
 * The hooks chosen at load for each backend (pt_hooks_init()); NULL ends
 * a list.  Read-only afterwards.
 */
static struct pt_choice {
	const struct pt_hook	*hook;
	bool			int3;	/* a kprobe not on an ftrace site */
} pt_chosen[PAGETRACE_BACKEND_TRACEPOINT + 1][PT_MAX_HOOKS];
/* The roles this kernel needs that a backend cannot cover: role bits. */
static u32 pt_uncovered[PAGETRACE_BACKEND_TRACEPOINT + 1];

/* The probes of one session, registered at its start. */
static struct pt_probe {
	const struct pt_hook	*hook;
	bool			int3;	/* see pt_kprobe_no_post() */
	struct kprobe		kp;
	struct kretprobe	rp;
	struct tracepoint	*tp;
	bool			registered;
} pt_probes[PT_MAX_HOOKS];
static unsigned int pt_nr_probes;
static bool pt_have_tracepoints;

struct pt_tp_lookup {
	const char		*name;
	struct tracepoint	*tp;
};

static void pt_tp_match(struct tracepoint *tp, void *priv)
{
	struct pt_tp_lookup *l = priv;

	if (!strcmp(tp->name, l->name))
		l->tp = tp;
}

static struct tracepoint *pt_tp_find(const char *name)
{
	struct pt_tp_lookup l = { name };

	for_each_kernel_tracepoint(pt_tp_match, &l);
	return l.tp;
}

/*
 * Whether @h can be attached here, without attaching it: a tracepoint is
 * looked up; a function gets a disabled kprobe, which checks the symbol
 * and that the kprobe core may probe it, and patches nothing; its flags
 * then say whether it sits on an ftrace site.  Its unregistration waits
 * for a grace period, so the caller unregisters them in batches.
 */
static int pt_exists(const struct pt_hook *h, struct kprobe *kp)
{
	if (h->kind == PT_TRACEPOINT)
		return pt_tp_find(h->symbol) ? 0 : -ENOENT;
	*kp = (struct kprobe){ .symbol_name = h->symbol, .pre_handler = pt_nop,
			       .flags = KPROBE_FLAG_DISABLED };
	return register_kprobe(kp);
}

/*
 * Whether a kprobe on @h->symbol stays quiet while this task allocates
 * and frees an ordinary page: a function that the allocator's fast path
 * calls (say, an out-of-line post_alloc_hook()) would report every page a
 * second time.
 */
static int pt_off_hot_path(const struct pt_hook *h)
{
	struct kprobe kp = { .symbol_name = h->symbol,
			     .pre_handler = pt_compact_alloc,
			     .post_handler = pt_kprobe_no_post };
	struct page *page;
	unsigned int i, n;
	int ret;

	memset(pt_check_seen, 0, sizeof(pt_check_seen));
	atomic_set(&pt_check_nseen, 0);
	WRITE_ONCE(pt_check_task, current);
	ret = register_kprobe(&kp);
	if (!ret) {
		page = alloc_page(GFP_KERNEL);
		unregister_kprobe(&kp);
		if (!page)
			ret = -ENOMEM;
		n = min_t(unsigned int, atomic_read(&pt_check_nseen),
			  ARRAY_SIZE(pt_check_seen));
		for (i = 0; page && i < n; i++)
			if (pt_check_seen[i] == page)
				ret = -EEXIST;
		if (page)
			__free_page(page);
	}
	WRITE_ONCE(pt_check_task, NULL);
	if (ret == -EEXIST)
		pr_info("pagetrace: %s runs on every allocation here (not inlined), so it cannot hook compaction\n",
			h->symbol);
	return ret;
}

/* Instances for a kretprobe on an allocator function: see pt_probe_register(). */
static int pt_maxactive(void)
{
	/* Allocations sleep, so many calls may be in flight. */
	return max_t(int, 1024, 64 * num_possible_cpus());
}

/*
 * How many times the kretprobes @hooks[0..@n) see a page this task
 * allocates with alloc_pages_nolock(), or -EAGAIN if that cannot be told
 * this time: the allocation failed (it may, by design: trylocks, the min
 * watermark) or a probe missed a call for want of an instance.
 */
static int pt_nolock_sightings(const struct pt_hook *const *hooks,
			       unsigned int n)
{
#ifdef PT_HAVE_NOLOCK
	static struct kretprobe rp[3];
	struct kretprobe *rps[3];
	unsigned int i, nseen, missed = 0;
	struct page *page = NULL;
	int ret, seen = 0;

	for (i = 0; i < n; i++) {
		rp[i] = (struct kretprobe){
			.kp.symbol_name = hooks[i]->symbol,
			.entry_handler = hooks[i]->entry,
			.handler = hooks[i]->ret,
			.data_size = hooks[i]->data_size,
			.maxactive = pt_maxactive(),
		};
		rps[i] = &rp[i];
	}
	memset(pt_check_seen, 0, sizeof(pt_check_seen));
	atomic_set(&pt_check_nseen, 0);
	WRITE_ONCE(pt_check_task, current);
	ret = register_kretprobes(rps, n);
	if (!ret) {
		page = pt_nolock_alloc();
		unregister_kretprobes(rps, n);
		for (i = 0; i < n; i++)
			missed += rp[i].nmissed + rp[i].kp.nmissed;
	}
	WRITE_ONCE(pt_check_task, NULL);
	if (ret)
		return ret;
	if (!page)
		return -EAGAIN;
	nseen = min_t(unsigned int, atomic_read(&pt_check_nseen),
		      ARRAY_SIZE(pt_check_seen));
	for (i = 0; i < nseen; i++)
		seen += pt_check_seen[i] == page;
	__free_page(page);	/* free_pages_nolock() is not exported */
	return missed ? -EAGAIN : seen;
#else
	return 1;
#endif
}

/* pt_nolock_sightings(), tried again while it cannot tell. */
static int pt_nolock_count(const struct pt_hook *const *hooks, unsigned int n)
{
	int try, ret = -EAGAIN;

	for (try = 0; try < 5 && ret == -EAGAIN; try++)
		ret = pt_nolock_sightings(hooks, n);
	return ret;
}

/* The kprobe backend's allocation hook among the @n chosen in @out. */
static const struct pt_hook *pt_alloc_choice(const struct pt_choice *out,
					     unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (out[i].hook->role == PT_ROLE_ALLOC &&
		    out[i].hook->kind == PT_KRETPROBE)
			return out[i].hook;
	return NULL;
}

/*
 * Whether the kprobe backend's entry point (chosen among @out) misses the
 * pages of alloc_pages_nolock().  7.3 sends those through it; 6.15 to 7.2
 * call the allocator's internals themselves.  Asked of the running kernel
 * on a page of our own; if it cannot tell, the entry point is trusted and
 * the log says so.
 */
static bool pt_nolock_missed(const struct pt_choice *out, unsigned int n)
{
	const struct pt_hook *alloc = pt_alloc_choice(out, n);
	int seen;

	if (!alloc)
		return false;
	seen = pt_nolock_count(&alloc, 1);
	if (seen < 0)
		pr_warn("pagetrace: hook=kprobe: cannot tell whether %s sees alloc_pages_nolock() (%d); assuming it does\n",
			alloc->symbol, seen);
	return !seen;
}

/*
 * Whether the nolock hooks from @first on, beside the entry point, see
 * each alloc_pages_nolock() page exactly once.
 */
static bool pt_nolock_check(const struct pt_choice *out, unsigned int first,
			    unsigned int n)
{
	const struct pt_hook *hooks[3] = { pt_alloc_choice(out, first) };
	unsigned int i;

	if (!hooks[0] || n - first > 2)
		return false;
	for (i = first; i < n; i++)
		hooks[1 + i - first] = out[i].hook;
	return pt_nolock_count(hooks, 1 + n - first) == 1;
}

/*
 * Whether a set of free hooks of the kprobe backend reports each of a few
 * frees this task makes exactly once.  The kernel inlines its free paths
 * into some callers and not others, differently on each build (5.10's
 * free_unref_page() is inlined into __free_pages() but calls
 * free_pcp_prepare() out of line), and the argument a hook reads must be
 * right for the build.  A set that misses one of these frees, or sees it
 * twice, is not used.
 */
static int pt_free_check(const struct pt_choice *hooks, unsigned int n)
{
	static const unsigned int orders[] = { 0, 3, PAGE_ALLOC_COSTLY_ORDER + 1 };
	static struct kprobe kp[PT_MAX_HOOKS];
	struct kprobe *kps[PT_MAX_HOOKS];
	unsigned int i, nk = 0;
	int ret = 0, seen;

	for (i = 0; i < n; i++) {
		kp[nk] = (struct kprobe){ .symbol_name = hooks[i].hook->symbol,
					  .pre_handler = hooks[i].hook->pre };
		if (hooks[i].int3)
			kp[nk].post_handler = pt_kprobe_no_post;
		kps[nk] = &kp[nk];
		ret = register_kprobe(&kp[nk]);
		if (ret)
			goto unregister;
		nk++;
	}
	WRITE_ONCE(pt_check_task, current);
	for (i = 0; i < ARRAY_SIZE(orders) + 1 && !ret; i++) {
		bool put = i == ARRAY_SIZE(orders);	/* put_page() last */
		unsigned int order = put ? 0 : orders[i];
		unsigned int try;

		/*
		 * A set that misses a free, or sees it twice, does so every
		 * time; an interrupt that takes the freed page and frees it
		 * again before we stop counting does not: three tries.
		 */
		for (try = 0; try < 3; try++) {
			struct page *page = alloc_pages(GFP_KERNEL, order);

			if (!page) {
				ret = -ENOMEM;
				break;
			}
			atomic_set(&pt_check_frees, 0);
			WRITE_ONCE(pt_check_page, page);
			if (put)
				put_page(page);
			else
				__free_pages(page, order);
			/* The page may be out again: no more counting. */
			WRITE_ONCE(pt_check_page, NULL);
			seen = atomic_read(&pt_check_frees);
			if (seen == 1)
				break;
		}
		if (!ret && seen != 1) {
			pr_info("pagetrace: hook=kprobe: %s of an order-%u page seen %d times by the set with %s; not used\n",
				put ? "put_page()" : "__free_pages()", order, seen,
				hooks[0].hook->symbol);
			ret = -EILSEQ;
		}
	}
	WRITE_ONCE(pt_check_task, NULL);
unregister:
	if (nk)
		unregister_kprobes(kps, nk);
	return ret;
}

/*
 * Choose, for @backend, the first alternative of each role whose hooks
 * all exist.  Returns the PAGETRACE_UNCOVERED_* bits of the roles this
 * kernel needs and none covers, each named in the kernel log: as an error
 * if @backend is the one asked for and partial=1 is not set, else at
 * info level.
 */
static u32 pt_choose(unsigned int backend, bool asked)
{
	static struct kprobe probes[PT_MAX_HOOKS];
	struct kprobe *kps[PT_MAX_HOOKS];
	struct pt_choice *out = pt_chosen[backend];
	unsigned int nout = 0, role, alt, i, nk;
	u32 uncovered = 0;

	for (role = 0; role < PT_NR_ROLES; role++) {
		bool found = false;

		if (role == PT_ROLE_NOLOCK && !pt_nolock_missed(out, nout))
			continue;
		for (alt = 0; alt < PT_MAX_ALTS && !found; alt++) {
			unsigned int first = nout;
			bool in_alt = false, ok = true;

			for (i = 0, nk = 0; i < ARRAY_SIZE(pt_hook_table); i++) {
				const struct pt_hook *h = &pt_hook_table[i];

				if (h->role != role || h->alt != alt ||
				    !(h->backends & BIT(backend)))
					continue;
				in_alt = true;
				if (pt_exists(h, &probes[nk])) {
					ok = false;
					continue;
				}
				out[nout].hook = h;
				out[nout].int3 = false;
				if (h->kind != PT_TRACEPOINT) {
					out[nout].int3 = !(probes[nk].flags &
							   KPROBE_FLAG_FTRACE);
					kps[nk] = &probes[nk];
					nk++;
				}
				nout++;
			}
			if (nk)
				unregister_kprobes(kps, nk);
			if (!in_alt)
				continue;	/* not built for these headers */
			for (i = first; ok && i < nout; i++)
				if (out[i].hook->off_hot_path &&
				    pt_off_hot_path(out[i].hook))
					ok = false;
			if (ok && role == PT_ROLE_FREE && backend == PAGETRACE_BACKEND_KPROBE)
				ok = !pt_free_check(&out[first], nout - first);
			if (ok && role == PT_ROLE_NOLOCK)
				ok = pt_nolock_check(out, first, nout);
			if (ok)
				found = true;
			else
				nout = first;
		}
		if (found || !pt_role_needed(role))
			continue;
		uncovered |= pt_role_bit[role];
		if (asked && !READ_ONCE(pt_partial))
			pr_err("pagetrace: hook=%s cannot record %s on %s: none of its functions can be probed (missing or inlined); partial=1 loads without them\n",
			       pt_backend_names[backend], pt_role_events[role],
			       init_utsname()->release);
		else
			pr_info("pagetrace: hook=%s cannot record %s on %s: none of its functions can be probed\n",
				pt_backend_names[backend], pt_role_events[role],
				init_utsname()->release);
	}
	out[nout].hook = NULL;
	return uncovered;
}

/* Copy require= under the parameter lock: a write frees the old string. */
static bool pt_required(void)
{
	kernel_param_lock(THIS_MODULE);
	strscpy(pt_required_sym, pt_require ? pt_require : "",
		sizeof(pt_required_sym));
	kernel_param_unlock(THIS_MODULE);
	pt_required_hook.symbol = pt_required_sym;
	return pt_required_sym[0];
}

/**
 * pt_hooks_init - choose the hooks of both backends for this kernel
 *
 * Context: module load; attaches nothing.
 *
 * Return: 0, or -errno if the backend hook= names (or the default) cannot
 * record every kind of event this kernel has, or if require= names a
 * function that cannot be probed, unless partial=1 is set; the kernel log
 * says which.
 */
int pt_hooks_init(void)
{
	unsigned int want = pt_hooks_backend();
	bool partial = READ_ONCE(pt_partial);
	struct kprobe kp;
	unsigned int b;
	int ret;

	for (b = PAGETRACE_BACKEND_KPROBE; b <= PAGETRACE_BACKEND_TRACEPOINT; b++)
		pt_uncovered[b] = pt_choose(b, b == want);
	if (pt_uncovered[want] && !partial)
		return -ENOENT;
	if (pt_uncovered[want])
		pr_warn("pagetrace: partial=1: hook=%s traces without what it cannot record on %s (the trace says so)\n",
			pt_backend_names[want], init_utsname()->release);
	if (pt_required()) {
		ret = pt_exists(&pt_required_hook, &kp);
		if (!ret) {
			unregister_kprobe(&kp);
			return 0;
		}
		pr_err("pagetrace: cannot attach to function %s on %s: %d%s\n",
		       pt_required_sym, init_utsname()->release, ret,
		       ret == -ENOENT ? " (missing or inlined)" : "");
		if (!partial)
			return ret;
	}
	return 0;
}

static int pt_probe_register(struct pt_probe *p)
{
	const struct pt_hook *h = p->hook;
	int ret;

	switch (h->kind) {
	case PT_KPROBE:
		p->kp = (struct kprobe){ .symbol_name = h->symbol,
					 .pre_handler = h->pre };
		/* Never jump-optimized; see pt_kprobe_no_post(). */
		if (p->int3)
			p->kp.post_handler = pt_kprobe_no_post;
		ret = register_kprobe(&p->kp);
		break;
	case PT_KRETPROBE:
		p->rp = (struct kretprobe){
			.kp.symbol_name = h->symbol,
			.entry_handler = h->entry,
			.handler = h->ret,
			.data_size = h->data_size,
			/* An instance short is a counted miss. */
			.maxactive = pt_maxactive(),
		};
#ifdef PT_CALLS_IN_FLIGHT
		/*
		 * A rethook others look for is published before the probe is
		 * armed, so that no call runs unseen by them (a bulk call's
		 * fallback page would be reported twice).
		 */
		if (h->calls) {
			p->rp.kp.flags = KPROBE_FLAG_DISABLED;
			ret = register_kretprobe(&p->rp);
			if (ret)
				break;
			WRITE_ONCE(*h->calls, p->rp.rh);
			ret = enable_kretprobe(&p->rp);
			if (ret) {
				unregister_kretprobe(&p->rp);
				WRITE_ONCE(*h->calls, NULL);
			}
			break;
		}
#endif
		ret = register_kretprobe(&p->rp);
		break;
	case PT_TRACEPOINT:
		p->tp = pt_tp_find(h->symbol);
		ret = p->tp ? tracepoint_probe_register(p->tp, p->hook->tp_probe,
							NULL) : -ENOENT;
		pt_have_tracepoints |= !ret;
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
	return 0;
}

/*
 * Detach every probe registered of @kind: kprobes and kretprobes each in
 * one batch (unregistering waits for an RCU grace period, and a batch
 * waits once for all its probes: a session stop under TCG took a second
 * with one wait per probe); tracepoint probes one by one, their handlers
 * still running after it (tracepoint_synchronize_unregister()).
 */
static void pt_probes_unregister(enum pt_kind kind)
{
	struct kretprobe *rps[PT_MAX_HOOKS];
	struct kprobe *kps[PT_MAX_HOOKS];
	unsigned int i, nk = 0, nr = 0;

	for (i = 0; i < pt_nr_probes; i++) {
		struct pt_probe *p = &pt_probes[i];

		if (!p->registered || p->hook->kind != kind)
			continue;
		switch (p->hook->kind) {
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
		}
		p->registered = false;
	}
	if (nk)
		unregister_kprobes(kps, nk);
	if (nr)
		unregister_kretprobes(rps, nr);
}

/**
 * pt_hooks_register - attach the probes of the backend hook= asks for
 * @backend: PAGETRACE_BACKEND_*, from pt_hooks_backend()
 * @uncovered: on success, PAGETRACE_UNCOVERED_*: what the session's hooks
 *	       cannot see (never anything without partial=1)
 *
 * Return: 0, or the first error after undoing what was attached; the
 * kernel log names the symbol that failed.
 */
int pt_hooks_register(unsigned int backend, u32 *uncovered)
{
	bool partial = READ_ONCE(pt_partial);
	const struct pt_choice *chosen;
	unsigned int i;
	int ret;

	*uncovered = pt_uncovered[backend];
	if (*uncovered && !partial) {
		pr_err("pagetrace: hook=%s cannot record every page on %s (see the messages at load; partial=1 traces without them)\n",
		       pt_backend_names[backend], init_utsname()->release);
		return -EOPNOTSUPP;
	}
	chosen = pt_chosen[backend];
	for (pt_nr_probes = 0; chosen[pt_nr_probes].hook; pt_nr_probes++) {
		pt_probes[pt_nr_probes].hook = chosen[pt_nr_probes].hook;
		pt_probes[pt_nr_probes].int3 = chosen[pt_nr_probes].int3;
	}
	for (i = 0; i < pt_nr_probes; i++) {
		ret = pt_probe_register(&pt_probes[i]);
		if (ret)
			goto unregister_probes;
	}
	if (pt_required()) {
		struct pt_probe *p = &pt_probes[pt_nr_probes];

		p->hook = &pt_required_hook;
		p->int3 = true;	/* any function; rarely on a hot path */
		ret = pt_probe_register(p);
		if (!ret)
			pt_nr_probes++;
		else if (partial)
			*uncovered |= PAGETRACE_UNCOVERED_REQUIRED;
		else
			goto unregister_probes;
	}
	return 0;

unregister_probes:
	pt_hooks_unregister();
	return ret;
}

/*
 * Detach every probe; returns once no handler runs any more.
 *
 * The kretprobes' rethooks, published for the calls-in-flight lookups
 * (pt_bulk_rh, pt_contig_rh), are unpublished first, and every handler
 * that may have loaded one is waited for before unregister_kretprobes()
 * frees them (after an RCU grace period, which waits for kprobe handlers:
 * they run with preemption off).  Tracepoint probes may be preempted on
 * 7.x (tracepoint_srcu), past any RCU grace period, so they are detached
 * and waited for before the kretprobes go: a probe holding a freed
 * rethook's address could otherwise find another rethook allocated there
 * and take its call's data for ours.  No event is lost by the lookups'
 * ending first: the writers are cleared before the detach, or were never
 * published (a failed start).
 */
void pt_hooks_unregister(void)
{
#ifdef PT_BULK_HOOKS
	WRITE_ONCE(pt_bulk_rh, NULL);
#endif
	WRITE_ONCE(pt_contig_rh, NULL);
	pt_probes_unregister(PT_TRACEPOINT);
	if (pt_have_tracepoints)
		tracepoint_synchronize_unregister();
	WRITE_ONCE(pt_have_tracepoints, false);
	pt_probes_unregister(PT_KPROBE);
	pt_probes_unregister(PT_KRETPROBE);
}

/**
 * pt_hooks_sync - wait until every handler running now has returned
 *
 * Kprobe handlers run with preemption off, which synchronize_rcu() waits
 * out; tracepoint probes run under tracepoint_srcu on 7.x kernels
 * (preemptible), which tracepoint_synchronize_unregister() waits out.
 * May sleep.
 */
void pt_hooks_sync(void)
{
	if (READ_ONCE(pt_have_tracepoints))
		tracepoint_synchronize_unregister();
	synchronize_rcu();
}

/* Probe hits dropped by the kprobe core in this session so far. */
unsigned long pt_hooks_missed(void)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < pt_nr_probes; i++) {
		const struct pt_probe *p = &pt_probes[i];

		if (p->hook->kind == PT_KPROBE)
			n += READ_ONCE(p->kp.nmissed);
		else if (p->hook->kind == PT_KRETPROBE)
			n += READ_ONCE(p->rp.nmissed) +
			     READ_ONCE(p->rp.kp.nmissed);
	}
	return n;
}
