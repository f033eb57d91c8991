// SPDX-License-Identifier: GPL-2.0
/*
 * Go runtime page traces (PGTRACE_READER_GO): the committed trace of a real Go
 * program (tests/data/go-pagetrace.bin, see tests/data/goalloc/), with
 * counts checked by an independent decoder, and hand-made word sequences
 * for each rule the runtime's writer keeps.
 */
#include <fcntl.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "synth.h"

#define GO_TRACE	PT_TEST_DATA "/go-pagetrace.bin"
#define MAXW		64

static const uint64_t go_start = (0x166d7221a0ULL >> 3) << 7;

static uint64_t pid(int64_t p)
{
	return (uint64_t)p << 3 | 4;
}

static uint64_t sync_w(uint64_t t)
{
	return pagetrace_sync_word(t);
}

static uint64_t ev(uint64_t delta, uint64_t addr, uint64_t np, unsigned int type)
{
	return pagetrace_event_word(delta, addr >> 13, np, type);
}

struct p_count {
	uint64_t	events[5];	/* P -1 .. 3 */
	uint64_t	buffers[5];
	uint64_t	seq_sum;
	uint64_t	offsets[8];
	unsigned int	nbuf;
};

static int count_buffer(const struct pgtrace_chunk *c, void *arg)
{
	struct p_count *pc = arg;
	int i = c->cpu == PGTRACE_CPU_NONE ? 0 : (int)c->cpu + 1;

	if (i < 5)
		pc->buffers[i]++;
	pc->seq_sum += c->seq;
	if (pc->nbuf < 8)
		pc->offsets[pc->nbuf] = c->offset;
	pc->nbuf++;
	return 0;
}

TEST(real_trace_decodes)
{
	struct p_count pc = { 0 };
	uint64_t by_type[4] = { 0 }, pages[4] = { 0 }, large = 0, tmin = UINT64_MAX, tmax = 0;
	const struct pagetrace_header *h;
	struct pgtrace_reader *r;
	struct pgtrace_event e;
	bool first = true;
	int fd, ret;

	fd = open(GO_TRACE, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pgtrace_reader_open_fd(&r, fd, PGTRACE_READER_GO));
	h = pgtrace_reader_header(r);
	EXPECT_EQ(13, h->page_shift);
	EXPECT_EQ(0, h->header_size);
	EXPECT_EQ(go_start, h->start_ns);
	pgtrace_reader_set_chunk_cb(r, count_buffer, &pc);
	while ((ret = pgtrace_reader_next(r, &e)) > 0) {
		if (first) {
			/* Word 2: 0x000000c0004f0011, alloc of 2 pages by P 2. */
			EXPECT_EQ(0xc0004f0000ULL >> 13, e.pfn);
			EXPECT_EQ(2, e.npages);
			EXPECT_EQ(2, e.cpu);
			EXPECT_EQ(go_start, e.time_ns);
			EXPECT_EQ(16, e.offset);
			first = false;
		}
		by_type[e.type]++;
		pages[e.type] += e.npages;
		large += e.npages >= 1024;
		pc.events[e.cpu == PGTRACE_CPU_NONE ? 0 : e.cpu + 1]++;
		if (e.time_ns < tmin)
			tmin = e.time_ns;
		if (e.time_ns > tmax)
			tmax = e.time_ns;
	}
	ASSERT_EQ(0, ret) {
		TH_LOG("%s", pgtrace_reader_error(r));
	}
	EXPECT_EQ(560, by_type[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(521, by_type[PGTRACE_EV_FREE]);
	EXPECT_EQ(221, by_type[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(28837, pages[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(28759, pages[PGTRACE_EV_FREE]);
	EXPECT_EQ(18022, pages[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(6, large);
	EXPECT_EQ(1541206985216ULL, tmin);
	EXPECT_EQ(1541277490048ULL, tmax);
	EXPECT_EQ(17, pc.events[0]);
	EXPECT_EQ(527, pc.events[1]);
	EXPECT_EQ(379, pc.events[2]);
	EXPECT_EQ(176, pc.events[3]);
	EXPECT_EQ(203, pc.events[4]);
	ASSERT_EQ(5, pc.nbuf);
	EXPECT_EQ(0, pc.offsets[0]);
	EXPECT_EQ(1472, pc.offsets[1]);
	EXPECT_EQ(4592, pc.offsets[2]);
	EXPECT_EQ(6280, pc.offsets[3]);
	EXPECT_EQ(10584, pc.offsets[4]);
	EXPECT_EQ(0, pc.seq_sum);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(1, pc.buffers[i]);
	EXPECT_EQ(4, h->nr_cpus);
	EXPECT_EQ(1302, pgtrace_reader_counters(r)->events);
	EXPECT_EQ(5, pgtrace_reader_counters(r)->chunks);
	EXPECT_EQ(1342 * 8, pgtrace_reader_counters(r)->bytes);
	pgtrace_reader_close(r);
	close(fd);
}

TEST(real_trace_analysis)
{
	struct pgtrace_analysis a;
	struct pgtrace_reader *r;
	int fd;

	fd = open(GO_TRACE, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pgtrace_reader_open_fd(&r, fd, PGTRACE_READER_GO));
	ASSERT_EQ(0, pgtrace_analysis_collect(r, &a, NULL));
	/* Every free matches its span; scavenges hit free pages only. */
	EXPECT_EQ(521, a.life_all.count);
	EXPECT_EQ(0, a.unmatched_events[PGTRACE_EV_FREE]);
	EXPECT_EQ(221, a.unmatched_events[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(78, a.in_use);
	EXPECT_EQ(39, a.in_use_blocks);
	EXPECT_EQ(8369, a.peak_in_use);
	EXPECT_EQ(0, a.late_events);
	EXPECT_EQ(0, a.realloc_events);
	EXPECT_EQ(4, a.stats.nr_cpus);
	EXPECT_EQ(17, a.stats.no_cpu.events);
	EXPECT_EQ(1, a.stats.no_cpu.chunks);
	EXPECT_EQ(527, a.stats.cpus[0].events);
	EXPECT_EQ(203, a.stats.cpus[3].events);
	pgtrace_analysis_free(&a);
	pgtrace_reader_close(r);
	close(fd);
}

/* Decode @n words as a Go trace: the reader's final result, events in *nev. */
static int go_words(const uint64_t *w, size_t n, size_t extra_bytes, struct pgtrace_event *evs,
		    unsigned int *nev, char *err, size_t errlen)
{
	unsigned char buf[MAXW * 8 + 8];
	struct pgtrace_reader *r;
	int ret;

	for (size_t i = 0; i < n; i++) {
		uint64_t le = htole64(w[i]);

		memcpy(buf + 8 * i, &le, 8);
	}
	memset(buf + 8 * n, 0, extra_bytes);
	ret = pgtrace_reader_open_mem(&r, buf, 8 * n + extra_bytes, PGTRACE_READER_GO);
	if (ret)
		return ret;
	*nev = 0;
	while ((ret = pgtrace_reader_next(r, &evs[*nev])) > 0)
		(*nev)++;
	snprintf(err, errlen, "%s", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	return ret;
}

#define GO(...) ({							\
	const uint64_t _w[] = { __VA_ARGS__ };				\
	go_words(_w, sizeof(_w) / 8, 0, evs, &nev, err, sizeof(err));	\
})

TEST(synthetic_words)
{
	struct pgtrace_event evs[MAXW];
	unsigned int nev;
	char err[256];
	uint64_t t = 1ULL << 30;

	/* Empty: no events, no error. */
	EXPECT_EQ(0, go_words(NULL, 0, 0, evs, &nev, err, sizeof(err)));
	EXPECT_EQ(0, nev);
	/* Two Ps, a large event, a sync past 2^23 ns, P -1. */
	ASSERT_EQ(0, GO(pid(5), sync_w(t), ev(256, 0xc000002000ULL, 3, 1),
			ev(512, 0xc000100000ULL, 0, 2) | PAGETRACE_LARGE, 2048,
			sync_w(t + (1 << 23)), ev(128, 0xc000002000ULL, 3, 3),
			pid(-1), sync_w(t + 5), ev(0, 0xc000004000ULL, 1, 1))) {
		TH_LOG("%s", err);
	}
	ASSERT_EQ(4, nev);
	EXPECT_EQ(5, evs[0].cpu);
	EXPECT_EQ(t + 256, evs[0].time_ns);
	EXPECT_EQ(0xc000002000ULL >> 13, evs[0].pfn);
	EXPECT_EQ(3, evs[0].npages);
	EXPECT_EQ(2048, evs[1].npages);
	EXPECT_EQ(PGTRACE_EV_FREE, evs[1].type);
	EXPECT_EQ(t + (1 << 23) + 128, evs[2].time_ns);
	EXPECT_EQ(PGTRACE_EV_RECLAIM, evs[2].type);
	EXPECT_EQ(PGTRACE_CPU_NONE, evs[3].cpu);
	EXPECT_EQ(t, evs[3].time_ns);	/* t + 5 in 128 ns steps */
	EXPECT_EQ(72, evs[3].offset);
	/* A large npages word may look like a pid word: 1028 = 0x404. */
	ASSERT_EQ(0, GO(pid(0), sync_w(t), ev(0, 0xc000000000ULL, 0, 1) | PAGETRACE_LARGE,
			1028, ev(0, 0xc000000000ULL, 1, 2)));
	EXPECT_EQ(2, nev);
	EXPECT_EQ(1028, evs[0].npages);
}

TEST(synthetic_corruption)
{
	struct pgtrace_event evs[MAXW];
	unsigned int nev;
	char err[256];
	uint64_t t = 1ULL << 30;

	EXPECT_EQ(-EBADMSG, GO(sync_w(t), ev(0, 0xc000000000ULL, 1, 1)));
	EXPECT_STREQ("offset 0: word 0x0000000004000000 before any pid word", err);
	EXPECT_EQ(-EBADMSG, GO(pid(0), ev(0, 0xc000000000ULL, 1, 1)));
	EXPECT_STREQ("offset 8: word 0x000000c000000009 after a pid word is not a sync word",
		     err);
	EXPECT_EQ(-EBADMSG, GO(pid(-2), sync_w(t)));
	EXPECT_STREQ("offset 0: pid word 0xfffffffffffffff4 has P id -2, expected -1..65535",
		     err);
	EXPECT_EQ(-EBADMSG, GO(pid(0), sync_w(t), ev(0, 0xc000000000ULL, 0, 1)));
	EXPECT_STREQ("offset 16: event word 0x000000c000000001 has npages 0", err);
	EXPECT_EQ(-EBADMSG, GO(pid(0), sync_w(t), ev(0, 0xc000000000ULL, 1, 1),
			       ev(0, 0xc000000000ULL, 0, 1) | PAGETRACE_LARGE));
	EXPECT_EQ(1, nev);
	EXPECT_STREQ("offset 24: file ends inside a large event", err);
	EXPECT_EQ(-EBADMSG, GO(pid(0), sync_w(t), ev(0, 0xc000000000ULL, 0, 1) | PAGETRACE_LARGE,
			       1023));
	EXPECT_STREQ("offset 16: large event has npages 1023, expected 1024..34359738368", err);
	EXPECT_EQ(-EBADMSG, GO(pid(0), sync_w(t), sync_w(t + (1 << 23) - 128)));
	EXPECT_STREQ("offset 16: sync to 1082130304 ns only 8388480 ns after 1073741824 ns"
		     " (at least 8388608 expected)", err);
	EXPECT_EQ(-EBADMSG, GO(pid(0)));
	EXPECT_STREQ("offset 0: file ends after a pid word, expected a sync word", err);
	{
		const uint64_t w[] = { pid(0), sync_w(t), ev(0, 0xc000000000ULL, 1, 1) };

		EXPECT_EQ(-EBADMSG, go_words(w, 3, 5, evs, &nev, err, sizeof(err)));
		EXPECT_EQ(1, nev);
		EXPECT_STREQ("offset 24: file ends inside a word (5 bytes left)", err);
	}
}

/* The Go trace is no v1 stream, and the other way round. */
TEST(wrong_mode)
{
	struct pgtrace_reader *r;
	struct synth s;
	struct pgtrace_event e;
	int fd = open(GO_TRACE, O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBADMSG, pgtrace_reader_open_fd(&r, fd, 0));
	pgtrace_reader_close(r);
	close(fd);
	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, 1000000000ULL, 1, 5, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, PGTRACE_READER_GO));
	EXPECT_EQ(-EBADMSG, pgtrace_reader_next(r, &e));
	pgtrace_reader_close(r);
	synth_free(&s);
}

TEST_HARNESS_MAIN
