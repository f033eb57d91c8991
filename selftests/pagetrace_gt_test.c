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
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	t0;
	uint64_t	t1;
};

static bool gt_matches(const struct pt_event *ev, const struct gt_expect *e)
{
	if (e->cover)
		return ev->type == e->type && ev->pfn <= e->pfn &&
		       e->pfn + e->npages <= ev->pfn + ev->npages;
	return ev->type == e->type && ev->pfn == e->pfn &&
	       ev->npages == e->npages;
}

/*
 * Match operations to events one to one.  Operations are listed in the
 * order they ran (on one CPU); those of one call share a window, and a
 * call may free its batch in any order.  A PFN may be reused by the next
 * call, and where the clock is coarse (local_clock() ticks with jiffies on
 * some kernels under emulation) windows alone do not separate calls.  So
 * each operation takes the first unused event that matches it inside its
 * window and after every event an earlier call took; any matching event
 * left over inside the span of all windows is a duplicate.  Returns the
 * number of operations without their one event, plus duplicates; logs
 * each.
 */
static int gt_match_all(struct __test_metadata *_metadata,
			const struct pt_st_trace *t, const struct gt_expect *e,
			int n)
{
	unsigned char *used = calloc(t->nr ? t->nr : 1, 1);
	uint64_t lo = UINT64_MAX, hi = 0, err = t->clock_error_ns;
	size_t i, from = 0, last = 0, first = t->nr;
	uint32_t cpu = 0;
	int k, bad = 0;

	if (!used)
		return n;
	for (k = 0; k < n; k++) {
		size_t got = t->nr;

		/* A new call starts after everything the last one took. */
		if (k && (e[k].t0 != e[k - 1].t0 || e[k].t1 != e[k - 1].t1))
			from = last + 1;
		lo = e[k].t0 < lo ? e[k].t0 : lo;
		hi = e[k].t1 > hi ? e[k].t1 : hi;
		for (i = from; i < t->nr; i++) {
			const struct pt_event *ev = &t->ev[i];

			if (!used[i] && gt_matches(ev, &e[k]) &&
			    ev->time_ns + GT_SLACK_NS + err >= e[k].t0 &&
			    ev->time_ns <= e[k].t1 + err) {
				got = i;
				break;
			}
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
	 * block first).
	 */
	for (i = first; i < t->nr; i++) {
		const struct pt_event *ev = &t->ev[i];

		if (used[i] || ev->cpu != cpu ||
		    ev->time_ns + GT_SLACK_NS + err < lo ||
		    ev->time_ns > hi + err)
			continue;
		for (k = 0; k < n; k++) {
			if (gt_matches(ev, &e[k])) {
				bad++;
				TH_LOG("%s: duplicate %s pfn=%" PRIu64
				       " npages=%" PRIu64 " at %" PRIu64,
				       e[k].op, pt_event_type_name(ev->type),
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
	FIXTURE_VARIANT_ADD(gt, name##_tracepoint) { #name, "tracepoint" }; \
	FIXTURE_VARIANT_ADD(gt, name##_fentry) { #name, "fentry" }
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
GT_OP(bulk_single);
GT_OP(vmalloc);
GT_OP(split_free);
GT_OP(softirq);
GT_OP(hardirq);
GT_OP(contig);

static int gt_backend(const char *hook)
{
	if (!strcmp(hook, "tracepoint"))
		return PAGETRACE_BACKEND_TRACEPOINT;
	if (!strcmp(hook, "fentry"))
		return PAGETRACE_BACKEND_FENTRY;
	return PAGETRACE_BACKEND_KPROBE;
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
	char skip[256];
	int n, bad;

	ASSERT_EQ(0, pt_st_gt_run(variant->op, report, sizeof(report)));
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->trace))
		TH_LOG("%s", self->trace.err);

	ASSERT_EQ(gt_backend(variant->hook), self->trace.backend);

	n = gt_parse(report, e, 1024, skip, sizeof(skip));
	if (n < 0)
		SKIP(return, "%s: %s", variant->op, skip);
	ASSERT_LT(0, n) TH_LOG("no operations reported for %s", variant->op);

	bad = gt_match_all(_metadata, &self->trace, e, n);
	EXPECT_EQ(0, bad) TH_LOG("%d of %d operations not traced exactly once "
				 "(%zu events in the session)", bad, n,
				 self->trace.nr);
}

/*
 * What each backend attaches, as the kprobe core and ftrace list it during a
 * session: the kprobe backend probes the allocator's entry and free
 * functions; the tracepoint backend leaves those to mm_page_alloc/
 * mm_page_free, and the fentry backend to direct calls from their fentry
 * call sites into pagetrace's trampolines; both keep kprobes only for the
 * bulk allocator, compaction and the reclaim scopes.
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

/*
 * Whether ftrace's enabled_functions shows a direct call from @sym's
 * fentry call site to a pagetrace trampoline: "sym (1) ...\n\tdirect-->
 * pt_..._tramp+0x0/0x.. [pagetrace]".
 */
static int gt_direct(const char *list, const char *sym)
{
	const char *p = list;
	size_t len = strlen(sym);

	for (; (p = strstr(p, sym)); p += len) {
		const char *eol;

		if ((p != list && p[-1] != '\n') || p[len] != ' ')
			continue;
		eol = strchr(p, '\n');
		if (eol && !strncmp(eol, "\n\tdirect-->pt_", 13) &&
		    strstr(eol, "[pagetrace]") &&
		    strstr(eol, "[pagetrace]") < strchr(eol + 1, '\n'))
			return 1;
	}
	return 0;
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

TEST(backend_attach_points)
{
	static const char * const tp_free[] = {
		"free_pcp_prepare", "free_unref_page", "free_unref_folios",
	};
	static char list[1 << 16], ftrace[1 << 16];
	struct utsname u;
	const char *alloc, *compact;
	unsigned int i;
	bool rt;
	int dev;

	ASSERT_EQ(0, uname(&u));
	rt = strstr(u.version, "PREEMPT_RT") != NULL;
	alloc = strncmp(u.release, "6.12.", 5) ? "__alloc_pages" :
						  "__alloc_pages_noprof";
	/* Compaction's allocations; see the top of module/hooks.c. */
	compact = strncmp(u.release, "6.12.", 5) ? "split_map_pages" :
						    "post_alloc_hook";

	ASSERT_EQ(0, pt_st_set_hook("kprobe"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	EXPECT_TRUE(gt_listed(list, alloc)) TH_LOG("kprobe backend: %s not probed", alloc);
	/*
	 * The allocator's return: a plain kprobe that sends the call through
	 * a return trampoline, but a kretprobe on PREEMPT_RT (hooks.c).
	 */
	EXPECT_EQ(!rt, gt_listed_as(list, 'k', alloc)) TH_LOG("%s", list);
	EXPECT_EQ(rt, gt_listed_as(list, 'r', alloc)) TH_LOG("%s", list);
	EXPECT_TRUE(gt_listed(list, compact)) TH_LOG("kprobe backend: %s not probed", compact);
	EXPECT_TRUE(gt_listed(list, "__free_pages_ok"));
	EXPECT_TRUE(gt_listed(list, "shrink_folio_list"));

	ASSERT_EQ(0, pt_st_set_hook("tracepoint"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	pt_st_set_hook("auto");
	EXPECT_FALSE(gt_listed(list, alloc)) TH_LOG("tracepoint backend probes %s", alloc);
	EXPECT_FALSE(gt_listed(list, "__free_pages_ok"));
	for (i = 0; i < sizeof(tp_free) / sizeof(tp_free[0]); i++) {
		const char *sym = tp_free[i];

		EXPECT_FALSE(gt_listed(list, sym)) TH_LOG("tracepoint backend probes %s",
							  sym ? sym : "?");
	}
	/* No tracepoint covers these: kprobes stay. */
	EXPECT_TRUE(gt_listed(list, compact)) TH_LOG("tracepoint backend: %s not probed", compact);
	EXPECT_TRUE(gt_listed(list, "shrink_folio_list"));

	ASSERT_EQ(0, pt_st_set_hook("fentry"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	ASSERT_EQ(0, gt_read_file("/sys/kernel/debug/tracing/enabled_functions",
				  ftrace, sizeof(ftrace)));
	close(dev);
	pt_st_set_hook("auto");
	EXPECT_FALSE(gt_listed(list, alloc)) TH_LOG("fentry backend probes %s", alloc);
	EXPECT_FALSE(gt_listed(list, "__free_pages_ok"));
	EXPECT_TRUE(gt_direct(ftrace, alloc)) TH_LOG("fentry backend: no direct call from %s:\n%s",
						     alloc, ftrace);
	EXPECT_TRUE(gt_direct(ftrace, "__free_pages_ok"));
	EXPECT_TRUE(gt_listed(list, compact)) TH_LOG("fentry backend: %s not probed", compact);
	EXPECT_TRUE(gt_listed(list, "shrink_folio_list"));

	/* A bad backend name is refused. */
	EXPECT_EQ(-EINVAL, pt_st_set_hook("ftrace"));
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
	EXPECT_EQ(0, gt_match_all(_metadata, &t, e, n));
	pt_st_trace_free(&t);
}

/*
 * hook=auto (the default) takes fentry, but kprobes on PREEMPT_RT; and
 * kprobes when fentry cannot attach: here another ftrace user that may
 * modify the return address holds the allocator's entry (pagetrace_gt's
 * ipmodify_on), which a direct call cannot share.  hook=fentry then fails
 * the open with EBUSY, and hook=auto says why it fell back.  Nor can the
 * kprobe backend's own redirecting kprobe share it: that session says so
 * and takes the allocator's return with a kretprobe (not on PREEMPT_RT,
 * which uses the kretprobe anyway), and still sees every page.
 */
TEST(hook_auto)
{
	struct utsname u;
	char report[256], line[512];
	bool rt, said = false, said_kret = false;
	int dev, kmsg;
	ssize_t n;

	ASSERT_EQ(0, uname(&u));
	rt = strstr(u.version, "PREEMPT_RT") != NULL;
	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	gt_hook_session(_metadata, "auto",
			rt ? PAGETRACE_BACKEND_KPROBE : PAGETRACE_BACKEND_FENTRY);

	ASSERT_EQ(0, pt_st_gt_run("ipmodify_on", report, sizeof(report)));
	ASSERT_NE(NULL, strstr(report, "held")) TH_LOG("%s", report);
	kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, kmsg);
	if (!rt) {
		ASSERT_EQ(0, pt_st_set_hook("fentry"));
		dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
		EXPECT_EQ(-1, dev);
		EXPECT_EQ(EBUSY, errno);
		if (dev >= 0)
			close(dev);
	}
	gt_hook_session(_metadata, "auto", PAGETRACE_BACKEND_KPROBE);
	while ((n = read(kmsg, line, sizeof(line) - 1)) > 0) {
		line[n] = '\0';
		said |= strstr(line, "hook=auto: fentry failed") != NULL;
		said_kret |= strstr(line, "through a trampoline (-16), using a kretprobe") != NULL;
	}
	close(kmsg);
	EXPECT_EQ(!rt, said);
	EXPECT_EQ(!rt, said_kret);
	ASSERT_EQ(0, pt_st_gt_run("ipmodify_off", report, sizeof(report)));
	pt_st_set_hook("auto");
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
 * perf probe or bpftrace would place): the kprobe backend's redirecting
 * kprobe would join its aggregate and silence it, so the session takes
 * the allocator's return with a kretprobe instead, says so, sees every
 * page, and the other probe keeps firing.
 */
TEST(kprobe_shared)
{
	struct utsname u;
	char cmd[128], line[512];
	bool said = false;
	long hits0, hits1;
	int kmsg;
	ssize_t n;

	ASSERT_EQ(0, uname(&u));
	if (strstr(u.version, "PREEMPT_RT"))
		SKIP(return, "PREEMPT_RT: the kprobe backend uses the kretprobe anyway");
	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	snprintf(cmd, sizeof(cmd), "p:pt_gt/shared %s\n",
		 strncmp(u.release, "6.12.", 5) ? "__alloc_pages" :
						  "__alloc_pages_noprof");
	ASSERT_EQ(0, gt_write_file(GT_KPROBE_EVENTS, cmd, O_APPEND));
	ASSERT_EQ(0, gt_write_file(GT_KPROBE_ENABLE, "1", 0));
	hits0 = gt_shared_hits();
	kmsg = pt_st_kmsg_open();
	EXPECT_LE(0, kmsg);

	gt_hook_session(_metadata, "kprobe", PAGETRACE_BACKEND_KPROBE);
	hits1 = gt_shared_hits();
	while (kmsg >= 0 && (n = read(kmsg, line, sizeof(line) - 1)) > 0) {
		line[n] = '\0';
		said |= strstr(line, "through a trampoline (-16), using a kretprobe") != NULL;
	}
	if (kmsg >= 0)
		close(kmsg);
	gt_write_file(GT_KPROBE_ENABLE, "0", 0);
	gt_write_file(GT_KPROBE_EVENTS, "-:pt_gt/shared\n", O_APPEND);
	pt_st_set_hook("auto");
	EXPECT_TRUE(said);
	EXPECT_LE(0, hits0);
	EXPECT_LT(hits0, hits1) TH_LOG("the other kprobe stopped firing");
}

TEST_HARNESS_MAIN
