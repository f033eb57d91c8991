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
	return run_in(dir, bin, args);
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

/* A trace of one event of @type, one page, in the test's directory. */
static void write_one_event(const char *name, unsigned int type)
{
	struct synth s;

	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC, type, 0x100, 1);
	synth_flush_all(&s);
	write_file(name, s.buf, s.len);
	synth_free(&s);
}

/* A file of one kind only says which kind was not recorded. */
TEST_F(tracedat_in, one_kind_missing)
{
	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	write_one_event("frees.pt", PAGETRACE_EV_FREE);
	write_one_event("allocs.pt", PAGETRACE_EV_ALLOC);
	ASSERT_EQ(0, run("convert --to trace-cmd -o frees.dat frees.pt"));
	ASSERT_EQ(0, run("stats frees.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no mm_page_alloc events") != NULL) {
		TH_LOG("%s", slurp(dir, "err"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no mm_page_free events") == NULL);

	ASSERT_EQ(0, run("convert --to trace-cmd -o allocs.dat allocs.pt"));
	ASSERT_EQ(0, run("stats allocs.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no mm_page_free events") != NULL) {
		TH_LOG("%s", slurp(dir, "err"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "err"), "no mm_page_alloc events") == NULL);
	/* Both kinds present: neither note. */
	ASSERT_EQ(0, run("stats ok.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "err"), "were not recorded") == NULL);
}

/*
 * A file with kmem:mm_page_free_batched, which `pagetrace convert` cannot
 * write: its pagetrace:page_reclaim event renamed kmem:mm_page_free_batched
 * (the format text grows by 8 bytes, the system name shrinks by 5, and the
 * zeros padding the header to the CPU data's page give up the 3 more).
 * @no_free: mm_page_free renamed out of the way too (a file of batched
 * frees only).
 */
static void make_batched(const char *from, const char *to, bool no_free)
{
	static const char sys[] = "pagetrace\0", name[] = "name: page_reclaim\n";
	static const char nsys[] = "kmem\0", nname[] = "name: mm_page_free_batched\n";
	static char in[1 << 16], out[sizeof(in) + 64];
	const size_t delta = (sizeof(nname) - sizeof(name)) - (sizeof(sys) - sizeof(nsys));
	ssize_t n = slurp_into(dir, from, in, sizeof(in));
	char *p, *fly, *sp;
	uint64_t size, off;
	size_t o = 0;

	if (n <= 0 || n == (ssize_t)sizeof(in))
		abort();
	if (no_free) {
		p = memmem(in, n, "name: mm_page_free\n", 19);
		if (!p)
			abort();
		p[17] = 'x';
	}
	fly = memmem(in, n, "flyrecord", 10);
	/* "pagetrace\0", 2 events, the first's size (8 bytes), its text. */
	sp = memmem(in, n, sys, sizeof(sys) - 1);
	if (!fly || !sp || memcmp(sp + 10 + 4 + 8, name, sizeof(name) - 1))
		abort();
	memcpy(&off, fly + 10, 8);	/* CPU 0's data: the header's end */
	memcpy(&size, sp + 10 + 4, 8);
	p = sp + 10 + 4 + 8;
	memcpy(out, in, sp - in);
	o = sp - in;
	memcpy(out + o, nsys, sizeof(nsys) - 1);
	o += sizeof(nsys) - 1;
	memcpy(out + o, sp + 10, 4);
	o += 4;
	size += sizeof(nname) - sizeof(name);
	memcpy(out + o, &size, 8);
	o += 8;
	memcpy(out + o, nname, sizeof(nname) - 1);
	o += sizeof(nname) - 1;
	p += sizeof(name) - 1;
	/* The rest of the header, less the last delta bytes of its zero padding. */
	for (size_t i = off - delta; i < off; i++)
		if (in[i])
			abort();
	memcpy(out + o, p, in + off - delta - p);
	o += in + off - delta - p;
	if (o != off)
		abort();
	memcpy(out + o, in + off, n - off);
	write_file(to, out, n);
}

static void write_batched_pt(void)
{
	struct synth s;

	/* The kernel fires mm_page_free, then mm_page_free_batched, for a page. */
	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 0x100, 1);
	synth_event(&s, 0, 2 * SEC, PAGETRACE_EV_FREE, 0x100, 1);
	synth_event(&s, 0, 2 * SEC + 1000, PAGETRACE_EV_RECLAIM, 0x100, 1);
	synth_flush_all(&s);
	write_file("batched.pt", s.buf, s.len);
	synth_free(&s);
}

/* mm_page_free + mm_page_free_batched of one page: one free. */
TEST_F(tracedat_in, batched_free_counted_once)
{
	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	write_batched_pt();
	ASSERT_EQ(0, run("convert --to trace-cmd -o b0.dat batched.pt"));
	make_batched("b0.dat", "b.dat", false);
	ASSERT_EQ(0, run("stats --json b.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"types\": {\"alloc\": 1, \"free\": 1, \"reclaim\": 0}") != NULL) {
		TH_LOG("%s", slurp(dir, "out"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"unmatched\": {\"free\": {\"events\": 0,") != NULL);
	EXPECT_TRUE(strstr(slurp(dir, "err"), "1 mm_page_free_batched not counted") != NULL) {
		TH_LOG("%s", slurp(dir, "err"));
	}
}

/* Batched frees only (no mm_page_free recorded): they are the frees, and the rest missing. */
TEST_F(tracedat_in, batched_free_only)
{
	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	write_batched_pt();
	ASSERT_EQ(0, run("convert --to trace-cmd -o b0.dat batched.pt"));
	make_batched("b0.dat", "b.dat", true);
	ASSERT_EQ(0, run("stats --json b.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"types\": {\"alloc\": 1, \"free\": 1, \"reclaim\": 0}") != NULL) {
		TH_LOG("%s", slurp(dir, "out"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "err"), "the other frees are missing") != NULL) {
		TH_LOG("%s", slurp(dir, "err"));
	}
}

/*
 * 3 s on two CPUs, CPU 1 quiet (one allocation at the start, its free at
 * the end), CPU 0 busy enough to fill many chunks: the stream stays in
 * time order (late_events 0), and every free finds its allocation.
 */
TEST_F(tracedat_in, quiet_cpu_in_order)
{
	const unsigned int nr = 60000;
	struct synth s;

	if (!self->have_lib)
		SKIP(return, "pagetrace built without libtracecmd");
	synth_init(&s, 2, 65536, 0);
	synth_event(&s, 1, SEC, PAGETRACE_EV_ALLOC, 0x7000000, 1);
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t t = SEC + 1000 + (uint64_t)i * (3 * SEC / nr);

		synth_event(&s, 0, t, PAGETRACE_EV_ALLOC, 0x1000 + i, 1);
		synth_event(&s, 0, t + 500, PAGETRACE_EV_FREE, 0x1000 + i, 1);
	}
	synth_event(&s, 1, 4 * SEC + 1000, PAGETRACE_EV_FREE, 0x7000000, 1);
	synth_flush_all(&s);
	write_file("quiet.pt", s.buf, s.len);
	synth_free(&s);
	ASSERT_EQ(0, run("convert --to trace-cmd -o quiet.dat quiet.pt"));
	ASSERT_EQ(0, run("stats --json quiet.dat"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"late_events\": 0") != NULL) {
		TH_LOG("%s", slurp(dir, "out"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "out"), "\"unmatched\": {\"free\": {\"events\": 0,") != NULL);
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
