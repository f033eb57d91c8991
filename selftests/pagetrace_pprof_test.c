// SPDX-License-Identifier: GPL-2.0
/*
 * Call stacks end to end, on this kernel: pagetrace record with
 * stack_rate=1 around an allocation of known origin, then
 *
 *  - the recording ends with symbol chunks from /proc/kallsyms, and
 *    `pagetrace dump -S` names the frames of pagetrace_gt's order-3
 *    allocation: the first is the allocator the probe sits on, and one is
 *    pagetrace_gt's own code ("... [pagetrace_gt]");
 *  - `pagetrace pprof` writes a gzipped profile; check.sh then loads it on
 *    the host with the real `go tool pprof` (scripts/test/check-pprof.sh).
 *
 * Environment: PAGETRACE_BIN (the static CLI), PAGETRACE_GT_KO, PT_RESULTS
 * (where the profile goes, default /tmp); pagetrace.ko loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define TRACE	"/tmp/pt_pprof.bin"
#define REPORT	"/tmp/pt_pprof.report"
#define DUMP	"/tmp/pt_pprof.dump"

/* Run a shell command: its exit status, or -1. */
static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The first "<op> alloc pfn=N npages=N" of the report file, or 0. */
static uint64_t report_pfn(uint64_t *npages)
{
	char line[256];
	uint64_t pfn = 0;
	FILE *f = fopen(REPORT, "re");

	while (f && fgets(line, sizeof(line), f)) {
		const char *l = strstr(line, " alloc pfn=");

		if (l && sscanf(l, " alloc pfn=%" SCNu64 " npages=%" SCNu64, &pfn, npages) == 2)
			break;
		pfn = 0;
	}
	if (f)
		fclose(f);
	return pfn;
}

FIXTURE(pp) {
	const char	*bin;
};

FIXTURE_SETUP(pp)
{
	self->bin = getenv("PAGETRACE_BIN");
}

FIXTURE_TEARDOWN(pp)
{
	pt_st_set_param("stack_rate", "0");
	unlink(TRACE);
	unlink(REPORT);
	unlink(DUMP);
}

TEST_F_TIMEOUT(pp, record_symbols_pprof, 240)
{
	char want[64], line[512], first[256] = "", prof[256];
	const char *results = getenv("PT_RESULTS");
	bool in_stack = false, through_gt = false, seen = false;
	unsigned int frames = 0;
	uint64_t pfn, npages = 0;
	unsigned char magic[2] = { 0 };
	FILE *f;

	if (!self->bin || access(self->bin, X_OK))
		SKIP(return, "no pagetrace CLI (PAGETRACE_BIN)");
	if (pt_st_gt_load())
		SKIP(return, "pagetrace_gt.ko cannot be loaded (PAGETRACE_GT_KO)");
	ASSERT_EQ(0, pt_st_set_param("stack_rate", "1"));
	ASSERT_EQ(0, pt_st_pin_cpu(0));

	ASSERT_EQ(0, run("%s record -q -o " TRACE " -- sh -c 'echo pages_order3 >"
			 PT_GT_DIR "/run && cat " PT_GT_DIR "/run >" REPORT "'%s",
			 self->bin, ""));
	pfn = report_pfn(&npages);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, run("%s dump -S " TRACE " >" DUMP "%s", self->bin, ""));

	/* The event line, then its frames ("#   0xADDR name+0xOFF"). */
	snprintf(want, sizeof(want), "pfn=0x%" PRIx64 " npages=%" PRIu64 " ", pfn, npages);
	f = fopen(DUMP, "re");
	ASSERT_NE(NULL, f);
	/*
	 * Every sampled allocation of the page, until one passes through the
	 * module: the page may also have been allocated, and sampled, by
	 * someone else during the recording (seen on 7.3).
	 */
	while (fgets(line, sizeof(line), f)) {
		if (in_stack && !strncmp(line, "#   0x", 6)) {
			char *name = strchr(line + 6, ' ');

			if (!name) {
				TH_LOG("frame without a name: %s", line);
			} else if (!frames++) {
				snprintf(first, sizeof(first), "%s", name + 1);
			}
			through_gt |= strstr(line, "[pagetrace_gt]") != NULL;
			continue;
		}
		in_stack = false;
		if (through_gt)
			continue;
		if (strstr(line, " alloc ") && strstr(line, want) && strstr(line, " stack=")) {
			in_stack = true;
			seen = true;
			frames = 0;
			first[0] = '\0';
		}
	}
	fclose(f);
	ASSERT_TRUE(seen) {
		TH_LOG("no sampled allocation with %s in the dump", want);
	}
	TH_LOG("%u frames, the first %s", frames, first);
	EXPECT_LT(2, frames);
	/* The allocator's entry: __alloc_pages*, or (7.x) __alloc_frozen_pages*. */
	EXPECT_TRUE(!strncmp(first, "__alloc_pages", 13) ||
		    !strncmp(first, "__alloc_frozen_pages", 20)) TH_LOG("%s", first);
	EXPECT_TRUE(through_gt);

	snprintf(prof, sizeof(prof), "%s/stacks.pb.gz", results ? results : "/tmp");
	ASSERT_EQ(0, run("%s pprof " TRACE " -o %s", self->bin, prof));
	f = fopen(prof, "re");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(2, fread(magic, 1, 2, f));
	fclose(f);
	EXPECT_EQ(0x1f, magic[0]);
	EXPECT_EQ(0x8b, magic[1]);
}

TEST_HARNESS_MAIN
