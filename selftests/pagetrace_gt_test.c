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
	if (ret >= 0)
		t->hdr = *pt_reader_header(r);
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

static size_t gt_count(const struct gt_trace *t, const struct gt_expect *e)
{
	size_t i, n = 0;

	for (i = 0; i < t->nr; i++) {
		const struct pt_event *ev = &t->ev[i];

		if (ev->type == e->type && ev->pfn == e->pfn &&
		    ev->npages == e->npages && ev->time_ns + GT_SLACK_NS >= e->t0 &&
		    ev->time_ns <= e->t1)
			n++;
	}
	return n;
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
};

/* One variant per allocator entry point pagetrace_gt.ko drives. */
#define GT_OP(name) FIXTURE_VARIANT_ADD(gt, name) { .op = #name }
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
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev) TH_LOG("open /dev/pagetrace: %s (is pagetrace.ko loaded?)",
				       strerror(errno));
}

FIXTURE_TEARDOWN(gt)
{
	free(self->trace.ev);
	if (self->dev >= 0)
		close(self->dev);
}

TEST_F(gt, entry_point)
{
	static char report[64 << 10];
	struct gt_expect e[128];
	char skip[256], err[512];
	const char *msg;
	int fd, n, i, bad = 0;
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

	n = gt_parse(report, e, 128, skip, sizeof(skip));
	if (n < 0)
		SKIP(return, "the allocation itself failed: %s", skip);
	ASSERT_LT(0, n) TH_LOG("no operations reported for %s", variant->op);

	for (i = 0; i < n; i++) {
		size_t got = gt_count(&self->trace, &e[i]);

		if (got == 1)
			continue;
		bad++;
		TH_LOG("%s: %s pfn=%" PRIu64 " npages=%" PRIu64
		       " in [%" PRIu64 ", %" PRIu64 "]: %zu events, want 1",
		       e[i].op, e[i].type == PAGETRACE_EV_ALLOC ? "alloc" : "free",
		       e[i].pfn, e[i].npages, e[i].t0, e[i].t1, got);
	}
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

TEST_HARNESS_MAIN
