// SPDX-License-Identifier: GPL-2.0
/*
 * Filters (filter_types, filter_orders, filter_nodes, filter_cgroup),
 * checked on the raw words of the stream and on the kernel's counters:
 *
 *  - types: filter_types=free records frees and no allocation.
 *  - orders: filter_orders=3 keeps pagetrace_gt's order-3 block, not its
 *    order-0 page, and no event of another order.
 *  - nodes: filter_nodes=1 keeps only pages of node 1 (the VM has two),
 *    in the events and in the snapshot; with filter_types=free as well,
 *    only their frees (two kinds of filter at once).
 *  - cgroup: filter_cgroup=/pt_filter keeps exactly the events of the
 *    process in that cgroup: every event's task record is its tgid, and
 *    the pages it faulted in are there; the same for a process in a
 *    cgroup below it, and with filter_types=alloc,reclaim as well none
 *    of its frees (two kinds of filter at once).
 *  - invalid values are refused when set; a cgroup removed after it was
 *    set fails the next session's open with ENOENT.
 *
 * Each session must account for every hook hit: over all CPUs,
 * events + lost + filtered = attempts + probe_missed, with filtered > 0.
 * The header says the trace is filtered, and how (REC_FILTER).
 *
 * Environment: PAGETRACE_GT_KO (see pagetrace_gt_test.c); pagetrace.ko
 * loaded, tasks=1 (the default).  The filters are reset after each test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/mempolicy.h>
#include <linux/pagetrace.h>
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define NR_CPUS_MAX	256
#define CG_ROOT		"/sys/fs/cgroup"
#define CG_NAME		"pt_filter"
#define CHILD_PAGES	64

/* One decoded event of the raw stream (snapshot chunks apart). */
struct raw_event {
	unsigned int	type;
	uint64_t	pfn;
	uint64_t	npages;
	int64_t		task;		/* -1 before a task record */
	bool		snapshot;
};

typedef void (*raw_fn)(const struct raw_event *e, void *arg);

/* Every event of the stream, in the order of the words. */
static int raw_walk(const void *s, size_t len, raw_fn fn, void *arg)
{
	const struct pagetrace_chunk *c;
	size_t off = 0;
	int ret;

	while ((ret = pt_st_next_chunk(s, len, &off, &c)) == 1) {
		const uint64_t *w = (const void *)(c + 1);
		struct raw_event e = {
			.task = -1,
			.snapshot = c->flags & PAGETRACE_CHUNK_SNAPSHOT,
		};
		unsigned int i;

		for (i = 2; i < c->nr_words; i++) {
			if (pagetrace_word_is_task(w[i]))
				e.task = pagetrace_word_tgid(w[i]);
			if (pagetrace_word_is_pid(w[i]) || !pagetrace_word_type(w[i]))
				continue;
			e.type = pagetrace_word_type(w[i]);
			e.pfn = pagetrace_word_pfn(w[i]);
			e.npages = pagetrace_word_npages(w[i]);
			if (pagetrace_word_is_large(w[i]))
				e.npages = w[++i];
			fn(&e, arg);
		}
	}
	return ret;
}

/* Counts of events by type, and what breaks a test's rule. */
struct tally {
	uint64_t	by_type[4];
	uint64_t	snapshot;
	uint64_t	bad;		/* events the filter should have left out */
	uint64_t	hits;		/* events a test looks for */
	char		why[160];
	/* the rule */
	unsigned int	order;		/* orders: the only one kept */
	uint64_t	want_pfn[2];	/* orders: kept, left out */
	uint64_t	node_start[8], node_end[8];	/* nodes: node 1's zones */
	unsigned int	nr_node_zones;
	int64_t		tgid;		/* cgroup: the only task */
	uint64_t	*child_pfns;
};

static void bad(struct tally *t, const struct raw_event *e, const char *what)
{
	if (!t->bad++)
		snprintf(t->why, sizeof(t->why), "%s: type %u pfn %" PRIu64
			 " npages %" PRIu64 " task %" PRId64, what, e->type,
			 e->pfn, e->npages, e->task);
}

static void count(const struct raw_event *e, void *arg)
{
	struct tally *t = arg;

	if (e->snapshot)
		t->snapshot++;
	else
		t->by_type[e->type]++;
}

FIXTURE(flt) {
	int		dev;
	void		*stream;
	size_t		len;
	char		cgroup[128];
	char		sub[160];
};

FIXTURE_SETUP(flt)
{
	self->dev = -1;
	self->stream = NULL;
	self->cgroup[0] = '\0';
	self->sub[0] = '\0';
}

FIXTURE_TEARDOWN(flt)
{
	if (self->dev >= 0)
		close(self->dev);
	free(self->stream);
	/* "all", not "": a write of nothing never reaches the module. */
	pt_st_set_param("filter_types", "all");
	pt_st_set_param("filter_orders", "all");
	pt_st_set_param("filter_nodes", "all");
	pt_st_set_param("filter_cgroup", "all");
	/* The child's cgroup first: a cgroup with children stays. */
	if (self->sub[0])
		rmdir(self->sub);
	if (self->cgroup[0])
		rmdir(self->cgroup);
}

static int start(FIXTURE_DATA(flt) *self)
{
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	return self->dev < 0 ? -errno : 0;
}

/*
 * Stop, check that every hook hit is accounted for and that some were
 * filtered, and read the stream.
 */
static void finish(struct __test_metadata *_metadata, FIXTURE_DATA(flt) *self)
{
	struct pagetrace_cpu_stats cpus[NR_CPUS_MAX];
	uint64_t missed = 0, in = 0, out = 0, filtered = 0;
	unsigned int i;

	ASSERT_EQ(0, ioctl(self->dev, PAGETRACE_IOC_STOP));
	memset(cpus, 0, sizeof(cpus));
	ASSERT_EQ(0, pt_st_stats(self->dev, cpus, NR_CPUS_MAX, &missed));
	for (i = 0; i < NR_CPUS_MAX; i++) {
		in += cpus[i].attempts;
		out += cpus[i].events + cpus[i].lost + cpus[i].filtered;
		filtered += cpus[i].filtered;
	}
	EXPECT_EQ(in + missed, out);
	EXPECT_LT(0, filtered);
	self->stream = pt_st_read_all(self->dev, &self->len);
	ASSERT_NE(NULL, self->stream);
	EXPECT_NE(0, ((const struct pagetrace_header *)self->stream)->flags &
		  PAGETRACE_FLAG_FILTERED);
}

static const struct pagetrace_rec_filter *rec_filter(FIXTURE_DATA(flt) *self)
{
	uint32_t size = 0;
	const struct pagetrace_rec_filter *f =
		pt_st_header_record(self->stream, self->len, PAGETRACE_REC_FILTER, &size);

	return f && size == sizeof(*f) ? f : NULL;
}

static void touch(size_t pages)
{
	size_t page = getpagesize(), i;
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	for (i = 0; i < pages; i++)
		p[i * page] = 1;
	munmap(p, pages * page);
	/* Some frees may wait in an LRU batch (7.x). */
	pt_st_drain_lru();
}

TEST_F(flt, types)
{
	const struct pagetrace_rec_filter *f;
	struct tally t = { 0 };

	ASSERT_EQ(0, pt_st_set_param("filter_types", "free"));
	ASSERT_EQ(0, start(self));
	touch(256);
	finish(_metadata, self);
	ASSERT_EQ(0, raw_walk(self->stream, self->len, count, &t));
	TH_LOG("%" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64 " reclaims",
	       t.by_type[1], t.by_type[2], t.by_type[3]);
	EXPECT_EQ(0, t.by_type[PAGETRACE_EV_ALLOC]);
	EXPECT_EQ(0, t.by_type[PAGETRACE_EV_RECLAIM]);
	EXPECT_LE(256, t.by_type[PAGETRACE_EV_FREE]);
	f = rec_filter(self);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(1U << PAGETRACE_EV_FREE, f->types);
	EXPECT_EQ(UINT64_MAX, f->orders);
	EXPECT_EQ(UINT64_MAX, f->nodes[0]);
	EXPECT_EQ(0, f->cgroup_id);
}

/* The pfn of a report's first "<op> alloc pfn=N" line, or 0. */
static uint64_t gt_alloc_pfn(const char *report)
{
	const char *l = strstr(report, " alloc pfn=");
	uint64_t pfn;

	return l && sscanf(l, " alloc pfn=%" SCNu64, &pfn) == 1 ? pfn : 0;
}

static void check_order(const struct raw_event *e, void *arg)
{
	struct tally *t = arg;

	if (e->snapshot)
		return;
	if (e->npages <= (1ULL << t->order) / 2 || e->npages > 1ULL << t->order)
		bad(t, e, "an event of another order");
	/* Types seen: the block may be reused once gt freed it (slab). */
	if (e->pfn == t->want_pfn[0] && e->npages == 1ULL << t->order)
		t->hits |= 1U << e->type;
	if (e->pfn == t->want_pfn[1] && e->npages == 1)
		bad(t, e, "pagetrace_gt's order-0 page");
}

TEST_F(flt, orders)
{
	static char report[1 << 14];
	const struct pagetrace_rec_filter *f;
	struct tally t = { .order = 3 };

	if (pt_st_gt_load())
		SKIP(return, "pagetrace_gt.ko cannot be loaded (PAGETRACE_GT_KO)");
	ASSERT_EQ(0, pt_st_set_param("filter_orders", "3"));
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, pt_st_gt_run("pages_order3", report, sizeof(report)));
	t.want_pfn[0] = gt_alloc_pfn(report);
	ASSERT_EQ(0, pt_st_gt_run("pages_order0", report, sizeof(report)));
	t.want_pfn[1] = gt_alloc_pfn(report);
	ASSERT_NE(0, t.want_pfn[0]);
	ASSERT_NE(0, t.want_pfn[1]);
	finish(_metadata, self);
	ASSERT_EQ(0, raw_walk(self->stream, self->len, check_order, &t));
	EXPECT_EQ(0, t.bad) {
		TH_LOG("%s", t.why);
	}
	/* Its allocation and its free. */
	EXPECT_EQ(1U << PAGETRACE_EV_ALLOC | 1U << PAGETRACE_EV_FREE,
		  t.hits & (1U << PAGETRACE_EV_ALLOC | 1U << PAGETRACE_EV_FREE));
	f = rec_filter(self);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(1ULL << 3, f->orders);
	EXPECT_EQ(0xeU, f->types);
}

static void check_node(const struct raw_event *e, void *arg)
{
	struct tally *t = arg;
	unsigned int i;

	for (i = 0; i < t->nr_node_zones; i++) {
		if (e->pfn >= t->node_start[i] && e->pfn + e->npages <= t->node_end[i]) {
			t->hits++;
			if (e->snapshot)
				t->snapshot++;
			return;
		}
	}
	bad(t, e, "a page outside node 1");
}

/* Node 1's zones, from the header's zone records. */
static void node1_zones(FIXTURE_DATA(flt) *self, struct tally *t)
{
	const struct pagetrace_header *h = self->stream;
	size_t off;

	for (off = sizeof(*h); off + sizeof(struct pagetrace_record) <= h->header_size;) {
		const struct pagetrace_record *rec =
			(const void *)((const char *)self->stream + off);

		if (rec->type == PAGETRACE_REC_END)
			break;
		if (rec->type == PAGETRACE_REC_ZONE) {
			const struct pagetrace_rec_zone *z = (const void *)(rec + 1);

			if (z->node == 1 && t->nr_node_zones < 8) {
				t->node_start[t->nr_node_zones] = z->start_pfn;
				t->node_end[t->nr_node_zones++] = z->end_pfn;
			}
		}
		off += sizeof(*rec) + ((rec->size + 7) & ~7U);
	}
}

/* 256 pages touched on node 1, then 256 on node 0; 0 or -errno. */
static int touch_both_nodes(void)
{
	unsigned long node0 = 1UL << 0, node1 = 1UL << 1;
	int ret = 0;

	/* Node 1 may have no CPU of its own: a policy, not the CPU, picks it. */
	if (syscall(SYS_set_mempolicy, MPOL_BIND, &node1, 8 * sizeof(node1)))
		return -errno;
	touch(256);
	if (syscall(SYS_set_mempolicy, MPOL_BIND, &node0, 8 * sizeof(node0)))
		ret = -errno;
	else
		touch(256);
	syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0);
	return ret;
}

/*
 * A session with the filter set: pages touched on both nodes, the stream
 * read, node 1's zones found, and every event given to @check.
 */
static void node_session(struct __test_metadata *_metadata,
			 FIXTURE_DATA(flt) *self, raw_fn check, struct tally *t)
{
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, touch_both_nodes());
	finish(_metadata, self);
	node1_zones(self, t);
	ASSERT_LT(0, t->nr_node_zones);
	ASSERT_EQ(0, raw_walk(self->stream, self->len, check, t));
}

TEST_F(flt, nodes)
{
	const struct pagetrace_rec_filter *f;
	struct tally t = { 0 };

	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "one NUMA node: boot the VM with --numa 2");
	ASSERT_EQ(0, pt_st_set_param("filter_nodes", "1"));
	node_session(_metadata, self, check_node, &t);
	TH_LOG("%" PRIu64 " events on node 1 (%" PRIu64 " in the snapshot)",
	       t.hits, t.snapshot);
	EXPECT_EQ(0, t.bad) {
		TH_LOG("%s", t.why);
	}
	EXPECT_LE(256, t.hits - t.snapshot);
	EXPECT_LT(0, t.snapshot);
	f = rec_filter(self);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(2, f->nodes[0]);
}

static void check_node_free(const struct raw_event *e, void *arg)
{
	struct tally *t = arg;

	if (!e->snapshot && e->type != PAGETRACE_EV_FREE)
		bad(t, e, "an event of another type");
	check_node(e, arg);
}

/*
 * A node filter with a type filter (two kinds at once, which take the
 * module's path for several kinds): only frees, only of node 1's pages;
 * the snapshot, which the node filter alone applies to, only node 1's.
 */
TEST_F(flt, nodes_and_types)
{
	const struct pagetrace_rec_filter *f;
	struct tally t = { 0 };

	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "one NUMA node: boot the VM with --numa 2");
	ASSERT_EQ(0, pt_st_set_param("filter_nodes", "1"));
	ASSERT_EQ(0, pt_st_set_param("filter_types", "free"));
	node_session(_metadata, self, check_node_free, &t);
	TH_LOG("%" PRIu64 " frees on node 1 (%" PRIu64 " snapshot blocks)",
	       t.hits - t.snapshot, t.snapshot);
	EXPECT_EQ(0, t.bad) {
		TH_LOG("%s", t.why);
	}
	EXPECT_LE(256, t.hits - t.snapshot);
	f = rec_filter(self);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(2, f->nodes[0]);
	EXPECT_EQ(1U << PAGETRACE_EV_FREE, f->types);
}

static void check_task(const struct raw_event *e, void *arg)
{
	struct tally *t = arg;
	unsigned int i;

	if (e->snapshot)
		return;
	if (e->task != t->tgid)
		bad(t, e, "an event of another task");
	for (i = 0; i < CHILD_PAGES; i++) {
		if (e->type == PAGETRACE_EV_ALLOC && t->child_pfns[i] >= e->pfn &&
		    t->child_pfns[i] < e->pfn + e->npages) {
			t->child_pfns[i] = 0;
			t->hits++;
		}
	}
}

/* Mount cgroup2 if need be and make @name: 0 or -errno. */
static int cgroup_make(char *path, size_t len)
{
	if (access(CG_ROOT "/cgroup.procs", F_OK)) {
		mkdir(CG_ROOT, 0755);
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL))
			return -errno;
	}
	snprintf(path, len, "%s/%s", CG_ROOT, CG_NAME);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * A child process in @sub (the filter's cgroup, or one below it) faults
 * in CHILD_PAGES pages while we touch pages of our own outside it, with
 * filter_cgroup=/pt_filter and @types as filter_types: every event kept
 * must be the child's and of a type kept, and its pages must be there.
 */
static void cgroup_run(struct __test_metadata *_metadata,
		       FIXTURE_DATA(flt) *self, const char *sub,
		       const char *types)
{
	const struct pagetrace_rec_filter *f;
	uint64_t pfns[CHILD_PAGES];
	struct tally t = { .child_pfns = pfns };
	int up[2], down[2], status;
	char procs[300], go = 'g';
	struct stat st;
	pid_t pid;

	if (cgroup_make(self->cgroup, sizeof(self->cgroup)))
		SKIP(return, "no cgroup v2 hierarchy to make a cgroup in");
	ASSERT_EQ(0, stat(self->cgroup, &st));
	if (sub) {
		snprintf(self->sub, sizeof(self->sub), "%s/%s", self->cgroup, sub);
		ASSERT_EQ(0, mkdir(self->sub, 0755) && errno != EEXIST ? -errno : 0);
	}
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t page = getpagesize();
		char *p;
		int i;

		if (read(down[0], &go, 1) != 1)
			_exit(1);
		p = mmap(NULL, CHILD_PAGES * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(1);
		for (i = 0; i < CHILD_PAGES; i++)
			p[i * page] = 1;
		for (i = 0; i < CHILD_PAGES; i++)
			if (pt_st_pagemap_pfn(p + i * page, &pfns[i]))
				_exit(1);
		if (write(up[1], pfns, sizeof(pfns)) != sizeof(pfns) ||
		    read(down[0], &go, 1) != 1)
			_exit(1);
		/* Its frees: kept unless @types leaves them out. */
		munmap(p, CHILD_PAGES * page);
		pt_st_drain_lru();
		_exit(0);
	}
	/* The child joins the cgroup before the session starts. */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs",
		 sub ? self->sub : self->cgroup);
	{
		FILE *fp = fopen(procs, "we");

		ASSERT_NE(NULL, fp);
		fprintf(fp, "%d\n", pid);
		ASSERT_EQ(0, fclose(fp));
	}
	ASSERT_EQ(0, pt_st_set_param("filter_cgroup", "/" CG_NAME));
	if (types)
		ASSERT_EQ(0, pt_st_set_param("filter_types", types));
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(1, write(down[1], &go, 1));
	ASSERT_EQ(sizeof(pfns), read(up[0], pfns, sizeof(pfns)));
	touch(128);	/* ours, outside the cgroup: left out */
	ASSERT_EQ(1, write(down[1], &go, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	finish(_metadata, self);

	t.tgid = pid;
	ASSERT_EQ(0, raw_walk(self->stream, self->len, check_task, &t));
	ASSERT_EQ(0, raw_walk(self->stream, self->len, count, &t));
	TH_LOG("%" PRIu64 " of the child's %d pages found; %" PRIu64
	       " allocs, %" PRIu64 " frees", t.hits, CHILD_PAGES,
	       t.by_type[PAGETRACE_EV_ALLOC], t.by_type[PAGETRACE_EV_FREE]);
	EXPECT_EQ(0, t.bad) {
		TH_LOG("%s", t.why);
	}
	EXPECT_EQ(CHILD_PAGES, t.hits);
	/*
	 * Some, not all, of its pages' frees are its own: an LRU batch may
	 * be drained by a kworker, whose frees are left out.
	 */
	if (types) {
		EXPECT_EQ(0, t.by_type[PAGETRACE_EV_FREE]);
	} else {
		EXPECT_LT(0, t.by_type[PAGETRACE_EV_FREE]);
	}
	f = rec_filter(self);
	ASSERT_NE(NULL, f);
	EXPECT_EQ((uint64_t)st.st_ino, f->cgroup_id);
}

TEST_F(flt, cgroup)
{
	cgroup_run(_metadata, self, NULL, NULL);
}

/* A task in a cgroup below the filter's is kept too. */
TEST_F(flt, cgroup_below)
{
	cgroup_run(_metadata, self, "below", NULL);
}

/*
 * Two kinds of filter at once (a session tests each): the child's
 * allocations, not its frees.
 */
TEST_F(flt, cgroup_and_types)
{
	cgroup_run(_metadata, self, NULL, "alloc,reclaim");
}

TEST_F(flt, cgroup_gone)
{
	if (cgroup_make(self->cgroup, sizeof(self->cgroup)))
		SKIP(return, "no cgroup v2 hierarchy to make a cgroup in");
	ASSERT_EQ(0, pt_st_set_param("filter_cgroup", "/" CG_NAME));
	ASSERT_EQ(0, rmdir(self->cgroup));
	self->cgroup[0] = '\0';
	EXPECT_EQ(-ENOENT, start(self));
}

TEST_F(flt, invalid)
{
	char buf[64] = { 0 };
	int fd;

	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_types", "bogus"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_types", "alloc,bogus"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_orders", "64"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_orders", "x"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_nodes", "abc"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("filter_cgroup", "relative"));
	EXPECT_EQ(-ENOENT, pt_st_set_param("filter_cgroup", "/no/such/cgroup"));
	/* Good values are taken and read back in a canonical form. */
	EXPECT_EQ(0, pt_st_set_param("filter_types", "free,alloc"));
	fd = open("/sys/module/pagetrace/parameters/filter_types", O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_LT(0, read(fd, buf, sizeof(buf) - 1));
	close(fd);
	EXPECT_STREQ("alloc,free\n", buf);
	EXPECT_EQ(0, pt_st_set_param("filter_orders", "0-2,9"));
	/* echo > filter_orders: everything again. */
	EXPECT_EQ(0, pt_st_set_param("filter_orders", "\n"));
	fd = open("/sys/module/pagetrace/parameters/filter_orders", O_RDONLY);
	ASSERT_LE(0, fd);
	memset(buf, 0, sizeof(buf));
	EXPECT_LT(0, read(fd, buf, sizeof(buf) - 1));
	close(fd);
	EXPECT_STREQ("0-63\n", buf);
}

TEST_HARNESS_MAIN
