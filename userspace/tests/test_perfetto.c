// SPDX-License-Identifier: GPL-2.0
/*
 * convert --to perfetto's pages in use per task and event rates, checked
 * against pagetrace stats of the same trace by tests/check_perfetto.py:
 * the JSON parses, the task tracks are named after the trace's task
 * records, each ends at what stats --by task says is in use at the end,
 * and the rates add up to the counts by type.  Skipped without python3.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define CHECK	PT_TEST_DATA "/../check_perfetto.py"

static char dir[64];
static char bin[512];

/* More tasks than the default 16 tracks, so that some are summed. */
static const struct {
	uint32_t	tgid;
	const char	*comm;
} tasks[] = {
	{ 0, NULL },	/* the kernel: "[kernel]" */
	{ 42, "kworker/u4:1" }, { 45, "kswapd0" }, { 1200, "bash" },
	{ 3001, "stress-ng-vm" }, { 4000, "abcdefghijklmnop" }, /* 16 bytes, no NUL */
	{ 5000, "Web Content" }, { 5001, "q\"uote" }, { 5002, "back\\slash" },
	{ 6000, "t6000" }, { 6001, "t6001" }, { 6002, "t6002" }, { 6003, "t6003" },
	{ 6004, "t6004" }, { 6005, "t6005" }, { 6006, "t6006" }, { 6007, "t6007" },
	{ 6008, "t6008" }, { 6009, "t6009" }, { 6010, "t6010" },
};
#define NR_TASKS	(sizeof(tasks) / sizeof(tasks[0]))
#define NR_CPUS		4

#define RUN(args) run_in(dir, bin, args)

/*
 * A snapshot, then allocations by every task (task i more often than
 * task i + 1, so the ranking is not by tgid), and frees and reclaims of
 * blocks allocated earlier by any task: pages one task allocated are
 * often freed by another.  CPU 1's clock is 20 us behind; now and then a gap
 * of 0.2 to 0.6 s, so the rate bins grow past 1 ms.
 */
static void trace(struct synth *s)
{
	static uint64_t live_pfn[4096], live_np[4096];
	uint64_t rng = 0x2545f4914f6cdd1dULL, t, next_pfn = 0x10000;
	int64_t cur[NR_CPUS];
	unsigned int nr_live = 0;

	synth_init(s, NR_CPUS, 4096, PAGETRACE_FLAG_TASKS | PAGETRACE_FLAG_SNAPSHOT);
	synth_snapshot(s, 0);
	synth_event(s, 0, s->hdr.start_ns, PAGETRACE_EV_ALLOC, 0x1000, 300);
	synth_event(s, 0, s->hdr.start_ns, PAGETRACE_EV_ALLOC, 0x2000, 1);
	synth_flush(s, 0, 0);
	t = s->hdr.start_ns;
	for (unsigned int c = 0; c < NR_CPUS; c++)
		cur[c] = -1;
	s->cpus[1].last = s->hdr.start_ns - 20000;
	for (unsigned int i = 0; i < 20000; i++) {
		unsigned int c = synth_rand(&rng) % NR_CPUS;
		unsigned int x = synth_rand(&rng) % 1000;
		unsigned int k = synth_rand(&rng) % NR_TASKS;
		struct synth_cpu *sc = &s->cpus[c];

		k = k < synth_rand(&rng) % NR_TASKS ? k : synth_rand(&rng) % NR_TASKS;
		t += x < 2 ? 200000000 + synth_rand(&rng) % 400000000 : synth_rand(&rng) % 10000;
		/* Room for a name, its task record and an event with a sync. */
		if (sc->nr && sc->nr + 4 + 3 > s->max_words)
			synth_flush(s, c, 0);
		if (!sc->nr)
			cur[c] = -1;
		if (cur[c] != tasks[k].tgid) {
			if (tasks[k].comm)
				synth_name(s, c, tasks[k].tgid, tasks[k].comm);
			else
				synth_task(s, c, tasks[k].tgid);
			cur[c] = tasks[k].tgid;
		}
		if (nr_live && (x % 5 < 2 || nr_live == 4096)) {
			unsigned int j = synth_rand(&rng) % nr_live;

			synth_event(s, c, c == 1 ? t - 20000 : t, x % 5 ? PAGETRACE_EV_FREE : PAGETRACE_EV_RECLAIM,
				    live_pfn[j], live_np[j]);
			live_pfn[j] = live_pfn[--nr_live];
			live_np[j] = live_np[nr_live];
		} else {
			uint64_t np = 1ULL << (synth_rand(&rng) % 4);

			synth_event(s, c, c == 1 ? t - 20000 : t, PAGETRACE_EV_ALLOC, next_pfn, np);
			live_pfn[nr_live] = next_pfn;
			live_np[nr_live++] = np;
			next_pfn += 8;
		}
	}
	synth_flush_all(s);
}

FIXTURE(pf) {
	struct synth s;
};

FIXTURE_SETUP(pf)
{
	char path[128];
	const char *env = getenv("PAGETRACE");
	int fd;

	snprintf(bin, sizeof(bin), "%s", env ? env : PAGETRACE_BIN);
	snprintf(dir, sizeof(dir), "/tmp/pagetrace-pf-XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	trace(&self->s);
	snprintf(path, sizeof(path), "%s/t.pt", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, synth_write_slowly(fd, self->s.buf, self->s.len, 1 << 20, 1));
	close(fd);
	ASSERT_EQ(0, sh("cd %s && %s stats --by task --json t.pt >bytask.json", dir, bin));
	ASSERT_EQ(0, sh("cd %s && %s stats --json t.pt >stats.json", dir, bin));
	if (sh("command -v python3 >/dev/null 2>&1"))
		SKIP(return, "no python3");
}

FIXTURE_TEARDOWN(pf)
{
	synth_free(&self->s);
	if (!getenv("PT_KEEP") && sh("rm -rf %s", dir))
		TH_LOG("cannot remove %s", dir);
}

/* check_perfetto.py on t.json, its output in py; its exit status. */
static int check(unsigned int max_tasks, unsigned int interval_us)
{
	return sh("cd %s && python3 %s t.json bytask.json stats.json %u %u >py 2>&1", dir,
		  CHECK, max_tasks, interval_us);
}

/* Every task has a track, named with its comm from the trace. */
TEST_F(pf, all_tasks)
{
	char lines[NR_TASKS][64], tmp[64], want[2048] = "";

	ASSERT_EQ(0, RUN("convert --to perfetto --tasks 64 -o t.json t.pt"));
	ASSERT_EQ(0, check(64, 1000)) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	/* The names the trace's task records give, sorted as the checker prints them. */
	for (unsigned int i = 0; i < NR_TASKS; i++)
		snprintf(lines[i], sizeof(lines[i]), "in use: %s (%u)\n",
			 tasks[i].comm ? tasks[i].comm : "[kernel]", tasks[i].tgid);
	for (unsigned int i = 0; i < NR_TASKS; i++)
		for (unsigned int j = i + 1; j < NR_TASKS; j++)
			if (strcmp(lines[j], lines[i]) < 0) {
				strcpy(tmp, lines[i]);
				strcpy(lines[i], lines[j]);
				strcpy(lines[j], tmp);
			}
	for (unsigned int i = 0; i < NR_TASKS; i++)
		strcat(want, lines[i]);
	strcat(want, "ok\n");
	EXPECT_STREQ(want, slurp(dir, "py"));
}

/* The default: the 16 tasks that allocated most, the other 4 summed. */
TEST_F(pf, top_and_rest)
{
	const char *py;
	int n = 0;

	ASSERT_EQ(0, RUN("convert --to perfetto -o t.json t.pt"));
	ASSERT_EQ(0, check(16, 1000)) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	py = slurp(dir, "py");
	for (const char *p = py; (p = strstr(p, "in use: ")); p++)
		n++;
	EXPECT_EQ(17, n);
	EXPECT_TRUE(strstr(py, "in use: other tasks\n") != NULL);
}

/* From a pipe (read once), with samples at every change and 3 tracks. */
TEST_F(pf, pipe_every_change)
{
	ASSERT_EQ(0, sh("cd %s && %s convert --to perfetto --interval 0 --tasks 3 - <t.pt"
			" >t.json 2>err", dir, bin));
	ASSERT_EQ(0, check(3, 0)) {
		TH_LOG("%s", slurp(dir, "py"));
	}
}

/* --tasks 0: no task tracks, the rates still there. */
TEST_F(pf, no_tasks)
{
	ASSERT_EQ(0, RUN("convert --to perfetto --tasks 0 -o t.json t.pt"));
	ASSERT_EQ(0, sh("cd %s && python3 -c 'import json, sys; ev = json.load(open(\"t.json\"))"
			"[\"traceEvents\"]; sys.exit(any(e[\"pid\"] == 2 for e in ev) or"
			" not any(e[\"pid\"] == 3 for e in ev))'", dir));
}

TEST_HARNESS_MAIN
