// SPDX-License-Identifier: GPL-2.0
/*
 * Every broken invariant is -EBADMSG with the right offset and reason, and
 * no input, however cut or scrambled, makes the reader misbehave.
 */
#include <fcntl.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL

/*
 * The base file, three handmade chunks at fixed offsets from H (header):
 *   A  H       cpu0 seq0  pid sync(SEC) alloc(+0) free(+256)
 *   B  H+64    cpu1 seq0  pid sync(SEC) large alloc(+128) 2048 task(77) free(+256)
 *   C  H+144   cpu0 seq1  pid sync(SEC+1024) reclaim(+0)
 */
#define A	(H)
#define B	(H + 64)
#define C	(H + 144)
#define W(chunk, i)	((chunk) + 32 + 8 * (i))
#define END	(H + 144 + 56)

static uint64_t H;

static void base_file(struct synth *s, unsigned int flags)
{
	uint64_t a[] = {
		pagetrace_pid_word(0), pagetrace_sync_word(SEC),
		pagetrace_event_word(0, 1, 1, PAGETRACE_EV_ALLOC),
		pagetrace_event_word(256, 2, 1, PAGETRACE_EV_FREE),
	};
	uint64_t b[] = {
		pagetrace_pid_word(1), pagetrace_sync_word(SEC),
		pagetrace_large_event_word(128, 3, PAGETRACE_EV_ALLOC), 2048,
		pagetrace_pid_word(PAGETRACE_ID_TASK | 77),
		pagetrace_event_word(256, 4, 1, PAGETRACE_EV_FREE),
	};
	uint64_t c[] = {
		pagetrace_pid_word(0), pagetrace_sync_word(SEC + 1024),
		pagetrace_event_word(0, 5, 1, PAGETRACE_EV_RECLAIM),
	};

	synth_init(s, 2, 4096, flags);
	H = s->len;
	synth_put_chunk(s, 0, 0, 0, 0, a, ARRAY_SIZE(a));
	synth_put_chunk(s, 1, PAGETRACE_CHUNK_FLUSHED, 0, 3, b, ARRAY_SIZE(b));
	synth_put_chunk(s, 0, 0, 1, 0, c, ARRAY_SIZE(c));
}

static void patch(struct synth *s, uint64_t off, uint64_t v, unsigned int size)
{
	uint64_t le = htole64(v);

	memcpy(s->buf + off, &le, size);
}

/* Drain a reader over @buf: the final result, message and event count. */
static int drain(const void *buf, size_t len, char *msg, size_t n, unsigned int *nev)
{
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	int ret;

	*nev = 0;
	msg[0] = '\0';
	ret = pgtrace_reader_open_mem(&r, buf, len, 0);
	if (!ret) {
		while ((ret = pgtrace_reader_next(r, &ev)) > 0)
			(*nev)++;
		/* Errors stick. */
		if (ret < 0 && pgtrace_reader_next(r, &ev) != ret)
			ret = -1000;
	}
	if (r) {
		snprintf(msg, n, "%s", pgtrace_reader_error(r));
		pgtrace_reader_close(r);
	}
	return ret;
}

/* Assert the base file, as patched, fails at @off with exactly @what. */
#define EXPECT_CORRUPT(s, off, what) do {					\
	char _msg[300], _want[300];						\
	unsigned int _nev;							\
										\
	snprintf(_want, sizeof(_want), "offset %llu: %s",			\
		 (unsigned long long)(off), what);				\
	EXPECT_EQ(-EBADMSG, drain((s)->buf, (s)->len, _msg, sizeof(_msg), &_nev)); \
	EXPECT_STREQ(_want, _msg);						\
} while (0)

TEST(valid_base_file)
{
	struct synth s;
	char msg[300];
	unsigned int nev;

	base_file(&s, 0);
	ASSERT_EQ(END, s.len);
	ASSERT_EQ(0, drain(s.buf, s.len, msg, sizeof(msg), &nev));
	ASSERT_EQ(5, nev);
	ASSERT_STREQ("", msg);
	synth_free(&s);
}

TEST(header_fields)
{
	struct synth s;

	base_file(&s, 0);
	s.buf[1] = 'X';
	EXPECT_CORRUPT(&s, 0, "magic is 'PXTRACE\\x00', expected 'PGTRACE\\0'");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 8, 2, 4);
	EXPECT_CORRUPT(&s, 8, "version 2, expected 1");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 12, 60, 4);
	EXPECT_CORRUPT(&s, 12, "header_size 60 is not a multiple of 8 in [64, 1048576]");
	patch(&s, 12, H + 4, 4);
	EXPECT_CORRUPT(&s, 12, "header_size 196 is not a multiple of 8 in [64, 1048576]");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 20, 8, 4);
	EXPECT_CORRUPT(&s, 20, "time_lost_bits 8, expected 7");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 24, 15, 4);
	EXPECT_CORRUPT(&s, 24, "time_delta_bits 15, expected 16");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 28, 0, 4);
	EXPECT_CORRUPT(&s, 28, "nr_cpus 0 out of range [1, 65536]");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 56, 40, 4);
	EXPECT_CORRUPT(&s, 56, "chunk_size 40 is not a multiple of 8 >= 48");
	patch(&s, 56, 4097, 4);
	EXPECT_CORRUPT(&s, 56, "chunk_size 4097 is not a multiple of 8 >= 48");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 16, 3, 4);
	EXPECT_CORRUPT(&s, 16, "page_shift 3 out of range [9, 30]");
	synth_free(&s);
}

TEST(header_records)
{
	struct synth s;

	/* The release record is the first one: type at 64, size at 68. */
	base_file(&s, 0);
	patch(&s, 68, 4096, 4);
	EXPECT_CORRUPT(&s, 64, "header record type 1 size 4096 overruns header_size 192");
	synth_free(&s);

	base_file(&s, 0);
	s.buf[72 + 11] = 'x';
	EXPECT_CORRUPT(&s, 64, "release record is not NUL-terminated");
	synth_free(&s);

	/* The zone record follows at 64 + 8 + 16. */
	base_file(&s, 0);
	patch(&s, 88 + 4, 40, 4);
	EXPECT_CORRUPT(&s, 88, "zone record size 40, need 48");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, 96 + 16, 0x10, 8);
	EXPECT_CORRUPT(&s, 88, "zone record end_pfn 0x10 < start_pfn 0x1000");
	synth_free(&s);

	/* An unknown record type is skipped. */
	base_file(&s, 0);
	patch(&s, 88, 99, 4);
	{
		char msg[300];
		unsigned int nev;

		EXPECT_EQ(0, drain(s.buf, s.len, msg, sizeof(msg), &nev));
		EXPECT_EQ(5, nev);
	}
	synth_free(&s);
}

TEST(chunk_headers)
{
	struct synth s;
	char want[100];

	base_file(&s, 0);
	memcpy(s.buf + A, "XXXX", 4);
	EXPECT_CORRUPT(&s, A, "chunk magic is 'XXXX', expected 'PTCK'");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, B + 4, 2, 2);
	EXPECT_CORRUPT(&s, B, "chunk cpu 2 >= nr_cpus 2");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, A + 12, 1, 4);
	EXPECT_CORRUPT(&s, A, "chunk reserved field is 0x1, expected 0");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, A + 8, 1, 4);
	EXPECT_CORRUPT(&s, A, "chunk has 1 words, need at least 2 (pid, sync)");
	patch(&s, A + 8, 509, 4);
	EXPECT_CORRUPT(&s, A, "chunk has 509 words, more than chunk_size 4096 holds");
	synth_free(&s);

	/* 508 words fit exactly: then the file is merely cut short. */
	base_file(&s, 0);
	patch(&s, C + 8, 508, 4);
	snprintf(want, sizeof(want), "file ends inside a chunk (need 4096 bytes, have %llu)",
		 (unsigned long long)(END - C));
	EXPECT_CORRUPT(&s, C, want);
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, C + 6, PAGETRACE_CHUNK_SNAPSHOT, 2);
	EXPECT_CORRUPT(&s, C, "snapshot chunk has seq 1, expected 0");
	synth_free(&s);
}

TEST(seq_numbers)
{
	struct synth s;
	struct pgtrace_reader *r;
	struct pgtrace_event ev;

	base_file(&s, 0);
	patch(&s, C + 16, 3, 8);
	EXPECT_CORRUPT(&s, C, "cpu 0 chunk seq 3, expected 1");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, B + 16, 1, 8);
	EXPECT_CORRUPT(&s, B, "cpu 1 chunk seq 1, expected 0");
	synth_free(&s);

	/* Going back is corrupt even in flight recorder mode. */
	base_file(&s, PAGETRACE_FLAG_OVERWRITE);
	patch(&s, C + 16, 0, 8);
	EXPECT_CORRUPT(&s, C, "cpu 0 chunk seq 0, expected 1");
	synth_free(&s);

	/* Gaps are fine there, and counted. */
	base_file(&s, PAGETRACE_FLAG_OVERWRITE);
	patch(&s, C + 16, 4, 8);
	patch(&s, B + 16, 10, 8);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	while (pgtrace_reader_next(r, &ev) > 0)
		;
	EXPECT_STREQ("", pgtrace_reader_error(r));
	EXPECT_EQ(2, pgtrace_reader_counters(r)->seq_gaps);
	EXPECT_EQ(13, pgtrace_reader_counters(r)->missing_chunks);
	EXPECT_EQ(3, pgtrace_reader_counters(r)->chunks);
	EXPECT_EQ(3, pgtrace_reader_counters(r)->lost);
	pgtrace_reader_close(r);
	synth_free(&s);
}

TEST(chunk_leading_words)
{
	struct synth s;

	base_file(&s, 0);
	patch(&s, W(A, 0), pagetrace_pid_word(1), 8);
	EXPECT_CORRUPT(&s, W(A, 0), "chunk word 0 has id 1, expected cpu 0");
	patch(&s, W(A, 0), pagetrace_pid_word(PAGETRACE_ID_TASK), 8);
	EXPECT_CORRUPT(&s, W(A, 0), "chunk word 0 has id 1152921504606846976, expected cpu 0");
	patch(&s, W(A, 0), pagetrace_sync_word(SEC), 8);
	EXPECT_CORRUPT(&s, W(A, 0), "chunk word 0 is 0x0000000003b9aca0, not a pid word");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, W(A, 1), 0x11, 8);
	EXPECT_CORRUPT(&s, W(A, 1), "chunk word 1 is 0x0000000000000011, not a sync word");
	patch(&s, W(A, 1), pagetrace_pid_word(0), 8);
	EXPECT_CORRUPT(&s, W(A, 1), "chunk word 1 is 0x0000000000000004, not a sync word");
	synth_free(&s);
}

TEST(words)
{
	struct synth s;

	base_file(&s, 0);
	patch(&s, W(A, 2), pagetrace_pid_word(5), 8);
	EXPECT_CORRUPT(&s, W(A, 2), "pid word 0x000000000000002c inside a chunk is not a task record");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, W(B, 4), pagetrace_pid_word(PAGETRACE_ID_TASK | (1ULL << 32) | 77), 8);
	EXPECT_CORRUPT(&s, W(B, 4), "pid word 0x800000080000026c inside a chunk is not a task record");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, W(A, 2), pagetrace_event_word(0, 1, 0, PAGETRACE_EV_ALLOC), 8);
	EXPECT_CORRUPT(&s, W(A, 2), "event word 0x0000000000002001 has npages 0");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, W(B, 3), 1023, 8);
	EXPECT_CORRUPT(&s, W(B, 2), "large event has npages 1023, expected 1024..34359738368");
	patch(&s, W(B, 3), (1ULL << 35) + 1, 8);
	EXPECT_CORRUPT(&s, W(B, 2), "large event has npages 34359738369, expected 1024..34359738368");
	synth_free(&s);

	base_file(&s, 0);
	patch(&s, W(B, 2), pagetrace_large_event_word(128, 3, 1) | (5 << 3), 8);
	EXPECT_CORRUPT(&s, W(B, 2), "large event word 0x000100000000602d has npages field 5, expected 0");
	synth_free(&s);

	/* Chop B to pid, sync, large: the large event ends the chunk. */
	base_file(&s, 0);
	patch(&s, B + 8, 3, 4);
	EXPECT_CORRUPT(&s, W(B, 2), "large event is the last word of its chunk");
	synth_free(&s);
}

TEST(time_order)
{
	struct synth s;

	/* Within a chunk: alloc at +512, then free at +256. */
	base_file(&s, 0);
	patch(&s, W(A, 2), pagetrace_event_word(512, 1, 1, PAGETRACE_EV_ALLOC), 8);
	EXPECT_CORRUPT(&s, W(A, 3), "time goes backwards on cpu 0: 1000000256 ns after 1000000512 ns");
	synth_free(&s);

	/* A sync word mid-chunk that goes back. */
	base_file(&s, 0);
	patch(&s, W(B, 4), pagetrace_sync_word(SEC), 8);
	EXPECT_CORRUPT(&s, W(B, 4), "time goes backwards on cpu 1: sync to 1000000000 ns after 1000000128 ns");
	synth_free(&s);

	/* Across chunks: C starts before A's last event. */
	base_file(&s, 0);
	patch(&s, W(C, 1), pagetrace_sync_word(SEC + 128), 8);
	EXPECT_CORRUPT(&s, W(C, 1), "time goes backwards on cpu 0: 1000000128 ns after 1000000256 ns");
	synth_free(&s);

	/* Equal times are fine. */
	base_file(&s, 0);
	patch(&s, W(C, 1), pagetrace_sync_word(SEC + 256), 8);
	{
		char msg[300];
		unsigned int nev;

		EXPECT_EQ(0, drain(s.buf, s.len, msg, sizeof(msg), &nev));
		EXPECT_EQ(5, nev);
	}
	synth_free(&s);
}

/* Feed a whole buffer through a pipe and read it with a tiny buffer. */
static int drain_pipe(const void *buf, size_t len, unsigned int bufsz, char *msg,
		      size_t n, unsigned int *nev)
{
	struct pgtrace_reader_params p = { .buf_size = bufsz };
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	int fds[2], ret;
	pid_t pid;

	*nev = 0;
	msg[0] = '\0';
	if (pipe(fds))
		return -1000;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(synth_write_slowly(fds[1], buf, len, 7, (unsigned int)len) ? 1 : 0);
	}
	close(fds[1]);
	*nev = 0;
	msg[0] = '\0';
	ret = pgtrace_reader_open_fd_params(&r, fds[0], &p);
	if (!ret)
		while ((ret = pgtrace_reader_next(r, &ev)) > 0)
			(*nev)++;
	if (r) {
		snprintf(msg, n, "%s", pgtrace_reader_error(r));
		pgtrace_reader_close(r);
	}
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return ret;
}

TEST(truncated_everywhere)
{
	/* Events complete at each length, for the prefix check. */
	struct synth s;

	base_file(&s, 0);
	for (uint64_t len = 0; len <= END; len++) {
		uint64_t want_ev = 0;
		bool boundary = len == A || len == B || len == C || len == END;
		char msg[300], msg2[300];
		unsigned int nev = 0, nev2 = 0;
		int ret, ret2;

		/* The reader streams: events before the cut still come out. */
		if (len >= W(A, 3)) want_ev = 1;
		if (len >= W(A, 4)) want_ev = 2;
		if (len >= W(B, 4)) want_ev = 3;
		if (len >= W(B, 6)) want_ev = 4;
		if (len >= W(C, 3)) want_ev = 5;

		ret = drain(s.buf, len, msg, sizeof(msg), &nev);
		ret2 = drain_pipe(s.buf, len, 64, msg2, sizeof(msg2), &nev2);
		ASSERT_EQ(boundary && len >= H ? 0 : -EBADMSG, ret) {
			TH_LOG("len %llu: %s", (unsigned long long)len, msg);
		}
		ASSERT_EQ(want_ev, nev) {
			TH_LOG("len %llu", (unsigned long long)len);
		}
		ASSERT_EQ(ret, ret2);
		ASSERT_EQ(nev, nev2);
		ASSERT_STREQ(msg, msg2);
		if (ret)
			ASSERT_TRUE(strstr(msg, "file ends inside") != NULL) {
				TH_LOG("len %llu: %s", (unsigned long long)len, msg);
			}
	}

	{
		char msg[300];
		unsigned int nev;

		drain(s.buf, 30, msg, sizeof(msg), &nev);
		EXPECT_STREQ("offset 0: file ends inside the header (need 64 bytes, have 30)", msg);
		drain(s.buf, 100, msg, sizeof(msg), &nev);
		EXPECT_STREQ("offset 0: file ends inside the header (need 192 bytes, have 100)", msg);
		drain(s.buf, A + 10, msg, sizeof(msg), &nev);
		EXPECT_STREQ("offset 192: file ends inside a chunk header (need 32 bytes, have 10)", msg);
		drain(s.buf, A + 40, msg, sizeof(msg), &nev);
		EXPECT_STREQ("offset 192: file ends inside a chunk (need 64 bytes, have 40)", msg);
		drain(s.buf, B + 70, msg, sizeof(msg), &nev);
		EXPECT_STREQ("offset 256: file ends inside a chunk (need 80 bytes, have 70)", msg);
		EXPECT_EQ(3, nev);
	}
	synth_free(&s);
}

TEST(scrambled)
{
	uint64_t st = 0x9e3779b97f4a7c15ULL;
	struct synth s;
	unsigned char *copy;

	base_file(&s, 0);
	copy = malloc(s.len);
	ASSERT_TRUE(copy != NULL);
	for (int iter = 0; iter < 50000; iter++) {
		char msg[300];
		unsigned int nev, flips = 1 + synth_rand(&st) % 4;
		size_t len = s.len;
		int ret;

		memcpy(copy, s.buf, s.len);
		while (flips--) {
			/* Mostly past the header, where the decoder works. */
			size_t at = (synth_rand(&st) % 4 ? H : 0) +
				    synth_rand(&st) % (s.len - (H));

			copy[at] ^= 1u << (synth_rand(&st) % 8);
		}
		if (!(iter % 7))
			len = synth_rand(&st) % (s.len + 1);
		ret = drain(copy, len, msg, sizeof(msg), &nev);
		ASSERT_TRUE(ret == 0 || ret == -EBADMSG) {
			TH_LOG("iter %d: %d", iter, ret);
		}
		if (ret)
			ASSERT_EQ(0, strncmp(msg, "offset ", 7));
	}
	free(copy);
	synth_free(&s);
}

TEST(read_error)
{
	struct pgtrace_reader *r;
	int fd = open("/", O_RDONLY | O_DIRECTORY);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(-EIO, pgtrace_reader_open_fd(&r, fd, 0));
	ASSERT_TRUE(r != NULL);
	EXPECT_STREQ("offset 0: read error: Is a directory", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	close(fd);
	EXPECT_EQ(-EINVAL, pgtrace_reader_open_fd(&r, -1, 0));
	EXPECT_TRUE(r == NULL);
}

TEST_HARNESS_MAIN
