// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis subcommands: stats --json keys and values, convert --to csv
 * and --to perfetto, report, and --go on the committed Go trace.  JSON and
 * HTML are read back with python3 (skipped without it).
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL
#define A	PAGETRACE_EV_ALLOC
#define F	PAGETRACE_EV_FREE
#define R	PAGETRACE_EV_RECLAIM

static char dir[64];
static char bin[512];

/* pagetrace ARGS in dir, stdout to out, stderr to err; its exit status. */
#define RUN(args) run_in(dir, bin, args)
/* python3 PROGRAM on file F in dir, stdout to py. */
#define PY(prog, f) sh("cd %s && python3 -c '%s' %s >py 2>&1", dir, prog, f)

static bool have_python(void)
{
	return sh("command -v python3 >/dev/null 2>&1") == 0;
}

/*
 * Times in 128 ns steps (SEC is a multiple of 128):
 *   cpu0  +896 alloc 0x2000 x1   +1920 alloc 0x3000 x4
 *   cpu1  +1408 free 0x2000 x1   +2944 reclaim 0x3000 x4
 *         +3072 reclaim 0x200000 x64 (outside the zone, never allocated)
 */
static void trace(struct synth *s)
{
	synth_init(s, 2, 4096, 0);
	synth_event(s, 0, SEC + 896, A, 0x2000, 1);
	synth_event(s, 0, SEC + 1920, A, 0x3000, 4);
	synth_event(s, 1, SEC + 1408, F, 0x2000, 1);
	synth_event(s, 1, SEC + 2944, R, 0x3000, 4);
	synth_event(s, 1, SEC + 3072, R, 0x200000, 64);
	synth_flush_all(s);
}

FIXTURE(an) {
	struct synth s;
};

FIXTURE_SETUP(an)
{
	char path[128];
	const char *env = getenv("PAGETRACE");
	int fd;

	snprintf(bin, sizeof(bin), "%s", env ? env : PAGETRACE_BIN);
	snprintf(dir, sizeof(dir), "/tmp/pagetrace-an-XXXXXX");
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	trace(&self->s);
	snprintf(path, sizeof(path), "%s/t.pt", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, synth_write_slowly(fd, self->s.buf, self->s.len, 1 << 20, 1));
	close(fd);
}

FIXTURE_TEARDOWN(an)
{
	synth_free(&self->s);
	if (sh("rm -rf %s", dir))
		TH_LOG("cannot remove %s", dir);
}

TEST_F(an, csv)
{
	char exp[4096];
	size_t n;

	ASSERT_EQ(0, RUN("convert --to csv t.pt"));
	n = snprintf(exp, sizeof(exp), "time_ns,rel_ns,cpu,type,pfn,addr,npages,snapshot,offset\n");
	for (size_t i = 0; i < self->s.nexp; i++) {
		const struct pgtrace_event *e = &self->s.exp[i];

		n += snprintf(exp + n, sizeof(exp) - n, "%llu,%llu,%u,%s,%llu,0x%llx,%llu,0,%llu\n",
			      (unsigned long long)e->time_ns,
			      (unsigned long long)(e->time_ns - SEC), e->cpu,
			      pgtrace_event_type_name(e->type), (unsigned long long)e->pfn,
			      (unsigned long long)e->pfn << 12, (unsigned long long)e->npages,
			      (unsigned long long)e->offset);
	}
	EXPECT_STREQ(exp, slurp(dir, "out"));
	/* The same into a file. */
	ASSERT_EQ(0, RUN("convert --to csv -o t.csv t.pt"));
	EXPECT_STREQ(exp, slurp(dir, "t.csv"));
	EXPECT_STREQ("", slurp(dir, "out"));
	ASSERT_EQ(0, sh("grep -q '^%llu,896,0,alloc,8192,0x2000000,1,0,' %s/t.csv",
			(unsigned long long)SEC + 896, dir));
}

TEST_F(an, perfetto)
{
	static const char prog[] =
		"import json, sys\n"
		"d = json.load(open(sys.argv[1]))\n"
		"ev = d[\"traceEvents\"]\n"
		/* pid 1: zones and orders; tasks and rates: test_perfetto.c */
		"c = [e for e in ev if e[\"ph\"] == \"C\" and e[\"pid\"] == 1]\n"
		"print(\"counters\", len(c), \"tracks\", len(set(e[\"name\"] for e in c)))\n"
		"z = [e for e in c if e[\"name\"] == \"pages in use: node0 DMA32\"]\n"
		"print(\"dma32\", [(e[\"ts\"], e[\"args\"][\"pages\"]) for e in z])\n"
		"o = [e for e in c if e[\"name\"] == \"pages in use: order 0\"]\n"
		"print(\"order0\", [(e[\"ts\"], e[\"args\"][\"pages\"]) for e in o])\n"
		"i = [e for e in ev if e[\"ph\"] == \"i\"]\n"
		"print(\"bursts\", [(e[\"name\"], e[\"ts\"], e[\"s\"], e[\"args\"]) for e in i])\n"
		"print(\"meta\", [e[\"args\"][\"name\"] for e in ev if e[\"ph\"] == \"M\"],"
		" d[\"otherData\"][\"release\"], d[\"displayTimeUnit\"])\n";

	if (!have_python())
		SKIP(return, "no python3");
	ASSERT_EQ(0, RUN("convert --to perfetto -o t.json t.pt"));
	ASSERT_EQ(0, PY(prog, "t.json")) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	/*
	 * One sample after the first event (tracks that are not 0), all 38
	 * tracks (1 zone, outside, 36 orders) at the last; one burst of both
	 * reclaims, 128 ns apart.
	 */
	EXPECT_STREQ("counters 40 tracks 38\n"
		     "dma32 [(0.896, 1), (3.072, 0)]\n"
		     "order0 [(0.896, 1), (3.072, 0)]\n"
		     "bursts [('reclaim burst', 2.944, 'g', {'pages': 68, 'events': 2,"
		     " 'duration_ns': 128})]\n"
		     "meta ['pagetrace', 'pages in use by task', 'events per second']"
		     " 6.1.0-synth ns\n", slurp(dir, "py"));
	/*
	 * A higher burst threshold drops it.  With 1 us samples, the 4 pages
	 * from +1920 to +2944 are not seen (+1920 is in the interval of
	 * +1408); with --interval 0, every change is.
	 */
	ASSERT_EQ(0, RUN("convert --to perfetto --burst-min 69 --interval 1 -o t.json t.pt"));
	ASSERT_EQ(0, PY(prog, "t.json"));
	EXPECT_STREQ("counters 42 tracks 38\n"
		     "dma32 [(0.896, 1), (1.408, 0), (3.072, 0)]\n"
		     "order0 [(0.896, 1), (1.408, 0), (3.072, 0)]\n"
		     "bursts []\n"
		     "meta ['pagetrace', 'pages in use by task', 'events per second']"
		     " 6.1.0-synth ns\n", slurp(dir, "py"));
	ASSERT_EQ(0, RUN("convert --to perfetto --interval 0 -o t.json t.pt"));
	ASSERT_EQ(0, PY(prog, "t.json"));
	EXPECT_STREQ("counters 46 tracks 38\n"
		     "dma32 [(0.896, 1), (1.408, 0), (1.92, 4), (2.944, 0), (3.072, 0)]\n"
		     "order0 [(0.896, 1), (1.408, 0), (3.072, 0)]\n"
		     "bursts [('reclaim burst', 2.944, 'g', {'pages': 68, 'events': 2,"
		     " 'duration_ns': 128})]\n"
		     "meta ['pagetrace', 'pages in use by task', 'events per second']"
		     " 6.1.0-synth ns\n", slurp(dir, "py"));
}

TEST_F(an, stats_json)
{
	static const char prog[] =
		"import json, sys\n"
		"d = json.load(open(sys.argv[1]))\n"
		"l = d[\"lifetimes\"]\n"
		"print(\"life\", sorted(l), l[\"all\"][\"count\"], l[\"all\"][\"min_ns\"],"
		" l[\"all\"][\"p50_ns\"], l[\"all\"][\"max_ns\"], l[\"0\"][\"count\"], l[\"2\"][\"mean_ns\"])\n"
		"print(\"use\", d[\"in_use_end\"], d[\"peak_in_use\"], d[\"snapshot\"])\n"
		"z = d[\"zones\"][0]\n"
		"print(\"zone\", z[\"name\"], z[\"node\"], z[\"start_pfn\"], z[\"events\"],"
		" z[\"peak_in_use\"], d[\"outside_zones\"][\"pages\"])\n"
		"print(\"unmatched\", d[\"unmatched\"], d[\"late_events\"], d[\"realloc_events\"])\n"
		"print(\"rate\", d[\"rate\"][\"bin_ns\"], d[\"rate\"][\"bins\"], d[\"lost_sites\"])\n"
		"print(\"old\", d[\"events\"], d[\"types\"], d[\"cpus\"][1][\"events\"])\n";

	if (!have_python())
		SKIP(return, "no python3");
	ASSERT_EQ(0, RUN("stats --json t.pt"));
	ASSERT_EQ(0, PY(prog, "out")) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	EXPECT_STREQ("life ['0', '2', 'all'] 2 512 512 1024 1 1024\n"
		     "use {'pages': 0, 'blocks': 0} {'pages': 4, 'time_ns': 1920}"
		     " {'events': 0, 'pages': 0}\n"
		     "zone DMA32 0 4096 {'alloc': 2, 'free': 1, 'reclaim': 1} 4"
		     " {'alloc': 0, 'free': 0, 'reclaim': 64}\n"
		     "unmatched {'free': {'events': 0, 'pages': 0}, 'reclaim': {'events': 1,"
		     " 'pages': 64}, 'in_snapshot': {'free': {'events': 0, 'pages': 0},"
		     " 'reclaim': {'events': 0, 'pages': 0}}} 0 0\n"
		     "rate 1000000 [[2, 1, 2, 0]] []\n"
		     "old 5 {'alloc': 2, 'free': 1, 'reclaim': 2} 3\n", slurp(dir, "py"));
	/* --quick: the same counts, none of the time-order results. */
	ASSERT_EQ(0, RUN("stats --quick --json t.pt"));
	ASSERT_EQ(0, PY("import json, sys\n"
			"d = json.load(open(sys.argv[1]))\n"
			"print(d[\"quick\"], d[\"types\"], d[\"zones\"][0][\"events\"],"
			" d[\"rate\"][\"bins\"], d[\"lifetimes\"][\"all\"][\"count\"])\n", "out"));
	EXPECT_STREQ("True {'alloc': 2, 'free': 1, 'reclaim': 2} {'alloc': 2, 'free': 1,"
		     " 'reclaim': 1} [[2, 1, 2, 0]] 0\n", slurp(dir, "py"));
	ASSERT_EQ(0, RUN("stats --quick t.pt"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "(--quick: no lifetimes") != NULL);
	/* The text form has the same numbers. */
	ASSERT_EQ(0, RUN("stats t.pt"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "peak in use:     4 pages at 0.000001920 s\n") != NULL) {
		TH_LOG("%s", slurp(dir, "out"));
	}
	EXPECT_TRUE(strstr(slurp(dir, "out"), "  0/DMA32                 2          1          1"
				       "            0            4\n") != NULL);
}

TEST_F(an, report)
{
	char cmd[512];

	ASSERT_EQ(0, RUN("report t.pt -o r.html"));
	EXPECT_STREQ("", slurp(dir, "err"));
	if (!have_python())
		SKIP(return, "no python3");
	snprintf(cmd, sizeof(cmd), "cd %s && python3 %s/check_report.py r.html >py 2>&1",
		 dir, PT_TEST_DATA "/..");
	EXPECT_EQ(0, sh("%s", cmd)) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	/* 896..3072 ns in 3 ns columns; the zone's PFNs in 400 rows. */
	EXPECT_TRUE(strstr(slurp(dir, "py"), "fig-heatmap: PNG 726x400") != NULL) {
		TH_LOG("%s", slurp(dir, "py"));
	}
	/* Two passes over FILE: no pipes. */
	EXPECT_EQ(2, RUN("report -o r.html - <t.pt"));
	EXPECT_EQ(2, RUN("report t.pt"));
	EXPECT_EQ(1, RUN("report nonexistent -o r.html"));
}

TEST_F(an, go)
{
	ASSERT_EQ(0, RUN("dump --go " PT_TEST_DATA "/go-pagetrace.bin"));
	EXPECT_EQ(0, strncmp(slurp(dir, "out"),
			     "    0.000000000 p2   alloc    addr=0xc0004f0000 npages=2\n", 57));
	ASSERT_EQ(0, sh("cd %s && test $(wc -l <out) = 1302 && test $(grep -c scavenge out) = 221"
			" && test $(grep -c ' p-1 ' out) = 17", dir));
	ASSERT_EQ(0, RUN("dump -v --go " PT_TEST_DATA "/go-pagetrace.bin"));
	ASSERT_EQ(0, sh("cd %s && grep -q '^# buffer offset=10584 p=-1 seq=0$' out", dir));
	ASSERT_EQ(0, RUN("stats --go " PT_TEST_DATA "/go-pagetrace.bin"));
	EXPECT_TRUE(strstr(slurp(dir, "out"), "peak in use:     8369 pages") != NULL);
	EXPECT_TRUE(strstr(slurp(dir, "out"), "  no P           17 events, 1 buffers\n") != NULL);
	ASSERT_EQ(0, RUN("report --go " PT_TEST_DATA "/go-pagetrace.bin -o g.html"));
	/* Without --go it is no v1 stream. */
	EXPECT_EQ(1, RUN("stats " PT_TEST_DATA "/go-pagetrace.bin"));
	EXPECT_STREQ("pagetrace: " PT_TEST_DATA "/go-pagetrace.bin: offset 0: magic is"
		     " '\\x14\\x00\\x00\\x00\\x00\\x00\\x00\\x00', expected 'PGTRACE\\0'\n",
		     slurp(dir, "err"));
}

TEST_F(an, usage)
{
	EXPECT_EQ(2, RUN("convert t.pt"));
	EXPECT_EQ(2, RUN("convert --to xml t.pt"));
	EXPECT_EQ(2, RUN("convert --to perfetto --interval -1 t.pt"));
	EXPECT_EQ(2, RUN("convert --to perfetto --burst-min x t.pt"));
	EXPECT_EQ(0, RUN("convert --help"));
	EXPECT_EQ(0, RUN("report --help"));
	EXPECT_EQ(1, RUN("convert --to csv -o /nonexistent/x t.pt"));
}

TEST_HARNESS_MAIN
