// SPDX-License-Identifier: GPL-2.0
/*
 * Cross-check against an independent tracer: trace-cmd records the kmem
 * events mm_page_alloc and mm_page_free during the same workload as
 * pagetrace, and the two must agree.
 *
 * The tracers cannot start at the same instant, so each CPU's comparison
 * window is bracketed by marker blocks (order 7, which nothing else in an
 * idle VM allocates) allocated and freed on that CPU by pagetrace_gt.ko.
 * Each CPU's events are ordered in both traces, so between its markers both
 * must hold the same events:
 *  - frees: mm_page_free fires exactly where pagetrace's free hooks sit, so
 *    pagetrace's frees and reclaims equal ftrace's frees, per CPU and order,
 *    event for event;
 *  - allocations: mm_page_alloc fires only in __alloc_pages(); pagetrace
 *    also sees the bulk allocator and compaction.  Every ftrace allocation
 *    must be in pagetrace, the same per order above 0, and pagetrace's
 *    extras must be order-0 pages only: the bulk allocator's.  The
 *    workload runs it once through pagetrace_gt.ko (16 pages, each of
 *    which must be among the extras); new tasks' kernel stacks come from
 *    vmalloc, which uses it too.  No THP in the workload, so no
 *    compaction.
 * The workload: anonymous faults and munmap, tmpfs file writes and unlink,
 * fork and exit, on every CPU.
 *
 * Events pagetrace lost and counted (an interrupt that frees a page while
 * a probe handler runs on its CPU is dropped by the kprobe core, and
 * counted: more likely on the slow KASAN/lockdep kernel) relax "equal" to
 * "no more": ftrace may then have more, as many as were counted at most.
 *
 * One more known difference, with hook=kprobe on PREEMPT_RT only: the
 * free path is preemptible between our probe at a function's entry and the
 * tracepoint inside it, so the two tracers may see one free on two CPUs.  Such an
 * event must then be in the other trace on another CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define MAX_CPUS	64
#define MAX_ORDER_SEEN	11
#define FTRACE_DAT	"/tmp/pagetrace-ftrace.dat"
#define TRACING		"/sys/kernel/tracing"

/* One event in either trace, reduced to what both know. */
struct ev {
	uint64_t	pfn;
	unsigned int	order;
	unsigned int	cpu;
	unsigned char	free;		/* free or reclaim */
};

struct evs {
	struct ev	*v;
	size_t		n, cap;
};

static void evs_add(struct evs *e, const struct ev *x)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4096;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		if (!e->v)
			abort();
	}
	e->v[e->n++] = *x;
}

static unsigned int order_of(uint64_t npages)
{
	unsigned int o = 0;

	while ((1ULL << o) < npages)
		o++;
	return o;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static pid_t start_trace_cmd(void)
{
	char buf[16];
	pid_t pid = fork();
	int i;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("trace-cmd", "trace-cmd", "record", "-e", "kmem:mm_page_alloc",
		       "-e", "kmem:mm_page_free", "-o", FTRACE_DAT, NULL);
		_exit(127);
	}
	/* Recording has begun once the events are on. */
	for (i = 0; i < 200; i++) {
		if (!read_file(TRACING "/events/kmem/mm_page_free/enable", buf,
			       sizeof(buf)) && buf[0] == '1' &&
		    !read_file(TRACING "/tracing_on", buf, sizeof(buf)) &&
		    buf[0] == '1')
			break;
		usleep(50000);
	}
	sleep(1);
	return pid;
}

/*
 * Parse `trace-cmd report`: "... [CPU] TS: mm_page_alloc: ... pfn=0x..
 * order=N"; the PFN is decimal before 5.13's kmem events ("pfn=N").
 */
static int ftrace_events(struct evs *out, size_t *lost)
{
	FILE *f = popen("trace-cmd report -i " FTRACE_DAT " 2>&1", "r");
	char line[1024];

	if (!f)
		return -errno;
	*lost = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *cpu = strchr(line, '['), *pfn = strstr(line, "pfn=");
		const char *order = strstr(line, "order=");
		struct ev e = { 0 };

		if (strstr(line, "LOST"))
			(*lost)++;
		if (!cpu || !pfn || !order)
			continue;
		if (strstr(line, " mm_page_alloc:"))
			e.free = 0;
		else if (strstr(line, " mm_page_free:"))
			e.free = 1;
		else
			continue;
		e.cpu = strtoul(cpu + 1, NULL, 10);
		/* Base 0: "0x..." hexadecimal, else decimal. */
		e.pfn = strtoull(pfn + 4, NULL, 0);
		e.order = strtoul(order + 6, NULL, 10);
		/* A failed allocation traces no page (pfn -1). */
		if (e.pfn == UINT64_MAX || (e.pfn >> 52))
			continue;
		evs_add(out, &e);
	}
	return pclose(f) == 0 ? 0 : -EIO;
}

/* The marker PFN of a pagetrace_gt "marker" report. */
static int run_marker(uint64_t *pfn)
{
	char report[512];
	int ret = pt_st_gt_run("marker", report, sizeof(report));

	if (ret)
		return ret;
	return sscanf(report, "marker alloc pfn=%" SCNu64, pfn) == 1 ? 0 : -EINVAL;
}

static void workload(void)
{
	const size_t len = 1 << 20;
	char path[64], *p;
	size_t i;
	pid_t pid;
	int fd;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p != MAP_FAILED) {
		madvise(p, len, MADV_NOHUGEPAGE);
		for (i = 0; i < len; i += 4096)
			p[i] = 1;
		munmap(p, len);
	}
	snprintf(path, sizeof(path), "/tmp/pt-ftrace-%d", getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		static char buf[65536];

		for (i = 0; i < 8; i++)
			if (write(fd, buf, sizeof(buf)) < 0)
				break;
		close(fd);
		unlink(path);
	}
	for (i = 0; i < 4; i++) {
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
}

/* Events of @cpu strictly between its start and end markers, or -1. */
static int window(const struct evs *all, unsigned int cpu, uint64_t start,
		  uint64_t end, struct evs *out)
{
	size_t i;
	int state = 0;	/* 0 before the start marker's free, 1 inside */

	for (i = 0; i < all->n; i++) {
		const struct ev *e = &all->v[i];

		if (e->cpu != cpu)
			continue;
		if (state == 0) {
			if (e->free && e->pfn == start && e->order == 7)
				state = 1;
			continue;
		}
		if (!e->free && e->pfn == end && e->order == 7)
			return 0;
		evs_add(out, e);
	}
	return -1;
}

/*
 * Whether @all holds @e on another CPU.  On PREEMPT_RT the free path is
 * preemptible between our probe at the function's entry and the tracepoint
 * inside it, so a task that migrates there is seen on one CPU by pagetrace
 * and on another by ftrace.
 */
static bool on_other_cpu(const struct evs *all, const struct ev *e)
{
	size_t i;

	for (i = 0; i < all->n; i++) {
		const struct ev *x = &all->v[i];

		if (x->cpu != e->cpu && x->pfn == e->pfn &&
		    x->order == e->order && x->free == e->free)
			return true;
	}
	return false;
}

static bool preempt_rt(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT");
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->free != y->free)
		return x->free - y->free;
	if (x->pfn != y->pfn)
		return x->pfn < y->pfn ? -1 : 1;
	return (int)x->order - (int)y->order;
}

TEST(ftrace_agrees)
{
	uint64_t start[MAX_CPUS], end[MAX_CPUS], bulk[32];
	struct evs pt = { 0 }, ft = { 0 };
	struct pt_st_trace t = { 0 };
	char report[4096], *line;
	size_t i, lost = 0, nbulk = 0, bulk_seen = 0, migrated = 0, all_missing = 0;
	struct pagetrace_cpu_stats cs[MAX_CPUS];
	uint64_t pt_lost = 0, probe_missed = 0;
	bool rt = preempt_rt();
	int ncpu, cpu, dev, checked = 0;
	pid_t tc;

	if (system("command -v trace-cmd >/dev/null 2>&1"))
		SKIP(return, "trace-cmd is not installed in this system");
	ASSERT_EQ(0, pt_st_gt_load());
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ASSERT_GE(MAX_CPUS, ncpu);
	ASSERT_EQ(0, pt_st_set_hook("auto"));

	/*
	 * Warm up: fork takes kernel stacks from vmalloc (the bulk allocator)
	 * only when the CPU's cache of freed stacks is empty.
	 */
	for (cpu = 0; cpu < ncpu; cpu++) {
		ASSERT_EQ(0, pt_st_pin_cpu(cpu));
		workload();
	}

	tc = start_trace_cmd();
	ASSERT_LT(0, tc);
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);

	for (cpu = 0; cpu < ncpu; cpu++) {
		ASSERT_EQ(0, pt_st_pin_cpu(cpu));
		ASSERT_EQ(0, run_marker(&start[cpu]));
	}
	for (cpu = 0; cpu < ncpu; cpu++) {
		ASSERT_EQ(0, pt_st_pin_cpu(cpu));
		workload();
		if (cpu)
			continue;
		/* The bulk allocator, which mm_page_alloc does not see. */
		ASSERT_EQ(0, pt_st_gt_run("bulk_array", report, sizeof(report)));
		for (line = report; (line = strstr(line, "bulk_array alloc pfn="));
		     line++)
			if (nbulk < 32)
				bulk[nbulk++] = strtoull(line + 21, NULL, 10);
	}
	for (cpu = 0; cpu < ncpu; cpu++) {
		ASSERT_EQ(0, pt_st_pin_cpu(cpu));
		ASSERT_EQ(0, run_marker(&end[cpu]));
	}

	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	/*
	 * What pagetrace lost, counted: chiefly a page freed by an interrupt
	 * while a probe handler ran on its CPU, which the kprobe core drops
	 * (probe_missed).  Only a loss that was not counted is a bug.
	 */
	memset(cs, 0, sizeof(cs));
	ASSERT_EQ(0, pt_st_stats(dev, cs, MAX_CPUS, &probe_missed));
	for (cpu = 0; cpu < MAX_CPUS; cpu++)
		pt_lost += cs[cpu].lost;
	close(dev);
	kill(tc, SIGINT);
	waitpid(tc, NULL, 0);
	ASSERT_EQ(0, ftrace_events(&ft, &lost));
	EXPECT_EQ(0, lost) TH_LOG("ftrace lost events: no exact comparison");
	/* Kernels before 5.13 have no bulk allocator: the op skips. */
	if (!strstr(report, "bulk_array skip"))
		ASSERT_LT(0, nbulk);

	for (i = 0; i < t.nr; i++) {
		struct ev e = {
			.pfn = t.ev[i].pfn, .order = order_of(t.ev[i].npages),
			.cpu = t.ev[i].cpu, .free = t.ev[i].type != PGTRACE_EV_ALLOC,
		};

		evs_add(&pt, &e);
	}

	for (cpu = 0; cpu < ncpu; cpu++) {
		struct evs a = { 0 }, b = { 0 };
		size_t ia = 0, ib = 0, extra = 0, missing = 0, bulk_like = 0;
		size_t counts[2][2][MAX_ORDER_SEEN + 1];

		ASSERT_EQ(0, window(&pt, cpu, start[cpu], end[cpu], &a))
			TH_LOG("cpu %d: markers not found in pagetrace", cpu);
		ASSERT_EQ(0, window(&ft, cpu, start[cpu], end[cpu], &b))
			TH_LOG("cpu %d: markers not found in ftrace", cpu);
		memset(counts, 0, sizeof(counts));
		for (i = 0; i < a.n; i++)
			counts[0][a.v[i].free][a.v[i].order > MAX_ORDER_SEEN ?
					       MAX_ORDER_SEEN : a.v[i].order]++;
		for (i = 0; i < b.n; i++)
			counts[1][b.v[i].free][b.v[i].order > MAX_ORDER_SEEN ?
					       MAX_ORDER_SEEN : b.v[i].order]++;

		/* Frees: the same per order; allocations above order 0 too. */
		for (i = 0; i <= MAX_ORDER_SEEN; i++) {
			size_t ftf = counts[1][1][i], ptf = counts[0][1][i];
			size_t fta = counts[1][0][i], pta = counts[0][0][i];

			/*
			 * Per CPU exactly, but for migrations on RT (below),
			 * and events pagetrace lost and counted.
			 */
			if (!rt && !pt_lost)
				EXPECT_EQ(ftf, ptf) TH_LOG("cpu %d order %zu frees: ftrace %zu, pagetrace %zu",
							   cpu, i, ftf, ptf);
			if (!rt && !pt_lost && i)
				EXPECT_EQ(fta, pta) TH_LOG("cpu %d order %zu allocs: ftrace %zu, pagetrace %zu",
							   cpu, i, fta, pta);
			if (!rt && pt_lost) {
				EXPECT_LE(ptf, ftf);
				if (i)
					EXPECT_LE(pta, fta);
			}
		}

		/*
		 * Order 0: every ftrace allocation is in pagetrace; pagetrace's
		 * extras are order-0 allocations mm_page_alloc cannot see (the
		 * bulk allocator: our 16 pages, and vmalloc'd kernel stacks of
		 * new tasks), never frees or larger blocks.
		 */
		qsort(a.v, a.n, sizeof(*a.v), cmp_ev);
		qsort(b.v, b.n, sizeof(*b.v), cmp_ev);
		while (ia < a.n || ib < b.n) {
			int c = ia == a.n ? 1 : ib == b.n ? -1 :
				cmp_ev(&a.v[ia], &b.v[ib]);

			if (c == 0) {
				ia++;
				ib++;
			} else if (c > 0) {
				if (rt && on_other_cpu(&pt, &b.v[ib])) {
					migrated++;
				} else {
					missing++;
					TH_LOG("cpu %d: ftrace %s pfn=%#" PRIx64 " order=%u not in pagetrace",
					       cpu, b.v[ib].free ? "free" : "alloc",
					       b.v[ib].pfn, b.v[ib].order);
				}
				ib++;
			} else {
				size_t k;

				for (k = 0; cpu == 0 && k < nbulk; k++)
					bulk_seen += a.v[ia].pfn == bulk[k];
				if (rt && on_other_cpu(&ft, &a.v[ia])) {
					migrated++;
				} else if (a.v[ia].free || a.v[ia].order) {
					extra++;
					TH_LOG("cpu %d: pagetrace %s pfn=%#" PRIx64 " order=%u not in ftrace",
					       cpu, a.v[ia].free ? "free" : "alloc",
					       a.v[ia].pfn, a.v[ia].order);
				} else {
					bulk_like++;
				}
				ia++;
			}
		}
		all_missing += missing;
		if (!pt_lost)
			EXPECT_EQ(0, missing);
		EXPECT_EQ(0, extra);
		TH_LOG("cpu %d: %zu order-0 allocations only pagetrace saw", cpu,
		       bulk_like);
		TH_LOG("cpu %d: %zu pagetrace and %zu ftrace events in the window",
		       cpu, a.n, b.n);
		checked += a.n > 0;
		free(a.v);
		free(b.v);
	}
	EXPECT_LT(0, checked);
	/* Never more missing than pagetrace counted as lost. */
	TH_LOG("pagetrace lost %" PRIu64 " events (kprobe core: %" PRIu64
	       "), %zu ftrace events missing", pt_lost, probe_missed, all_missing);
	EXPECT_LE(all_missing, pt_lost);
	/* Each page of our bulk allocation: in pagetrace only, once. */
	EXPECT_EQ(nbulk, bulk_seen);
	if (migrated)
		TH_LOG("%zu events seen on different CPUs by the two tracers (task migrated between probe and tracepoint, PREEMPT_RT)",
		       migrated);
	pt_st_trace_free(&t);
	free(pt.v);
	free(ft.v);
	if (!getenv("PT_KEEP_FTRACE"))
		unlink(FTRACE_DAT);
}

TEST_HARNESS_MAIN
