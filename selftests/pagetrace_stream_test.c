// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_stream_test: what read() of /dev/pagetrace delivers after the
 * header.  Page traffic on every CPU (threads pinned to each), then the
 * stream checked three ways that must agree exactly, CPU by CPU: its raw
 * framing chunk by chunk, without the library (magic, cpu, sizes, pid and
 * sync words first, unflushed chunks full); libpagetrace's decode (chunk
 * seq 0, 1, 2 ..., times that never go back nor precede the start); and
 * the kernel's PAGETRACE_IOC_STATS counters.  FLUSH closes every CPU's
 * buffer, STOP stops (EOF, which sticks; nothing more is counted), a
 * drained non-blocking reader gets EAGAIN; with two 4 KiB buffers and no
 * reader every lost event is still counted in the stream.  And how soon
 * a page's alloc and free reach a reader blocked in poll() or read():
 * within two flush periods (plus PT_ST_LATE_MS), at the right time on the
 * trace clock.  Runs as root with pagetrace.ko loaded (or loads it,
 * pt_selftest.c); every test leaves it loaded with its default parameters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

/* --------------------------------------------------------------- helpers */

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* -------------------------------------------------------------- fixture */

/*
 * These tests are about the framing of the per-CPU chunks, which the
 * memory map at session start would precede (pagetrace_snapshot_test.c
 * covers that): sessions are opened without it (pt_st_open_dev();
 * teardown turns it back on).
 */
FIXTURE(pt) {
	int			fd;
	struct pt_st_buf	b;
	struct pt_st_hdr	hi;
	struct pt_st_decoded	dec;
};

FIXTURE_SETUP(pt)
{
	self->fd = -1;
	/* Normally a no-op: the runner loaded pagetrace.ko with defaults. */
	ASSERT_EQ(0, pt_st_mod_ensure_default())
		TH_LOG("pagetrace not loaded with default parameters and %s cannot be loaded",
		       pt_st_ko_path() ? pt_st_ko_path() : "modprobe pagetrace");
}

FIXTURE_TEARDOWN(pt)
{
	int ret;

	if (self->fd >= 0)
		close(self->fd);
	ret = pt_st_session_cleanup(&self->b, &self->dec);
	/*
	 * No TH_LOG on the EXPECT: after a failed ASSERT the harness's
	 * trigger is still set and would print it even on success.
	 */
	EXPECT_EQ(0, ret);
	if (ret)
		TH_LOG("could not restore pagetrace with default parameters: %s",
		       strerror(-ret));
}

/* Open a session and read its header into self->b / self->hi. */
static int start_session(FIXTURE_DATA(pt) *self, int flags)
{
	return pt_st_start_session(&self->fd, flags, &self->b, &self->hi);
}

/* ----------------------------------------------------------------- tests */

TEST_F_TIMEOUT(pt, stream, 180)
{
	const struct pagetrace_header *h = &self->hi.h;
	struct pagetrace_cpu_stats *st, *st2;
	struct pagetrace_stats s, s2;
	struct pt_st_raw_cpu *raw;
	unsigned char ran[1024] = { 0 };
	uint64_t sum_ev = 0, sum_lost = 0, sum_chunks = 0, sum_bytes = 0;
	char why[256];
	size_t flushed_len, end;
	int ncpu;

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	raw = calloc(h->nr_cpus, sizeof(*raw));
	st = calloc(h->nr_cpus, sizeof(*st));
	st2 = calloc(h->nr_cpus, sizeof(*st2));
	ASSERT_TRUE(raw && st && st2);

	/* 2 MiB on every CPU: ~512 allocs and frees each. */
	ncpu = pt_st_on_every_cpu(2 << 20, ran, sizeof(ran));
	ASSERT_LE(1, ncpu) TH_LOG("could not run pinned threads");

	/* FLUSH closes every partly filled buffer: every CPU has a chunk. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, set_nonblock(self->fd, true));
	ASSERT_EQ(1, pt_st_buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));
	flushed_len = self->b.len;
	end = pt_st_walk_chunks(&self->b, h, raw, why, sizeof(why));
	ASSERT_STREQ("", why);
	ASSERT_EQ(flushed_len, end) TH_LOG("drained data ends inside a chunk");
	for (unsigned int cpu = 0; cpu < sizeof(ran) && cpu < h->nr_cpus; cpu++)
		if (ran[cpu]) {
			ASSERT_LE(1, raw[cpu].chunks)
				TH_LOG("no chunk from cpu %u after FLUSH", cpu);
		}

	/* More, then STOP and read to the end. */
	ASSERT_LE(1, pt_st_on_every_cpu(1 << 20, ran, sizeof(ran)));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));
	/* EOF sticks, blocking or not, and poll says readable. */
	ASSERT_EQ(0, set_nonblock(self->fd, false));
	ASSERT_EQ(0, pt_st_buf_read(self->fd, &self->b));
	{
		struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 0));
		ASSERT_TRUE(pfd.revents & POLLIN);
	}

	ASSERT_EQ(0, pt_st_stats_poisoned(self->fd, st, h->nr_cpus, &s));
	ASSERT_EQ(h->nr_cpus, s.nr_cpus);
	/* Stopped means stopped: more allocations change nothing. */
	pt_st_touch_and_free(1 << 20);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, pt_st_stats_poisoned(self->fd, st2, h->nr_cpus, &s2));
	ASSERT_EQ(0, memcmp(st, st2, h->nr_cpus * sizeof(*st)));
	ASSERT_EQ(0, pt_st_buf_read(self->fd, &self->b));

	/* Raw framing of every chunk, per-CPU totals. */
	memset(raw, 0, h->nr_cpus * sizeof(*raw));
	end = pt_st_walk_chunks(&self->b, h, raw, why, sizeof(why));
	ASSERT_STREQ("", why);
	ASSERT_EQ(self->b.len, end) TH_LOG("stream ends inside a chunk");

	/* The library's view. */
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	ASSERT_EQ(0, self->dec.seq_errors);
	ASSERT_EQ(0, self->dec.time_errors);
	ASSERT_EQ(0, self->dec.before_start);
	ASSERT_EQ(0, self->dec.cpu_errors);
	ASSERT_EQ(0, self->dec.ctr.seq_gaps);
	ASSERT_EQ(0, self->dec.ctr.snapshot_chunks);
	ASSERT_EQ(self->b.len, self->dec.ctr.bytes);
	ASSERT_EQ(self->dec.events, self->dec.ctr.events);
	ASSERT_EQ(self->dec.chunks, self->dec.ctr.chunks);
	ASSERT_EQ(self->dec.lost, self->dec.ctr.lost);
	TH_LOG("%d cpus, %llu chunks, %llu events (%llu alloc, %llu free, %llu reclaim), %llu lost",
	       ncpu, (unsigned long long)self->dec.chunks,
	       (unsigned long long)self->dec.events,
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_ALLOC],
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_FREE],
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_RECLAIM],
	       (unsigned long long)self->dec.lost);
	ASSERT_LE(500ULL * ncpu, self->dec.by_type[PGTRACE_EV_ALLOC]);
	ASSERT_LE(500ULL * ncpu, self->dec.by_type[PGTRACE_EV_FREE]);

	/* The kernel's counters agree exactly, CPU by CPU. */
	for (unsigned int cpu = 0; cpu < h->nr_cpus; cpu++) {
		ASSERT_EQ(st[cpu].events, self->dec.cpus[cpu].events)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].chunks, self->dec.cpus[cpu].chunks)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].chunks, raw[cpu].chunks) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].bytes, raw[cpu].bytes) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].lost, self->dec.cpus[cpu].lost)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].lost, raw[cpu].lost) TH_LOG("cpu %u", cpu);
		/* No filter, no sampling in this session. */
		ASSERT_EQ(0, st[cpu].filtered);
		ASSERT_EQ(0, st[cpu].samples);
		ASSERT_EQ(0, st[cpu].stacks_unknown);
		sum_ev += st[cpu].events;
		sum_lost += st[cpu].lost;
		sum_chunks += st[cpu].chunks;
		sum_bytes += st[cpu].bytes;
	}
	ASSERT_EQ(sum_ev, self->dec.events);
	ASSERT_EQ(sum_chunks, self->dec.chunks);
	ASSERT_EQ(sum_lost, self->dec.lost);
	ASSERT_EQ(sum_bytes + h->header_size, self->b.len);
	ASSERT_GE(sum_lost, s.probe_missed);
	free(raw);
	free(st);
	free(st2);
}

TEST_F(pt, read_eagain_eof)
{
	char c;
	ssize_t n;
	int i;

	ASSERT_EQ(0, start_session(self, O_NONBLOCK));
	ASSERT_STREQ("", self->hi.why);
	/* Zero-byte reads return 0 and consume nothing. */
	ASSERT_EQ(0, read(self->fd, &c, 0));
	ASSERT_EQ(0, read(self->fd, NULL, 0));

	/*
	 * Just after the header nothing is closed yet (the timer's first
	 * tick is flush_ms away, and one buffer holds thousands of events).
	 */
	n = read(self->fd, self->b.p, 4096);
	ASSERT_EQ(-1, n) TH_LOG("read after the header returned %zd", n);
	ASSERT_EQ(EAGAIN, errno);

	/* Drained after a flush: EAGAIN again, within a few rounds. */
	pt_st_touch_and_free(64 << 10);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_LT(0, pt_st_buf_read(self->fd, &self->b));
	for (i = 0; i < 100; i++) {
		if (pt_st_buf_drain(self->fd, &self->b) == 1)
			break;
	}
	ASSERT_GT(100, i);
	ASSERT_EQ(0, read(self->fd, &c, 0));

	/* After STOP the rest, then EOF (0), not EAGAIN, and it stays so. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));	/* idempotent */
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b));
	ASSERT_EQ(0, read(self->fd, self->b.p, 4096));
	ASSERT_EQ(0, set_nonblock(self->fd, false));
	ASSERT_EQ(0, read(self->fd, self->b.p, 4096));
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	ASSERT_LT(0, self->dec.by_type[PGTRACE_EV_ALLOC]);
}

/*
 * Wait for the alloc and free of @pfn by polling (@use_poll) or by
 * blocking reads, decoding what comes; returns the ns from @t0 (monotonic)
 * to when they were seen, or -1 after @timeout_ms.  *first_ns is when the
 * first data came.
 */
static int64_t wait_for_pfn(FIXTURE_DATA(pt) *self, uint64_t pfn, uint64_t t0,
			    int timeout_ms, bool use_poll, int64_t *first_ns)
{
	uint64_t deadline = t0 + timeout_ms * 1000000ULL;
	char why[256];

	*first_ns = -1;
	for (;;) {
		uint64_t now = pt_st_mono_ns();
		size_t before = self->b.len;
		int ret;

		if (now >= deadline)
			return -1;
		if (use_poll) {
			struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

			ret = poll(&pfd, 1, (deadline - now) / 1000000 + 1);
			if (ret < 0)
				return -1;
			if (ret == 0)
				continue;
			if (!(pfd.revents & POLLIN) || (pfd.revents & POLLERR))
				return -1;
			if (pt_st_buf_drain(self->fd, &self->b) < 0)
				return -1;
		} else {
			if (pt_st_buf_read(self->fd, &self->b) <= 0)
				return -1;
		}
		if (self->b.len == before)
			continue;
		if (*first_ns < 0)
			*first_ns = pt_st_mono_ns() - t0;
		/* Decode the complete chunks so far. */
		{
			struct pt_st_buf whole = self->b;

			whole.len = pt_st_walk_chunks(&self->b, &self->hi.h, NULL, why,
						sizeof(why));
			if (why[0])
				return -1;
			pt_st_decoded_free(&self->dec);
			self->dec.want_pfn = pfn;
			pt_st_decode_mem(whole.p, whole.len, &self->dec);
			if (self->dec.err || self->dec.first_problem[0])
				return -1;
			if (self->dec.found_alloc && self->dec.found_free)
				return pt_st_mono_ns() - t0;
		}
	}
}

/*
 * Trace time (local_clock()) vs a CLOCK_MONOTONIC time mapped with the
 * header's pair may differ by this much: without a stable TSC (TCG)
 * local_clock() is per-CPU and only kept within a tick of the gtod clock.
 * Tests that map times pin themselves to one CPU to keep this small.
 */
#define CLOCK_SLACK_NS	10000000ULL

TEST_F(pt, poll)
{
	struct pollfd pfd;
	long flush_ms = pt_st_get_param("flush_ms");
	uint64_t t0, pfn, trig;
	int64_t took, first;

	ASSERT_LE(10, flush_ms);
	ASSERT_LE(0, pt_st_pin_first_cpu());
	self->fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	/* The unread header alone makes the device readable. */
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	ASSERT_EQ(POLLIN, pfd.revents & (POLLIN | POLLERR | POLLHUP));
	ASSERT_EQ(0, pt_st_read_header(self->fd, &self->b, &self->hi));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(1, pt_st_buf_drain(self->fd, &self->b));

	pfn = pt_st_one_page_event(&t0, true);
	ASSERT_NE(0, pfn) TH_LOG("no PFN from /proc/self/pagemap");
	took = wait_for_pfn(self, pfn, t0, 2 * flush_ms + PT_ST_LATE_MS, true, &first);
	TH_LOG("pfn %#llx: first data after %lld ms, found after %lld ms (flush_ms %ld)",
	       (unsigned long long)pfn, (long long)first / 1000000,
	       (long long)took / 1000000, flush_ms);
	ASSERT_LE(0, took) TH_LOG("alloc+free of pfn %#llx not seen within 2 x flush_ms + %d ms",
				  (unsigned long long)pfn, PT_ST_LATE_MS);
	trig = pt_st_mono_to_trace(&self->hi.h, t0);
	TH_LOG("alloc at trace %llu, trigger mapped to %llu (diff %lld ns)",
	       (unsigned long long)self->dec.found_alloc_ns,
	       (unsigned long long)trig,
	       (long long)(self->dec.found_alloc_ns - trig));
	ASSERT_LE(trig - CLOCK_SLACK_NS, self->dec.found_alloc_ns);
	ASSERT_LE(self->dec.found_alloc_ns, self->dec.found_free_ns);
}

TEST_F(pt, trickle)
{
	long flush_ms = pt_st_get_param("flush_ms");
	uint64_t t0, pfn, trig, now;
	int64_t took, first;

	ASSERT_LE(0, pt_st_pin_first_cpu());
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(0, set_nonblock(self->fd, true));
	ASSERT_EQ(1, pt_st_buf_drain(self->fd, &self->b));
	ASSERT_EQ(0, set_nonblock(self->fd, false));

	pfn = pt_st_one_page_event(&t0, true);
	ASSERT_NE(0, pfn) TH_LOG("no PFN from /proc/self/pagemap");
	/* Blocking reads: the first must return after about flush_ms. */
	took = wait_for_pfn(self, pfn, t0, 2 * flush_ms + PT_ST_LATE_MS, false,
			    &first);
	now = pt_st_mono_ns();
	TH_LOG("pfn %#llx: first read returned after %lld ms, found after %lld ms",
	       (unsigned long long)pfn, (long long)first / 1000000,
	       (long long)took / 1000000);
	ASSERT_LE(0, first);
	ASSERT_GE((2 * flush_ms + PT_ST_LATE_MS) * 1000000LL, first);
	ASSERT_LE(0, took) TH_LOG("alloc+free of pfn %#llx not seen within 2 x flush_ms + %d ms (%llu ms)",
				  (unsigned long long)pfn, PT_ST_LATE_MS,
				  (unsigned long long)(now - t0) / 1000000);
	trig = pt_st_mono_to_trace(&self->hi.h, t0);
	TH_LOG("alloc at trace %llu, trigger mapped to %llu (diff %lld ns)",
	       (unsigned long long)self->dec.found_alloc_ns,
	       (unsigned long long)trig,
	       (long long)(self->dec.found_alloc_ns - trig));
	ASSERT_LE(trig - CLOCK_SLACK_NS, self->dec.found_alloc_ns);
	ASSERT_GE(pt_st_mono_to_trace(&self->hi.h, now) + CLOCK_SLACK_NS,
		  self->dec.found_free_ns);
}

/*
 * With two 4 KiB buffers per CPU and nobody reading, a burst must lose
 * events; every loss must still reach the stream, even those that happen
 * after the last free buffer is gone and before the session stops.
 */
TEST_F_TIMEOUT(pt, lost_counted, 180)
{
	const struct pagetrace_header *h = &self->hi.h;
	struct pagetrace_cpu_stats *st;
	struct pagetrace_stats s;
	unsigned char ran[1024] = { 0 };
	uint64_t sum_lost = 0, sum_ev = 0;

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load("buf_size=4096 nr_bufs=2"));
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_LE(1, pt_st_on_every_cpu(4 << 20, ran, sizeof(ran)));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));

	st = calloc(h->nr_cpus, sizeof(*st));
	ASSERT_NE(NULL, st);
	ASSERT_EQ(0, pt_st_stats_poisoned(self->fd, st, h->nr_cpus, &s));
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	for (unsigned int cpu = 0; cpu < h->nr_cpus; cpu++) {
		ASSERT_EQ(st[cpu].lost, self->dec.cpus[cpu].lost)
			TH_LOG("cpu %u: lost in kernel vs in stream", cpu);
		ASSERT_EQ(st[cpu].events, self->dec.cpus[cpu].events)
			TH_LOG("cpu %u", cpu);
		sum_lost += st[cpu].lost;
		sum_ev += st[cpu].events;
	}
	free(st);
	TH_LOG("%llu events kept, %llu lost", (unsigned long long)sum_ev,
	       (unsigned long long)sum_lost);
	ASSERT_LT(0, sum_lost) TH_LOG("no loss with 2 x 4 KiB buffers and no reader");
	ASSERT_EQ(sum_lost, self->dec.lost);
	ASSERT_EQ(sum_ev, self->dec.events);
}

TEST_HARNESS_MAIN
