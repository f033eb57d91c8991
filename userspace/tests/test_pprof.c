// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace pprof: a profile of a trace with known stacks, symbols, frees
 * and reclaims, checked with the real `go tool pprof -raw` (skipped when
 * Go is not installed: scripts/deps.sh installs golang-go) against values
 * computed here; and the cases it must refuse.
 */
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define A_ALLOC	0xffffffff81003010ULL	/* __alloc_pages+0x10 */
#define A_HELP	0xffffffff81001020ULL	/* helper+0x20 */
#define A_MOD	0xffffffffc0001008ULL	/* mod_fn+0x8 [mymod] */

static const char kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81001000 t helper\n"
	"ffffffff81003000 T __alloc_pages\n"
	"ffffffffc0001000 t mod_fn\t[mymod]\n";

/*
 * Stack 1 (__alloc_pages <- helper): 3 one-page allocations, one freed
 * after (0x100) and one "freed" before it was allocated (0x101, so still
 * in use).  Stack 2 (mod_fn <- __alloc_pages): 128 pages, 64 reclaimed.
 * One sample of 2 pages with an unknown stack.
 */
static void pprof_trace(struct synth *s)
{
	static const uint64_t f1[] = { A_ALLOC, A_HELP };
	static const uint64_t f2[] = { A_MOD, A_ALLOC };

	synth_init(s, 2, 1024, PAGETRACE_FLAG_STACKS);
	synth_event(s, 1, SEC, PAGETRACE_EV_FREE, 0x101, 1);
	synth_stack_def(s, 0, 1, 2, false, f1);
	synth_sample(s, 0, SEC + 100, 1, 0x100, 1);
	synth_sample(s, 0, SEC + 200, 1, 0x101, 1);
	synth_sample(s, 0, SEC + 300, 1, 0x102, 1);
	synth_event(s, 0, SEC + 350, PAGETRACE_EV_ALLOC, 0x5000, 1);
	synth_stack_def(s, 0, 2, 2, false, f2);
	synth_sample(s, 0, SEC + 400, 2, 0x1000, 128);
	synth_sample(s, 0, SEC + 500, 0, 0x2000, 2);
	synth_event(s, 1, SEC + 1000, PAGETRACE_EV_FREE, 0x100, 1);
	synth_event(s, 1, SEC + 1000, PAGETRACE_EV_RECLAIM, 0x1000, 64);
	synth_flush_all(s);
}

/* A go that has `go tool pprof`: $GO, Go 1.22 from backports, or PATH's. */
static const char *find_go(void)
{
	static const char *const cands[] = { "/usr/lib/go-1.22/bin/go", "/usr/bin/go" };
	const char *env = getenv("GO");

	if (env && !access(env, X_OK))
		return env;
	for (unsigned int i = 0; i < ARRAY_SIZE(cands); i++)
		if (!access(cands[i], X_OK))
			return cands[i];
	return NULL;
}

struct raw_sample {
	long long v[4];
	int loc[8];
	int nloc;
};

/*
 * Parse `go tool pprof -raw`: the samples (4 values: locations) and the
 * location id -> function name table.
 */
static int parse_raw(char *out, struct raw_sample *s, int max, char names[][64], int nnames)
{
	char *line, *save;
	int n = 0, section = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "Samples:", 8)) {
			section = 1;
			continue;
		}
		if (!strncmp(line, "Locations", 9)) {
			section = 2;
			continue;
		}
		if (!strncmp(line, "Mappings", 8))
			section = 3;
		if (section == 1 && strchr(line, ':') && n < max &&
		    sscanf(line, "%lld %lld %lld %lld", &s[n].v[0], &s[n].v[1], &s[n].v[2],
			   &s[n].v[3]) == 4) {
			char *p = strchr(line, ':') + 1, *end;

			s[n].nloc = 0;
			for (long id; (id = strtol(p, &end, 10)), end != p; p = end)
				if (s[n].nloc < 8)
					s[n].loc[s[n].nloc++] = (int)id;
			n++;
		} else if (section == 2) {
			/* "     1: 0xffffffff81003010 M=1 __alloc_pages :0 s=0" */
			int id = atoi(line);
			char *p = strstr(line, "0x"), *e;

			if (id <= 0 || id >= nnames || !p)
				continue;
			p = strchr(p, ' ');
			if (!p)
				continue;
			p++;
			if (!strncmp(p, "M=", 2))
				p = strchr(p, ' ') + 1;
			e = strstr(p, " :");
			if (e)
				snprintf(names[id], 64, "%.*s", (int)(e - p), p);
		}
	}
	return n;
}

TEST(profile)
{
	/* By leaf function: alloc_samples, alloc_pages, inuse_samples, inuse_pages. */
	const struct {
		const char *leaf, *caller;
		long long v[4];
	} want[] = {
		/* 3 x 1 page at rate 64: 64 each; 2 still in use */
		{ "__alloc_pages", "helper", { 3 * SYNTH_RATE, 3 * SYNTH_RATE,
					       2 * SYNTH_RATE, 2 * SYNTH_RATE } },
		/* 128 pages >= rate: itself; half reclaimed */
		{ "mod_fn", "__alloc_pages", { 1, 128, 1, 64 } },
		/* 2 pages stand for 64: 32 allocations */
		{ "[unknown stack]", NULL, { SYNTH_RATE / 2, SYNTH_RATE, SYNTH_RATE / 2,
					     SYNTH_RATE } },
	};
	char dir[] = "/tmp/pt-pprofXXXXXX", trace[64], ks[64], prof[64], cmd[1024];
	static char out[1 << 16];
	char names[16][64] = { { 0 } };
	struct raw_sample rs[16];
	const char *go;
	struct synth s;
	int n;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(trace, sizeof(trace), "%s/t.bin", dir);
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	pprof_trace(&s);
	synth_write_file(trace, s.buf, s.len);
	synth_write_file(ks, kallsyms, strlen(kallsyms));
	synth_free(&s);

	snprintf(cmd, sizeof(cmd), "%s symbolize -k %s %s 2>&1 && %s pprof %s -o %s 2>&1 && "
		 "gzip -t %s 2>&1", PAGETRACE_BIN, ks, trace, PAGETRACE_BIN, trace, prof, prof);
	ASSERT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "5 sampled allocations")) TH_LOG("%s", out);

	go = find_go();
	if (!go) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		system(cmd);
		SKIP(return, "no go to run `go tool pprof` (scripts/deps.sh installs golang-go)");
	}
	snprintf(cmd, sizeof(cmd), "HOME=%s %s tool pprof -raw %s 2>&1", dir, go, prof);
	ASSERT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "alloc_samples/count alloc_pages/pages[dflt] "
			       "inuse_samples/count inuse_pages/pages")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Period: 64")) TH_LOG("%s", out);
	n = parse_raw(out, rs, 16, names, 16);
	ASSERT_EQ(ARRAY_SIZE(want), n);
	for (unsigned int w = 0; w < ARRAY_SIZE(want); w++) {
		int found = 0;

		for (int i = 0; i < n; i++) {
			if (strcmp(names[rs[i].loc[0]], want[w].leaf))
				continue;
			found++;
			for (int j = 0; j < 4; j++) {
				EXPECT_EQ(want[w].v[j], rs[i].v[j]) TH_LOG("%s value %d",
									   want[w].leaf, j);
			}
			if (want[w].caller) {
				ASSERT_EQ(2, rs[i].nloc);
				EXPECT_STREQ(want[w].caller, names[rs[i].loc[1]]);
			}
		}
		EXPECT_EQ(1, found) TH_LOG("samples with leaf %s", want[w].leaf);
	}
	/* -top agrees on the flat alloc_pages by function. */
	snprintf(cmd, sizeof(cmd), "HOME=%s %s tool pprof -top -sample_index=alloc_pages %s 2>&1",
		 dir, go, prof);
	ASSERT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Showing nodes accounting for 384pages, 100% of 384pages total"))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "128pages 33.33% 83.33%   128pages 33.33%  mod_fn"))
		TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* Without symbols: hex names; a kallsyms of another boot is refused. */
TEST(no_symbols)
{
	char dir[] = "/tmp/pt-pprofXXXXXX", trace[64], ks[64], prof[64], cmd[1024], out[4096];
	struct synth s;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(trace, sizeof(trace), "%s/t.bin", dir);
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	pprof_trace(&s);
	synth_write_file(trace, s.buf, s.len);
	synth_free(&s);
	synth_write_file(ks, "ffffffff81200000 T _stext\n", 26);
	snprintf(cmd, sizeof(cmd), "%s pprof %s -o %s --kallsyms %s 2>&1", PAGETRACE_BIN, trace,
		 prof, ks);
	EXPECT_EQ(1, WEXITSTATUS(synth_run(cmd, out, sizeof(out)))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "does not match the traced kernel")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s pprof %s -o %s 2>&1 && gzip -dc %s | grep -ac 0xffffffff81003010",
		 PAGETRACE_BIN, trace, prof, prof);
	EXPECT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "named by address")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

TEST_HARNESS_MAIN
