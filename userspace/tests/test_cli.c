// SPDX-License-Identifier: GPL-2.0
/*
 * The pagetrace CLI: output, exit codes and error messages.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL

static char dir[64];
static char bin[512];

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || synth_write_slowly(fd, buf, len, 1 << 20, 1) || close(fd))
		abort();
}

/* Run "pagetrace ARGS" in dir with stdout/stderr to files; its exit code. */
static int run(const char *args)
{
	return run_in(dir, bin, args);
}

static void small_trace(struct synth *s)
{
	synth_init(s, 2, 4096, 0);
	synth_event(s, 0, SEC, PAGETRACE_EV_ALLOC, 0x1a2b3, 1);
	synth_event(s, 0, SEC + 1234567, PAGETRACE_EV_FREE, 0x10, 2048);
	synth_event(s, 1, SEC + 2 * SEC, PAGETRACE_EV_RECLAIM, 0x5, 3);
	synth_flush_all(s);
}

static const char small_dump[] =
	"    0.000000000 cpu0 alloc   pfn=0x1a2b3 npages=1\n"
	"    0.001234560 cpu0 free    pfn=0x10 npages=2048\n"
	"    2.000000000 cpu1 reclaim pfn=0x5 npages=3\n";

FIXTURE(cli) {
	struct synth s;
};

FIXTURE_SETUP(cli)
{
	char path[128];
	const char *env = getenv("PAGETRACE");

	snprintf(bin, sizeof(bin), "%s", env ? env : PAGETRACE_BIN);
	snprintf(dir, sizeof(dir), "/tmp/pagetrace-cli-XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	small_trace(&self->s);
	snprintf(path, sizeof(path), "%s/ok.pt", dir);
	write_file(path, self->s.buf, self->s.len);
	/* Cut inside cpu1's chunk, after cpu0's chunk is complete. */
	snprintf(path, sizeof(path), "%s/short.pt", dir);
	write_file(path, self->s.buf, self->s.len - 4);
	/* Scrambled magic in cpu1's chunk. */
	memcpy(self->s.buf + self->s.exp[2].offset - 48, "XXXX", 4);
	snprintf(path, sizeof(path), "%s/bad.pt", dir);
	write_file(path, self->s.buf, self->s.len);
}

FIXTURE_TEARDOWN(cli)
{
	char cmd[128];

	synth_free(&self->s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		TH_LOG("cannot remove %s", dir);
}

TEST_F(cli, dump)
{
	ASSERT_EQ(0, run("dump ok.pt"));
	EXPECT_STREQ(small_dump, slurp(dir, "out"));
	EXPECT_STREQ("", slurp(dir, "err"));
	ASSERT_EQ(0, run("dump - < ok.pt"));
	EXPECT_STREQ(small_dump, slurp(dir, "out"));
	ASSERT_EQ(0, run("dump - < ok.pt"));
	ASSERT_EQ(0, run("dump -v ok.pt"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "# chunk offset=192 cpu=0 seq=0 flags=0x1 nr_words=5 lost=0 missing=0\n"
					  "    0.000000000 cpu0 alloc") != NULL) {
		TH_LOG("%s", slurp(dir, "out"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "out"), "# release 6.1.0-synth\n") != NULL);
	/* Non-event lines all start with '#'. */
	{
		char ev[sizeof(small_dump) + 64] = "", *line, *save;
		char all[1 << 16];

		snprintf(all, sizeof(all), "%s", slurp(dir, "out"));
		for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (line[0] != '#')
				snprintf(ev + strlen(ev), sizeof(ev) - strlen(ev), "%s\n", line);
		EXPECT_STREQ(small_dump, ev);
	}
}

TEST_F(cli, stats)
{
	const char *o;

	ASSERT_EQ(0, run("stats --json ok.pt"));
	o = slurp(dir, "out");
	EXPECT_TRUE(strstr(o, "{\"version\": 1, \"nr_cpus\": 2, \"events\": 3, "
			      "\"types\": {\"alloc\": 1, \"free\": 1, \"reclaim\": 1}, "
			      "\"pages\": {\"alloc\": 1, \"free\": 2048, \"reclaim\": 3}, "
			      "\"orders\": {\"0\": 1, \"1\": 0, \"2\": 0, \"3\": 0, \"4\": 0, "
			      "\"5\": 0, \"6\": 0, \"7\": 0, \"8\": 0, \"9\": 0, \"10\": 0, "
			      "\"11\": 1}, \"other_order\": 1, \"chunks\": 2, ") == o) {
		TH_LOG("%s", o);
	}
	EXPECT_TRUE(strstr(o, "\"first_ns\": 0, \"last_ns\": 2000000000, "
			      "\"duration_ns\": 2000000000, \"cpus\": [{\"cpu\": 0, "
			      "\"events\": 2, \"chunks\": 1, \"lost\": 0, \"seq_gaps\": 0, "
			      "\"missing_chunks\": 0}, {\"cpu\": 1, ") != NULL) {
		TH_LOG("%s", o);
	}
	ASSERT_EQ(0, run("stats ok.pt"));
	o = slurp(dir, "out");
	EXPECT_TRUE(strstr(o, "events:          3\n") == o);
	EXPECT_TRUE(strstr(o, "duration:        2.000000000 s\n") != NULL);
}

/* Chunks closed after the session left the TSC are counted and said. */
TEST_F(cli, stats_clock_local)
{
	struct synth s;
	char path[128];
	const char *o;

	synth_init(&s, 2, 4096, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 0x1a2b3, 1);
	synth_flush(&s, 0, PAGETRACE_CHUNK_FLUSHED);
	synth_event(&s, 0, 2 * SEC, PAGETRACE_EV_FREE, 0x1a2b3, 1);
	synth_flush(&s, 0, PAGETRACE_CHUNK_FLUSHED | PAGETRACE_CHUNK_CLOCK_LOCAL);
	synth_event(&s, 1, 3 * SEC, PAGETRACE_EV_ALLOC, 0x10, 1);
	synth_flush(&s, 1, PAGETRACE_CHUNK_CLOCK_LOCAL);
	snprintf(path, sizeof(path), "%s/clock.pt", dir);
	write_file(path, s.buf, s.len);
	synth_free(&s);

	ASSERT_EQ(0, run("stats --json clock.pt"));
	o = slurp(dir, "out");
	EXPECT_TRUE(strstr(o, "\"snapshot_chunks\": 0, \"clock_local_chunks\": 2, ") != NULL)
		TH_LOG("%s", o);
	ASSERT_EQ(0, run("stats clock.pt"));
	o = slurp(dir, "out");
	EXPECT_TRUE(strstr(o, "\nclock:           TSC, then local_clock() (the system slept"
			      " during the session): 2 chunks closed after the change\n") != NULL)
		TH_LOG("%s", o);
	/* A trace without the flag says nothing about it. */
	ASSERT_EQ(0, run("stats ok.pt"));
	EXPECT_EQ(NULL, strstr(slurp(dir, "out"), "\nclock:"));
}

TEST_F(cli, corrupt)
{
	char want[256];

	ASSERT_EQ(1, run("dump bad.pt"));
	/* What came before the damage is still printed. */
	EXPECT_STREQ("    0.000000000 cpu0 alloc   pfn=0x1a2b3 npages=1\n"
		     "    0.001234560 cpu0 free    pfn=0x10 npages=2048\n", slurp(dir, "out"));
	snprintf(want, sizeof(want),
		 "pagetrace: bad.pt: offset %llu: chunk magic is 'XXXX', expected 'PTCK'\n",
		 (unsigned long long)self->s.exp[2].offset - 48);
	EXPECT_STREQ(want, slurp(dir, "err"));
	ASSERT_EQ(1, run("stats bad.pt"));
	EXPECT_STREQ(want, slurp(dir, "err"));
	ASSERT_EQ(1, run("stats --json - < bad.pt"));
	snprintf(want, sizeof(want),
		 "pagetrace: -: offset %llu: chunk magic is 'XXXX', expected 'PTCK'\n",
		 (unsigned long long)self->s.exp[2].offset - 48);
	EXPECT_STREQ(want, slurp(dir, "err"));

	ASSERT_EQ(1, run("dump short.pt"));
	EXPECT_STREQ("    0.000000000 cpu0 alloc   pfn=0x1a2b3 npages=1\n"
		     "    0.001234560 cpu0 free    pfn=0x10 npages=2048\n", slurp(dir, "out"));
	snprintf(want, sizeof(want),
		 "pagetrace: short.pt: offset %llu: file ends inside a chunk (need 56 bytes, have 52)\n",
		 (unsigned long long)self->s.exp[2].offset - 48);
	EXPECT_STREQ(want, slurp(dir, "err"));

	ASSERT_EQ(1, run("dump /nonexistent"));
	EXPECT_STREQ("pagetrace: /nonexistent: No such file or directory\n", slurp(dir, "err"));
	ASSERT_EQ(1, run("dump - < /dev/null"));
	EXPECT_STREQ("pagetrace: -: offset 0: file ends inside the header (need 64 bytes, have 0)\n",
		     slurp(dir, "err"));
	ASSERT_EQ(1, run("stats /"));
}

TEST_F(cli, usage)
{
	EXPECT_EQ(2, run(""));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "usage: pagetrace") != NULL);
	EXPECT_EQ(2, run("frobnicate"));
	EXPECT_EQ(2, run("dump"));
	EXPECT_EQ(2, run("dump ok.pt ok.pt"));
	EXPECT_EQ(2, run("dump --bogus ok.pt"));
	EXPECT_EQ(2, run("stats"));
	EXPECT_EQ(2, run("stats -x ok.pt"));
	EXPECT_EQ(0, run("--help"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "usage: pagetrace") != NULL);
	EXPECT_EQ(0, run("--version"));
	EXPECT_STREQ("pagetrace " PGTRACE_VERSION_STRING " (stream format v1)\n", slurp(dir, "out"));
	EXPECT_EQ(0, run("dump --help"));
	EXPECT_EQ(0, run("stats -h"));
}

TEST_HARNESS_MAIN
