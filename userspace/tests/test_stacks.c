// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled call stacks: stack words round-trip through the reader (every
 * batch size, a tiny buffer, compact runs), the stacks and filter header
 * records, and every broken rule of the stack words is -EBADMSG at the
 * right offset.
 */
#include <fcntl.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define K(x)	(0xffffffff81000000ULL + (x))

static const uint64_t f1[] = { K(0x1010), K(0x2020), K(0x3030) };
static const uint64_t f2[] = { K(0x4040), 0xffffffffc0001234ULL };
static uint64_t f64[PAGETRACE_STACK_MAX_DEPTH];

/* Two CPUs; stacks 1 and 2 on both, 7 deep 64 and cut, samples among plain events. */
static void stack_trace(struct synth *s, unsigned int chunk_size)
{
	for (unsigned int i = 0; i < PAGETRACE_STACK_MAX_DEPTH; i++)
		f64[i] = K(0x100000 + 16 * i);
	synth_init(s, 2, chunk_size, PAGETRACE_FLAG_STACKS | PAGETRACE_FLAG_TASKS);
	for (unsigned int i = 0; i < 40; i++) {
		unsigned int cpu = i % 2;
		uint64_t t = SEC + 1000 * i;

		synth_event(s, cpu, t, PAGETRACE_EV_ALLOC, 0x1000 + i, 1);
		synth_stack_def(s, cpu, 1, 3, false, f1);
		synth_sample(s, cpu, t + 1, 1, 0x2000 + 16 * i, 4);
		if (i % 3 == 0) {
			synth_stack_def(s, cpu, 2, 2, false, f2);
			synth_sample(s, cpu, t + 2, 2, 0x100000 + 2048 * i, 2048);
		}
		if (i % 5 == 0) {
			synth_stack_def(s, cpu, 7, PAGETRACE_STACK_MAX_DEPTH, true, f64);
			synth_sample(s, cpu, t + 3, 7, 0x3000 + i, 1);
		}
		if (i % 7 == 0)
			synth_sample(s, cpu, t + 4, 0, 0x4000 + i, 2);
		synth_event(s, cpu, t + 5, PAGETRACE_EV_FREE, 0x1000 + i, 1);
		if (i % 11 == 0)
			synth_name(s, cpu, 100 + i, "worker");
	}
	synth_flush_all(s);
}

static void check_tables(struct __test_metadata *_metadata, struct pgtrace_reader *r)
{
	const uint64_t *fr;
	int cut = -1;

	ASSERT_EQ(3, pgtrace_reader_stack(r, 1, &fr, &cut));
	EXPECT_EQ(0, cut);
	EXPECT_EQ(0, memcmp(fr, f1, sizeof(f1)));
	ASSERT_EQ(2, pgtrace_reader_stack(r, 2, &fr, NULL));
	EXPECT_EQ(0, memcmp(fr, f2, sizeof(f2)));
	ASSERT_EQ(PAGETRACE_STACK_MAX_DEPTH, pgtrace_reader_stack(r, 7, &fr, &cut));
	EXPECT_EQ(1, cut);
	EXPECT_EQ(0, memcmp(fr, f64, sizeof(f64)));
	EXPECT_EQ(-ENOENT, pgtrace_reader_stack(r, 3, &fr, &cut));
	EXPECT_EQ(-ENOENT, pgtrace_reader_stack(r, 0, &fr, &cut));
	EXPECT_EQ(-ENOENT, pgtrace_reader_stack(r, PGTRACE_STACK_UNKNOWN, &fr, &cut));
	EXPECT_EQ(3, pgtrace_reader_counters(r)->stacks);
	EXPECT_EQ(40 + 14 + 8 + 6, pgtrace_reader_counters(r)->samples);
	EXPECT_EQ(6, pgtrace_reader_counters(r)->samples_unknown);
	EXPECT_EQ(40 + 14 + 8, pgtrace_reader_counters(r)->stack_defs);
}

TEST(round_trip)
{
	static const unsigned int batches[] = { 1, 3, 64, 4096 };
	struct pgtrace_event *evs;
	struct pgtrace_reader *r;
	struct synth s;
	char why[512];
	size_t n;

	stack_trace(&s, 1024);
	for (unsigned int b = 0; b < ARRAY_SIZE(batches); b++) {
		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
		ASSERT_EQ(0, synth_read_all(r, batches[b], &evs, &n)) TH_LOG("%s", pgtrace_reader_error(r));
		EXPECT_EQ(-1, synth_compare(&s, evs, n, true, why, sizeof(why))) TH_LOG("%s", why);
		check_tables(_metadata, r);
		EXPECT_EQ(s.nexp, pgtrace_reader_counters(r)->events);
		free(evs);
		pgtrace_reader_close(r);
	}
	synth_free(&s);
}

/* A 64-byte buffer: a 65-word definition needs the buffer to grow. */
TEST(small_buffer)
{
	struct pgtrace_reader_params p = { .buf_size = PGTRACE_READER_MIN_BUF };
	struct pgtrace_event *evs;
	struct pgtrace_reader *r;
	struct synth s;
	char why[512];
	size_t n;
	int fd;

	stack_trace(&s, 4096);
	fd = fileno(tmpfile());
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, synth_write_slowly(fd, s.buf, s.len, 100, 3));
	ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
	ASSERT_EQ(0, pgtrace_reader_open_fd_params(&r, fd, &p));
	ASSERT_EQ(0, synth_read_all(r, 5, &evs, &n)) TH_LOG("%s", pgtrace_reader_error(r));
	EXPECT_EQ(-1, synth_compare(&s, evs, n, true, why, sizeof(why))) TH_LOG("%s", why);
	check_tables(_metadata, r);
	free(evs);
	pgtrace_reader_close(r);
	close(fd);
	synth_free(&s);
}

/* Runs skip the stack words: the same events, compact, and the same counts. */
TEST(runs)
{
	struct pgtrace_compact_event ce[16];
	const struct pgtrace_chunk *c;
	struct pgtrace_reader *r;
	struct synth s;
	size_t k = 0;
	int ret;

	stack_trace(&s, 1024);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	while ((ret = pgtrace_reader_next_run(r, ce, 16, &c)) > 0) {
		for (int i = 0; i < ret; i++, k++) {
			ASSERT_LT(k, s.nexp);
			EXPECT_EQ(s.exp[k].time_ns, ce[i].time_ns);
			EXPECT_EQ(s.exp[k].pfn, ce[i].pfn);
			EXPECT_EQ(s.exp[k].npages, pgtrace_compact_event_npages(&ce[i]));
			EXPECT_EQ(s.exp[k].type, pgtrace_compact_event_type(&ce[i]));
		}
	}
	EXPECT_EQ(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
	EXPECT_EQ(s.nexp, k);
	check_tables(_metadata, r);
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Plain streams: no stacks record, no samples, stack 0 everywhere. */
TEST(no_stacks)
{
	struct pgtrace_event ev;
	struct pgtrace_reader *r;
	struct synth s;

	synth_init(&s, 1, 1024, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 1, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	EXPECT_EQ(NULL, pgtrace_reader_stacks(r));
	EXPECT_EQ(NULL, pgtrace_reader_filter(r));
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(0, ev.stack);
	EXPECT_EQ(0, pgtrace_reader_counters(r)->samples);
	pgtrace_reader_close(r);
	synth_free(&s);
}

TEST(header_records)
{
	const struct pagetrace_rec_filter *f;
	const struct pagetrace_rec_stacks *st;
	struct pgtrace_reader *r;
	struct synth s;

	synth_init(&s, 1, 1024, PAGETRACE_FLAG_STACKS | PAGETRACE_FLAG_FILTERED);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0)) TH_LOG("%s", pgtrace_reader_error(r));
	st = pgtrace_reader_stacks(r);
	ASSERT_NE(NULL, st);
	EXPECT_EQ(SYNTH_RATE, st->rate);
	EXPECT_EQ(PAGETRACE_STACK_MAX_DEPTH, st->max_depth);
	EXPECT_EQ(SYNTH_ANCHOR_ADDR, st->anchor_addr);
	EXPECT_STREQ(SYNTH_ANCHOR_NAME, (const char *)st->anchor_name);
	f = pgtrace_reader_filter(r);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(6, f->types);
	EXPECT_EQ(0xf, f->orders);
	EXPECT_EQ(1, f->nodes[0]);
	EXPECT_EQ(1234, f->cgroup_id);
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Open a header only: the error and its message. */
static int open_msg(const struct synth *s, char *msg, size_t n)
{
	struct pgtrace_reader *r;
	int ret = pgtrace_reader_open_mem(&r, s->buf, s->len, 0);

	snprintf(msg, n, "%s", r ? pgtrace_reader_error(r) : "");
	pgtrace_reader_close(r);
	return ret;
}

static void patch(struct synth *s, size_t off, uint64_t v, unsigned int size)
{
	uint64_t le = htole64(v);

	memcpy(s->buf + off, &le, size);
}

TEST(bad_header_records)
{
	static const struct {
		unsigned int flags;
		int rec;		/* 0 stacks, 1 filter, -1 the header flags */
		size_t field;
		uint64_t value;
		unsigned int size;
		const char *why;
	} cases[] = {
		{ PAGETRACE_FLAG_STACKS, 0, offsetof(struct pagetrace_rec_stacks, reserved) + 8,
		  1, 8, "stacks record reserved[1]" },
		{ PAGETRACE_FLAG_STACKS, 0, offsetof(struct pagetrace_rec_stacks, rate), 0, 4,
		  "rate 0" },
		{ PAGETRACE_FLAG_STACKS, 0, offsetof(struct pagetrace_rec_stacks, max_depth),
		  65, 4, "max_depth 65" },
		{ PAGETRACE_FLAG_STACKS, 0, -8 + 4, 64, 4, "stacks record size 64" },
		{ PAGETRACE_FLAG_FILTERED, 1, offsetof(struct pagetrace_rec_filter, types), 1, 4,
		  "types 0x1" },
		{ PAGETRACE_FLAG_FILTERED, 1, offsetof(struct pagetrace_rec_filter, reserved0),
		  1, 4, "reserved fields" },
		{ PAGETRACE_FLAG_FILTERED, 1, offsetof(struct pagetrace_rec_filter, reserved) + 24,
		  1, 8, "reserved fields" },
		{ PAGETRACE_FLAG_STACKS, -1, 0, 0, 4, "PAGETRACE_FLAG_STACKS without" },
		{ PAGETRACE_FLAG_FILTERED, -1, 0, 0, 4, "PAGETRACE_FLAG_FILTERED without" },
	};
	struct synth s;
	char msg[256], want[64];

	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t rec, at;

		synth_init(&s, 1, 1024, cases[i].flags);
		rec = cases[i].rec ? s.filter_rec_off : s.stacks_rec_off;
		if (cases[i].rec < 0) {
			/* Drop the flag's record: make it an unknown type. */
			rec = cases[i].flags == PAGETRACE_FLAG_STACKS ? s.stacks_rec_off
								      : s.filter_rec_off;
			patch(&s, rec - 8, 99, 4);
			at = offsetof(struct pagetrace_header, flags);
		} else {
			patch(&s, rec + cases[i].field, cases[i].value, cases[i].size);
			at = rec - 8;
		}
		EXPECT_EQ(-EBADMSG, open_msg(&s, msg, sizeof(msg))) TH_LOG("case %u", i);
		snprintf(want, sizeof(want), "offset %zu: ", at);
		EXPECT_EQ(0, strncmp(msg, want, strlen(want))) TH_LOG("case %u: %s", i, msg);
		EXPECT_NE(NULL, strstr(msg, cases[i].why)) TH_LOG("case %u: %s", i, msg);
		synth_free(&s);
	}
	/* A record whose flag is missing. */
	synth_init(&s, 1, 1024, PAGETRACE_FLAG_STACKS);
	patch(&s, offsetof(struct pagetrace_header, flags), 0, 4);
	EXPECT_EQ(-EBADMSG, open_msg(&s, msg, sizeof(msg)));
	EXPECT_NE(NULL, strstr(msg, "stacks record without")) TH_LOG("%s", msg);
	synth_free(&s);
}

/* One chunk of @words on a stacks trace: the error, its offset and message. */
static int drain_words(const uint64_t *words, unsigned int n, unsigned int flags,
		       uint64_t *word0, char *msg, size_t len)
{
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	struct synth s;
	int ret;

	synth_init(&s, 1, 4096, flags);
	*word0 = s.len + 32;
	synth_put_chunk(&s, 0, 0, 0, 0, words, n);
	msg[0] = '\0';
	ret = pgtrace_reader_open_mem(&r, s.buf, s.len, 0);
	if (!ret) {
		while ((ret = pgtrace_reader_next(r, &ev)) > 0)
			;
		snprintf(msg, len, "%s", pgtrace_reader_error(r));
	}
	pgtrace_reader_close(r);
	synth_free(&s);
	return ret;
}

#define PID0		pagetrace_pid_word(0)
#define SYNC		pagetrace_sync_word(SEC)
#define ALLOC		pagetrace_event_word(0, 5, 1, PAGETRACE_EV_ALLOC)
#define FREE		pagetrace_event_word(0, 5, 1, PAGETRACE_EV_FREE)
#define DEF(id, d)	pagetrace_stack_def_word(id, d, 0)
#define FR(a)		pagetrace_frame_word(a)
#define SAMPLE(id)	pagetrace_sample_word(id)
#define STK(kind, bits)	pagetrace_stack_word(kind, bits)

TEST(bad_stack_words)
{
	const struct {
		uint64_t w[8];
		unsigned int n;
		unsigned int at;	/* word index of the error */
		const char *why;
	} cases[] = {
		{ { PID0, SYNC, DEF(0, 1), FR(K(1)), SAMPLE(0), ALLOC }, 6, 2, "stack id 0" },
		{ { PID0, SYNC, DEF(1, 0), SAMPLE(1), ALLOC }, 5, 2, "depth 0" },
		{ { PID0, SYNC, DEF(1, 65), FR(K(1)) }, 4, 2, "depth 65" },
		{ { PID0, SYNC, DEF(1, 1) | 1ULL << (3 + 41), FR(K(1)) }, 4, 2,
		  "DEF word 0x" },
		{ { PID0, SYNC, SAMPLE(1) | 1ULL << (3 + 40), ALLOC }, 4, 2, "SAMPLE word 0x" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)) | 1ULL << (3 + 50) }, 4, 3,
		  "FRAME word 0x" },
		{ { PID0, SYNC, DEF(1, 3), FR(K(1)), FR(K(2)) }, 5, 2, "chunk ends after 2" },
		{ { PID0, SYNC, DEF(1, 3), FR(K(1)), ALLOC, FR(K(2)) }, 6, 4,
		  "is not a FRAME word" },
		{ { PID0, SYNC, DEF(1, 2), FR(K(1)), DEF(2, 1), FR(K(2)) }, 6, 4,
		  "is not a FRAME word" },
		{ { PID0, SYNC, ALLOC, FR(K(1)), ALLOC }, 5, 3, "FRAME word 0x" },
		{ { PID0, SYNC, SAMPLE(4), ALLOC }, 4, 2, "names stack 4" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), SAMPLE(1), FREE }, 6, 5,
		  "not an alloc event" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), SAMPLE(1), SYNC, ALLOC }, 7, 5,
		  "not an alloc event" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), SAMPLE(1), SAMPLE(1), ALLOC }, 7, 5,
		  "not an alloc event" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), SAMPLE(1) }, 5, 4, "last word" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), SAMPLE(1),
		    pagetrace_large_event_word(0, 5, PAGETRACE_EV_ALLOC) }, 6, 5, "last word" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), DEF(1, 1), FR(K(2)) }, 6, 4,
		  "other frames" },
		{ { PID0, SYNC, DEF(1, 1), FR(K(1)), DEF(1, 2), FR(K(1)), FR(K(2)) }, 7, 4,
		  "other frames" },
		{ { PID0, SYNC, STK(3, 1), ALLOC }, 4, 2, "unknown kind 3" },
	};
	char msg[256], want[64];
	uint64_t w0;

	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		EXPECT_EQ(-EBADMSG, drain_words(cases[i].w, cases[i].n, PAGETRACE_FLAG_STACKS,
						&w0, msg, sizeof(msg))) TH_LOG("case %u: %s", i, msg);
		snprintf(want, sizeof(want), "offset %llu: ",
			 (unsigned long long)(w0 + 8 * cases[i].at));
		EXPECT_EQ(0, strncmp(msg, want, strlen(want))) TH_LOG("case %u: %s", i, msg);
		EXPECT_NE(NULL, strstr(msg, cases[i].why)) TH_LOG("case %u: %s", i, msg);
	}
	/* Stack words without the flag. */
	{
		const uint64_t w[] = { PID0, SYNC, DEF(1, 1), FR(K(1)) };

		EXPECT_EQ(-EBADMSG, drain_words(w, 4, 0, &w0, msg, sizeof(msg)));
		EXPECT_NE(NULL, strstr(msg, "without PAGETRACE_FLAG_STACKS")) TH_LOG("%s", msg);
	}
	/* Valid: unknown stack, a large sampled event, a repeated definition. */
	{
		const uint64_t w[] = { PID0, SYNC, SAMPLE(0), ALLOC, DEF(1, 1), FR(K(1)),
				       SAMPLE(1), pagetrace_large_event_word(0, 5,
				       PAGETRACE_EV_ALLOC), 2048, DEF(1, 1), FR(K(1)), SAMPLE(1),
				       ALLOC };

		EXPECT_EQ(0, drain_words(w, ARRAY_SIZE(w), PAGETRACE_FLAG_STACKS, &w0, msg,
					 sizeof(msg))) TH_LOG("%s", msg);
	}
}

/* An id defined in one chunk must be defined again in the next to be named. */
TEST(define_per_chunk)
{
	const uint64_t a[] = { PID0, SYNC, DEF(9, 1), FR(K(1)), SAMPLE(9), ALLOC };
	const uint64_t b[] = { PID0, pagetrace_sync_word(2 * SEC), SAMPLE(9), ALLOC };
	const uint64_t c[] = { PID0, pagetrace_sync_word(3 * SEC), DEF(9, 1), FR(K(2)) };
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	struct synth s;
	size_t bw, cw;

	synth_init(&s, 1, 4096, PAGETRACE_FLAG_STACKS);
	synth_put_chunk(&s, 0, 0, 0, 0, a, ARRAY_SIZE(a));
	bw = s.len + 32;
	synth_put_chunk(&s, 0, 0, 1, 0, b, ARRAY_SIZE(b));
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(9, ev.stack);
	EXPECT_EQ(-EBADMSG, pgtrace_reader_next(r, &ev));
	EXPECT_NE(NULL, strstr(pgtrace_reader_error(r), "names stack 9"));
	EXPECT_EQ(bw + 16, strtoull(pgtrace_reader_error(r) + 7, NULL, 10));
	pgtrace_reader_close(r);
	synth_free(&s);

	/* Redefined with other frames in a later chunk. */
	synth_init(&s, 1, 4096, PAGETRACE_FLAG_STACKS);
	synth_put_chunk(&s, 0, 0, 0, 0, a, ARRAY_SIZE(a));
	cw = s.len + 32;
	synth_put_chunk(&s, 0, 0, 1, 0, c, ARRAY_SIZE(c));
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(-EBADMSG, pgtrace_reader_next(r, &ev));
	EXPECT_NE(NULL, strstr(pgtrace_reader_error(r), "other frames"));
	EXPECT_EQ(cw + 16, strtoull(pgtrace_reader_error(r) + 7, NULL, 10));
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* pagetrace stats says what a filter kept, and counts the samples. */
TEST(stats_cli)
{
	char path[] = "/tmp/pt-stacksXXXXXX", cmd[512], out[8192];
	struct synth s;
	FILE *p;
	size_t n;
	int fd;

	for (unsigned int i = 0; i < PAGETRACE_STACK_MAX_DEPTH; i++)
		f64[i] = K(0x100000 + 16 * i);
	synth_init(&s, 1, 1024, PAGETRACE_FLAG_STACKS | PAGETRACE_FLAG_FILTERED);
	synth_stack_def(&s, 0, 1, 3, false, f1);
	synth_sample(&s, 0, SEC, 1, 0x100, 1);
	synth_sample(&s, 0, SEC + 10, 0, 0x200, 1);
	synth_flush_all(&s);
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)s.len, write(fd, s.buf, s.len));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s stats %s 2>&1", PAGETRACE_BIN, path);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	EXPECT_EQ(0, pclose(p)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "FILTERED:        only alloc/free events of orders 0-3 on "
			       "nodes 0 of cgroup 1234 (and below; no interrupts) were recorded: "
			       "not a complete trace")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "stack samples:   2 (1 with unknown stack), about 1 per 64 "
			       "pages allocated; 1 distinct stacks")) TH_LOG("%s", out);
	unlink(path);
	synth_free(&s);
}

TEST_HARNESS_MAIN
