// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis on two threads (pgtrace_analysis_params.threads, stats
 * --threads) gives what it gives on one, to the byte: the library's figures
 * compared field by field, and pagetrace stats's output in every format
 * compared with cmp, on generated traces that go through every path of the
 * apply (split, unmatched and repeated frees, blocks larger than a leaf,
 * blocks across zones, the hash map, reclaims over several blocks) and of
 * the hand-over (snapshot runs, the kernel counters' mark in the middle,
 * late events, losses), each long enough to go round the ring many times.
 */
#include <fcntl.h>
#include <stddef.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL
#define US	1000ULL
#define A	PAGETRACE_EV_ALLOC
#define F	PAGETRACE_EV_FREE
#define R	PAGETRACE_EV_RECLAIM

/* What a generated trace has besides the plain events. */
#define T_SNAP		(1U << 0)	/* snapshot runs, and allocations over them */
#define T_COUNTED	(1U << 1)	/* the start counters, mid-trace */
#define T_LATE		(1U << 2)	/* a CPU held back past hold_ns */
#define T_LOST		(1U << 3)	/* chunks reporting losses */

#define NR_CPUS		4
#define LIVE_MAX	4096

/* Two zones, the second starting inside a leaf, and a gap above them. */
static const struct pgtrace_zone zones[] = {
	{ .node = 0, .zone = 1, .start_pfn = 0x1000, .end_pfn = 0x100000,
	  .present_pages = 0xff000, .name = "DMA32" },
	{ .node = 0, .zone = 2, .start_pfn = 0x100200, .end_pfn = 0x180000,
	  .present_pages = 0x7fe00, .name = "Normal" },
};

struct live {
	uint64_t	pfn;
	uint64_t	np;
};

/* A PFN for a block of @np pages: in a zone mostly, sometimes in none. */
static uint64_t pick_pfn(uint64_t *st, uint64_t np)
{
	uint64_t x = synth_rand(st), pfn;

	if (x % 20 == 0)
		pfn = 0x40000000ULL + (x >> 8) % 0x10000;	/* hashed: outside the flat map */
	else if (x % 20 < 8)
		pfn = 0x1000 + (x >> 8) % 0xff000;
	else
		pfn = 0x100000 + (x >> 8) % 0x80000;		/* across the zone edge too */
	/* Blocks are aligned to their size, as the buddy allocator's are. */
	if (!(np & (np - 1)))
		pfn &= ~(np - 1);
	return pfn;
}

/* Mostly small orders; now and then larger than a leaf, or not a power of two. */
static uint64_t pick_npages(uint64_t *st)
{
	uint64_t x = synth_rand(st) % 1000;

	if (x < 600)
		return 1;
	if (x < 900)
		return 1ULL << (1 + x % 3);
	if (x < 970)
		return 1ULL << (4 + x % 7);
	/* Larger than a leaf (few: an allocation in the snapshot's time walks its pages). */
	if (x < 975)
		return 1ULL << (11 + x % 3);
	return 3 + x % 1000;
}

/* @n events of every kind on NR_CPUS CPUs, with @what (T_*), from @seed. */
static void gen(struct synth *s, unsigned int n, unsigned int what, uint64_t seed)
{
	uint64_t st = seed, t = SEC + 10 * US, counters = SEC + (uint64_t)n / 2 * US;
	static struct live live[LIVE_MAX];
	unsigned int nlive = 0, late_cpu = NR_CPUS - 1;
	bool held = false;

	if (what & T_COUNTED)
		synth_init_zones_counted(s, NR_CPUS, 4096, PAGETRACE_FLAG_SNAPSHOT, zones, 2,
					 counters);
	else
		synth_init_zones(s, NR_CPUS, 4096, what & T_SNAP ? PAGETRACE_FLAG_SNAPSHOT : 0,
				 zones, 2);
	if (what & T_SNAP) {
		/* Runs of any length and alignment, as the walk finds them. */
		synth_snapshot(s, 0);
		for (unsigned int i = 0; i < 400; i++) {
			uint64_t x = synth_rand(&st);

			synth_event(s, 0, SEC / 2, A, 0x1000 + (x >> 8) % 0x17f000,
				    1 + (x >> 40) % 5000);
		}
		synth_flush(s, 0, 0);
	}
	for (unsigned int i = 0; i < n; i++) {
		uint64_t x = synth_rand(&st), np, pfn;
		unsigned int cpu = x % NR_CPUS, op = (x >> 8) % 100, k;

		/* About 1 us an event; 40 while a CPU is held, to get past hold_ns. */
		t += (x >> 16) % (held ? 80000 : 2000);
		/* Held back: its events wait in an open chunk while the others go on. */
		if (what & T_LATE && i == n / 3) {
			for (unsigned int j = 0; j < 40; j++)
				synth_event(s, late_cpu, t + j * 128, F, pick_pfn(&st, 1), 1);
			t += 2 * SEC;
			held = true;
		}
		if (held && i == 2 * n / 3)
			held = false;
		if (held && cpu == late_cpu)
			cpu = 0;
		if (what & T_LOST && i % 5000 == 4999)
			s->cpus[cpu].lost += 1 + x % 50;
		k = nlive ? (x >> 24) % nlive : 0;
		if (op < 45 || !nlive) {
			np = pick_npages(&st);
			pfn = pick_pfn(&st, np);
			synth_event(s, cpu, t, A, pfn, np);
			if (nlive < LIVE_MAX)
				live[nlive++] = (struct live){ pfn, np };
			else
				live[k] = (struct live){ pfn, np };
			continue;
		}
		pfn = live[k].pfn;
		np = live[k].np;
		if (op < 75) {
			synth_event(s, cpu, t, F, pfn, np);		/* the whole block */
		} else if (op < 82) {
			synth_event(s, cpu, t, F, pfn + np / 2, np - np / 2);	/* a part */
			if (np > 1) {
				live[k].np = np / 2;
				continue;
			}
		} else if (op < 88) {
			synth_event(s, cpu, t, F, pick_pfn(&st, 1), 1 + x % 9);	/* unmatched */
			continue;
		} else if (op < 95) {
			synth_event(s, cpu, t, R, pfn, 2 * np + x % 7);	/* and its neighbours */
		} else {
			synth_event(s, cpu, t, A, pfn, np);		/* again: a lost free */
			continue;
		}
		live[k] = live[--nlive];
	}
	synth_flush_all(s);
}

static int collect(const struct synth *s, struct pgtrace_analysis *a, unsigned int threads)
{
	struct pgtrace_analysis_params p = { .threads = threads };
	struct pgtrace_reader *r;
	int ret;

	ret = pgtrace_reader_open_mem(&r, s->buf, s->len, 0);
	if (ret)
		return ret;
	ret = pgtrace_analysis_collect(r, a, &p);
	pgtrace_reader_close(r);
	return ret;
}

/* The first figure where @x and @y differ, or NULL. */
static const char *differ(const struct pgtrace_analysis *x, const struct pgtrace_analysis *y)
{
#define SAME(f, len) do { if (memcmp(&x->f, &y->f, (len))) return #f; } while (0)
#define SAME_ARRAY(f, n) do { if (memcmp(x->f, y->f, (n) * sizeof(*x->f))) return #f; } while (0)
	SAME(stats, offsetof(struct pgtrace_stats, cpus));
	SAME(stats.no_cpu, sizeof(x->stats.no_cpu));
	SAME_ARRAY(stats.cpus, x->stats.nr_cpus);
	SAME(nr_zones, sizeof(x->nr_zones));
	SAME_ARRAY(zone_stats, x->nr_zones + 1);
	SAME(other_zone, sizeof(x->other_zone));
	SAME(origin_ns, sizeof(x->origin_ns));
	SAME(bin_ns, sizeof(x->bin_ns));
	SAME(nr_bins, sizeof(x->nr_bins));
	SAME_ARRAY(bins, PGTRACE_RATE_BINS);
	SAME(lost_sites, sizeof(x->lost_sites));
	SAME(nr_lost_sites, sizeof(x->nr_lost_sites));
	SAME_ARRAY(life, PGTRACE_LIFE_ORDERS);
	SAME(life_all, sizeof(x->life_all));
	/* snapshot_events up to counters_marked: plain figures, one after another. */
	SAME(snapshot_events, offsetof(struct pgtrace_analysis, priv) -
			      offsetof(struct pgtrace_analysis, snapshot_events));
	return NULL;
#undef SAME
#undef SAME_ARRAY
}

static const struct {
	const char	*name;
	unsigned int	what;
	uint64_t	seed;
} traces[] = {
	{ "plain", 0, 1 },
	{ "lost", T_LOST, 2 },
	{ "snapshot", T_SNAP, 3 },
	{ "counted", T_SNAP | T_COUNTED, 4 },
	{ "late", T_LATE | T_LOST, 5 },
	{ "all", T_SNAP | T_COUNTED | T_LATE | T_LOST, 6 },
};

#define NR_EVENTS	100000

TEST(library_same)
{
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
		struct pgtrace_analysis one, two;
		const char *d;
		struct synth s;

		gen(&s, NR_EVENTS, traces[i].what, traces[i].seed);
		ASSERT_EQ(0, collect(&s, &one, 1));
		ASSERT_EQ(0, collect(&s, &two, 2));
		d = differ(&one, &two);
		EXPECT_EQ(NULL, d) TH_LOG("trace %s: %s differs", traces[i].name, d);
		/* The traces do go through what they are meant to. */
		EXPECT_LT(0, one.unmatched_events[F]) TH_LOG("trace %s", traces[i].name);
		EXPECT_LT(0, one.realloc_events) TH_LOG("trace %s", traces[i].name);
		EXPECT_LT(0, one.life[11].count + one.life[12].count + one.life[13].count);
		EXPECT_LT(0, one.other_zone.events[A]);
		EXPECT_EQ(!!(traces[i].what & T_SNAP), !!one.snapshot_events);
		EXPECT_EQ(!!(traces[i].what & T_COUNTED), one.counters_marked);
		EXPECT_EQ(!!(traces[i].what & T_LATE), !!one.late_events);
		EXPECT_EQ(!!(traces[i].what & T_LOST), !!one.stats.lost);
		pgtrace_analysis_free(&one);
		pgtrace_analysis_free(&two);
		synth_free(&s);
	}
}

/* Hooks run on the calling thread: asking for two changes nothing. */
static void count_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
			 unsigned int order, void *arg)
{
	(void)time_ns;
	(void)pfn;
	(void)order;
	*(int64_t *)arg += sign * (int64_t)npages;
}

TEST(hooks_one_thread)
{
	int64_t pages = 0;
	struct pgtrace_analysis_params p = { .change = count_change, .arg = &pages, .threads = 2 };
	struct pgtrace_analysis a;
	struct pgtrace_reader *r;
	struct synth s;

	gen(&s, 20000, T_SNAP | T_COUNTED, 7);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	ASSERT_EQ(0, pgtrace_analysis_collect(r, &a, &p));
	EXPECT_EQ((int64_t)a.in_use, pages);
	pgtrace_reader_close(r);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/* The formats of pagetrace stats; those with hooks run on one thread anyway. */
static const char *const formats[] = {
	"", "--json", "--quick", "--quick --json", "--by task", "--by task --json",
	"--reclaim --json", "--reclaim=list",
};

/*
 * pagetrace stats --threads 1 and --threads 2 on @file in @dir, in every
 * format: the first format that prints otherwise, or NULL.
 */
static const char *cli_differ(const char *dir, const char *bin, const char *file)
{
	for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
		int one = sh("cd %s && %s stats --threads 1 %s %s >one 2>&1", dir, bin, formats[f], file);
		int two = sh("cd %s && %s stats --threads 2 %s %s >two 2>&1", dir, bin, formats[f], file);

		if (one || two || sh("cd %s && cmp -s one two", dir))
			return formats[f];
	}
	return NULL;
}

FIXTURE(cli) {
	char	dir[64];
	char	bin[512];
};

FIXTURE_SETUP(cli)
{
	const char *env = getenv("PAGETRACE");

	snprintf(self->bin, sizeof(self->bin), "%s", env ? env : PAGETRACE_BIN);
	snprintf(self->dir, sizeof(self->dir), "/tmp/pagetrace-threads-XXXXXX");
	ASSERT_TRUE(mkdtemp(self->dir) != NULL);
}

FIXTURE_TEARDOWN(cli)
{
	if (sh("rm -rf %s", self->dir))
		TH_LOG("cannot remove %s", self->dir);
}

TEST_F(cli, same_output)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/t.pt", self->dir);
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
		const char *d;
		struct synth s;

		gen(&s, NR_EVENTS, traces[i].what, traces[i].seed);
		synth_write_file(path, s.buf, s.len);
		d = cli_differ(self->dir, self->bin, "t.pt");
		EXPECT_EQ(NULL, d) TH_LOG("trace %s: stats %s differs", traces[i].name, d);
		synth_free(&s);
	}
	/* An empty trace: no events for the second thread at all. */
	{
		struct synth s;

		synth_init(&s, 2, 4096, 0);
		synth_write_file(path, s.buf, s.len);
		EXPECT_EQ(NULL, cli_differ(self->dir, self->bin, "t.pt"));
		synth_free(&s);
	}
}

/* gen_trace's trace (make check's PT_REF_TRACE): another mix of events. */
TEST_F(cli, ref_trace)
{
	const char *ref = getenv("PT_REF_TRACE");
	const char *d;

	if (!ref || access(ref, R_OK))
		SKIP(return, "no PT_REF_TRACE");
	d = cli_differ(self->dir, self->bin, ref);
	EXPECT_EQ(NULL, d) TH_LOG("stats %s differs", d);
}

TEST_F(cli, threads_option)
{
	EXPECT_EQ(2, run_in(self->dir, self->bin, "stats --threads 0 /dev/null"));
	EXPECT_EQ(2, run_in(self->dir, self->bin, "stats --threads x /dev/null"));
	EXPECT_EQ(2, run_in(self->dir, self->bin, "stats --threads -1 /dev/null"));
}

TEST_HARNESS_MAIN
