// SPDX-License-Identifier: GPL-2.0
/*
 * Long synthetic multi-CPU streams come back exactly, however they are fed.
 */
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL

/* Interleaved CPUs, random sizes (large ones too), gaps past 2^23 ns. */
static void random_stream(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			  unsigned int flags, unsigned int nev, uint64_t seed)
{
	uint64_t st = seed, t[16];

	synth_init(s, nr_cpus, chunk_size, flags);
	for (unsigned int c = 0; c < nr_cpus; c++)
		t[c] = SEC + c * 1000;
	for (unsigned int i = 0; i < nev; i++) {
		unsigned int cpu = synth_rand(&st) % nr_cpus;
		uint64_t x = synth_rand(&st), np;

		switch (x % 16) {
		case 0:
			t[cpu] += PAGETRACE_TIME_MAX_DELTA + x % SEC;
			break;
		case 1:
			t[cpu] += PAGETRACE_TIME_MAX_DELTA - 1;
			break;
		default:
			t[cpu] += x % 5000;
		}
		np = (x >> 8) % 8 ? 1ULL << ((x >> 12) % 11) : 1 + (x >> 16) % 5000;
		synth_event(s, cpu, t[cpu], 1 + (x >> 20) % 3, x >> 24, np);
		if ((x >> 40) % 50 == 0)
			synth_task(s, cpu, (x >> 44) % 100000);
		if ((x >> 50) % 200 == 0)
			synth_flush(s, cpu, PAGETRACE_CHUNK_FLUSHED);
	}
	synth_flush_all(s);
}

static void check_all(struct __test_metadata *_metadata, struct synth *s,
		      struct pgtrace_reader *r, unsigned int batch)
{
	struct pgtrace_event *evs;
	char why[512] = "";
	size_t n;

	ASSERT_EQ(0, synth_read_all(r, batch, &evs, &n)) {
		TH_LOG("%s", pgtrace_reader_error(r));
	}
	EXPECT_EQ(-1, synth_compare(s, evs, n, true, why, sizeof(why))) {
		TH_LOG("%s", why);
	}
	EXPECT_EQ(s->nexp, pgtrace_reader_counters(r)->events);
	EXPECT_EQ(s->len, pgtrace_reader_counters(r)->bytes);
	free(evs);
}

TEST(memory)
{
	struct synth s;
	struct pgtrace_reader *r;

	random_stream(&s, 4, 32 + 8 * 64, 0, 20000, 1);
	ASSERT_GT(s.nsyncs, 100);
	for (unsigned int batch = 1; batch <= 1000; batch *= 10) {
		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
		check_all(_metadata, &s, r, batch);
		pgtrace_reader_close(r);
	}
	synth_free(&s);
}

static pid_t feed(int *rfd, const void *buf, size_t len, unsigned int piece)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		_exit(synth_write_slowly(fds[1], buf, len, piece, 42) ? 1 : 0);
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

/* Small writes and a small buffer: every word straddles something. */
TEST(pipe_small_writes)
{
	static const unsigned int bufs[] = { 64, 72, 200, 4096, 0 };
	struct synth s;

	random_stream(&s, 3, 32 + 8 * 40, 0, 5000, 7);
	for (unsigned int i = 0; i < ARRAY_SIZE(bufs); i++) {
		struct pgtrace_reader_params p = { .buf_size = bufs[i] };
		struct pgtrace_reader *r;
		int fd, status;
		pid_t pid = feed(&fd, s.buf, s.len, i < 3 ? 13 : 4000);

		ASSERT_GT(pid, 0);
		ASSERT_EQ(0, pgtrace_reader_open_fd_params(&r, fd, &p));
		check_all(_metadata, &s, r, i % 2 ? 1 : 300);
		pgtrace_reader_close(r);
		close(fd);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(0, status);
	}
	synth_free(&s);
}

struct chunk_log {
	struct pgtrace_chunk c[64];
	unsigned int n;
};

static int log_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct chunk_log *l = arg;

	if (l->n < 64)
		l->c[l->n] = *c;
	l->n++;
	return 0;
}

TEST(chunk_callback_and_gaps)
{
	struct chunk_log log = { };
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	struct synth s;

	synth_init(&s, 2, 4096, PAGETRACE_FLAG_OVERWRITE);
	s.cpus[1].seq = 5;			/* the oldest five were overwritten */
	synth_event(&s, 1, SEC, 1, 1, 1);
	synth_flush(&s, 1, 0);
	s.cpus[0].lost = 9;
	synth_event(&s, 0, SEC, 1, 2, 1);
	synth_flush(&s, 0, 0);
	s.cpus[1].seq += 2;			/* two more overwritten */
	synth_event(&s, 1, SEC + 10 * SEC, 2, 3, 2);
	synth_flush(&s, 1, PAGETRACE_CHUNK_FLUSHED);

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	pgtrace_reader_set_chunk_cb(r, log_chunk, &log);
	while (pgtrace_reader_next(r, &ev) > 0)
		;
	ASSERT_STREQ("", pgtrace_reader_error(r));
	ASSERT_EQ(3, log.n);
	EXPECT_EQ(1, log.c[0].cpu);
	EXPECT_EQ(5, log.c[0].seq);
	EXPECT_EQ(5, log.c[0].missing);
	EXPECT_EQ(s.hdr.header_size, log.c[0].offset);
	EXPECT_EQ(3, log.c[0].nr_words);
	EXPECT_EQ(0, log.c[1].cpu);
	EXPECT_EQ(0, log.c[1].missing);
	EXPECT_EQ(9, log.c[1].lost);
	EXPECT_EQ(8, log.c[2].seq);
	EXPECT_EQ(2, log.c[2].missing);
	EXPECT_EQ(PAGETRACE_CHUNK_FLUSHED, log.c[2].flags);
	EXPECT_EQ(2, pgtrace_reader_counters(r)->seq_gaps);
	EXPECT_EQ(7, pgtrace_reader_counters(r)->missing_chunks);
	EXPECT_EQ(9, pgtrace_reader_counters(r)->lost);
	pgtrace_reader_close(r);
	synth_free(&s);
}

static int stop_cb(const struct pgtrace_chunk *c, void *arg)
{
	return c->seq == 1 ? -ECANCELED : 0;
}

TEST(callback_stops)
{
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	struct synth s;
	int n = 0, ret;

	synth_init(&s, 1, 32 + 8 * 5, 0);
	for (int i = 0; i < 5; i++)
		synth_event(&s, 0, SEC + i, 1, i, 1);	/* 2 events per chunk */
	synth_flush_all(&s);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	pgtrace_reader_set_chunk_cb(r, stop_cb, NULL);
	while ((ret = pgtrace_reader_next(r, &ev)) > 0)
		n++;
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_EQ(2, n);
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Snapshot chunks predate the trace; they neither count nor break seq/time. */
TEST(snapshots_and_tasks)
{
	struct pgtrace_reader *r;
	struct pgtrace_event evs[16];
	struct synth s;
	int n;

	synth_init(&s, 2, 4096, PAGETRACE_FLAG_SNAPSHOT | PAGETRACE_FLAG_TASKS);
	synth_event(&s, 0, 5 * SEC, 1, 0x100, 4);
	synth_flush(&s, 0, 0);
	synth_snapshot(&s, 0);
	synth_event(&s, 0, 10, 1, 0x200, 1);
	synth_event(&s, 0, 20, 1, 0x300, 2048);
	synth_flush(&s, 0, 0);
	synth_task(&s, 0, 1234);
	synth_event(&s, 0, 6 * SEC, 2, 0x100, 4);
	synth_flush_all(&s);
	ASSERT_EQ(4, s.nexp);
	EXPECT_EQ(PAGETRACE_CHUNK_SNAPSHOT, s.exp[1].chunk_flags);
	EXPECT_EQ(1234, s.exp[3].task);
	EXPECT_EQ(1, s.exp[3].seq);

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, PGTRACE_READER_TASKS));
	n = pgtrace_reader_next_batch(r, evs, 16);
	ASSERT_EQ(5, n) {
		TH_LOG("%s", pgtrace_reader_error(r));
	}
	EXPECT_EQ(PGTRACE_EV_TASK, evs[3].type);
	EXPECT_EQ(1234, evs[3].task);
	EXPECT_EQ(0, evs[3].npages);
	EXPECT_EQ(s.exp[2].offset + 16 + 32 + 16, evs[3].offset);
	EXPECT_EQ(PGTRACE_EV_FREE, evs[4].type);
	EXPECT_EQ(0, pgtrace_reader_next_batch(r, evs, 16));
	EXPECT_EQ(1, pgtrace_reader_counters(r)->snapshot_chunks);
	EXPECT_EQ(3, pgtrace_reader_counters(r)->chunks);
	EXPECT_EQ(1, pgtrace_reader_counters(r)->tasks);
	pgtrace_reader_close(r);

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	check_all(_metadata, &s, r, 16);
	pgtrace_reader_close(r);
	synth_free(&s);
}

TEST(stats)
{
	struct pgtrace_reader *r;
	struct pgtrace_stats st;
	struct synth s;

	synth_init(&s, 3, 32 + 8 * 8, PAGETRACE_FLAG_OVERWRITE);
	synth_event(&s, 0, SEC + 100, PAGETRACE_EV_ALLOC, 1, 1);
	synth_event(&s, 0, SEC + 200, PAGETRACE_EV_ALLOC, 1, 8);
	synth_event(&s, 0, SEC + 300, PAGETRACE_EV_FREE, 1, 8);
	synth_event(&s, 2, SEC + 400, PAGETRACE_EV_RECLAIM, 1, 3);
	synth_event(&s, 2, SEC + 3 * SEC, PAGETRACE_EV_ALLOC, 1, 4096);
	synth_flush(&s, 2, 0);
	s.cpus[2].seq += 4;
	s.cpus[2].lost = 11;
	synth_event(&s, 2, SEC + 4 * SEC, PAGETRACE_EV_FREE, 1, 1);
	synth_flush_all(&s);

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	ASSERT_EQ(0, pgtrace_stats_collect(r, &st));
	EXPECT_EQ(6, st.events);
	EXPECT_EQ(3, st.by_type[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(2, st.by_type[PGTRACE_EV_FREE]);
	EXPECT_EQ(1, st.by_type[PGTRACE_EV_RECLAIM]);
	EXPECT_EQ(1 + 8 + 4096, st.pages_by_type[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(2, st.by_order[0]);
	EXPECT_EQ(2, st.by_order[3]);
	EXPECT_EQ(1, st.by_order[12]);
	EXPECT_EQ(1, st.other_order);
	EXPECT_EQ(3, st.chunks);
	EXPECT_EQ(11, st.lost);
	EXPECT_EQ(1, st.seq_gaps);
	EXPECT_EQ(4, st.missing_chunks);
	EXPECT_EQ(3, st.cpus[0].events);
	EXPECT_EQ(0, st.cpus[1].chunks);
	EXPECT_EQ(2, st.cpus[2].chunks);
	EXPECT_EQ(11, st.cpus[2].lost);
	EXPECT_EQ(SEC + 0, st.first_ns);	/* 100 ns is lost to 128 ns steps */
	EXPECT_EQ(SEC + 4 * SEC, st.last_ns);
	pgtrace_stats_free(&st);
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Read @r with pgtrace_reader_next_run(): same events, each run within one chunk. */
static void check_runs(struct __test_metadata *_metadata, struct synth *s,
		       struct pgtrace_reader *r, unsigned int max)
{
	struct pgtrace_compact_event evs[300];
	const struct pgtrace_chunk *c;
	size_t k = 0, runs = 0;
	int ret;

	while ((ret = pgtrace_reader_next_run(r, evs, max, &c)) > 0) {
		ASSERT_LE(ret, max);
		runs++;
		for (int i = 0; i < ret; i++, k++) {
			const struct pgtrace_event *e = &s->exp[k];

			ASSERT_LT(k, s->nexp);
			ASSERT_EQ(e->time_ns, evs[i].time_ns);
			ASSERT_EQ(e->pfn, evs[i].pfn);
			ASSERT_EQ(e->npages, pgtrace_compact_event_npages(&evs[i]));
			ASSERT_EQ(e->type, pgtrace_compact_event_type(&evs[i]));
			/* The run's chunk is the event's. */
			ASSERT_EQ(e->cpu, c->cpu);
			ASSERT_EQ(e->seq, c->seq);
			ASSERT_EQ(e->chunk_flags, c->flags);
		}
		/* A run ends at its chunk's end, or when full. */
		if ((unsigned int)ret < max && k < s->nexp)
			ASSERT_TRUE(s->exp[k].seq != c->seq || s->exp[k].cpu != c->cpu);
	}
	ASSERT_EQ(0, ret) {
		TH_LOG("%s", pgtrace_reader_error(r));
	}
	ASSERT_EQ(s->nexp, k);
	ASSERT_GE(runs, pgtrace_reader_counters(r)->chunks - 1);
	ASSERT_EQ(s->nexp, pgtrace_reader_counters(r)->events);
}

TEST(runs)
{
	static const unsigned int maxes[] = { 1, 7, 256, 300 };
	struct synth s;

	random_stream(&s, 4, 32 + 8 * 64, PAGETRACE_FLAG_TASKS, 20000, 3);
	for (unsigned int i = 0; i < ARRAY_SIZE(maxes); i++) {
		struct pgtrace_reader *r;

		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, PGTRACE_READER_TASKS));
		check_runs(_metadata, &s, r, maxes[i]);
		pgtrace_reader_close(r);
	}
	/* Through a pipe and a small buffer. */
	{
		struct pgtrace_reader_params p = { .buf_size = 72 };
		struct pgtrace_reader *r;
		int fd, status;
		pid_t pid = feed(&fd, s.buf, s.len, 13);

		ASSERT_GT(pid, 0);
		ASSERT_EQ(0, pgtrace_reader_open_fd_params(&r, fd, &p));
		check_runs(_metadata, &s, r, 256);
		pgtrace_reader_close(r);
		close(fd);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(0, status);
	}
	/* Cut short: the events before the cut, then the error. */
	{
		struct pgtrace_compact_event evs[256];
		const struct pgtrace_chunk *c;
		struct pgtrace_reader *r;
		size_t n = 0;
		int ret;

		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len - 12, 0));
		while ((ret = pgtrace_reader_next_run(r, evs, 256, &c)) > 0)
			n += ret;
		EXPECT_EQ(-EBADMSG, ret);
		EXPECT_EQ(-EBADMSG, pgtrace_reader_next_run(r, evs, 256, &c));
		EXPECT_LT(n, s.nexp);
		EXPECT_GT(n, s.nexp - 100);
		pgtrace_reader_close(r);
	}
	synth_free(&s);
}

/* Go traces: a run is one P's buffer. */
TEST(go_runs)
{
	static const uint64_t w[] = {
		2 << 3 | 4, (1ULL << 30) >> 7 << 3,
		(0x6000000ULL << 13) | 3 << 3 | 1, (0x6000001ULL << 13) | 1 << 3 | 2,
		~0ULL << 3 | 4, (1ULL << 31) >> 7 << 3,
		(0x6000002ULL << 13) | 4 << 3 | 3,
	};
	unsigned char buf[sizeof(w)];
	struct pgtrace_compact_event evs[8];
	const struct pgtrace_chunk *c;
	struct pgtrace_reader *r;

	for (size_t i = 0; i < ARRAY_SIZE(w); i++) {
		uint64_t le = htole64(w[i]);

		memcpy(buf + 8 * i, &le, 8);
	}
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, buf, sizeof(buf), PGTRACE_READER_GO));
	ASSERT_EQ(2, pgtrace_reader_next_run(r, evs, 8, &c));
	EXPECT_EQ(2, c->cpu);
	EXPECT_EQ(0x6000000, evs[0].pfn);
	EXPECT_EQ(3, pgtrace_compact_event_npages(&evs[0]));
	EXPECT_EQ(PGTRACE_EV_FREE, pgtrace_compact_event_type(&evs[1]));
	ASSERT_EQ(1, pgtrace_reader_next_run(r, evs, 8, &c));
	EXPECT_EQ(PGTRACE_CPU_NONE, c->cpu);
	EXPECT_EQ(1ULL << 31, evs[0].time_ns);
	EXPECT_EQ(4, pgtrace_compact_event_npages(&evs[0]));
	EXPECT_EQ(0, pgtrace_reader_next_run(r, evs, 8, &c));
	pgtrace_reader_close(r);
}

TEST_HARNESS_MAIN
