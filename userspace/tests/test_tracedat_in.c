// SPDX-License-Identifier: GPL-2.0
/*
 * The CLI reading trace-cmd data files (cmd/tracedat_in.c).  The files are
 * made by `pagetrace convert --to trace-cmd`, which writes the kernel's
 * kmem event formats; scripts/test/tracedat-check.sh checks files of a
 * real `trace-cmd record` in a VM.  A CLI built without libtracecmd must
 * refuse them with one clear line.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL

static char dir[64];
static char bin[512];

/* Run "pagetrace ARGS" in dir with stdout/stderr to files; its exit code. */
static int run(const char *args)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && %s %s >out 2>err", dir, bin, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_file(const char *name, const void *buf, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len || close(fd))
		abort();
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

FIXTURE(tracedat_in) {
	bool have_lib;
};

FIXTURE_SETUP(tracedat_in)
{
	const char *env = getenv("PAGETRACE");
	struct synth s;

	snprintf(bin, sizeof(bin), "%s", env ? env : PAGETRACE_BIN);
	snprintf(dir, sizeof(dir), "/tmp/pagetrace-tdin-XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	/* Two CPUs, every type, a large block, tasks named and not. */
	synth_init(&s, 2, 4096, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 0x1a2b3, 1);
	synth_event(&s, 0, SEC + 1234560, PAGETRACE_EV_FREE, 0x10, 2048);
	synth_event(&s, 1, SEC + 9 * SEC / 10, PAGETRACE_EV_ALLOC, 0x400, 8);
	synth_event(&s, 1, 3 * SEC, PAGETRACE_EV_RECLAIM, 0x5, 1);
	synth_flush_all(&s);
	write_file("ok.pt", s.buf, s.len);
	synth_free(&s);
	ASSERT_EQ(0, run("convert --to trace-cmd -o ok.dat ok.pt"));
	run("stats ok.dat");
	self->have_lib = !strstr(slurp(dir, "err"), "built without libtracecmd");
}

FIXTURE_TEARDOWN(tracedat_in)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		TH_LOG("cannot remove %s", dir);
}

/* The events come back as they were: time, CPU, type, PFN, pages. */
TEST_F(tracedat_in, same_events)
{
	char want[4096];

	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	ASSERT_EQ(0, run("dump ok.pt"));
	snprintf(want, sizeof(want), "%s", slurp(dir, "out"));
	ASSERT_EQ(0, run("dump ok.dat"));
	EXPECT_STREQ(want, slurp(dir, "out"));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no snapshot") != NULL);
}

/* Every command that reads a trace takes one. */
TEST_F(tracedat_in, commands)
{
	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	EXPECT_EQ(0, run("stats --json ok.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"types\": {\"alloc\": 2, \"free\": 1, \"reclaim\": 1}") != NULL);
	EXPECT_EQ(0, run("report ok.dat -o r.html"));
	/* The page says what the file lacks, as stderr does. */
	EXPECT_TRUE(strstr(slurp(dir, "r.html"), "<th>source</th><td>a trace-cmd data file") != NULL);
	EXPECT_TRUE(strstr(slurp(dir, "r.html"), "no snapshot") != NULL);
	/* No stacks in the file: pprof says so and fails, as for any such trace. */
	EXPECT_EQ(1, run("pprof ok.dat -o p.pb.gz"));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no call stacks") != NULL);
}

/* A cut file: one line, exit status 1. */
TEST_F(tracedat_in, truncated)
{
	char buf[1 << 16];
	ssize_t n = slurp_into(dir, "ok.dat", buf, sizeof(buf));

	ASSERT_LT(2000, n);
	write_file("cut.dat", buf, n / 3);
	EXPECT_EQ(1, run("stats cut.dat"));
	EXPECT_EQ(1, lines(slurp(dir, "err")));
	EXPECT_STREQ("", slurp(dir, "out"));
}

/* A valid file without kmem page events: one line naming what to record. */
TEST_F(tracedat_in, no_kmem_events)
{
	static const char *const names[] = { "mm_page_alloc", "mm_page_free", "page_reclaim" };
	char buf[1 << 16];
	ssize_t n = slurp_into(dir, "ok.dat", buf, sizeof(buf));

	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	ASSERT_LT(0, n);
	/* Rename the events in the file's format text (same length). */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t len = strlen(names[i]);

		for (char *p = buf; (p = memmem(p, buf + n - p, names[i], len)); p += len)
			p[len - 1] = 'X';
	}
	write_file("other.dat", buf, n);
	EXPECT_EQ(1, run("stats other.dat"));
	EXPECT_EQ(1, lines(slurp(dir, "err")));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no kmem page events") != NULL) {
		TH_LOG("%s", slurp(dir, "err"));
	}
}

/* Without libtracecmd, the file is refused with a reason. */
TEST_F(tracedat_in, without_lib)
{
	if (self->have_lib)
		SKIP(return, "pagetrace built with libtracecmd (make static builds without)");
	EXPECT_EQ(1, run("stats ok.dat"));
	EXPECT_EQ(1, lines(slurp(dir, "err")));
}

TEST_HARNESS_MAIN
