// SPDX-License-Identifier: GPL-2.0
/*
 * Reclaim is recorded as reclaim (type 3, the Go tracer's scavenge), and
 * only reclaim: pages of known PFNs in a memory cgroup are pushed out by
 * memory.reclaim (memory.high before 5.19) and must come back as reclaim events, while drop_caches
 * must free them as plain frees.  Readahead filling the same file's cache
 * must show up as one allocation per page.  pagetrace stats --reclaim, on
 * a recording of the same reclaim, gives the reclaimed pages to the
 * process that read them in, by pid and name, with lifetimes that fit
 * what the test did.
 *
 * The page cache lives on ext4 over a loop device (tmpfs pages cannot be
 * reclaimed without swap).  The PFNs come from /proc/self/pagemap of a
 * shared read-only mapping of the file.  Needs root, cgroup v2 with the
 * memory controller, loop, ext4 and busybox (mke2fs, mount); the stats
 * test also the pagetrace CLI ($PAGETRACE_BIN).
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
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
 * Keep khugepaged off the data file's mapping.  With THP "always" (Debian's
 * default), 7.3's khugepaged collapses a mapped ext4 file's 2 MiB ranges
 * into new huge pages (thp_collapse_alloc: 8 for the 16 MiB file, with its
 * scan every 100 ms): it unmaps and frees the pages we read (frees, not
 * reclaims) and allocates the copies itself.  Seen with its scan every
 * 10 s: 1,536 of the 4,096 pages absent from pagemap after the read, or
 * missing from the reclaim that followed.
 */
static void no_collapse(void *map)
{
	madvise(map, DATA_SIZE, MADV_NOHUGEPAGE);
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
	no_collapse(map);
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

/* The files of stats_reclaim_names_the_allocator, removed by the teardown. */
#define ATTR_TRACE	"/tmp/pt-reclaim-attr.bin"
#define ATTR_REC_OUT	"/tmp/pt-reclaim-attr.rec"
#define ATTR_JSON	"/tmp/pt-reclaim-attr.json"
#define ATTR_ERR	"/tmp/pt-reclaim-attr.err"

FIXTURE(reclaim)
{
	uint64_t pfns[NPAGES];
	unsigned char type[NPAGES];
	struct pt_st_trace t;
	int dev;
	const char *skip;	/* the 6.1 harness runs the test after a setup SKIP */
	pid_t rec;		/* a recorder still running, or -1 */
	char old_tasks[16];	/* the tasks parameter to restore, or "" */
	char old_stack_rate[16];	/* likewise stack_rate */
	struct pt_st_buf out;
};

FIXTURE_SETUP(reclaim)
{
	const char *why;

	self->dev = -1;
	self->t.ev = NULL;
	self->rec = -1;
	self->old_tasks[0] = '\0';
	self->old_stack_rate[0] = '\0';
	memset(&self->out, 0, sizeof(self->out));
	self->skip = setup_world();
	if (self->skip)
		return;
	why = make_data();
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(reclaim)
{
	pt_st_trace_free(&self->t);
	pt_st_buf_free(&self->out);
	if (self->rec > 0) {
		kill(self->rec, SIGKILL);
		waitpid(self->rec, NULL, 0);
	}
	if (self->old_tasks[0])
		pt_st_set_param("tasks", self->old_tasks);
	if (self->old_stack_rate[0])
		pt_st_set_param("stack_rate", self->old_stack_rate);
	unlink(ATTR_TRACE);
	unlink(ATTR_REC_OUT);
	unlink(ATTR_JSON);
	unlink(ATTR_ERR);
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
 * What the trace says of one of the file's pages, after the memory map at
 * start: its last event and when, and how its frees found it.
 */
struct page_fate {
	unsigned char	last;		/* PGTRACE_EV_*, 0 for none */
	bool		in_use;		/* in the map at start or allocated since */
	uint64_t	last_ns;
	unsigned int	freed_in_map;	/* frees of a page the map lists in use */
	unsigned int	freed_in_walk;	/* before the walk reached it */
	unsigned int	unexplained;	/* not known allocated after the walk */
};

static void page_fates(const struct pt_st_trace *t, const uint64_t *pfns, size_t n,
		       struct page_fate *f)
{
	size_t i;

	memset(f, 0, n * sizeof(*f));
	for (i = 0; i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];
		bool map = ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT;
		uint64_t p;

		for (p = ev->pfn; p < ev->pfn + ev->npages; p++) {
			const uint64_t *hit = bsearch(&p, pfns, n, sizeof(*pfns),
						      cmp_u64);
			struct page_fate *pf = hit ? &f[hit - pfns] : NULL;

			if (!pf)
				continue;
			if (map) {
				pf->in_use = true;
				continue;
			}
			if (ev->type != PGTRACE_EV_ALLOC) {
				if (pf->in_use && !pf->last)
					pf->freed_in_map++;
				else if (!pf->in_use && ev->time_ns <= t->snap_end_ns)
					pf->freed_in_walk++;
				else if (!pf->in_use)
					pf->unexplained++;
			}
			pf->in_use = ev->type == PGTRACE_EV_ALLOC;
			pf->last = ev->type;
			pf->last_ns = ev->time_ns;
		}
	}
}

/*
 * Readahead: reading the file allocates its page cache; every page the
 * mapping shows must have been allocated while we read, and not freed
 * since.  A page may have been freed earlier in the trace: drop_caches
 * (the fixture's) frees slab pages through RCU, after the session began
 * on PREEMPT_RT, and readahead may reuse them.  Such a free must find the
 * page allocated: in the memory map at start, or freed while the map's
 * walk ran, before the walk reached it.
 */
TEST_F_TIMEOUT(reclaim, readahead_allocates, RECLAIM_TIMEOUT)
{
	size_t n, i, allocs = 0, read = 0, before = 0, other = 0;
	size_t in_map = 0, in_walk = 0, unexplained = 0;
	struct pt_st_mark mark = { 0 };
	struct page_fate *f;
	uint64_t t0;

	if (self->skip)
		SKIP(return, "%s (needs cgroup v2 memory, loop, ext4, mke2fs)",
		     self->skip);

	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, pt_st_mark(&mark));
	n = load_pfns(self->pfns);
	ASSERT_EQ(NPAGES, n) TH_LOG("only %zu of %lu pages mapped", n, NPAGES);
	ASSERT_EQ(0, pt_st_collect(self->dev, &self->t));
	t0 = pt_st_mark_time(&self->t, &mark);
	ASSERT_NE(0, t0) TH_LOG("the mark's allocation is not in the trace");
	qsort(self->pfns, n, sizeof(*self->pfns), cmp_u64);
	f = calloc(n, sizeof(*f));
	ASSERT_NE(NULL, f);
	page_fates(&self->t, self->pfns, n, f);
	for (i = 0; i < n; i++) {
		if (f[i].last == PGTRACE_EV_ALLOC && f[i].last_ns >= t0)
			read++;
		else if (f[i].last == PGTRACE_EV_ALLOC)
			before++;
		else
			other++;
		in_map += f[i].freed_in_map;
		in_walk += f[i].freed_in_walk;
		unexplained += f[i].unexplained;
	}
	free(f);
	for (i = 0; i < self->t.nr; i++)
		allocs += self->t.ev[i].type == PGTRACE_EV_ALLOC;
	TH_LOG("%zu pages: last event an allocation while we read %zu, before %zu, other %zu; earlier frees of pages in the map %zu, in the walk %zu, not known allocated %zu (%zu allocs)",
	       n, read, before, other, in_map, in_walk, unexplained, allocs);
	EXPECT_EQ(n, read);
	EXPECT_EQ(0, unexplained);
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

/* ------------------------------------------- who caused reclaim, by the CLI */

#define RECLAIMEE	"pt-reclaimee"
/*
 * How far CLOCK_MONOTONIC and the trace clock may disagree about one
 * interval: under TCG with the TSC marked unstable local_clock() strays
 * from CLOCK_MONOTONIC by milliseconds between ticks (pt_selftest.h).
 */
#define ATTR_SLACK_NS	(50 * 1000000ULL)
/*
 * The child's pages besides the file's that reclaim may take: the ext4
 * metadata it read to open the file (the inode table comes with
 * inode_readahead_blks, 32 blocks by default, of readahead).
 */
#define ATTR_META_PAGES	64
/* Between the child's last page and the reclaim: a floor for lifetimes. */
#define ATTR_GAP_NS	(500 * 1000000ULL)

/*
 * Run $PAGETRACE_BIN with @argv (argv[0] set here), stdout to @out and
 * stderr to @err, in the root cgroup: the recorder's own memory (and
 * anything it writes) must not be in the cgroup whose reclaim we check.
 */
static pid_t cli_start(const char *bin, char **argv, const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		int e = open(err, O_CREAT | O_TRUNC | O_WRONLY, 0644);

		if (o < 0 || e < 0 || write_file(CG_ROOT "/cgroup.procs", "0"))
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		argv[0] = (char *)bin;
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The number after "@key": at or after @from, before @end (NULL: anywhere); -1 if none. */
static int64_t json_num(const char *from, const char *end, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(from, k);
	if (!p || (end && p >= end))
		return -1;
	return strtoll(p + strlen(k), NULL, 10);
}

/* One by_task entry of stats --reclaim --json, as far as the test reads it. */
struct attr_task {
	int64_t	tgid, pages, blocks, min_ns, p50_ns, p90_ns, max_ns;
	char	comm[32];
};

/*
 * The first by_task entry at or after @from (before @end, where the list
 * ends) into @t: returns where the next one may start, NULL if none.
 */
static const char *next_task(const char *from, const char *end, struct attr_task *t)
{
	const char *p = strstr(from, "{\"tgid\": "), *q, *life, *c;

	if (!p || p >= end)
		return NULL;
	q = strstr(p + 1, "{\"tgid\": ");
	if (!q || q > end)
		q = end;
	memset(t, 0, sizeof(*t));
	t->tgid = json_num(p, q, "tgid");
	/* The group's own keys come before its "lifetime" object. */
	t->pages = json_num(p, q, "pages");
	t->blocks = json_num(p, q, "blocks");
	life = strstr(p, "\"lifetime\": ");
	if (!life || life >= q)
		life = q;
	t->min_ns = json_num(life, q, "min_ns");
	t->p50_ns = json_num(life, q, "p50_ns");
	t->p90_ns = json_num(life, q, "p90_ns");
	t->max_ns = json_num(life, q, "max_ns");
	c = strstr(p, "\"comm\": \"");
	if (c && c < q) {
		c += strlen("\"comm\": \"");
		for (size_t i = 0; i < sizeof(t->comm) - 1 && c[i] && c[i] != '"'; i++)
			t->comm[i] = c[i];
	}
	return q;
}

/* What the parts of --reclaim=list say of the child's pages. */
struct attr_parts {
	size_t	parts;		/* traced ones */
	size_t	outside;	/* a part not within its allocation's block */
	size_t	bad_order;	/* an allocation of other than 2^alloc_order pages */
	size_t	bad_life;	/* life_ns not its reclaim less its allocation, or past the span */
	size_t	found;		/* pages of the child's among the parts */
	size_t	others;		/* ... that another task allocated, say the parts */
	size_t	unsampled;	/* ... whose allocation has no stack (stack_rate=1) */
	size_t	untraced;	/* pages of the child's in a part of another origin */
};

/*
 * Walk the parts between @from and @end: each page of the child's (@pfns,
 * @n sorted; @seen marks those found) must have been allocated by @child,
 * with a stack, and every traced part must agree with itself.
 */
static void walk_parts(const char *from, const char *end, const uint64_t *pfns, size_t n,
		       unsigned char *seen, int64_t child, uint64_t span, struct attr_parts *a)
{
	const char *p = from, *q;

	memset(a, 0, sizeof(*a));
	memset(seen, 0, n);
	while ((p = strstr(p, "{\"time_ns\": ")) && p < end) {
		int64_t t, pfn, np, at, life, apfn, anp, task, stack, order;
		const char *o;

		q = strstr(p + 1, "{\"time_ns\": ");
		if (!q || q > end)
			q = end;
		o = strstr(p, "\"origin\": \"traced\"");
		if (!o || o >= q) {
			/* Where the child's other pages went, for the log. */
			pfn = json_num(p, q, "pfn");
			np = json_num(p, q, "npages");
			for (int64_t k = pfn; np > 0 && k < pfn + np; k++) {
				uint64_t key = k;

				a->untraced += !!bsearch(&key, pfns, n, sizeof(*pfns), cmp_u64);
			}
			p = q;
			continue;
		}
		a->parts++;
		t = json_num(p, q, "time_ns");
		pfn = json_num(p, q, "pfn");
		np = json_num(p, q, "npages");
		at = json_num(p, q, "alloc_time_ns");
		life = json_num(p, q, "life_ns");
		apfn = json_num(p, q, "alloc_pfn");
		anp = json_num(p, q, "alloc_npages");
		task = json_num(p, q, "alloc_task");
		stack = json_num(p, q, "alloc_stack");
		order = json_num(p, q, "alloc_order");
		a->outside += np < 1 || pfn < apfn || pfn + np > apfn + anp;
		a->bad_order += order < 0 || order > 20 || anp != 1LL << order;
		a->bad_life += life < 0 || life != t - at || (uint64_t)life > span;
		for (int64_t k = pfn; np > 0 && k < pfn + np; k++) {
			uint64_t key = k;
			const uint64_t *hit = bsearch(&key, pfns, n, sizeof(*pfns), cmp_u64);

			if (!hit || seen[hit - pfns])
				continue;
			seen[hit - pfns] = 1;
			a->found++;
			a->others += task != child;
			a->unsampled += stack == 0;
		}
		p = q;
	}
}

/*
 * Pages of the by_stack groups between @from and @end whose frames show
 * the page cache filling itself (filemap_fault, readahead).
 */
static int64_t page_cache_stack_pages(const char *from, const char *end)
{
	const char *p = from, *q, *f, *fe;
	int64_t pages = 0;

	while ((p = strstr(p, "{\"stack\": ")) && p < end) {
		q = strstr(p + 1, "{\"stack\": ");
		if (!q || q > end)
			q = end;
		f = strstr(p, "\"frames\": [");
		fe = f ? strchr(f, ']') : NULL;
		if (f && fe && fe < q) {
			char frames[4096];
			size_t len = fe - f < (long)sizeof(frames) - 1 ? fe - f : sizeof(frames) - 1;

			memcpy(frames, f, len);
			frames[len] = '\0';
			if (strstr(frames, "filemap") || strstr(frames, "readahead") ||
			    strstr(frames, "page_cache_ra"))
				pages += json_num(p, q, "pages");
		}
		p = q;
	}
	return pages;
}

/* The trace's span: its last event's time less the session start; 0 if unreadable. */
static uint64_t trace_span(const struct pt_st_buf *b)
{
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	uint64_t last = 0, start;

	if (pgtrace_reader_open_mem(&r, b->p, b->len, 0))
		return 0;
	start = pgtrace_reader_header(r)->start_ns;
	while (pgtrace_reader_next(r, &ev) == 1)
		if (ev.time_ns > last)
			last = ev.time_ns;
	pgtrace_reader_close(r);
	return last > start ? last - start : 0;
}

/*
 * The child: named RECLAIMEE, it reads the whole data file through a
 * shared mapping, so readahead allocates its page cache in its context,
 * writes the PFN of each page to @up and exits.  It renames itself first:
 * the stream names a task once per chunk, and the chunk open on its CPU
 * when it forked named it by our name already.  Pinned to that CPU, it
 * then allocates and frees more single pages than a chunk of @buf_size
 * bytes has words for, so that chunk is closed however late the flush
 * comes (under load a wait of two flush periods was not always enough,
 * 6.1-rt); the chunks holding its file's pages name it anew.
 */
static void reclaimee(long flush_ms, long buf_size, int up)
{
	size_t churn = buf_size / 8;
	volatile char sink = 0;
	uint64_t pfn;
	char *map;
	int fd;

	prctl(PR_SET_NAME, RECLAIMEE);
	if (pt_st_pin_cpu(sched_getcpu()))
		_exit(1);
	usleep((2 * flush_ms + 100) * 1000);
	map = mmap(NULL, churn * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		_exit(1);
	madvise(map, churn * 4096, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < churn; i++)
		map[i * 4096] = 1;
	munmap(map, churn * 4096);
	fd = open(DATA, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		_exit(1);
	map = mmap(NULL, DATA_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		_exit(1);
	no_collapse(map);
	for (size_t i = 0; i < NPAGES; i++)
		sink += map[i * 4096];
	(void)sink;
	/* Where its pages are, for the parent to find them in the reclaim. */
	for (size_t i = 0; i < NPAGES; i++)
		if (!pt_st_pagemap_pfn(map + i * 4096, &pfn) &&
		    write(up, &pfn, sizeof(pfn)) != sizeof(pfn))
			_exit(1);
	_exit(0);
}

/*
 * pagetrace stats --reclaim on a real reclaim: while `pagetrace record`
 * records, a child named RECLAIMEE reads the data file into the (empty)
 * page cache, then memory.reclaim pushes the cgroup's pages out.  Every
 * page of the file that went was allocated by the child during the trace
 * (the cache held none of it before, bar what drop_caches left) and
 * reclaimed, not freed (memory_reclaim_is_reclaim): the child's tgid,
 * under its name, must own that many of the reclaimed pages, which lived
 * at least from the child's last read to the reclaim, and at most from
 * its fork to the reclaim's end, within the trace's span.  With
 * --reclaim=list and stack_rate=1, page by page: each PFN the child's
 * mapping showed that reclaim took is the child's, with a stack through
 * the page cache's fill path, in an allocation of 2^order pages.
 */
TEST_F_TIMEOUT(reclaim, stats_reclaim_names_the_allocator, RECLAIM_TIMEOUT)
{
	char *rec_argv[] = { NULL, "record", "--json", "-o", ATTR_TRACE, NULL };
	char *stats_argv[] = { NULL, "stats", "--reclaim=list", "--json", ATTR_TRACE, NULL };
	const char *bin = getenv("PAGETRACE_BIN");
	uint64_t t_fork, t_loaded, t_reclaim, t_reclaimed, span;
	size_t before, loaded, after, lost;
	int64_t total, traced, sum_tasks = 0;
	struct attr_task t, child = { .tgid = -1 };
	const char *json, *p, *end, *sum;
	size_t n = 0, filled = 0;
	struct attr_parts parts;
	int64_t cache_stacks;
	pid_t pid, reclaimee_pid;
	long flush_ms, buf_size;
	ssize_t got;
	int st, up[2];

	if (self->skip)
		SKIP(return, "%s (needs cgroup v2 memory, loop, ext4, mke2fs)",
		     self->skip);
	if (access("/dev/pagetrace", F_OK))
		SKIP(return, "/dev/pagetrace missing: load pagetrace.ko first");
	if (!bin || access(bin, X_OK))
		SKIP(return, "no pagetrace CLI: set PAGETRACE_BIN");
	flush_ms = pt_st_get_param("flush_ms");
	ASSERT_LT(0, flush_ms);
	buf_size = pt_st_get_param("buf_size");
	ASSERT_LT(0, buf_size);

	/* Task records for this session (another test may have turned them off). */
	ASSERT_LT(0, pt_st_get_param_str("tasks", self->old_tasks, sizeof(self->old_tasks)));
	self->old_tasks[strcspn(self->old_tasks, "\n")] = '\0';
	ASSERT_EQ(0, pt_st_set_param("tasks", "1"));
	/* Every allocation's stack: each reclaimed page then has one. */
	ASSERT_LT(0, pt_st_get_param_str("stack_rate", self->old_stack_rate,
					 sizeof(self->old_stack_rate)));
	self->old_stack_rate[strcspn(self->old_stack_rate, "\n")] = '\0';
	ASSERT_EQ(0, pt_st_set_param("stack_rate", "1"));
	self->rec = cli_start(bin, rec_argv, ATTR_REC_OUT, ATTR_ERR);
	ASSERT_LT(0, self->rec);
	ASSERT_TRUE(pt_st_wait_recording(20000)) TH_LOG("the recorder did not start within 20 s");

	before = resident_pages();
	t_fork = pt_st_mono_ns();
	ASSERT_EQ(0, pipe(up));
	reclaimee_pid = fork();
	if (reclaimee_pid == 0) {
		close(up[0]);
		reclaimee(flush_ms, buf_size, up[1]);
	}
	close(up[1]);
	ASSERT_LT(0, reclaimee_pid);
	while (filled < sizeof(self->pfns) &&
	       (got = read(up[0], (char *)self->pfns + filled, sizeof(self->pfns) - filled)) > 0)
		filled += got;
	close(up[0]);
	n = filled / sizeof(*self->pfns);
	ASSERT_EQ(0, wait_status(reclaimee_pid)) TH_LOG("the child could not read the data file");
	qsort(self->pfns, n, sizeof(*self->pfns), cmp_u64);
	t_loaded = pt_st_mono_ns();
	loaded = resident_pages();
	usleep(ATTR_GAP_NS / 1000);

	/* As memory_reclaim_is_reclaim does; what it took counts. */
	t_reclaim = pt_st_mono_ns();
	if (!access(CG "/memory.reclaim", F_OK)) {
		write_file(CG "/memory.reclaim", "67108864");
	} else {
		write_file(CG "/memory.high", "1048576");
		write_file(CG "/memory.high", "max");
	}
	t_reclaimed = pt_st_mono_ns();
	after = resident_pages();

	kill(self->rec, SIGINT);
	st = wait_status(self->rec);
	self->rec = -1;
	ASSERT_EQ(0, pt_st_load_file(ATTR_REC_OUT, &self->out));
	pt_st_buf_add(&self->out, "", 1);
	self->out.p[strcspn((char *)self->out.p, "\n")] = '\0';
	TH_LOG("record: %s", (char *)self->out.p);
	ASSERT_EQ(0, st);
	/* A lost allocation would leave its pages to nobody. */
	ASSERT_NE(NULL, strstr((char *)self->out.p, "\"lost\": 0,"));
	ASSERT_EQ(0, pt_st_load_file(ATTR_TRACE, &self->out));
	span = trace_span(&self->out);

	pid = cli_start(bin, stats_argv, ATTR_JSON, ATTR_ERR);
	ASSERT_LT(0, pid);
	st = wait_status(pid);
	if (st) {
		pt_st_load_file(ATTR_ERR, &self->out);
		pt_st_buf_add(&self->out, "", 1);
		ASSERT_EQ(0, st) TH_LOG("pagetrace stats --reclaim --json: %s", (char *)self->out.p);
	}
	ASSERT_EQ(0, pt_st_load_file(ATTR_JSON, &self->out));
	pt_st_buf_add(&self->out, "", 1);
	json = (char *)self->out.p;

	/* Pages of the file the child put in the cache and reclaim took. */
	lost = loaded > after + before ? loaded - after - before : 0;
	TH_LOG("file pages resident: %zu before the child, %zu after it, %zu after reclaim, so %zu its and reclaimed; trace span %.3f s",
	       before, loaded, after, lost, span / 1e9);
	ASSERT_LT(0, span);
	ASSERT_LE(NPAGES * 9 / 10, loaded) TH_LOG("the child's read did not fill the cache");
	ASSERT_LE(NPAGES / 2, lost) TH_LOG("memory.reclaim took too little of the file to judge");

	/* The parts first, then the summary's keys. */
	sum = strstr(json, "], \"events\": ");
	ASSERT_NE(NULL, sum);
	total = json_num(sum, NULL, "pages");
	p = strstr(sum, "\"traced\": {");
	ASSERT_NE(NULL, p);
	traced = json_num(p, NULL, "pages");
	p = strstr(sum, "\"by_task\": [");
	end = strstr(sum, "\"by_stack\": [");
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, end);
	while ((p = next_task(p, end, &t))) {
		TH_LOG("by_task: %" PRId64 " %s: %" PRId64 " pages of %" PRId64
		       " allocations, lived min %" PRId64 " p50 %" PRId64 " p90 %" PRId64
		       " max %" PRId64 " ns", t.tgid, t.comm, t.pages, t.blocks, t.min_ns,
		       t.p50_ns, t.p90_ns, t.max_ns);
		sum_tasks += t.pages;
		/* Every lifetime is within the trace. */
		EXPECT_LE(0, t.min_ns);
		EXPECT_LE(t.min_ns, t.p50_ns);
		EXPECT_LE(t.p50_ns, t.p90_ns);
		EXPECT_LE(t.p90_ns, t.max_ns);
		EXPECT_LE(t.max_ns, (int64_t)span);
		if (t.tgid == reclaimee_pid)
			child = t;
	}
	TH_LOG("reclaimed %" PRId64 " pages, %" PRId64 " allocated in the trace; the child is %d",
	       total, traced, reclaimee_pid);
	EXPECT_LT(0, total);
	EXPECT_LE(traced, total);
	EXPECT_EQ(traced, sum_tasks);
	/* The first "lifetime" is the summary's: all the traced pages. */
	p = strstr(sum, "\"lifetime\": {");
	ASSERT_NE(NULL, p);
	EXPECT_EQ(traced, json_num(p, NULL, "pages"));
	EXPECT_LE(json_num(p, NULL, "max_ns"), (int64_t)span);

	/* The child, by pid and by name, owns the pages it lost. */
	ASSERT_EQ(reclaimee_pid, child.tgid) TH_LOG("the child is not among the allocating tasks");
	EXPECT_STREQ(RECLAIMEE, child.comm);
	/*
	 * All of them but those compaction may have moved (the mover
	 * allocated the copies): 95%.  At most a few more, ext4's metadata
	 * the child read to open the file.
	 */
	EXPECT_LE((int64_t)(lost * 95 / 100), child.pages);
	EXPECT_GE((int64_t)lost + ATTR_META_PAGES, child.pages);
	EXPECT_LE(1, child.blocks);
	/* They lived from the child's read to the reclaim: no less, no more. */
	EXPECT_LE((int64_t)(t_reclaim - t_loaded - ATTR_SLACK_NS), child.min_ns);
	EXPECT_GE((int64_t)(t_reclaimed - t_fork + ATTR_SLACK_NS), child.max_ns);

	/*
	 * Page by page: of the PFNs the child's mapping showed, those in a
	 * reclaim part are its own, each with its stack, and every part lies
	 * in an allocation of 2^order pages and lived its reclaim's time less
	 * the allocation's.
	 */
	walk_parts(json, sum, self->pfns, n, self->type, reclaimee_pid, span, &parts);
	TH_LOG("parts: %zu traced; %zu of the child's %zu PFNs in them, %zu given to others, %zu without a stack; %zu outside their block, %zu of a wrong order, %zu of a wrong life; %zu in parts not traced",
	       parts.parts, parts.found, n, parts.others, parts.unsampled, parts.outside,
	       parts.bad_order, parts.bad_life, parts.untraced);
	EXPECT_LE(lost * 95 / 100, parts.found);
	EXPECT_EQ(0, parts.others);
	EXPECT_EQ(0, parts.unsampled);
	EXPECT_EQ(0, parts.outside);
	EXPECT_EQ(0, parts.bad_order);
	EXPECT_EQ(0, parts.bad_life);

	/* By stack: the file's pages came from the page cache's own paths. */
	p = strstr(sum, "\"by_stack\": [");
	cache_stacks = page_cache_stack_pages(p, p + strlen(p));
	TH_LOG("by_stack: %" PRId64 " pages from stacks through filemap/readahead", cache_stacks);
	EXPECT_LE((int64_t)(lost * 95 / 100), cache_stacks);
}

TEST_HARNESS_MAIN
