// SPDX-License-Identifier: GPL-2.0
/*
 * Who caused reclaim (pgtrace_reclaim_*, pagetrace stats --reclaim and
 * the report's section): a trace whose answer is known by construction,
 * reclaim of whole blocks, of part of a block, of two allocations in one
 * event, of a snapshot run and of pages never allocated; the same against
 * the analysis's unmatched count on random traces; the hooks' errors; and
 * the CLI's text, JSON and list, and the report.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL
#define U	128ULL		/* the trace's time step: lifetimes below are exact */
#define A	PAGETRACE_EV_ALLOC
#define F	PAGETRACE_EV_FREE
#define R	PAGETRACE_EV_RECLAIM

#define TGID_A	100
#define TGID_B	200
#define KSWAPD	50
#define STACK	7

/*
 * Task A (alpha, CPU 0) allocates 0x2000 and 0x2001 (order 0) and 0x2004
 * (order 2, sampled with stack 7); task B (beta, CPU 1) 0x3000 (order 1)
 * and 0x3002.  The snapshot lists 0x8000..0x8003.  Then kswapd0 (CPU 1)
 * reclaims, each lifetime a bucket bound so that percentiles are exact:
 *
 *   106U  0x2000 x2   A's two order-0 blocks: lived 96U and 80U
 *   148U  0x2005      1 page of A's order-2 block: 128U
 *   212U  0x2006 x2   2 more of it (0x2004 stays allocated): 192U
 *   271U  0x3000 x2   B's block: 256U
 *   300U  0x8001      a snapshot page
 *   320U  0x9000      a page never allocated
 *   330U  0x50        another, outside the zones
 *
 * and B frees 0x3002 (a free: not counted).
 */
static void reclaim_trace(struct synth *s)
{
	static const uint64_t frames[] = { 0xffffffff81001000ULL, 0xffffffff81002000ULL };

	synth_init(s, 2, 4096, PAGETRACE_FLAG_TASKS | PAGETRACE_FLAG_SNAPSHOT |
		   PAGETRACE_FLAG_STACKS);
	synth_snapshot(s, 0);
	synth_event(s, 0, SEC, A, 0x8000, 4);
	synth_flush(s, 0, 0);
	synth_name(s, 0, TGID_A, "alpha");
	synth_event(s, 0, SEC + 10 * U, A, 0x2000, 1);
	synth_stack_def(s, 0, STACK, 2, false, frames);
	synth_sample(s, 0, SEC + 20 * U, STACK, 0x2004, 4);
	synth_event(s, 0, SEC + 26 * U, A, 0x2001, 1);
	synth_name(s, 1, TGID_B, "beta");
	synth_event(s, 1, SEC + 15 * U, A, 0x3000, 2);
	synth_event(s, 1, SEC + 25 * U, A, 0x3002, 1);
	synth_name(s, 1, KSWAPD, "kswapd0");
	synth_event(s, 1, SEC + 106 * U, R, 0x2000, 2);
	synth_event(s, 1, SEC + 148 * U, R, 0x2005, 1);
	synth_event(s, 1, SEC + 212 * U, R, 0x2006, 2);
	synth_event(s, 1, SEC + 271 * U, R, 0x3000, 2);
	synth_event(s, 1, SEC + 300 * U, R, 0x8001, 1);
	synth_event(s, 1, SEC + 320 * U, R, 0x9000, 1);
	synth_event(s, 1, SEC + 330 * U, R, 0x50, 1);
	synth_task(s, 1, TGID_B);
	synth_event(s, 1, SEC + 340 * U, F, 0x3002, 1);
	synth_flush_all(s);
}

struct parts {
	struct pgtrace_reclaim_part p[16];
	unsigned int n;
	int fail_at;		/* return -EINTR at this part, if >= 0 */
};

static int keep_part(const struct pgtrace_reclaim_part *p, void *arg)
{
	struct parts *ps = arg;

	if ((int)ps->n == ps->fail_at)
		return -EINTR;
	if (ps->n < 16)
		ps->p[ps->n] = *p;
	ps->n++;
	return 0;
}

static int collect(const struct synth *s, struct pgtrace_analysis *a, struct pgtrace_reclaim *rc,
		   struct parts *ps)
{
	struct pgtrace_reclaim_params p = { .part = keep_part, .arg = ps };
	struct pgtrace_reader *r;
	int ret;

	ret = pgtrace_reader_open_mem(&r, s->buf, s->len, 0);
	if (ret)
		return ret;
	ret = pgtrace_reclaim_collect(r, a, rc, ps ? &p : NULL);
	pgtrace_reader_close(r);
	return ret;
}

static const struct pgtrace_reclaim_group *group(const struct pgtrace_reclaim_group *g, size_t n,
						 int64_t key)
{
	for (size_t i = 0; i < n; i++)
		if (g[i].key == key)
			return &g[i];
	return NULL;
}

TEST(attribution)
{
	struct parts ps = { .fail_at = -1 };
	const struct pgtrace_reclaim_group *g;
	struct pgtrace_analysis a;
	struct pgtrace_reclaim rc;
	struct synth s;

	reclaim_trace(&s);
	ASSERT_EQ(0, collect(&s, &a, &rc, &ps));

	EXPECT_EQ(7, rc.events);
	EXPECT_EQ(10, rc.pages);
	EXPECT_EQ(7, rc.traced_pages);
	EXPECT_EQ(4, rc.traced_blocks);
	EXPECT_EQ(1, rc.snapshot_pages);
	EXPECT_EQ(1, rc.snapshot_events);
	EXPECT_EQ(2, rc.unknown_pages);
	EXPECT_EQ(2, rc.unknown_events);
	/* Never guessed: the analysis's unmatched reclaims, no more, no less. */
	EXPECT_EQ(a.unmatched_pages[R], rc.unknown_pages);
	EXPECT_EQ(rc.pages, rc.traced_pages + rc.snapshot_pages + rc.unknown_pages);

	/* A: 5 pages of 3 allocations, lived 80, 96, 128, 192, 192 U. */
	ASSERT_EQ(2, rc.nr_tasks);
	g = &rc.by_task[0];
	EXPECT_EQ(TGID_A, g->key);
	EXPECT_EQ(5, g->pages);
	EXPECT_EQ(3, g->blocks);
	EXPECT_EQ(4, g->parts);
	EXPECT_EQ(5, g->life.pages);
	EXPECT_EQ(80 * U, g->life.min_ns);
	EXPECT_EQ(192 * U, g->life.max_ns);
	EXPECT_EQ(128 * U, pgtrace_reclaim_percentile(&g->life, 50));
	EXPECT_EQ(192 * U, pgtrace_reclaim_percentile(&g->life, 90));
	EXPECT_EQ(688 * U, g->life.sum_ns);
	/* B: 2 pages of one allocation, 256 U each. */
	g = &rc.by_task[1];
	EXPECT_EQ(TGID_B, g->key);
	EXPECT_EQ(2, g->pages);
	EXPECT_EQ(1, g->blocks);
	EXPECT_EQ(1, g->parts);
	EXPECT_EQ(256 * U, pgtrace_reclaim_percentile(&g->life, 50));
	/* Nobody else, kswapd least of all: it reclaimed, it allocated nothing. */
	EXPECT_EQ(NULL, group(rc.by_task, rc.nr_tasks, KSWAPD));

	/* By stack: the order-2 block's 3 pages; the rest not sampled. */
	ASSERT_EQ(2, rc.nr_stacks);
	g = group(rc.by_stack, rc.nr_stacks, 0);
	ASSERT_NE(NULL, g);
	EXPECT_EQ(4, g->pages);
	EXPECT_EQ(3, g->blocks);
	EXPECT_EQ(96 * U, pgtrace_reclaim_percentile(&g->life, 50));
	g = group(rc.by_stack, rc.nr_stacks, STACK);
	ASSERT_NE(NULL, g);
	EXPECT_EQ(3, g->pages);
	EXPECT_EQ(1, g->blocks);
	EXPECT_EQ(2, g->parts);
	EXPECT_EQ(128 * U, g->life.min_ns);
	EXPECT_EQ(192 * U, pgtrace_reclaim_percentile(&g->life, 50));

	/* All traced pages: 80 96 128 192 192 256 256. */
	EXPECT_EQ(7, rc.life.pages);
	EXPECT_EQ(192 * U, pgtrace_reclaim_percentile(&rc.life, 50));
	EXPECT_EQ(256 * U, pgtrace_reclaim_percentile(&rc.life, 90));
	EXPECT_EQ(80 * U, pgtrace_reclaim_percentile(&rc.life, 0));

	/* Each part, in time order. */
	ASSERT_EQ(8, ps.n);
	EXPECT_EQ(0x2000, ps.p[0].pfn);
	EXPECT_EQ(1, ps.p[0].npages);
	EXPECT_EQ(96 * U, ps.p[0].life_ns);
	EXPECT_EQ(0x2001, ps.p[1].pfn);
	EXPECT_EQ(80 * U, ps.p[1].life_ns);
	EXPECT_EQ(SEC + 106 * U, ps.p[1].time_ns);
	/* Part of the order-2 block: the whole allocation is named. */
	EXPECT_EQ(PGTRACE_RECLAIM_TRACED, ps.p[2].origin);
	EXPECT_EQ(0x2005, ps.p[2].pfn);
	EXPECT_EQ(1, ps.p[2].npages);
	EXPECT_EQ(KSWAPD, ps.p[2].task);
	EXPECT_EQ(0x2004, ps.p[2].alloc_pfn);
	EXPECT_EQ(4, ps.p[2].alloc_npages);
	EXPECT_EQ(2, ps.p[2].alloc_order);
	EXPECT_EQ(TGID_A, ps.p[2].alloc_task);
	EXPECT_EQ(STACK, ps.p[2].alloc_stack);
	EXPECT_EQ(SEC + 20 * U, ps.p[2].alloc_ns);
	EXPECT_EQ(0x2006, ps.p[3].pfn);
	EXPECT_EQ(2, ps.p[3].npages);
	EXPECT_EQ(0x2004, ps.p[3].alloc_pfn);
	EXPECT_EQ(192 * U, ps.p[3].life_ns);
	EXPECT_EQ(TGID_B, ps.p[4].alloc_task);
	EXPECT_EQ(0, ps.p[4].alloc_stack);
	EXPECT_EQ(1, ps.p[4].alloc_order);
	EXPECT_EQ(PGTRACE_RECLAIM_SNAPSHOT, ps.p[5].origin);
	EXPECT_EQ(0x8001, ps.p[5].pfn);
	EXPECT_EQ(PGTRACE_TASK_UNKNOWN, ps.p[5].alloc_task);
	EXPECT_EQ(0, ps.p[5].life_ns);
	EXPECT_EQ(PGTRACE_RECLAIM_UNKNOWN, ps.p[6].origin);
	EXPECT_EQ(0x9000, ps.p[6].pfn);
	EXPECT_EQ(PGTRACE_TASK_UNKNOWN, ps.p[6].alloc_task);
	EXPECT_EQ(PGTRACE_RECLAIM_UNKNOWN, ps.p[7].origin);
	EXPECT_EQ(0x50, ps.p[7].pfn);
	/* The last; nothing for the free. */
	EXPECT_EQ(SEC + 330 * U, ps.p[7].time_ns);

	pgtrace_reclaim_free(&rc);
	pgtrace_reclaim_free(&rc);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/* A reclaim that spans the rest of a block and pages beyond it. */
TEST(partial_and_beyond)
{
	struct parts ps = { .fail_at = -1 };
	struct pgtrace_analysis a;
	struct pgtrace_reclaim rc;
	struct synth s;

	synth_init(&s, 1, 4096, PAGETRACE_FLAG_TASKS);
	synth_name(&s, 0, TGID_A, "alpha");
	synth_event(&s, 0, SEC, A, 0x4000, 8);
	synth_event(&s, 0, SEC + U, F, 0x4000, 4);
	synth_name(&s, 0, KSWAPD, "kswapd0");
	/* 0x4004..0x4007 are A's; 0x4008..0x400b nobody's. */
	synth_event(&s, 0, SEC + 2 * U, R, 0x4004, 8);
	/* The block is gone: a second reclaim of it is unknown. */
	synth_event(&s, 0, SEC + 3 * U, R, 0x4006, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, &rc, &ps));
	EXPECT_EQ(2, rc.events);
	EXPECT_EQ(4, rc.traced_pages);
	EXPECT_EQ(1, rc.traced_blocks);
	EXPECT_EQ(5, rc.unknown_pages);
	EXPECT_EQ(2, rc.unknown_events);
	EXPECT_EQ(a.unmatched_pages[R], rc.unknown_pages);
	ASSERT_EQ(1, rc.nr_tasks);
	EXPECT_EQ(TGID_A, rc.by_task[0].key);
	EXPECT_EQ(4, rc.by_task[0].pages);
	EXPECT_EQ(1, rc.by_task[0].blocks);
	/* The piece's 4 pages in one part, then the unknown rest. */
	ASSERT_EQ(3, ps.n);
	EXPECT_EQ(0x4004, ps.p[0].pfn);
	EXPECT_EQ(4, ps.p[0].npages);
	EXPECT_EQ(0x4000, ps.p[0].alloc_pfn);
	EXPECT_EQ(8, ps.p[0].alloc_npages);
	EXPECT_EQ(3, ps.p[0].alloc_order);
	EXPECT_EQ(2 * U, ps.p[0].life_ns);
	EXPECT_EQ(0x4008, ps.p[1].pfn);
	EXPECT_EQ(4, ps.p[1].npages);
	EXPECT_EQ(PGTRACE_RECLAIM_UNKNOWN, ps.p[1].origin);
	pgtrace_reclaim_free(&rc);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/*
 * Random allocations, frees, partial frees, reallocations and reclaims on
 * two CPUs, with a snapshot: the pages of no known allocation are always
 * the analysis's unmatched reclaims, and every page reclaimed is counted
 * once.
 */
TEST(random_against_analysis)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		uint64_t st = seed * 0x9e3779b97f4a7c15ULL, t[2] = { SEC, SEC }, sum = 0;
		struct pgtrace_analysis a;
		struct pgtrace_reclaim rc;
		struct synth s;

		synth_init(&s, 2, 4096, PAGETRACE_FLAG_TASKS | PAGETRACE_FLAG_SNAPSHOT);
		synth_snapshot(&s, 0);
		for (int i = 0; i < 20; i++)
			synth_event(&s, 0, SEC, A, 0x1000 + 64 * i, 1 + synth_rand(&st) % 16);
		synth_flush(&s, 0, 0);
		for (int i = 0; i < 4000; i++) {
			unsigned int cpu = synth_rand(&st) & 1, order = synth_rand(&st) % 4;
			uint64_t pfn = 0x1000 + (synth_rand(&st) % 2048 & ~((1ULL << order) - 1));
			uint64_t x = synth_rand(&st) % 10, np = 1ULL << order;

			if (!(i % 50))
				synth_task(&s, cpu, 1 + synth_rand(&st) % 5);
			t[cpu] += U * (1 + synth_rand(&st) % 8);
			/* Frees and reclaims of any size, aligned or not. */
			if (x >= 5) {
				pfn = 0x1000 + synth_rand(&st) % 2048;
				np = 1 + synth_rand(&st) % 6;
			}
			synth_event(&s, cpu, t[cpu], x < 5 ? A : x < 8 ? F : R, pfn, np);
		}
		synth_flush_all(&s);
		ASSERT_EQ(0, collect(&s, &a, &rc, NULL));
		EXPECT_EQ(a.stats.by_type[R], rc.events);
		EXPECT_EQ(a.stats.pages_by_type[R], rc.pages);
		EXPECT_EQ(a.unmatched_pages[R], rc.unknown_pages) TH_LOG("seed %lu", (unsigned long)seed);
		EXPECT_EQ(rc.pages, rc.traced_pages + rc.snapshot_pages + rc.unknown_pages);
		EXPECT_LT(0, rc.traced_pages);
		EXPECT_LT(0, rc.snapshot_pages + rc.unknown_pages);
		for (size_t i = 0; i < rc.nr_tasks; i++)
			sum += rc.by_task[i].pages;
		EXPECT_EQ(rc.traced_pages, sum);
		sum = 0;
		for (size_t i = 0; i < rc.nr_stacks; i++)
			sum += rc.by_stack[i].blocks;
		EXPECT_EQ(rc.traced_blocks, sum);
		EXPECT_EQ(rc.traced_pages, rc.life.pages);
		pgtrace_reclaim_free(&rc);
		pgtrace_analysis_free(&a);
		synth_free(&s);
	}
}

TEST(errors)
{
	struct parts ps = { .fail_at = 3 };
	struct pgtrace_reclaim rc = { 0 };
	struct pgtrace_event ev = { .type = R, .pfn = 1, .npages = 1 };
	struct pgtrace_analysis a;
	struct synth s;

	/* Not set up: refused, not a crash. */
	EXPECT_EQ(-EINVAL, pgtrace_reclaim_event(&ev, NULL, &rc));
	EXPECT_EQ(-EINVAL, pgtrace_reclaim_event(&ev, NULL, NULL));
	EXPECT_EQ(-EINVAL, pgtrace_reclaim_finish(&rc));
	pgtrace_reclaim_free(&rc);
	/* The part hook's error stops the analysis, with what came before. */
	reclaim_trace(&s);
	EXPECT_EQ(-EINTR, collect(&s, &a, &rc, &ps));
	EXPECT_EQ(3, ps.n);
	/* The refused part is counted: the hook sees it after. */
	EXPECT_EQ(5, rc.traced_pages);
	pgtrace_reclaim_free(&rc);
	pgtrace_analysis_free(&a);
	synth_free(&s);
	/* Bucket bounds: exact, then four per power of two. */
	EXPECT_EQ(0, pgtrace_reclaim_bucket_ns(0));
	EXPECT_EQ(7 * U, pgtrace_reclaim_bucket_ns(7));
	EXPECT_EQ(8 * U, pgtrace_reclaim_bucket_ns(8));
	EXPECT_EQ(10 * U, pgtrace_reclaim_bucket_ns(9));
	EXPECT_EQ(16 * U, pgtrace_reclaim_bucket_ns(12));
}

/* ------------------------------------------------------------- the CLI */

static char dir[64];

static int run(const char *args)
{
	const char *env = getenv("PAGETRACE");

	return run_in(dir, env ? env : PAGETRACE_BIN, args);
}

static void write_trace(struct __test_metadata *_metadata, const char *name,
			const struct synth *s)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)s->len, write(fd, s->buf, s->len));
	close(fd);
}

FIXTURE(cli) {
	int unused;
};

FIXTURE_SETUP(cli)
{
	struct synth s;

	snprintf(dir, sizeof(dir), "/tmp/pagetrace-reclaim-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(dir));
	reclaim_trace(&s);
	write_trace(_metadata, "t.pt", &s);
	synth_free(&s);
}

FIXTURE_TEARDOWN(cli)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

/* A report's figures are long: the log shows its reclaim section alone. */
static const char *excerpt(const char *s)
{
	const char *sec = strstr(s, "<section");

	return sec ? sec : s;
}

#define HAS(s, sub) EXPECT_TRUE(strstr((s), (sub)) != NULL) {			\
		TH_LOG("no %s in:\n%.4000s", (sub), excerpt(s));			\
	}

TEST_F(cli, text)
{
	const char *out;

	ASSERT_EQ(0, run("stats --reclaim t.pt"));
	out = slurp(dir, "out");
	HAS(out, "reclaimed:       10 pages in 7 events\n");
	HAS(out, "  allocated in the trace:      7 pages of 4 allocations\n");
	HAS(out, "  allocated before it:         1 pages (in the snapshot; by whom not known)\n");
	HAS(out, "  allocation not in the trace: 2 pages");
	/* 80U = 10240 ns, 128U = 16384, 192U = 24576, 256U = 32768. */
	HAS(out, "  100 alpha                           5        3    10.2 us    16.4 us"
		 "    24.6 us    24.6 us\n"
		 "  200 beta                            2        1    32.8 us    32.8 us"
		 "    32.8 us    32.8 us\n"
		 "  all                                 7        4");
	HAS(out, "by allocation stack (sampled about 1 per 64 pages allocated):\n");
	HAS(out, "  not sampled                         4        3");
	HAS(out, "  7                                   3        1    16.4 us    24.6 us"
		 "    24.6 us    24.6 us\n      0xffffffff81001000 < 0xffffffff81002000\n");
	EXPECT_STREQ("", slurp(dir, "err"));

	ASSERT_EQ(0, run("stats --reclaim=list t.pt"));
	out = slurp(dir, "out");
	HAS(out, "     0.000018944 pfn=0x2005 npages=1 by 50 kswapd0: allocated by 100 alpha at"
		 " 0.000002560 s, order 2, stack 7, lived 16.4 us\n");
	HAS(out, "pfn=0x8001 npages=1 by 50 kswapd0: allocated before the trace (snapshot)\n");
	HAS(out, "pfn=0x9000 npages=1 by 50 kswapd0: allocation not in the trace\n");
	HAS(out, "reclaimed:       10 pages in 7 events\n");

	/* Bad use says why. */
	EXPECT_EQ(2, run("stats --reclaim=all t.pt"));
	HAS(slurp(dir, "err"), "--reclaim=all: only 'list' is known");
	EXPECT_EQ(2, run("stats --reclaim --quick t.pt"));
	EXPECT_EQ(2, run("stats --reclaim --by task t.pt"));
	HAS(slurp(dir, "err"), "--reclaim goes with neither --by nor --quick");
	EXPECT_EQ(1, run("stats --reclaim nonexistent"));
}

TEST_F(cli, json)
{
	const char *out;

	ASSERT_EQ(0, run("stats --reclaim --json t.pt"));
	out = slurp(dir, "out");
	HAS(out, "{\"events\": 7, \"pages\": 10, \"traced\": {\"pages\": 7, \"blocks\": 4}, "
		 "\"snapshot\": {\"pages\": 1, \"events\": 1}, \"unknown\": {\"pages\": 2, "
		 "\"events\": 2}, \"lifetime\": {\"pages\": 7, \"min_ns\": 10240, \"p50_ns\": 24576, "
		 "\"p90_ns\": 32768, \"max_ns\": 32768, \"mean_ns\": ");
	HAS(out, "\"by_task\": [{\"tgid\": 100, \"comm\": \"alpha\", \"pages\": 5, \"blocks\": 3, "
		 "\"parts\": 4, \"lifetime\": {\"pages\": 5, \"min_ns\": 10240, \"p50_ns\": 16384, "
		 "\"p90_ns\": 24576, \"max_ns\": 24576, \"mean_ns\": 17612, \"buckets\": "
		 "[[10240, 1], [12288, 1], [16384, 1], [24576, 2]]}}, {\"tgid\": 200, \"comm\": "
		 "\"beta\", \"pages\": 2, \"blocks\": 1, \"parts\": 1");
	HAS(out, "{\"stack\": 7, \"frames\": [\"0xffffffff81001000\", \"0xffffffff81002000\"], "
		 "\"pages\": 3, \"blocks\": 1, \"parts\": 2");
	HAS(out, "{\"stack\": 0, \"frames\": [], \"pages\": 4, \"blocks\": 3");
	HAS(out, "\"stack_rate\": 64}\n");

	ASSERT_EQ(0, run("stats --reclaim=list --json t.pt"));
	out = slurp(dir, "out");
	HAS(out, "{\"parts\": [{\"time_ns\": 13568, \"pfn\": 8192, \"npages\": 1, \"task\": 50, "
		 "\"origin\": \"traced\", \"alloc_time_ns\": 1280, \"life_ns\": 12288, "
		 "\"alloc_pfn\": 8192, \"alloc_npages\": 1, \"alloc_task\": 100, "
		 "\"alloc_stack\": 0, \"alloc_order\": 0}, ");
	HAS(out, "{\"time_ns\": 38400, \"pfn\": 32769, \"npages\": 1, \"task\": 50, "
		 "\"origin\": \"snapshot\"}, ");
	HAS(out, "], \"events\": 7, \"pages\": 10, ");
	if (system("python3 -c pass 2>/dev/null"))
		SKIP(return, "no python3");
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "cd %s && python3 -c 'import json; d = json.load(open(\"out\"));"
			 " print(len(d[\"parts\"]), d[\"parts\"][2][\"alloc_pfn\"], d[\"by_task\"][0][\"pages\"])'"
			 " >py 2>&1", dir);
		EXPECT_EQ(0, system(cmd));
		EXPECT_STREQ("8 8196 5\n", slurp(dir, "py"));
	}
}

/* Reports outgrow slurp()'s buffers. */
static char html[1 << 21];

TEST_F(cli, report)
{
	char cmd[512];

	ASSERT_EQ(0, run("report t.pt -o r.html"));
	EXPECT_STREQ("", slurp(dir, "err"));
	ASSERT_LT(0, slurp_into(dir, "r.html", html, sizeof(html)));
	HAS(html, "<section id=\"sec-reclaim\">\n<h2>Who caused reclaim</h2>\n<p>10 pages reclaimed"
		  " in 7 events: 7 of them from 4 allocations in the trace, 1 allocated before it");
	HAS(html, "<tr><td>100</td><td>alpha</td><td>5</td><td>3</td><td>0.0164</td>"
		  "<td>0.0246</td><td>0.0246</td></tr>\n<tr><td>200</td><td>beta</td><td>2</td>"
		  "<td>1</td><td>0.0328</td><td>0.0328</td><td>0.0328</td></tr>\n</table>");
	HAS(html, "<table id=\"tab-reclaim-stacks\"");
	HAS(html, "<tr><td>7</td><td>0xffffffff81001000 &lt; 0xffffffff81002000</td><td>3</td>");
	HAS(html, "<tr><td></td><td>not sampled</td><td>4</td><td>3</td>");
	HAS(html, "<svg id=\"fig-reclaim-life\"");
	if (system("python3 -c pass 2>/dev/null"))
		SKIP(return, "no python3");
	snprintf(cmd, sizeof(cmd), "cd %s && python3 %s/check_report.py r.html >py 2>&1", dir,
		 PT_TEST_DATA "/..");
	EXPECT_EQ(0, system(cmd)) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	HAS(slurp(dir, "py"), "fig-reclaim-life: 3 rect");
}

/* Go's scavenger takes free pages: none has a known allocation, and it says why. */
TEST_F(cli, go)
{
	const char *out;

	ASSERT_EQ(0, run("stats --reclaim --go " PT_TEST_DATA "/go-pagetrace.bin"));
	out = slurp(dir, "out");
	EXPECT_STREQ("reclaimed:       18022 pages in 221 events\n"
		     "  allocated in the trace:      0 pages of 0 allocations\n"
		     "  allocated before it:         0 pages (in the snapshot; by whom not known)\n"
		     "  allocation not in the trace: 18022 pages (Go scavenges pages that are "
		     "free, not allocated)\n", out);
	/* The same pages as the analysis's unmatched reclaims. */
	ASSERT_EQ(0, run("stats --json --go " PT_TEST_DATA "/go-pagetrace.bin"));
	HAS(slurp(dir, "out"), "\"reclaim\": {\"events\": 221, \"pages\": 18022}, \"in_snapshot\"");
}

/* Without reclaim, the section says so and draws nothing. */
TEST_F(cli, report_no_reclaim)
{
	struct synth s;

	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC, A, 0x2000, 1);
	synth_event(&s, 0, SEC + U, F, 0x2000, 1);
	synth_flush_all(&s);
	write_trace(_metadata, "n.pt", &s);
	synth_free(&s);
	ASSERT_EQ(0, run("report n.pt -o n.html"));
	ASSERT_LT(0, slurp_into(dir, "n.html", html, sizeof(html)));
	HAS(html, "<p>No page was reclaimed in this trace.</p>");
	EXPECT_EQ(NULL, strstr(html, "fig-reclaim-life"));
	ASSERT_EQ(0, run("stats --reclaim n.pt"));
	EXPECT_STREQ("reclaimed:       0 pages in 0 events\n"
		     "  allocated in the trace:      0 pages of 0 allocations\n"
		     "  allocated before it:         0 pages (in the snapshot; by whom not known)\n"
		     "  allocation not in the trace: 0 pages (before the session without a "
		     "snapshot, or lost)\n", slurp(dir, "out"));
}

TEST_HARNESS_MAIN
