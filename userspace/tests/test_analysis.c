// SPDX-License-Identifier: GPL-2.0
/*
 * pgtrace_analysis_collect() on small synthetic streams with known answers:
 * time order across CPUs, lifetimes and their percentiles, pages in use,
 * split frees, snapshots, zones, the rate time line and lost sites.
 */
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define US	1000ULL
#define A	PAGETRACE_EV_ALLOC
#define F	PAGETRACE_EV_FREE
#define R	PAGETRACE_EV_RECLAIM
/* Times as the words keep them: in 128 ns steps. */
#define Q(t)	((t) & ~127ULL)

static int collect(struct synth *s, struct pgtrace_analysis *a,
		   const struct pgtrace_analysis_params *p)
{
	struct pgtrace_reader *r;
	int ret;

	ret = pgtrace_reader_open_mem(&r, s->buf, s->len, 0);
	if (ret)
		return ret;
	ret = pgtrace_analysis_collect(r, a, p);
	pgtrace_reader_close(r);
	return ret;
}

TEST(life_buckets)
{
	struct pgtrace_life_hist h;

	/* Exact below 64 steps of 128 ns, then 32 buckets per octave. */
	EXPECT_EQ(0, pgtrace_life_bucket_ns(0));
	EXPECT_EQ(63 * 128, pgtrace_life_bucket_ns(63));
	EXPECT_EQ(64 * 128, pgtrace_life_bucket_ns(64));
	EXPECT_EQ(66 * 128, pgtrace_life_bucket_ns(65));
	EXPECT_EQ(128 * 128, pgtrace_life_bucket_ns(64 + 32));
	EXPECT_EQ(0, pgtrace_life_order(1));
	EXPECT_EQ(1, pgtrace_life_order(2));
	EXPECT_EQ(2, pgtrace_life_order(3));
	EXPECT_EQ(10, pgtrace_life_order(1024));
	EXPECT_EQ(11, pgtrace_life_order(1025));
	EXPECT_EQ(PGTRACE_LIFE_ORDERS - 1, pgtrace_life_order(1ULL << 40));
	memset(&h, 0, sizeof(h));
	EXPECT_EQ(0, pgtrace_life_percentile(&h, 50));
}

/* The free is logged on CPU 1 and reaches the stream before the alloc. */
TEST(free_before_alloc_in_stream)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 2, 4096, 0);
	synth_event(&s, 0, SEC + 1280, A, 0x2000, 1);
	synth_event(&s, 1, SEC + 1280 + 10 * 128, F, 0x2000, 1);
	synth_flush(&s, 1, PAGETRACE_CHUNK_FLUSHED);
	synth_flush(&s, 0, PAGETRACE_CHUNK_FLUSHED);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(1, a.life_all.count);
	EXPECT_EQ(1280, a.life_all.min_ns);
	EXPECT_EQ(1280, a.life[0].max_ns);
	EXPECT_EQ(0, a.unmatched_events[F]);
	EXPECT_EQ(0, a.in_use);
	EXPECT_EQ(1, a.peak_in_use);
	EXPECT_EQ(SEC + 1280, a.peak_ns);
	EXPECT_EQ(0, a.late_events);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

TEST(lifetime_percentiles)
{
	struct pgtrace_analysis a;
	struct synth s;

	/* Lifetimes 1..50 x 128 ns of order-1 blocks, all exact buckets. */
	synth_init(&s, 2, 1 << 16, 0);
	for (unsigned int k = 1; k <= 50; k++) {
		uint64_t t = SEC + k * 100 * US;

		synth_event(&s, k % 2, t, A, 0x10000 + 2 * k, 2);
		synth_event(&s, (k + 1) % 2, t + k * 128, F, 0x10000 + 2 * k, 2);
	}
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(50, a.life[1].count);
	EXPECT_EQ(0, a.life[0].count);
	EXPECT_EQ(128, a.life[1].min_ns);
	EXPECT_EQ(50 * 128, a.life[1].max_ns);
	EXPECT_EQ(25 * 128, pgtrace_life_percentile(&a.life[1], 50));
	EXPECT_EQ(45 * 128, pgtrace_life_percentile(&a.life[1], 90));
	EXPECT_EQ(50 * 128, pgtrace_life_percentile(&a.life[1], 99));
	EXPECT_EQ(128, pgtrace_life_percentile(&a.life[1], 0));
	EXPECT_EQ(51 * 25 * 128, a.life[1].sum_ns);
	EXPECT_EQ(0, a.in_use);
	EXPECT_EQ(2, a.peak_in_use);
	EXPECT_EQ(0, a.late_events);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

TEST(peak_and_still_allocated)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 2, 4096, 0);
	synth_event(&s, 0, SEC + 1 * US, A, 0x2000, 8);		/* 8 */
	synth_event(&s, 1, SEC + 2 * US, A, 0x3000, 4);		/* 12 */
	synth_event(&s, 0, SEC + 3 * US, F, 0x2000, 8);		/* 4 */
	synth_event(&s, 1, SEC + 4 * US, A, 0x4000, 16);	/* 20: peak */
	synth_event(&s, 0, SEC + 5 * US, R, 0x4000, 16);	/* 4 */
	synth_event(&s, 1, SEC + 6 * US, A, 0x5000, 1);		/* 5 */
	/* Outside the zone [0x1000, 0x100000): counted apart. */
	synth_event(&s, 1, SEC + 7 * US, A, 0x200000, 2);	/* 7 */
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(20, a.peak_in_use);
	EXPECT_EQ(Q(SEC + 4 * US), a.peak_ns);
	EXPECT_EQ(7, a.in_use);
	EXPECT_EQ(3, a.in_use_blocks);
	EXPECT_EQ(4, a.in_use_by_order[2]);
	EXPECT_EQ(1, a.in_use_by_order[0]);
	EXPECT_EQ(2, a.in_use_by_order[1]);
	ASSERT_EQ(1, a.nr_zones);
	EXPECT_EQ(4, a.zone_stats[0].events[A]);
	EXPECT_EQ(29, a.zone_stats[0].pages[A]);
	EXPECT_EQ(1, a.zone_stats[0].events[F]);
	EXPECT_EQ(1, a.zone_stats[0].events[R]);
	EXPECT_EQ(16, a.zone_stats[0].pages[R]);
	EXPECT_EQ(5, a.zone_stats[0].in_use);
	EXPECT_EQ(20, a.zone_stats[0].peak_in_use);
	EXPECT_EQ(1, a.other_zone.events[A]);
	EXPECT_EQ(2, a.other_zone.in_use);
	EXPECT_EQ(0, pgtrace_analysis_zone(&a, 0x1000));
	EXPECT_EQ(PGTRACE_ZONE_OTHER, pgtrace_analysis_zone(&a, 0xfff));
	EXPECT_EQ(PGTRACE_ZONE_OTHER, pgtrace_analysis_zone(&a, 0x100000));
	EXPECT_EQ(2, a.life_all.count);
	EXPECT_EQ(1, a.life[3].count);
	EXPECT_EQ(Q(SEC + 3 * US) - Q(SEC + 1 * US), a.life[3].min_ns) {
		TH_LOG("order-3 lifetime %llu", (unsigned long long)a.life[3].min_ns);
	}
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/* split_page(): an order-2 block freed a page at a time, in any order. */
TEST(split_frees)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC + 1 * US, A, 0x4000, 4);
	synth_event(&s, 0, SEC + 2 * US, F, 0x4001, 1);
	synth_event(&s, 0, SEC + 3 * US, F, 0x4003, 1);
	synth_event(&s, 0, SEC + 4 * US, F, 0x4000, 1);
	synth_event(&s, 0, SEC + 5 * US, F, 0x4002, 1);
	/* A free of pages never allocated, and a half-matched one. */
	synth_event(&s, 0, SEC + 6 * US, F, 0x5000, 2);
	synth_event(&s, 0, SEC + 7 * US, A, 0x6000, 1);
	synth_event(&s, 0, SEC + 8 * US, F, 0x6000, 2);
	/* Allocated twice: the free in between was lost. */
	synth_event(&s, 0, SEC + 9 * US, A, 0x7000, 1);
	synth_event(&s, 0, SEC + 10 * US, A, 0x7000, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(5, a.life[2].count + a.life[0].count);
	EXPECT_EQ(4, a.life[2].count);
	EXPECT_EQ(1, a.unmatched_events[F]);
	EXPECT_EQ(3, a.unmatched_pages[F]);
	EXPECT_EQ(1, a.realloc_events);
	EXPECT_EQ(1, a.in_use);
	EXPECT_EQ(1, a.in_use_blocks);
	EXPECT_EQ(4, a.peak_in_use);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

TEST(snapshot_seeds_in_use)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 2, 4096, PAGETRACE_FLAG_SNAPSHOT);
	synth_snapshot(&s, 0);
	synth_event(&s, 0, SEC / 2, A, 0x8000, 8);
	synth_event(&s, 0, SEC / 2, A, 0x9000, 2);
	synth_flush(&s, 0, 0);
	synth_event(&s, 1, SEC + 1 * US, A, 0x2000, 1);
	synth_event(&s, 1, SEC + 2 * US, F, 0x8000, 8);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(2, a.snapshot_events);
	EXPECT_EQ(10, a.snapshot_pages);
	EXPECT_EQ(11, a.peak_in_use);
	EXPECT_EQ(3, a.in_use);
	/* The snapshot block has no start: no lifetime, but no unmatched free. */
	EXPECT_EQ(0, a.life_all.count);
	EXPECT_EQ(0, a.unmatched_events[F]);
	EXPECT_EQ(1, a.stats.snapshot_chunks);
	/* Snapshot events stay off the time line. */
	EXPECT_EQ(1, a.bins[0].events[A]);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

TEST(rate_bins_and_lost_sites)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 2, 4096, 0);
	synth_event(&s, 0, SEC + 500 * US, A, 0x2000, 1);
	synth_event(&s, 0, SEC + 2500 * US, A, 0x2001, 1);
	synth_event(&s, 0, SEC + 2600 * US, F, 0x2001, 1);
	synth_flush(&s, 0, 0);
	s.cpus[1].lost = 7;
	synth_event(&s, 1, SEC + 3500 * US, R, 0x2000, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(SEC, a.origin_ns);
	EXPECT_EQ(1000000, a.bin_ns);
	EXPECT_EQ(4, a.nr_bins);
	EXPECT_EQ(1, a.bins[0].events[A]);
	EXPECT_EQ(0, a.bins[1].events[A]);
	EXPECT_EQ(1, a.bins[2].events[A]);
	EXPECT_EQ(1, a.bins[2].events[F]);
	EXPECT_EQ(1, a.bins[3].events[R]);
	EXPECT_EQ(7, a.bins[3].lost);
	ASSERT_EQ(1, a.nr_lost_sites);
	EXPECT_EQ(1, a.lost_sites[0].cpu);
	EXPECT_EQ(7, a.lost_sites[0].lost);
	EXPECT_EQ(Q(SEC + 3500 * US), a.lost_sites[0].time_ns);
	EXPECT_EQ(7, a.stats.lost);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/* Over 1024 bins the time line halves its resolution, keeping the sums. */
TEST(rate_rebins)
{
	struct pgtrace_analysis a;
	struct synth s;
	uint64_t n = 0;

	synth_init(&s, 1, 1 << 16, 0);
	for (unsigned int i = 0; i < 3000; i++)
		synth_event(&s, 0, SEC + i * 1000 * US, A, 0x2000 + i, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_EQ(4000000, a.bin_ns);
	EXPECT_EQ(750, a.nr_bins);
	for (unsigned int i = 0; i < a.nr_bins; i++)
		n += a.bins[i].events[A];
	EXPECT_EQ(3000, n);
	EXPECT_EQ(4, a.bins[0].events[A]);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

struct hook_log {
	uint64_t	events, plus, minus, last_t, cancel_at;
	bool		ordered;
};

static int log_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct hook_log *l = arg;

	(void)a;
	if (ev->time_ns < l->last_t)
		l->ordered = false;
	l->last_t = ev->time_ns;
	l->events++;
	return l->events == l->cancel_at ? -ECANCELED : 0;
}

static void log_change(uint64_t t, uint64_t pfn, uint64_t npages, int sign,
		       unsigned int order, void *arg)
{
	struct hook_log *l = arg;

	(void)t;
	(void)pfn;
	(void)order;
	if (sign > 0)
		l->plus += npages;
	else
		l->minus += npages;
}

/* Many CPUs, chunks interleaved: the hooks see time order. */
TEST(hooks_see_time_order)
{
	struct hook_log l = { .ordered = true };
	struct pgtrace_analysis_params p = { .event = log_event, .change = log_change, .arg = &l };
	struct pgtrace_analysis a;
	struct synth s;
	uint64_t st = 42;

	synth_init(&s, 4, 512, 0);
	for (unsigned int i = 0; i < 600; i++) {
		unsigned int cpu = synth_rand(&st) % 4;

		synth_event(&s, cpu, SEC + i * 1000, A, 0x3000 + 4 * i, 4);
		synth_event(&s, (cpu + 1) % 4, SEC + i * 1000 + 500, F, 0x3000 + 4 * i, 4);
	}
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, &p));
	EXPECT_TRUE(l.ordered);
	EXPECT_EQ(1200, l.events);
	EXPECT_EQ(2400, l.plus);
	EXPECT_EQ(2400, l.minus);
	EXPECT_EQ(600, a.life[2].count);
	EXPECT_EQ(0, a.unmatched_events[F]);
	EXPECT_EQ(0, a.late_events);
	EXPECT_EQ(4, a.peak_in_use);
	/* 500 ns apart, in 128 ns steps: 384 or 512. */
	EXPECT_EQ(384, a.life[2].min_ns);
	EXPECT_EQ(512, a.life[2].max_ns);
	pgtrace_analysis_free(&a);

	/* A hook's error stops it and comes back. */
	memset(&l, 0, sizeof(l));
	l.ordered = true;
	l.cancel_at = 1000;
	EXPECT_EQ(-ECANCELED, collect(&s, &a, &p));
	EXPECT_EQ(1000, l.events);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/*
 * Held back at most max_held events: order may suffer, and says so.  CPU 1
 * frees what CPU 0 allocated, but all of CPU 0 comes first: with 16 events
 * held, allocs 0..83 go before free 0 arrives, so frees 0..82 are late.
 * They still match: their allocs went first.
 */
TEST(max_held_bounds_memory)
{
	struct pgtrace_analysis_params p = { .max_held = 16 };
	struct pgtrace_analysis a;
	struct synth s;

	synth_init(&s, 2, 4096, 0);
	for (unsigned int i = 0; i < 100; i++)
		synth_event(&s, 0, SEC + i * 1000, A, 0x3000 + i, 1);
	synth_flush(&s, 0, 0);
	for (unsigned int i = 0; i < 100; i++)
		synth_event(&s, 1, SEC + i * 1000 + 500, F, 0x3000 + i, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, &p));
	EXPECT_EQ(17, a.max_held_seen);
	EXPECT_EQ(100, a.life_all.count);
	EXPECT_EQ(83, a.late_events);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/*
 * A free of a page not known allocated while the snapshot is taken (up to
 * the start counters) is of a page allocated before the trace; one after
 * it is an allocation the trace does not hold.  Both are unmatched; only
 * the first is "in the snapshot".
 */
TEST(unmatched_in_snapshot)
{
	struct pgtrace_analysis a;
	struct synth s;

	synth_init_counted(&s, 2, 4096, PAGETRACE_FLAG_SNAPSHOT, SEC + 100 * US);
	synth_snapshot(&s, 0);
	synth_event(&s, 0, SEC / 2, A, 0x8000, 8);
	synth_flush(&s, 0, 0);
	synth_event(&s, 1, SEC + 10 * US, F, 0x9000, 4);
	synth_event(&s, 1, SEC + 20 * US, F, 0x8000, 8);
	synth_event(&s, 1, SEC + 200 * US, R, 0xa000, 1);
	synth_event(&s, 1, SEC + 300 * US, F, 0xb000, 2);
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	EXPECT_TRUE(a.counters_marked);
	EXPECT_EQ(2, a.unmatched_events[F]);
	EXPECT_EQ(6, a.unmatched_pages[F]);
	EXPECT_EQ(1, a.unmatched_events[R]);
	EXPECT_EQ(1, a.unmatched_in_snapshot_events[F]);
	EXPECT_EQ(4, a.unmatched_in_snapshot_pages[F]);
	EXPECT_EQ(0, a.unmatched_in_snapshot_events[R]);
	EXPECT_EQ(0, a.realloc_events);
	pgtrace_analysis_free(&a);
	synth_free(&s);
}

/* Unordered: the same counts as the full analysis, no time-order results. */
TEST(unordered_counts)
{
	struct pgtrace_analysis_params p = { .flags = PGTRACE_ANALYSIS_UNORDERED };
	struct pgtrace_analysis a, b;
	struct synth s;
	uint64_t st = 9;

	synth_init(&s, 3, 512, PAGETRACE_FLAG_SNAPSHOT);
	synth_snapshot(&s, 2);
	synth_event(&s, 2, SEC / 2, A, 0x8000, 8);
	synth_flush(&s, 2, 0);
	for (unsigned int i = 0; i < 3000; i++) {
		uint64_t x = synth_rand(&st);

		synth_event(&s, x % 3, SEC + i * 5 * US, 1 + (x >> 8) % 3,
			    (x >> 16) % 2 ? 0x2000 + (x >> 20) % 0x1000 : 0x300000,
			    1ULL << ((x >> 32) % 4));
	}
	s.cpus[1].lost = 5;
	synth_flush_all(&s);
	ASSERT_EQ(0, collect(&s, &a, NULL));
	ASSERT_EQ(0, collect(&s, &b, &p));
	EXPECT_EQ(a.stats.events, b.stats.events);
	EXPECT_EQ(0, memcmp(a.stats.by_type, b.stats.by_type, sizeof(a.stats.by_type)));
	EXPECT_EQ(0, memcmp(a.stats.by_order, b.stats.by_order, sizeof(a.stats.by_order)));
	EXPECT_EQ(a.stats.first_ns, b.stats.first_ns);
	EXPECT_EQ(a.stats.last_ns, b.stats.last_ns);
	for (unsigned int c = 0; c < 3; c++)
		EXPECT_EQ(a.stats.cpus[c].events, b.stats.cpus[c].events);
	EXPECT_EQ(0, memcmp(a.zone_stats[0].events, b.zone_stats[0].events,
			    sizeof(a.zone_stats[0].events)));
	EXPECT_EQ(0, memcmp(a.other_zone.pages, b.other_zone.pages, sizeof(a.other_zone.pages)));
	EXPECT_EQ(a.nr_bins, b.nr_bins);
	EXPECT_EQ(a.bin_ns, b.bin_ns);
	EXPECT_EQ(0, memcmp(a.bins, b.bins, a.nr_bins * sizeof(*a.bins)));
	EXPECT_EQ(1, b.nr_lost_sites);
	EXPECT_EQ(1, b.snapshot_events);
	EXPECT_EQ(8, b.snapshot_pages);
	EXPECT_EQ(0, b.life_all.count);
	EXPECT_EQ(0, b.peak_in_use);
	EXPECT_LT(0, a.life_all.count);
	pgtrace_analysis_free(&a);
	pgtrace_analysis_free(&b);
	synth_free(&s);
}

TEST_HARNESS_MAIN
