// SPDX-License-Identifier: GPL-2.0
/*
 * Reclaim is recorded as reclaim (type 3, the Go tracer's scavenge), and
 * only reclaim: pages of known PFNs in a memory cgroup are pushed out by
 * memory.reclaim (memory.high before 5.19) and must come back as reclaim events, while drop_caches
 * must free them as plain frees.  Readahead filling the same file's cache
 * must show up as one allocation per page.
 *
 * The page cache lives on ext4 over a loop device (tmpfs pages cannot be
 * reclaimed without swap).  The PFNs come from /proc/self/pagemap of a
 * shared read-only mapping of the file.  Needs root, cgroup v2 with the
 * memory controller, loop, ext4 and busybox (mke2fs, mount).
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/pagetrace.h>
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG		CG_ROOT "/pagetrace-reclaim"
#define FS_IMG		"/tmp/pagetrace-fs.img"
#define FS_MNT		"/tmp/pagetrace-fs"
#define DATA		FS_MNT "/data"
#define DATA_SIZE	(16UL << 20)
#define NPAGES		(DATA_SIZE / 4096)

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (read(fd, buf, sizeof(buf) - 1) <= 0) {
		close(fd);
		return -EIO;
	}
	close(fd);
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static int run(const char *cmd)
{
	int ret = system(cmd);

	return ret == 0 ? 0 : -1;
}

/* A fresh ext4-mounted loop device and a cgroup we live in. */
static const char *setup_world(void)
{
	char pid[32];
	int fd;

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return "cannot mount cgroup2";
	if (write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return "cannot enable the memory controller";
	if (mkdir(CG, 0755) && errno != EEXIST)
		return "cannot create the cgroup";
	if (write_file(CG "/memory.max", "268435456"))
		return "cannot set memory.max";
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(CG "/cgroup.procs", pid))
		return "cannot join the cgroup";

	umount(FS_MNT);
	unlink(FS_IMG);
	fd = open(FS_IMG, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 64 << 20))
		return "cannot create the image";
	close(fd);
	mkdir(FS_MNT, 0755);
	/* busybox mke2fs wants a block device: attach the image first. */
	if (run("set -e; d=$(losetup -f); losetup $d " FS_IMG "; "
		"mke2fs -q $d >/dev/null 2>&1; mount -t ext4 $d " FS_MNT))
		return "cannot make and mount ext4 over loop";
	return NULL;
}

static void teardown_world(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	write_file(CG_ROOT "/cgroup.procs", pid);
	rmdir(CG);
	umount(FS_MNT);
	run("for d in /dev/loop*; do losetup -d $d 2>/dev/null; done; true");
	unlink(FS_IMG);
}

/* Write the data file and push it out of the page cache. */
static const char *make_data(void)
{
	static char chunk[1 << 16];
	size_t done;
	int fd;

	memset(chunk, 0x5a, sizeof(chunk));
	fd = open(DATA, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return "cannot create the data file";
	for (done = 0; done < DATA_SIZE; done += sizeof(chunk)) {
		if (write(fd, chunk, sizeof(chunk)) != sizeof(chunk)) {
			close(fd);
			return "cannot write the data file";
		}
	}
	fsync(fd);
	close(fd);
	sync();
	if (write_file("/proc/sys/vm/drop_caches", "3"))
		return "cannot drop caches";
	return NULL;
}

/*
 * Read the file through a shared mapping (readahead fills the cache) and
 * collect the PFN of every page.  Returns how many pages were present.
 */
static size_t load_pfns(uint64_t *pfns)
{
	int fd = open(DATA, O_RDONLY | O_CLOEXEC);
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	volatile char sink = 0;
	size_t i, n = 0;
	char *map;

	if (fd < 0 || pm < 0)
		return 0;
	map = mmap(NULL, DATA_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		close(pm);
		return 0;
	}
	for (i = 0; i < NPAGES; i++)
		sink += map[i * 4096];
	(void)sink;
	for (i = 0; i < NPAGES; i++) {
		uint64_t e;
		off_t off = ((uintptr_t)map / 4096 + i) * sizeof(e);

		if (pread(pm, &e, sizeof(e), off) == sizeof(e) &&
		    (e & (1ULL << 63)))
			pfns[n++] = e & ((1ULL << 55) - 1);
	}
	munmap(map, DATA_SIZE);
	close(pm);
	return n;
}

/* Pages of the data file still in the page cache. */
static size_t resident_pages(void)
{
	unsigned char vec[NPAGES];
	int fd = open(DATA, O_RDONLY | O_CLOEXEC);
	size_t i, n = 0;
	void *map;

	if (fd < 0)
		return SIZE_MAX;
	map = mmap(NULL, DATA_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return SIZE_MAX;
	if (mincore(map, DATA_SIZE, vec))
		n = SIZE_MAX;
	for (i = 0; n != SIZE_MAX && i < NPAGES; i++)
		n += vec[i] & 1;
	munmap(map, DATA_SIZE);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * For each PFN of @pfns, the type of the first event that covers it at or
 * after @from_ns (0 when none), snapshot chunks left out.
 */
static void first_types(const struct pt_st_trace *t, const uint64_t *pfns, size_t n,
			uint64_t from_ns, unsigned char *type)
{
	size_t i;

	memset(type, 0, n);
	for (i = 0; i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];
		uint64_t p;

		/* The memory map at start lists them as in use: not an event. */
		if (ev->time_ns < from_ns ||
		    (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT))
			continue;
		for (p = ev->pfn; p < ev->pfn + ev->npages; p++) {
			const uint64_t *hit = bsearch(&p, pfns, n, sizeof(*pfns),
						      cmp_u64);

			if (hit && !type[hit - pfns])
				type[hit - pfns] = ev->type;
		}
	}
}

static void count_types(const unsigned char *type, size_t n, size_t *by)
{
	size_t i;

	memset(by, 0, 4 * sizeof(*by));
	for (i = 0; i < n; i++)
		by[type[i] & 3]++;
}

FIXTURE(reclaim)
{
	uint64_t pfns[NPAGES];
	unsigned char type[NPAGES];
	struct pt_st_trace t;
	int dev;
	const char *skip;	/* the 6.1 harness runs the test after a setup SKIP */
};

FIXTURE_SETUP(reclaim)
{
	const char *why;

	self->dev = -1;
	self->t.ev = NULL;
	self->skip = setup_world();
	if (self->skip)
		return;
	why = make_data();
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(reclaim)
{
	pt_st_trace_free(&self->t);
	if (self->dev >= 0)
		close(self->dev);
	teardown_world();
}

/*
 * Each test builds and takes down a loop-mounted ext4 in a memory cgroup
 * (setup_world()), about 25 s of the harness's default 30 under the KASAN
 * kernel on a busy host, where one timed out after its checks had passed:
 * five minutes each, for a hang to show as one.
 */
#define RECLAIM_TIMEOUT	300

/*
 * Readahead: reading the file allocates its page cache; every page the
 * mapping shows must have been allocated, once, while we read.
 */
TEST_F_TIMEOUT(reclaim, readahead_allocates, RECLAIM_TIMEOUT)
{
	size_t n, by[4], i, allocs = 0;

	if (self->skip)
		SKIP(return, "%s (needs cgroup v2 memory, loop, ext4, mke2fs)",
		     self->skip);

	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	n = load_pfns(self->pfns);
	ASSERT_EQ(NPAGES, n) TH_LOG("only %zu of %lu pages mapped", n, NPAGES);
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t));
	qsort(self->pfns, n, sizeof(*self->pfns), cmp_u64);
	first_types(&self->t, self->pfns, n, 0, self->type);
	count_types(self->type, n, by);
	for (i = 0; i < self->t.nr; i++)
		allocs += self->t.ev[i].type == PGTRACE_EV_ALLOC;
	TH_LOG("%zu pages: first event alloc %zu, free %zu, reclaim %zu, none %zu (%zu allocs)",
	       n, by[PGTRACE_EV_ALLOC], by[PGTRACE_EV_FREE], by[PGTRACE_EV_RECLAIM], by[0], allocs);
	EXPECT_EQ(n, by[PGTRACE_EV_ALLOC]);
}

/* memory.reclaim pushes the file's pages out: reclaim events, no frees. */
TEST_F_TIMEOUT(reclaim, memory_reclaim_is_reclaim, RECLAIM_TIMEOUT)
{
	uint64_t before, after;
	size_t n, by[4];

	if (self->skip)
		SKIP(return, "%s (needs cgroup v2 memory, loop, ext4, mke2fs)",
		     self->skip);

	n = load_pfns(self->pfns);
	ASSERT_EQ(NPAGES, n);
	qsort(self->pfns, n, sizeof(*self->pfns), cmp_u64);
	ASSERT_EQ(0, read_u64(CG "/memory.current", &before));

	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	/* It may fall short of the target (-EAGAIN); what it did counts. */
	if (!access(CG "/memory.reclaim", F_OK)) {
		write_file(CG "/memory.reclaim", "67108864");
	} else {
		/*
		 * Before 5.19 there is no memory.reclaim; lowering
		 * memory.high reclaims down to it in the writer, the same
		 * memcg reclaim.
		 */
		write_file(CG "/memory.high", "1048576");
		write_file(CG "/memory.high", "max");
	}
	ASSERT_EQ(0, read_u64(CG "/memory.current", &after));
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t));

	first_types(&self->t, self->pfns, n, 0, self->type);
	count_types(self->type, n, by);
	TH_LOG("memory.current %" PRIu64 " -> %" PRIu64 "; %zu file pages: first event reclaim %zu, free %zu, alloc %zu, none %zu",
	       before, after, n, by[PGTRACE_EV_RECLAIM], by[PGTRACE_EV_FREE],
	       by[PGTRACE_EV_ALLOC], by[0]);
	ASSERT_GT(before, after) TH_LOG("memory.reclaim reclaimed nothing");
	/*
	 * Most of the file went, every page that went was a reclaim, and the
	 * pages without an event are exactly those still cached.
	 */
	EXPECT_LE(n / 2, by[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(0, by[PGTRACE_EV_FREE]);
	EXPECT_EQ(0, by[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(resident_pages(), by[0]);
}

/* drop_caches throws the same pages away: frees, not reclaims. */
TEST_F_TIMEOUT(reclaim, drop_caches_is_free, RECLAIM_TIMEOUT)
{
	size_t n, by[4];

	if (self->skip)
		SKIP(return, "%s (needs cgroup v2 memory, loop, ext4, mke2fs)",
		     self->skip);

	n = load_pfns(self->pfns);
	ASSERT_EQ(NPAGES, n);
	qsort(self->pfns, n, sizeof(*self->pfns), cmp_u64);

	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, write_file("/proc/sys/vm/drop_caches", "1"));
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t));

	first_types(&self->t, self->pfns, n, 0, self->type);
	count_types(self->type, n, by);
	TH_LOG("%zu file pages: first event free %zu, reclaim %zu, alloc %zu, none %zu",
	       n, by[PGTRACE_EV_FREE], by[PGTRACE_EV_RECLAIM], by[PGTRACE_EV_ALLOC], by[0]);
	/*
	 * drop_caches skips pages it cannot take right now (say, still in a
	 * per-CPU LRU batch): those stay cached and have no event.
	 */
	EXPECT_LE(n * 9 / 10, by[PGTRACE_EV_FREE]);
	EXPECT_EQ(0, by[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(0, by[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(resident_pages(), by[0]);
}

TEST_HARNESS_MAIN
