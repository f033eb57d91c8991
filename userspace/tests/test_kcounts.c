// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's count of pages in use against the trace's, as pagetrace
 * stats (text and JSON) and report print it, for a trace whose snapshot
 * is short of the kernel's count by SHORT pages.  Where the snapshot
 * record says the walk could not read the per-CPU lists and took at least
 * that many zero-count pages as free (5.10 PREEMPT_RT), the row is "short"
 * (grey) with a note saying why; otherwise it is "off" (red): with the
 * lists read, with fewer pages taken as free, or with no snapshot record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL
#define US	1000ULL
#define SHORT	0x1000ULL	/* pages the snapshot lists fewer than the kernel counts */
#define NOTE	"could not read the per-CPU free lists"

/*
 * A trace of synth_init_snapshot_rec()'s one zone (present 0xfe000, half
 * free: the kernel counts 0x7f000 in use) whose snapshot lists SHORT
 * pages fewer, in naturally aligned runs.
 */
static void short_trace(struct synth *s, const struct pagetrace_rec_snapshot *snap)
{
	static const unsigned long long runs[][2] = {
		{ 0x40000, 0x40000 }, { 0x80000, 0x20000 }, { 0xa0000, 0x10000 },
		{ 0xb0000, 0x8000 }, { 0xb8000, 0x4000 }, { 0xbc000, 0x2000 },
	};

	synth_init_snapshot_rec(s, 2, 4096, SEC + 100 * US, snap);
	synth_snapshot(s, 0);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		synth_event(s, 0, SEC / 2, PAGETRACE_EV_ALLOC, runs[i][0], runs[i][1]);
	synth_flush(s, 0, 0);
	synth_event(s, 1, SEC + 200 * US, PAGETRACE_EV_ALLOC, 0x2000, 1);
	synth_event(s, 1, SEC + 300 * US, PAGETRACE_EV_FREE, 0x2000, 1);
	synth_flush_all(s);
}

struct outputs {
	char text[8192];
	char json[8192];
	char html[4 << 20];
};

/* stats, stats --json and report of @s into @o. */
static void run_all(struct __test_metadata *_metadata, const struct synth *s, struct outputs *o)
{
	char path[] = "/tmp/pagetrace-kcounts-XXXXXX", cmd[512];
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	ASSERT_LE(0, fd);
	close(fd);
	synth_write_file(path, s->buf, s->len);
	snprintf(cmd, sizeof(cmd), "%s stats %s", PAGETRACE_BIN, path);
	ASSERT_EQ(0, synth_run(cmd, o->text, sizeof(o->text))) TH_LOG("%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s stats --json %s", PAGETRACE_BIN, path);
	ASSERT_EQ(0, synth_run(cmd, o->json, sizeof(o->json))) TH_LOG("%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s report %s -o %s.html", PAGETRACE_BIN, path, path);
	ASSERT_EQ(0, synth_run(cmd, o->html, sizeof(o->html))) TH_LOG("%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s.html", path);
	f = fopen(cmd, "r");
	ASSERT_NE(NULL, f);
	n = fread(o->html, 1, sizeof(o->html) - 1, f);
	o->html[n] = '\0';
	fclose(f);
	unlink(cmd);
	unlink(path);
}

/* The start row of the report's table, with its class ("" for none). */
static void expect_row(struct __test_metadata *_metadata, const struct outputs *o,
		       const char *class)
{
	char row[256];

	snprintf(row, sizeof(row), "<tr%s><td>start</td><td>0/DMA32</td><td>%llu</td><td>%llu</td>"
		 "<td>-%llu</td>", class, 0x7f000ULL, 0x7f000ULL - SHORT, SHORT);
	EXPECT_NE(NULL, strstr(o->html, row)) TH_LOG("no row %s", row);
}

static void check_off(struct __test_metadata *_metadata, const struct pagetrace_rec_snapshot *snap)
{
	struct outputs *o = calloc(1, sizeof(*o));
	struct synth s;

	ASSERT_NE(NULL, o);
	short_trace(&s, snap);
	run_all(_metadata, &s, o);
	expect_row(_metadata, o, " class=\"off\"");
	EXPECT_EQ(NULL, strstr(o->html, NOTE));
	EXPECT_EQ(NULL, strstr(o->text, NOTE));
	EXPECT_NE(NULL, strstr(o->json, "\"snapshot_short_max\": 0,")) TH_LOG("%s", o->json);
	synth_free(&s);
	free(o);
}

/* The lists unread, more pages taken as free than the trace is short: grey. */
TEST(taken_free_covers)
{
	struct pagetrace_rec_snapshot snap = {
		.flags = PAGETRACE_SNAPSHOT_TAKEN_FREE, .taken_free = SHORT + 10,
	};
	struct outputs *o = calloc(1, sizeof(*o));
	char want[64];
	struct synth s;

	ASSERT_NE(NULL, o);
	short_trace(&s, &snap);
	run_all(_metadata, &s, o);
	expect_row(_metadata, o, " class=\"short\"");
	EXPECT_EQ(NULL, strstr(o->html, "class=\"off\""));
	EXPECT_NE(NULL, strstr(o->html, NOTE));
	EXPECT_NE(NULL, strstr(o->text, NOTE)) TH_LOG("%s", o->text);
	snprintf(want, sizeof(want), "\"snapshot_short_max\": %llu,", SHORT + 10);
	EXPECT_NE(NULL, strstr(o->json, want)) TH_LOG("%s", o->json);
	synth_free(&s);
	free(o);
}

/* Fewer taken as free than the trace is short: red. */
TEST(taken_free_too_few)
{
	struct pagetrace_rec_snapshot snap = {
		.flags = PAGETRACE_SNAPSHOT_TAKEN_FREE, .taken_free = SHORT / 2,
	};
	struct outputs *o = calloc(1, sizeof(*o));
	struct synth s;

	ASSERT_NE(NULL, o);
	short_trace(&s, &snap);
	run_all(_metadata, &s, o);
	expect_row(_metadata, o, " class=\"off\"");
	EXPECT_NE(NULL, strstr(o->text, NOTE));
	synth_free(&s);
	free(o);
}

/* The per-CPU lists read: nothing excuses a short trace. */
TEST(lists_read)
{
	struct pagetrace_rec_snapshot snap = {
		.flags = PAGETRACE_SNAPSHOT_PCP | PAGETRACE_SNAPSHOT_TAKEN_FREE,
	};

	check_off(_metadata, &snap);
}

/* No snapshot record (an older module): nothing known, red. */
TEST(no_record)
{
	check_off(_metadata, NULL);
}

TEST_HARNESS_MAIN
