// SPDX-License-Identifier: GPL-2.0
/*
 * Migration: when a page of ours moves (move_pages(2) to another node, or
 * compaction), the trace must show the new page's allocation and the old
 * page's free, each exactly once, while the move happens.  The PFNs before
 * and after come from /proc/self/pagemap.  THP: a huge page fault, then a
 * split, then frees of the split pages one by one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define PAGE		4096UL
#define MPOL_MF_MOVE	(1 << 1)

/* Whether @ev is of @type, covers @pfn (with @npages_want, if not 0), in [t0, t1]. */
static bool covers(const struct pgtrace_event *ev, unsigned int type,
		   uint64_t pfn, uint64_t npages_want, uint64_t t0, uint64_t t1)
{
	return ev->type == type && pfn >= ev->pfn &&
	       pfn < ev->pfn + ev->npages &&
	       (!npages_want || ev->npages == npages_want) &&
	       ev->time_ns + 256 >= t0 && ev->time_ns <= t1;
}

/* Events of @type covering @pfn with time in [t0, t1]. */
static size_t count_covering(const struct pt_st_trace *t, unsigned int type,
			     uint64_t pfn, uint64_t npages_want, uint64_t t0,
			     uint64_t t1)
{
	size_t i, n = 0;

	for (i = 0; i < t->nr; i++)
		n += covers(&t->ev[i], type, pfn, npages_want, t0, t1);
	return n;
}

/* The first such event, or NULL. */
static const struct pgtrace_event *
first_covering(const struct pt_st_trace *t, unsigned int type, uint64_t pfn,
	       uint64_t t0, uint64_t t1)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (covers(&t->ev[i], type, pfn, 0, t0, t1))
			return &t->ev[i];
	return NULL;
}

static int nr_nodes(void)
{
	int n = 0;
	char path[64];

	for (;;) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

/* Fault in @len bytes of anonymous memory without THP; PFNs to @pfn. */
static char *populate(size_t len, uint64_t *pfn)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len / PAGE; i++) {
		p[i * PAGE] = 1;
		if (pt_st_pagemap_pfn(p + i * PAGE, &pfn[i]))
			pfn[i] = 0;
	}
	return p;
}

/*
 * Check each page that moved from old[i] to now[i]: its old page freed once
 * and its new page allocated once, inside [t0, t1].  Returns pages moved.
 */
static size_t check_moves(struct __test_metadata *_metadata,
			  const struct pt_st_trace *t, const uint64_t *old,
			  const uint64_t *now, size_t n, uint64_t t0,
			  uint64_t t1)
{
	size_t i, moved = 0, bad = 0;

	for (i = 0; i < n; i++) {
		size_t frees, allocs;

		if (!old[i] || !now[i] || old[i] == now[i])
			continue;
		moved++;
		frees = count_covering(t, PGTRACE_EV_FREE, old[i], 1, t0, t1);
		allocs = count_covering(t, PGTRACE_EV_ALLOC, now[i], 0, t0, t1);
		if (frees == 1 && allocs == 1)
			continue;
		if (bad++ < 5)
			TH_LOG("page %zu: %#" PRIx64 " -> %#" PRIx64
			       ": %zu frees of the old, %zu allocs of the new",
			       i, old[i], now[i], frees, allocs);
	}
	EXPECT_EQ(0, bad) TH_LOG("%zu of %zu moved pages not traced once", bad,
				 moved);
	return moved;
}

/*
 * Whose the allocations of the moved pages' new pages are: compaction run
 * by a write to /proc/sys/vm/compact_memory runs in the writing task, so
 * each must be ours (@tgid), or kcompactd's if it woke meanwhile; none the
 * kernel's (0), as a hook whose handler runs as an NMI (a breakpoint
 * kprobe) would make it if it took the handler's context for the
 * compaction's.  Only with task records (the header's flag).
 */
static void check_move_tasks(struct __test_metadata *_metadata,
			     const struct pt_st_trace *t, const uint64_t *old,
			     const uint64_t *now, size_t n, uint64_t t0,
			     uint64_t t1, int64_t tgid)
{
	size_t i, ours = 0, kernel = 0, other = 0;
	int64_t other_task = 0;

	if (!(t->hdr.flags & PAGETRACE_FLAG_TASKS))
		return;
	for (i = 0; i < n; i++) {
		const struct pgtrace_event *ev;

		if (!old[i] || !now[i] || old[i] == now[i])
			continue;
		ev = first_covering(t, PGTRACE_EV_ALLOC, now[i], t0, t1);
		if (!ev)
			continue;	/* check_moves() reports it */
		if (ev->task == tgid) {
			ours++;
		} else if (ev->task <= 0) {
			if (kernel++ < 5)
				TH_LOG("page %zu: %#" PRIx64 " allocated by task %" PRId64,
				       i, now[i], ev->task);
		} else {
			other++;
			other_task = ev->task;
		}
	}
	TH_LOG("moved pages' allocations: %zu ours, %zu another task's (%" PRId64 "), %zu the kernel's",
	       ours, other, other_task, kernel);
	EXPECT_EQ(0, kernel);
	EXPECT_LT(0, ours);
}

/*
 * The window between two marks, widened by 1 ms each side for events of
 * other CPUs (a freed page taken by another CPU): false, logged, if a
 * mark's allocation is not in the trace.
 */
static bool mark_window(struct __test_metadata *_metadata,
			const struct pt_st_trace *t, const struct pt_st_mark *m0,
			const struct pt_st_mark *m1, uint64_t *t0, uint64_t *t1)
{
	*t0 = pt_st_mark_time(t, m0);
	*t1 = pt_st_mark_time(t, m1);
	if (*t0 && *t1) {
		*t0 -= 1000000;
		*t1 += 1000000;
		return true;
	}
	TH_LOG("marks %#" PRIx64 ", %#" PRIx64 " not allocated in the trace",
	       m0->pfn, m1->pfn);
	return false;
}

FIXTURE(mig)
{
	int dev;
	struct pt_st_trace t;
};

FIXTURE_SETUP(mig)
{
	self->t.ev = NULL;
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev) TH_LOG("open /dev/pagetrace: %s", strerror(errno));
}

FIXTURE_TEARDOWN(mig)
{
	pt_st_trace_free(&self->t);
	close(self->dev);
}

/* move_pages(2) to node 1: alloc of the target, free of the source. */
TEST_F(mig, move_pages)
{
	const size_t n = 256;
	uint64_t old[256], now[256], t0, t1;
	struct pt_st_mark m0, m1;
	int nodes[256], status[256];
	void *addrs[256];
	size_t i, moved;
	char *p;

	if (nr_nodes() < 2)
		SKIP(return, "one NUMA node: nowhere to move pages to");
	p = populate(n * PAGE, old);
	ASSERT_NE(NULL, p);
	for (i = 0; i < n; i++) {
		addrs[i] = p + i * PAGE;
		nodes[i] = 1;
	}
	/*
	 * A session of its own, from here, as for compaction below: its
	 * header's clock pair (monotonic and trace time, which the window
	 * below converts with) is taken right before the move, and the
	 * fixture's session has been filling its buffers, unread, since the
	 * test started.  With the fixture's session, on 5.10, both events of
	 * the last 46 of 256 moves were missing from the window once.  The
	 * window is taken between two marks on the trace clock: converted
	 * from CLOCK_MONOTONIC, it missed the last 15 (5.10) and 106 (7.3)
	 * of the moves' events once, with the TSC marked unstable.
	 */
	close(self->dev);
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev) TH_LOG("open /dev/pagetrace: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_mark(&m0));
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, n, addrs, nodes, status,
			     MPOL_MF_MOVE)) TH_LOG("move_pages: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_mark(&m1));
	for (i = 0; i < n; i++)
		if (pt_st_pagemap_pfn(addrs[i], &now[i]))
			now[i] = 0;
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t)) TH_LOG("%s", self->t.err);
	munmap(p, n * PAGE);
	ASSERT_TRUE(mark_window(_metadata, &self->t, &m0, &m1, &t0, &t1));

	moved = check_moves(_metadata, &self->t, old, now, n, t0, t1);
	TH_LOG("%zu of %zu pages moved to node 1", moved, n);
	EXPECT_LE(n * 9 / 10, moved);
}

/*
 * Read a small sysctl into @buf (NUL-terminated), then write @val to it.
 * Returns 0, or -1 if it cannot be read or written.
 */
static int sysctl_swap(const char *path, char *buf, size_t len, const char *val)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	if (n <= 0 || pwrite(fd, val, strlen(val), 0) != (ssize_t)strlen(val)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

#define PROACTIVENESS	"/proc/sys/vm/compaction_proactiveness"

/* The PFNs of the kept (even) pages of @p's @n, 0 where there is none. */
static void kept_pfns(const char *p, size_t n, uint64_t *now)
{
	size_t i;

	for (i = 0; i < n; i += 2)
		if (pt_st_pagemap_pfn(p + i * PAGE, &now[i]))
			now[i] = 0;
}

/*
 * Compact every zone, in a session of its own: open *@dev, write @fd
 * (/proc/sys/vm/compact_memory) between marks @m0 and @m1, close @fd and
 * put proactive compaction back to @proactive (if @restore).  Returns 0,
 * or -errno of the open or the write; in *@ns how long the write took.
 */
static int compact_in_session(int fd, int *dev, struct pt_st_mark *m0,
			      struct pt_st_mark *m1, bool restore,
			      const char *proactive, uint64_t *ns)
{
	char ignored[32];
	uint64_t mono;
	int err = 0;

	*dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	if (*dev < 0)
		err = -errno;
	mono = pt_st_mono_ns();
	pt_st_mark(m0);
	if (!err && write(fd, "1", 1) != 1)
		err = -errno;
	pt_st_mark(m1);
	*ns = pt_st_mono_ns() - mono;
	close(fd);
	if (restore)
		sysctl_swap(PROACTIVENESS, ignored, sizeof(ignored), proactive);
	return err;
}

/*
 * Compaction moves movable pages towards the end of the zone: whatever of
 * ours it moved must show the new page's allocation (compaction's own:
 * split_map_pages on 5.10 and 6.1, compaction_alloc since 6.9) and the old
 * page's free.
 * Compacting 2 GiB under TCG takes seconds, and over the harness's default
 * 30 s on the KASAN/lockdep kernel of make check-debug.  Proactive
 * compaction is off meanwhile: kcompactd would otherwise move our pages
 * as soon as the holes appear, before our window.  The compaction gets a
 * session of its own: the fixture's has been filling its buffers, unread,
 * since the test started (on the debug kernel, populating and punching the
 * holes takes long enough for the flush timer to fill them all with
 * partial chunks, and the compaction's events would be lost).
 */
TEST_F_TIMEOUT(mig, compaction, 300)
{
	const size_t n = 16384;		/* 64 MiB, every other page kept */
	uint64_t *old = calloc(n, sizeof(*old)), *now = calloc(n, sizeof(*now));
	char proactive[32];
	bool restore;
	uint64_t t0, t1, ns;
	struct pt_st_mark m0 = { 0 }, m1 = { 0 };
	size_t i, moved;
	char *p;
	int fd, err;

	ASSERT_TRUE(old && now);
	fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "no /proc/sys/vm/compact_memory");
	p = populate(n * PAGE, old);
	ASSERT_NE(NULL, p);
	restore = !sysctl_swap(PROACTIVENESS, proactive, sizeof(proactive), "0");
	/* Holes everywhere, so that compaction has work to do. */
	for (i = 1; i < n; i += 2) {
		madvise(p + i * PAGE, PAGE, MADV_DONTNEED);
		old[i] = 0;
	}
	close(self->dev);
	err = compact_in_session(fd, &self->dev, &m0, &m1, restore, proactive,
				 &ns);
	ASSERT_EQ(0, err) TH_LOG("open /dev/pagetrace, or compact: %s",
				 strerror(-err));
	kept_pfns(p, n, now);
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t)) TH_LOG("%s", self->t.err);
	munmap(p, n * PAGE);
	ASSERT_TRUE(mark_window(_metadata, &self->t, &m0, &m1, &t0, &t1));

	moved = check_moves(_metadata, &self->t, old, now, n, t0, t1);
	check_move_tasks(_metadata, &self->t, old, now, n, t0, t1, getpid());
	free(old);
	free(now);
	TH_LOG("compaction moved %zu of our %zu pages in %.1f s", moved, n / 2,
	       ns / 1e9);
	if (!moved)
		SKIP(return, "compaction moved none of our pages");
}

/*
 * THP: a huge page fault (one order-9 allocation), a split through
 * debugfs, then MADV_DONTNEED on half of it frees those 256 pages one by
 * one, and munmap the rest.
 */
TEST_F(mig, thp_split)
{
	const size_t huge = 2UL << 20;
	struct pt_st_mark m0, m1, m3, m4;
	uint64_t pfn, last;
	char req[128], *map, *p;
	size_t i, bad = 0;
	ssize_t n;
	int fd;

	map = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p = (char *)(((uintptr_t)map + huge - 1) & ~(huge - 1));
	madvise(p, huge, MADV_HUGEPAGE);
	ASSERT_EQ(0, pt_st_mark(&m0));
	p[0] = 1;
	ASSERT_EQ(0, pt_st_mark(&m1));
	if (pt_st_pagemap_pfn(p, &pfn) || pfn % 512 ||
	    pt_st_pagemap_pfn(p + huge - PAGE, &last) || last != pfn + 511) {
		munmap(map, 2 * huge);
		SKIP(return, "the fault got no THP (THP off or memory fragmented)");
	}

	fd = open("/sys/kernel/debug/split_huge_pages", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		munmap(map, 2 * huge);
		SKIP(return, "no debugfs split_huge_pages to split with");
	}
	snprintf(req, sizeof(req), "%d,%#lx,%#lx", getpid(), (unsigned long)p,
		 (unsigned long)(p + huge));
	n = write(fd, req, strlen(req));
	close(fd);
	if (n < 0 && errno == EINVAL) {
		/* Before 5.13 it splits every THP or nothing ("1"). */
		munmap(map, 2 * huge);
		SKIP(return, "split_huge_pages takes no pid,start,end here (before 5.13)");
	}
	ASSERT_LT(0, n);

	ASSERT_EQ(0, madvise(p + huge / 2, huge / 2, MADV_DONTNEED));
	ASSERT_EQ(0, pt_st_mark(&m3));
	munmap(map, 2 * huge);
	ASSERT_EQ(0, pt_st_mark(&m4));
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t)) TH_LOG("%s", self->t.err);
	ASSERT_TRUE(pt_st_mark_time(&self->t, &m0) &&
		    pt_st_mark_time(&self->t, &m1) &&
		    pt_st_mark_time(&self->t, &m3) &&
		    pt_st_mark_time(&self->t, &m4))
		TH_LOG("a mark page's allocation is not in the trace");

#define TR(m) pt_st_mark_time(&self->t, &m)
	EXPECT_EQ(1, count_covering(&self->t, PGTRACE_EV_ALLOC, pfn, 512,
				    TR(m0) - 1000000, TR(m1) + 1000000));
	EXPECT_EQ(0, count_covering(&self->t, PGTRACE_EV_FREE, pfn, 512, 0, UINT64_MAX))
		TH_LOG("the split THP was freed whole");
	/*
	 * Each subpage is freed once, on its own, after the fault: at the
	 * split itself if it was never written (6.12 maps those to the
	 * shared zero page), else at MADV_DONTNEED or munmap.
	 */
	for (i = 0; i < 512; i++) {
		if (count_covering(&self->t, PGTRACE_EV_FREE, pfn + i, 1, TR(m1),
				   TR(m4) + 1000000) != 1 && bad++ < 5)
			TH_LOG("subpage %zu (pfn %#" PRIx64 "): not freed once",
			       i, pfn + i);
	}
	/* The upper half, written to nowhere but unmapped by MADV_DONTNEED. */
	for (i = 256; i < 512; i++) {
		if (count_covering(&self->t, PGTRACE_EV_FREE, pfn + i, 1, 0,
				   TR(m3) + 1000000) != 1 && bad++ < 5)
			TH_LOG("subpage %zu: not freed by MADV_DONTNEED", i);
	}
#undef TR
	EXPECT_EQ(0, bad);
}

/*
 * A migration that fails gives its target back: compaction_free() frees
 * it (on 6.12 through the out-of-line free_pages_prepare(), which has no
 * ftrace site, so the kprobe backend's hook there is a breakpoint, whose
 * handler runs as an NMI).  Pages of a file held by a pipe (splice(2)
 * takes a reference on each) cannot move; compaction leaves anonymous
 * pages with extra references alone, but tries a file's: it allocates a
 * target for each, fails, and frees it, in the task that asked for the
 * compaction, then hands it out again or releases it (an allocation of
 * ours once more).  Each such free must be of a task, under either
 * backend.  Before 6.9 compaction_free() keeps the target on its list
 * without a free: the few chains found there (1 to 3 a run on 5.10 and
 * 6.1) are pages freed and taken again by the compaction otherwise.
 */
#define PIPES		4
#define PIPE_PAGES	4096

FIXTURE(pinned)
{
	int dev;
	int pipes[PIPES][2];
	struct pt_st_trace t;
};

FIXTURE_VARIANT(pinned)
{
	const char *hook;
	unsigned int backend;
};

FIXTURE_VARIANT_ADD(pinned, kprobe) { "kprobe", PAGETRACE_BACKEND_KPROBE };
FIXTURE_VARIANT_ADD(pinned, tracepoint) {
	"tracepoint", PAGETRACE_BACKEND_TRACEPOINT
};

FIXTURE_SETUP(pinned)
{
	int i;

	self->t.ev = NULL;
	self->dev = -1;
	for (i = 0; i < PIPES; i++)
		self->pipes[i][0] = self->pipes[i][1] = -1;
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	ASSERT_EQ(0, pt_st_set_hook(variant->hook));
}

FIXTURE_TEARDOWN(pinned)
{
	int i;

	for (i = 0; i < PIPES; i++) {
		if (self->pipes[i][0] >= 0)
			close(self->pipes[i][0]);
		if (self->pipes[i][1] >= 0)
			close(self->pipes[i][1]);
	}
	pt_st_trace_free(&self->t);
	if (self->dev >= 0)
		close(self->dev);
	pt_st_set_hook("auto");
}

/* The trace being sorted by sort_by_pfn() (qsort() takes no context). */
static const struct pt_st_trace *sort_trace;

/* Event indexes by PFN, then time, then place in the stream. */
static int sort_by_pfn(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const struct pgtrace_event *x = &sort_trace->ev[a];
	const struct pgtrace_event *y = &sort_trace->ev[b];

	if (x->pfn != y->pfn)
		return x->pfn < y->pfn ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Whether event @e is an allocation of ours inside [t0, t1]. */
static bool ours_in(const struct pgtrace_event *e, int64_t tgid, uint64_t t0,
		    uint64_t t1)
{
	return e->type == PGTRACE_EV_ALLOC && e->task == tgid &&
	       e->time_ns + 256 >= t0 && e->time_ns <= t1;
}

/*
 * The targets compaction gave back: a page we allocated inside [t0, t1],
 * freed, then allocated by us again (compaction hands it out once more, or
 * marks it allocated to release it).  Each such free must be of a task:
 * the regression this looks for made it the kernel's (tgid 0).  Frees of
 * other tasks are logged (a transient reference may make another task the
 * one that drops the target).  Returns how many there were.
 */
static size_t check_given_back(struct __test_metadata *_metadata,
			       const struct pt_st_trace *t, int64_t tgid,
			       uint64_t t0, uint64_t t1)
{
	size_t *idx = malloc((t->nr ? t->nr : 1) * sizeof(*idx));
	size_t i, back = 0, bad = 0, other = 0;

	EXPECT_NE(NULL, idx) TH_LOG("no memory for %zu indexes", t->nr);
	if (!idx)
		return 0;
	for (i = 0; i < t->nr; i++)
		idx[i] = i;
	sort_trace = t;
	qsort(idx, t->nr, sizeof(*idx), sort_by_pfn);
	for (i = 0; i + 2 < t->nr; i++) {
		const struct pgtrace_event *a = &t->ev[idx[i]];
		const struct pgtrace_event *f = &t->ev[idx[i + 1]];
		const struct pgtrace_event *again = &t->ev[idx[i + 2]];

		if (!ours_in(a, tgid, t0, t1) || f->pfn != a->pfn ||
		    f->type == PGTRACE_EV_ALLOC || again->pfn != a->pfn ||
		    !ours_in(again, tgid, t0, t1))
			continue;
		back++;
		if (f->task == tgid)
			continue;
		if (f->task > 0) {
			other++;
			continue;
		}
		if (bad++ < 5)
			TH_LOG("pfn %#" PRIx64 ": allocated by us, freed (%s) by task %" PRId64,
			       a->pfn, pgtrace_event_type_name(f->type), f->task);
	}
	free(idx);
	if (other)
		TH_LOG("%zu targets given back freed by another task", other);
	EXPECT_EQ(0, bad) TH_LOG("%zu of %zu targets given back freed by no task",
				 bad, back);
	return back;
}

TEST_F_TIMEOUT(pinned, target_given_back, 300)
{
	const size_t n = 2 * PIPES * PIPE_PAGES; /* 128 MiB of shmem */
	char proactive[32];
	struct pt_st_mark m0 = { 0 }, m1 = { 0 };
	uint64_t t0, t1, ns;
	size_t i, k, back = 0;
	int fd, mfd, err, try;
	bool restore;
	char *p;

	if (access("/proc/sys/vm/compact_memory", W_OK))
		SKIP(return, "no /proc/sys/vm/compact_memory");
	mfd = memfd_create("pinned", MFD_CLOEXEC);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, n * PAGE));
	p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, n * PAGE, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * PAGE] = 1;
	/* Holes, then every kept page into a pipe. */
	for (i = 1; i < n; i += 2)
		ASSERT_EQ(0, fallocate(mfd, FALLOC_FL_PUNCH_HOLE |
				       FALLOC_FL_KEEP_SIZE, i * PAGE, PAGE));
	for (k = 0, i = 0; k < PIPES; k++) {
		size_t nr;
		long size;

		ASSERT_EQ(0, pipe2(self->pipes[k], O_CLOEXEC));
		size = fcntl(self->pipes[k][1], F_SETPIPE_SZ, PIPE_PAGES * PAGE);
		ASSERT_LE((long)(PIPE_PAGES * PAGE), size)
			TH_LOG("F_SETPIPE_SZ: %s", strerror(errno));
		for (nr = 0; nr < PIPE_PAGES && i < n; nr++, i += 2) {
			loff_t off = i * PAGE;

			ASSERT_EQ((ssize_t)PAGE,
				  splice(mfd, &off, self->pipes[k][1], NULL,
					 PAGE, 0));
		}
	}
	/*
	 * Compaction may find nothing to do on a node our pages share with
	 * little free memory: up to three sessions, each its own compaction.
	 */
	for (try = 0; try < 3 && !back; try++) {
		if (try) {
			pt_st_trace_free(&self->t);
			close(self->dev);
			self->dev = -1;
		}
		fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
		ASSERT_LE(0, fd);
		/*
		 * Proactive compaction off only now, past the asserts: our
		 * pages cannot move before the window, and kcompactd's
		 * targets are not ours.
		 */
		restore = !sysctl_swap(PROACTIVENESS, proactive,
				       sizeof(proactive), "0");
		err = compact_in_session(fd, &self->dev, &m0, &m1, restore,
					 proactive, &ns);
		ASSERT_EQ(0, err) TH_LOG("open /dev/pagetrace, or compact: %s",
					 strerror(-err));
		ASSERT_EQ(0, pt_st_collect(self->dev, &self->t))
			TH_LOG("%s", self->t.err);
		ASSERT_EQ(variant->backend, self->t.backend);
		if (!(self->t.hdr.flags & PAGETRACE_FLAG_TASKS))
			SKIP(return, "no task records (the tasks parameter is 0)");
		ASSERT_TRUE(mark_window(_metadata, &self->t, &m0, &m1, &t0, &t1));
		back = check_given_back(_metadata, &self->t, getpid(), t0, t1);
		TH_LOG("%s: compaction gave back %zu targets in %.1f s",
		       variant->hook, back, ns / 1e9);
	}
	munmap(p, n * PAGE);
	close(mfd);
	if (!back)
		SKIP(return, "no target given back, freed and taken again in three compactions (before 6.9 compaction frees none)");
}

TEST_HARNESS_MAIN
