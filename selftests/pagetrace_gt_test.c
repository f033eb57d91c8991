// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth: pages whose fate is known must show up in the trace, each
 * operation as exactly one event of the right type, PFN and size, inside
 * the clock window around the operation.
 *
 * The kernel side is pagetrace_gt.ko (selftests/gt_module): it allocates and
 * frees through one entry point per test variant and reports PFNs and
 * local_clock() windows.  THP faults are driven from here, with the PFN
 * read back from /proc/self/pagemap.
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
#include "libpagetrace.h"
#include "kselftest_harness.h"

#define GT_DIR		"/sys/kernel/debug/pagetrace_gt"
/*
 * An event's decoded time is at most 127 ns before the real one: words
 * keep time in 128 ns steps, rounded down.
 */
#define GT_SLACK_NS	256

struct gt_expect {
	char		op[32];
	unsigned int	type;
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	t0;
	uint64_t	t1;
};

struct gt_trace {
	struct pagetrace_header	hdr;
	unsigned int		backend;	/* from the session record */
	struct pt_event		*ev;
	size_t			nr;
};

static int gt_load_module(void)
{
	const char *ko = getenv("PAGETRACE_GT_KO") ?: "./pagetrace_gt.ko";
	int fd, ret;

	if (access(GT_DIR "/run", W_OK) == 0)
		return 0;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0);
	ret = ret && errno != EEXIST ? -errno : 0;
	close(fd);
	return ret;
}

#define GT_HOOK_PARAM	"/sys/module/pagetrace/parameters/hook"

/* Choose the backend of the next session; returns 0 or -errno. */
static int gt_set_hook(const char *hook)
{
	int fd = open(GT_HOOK_PARAM, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, hook, strlen(hook));
	close(fd);
	return n == (ssize_t)strlen(hook) ? 0 : -EIO;
}

static int gt_pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static uint64_t gt_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Read until EOF; the session must be stopped, so EOF comes. */
static void *gt_read_all(int fd, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	while (buf) {
		if (n == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0) {
				*len = n;
				return buf;
			}
			break;
		}
		n += r;
	}
	free(buf);
	return NULL;
}

/* Stop the session and decode all of it; returns 0 or a message. */
static const char *gt_collect(int dev, struct gt_trace *t, char *err,
			      size_t errlen)
{
	struct pt_reader *r = NULL;
	size_t len, cap = 4096;
	void *stream;
	int ret;

	if (ioctl(dev, PAGETRACE_IOC_STOP))
		return "PAGETRACE_IOC_STOP failed";
	stream = gt_read_all(dev, &len);
	if (!stream)
		return "reading the stream failed";
	ret = pt_reader_open_mem(&r, stream, len, 0);
	if (ret >= 0) {
		t->hdr = *pt_reader_header(r);
		t->backend = pt_reader_session(r) ?
			     pt_reader_session(r)->backend : ~0U;
	}
	t->ev = malloc(cap * sizeof(*t->ev));
	t->nr = 0;
	while (ret >= 0 && t->ev) {
		if (t->nr + 1024 > cap) {
			cap *= 2;
			t->ev = realloc(t->ev, cap * sizeof(*t->ev));
			if (!t->ev)
				break;
		}
		ret = pt_reader_next_batch(r, t->ev + t->nr, 1024);
		if (ret <= 0)
			break;
		t->nr += ret;
	}
	if (ret < 0)
		snprintf(err, errlen, "decode: %s", r ? pt_reader_error(r) :
			 strerror(-ret));
	pt_reader_close(r);
	free(stream);
	if (!t->ev)
		return "out of memory";
	return ret < 0 ? err : NULL;
}

static bool gt_matches(const struct pt_event *ev, const struct gt_expect *e)
{
	return ev->type == e->type && ev->pfn == e->pfn &&
	       ev->npages == e->npages;
}

/* Events matching @e inside its clock window. */
static size_t gt_count(const struct gt_trace *t, const struct gt_expect *e)
{
	size_t i, n = 0;

	for (i = 0; i < t->nr; i++) {
		const struct pt_event *ev = &t->ev[i];

		if (gt_matches(ev, e) && ev->time_ns + GT_SLACK_NS >= e->t0 &&
		    ev->time_ns <= e->t1)
			n++;
	}
	return n;
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
			const struct gt_trace *t, const struct gt_expect *e,
			int n)
{
	unsigned char *used = calloc(t->nr ? t->nr : 1, 1);
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t i, from = 0, last = 0;
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
			    ev->time_ns + GT_SLACK_NS >= e[k].t0 &&
			    ev->time_ns <= e[k].t1) {
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
		cpu = t->ev[got].cpu;
	}
	/*
	 * Another CPU may take a freed PFN inside the windows: only the
	 * operations' own CPU (we are pinned) can hold duplicates.
	 */
	for (i = 0; i < t->nr; i++) {
		const struct pt_event *ev = &t->ev[i];

		if (used[i] || ev->cpu != cpu ||
		    ev->time_ns + GT_SLACK_NS < lo || ev->time_ns > hi)
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
			e[n].type = strcmp(type, "alloc") ? PAGETRACE_EV_FREE :
							    PAGETRACE_EV_ALLOC;
			n++;
		} else if (strstr(line, " skip ")) {
			snprintf(skip, skiplen, "%.*s", (int)strcspn(line, "\n"),
				 line);
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
	struct gt_trace trace;
};

FIXTURE_VARIANT(gt)
{
	const char *op;
	const char *hook;
};

/*
 * One variant per allocator entry point pagetrace_gt.ko drives, under each
 * backend (the hook= parameter): both must see every operation once.
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
GT_OP(bulk_single);
GT_OP(vmalloc);
GT_OP(split_free);

FIXTURE_SETUP(gt)
{
	int ret;

	self->dev = -1;
	self->trace.ev = NULL;
	ret = gt_load_module();
	ASSERT_EQ(0, ret) TH_LOG("cannot load pagetrace_gt.ko: %s",
				 strerror(-ret));
	ASSERT_EQ(0, gt_pin_cpu0());
	ASSERT_EQ(0, gt_set_hook(variant->hook));
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev) TH_LOG("open /dev/pagetrace: %s (is pagetrace.ko loaded?)",
				       strerror(errno));
}

FIXTURE_TEARDOWN(gt)
{
	free(self->trace.ev);
	if (self->dev >= 0)
		close(self->dev);
	gt_set_hook("kprobe");
}

TEST_F(gt, entry_point)
{
	static char report[64 << 10];
	struct gt_expect e[128];
	char skip[256], err[512];
	const char *msg;
	int fd, n, bad;
	ssize_t len;

	fd = open(GT_DIR "/run", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)strlen(variant->op),
		  write(fd, variant->op, strlen(variant->op)));
	len = pread(fd, report, sizeof(report) - 1, 0);
	close(fd);
	ASSERT_LT(0, len);
	report[len] = '\0';

	msg = gt_collect(self->dev, &self->trace, err, sizeof(err));
	ASSERT_EQ(NULL, msg) TH_LOG("%s", msg);

	ASSERT_EQ(strcmp(variant->hook, "tracepoint") ?
		  PAGETRACE_BACKEND_KPROBE : PAGETRACE_BACKEND_TRACEPOINT,
		  self->trace.backend);

	n = gt_parse(report, e, 128, skip, sizeof(skip));
	if (n < 0)
		SKIP(return, "the allocation itself failed: %s", skip);
	ASSERT_LT(0, n) TH_LOG("no operations reported for %s", variant->op);

	bad = gt_match_all(_metadata, &self->trace, e, n);
	EXPECT_EQ(0, bad) TH_LOG("%d of %d operations not traced exactly once "
				 "(%zu events in the session)", bad, n,
				 self->trace.nr);
}

/*
 * A THP fault from userspace (vma_alloc_folio, order 9), and its free at
 * munmap.  The PFN comes from /proc/self/pagemap, which root may read.
 */
static int gt_pagemap_pfn(void *addr, uint64_t *pfn)
{
	uint64_t entry;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	off_t off = (uintptr_t)addr / getpagesize() * sizeof(entry);

	if (fd < 0)
		return -errno;
	if (pread(fd, &entry, sizeof(entry), off) != sizeof(entry)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	if (!(entry & (1ULL << 63)))
		return -ENOENT;
	*pfn = entry & ((1ULL << 55) - 1);
	return 0;
}

TEST(thp_fault)
{
	const size_t huge = 2UL << 20;
	struct gt_trace t = { 0 };
	struct gt_expect e = { .npages = 512 };
	uint64_t mono0, mono1, pfn;
	char err[512], *map, *p;
	const char *msg;
	int dev, ret;

	ASSERT_EQ(0, gt_pin_cpu0());
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);

	map = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p = (char *)(((uintptr_t)map + huge - 1) & ~(huge - 1));
	madvise(p, huge, MADV_HUGEPAGE);

	mono0 = gt_clock_ns(CLOCK_MONOTONIC);
	p[0] = 1;
	mono1 = gt_clock_ns(CLOCK_MONOTONIC);
	ret = gt_pagemap_pfn(p, &pfn);
	ASSERT_EQ(0, ret);
	if (pfn % 512 || gt_pagemap_pfn(p + huge - 4096, &e.pfn) ||
	    e.pfn != pfn + 511) {
		munmap(map, 2 * huge);
		close(dev);
		SKIP(return, "the fault got no THP (fragmented memory or THP off)");
	}
	munmap(map, 2 * huge);

	msg = gt_collect(dev, &t, err, sizeof(err));
	close(dev);
	ASSERT_EQ(NULL, msg) TH_LOG("%s", msg);

	/* Map the CLOCK_MONOTONIC window onto the trace clock via the header. */
	e.type = PAGETRACE_EV_ALLOC;
	e.pfn = pfn;
	e.t0 = mono0 - t.hdr.start_mono_ns + t.hdr.start_ns - 1000000;
	e.t1 = mono1 - t.hdr.start_mono_ns + t.hdr.start_ns + 1000000;
	EXPECT_EQ((size_t)1, gt_count(&t, &e)) TH_LOG("THP pfn %" PRIu64 " alloc", pfn);
	e.type = PAGETRACE_EV_FREE;
	e.t0 = mono1 - t.hdr.start_mono_ns + t.hdr.start_ns;
	e.t1 = UINT64_MAX;
	EXPECT_EQ((size_t)1, gt_count(&t, &e)) TH_LOG("THP pfn %" PRIu64 " free", pfn);
	free(t.ev);
}

/*
 * What each backend attaches, as the kprobe core lists it during a session:
 * the kprobe backend probes the allocator's entry and free functions; the
 * tracepoint backend leaves those to mm_page_alloc/mm_page_free and keeps
 * kprobes only for the bulk allocator, compaction and the reclaim scopes.
 */
static int gt_kprobes_list(char *buf, size_t len)
{
	int fd = open("/sys/kernel/debug/kprobes/list", O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return 0;
}

static int gt_listed(const char *list, const char *sym)
{
	char pat[128];

	snprintf(pat, sizeof(pat), " %s+0x", sym);
	return strstr(list, pat) != NULL;
}

TEST(backend_attach_points)
{
	static const char * const tp_free[] = {
		"free_pcp_prepare", "free_unref_page", "free_unref_folios",
	};
	static char list[1 << 16];
	struct utsname u;
	const char *alloc;
	unsigned int i;
	int dev;

	ASSERT_EQ(0, uname(&u));
	alloc = strncmp(u.release, "6.12.", 5) ? "__alloc_pages" :
						  "__alloc_pages_noprof";

	ASSERT_EQ(0, gt_set_hook("kprobe"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	EXPECT_TRUE(gt_listed(list, alloc)) TH_LOG("kprobe backend: %s not probed", alloc);
	EXPECT_TRUE(gt_listed(list, "post_alloc_hook"));
	EXPECT_TRUE(gt_listed(list, "__free_pages_ok"));
	EXPECT_TRUE(gt_listed(list, "shrink_folio_list"));

	ASSERT_EQ(0, gt_set_hook("tracepoint"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, gt_kprobes_list(list, sizeof(list)));
	close(dev);
	gt_set_hook("kprobe");
	EXPECT_FALSE(gt_listed(list, alloc)) TH_LOG("tracepoint backend probes %s", alloc);
	EXPECT_FALSE(gt_listed(list, "__free_pages_ok"));
	for (i = 0; i < sizeof(tp_free) / sizeof(tp_free[0]); i++)
		EXPECT_FALSE(gt_listed(list, tp_free[i])) TH_LOG("%s", tp_free[i]);
	/* No tracepoint covers these: kprobes stay. */
	EXPECT_TRUE(gt_listed(list, "post_alloc_hook"));
	EXPECT_TRUE(gt_listed(list, "shrink_folio_list"));

	/* A bad backend name is refused. */
	EXPECT_EQ(-EIO, gt_set_hook("ftrace"));
}

TEST_HARNESS_MAIN
