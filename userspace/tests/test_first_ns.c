// SPDX-License-Identifier: GPL-2.0
/*
 * first_ns of a trace with a snapshot: the first event outside snapshot
 * chunks.  Snapshot events are stamped with start_ns rounded down to
 * 128 ns; counted in, they made stats --json say the trace began up to
 * 127 ns before the session did (-33 for a start_ns 33 ns past a multiple
 * of 128).  A CPU whose clock is behind still gives a first_ns below 0:
 * that one is real.  Checked through pgtrace_stats_collect(), the
 * analysis (with and without hooks) and stats --json [--quick].
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define START	(SEC + 33)	/* 33 ns past a multiple of 128 */

/* synth_init()'s trace with start_ns START, and a snapshot on CPU 0. */
static void start(struct synth *s)
{
	uint64_t v = START;

	synth_init(s, 2, 4096, PAGETRACE_FLAG_SNAPSHOT);
	/* The header is written already: patch it where synth_init() put it. */
	memcpy(s->buf + offsetof(struct pagetrace_header, start_ns), &v, sizeof(v));
	s->hdr.start_ns = START;
	s->cpus[0].last = s->cpus[1].last = START;
	synth_snapshot(s, 0);
	synth_event(s, 0, START, PAGETRACE_EV_ALLOC, 0x1000, 16);
	synth_event(s, 0, START, PAGETRACE_EV_ALLOC, 0x2000, 1);
	synth_flush(s, 0, 0);
}

static int hook(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	(void)ev;
	(void)a;
	(void)arg;
	return 0;
}

/* first_ns and last_ns relative to start_ns, by every way of reading. */
static void check(struct __test_metadata *_metadata, const struct synth *s, int64_t first,
		  int64_t last)
{
	struct pgtrace_analysis_params p = { .event = hook };
	struct pgtrace_reader *r;
	struct pgtrace_analysis a;
	struct pgtrace_stats st;
	char cmd[256], out[64], path[] = "/tmp/pagetrace-first-XXXXXX";
	const char *const modes[] = { "", "--quick" };
	int fd;

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s->buf, s->len, 0));
	ASSERT_EQ(0, pgtrace_stats_collect(r, &st));
	EXPECT_EQ(first, (int64_t)(st.first_ns - START));
	EXPECT_EQ(last, (int64_t)(st.last_ns - START));
	pgtrace_stats_free(&st);
	pgtrace_reader_close(r);

	for (int hooked = 0; hooked < 2; hooked++) {
		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s->buf, s->len, 0));
		ASSERT_EQ(0, pgtrace_analysis_collect(r, &a, hooked ? &p : NULL));
		EXPECT_EQ(first, (int64_t)(a.stats.first_ns - START));
		EXPECT_EQ(last, (int64_t)(a.stats.last_ns - START));
		pgtrace_analysis_free(&a);
		pgtrace_reader_close(r);
	}

	if (system("command -v python3 >/dev/null 2>&1")) {
		TH_LOG("no python3: stats --json not checked");
		return;
	}
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	synth_write_file(path, s->buf, s->len);
	for (int i = 0; i < 2; i++) {
		long long f, l, d;

		snprintf(cmd, sizeof(cmd), "%s stats --json %s %s | python3 -c 'import json, sys;"
			 " d = json.load(sys.stdin); print(d[\"first_ns\"], d[\"last_ns\"],"
			 " d[\"duration_ns\"])'", PAGETRACE_BIN, modes[i], path);
		ASSERT_EQ(0, synth_run(cmd, out, sizeof(out))) {
			TH_LOG("%s", cmd);
		}
		ASSERT_EQ(3, sscanf(out, "%lld %lld %lld", &f, &l, &d));
		EXPECT_EQ(first, f);
		EXPECT_EQ(last, l);
		EXPECT_EQ(last - first, d);
	}
	unlink(path);
}

/* Both CPUs on time: the first event is after the start, not the snapshot's -33. */
TEST(snapshot_left_out)
{
	struct synth s;

	start(&s);
	synth_event(&s, 1, START + 200, PAGETRACE_EV_ALLOC, 0x3000, 1);	/* SEC + 128 */
	synth_event(&s, 0, START + 1000, PAGETRACE_EV_FREE, 0x2000, 1);	/* SEC + 1024 */
	synth_flush_all(&s);
	check(_metadata, &s, 95, 991);
	synth_free(&s);
}

/* CPU 1's clock 500 ns behind: its event is before the start, and says so. */
TEST(skew_kept)
{
	struct synth s;

	start(&s);
	s.cpus[1].last = START - 500;
	synth_event(&s, 1, START - 500, PAGETRACE_EV_ALLOC, 0x3000, 1);	/* SEC - 512 */
	synth_event(&s, 0, START + 1000, PAGETRACE_EV_FREE, 0x2000, 1);
	synth_flush_all(&s);
	check(_metadata, &s, -545, 991);
	synth_free(&s);
}

/* Nothing but the snapshot: no time span at all, not one before the start. */
TEST(snapshot_only)
{
	struct synth s;

	start(&s);
	synth_flush_all(&s);
	check(_metadata, &s, 0, 0);
	synth_free(&s);
}

TEST_HARNESS_MAIN
