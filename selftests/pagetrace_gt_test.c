// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth: pages whose fate is known must show up in the trace, each
 * operation as exactly one event of the right type, PFN and size, inside
 * the clock window around the operation.
 *
 * The kernel side is pagetrace_gt.ko (selftests/gt_module): it allocates and
 * frees through one entry point per test variant and reports PFNs and
 * local_clock() windows.  (THP faults from userspace are in
 * pagetrace_migrate_test.c.)
 *
 * Environment: PAGETRACE_GT_KO, the test module to load (default
 * ./pagetrace_gt.ko); pagetrace.ko must be loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/pagetrace.h>
#include "pt_selftest.h"
#include "kselftest_harness.h"

/*
 * An event's decoded time is at most 255 ns before the real one: words
 * keep the base and the delta in 128 ns steps, each rounded down.  With
 * the TSC clock, times may also be the session's clock_error_ns off
 * local_clock()'s, either way (module/clock.c).
 */
#define GT_SLACK_NS	256

struct gt_expect {
	char		op[32];
	unsigned int	type;
	bool		cover;		/* any event covering pfn..pfn+npages */
	bool		or_lost;	/* none is right too if counted lost */
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	t0;
	uint64_t	t1;
};

static bool gt_matches(const struct pgtrace_event *ev, const struct gt_expect *e)
{
	if (e->cover)
		return ev->type == e->type && ev->pfn <= e->pfn &&
		       e->pfn + e->npages <= ev->pfn + ev->npages;
	return ev->type == e->type && ev->pfn == e->pfn &&
	       ev->npages == e->npages;
}

/*
 * Whether event @i of @t is the page's next life rather than a duplicate:
 * the latest other event before it that touches its first page is of the
 * other kind (an allocation before a free, a free before an allocation).
 * An interrupt on our CPU may take the page an operation just freed (the
 * per-CPU lists hand out the last page freed first) and free it again,
 * all inside the operation's window.
 */
static bool gt_next_life(const struct pt_st_trace *t, size_t i)
{
	const struct pgtrace_event *ev = &t->ev[i], *prev = NULL;
	size_t j;

	for (j = 0; j < t->nr; j++) {
		const struct pgtrace_event *o = &t->ev[j];

		if (j == i || ev->pfn < o->pfn || ev->pfn >= o->pfn + o->npages ||
		    (o->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) ||
		    o->time_ns > ev->time_ns || (o->time_ns == ev->time_ns && j > i))
			continue;
		if (!prev || o->time_ns > prev->time_ns ||
		    (o->time_ns == prev->time_ns && j > (size_t)(prev - t->ev)))
			prev = o;
	}
	return prev && (prev->type == PAGETRACE_EV_ALLOC) != (ev->type == PAGETRACE_EV_ALLOC);
}

/*
 * Match operations to events one to one.  Operations are listed in the
 * order they ran (on one CPU); those of one call share a window, and a
 * call may free its batch in any order.  A PFN may be reused by the next
 * call, and where the clock is coarse (local_clock() ticks with jiffies on
 * some kernels under emulation) windows alone do not separate calls.  So
 * each operation takes the first unused event that matches it inside its
 * window and after every event an earlier call took; any matching event
 * left over inside the span of all windows is a duplicate.  With task
 * records, each event taken must be of the task that ran the operation:
 * ours (@tgid) when @ours, else not ours (an interrupt's: the kernel's, or
 * on PREEMPT_RT an interrupt thread's).  Returns the number of operations
 * without their one event, plus duplicates and events of another task;
 * logs each.  Operations that may be counted lost instead of recorded
 * and were not recorded are counted in *@unrecorded (if not NULL).
 */
static int gt_match_all(struct __test_metadata *_metadata,
			const struct pt_st_trace *t, const struct gt_expect *e,
			int n, int64_t tgid, bool ours, int *unrecorded)
{
	bool tasks = t->hdr.flags & PAGETRACE_FLAG_TASKS;
	unsigned char *used = calloc(t->nr ? t->nr : 1, 1);
	uint64_t lo = UINT64_MAX, hi = 0, err = t->clock_error_ns;
	size_t i, from = 0, last = 0, first = t->nr;
	uint32_t cpu = 0;
	int k, pass, bad = 0;

	if (!used)
		return n;
	for (k = 0; k < n; k++) {
		size_t got = t->nr;

		/* A new call starts after everything the last one took. */
		if (k && (e[k].t0 != e[k - 1].t0 || e[k].t1 != e[k - 1].t1))
			from = last + 1;
		lo = e[k].t0 < lo ? e[k].t0 : lo;
		hi = e[k].t1 > hi ? e[k].t1 : hi;
		/*
		 * With task records, an event of the operation's task first:
		 * an interrupt may take the page a call is about to get and
		 * give it back inside the window (the per-CPU lists hand out
		 * the page freed last first), which only its task tells apart.
		 */
		for (pass = tasks ? 0 : 1; got == t->nr && pass < 2; pass++) {
			for (i = from; i < t->nr; i++) {
				const struct pgtrace_event *ev = &t->ev[i];

				if (!used[i] && gt_matches(ev, &e[k]) &&
				    ev->time_ns + GT_SLACK_NS + err >= e[k].t0 &&
				    ev->time_ns <= e[k].t1 + err &&
				    (pass || (ev->task == tgid) == ours)) {
					got = i;
					break;
				}
			}
		}
		if (got == t->nr && e[k].or_lost && unrecorded) {
			(*unrecorded)++;
			continue;
		}
		if (got == t->nr) {
			bad++;
			TH_LOG("%s: %s pfn=%" PRIu64 " npages=%" PRIu64
			       " in [%" PRIu64 ", %" PRIu64 "]: no event",
			       e[k].op, e[k].type == PAGETRACE_EV_ALLOC ?
			       "alloc" : "free", e[k].pfn, e[k].npages,
			       e[k].t0, e[k].t1);
			continue;
		}
		used[got] = 1;
		if (tasks && (t->ev[got].task == tgid) != ours) {
			bad++;
			TH_LOG("%s: %s pfn=%" PRIu64 " of task %" PRId64
			       ", not %s%" PRId64, e[k].op,
			       e[k].type == PAGETRACE_EV_ALLOC ? "alloc" : "free",
			       e[k].pfn, t->ev[got].task, ours ? "" : "ours, ",
			       tgid);
		}
		last = got > last ? got : last;
		first = got < first ? got : first;
		cpu = t->ev[got].cpu;
	}
	/*
	 * Another CPU may take a freed PFN inside the windows: only the
	 * operations' own CPU (we are pinned) can hold duplicates.  And a
	 * duplicate comes after the event the operation took (that is the
	 * first that matched): what came before, inside a coarse clock's
	 * tick, is the setup of the operation (contig allocates and frees its
	 * block first).  Nor is the page's next life a duplicate: an
	 * interrupt's allocation of it and free after the operation freed it
	 * (gt_next_life(); seen on 6.1, twice in some thirty runs).
	 */
	for (i = first; i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];

		if (used[i] || ev->cpu != cpu ||
		    ev->time_ns + GT_SLACK_NS + err < lo ||
		    ev->time_ns > hi + err)
			continue;
		for (k = 0; k < n; k++) {
			if (gt_matches(ev, &e[k]) && gt_next_life(t, i)) {
				TH_LOG("%s: %s pfn=%" PRIu64 " at %" PRIu64
				       ": the page's next life, not a duplicate",
				       e[k].op, pgtrace_event_type_name(ev->type),
				       ev->pfn, ev->time_ns);
				break;
			}
			if (gt_matches(ev, &e[k])) {
				bad++;
				TH_LOG("%s: duplicate %s pfn=%" PRIu64
				       " npages=%" PRIu64 " at %" PRIu64,
				       e[k].op, pgtrace_event_type_name(ev->type),
				       ev->pfn, ev->npages, ev->time_ns);
				break;
			}
		}
	}
	free(used);
	return bad;
}

/* Parse the module's report; returns expectations, or -1 with a skip. */
static int gt_parse(const char *report, struct gt_expect *e, int max,
		    char *skip, size_t skiplen)
{
	const char *line = report;
	int n = 0;

	while (*line && n < max) {
		char type[16];

		if (sscanf(line, "%31s %15s pfn=%" SCNu64 " npages=%" SCNu64
			   " t0=%" SCNu64 " t1=%" SCNu64, e[n].op, type,
			   &e[n].pfn, &e[n].npages, &e[n].t0, &e[n].t1) == 6) {
			e[n].cover = !strcmp(type, "alloc-cover");
			e[n].or_lost = !strcmp(type, "alloc-or-lost");
			e[n].type = strncmp(type, "alloc", 5) ? PAGETRACE_EV_FREE :
								PAGETRACE_EV_ALLOC;
			n++;
		} else if (strstr(line, " skip ")) {
			/* "<op> skip <reason>" */
			const char *why = strstr(line, " skip ") + 6;

			snprintf(skip, skiplen, "%.*s", (int)strcspn(why, "\n"), why);
			return -1;
		}
		line += strcspn(line, "\n");
		line += *line == '\n';
	}
	return n;
}

FIXTURE(gt)
{
	int dev;
	struct pt_st_trace trace;
};

FIXTURE_VARIANT(gt)
{
	const char *op;
	const char *hook;
};

/*
 * One variant per allocator entry point pagetrace_gt.ko drives, under each
 * backend (the hook= parameter): each must see every operation once.
 */
#define GT_OP(name)							\
	FIXTURE_VARIANT_ADD(gt, name##_kprobe) { #name, "kprobe" };	\
	FIXTURE_VARIANT_ADD(gt, name##_tracepoint) { #name, "tracepoint" }
GT_OP(pages_order0);
GT_OP(pages_order3);
GT_OP(pages_order5);
GT_OP(pages_order10);
GT_OP(pages_atomic);
GT_OP(get_free_pages);
GT_OP(page_put);
GT_OP(folio_order0);
GT_OP(folio_order2);
GT_OP(folio_thp);
GT_OP(pages_node);
GT_OP(pages_exact);
GT_OP(bulk_array);
GT_OP(bulk_list);
GT_OP(bulk_prefilled);
GT_OP(bulk_large);
GT_OP(bulk_large_beyond);
GT_OP(bulk_single);
GT_OP(vmalloc);
GT_OP(split_free);
GT_OP(softirq);
GT_OP(hardirq);
GT_OP(contig);
GT_OP(nolock);

static int gt_backend(const char *hook)
{
	if (!strcmp(hook, "kprobe"))
		return PAGETRACE_BACKEND_KPROBE;
	return PAGETRACE_BACKEND_TRACEPOINT;
}

FIXTURE_SETUP(gt)
{
	int ret;

	self->dev = -1;
	self->trace.ev = NULL;
	ret = pt_st_gt_load();
	ASSERT_EQ(0, ret) TH_LOG("cannot load pagetrace_gt.ko: %s",
				 strerror(-ret));
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	ASSERT_EQ(0, pt_st_set_hook(variant->hook));
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev) TH_LOG("open /dev/pagetrace: %s (is pagetrace.ko loaded?)",
				       strerror(errno));
}

FIXTURE_TEARDOWN(gt)
{
	pt_st_trace_free(&self->trace);
	if (self->dev >= 0)
		close(self->dev);
	pt_st_set_hook("auto");
}

TEST_F(gt, entry_point)
{
	static char report[64 << 10];
	static struct gt_expect e[1024];
	struct pagetrace_cpu_stats st[64];
	int n, bad, unrecorded = 0;
	uint64_t lost = 0;
	unsigned int cpu;
	char skip[256];

	ASSERT_EQ(0, pt_st_gt_run(variant->op, report, sizeof(report)));
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->trace))
		TH_LOG("%s", self->trace.err);

	ASSERT_EQ(gt_backend(variant->hook), self->trace.backend);

	n = gt_parse(report, e, 1024, skip, sizeof(skip));
	if (n < 0)
		SKIP(return, "%s: %s", variant->op, skip);
	ASSERT_LT(0, n) TH_LOG("no operations reported for %s", variant->op);

	/* The module runs an operation in our write(), but for interrupts'. */
	bad = gt_match_all(_metadata, &self->trace, e, n, getpid(),
			   strcmp(variant->op, "softirq") &&
			   strcmp(variant->op, "hardirq"), &unrecorded);
	EXPECT_EQ(0, bad) TH_LOG("%d of %d operations not traced exactly once "
				 "(%zu events in the session)", bad, n,
				 self->trace.nr);
	if (!unrecorded)
		return;
	/* Not recorded, but then counted: none lost silently. */
	ASSERT_EQ(0, pt_st_stats(self->dev, st, 64, NULL));
	for (cpu = 0; cpu < self->trace.hdr.nr_cpus && cpu < 64; cpu++)
		lost += st[cpu].lost;
	TH_LOG("%d allocations not recorded, %" PRIu64 " events counted lost",
	       unrecorded, lost);
	/* Each once: not recorded and counted, nor recorded and counted too. */
	EXPECT_EQ((uint64_t)unrecorded, lost);
}

/*
 * What each backend attaches, as the kprobe core lists it during a
 * session: the kprobe backend probes the allocator's entry (a kretprobe)
 * and its free functions; the tracepoint backend leaves those to
 * mm_page_alloc/mm_page_free; both keep kprobes only for compaction (and
 * the bulk allocator), and none for reclaim, which the task's own state
 * tells (module/hooks.c).
 */
static int gt_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return 0;
}

static int gt_kprobes_list(char *buf, size_t len)
{
	return gt_read_file("/sys/kernel/debug/kprobes/list", buf, len);
}

static int gt_listed(const char *list, const char *sym)
{
	char pat[128];

	snprintf(pat, sizeof(pat), " %s+0x", sym);
	return strstr(list, pat) != NULL;
}

/*
 * Whether kprobes/list shows a probe of @type on @sym: "ADDR  k  sym+0x..."
 * for a kprobe, "r" for a kretprobe.
 */
static int gt_listed_as(const char *list, char type, const char *sym)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "  %c  %s+0x", type, sym);
	return strstr(list, pat) != NULL;
}

/* Whether the kernel has a function named @sym (/proc/kallsyms). */
static bool gt_ksym(const char *sym)
{
	char line[512], name[256], type;
	unsigned long long addr;
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
			(type == 't' || type == 'T') && !strcmp(name, sym) &&
			!strchr(line, '[');
	fclose(f);
	return found;
}

/*
 * The first of @names the kernel has: the candidates hooks.c tries, in
 * its order.
 */
static const char *gt_first_ksym(const char * const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (gt_ksym(names[i]))
			return names[i];
	return NULL;
}

#define GT_NR(a)	(sizeof(a) / sizeof((a)[0]))

static const char * const gt_alloc_funcs[] = {
	"__alloc_frozen_pages_noprof", "__alloc_pages_noprof",
	"__alloc_pages", "__alloc_pages_nodemask",
};

/*
 * Compaction's hooks, by generation (module/hooks.c): split_map_pages
 * (5.10-6.1), post_alloc_hook (6.12), compaction_alloc (7.x, where the
 * allocator calls post_alloc_hook itself).  Whichever the module chose is
 * probed under either backend.
 */
static const char * const gt_compact_funcs[] = {
	"split_map_pages", "post_alloc_hook", "compaction_alloc",
};

static bool gt_compact_probed(const char *list)
{
	size_t i;

	for (i = 0; i < GT_NR(gt_compact_funcs); i++)
		if (gt_listed(list, gt_compact_funcs[i]))
			return true;
	return false;
}

TEST(backend_attach_points)
{
	static const char * const free_funcs[] = {
		"free_pcp_prepare", "free_unref_page", "free_unref_folios",
		"__free_frozen_pages", "__free_pages_ok",
	};
	static char list[1 << 16];
	const char *alloc;
	unsigned int i;
	bool any_free = false;
	int dev;

	alloc = gt_first_ksym(gt_alloc_funcs, GT_NR(gt_alloc_funcs));
	ASSERT_NE(NULL, alloc) TH_LOG("none of the allocator's entry points in /proc/kallsyms");

	ASSERT_EQ(0, pt_st_set_hook("kprobe"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev) TH_LOG("hook=kprobe: open: %s", strerror(errno));
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	EXPECT_TRUE(gt_listed_as(list, 'r', alloc)) TH_LOG("kprobe backend: no kretprobe on %s:\n%s",
							   alloc, list);
	for (i = 0; i < GT_NR(free_funcs); i++)
		any_free |= gt_listed_as(list, 'k', free_funcs[i]);
	EXPECT_TRUE(any_free) TH_LOG("kprobe backend: no free function probed:\n%s", list);
	EXPECT_TRUE(gt_compact_probed(list)) TH_LOG("kprobe backend: compaction not probed:\n%s", list);
	/* Reclaim is told by the task's state, with no probe. */
	EXPECT_FALSE(gt_listed(list, "shrink_folio_list"));
	EXPECT_FALSE(gt_listed(list, "shrink_lruvec"));

	ASSERT_EQ(0, pt_st_set_hook("tracepoint"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	pt_st_set_hook("auto");
	EXPECT_FALSE(gt_listed(list, alloc)) TH_LOG("tracepoint backend probes %s", alloc);
	for (i = 0; i < GT_NR(free_funcs); i++) {
		const char *sym = free_funcs[i];

		/* (GCC's format check cannot see that sym is never NULL.) */
		EXPECT_FALSE(gt_listed(list, sym))
			TH_LOG("tracepoint backend probes %s", sym ? sym : "?");
	}
	/* No tracepoint covers these: kprobes stay. */
	EXPECT_TRUE(gt_compact_probed(list)) TH_LOG("tracepoint backend: compaction not probed:\n%s", list);
	EXPECT_FALSE(gt_listed(list, "shrink_folio_list"));

	/* A bad backend name is refused, and so is the retired fentry. */
	EXPECT_EQ(-EINVAL, pt_st_set_hook("ftrace"));
	EXPECT_EQ(-EINVAL, pt_st_set_hook("fentry"));
}

/*
 * One session of @hook around pages_order0: the backend it chose (in the
 * session record) and every operation traced once.
 */
static void gt_hook_session(struct __test_metadata *_metadata,
			    const char *hook, unsigned int want)
{
	static char report[64 << 10];
	static struct gt_expect e[64];
	struct pt_st_trace t = { 0 };
	char skip[256];
	int dev, n;

	ASSERT_EQ(0, pt_st_set_hook(hook));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_gt_run("pages_order0", report, sizeof(report)));
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	close(dev);
	EXPECT_EQ(want, t.backend);
	n = gt_parse(report, e, 64, skip, sizeof(skip));
	ASSERT_LT(0, n) TH_LOG("pages_order0: %s", report);
	EXPECT_EQ(0, gt_match_all(_metadata, &t, e, n, getpid(), true, NULL));
	pt_st_trace_free(&t);
}

/* hook=auto (the default) is the tracepoint backend, on every kernel. */
TEST(hook_auto)
{
	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	gt_hook_session(_metadata, "auto", PAGETRACE_BACKEND_TRACEPOINT);
	pt_st_set_hook("auto");
}

/* Whether an event matches @e inside its window. */
static bool gt_traced(const struct pt_st_trace *t, const struct gt_expect *e)
{
	uint64_t err = t->clock_error_ns;
	size_t i;

	for (i = 0; i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];

		if (gt_matches(ev, e) && ev->time_ns + GT_SLACK_NS + err >= e->t0 &&
		    ev->time_ns <= e->t1 + err)
			return true;
	}
	return false;
}

static int gt_param_get(const char *name, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/pagetrace/parameters/%s", name);
	return gt_read_file(path, buf, len);
}

/*
 * Pages allocated while pagetrace writes an event on the same CPU, by a
 * kprobe on a function the writer calls (pagetrace_gt.ko's reenter_*
 * ops), as an NMI or a BPF program on a kprobe may allocate: each such
 * event is traced or counted lost, never written into the middle of the
 * other one and gone.  Small buffers, so that many close; enough of them
 * that nothing else is lost; every allocation's stack sampled, so that
 * the writer calls the unwinder (__unwind_start()).
 */
FIXTURE(reenter)
{
};

FIXTURE_VARIANT(reenter)
{
	const char *op;
};

FIXTURE_VARIANT_ADD(reenter, nmi) { "reenter_nmi" };
FIXTURE_VARIANT_ADD(reenter, kprobe) { "reenter_kprobe" };

FIXTURE_SETUP(reenter)
{
}

FIXTURE_TEARDOWN(reenter)
{
}

TEST_F(reenter, counted)
{
	static char report[64 << 10];
	static struct gt_expect e[1100];
	struct pagetrace_cpu_stats st[64];
	char buf_size[32], nr_bufs[32], rate[32], skip[256], num[32];
	uint64_t lo, hi;
	struct pt_st_trace t = { 0 };
	uint64_t lost = 0;
	int dev, n, k, found = 0;
	unsigned int cpu;

	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	ASSERT_EQ(0, gt_param_get("buf_size", buf_size, sizeof(buf_size)));
	ASSERT_EQ(0, gt_param_get("nr_bufs", nr_bufs, sizeof(nr_bufs)));
	ASSERT_EQ(0, gt_param_get("stack_rate", rate, sizeof(rate)));
	ASSERT_EQ(0, pt_st_set_hook("tracepoint"));
	ASSERT_EQ(0, pt_st_set_param("buf_size", "4096"));
	ASSERT_EQ(0, pt_st_set_param("nr_bufs", "4096"));
	ASSERT_EQ(0, pt_st_set_param("stack_rate", "1"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	pt_st_set_param("buf_size", buf_size);
	pt_st_set_param("nr_bufs", nr_bufs);
	pt_st_set_param("stack_rate", rate);
	pt_st_set_hook("auto");
	ASSERT_LE(0, dev) TH_LOG("open: %s", strerror(errno));
	/* Only calls from pagetrace.ko allocate: see gt_module/gt_context.c. */
	ASSERT_EQ(0, pt_st_module_text("pagetrace", &lo, &hi));
	snprintf(num, sizeof(num), "%" PRIu64, lo);
	ASSERT_EQ(0, pt_st_set_module_param("pagetrace_gt", "reenter_lo", num));
	snprintf(num, sizeof(num), "%" PRIu64, hi);
	ASSERT_EQ(0, pt_st_set_module_param("pagetrace_gt", "reenter_hi", num));
	ASSERT_EQ(0, pt_st_gt_run(variant->op, report, sizeof(report)));
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	ASSERT_EQ(0, pt_st_stats(dev, st, 64, NULL));
	close(dev);

	n = gt_parse(report, e, 1100, skip, sizeof(skip));
	if (n < 0) {
		pt_st_trace_free(&t);
		SKIP(return, "%s", skip);
	}
	for (k = 0; k < n; k++)
		found += gt_traced(&t, &e[k]);
	for (cpu = 0; cpu < t.hdr.nr_cpus && cpu < 64; cpu++) {
		EXPECT_EQ(st[cpu].attempts,
			  st[cpu].events + st[cpu].lost + st[cpu].filtered)
			TH_LOG("cpu %u: attempts %llu, events %llu, lost %llu, filtered %llu",
			       cpu, (unsigned long long)st[cpu].attempts,
			       (unsigned long long)st[cpu].events,
			       (unsigned long long)st[cpu].lost,
			       (unsigned long long)st[cpu].filtered);
		lost += st[cpu].lost;
	}
	TH_LOG("%d events of the probe's pages: %d traced, %d not; %llu counted lost",
	       n, found, n - found, (unsigned long long)lost);
	EXPECT_LT(found, n) TH_LOG("no event came while the writer was busy: the test re-entered nothing");
	EXPECT_LE((uint64_t)(n - found), lost)
		TH_LOG("events neither traced nor counted lost");
	pt_st_trace_free(&t);
}

/*
 * A hook the kernel drops without knowing what it missed: the bulk
 * allocator called from another kprobe's handler (pagetrace_gt's
 * bulk_in_kprobe), where the kprobe core skips pagetrace's bulk kretprobe
 * and counts one miss for the whole call.  The pages are still accounted
 * for: the miss is counted, and with a snapshot the analysis counts each
 * page's later free as one of a page it never saw allocated, after the
 * snapshot (Documentation/pagetrace/design.rst, "What the hooks can miss").
 */
TEST(bulk_missed_is_counted)
{
	static char report[16 << 10];
	static struct gt_expect e[64];
	struct pagetrace_cpu_stats st[64];
	struct pgtrace_reader *r = NULL;
	struct pt_st_trace t = { 0 };
	struct pgtrace_analysis a;
	uint64_t missed = 0, after;
	char snap[32], skip[256];
	const char *line;
	int dev, n, k, unseen = 0;

	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	ASSERT_EQ(0, gt_param_get("snapshot", snap, sizeof(snap)));
	ASSERT_EQ(0, pt_st_set_hook("tracepoint"));
	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	pt_st_set_param("snapshot", snap);
	pt_st_set_hook("auto");
	ASSERT_LE(0, dev) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_gt_run("bulk_in_kprobe", report, sizeof(report)));
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	ASSERT_EQ(0, pt_st_stats(dev, st, 64, &missed));
	close(dev);
	n = gt_parse(report, e, 64, skip, sizeof(skip));
	if (n < 0) {
		pt_st_trace_free(&t);
		SKIP(return, "%s", skip);
	}
	for (line = report; (line = strstr(line, " unseen pfn=")); line++)
		unseen++;
	ASSERT_LT(0, unseen) TH_LOG("%s", report);
	ASSERT_EQ(unseen, n);
	/* Each page's free is in the trace. */
	for (k = 0; k < n; k++)
		EXPECT_TRUE(gt_traced(&t, &e[k]))
			TH_LOG("free of pfn %" PRIu64 " not traced", e[k].pfn);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, t.raw, t.raw_len, 0));
	ASSERT_EQ(0, pgtrace_analysis_collect(r, &a, NULL))
		TH_LOG("decode: %s", pgtrace_reader_error(r));
	after = a.unmatched_pages[PAGETRACE_EV_FREE] -
		a.unmatched_in_snapshot_pages[PAGETRACE_EV_FREE];
	TH_LOG("%d pages the bulk call took unseen; probe misses %" PRIu64
	       "; frees of pages not known allocated after the snapshot: %" PRIu64 " pages",
	       unseen, missed, after);
	EXPECT_LE(1, missed) TH_LOG("the kprobe core counted no miss");
	EXPECT_LE((uint64_t)unseen, after)
		TH_LOG("pages the hooks missed that the analysis does not count");
	pgtrace_analysis_free(&a);
	pgtrace_reader_close(r);
	pt_st_trace_free(&t);
}

/*
 * A live patch on the allocator (an ftrace_ops that may modify the
 * instruction pointer, as livepatch and BPF fmod_ret register:
 * pagetrace_gt's ipmodify_on) and a session get along in either order:
 * registered first, every backend still opens and sees every page;
 * registered while a session runs, it is not refused.
 */
FIXTURE(livepatch)
{
	char report[512];
};

FIXTURE_VARIANT(livepatch)
{
	const char *hook;
	unsigned int backend;
};

FIXTURE_VARIANT_ADD(livepatch, tracepoint) { "tracepoint", PAGETRACE_BACKEND_TRACEPOINT };
FIXTURE_VARIANT_ADD(livepatch, kprobe) { "kprobe", PAGETRACE_BACKEND_KPROBE };

FIXTURE_SETUP(livepatch)
{
	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
}

FIXTURE_TEARDOWN(livepatch)
{
	pt_st_gt_run("ipmodify_off", self->report, sizeof(self->report));
	pt_st_set_hook("auto");
}

TEST_F(livepatch, patch_first)
{
	ASSERT_EQ(0, pt_st_gt_run("ipmodify_on", self->report, sizeof(self->report)));
	if (strstr(self->report, " skip "))
		SKIP(return, "%s", self->report);
	ASSERT_NE(NULL, strstr(self->report, "held")) TH_LOG("%s", self->report);
	gt_hook_session(_metadata, variant->hook, variant->backend);
}

TEST_F(livepatch, session_first)
{
	struct pt_st_trace t = { 0 };
	int dev;

	ASSERT_EQ(0, pt_st_set_hook(variant->hook));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_gt_run("ipmodify_on", self->report, sizeof(self->report)));
	if (strstr(self->report, " skip ")) {
		close(dev);
		SKIP(return, "%s", self->report);
	}
	EXPECT_NE(NULL, strstr(self->report, "held"))
		TH_LOG("a live patch on the allocator is refused while a %s session runs: %s",
		       variant->hook, self->report);
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	close(dev);
	EXPECT_EQ(variant->backend, t.backend);
	pt_st_trace_free(&t);
	/* And a session opened under the patch still sees every page. */
	gt_hook_session(_metadata, variant->hook, variant->backend);
}

/* Write @s to @path: 0 or -errno. */
static int gt_write_file(const char *path, const char *s, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : n < 0 ? -errno : -EIO;
}

#define GT_KPROBE_EVENTS	"/sys/kernel/tracing/kprobe_events"
#define GT_KPROBE_ENABLE	"/sys/kernel/tracing/events/pt_gt/shared/enable"

/* Hits of the trace kprobe event pt_gt/shared, from kprobe_profile. */
static long gt_shared_hits(void)
{
	static char buf[1 << 16];
	char *l;
	long hits;

	if (gt_read_file("/sys/kernel/tracing/kprobe_profile", buf, sizeof(buf)))
		return -1;
	for (l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		if (sscanf(l, " shared %ld", &hits) == 1)
			return hits;
	return -1;
}

/*
 * Another kprobe on the allocator's entry (here a trace kprobe event, as
 * perf probe or bpftrace would place): the kprobe backend's kretprobe
 * shares the function with it, sees every page, and the other probe
 * keeps firing.
 */
TEST(kprobe_shared)
{
	const char *alloc = gt_first_ksym(gt_alloc_funcs, GT_NR(gt_alloc_funcs));
	char cmd[128];
	long hits0, hits1;

	ASSERT_NE(NULL, alloc);
	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	snprintf(cmd, sizeof(cmd), "p:pt_gt/shared %s\n", alloc);
	ASSERT_EQ(0, gt_write_file(GT_KPROBE_EVENTS, cmd, O_APPEND));
	ASSERT_EQ(0, gt_write_file(GT_KPROBE_ENABLE, "1", 0));
	hits0 = gt_shared_hits();

	gt_hook_session(_metadata, "kprobe", PAGETRACE_BACKEND_KPROBE);
	hits1 = gt_shared_hits();
	gt_write_file(GT_KPROBE_ENABLE, "0", 0);
	gt_write_file(GT_KPROBE_EVENTS, "-:pt_gt/shared\n", O_APPEND);
	pt_st_set_hook("auto");
	EXPECT_LE(0, hits0);
	EXPECT_LT(hits0, hits1) TH_LOG("the other kprobe stopped firing");
}

TEST_HARNESS_MAIN
