// SPDX-License-Identifier: GPL-2.0
/*
 * Every field survives encode (uapi helpers) -> stream -> decode (reader).
 */
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL

static struct pgtrace_reader *open_synth(struct __test_metadata *_metadata, struct synth *s)
{
	struct pgtrace_reader *r;

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s->buf, s->len, 0)) {
		TH_LOG("%s", r ? pgtrace_reader_error(r) : "ENOMEM");
	}
	return r;
}

static void expect_all(struct __test_metadata *_metadata, struct synth *s,
		       unsigned int batch)
{
	struct pgtrace_reader *r = open_synth(_metadata, s);
	struct pgtrace_event *evs;
	char why[512] = "";
	size_t n;

	ASSERT_EQ(0, synth_read_all(r, batch, &evs, &n)) {
		TH_LOG("%s", pgtrace_reader_error(r));
	}
	EXPECT_EQ(-1, synth_compare(s, evs, n, true, why, sizeof(why))) {
		TH_LOG("%s", why);
	}
	free(evs);
	pgtrace_reader_close(r);
}

TEST(word_helpers)
{
	static const uint64_t deltas[] = { 0, 127, 128, 129, 1000, (1ULL << 23) - 1 };
	static const uint64_t pfns[] = { 0, 1, 0x1a2b3, PAGETRACE_PFN_MAX };
	static const uint64_t npages[] = { 1, 2, 3, 512, PAGETRACE_NPAGES_MAX };

	for (unsigned int d = 0; d < ARRAY_SIZE(deltas); d++)
		for (unsigned int p = 0; p < ARRAY_SIZE(pfns); p++)
			for (unsigned int n = 0; n < ARRAY_SIZE(npages); n++)
				for (unsigned int t = 1; t <= 3; t++) {
					uint64_t w = pagetrace_event_word(deltas[d], pfns[p],
									  npages[n], t);

					ASSERT_EQ(t, pagetrace_word_type(w));
					ASSERT_EQ(deltas[d] & ~127ULL, pagetrace_word_delta_ns(w));
					ASSERT_EQ(pfns[p], pagetrace_word_pfn(w));
					ASSERT_EQ(npages[n], pagetrace_word_npages(w));
					ASSERT_FALSE(pagetrace_word_is_large(w));
					ASSERT_FALSE(pagetrace_word_is_pid(w));
				}

	/* Large: npages field 0, the flag set, pfn and delta intact. */
	{
		uint64_t w = pagetrace_large_event_word(4096, 0x12345, PAGETRACE_EV_FREE);

		ASSERT_TRUE(pagetrace_word_is_large(w));
		ASSERT_EQ(0, pagetrace_word_npages(w));
		ASSERT_EQ(0x12345, pagetrace_word_pfn(w));
		ASSERT_EQ(4096, pagetrace_word_delta_ns(w));
		ASSERT_EQ(PAGETRACE_EV_FREE, pagetrace_word_type(w));
	}
	/* Sync words keep t in 128 ns steps, up to 2^64 - 1. */
	ASSERT_EQ(0, pagetrace_word_type(pagetrace_sync_word(~0ULL)));
	ASSERT_EQ(~0ULL & ~127ULL, pagetrace_word_sync_ns(pagetrace_sync_word(~0ULL)));
	ASSERT_EQ(123456768ULL, pagetrace_word_sync_ns(pagetrace_sync_word(123456789ULL)));
	ASSERT_FALSE(pagetrace_word_is_pid(pagetrace_sync_word(~0ULL)));
	/* Pid and task words. */
	ASSERT_TRUE(pagetrace_word_is_pid(pagetrace_pid_word(7)));
	ASSERT_EQ(7, pagetrace_word_id(pagetrace_pid_word(7)));
	ASSERT_EQ(PAGETRACE_ID_TASK | 0xffffffffULL,
		  pagetrace_word_id(pagetrace_pid_word(PAGETRACE_ID_TASK | 0xffffffffULL)));
}

TEST(pfn_is_masked_to_35_bits)
{
	/* The encoder clamps by masking: bits above the field vanish. */
	uint64_t w = pagetrace_event_word(0, PAGETRACE_PFN_MAX + 5, 1, 1);

	ASSERT_EQ(4, pagetrace_word_pfn(w));
	ASSERT_EQ(1, pagetrace_word_npages(w));
	ASSERT_EQ(0, pagetrace_word_delta_ns(w));
}

TEST(every_field_through_the_reader)
{
	struct synth s;

	synth_init(&s, 3, 4096, PAGETRACE_FLAG_TASKS);
	synth_event(&s, 0, SEC + 1, PAGETRACE_EV_ALLOC, 0, 1);
	synth_event(&s, 0, SEC + 300, PAGETRACE_EV_FREE, PAGETRACE_PFN_MAX, 1023);
	synth_event(&s, 0, SEC + 301, PAGETRACE_EV_RECLAIM, 0x1a2b3, 1024);
	synth_task(&s, 0, 4242);
	synth_event(&s, 0, SEC + 5000, PAGETRACE_EV_ALLOC, 0x10, 1ULL << 20);
	synth_task(&s, 0, 0xffffffffU);
	synth_event(&s, 0, SEC + 5001, PAGETRACE_EV_FREE, 0x11, 3);
	synth_event(&s, 2, SEC + 7 * SEC, PAGETRACE_EV_FREE, 0x22, 8);
	synth_flush_all(&s);
	ASSERT_EQ(6, s.nexp);
	ASSERT_EQ(4242, s.exp[3].task);
	ASSERT_EQ(0xffffffffLL, s.exp[4].task);
	ASSERT_EQ(PGTRACE_TASK_UNKNOWN, s.exp[0].task);
	ASSERT_EQ(1024, s.exp[2].npages);
	expect_all(_metadata, &s, 1);
	expect_all(_metadata, &s, 64);
	synth_free(&s);
}

TEST(header_records)
{
	struct synth s;
	struct pgtrace_reader *r;
	const struct pgtrace_zone *z;
	const struct pagetrace_header *h;

	synth_init(&s, 2, 4096, PAGETRACE_CLOCK_MONOTONIC);
	r = open_synth(_metadata, &s);
	h = pgtrace_reader_header(r);
	EXPECT_EQ(2, h->nr_cpus);
	EXPECT_EQ(4096, h->chunk_size);
	EXPECT_EQ(SEC, h->start_ns);
	EXPECT_EQ(2 * SEC, h->start_mono_ns);
	EXPECT_EQ(PAGETRACE_CLOCK_MONOTONIC, h->flags);
	EXPECT_EQ(s.len, h->header_size);
	EXPECT_STREQ("6.1.0-synth", pgtrace_reader_kernel_release(r));
	ASSERT_EQ(1, pgtrace_reader_zones(r, &z));
	EXPECT_STREQ("DMA32", z[0].name);
	EXPECT_EQ(0x1000, z[0].start_pfn);
	EXPECT_EQ(0x100000, z[0].end_pfn);
	EXPECT_EQ(0xfe000, z[0].present_pages);
	EXPECT_EQ(1, z[0].zone);
	ASSERT_TRUE(pgtrace_reader_session(r) != NULL);
	EXPECT_EQ(4, pgtrace_reader_session(r)->nr_bufs);
	EXPECT_EQ(100, pgtrace_reader_session(r)->flush_ms);
	/* No chunks at all is a clean, empty trace. */
	{
		struct pgtrace_event ev;

		EXPECT_EQ(0, pgtrace_reader_next(r, &ev));
		EXPECT_EQ(0, pgtrace_reader_counters(r)->chunks);
	}
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* The writer resyncs when t - base reaches 2^23 ns, not a nanosecond later. */
TEST(sync_boundary)
{
	const uint64_t base = SEC;	/* a multiple of 128 */
	struct synth s;

	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, base, PAGETRACE_EV_ALLOC, 1, 1);
	synth_event(&s, 0, base + PAGETRACE_TIME_MAX_DELTA - 1, PAGETRACE_EV_ALLOC, 2, 1);
	ASSERT_EQ(0, s.nsyncs);
	synth_event(&s, 0, base + PAGETRACE_TIME_MAX_DELTA, PAGETRACE_EV_ALLOC, 3, 1);
	ASSERT_EQ(1, s.nsyncs);
	synth_event(&s, 0, base + 2 * PAGETRACE_TIME_MAX_DELTA - 1, PAGETRACE_EV_ALLOC, 4, 1);
	ASSERT_EQ(1, s.nsyncs);
	synth_event(&s, 0, base + 100 * SEC, PAGETRACE_EV_ALLOC, 5, 1);
	ASSERT_EQ(2, s.nsyncs);
	synth_flush_all(&s);

	ASSERT_EQ(base, s.exp[0].time_ns);
	ASSERT_EQ(base + PAGETRACE_TIME_MAX_DELTA - 128, s.exp[1].time_ns);
	ASSERT_EQ(base + PAGETRACE_TIME_MAX_DELTA, s.exp[2].time_ns);
	ASSERT_EQ(base + 2 * PAGETRACE_TIME_MAX_DELTA - 128, s.exp[3].time_ns);
	ASSERT_EQ(base + 100 * SEC, s.exp[4].time_ns);
	expect_all(_metadata, &s, 1);
	synth_free(&s);
}

/* A handmade chunk, so the reader is checked against numbers, not synth. */
TEST(handmade_chunk_times)
{
	struct synth s;
	uint64_t w[] = {
		pagetrace_pid_word(0),
		pagetrace_sync_word(SEC + 100),		/* base SEC: 100 ns lost */
		pagetrace_event_word((1ULL << 23) - 1, 0x42, 1, PAGETRACE_EV_ALLOC),
		pagetrace_sync_word(SEC + (1ULL << 23)),
		pagetrace_event_word(0, 0x43, 2, PAGETRACE_EV_FREE),
	};
	struct pgtrace_reader *r;
	struct pgtrace_event ev;

	synth_init(&s, 1, 4096, 0);
	synth_put_chunk(&s, 0, 0, 0, 7, w, ARRAY_SIZE(w));
	r = open_synth(_metadata, &s);
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(SEC + (1ULL << 23) - 128, ev.time_ns);
	EXPECT_EQ(0x42, ev.pfn);
	EXPECT_EQ(s.hdr.header_size + 32 + 16, ev.offset);
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(SEC + (1ULL << 23), ev.time_ns);
	EXPECT_EQ(2, ev.npages);
	EXPECT_EQ(PAGETRACE_EV_FREE, ev.type);
	EXPECT_EQ(0, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(7, pgtrace_reader_counters(r)->lost);
	EXPECT_EQ(2, pgtrace_reader_counters(r)->events);
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Times that run backwards are clamped by the writer, never by the reader. */
TEST(clamping)
{
	struct synth s;

	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC + 5000, PAGETRACE_EV_ALLOC, 1, 1);
	synth_event(&s, 0, SEC + 10, PAGETRACE_EV_FREE, 1, 1);	/* earlier */
	synth_event(&s, 0, 0, PAGETRACE_EV_FREE, 1, 1);		/* before start */
	synth_flush_all(&s);
	ASSERT_EQ(3, s.nexp);
	for (unsigned int i = 0; i < 3; i++)
		ASSERT_EQ((SEC + 5000) & ~127ULL, s.exp[i].time_ns);
	expect_all(_metadata, &s, 1);
	synth_free(&s);
}

TEST_HARNESS_MAIN
