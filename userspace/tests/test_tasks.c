// SPDX-License-Identifier: GPL-2.0
/*
 * Task records and name slices: the tgid of each event, the names the
 * stream carries (last one wins, bounded table), names of every length,
 * names cut by buffer and chunk boundaries or malformed, and pagetrace
 * stats --by task.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "files.h"
#include "synth.h"

#define SEC	1000000000ULL

/* Two CPUs, three processes (see the by_task test for the expected counts). */
static void task_trace(struct synth *s)
{
	synth_init(s, 2, 4096, PAGETRACE_FLAG_TASKS);
	synth_name(s, 0, 100, "alpha");
	synth_event(s, 0, SEC, PAGETRACE_EV_ALLOC, 0x100, 4);
	synth_event(s, 0, SEC + 1000, PAGETRACE_EV_ALLOC, 0x104, 1);
	synth_task(s, 0, 0);
	synth_event(s, 0, SEC + 2000, PAGETRACE_EV_ALLOC, 0x200, 1);
	synth_name(s, 0, 200, "beta");
	synth_event(s, 0, SEC + 3000, PAGETRACE_EV_FREE, 0x100, 4);
	synth_flush(s, 0, 0);
	/* Renamed: the 16-byte name is not NUL-terminated. */
	synth_name(s, 1, 100, "alpha2-0123456789");
	synth_event(s, 1, SEC + 4000, PAGETRACE_EV_ALLOC, 0x400, 2);
	synth_event(s, 1, SEC + 5000, PAGETRACE_EV_RECLAIM, 0x400, 1);
	synth_flush_all(s);
}

TEST(names_and_tasks)
{
	static const int64_t tasks[] = { 100, 100, 0, 200, 100, 100 };
	struct pgtrace_event evs[16];
	struct pgtrace_reader *r;
	struct synth s;
	int i, n;

	task_trace(&s);
	ASSERT_EQ(6, s.nexp);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	n = pgtrace_reader_next_batch(r, evs, 16);
	ASSERT_EQ(6, n) TH_LOG("%s", pgtrace_reader_error(r));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(tasks[i], evs[i].task);
		EXPECT_EQ(s.exp[i].pfn, evs[i].pfn);
	}
	EXPECT_EQ(0, pgtrace_reader_next_batch(r, evs, 16));
	EXPECT_EQ(4, pgtrace_reader_counters(r)->tasks);
	EXPECT_STREQ("alpha2-012345678", pgtrace_reader_task_name(r, 100));
	EXPECT_STREQ("beta", pgtrace_reader_task_name(r, 200));
	EXPECT_EQ(NULL, pgtrace_reader_task_name(r, 0));
	EXPECT_EQ(NULL, pgtrace_reader_task_name(r, 300));
	EXPECT_EQ(NULL, pgtrace_reader_task_name(r, -1));
	EXPECT_EQ(0, pgtrace_reader_names_dropped(r));
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* A 64-byte reader buffer: names straddle every refill. */
TEST(names_small_buffer)
{
	struct pgtrace_reader_params p = { .buf_size = PGTRACE_READER_MIN_BUF };
	struct pgtrace_event ev;
	struct pgtrace_reader *r;
	struct synth s;
	char name[16];
	int fd, i, n = 0, ret;

	synth_init(&s, 1, 4096, PAGETRACE_FLAG_TASKS);
	for (i = 1; i <= 50; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		synth_name(&s, 0, i, name);
		synth_event(&s, 0, SEC + i, PAGETRACE_EV_ALLOC, i, 1);
	}
	synth_flush_all(&s);
	fd = fileno(tmpfile());
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)s.len, write(fd, s.buf, s.len));
	ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
	ASSERT_EQ(0, pgtrace_reader_open_fd_params(&r, fd, &p));
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		n++;
		EXPECT_EQ((int64_t)ev.pfn, ev.task);
		snprintf(name, sizeof(name), "t%d", (int)ev.task);
		EXPECT_STREQ(name, pgtrace_reader_task_name(r, ev.task));
	}
	EXPECT_EQ(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
	EXPECT_EQ(50, n);
	pgtrace_reader_close(r);
	close(fd);
	synth_free(&s);
}

/* Names of 0 to 16 bytes: 1, 2 or 3 slices, all of them pid words. */
TEST(name_lengths)
{
	static const char full[] = "0123456789abcdef";
	struct pgtrace_event ev;
	struct pgtrace_reader *r;
	struct synth s;
	char name[17];
	unsigned int len, i;

	synth_init(&s, 1, 4096, PAGETRACE_FLAG_TASKS);
	for (len = 0; len <= 16; len++) {
		struct synth_cpu *c = &s.cpus[0];
		unsigned int before = c->nr, want = len <= 7 ? 1 : len <= 14 ? 2 : 3;

		snprintf(name, sizeof(name), "%.*s", (int)len, full);
		synth_name(&s, 0, 1000 + len, name);
		ASSERT_EQ(want + 1 + (before ? 0 : 2), c->nr - before);
		for (i = c->nr - want - 1; i < c->nr; i++)
			EXPECT_TRUE(pagetrace_word_is_pid(c->words[i]));
		synth_event(&s, 0, SEC + len, PAGETRACE_EV_ALLOC, len, 1);
	}
	synth_flush_all(&s);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	for (len = 0; len <= 16; len++) {
		ASSERT_EQ(1, pgtrace_reader_next(r, &ev)) TH_LOG("%s", pgtrace_reader_error(r));
		EXPECT_EQ(1000 + len, ev.task);
		snprintf(name, sizeof(name), "%.*s", (int)len, full);
		EXPECT_STREQ(name, pgtrace_reader_task_name(r, ev.task));
	}
	EXPECT_EQ(0, pgtrace_reader_next(r, &ev));
	pgtrace_reader_close(r);
	synth_free(&s);
}

/* Decode one chunk of @n words after pid(0) and sync; expect @what. */
static void expect_bad_chunk(struct __test_metadata *_metadata, const uint64_t *words,
			     unsigned int n, const char *what)
{
	uint64_t w[8] = { pagetrace_pid_word(0), pagetrace_sync_word(SEC) };
	struct pgtrace_event ev;
	struct pgtrace_reader *r;
	struct synth s;

	memcpy(w + 2, words, n * sizeof(*w));
	synth_init(&s, 1, 4096, PAGETRACE_FLAG_TASKS);
	synth_put_chunk(&s, 0, 0, 0, 0, w, n + 2);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	EXPECT_EQ(-EBADMSG, pgtrace_reader_next(r, &ev));
	EXPECT_TRUE(strstr(pgtrace_reader_error(r), what) != NULL)
		TH_LOG("%s", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	synth_free(&s);
}

TEST(bad_names)
{
	static const unsigned char c[PAGETRACE_COMM_LEN] = "abcdefghijklmnop";
	const uint64_t task = pagetrace_task_word(7);
	const uint64_t ev = pagetrace_event_word(0, 1, 1, PAGETRACE_EV_ALLOC);
	uint64_t w[4];

	w[0] = pagetrace_name_word(0, c);
	expect_bad_chunk(_metadata, w, 1, "name cut off by the end of its chunk");
	w[1] = pagetrace_name_word(1, c);
	expect_bad_chunk(_metadata, w, 2, "name cut off by the end of its chunk");
	w[1] = ev;
	expect_bad_chunk(_metadata, w, 2,
			 "after name slice 0 is neither its next slice nor a task record");
	w[1] = pagetrace_name_word(2, c);
	w[2] = task;
	expect_bad_chunk(_metadata, w, 3,
			 "after name slice 0 is neither its next slice nor a task record");
	/* A second name before the first one's task record. */
	w[1] = pagetrace_name_word(0, c);
	expect_bad_chunk(_metadata, w, 3,
			 "after name slice 0 is neither its next slice nor a task record");
	w[0] = pagetrace_name_word(1, c);
	w[1] = task;
	expect_bad_chunk(_metadata, w, 2, "does not start a name");
	/* Bytes past the 16th, and a fourth slice. */
	w[0] = pagetrace_name_word(0, c);
	w[1] = pagetrace_name_word(1, c);
	w[2] = pagetrace_name_word(2, c) | 1ULL << 30;
	w[3] = task;
	expect_bad_chunk(_metadata, w, 4, "has bytes past the name's 16");
	w[2] = pagetrace_name_word(2, c);
	w[3] = pagetrace_name_word(3, c);
	expect_bad_chunk(_metadata, w, 4, "has bytes past the name's 16");
}

TEST(names_bounded)
{
	unsigned int i, extra = 10;
	struct pgtrace_event ev;
	struct pgtrace_reader *r;
	struct synth s;

	synth_init(&s, 1, 1 << 16, PAGETRACE_FLAG_TASKS);
	for (i = 1; i <= PGTRACE_READER_MAX_NAMES + extra; i++)
		synth_name(&s, 0, i, "n");
	/* Known ones are still renamed when the table is full. */
	synth_name(&s, 0, 1, "renamed");
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 1, 1);
	synth_flush_all(&s);
	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
	ASSERT_EQ(1, pgtrace_reader_next(r, &ev));
	ASSERT_EQ(0, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(extra, pgtrace_reader_names_dropped(r));
	EXPECT_STREQ("renamed", pgtrace_reader_task_name(r, 1));
	EXPECT_STREQ("n", pgtrace_reader_task_name(r, PGTRACE_READER_MAX_NAMES));
	EXPECT_EQ(NULL, pgtrace_reader_task_name(r, PGTRACE_READER_MAX_NAMES + 1));
	pgtrace_reader_close(r);
	synth_free(&s);
}

static int run_cli(const char *dir, const char *args, char *out, size_t len)
{
	const char *env = getenv("PAGETRACE");
	int ret = run_in(dir, env ? env : PAGETRACE_BIN, args);

	slurp_into(dir, "out", out, len);
	return ret;
}

TEST(stats_by_task)
{
	char dir[64] = "/tmp/pagetrace-tasks-XXXXXX", path[128], out[4096];
	struct synth s;
	int fd;

	ASSERT_NE(NULL, mkdtemp(dir));
	task_trace(&s);
	snprintf(path, sizeof(path), "%s/t.pt", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)s.len, write(fd, s.buf, s.len));
	close(fd);

	ASSERT_EQ(0, run_cli(dir, "stats --by task --json t.pt", out, sizeof(out)));
	EXPECT_STREQ("{\"tasks\": ["
		     "{\"tgid\": 100, \"comm\": \"alpha2-012345678\", "
		     "\"events\": {\"alloc\": 3, \"free\": 0, \"reclaim\": 1}, "
		     "\"pages\": {\"alloc\": 7, \"free\": 0, \"reclaim\": 1}, \"in_use_end\": 2}, "
		     "{\"tgid\": 0, \"comm\": \"[kernel]\", "
		     "\"events\": {\"alloc\": 1, \"free\": 0, \"reclaim\": 0}, "
		     "\"pages\": {\"alloc\": 1, \"free\": 0, \"reclaim\": 0}, \"in_use_end\": 1}, "
		     "{\"tgid\": 200, \"comm\": \"beta\", "
		     "\"events\": {\"alloc\": 0, \"free\": 1, \"reclaim\": 0}, "
		     "\"pages\": {\"alloc\": 0, \"free\": 4, \"reclaim\": 0}, \"in_use_end\": 0}"
		     "], \"names_dropped\": 0}\n", out);

	ASSERT_EQ(0, run_cli(dir, "stats -b task t.pt", out, sizeof(out)));
	EXPECT_TRUE(strstr(out, "     100 alpha2-012345678          3          7          0"
			   "          0          1          1          2\n") != NULL)
		TH_LOG("%s", out);
	EXPECT_TRUE(strstr(out, "       0 [kernel]  ") != NULL) TH_LOG("%s", out);

	EXPECT_EQ(2, run_cli(dir, "stats --by cpu t.pt", out, sizeof(out)));
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	EXPECT_EQ(0, system(path));
	synth_free(&s);
}

static void write_trace(struct __test_metadata *_metadata, const char *dir,
			const char *name, const struct synth *s)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)s->len, write(fd, s->buf, s->len));
	close(fd);
}

/* The report's table of processes: the same totals as stats --by task. */
TEST(report_by_task)
{
	char dir[64] = "/tmp/pagetrace-tasks-XXXXXX", cmd[128];
	static char html[1 << 20], out[256];
	struct synth s;

	ASSERT_NE(NULL, mkdtemp(dir));
	task_trace(&s);
	/* A name that HTML must escape. */
	synth_name(&s, 1, 300, "<i>&x");
	synth_event(&s, 1, SEC + 6000, PAGETRACE_EV_ALLOC, 0x800, 8);
	synth_flush_all(&s);
	write_trace(_metadata, dir, "t.pt", &s);
	synth_free(&s);

	ASSERT_EQ(0, run_cli(dir, "report t.pt -o r.html", out, sizeof(out)));
	ASSERT_LT(0, slurp_into(dir, "r.html", html, sizeof(html)));
	EXPECT_TRUE(strstr(html, "<table id=\"tab-tasks\"") != NULL);
	EXPECT_TRUE(strstr(html, "<tr><td>300</td><td>&lt;i&gt;&amp;x</td><td>8</td><td>0</td>"
			   "<td>0</td><td>8</td><td>1</td></tr>\n"
			   "<tr><td>100</td><td>alpha2-012345678</td><td>7</td><td>0</td>"
			   "<td>1</td><td>2</td><td>3</td></tr>\n"
			   "<tr><td>0</td><td>[kernel]</td><td>1</td><td>0</td>"
			   "<td>0</td><td>1</td><td>1</td></tr>\n"
			   "<tr><td>200</td><td>beta</td><td>0</td><td>4</td>"
			   "<td>0</td><td>0</td><td>0</td></tr>\n</table>") != NULL)
		TH_LOG("%s", strstr(html, "<h2>") ? strstr(html, "<h2>") : "no table");

	/* Without task records, no table. */
	synth_init(&s, 1, 4096, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 0x100, 1);
	synth_flush_all(&s);
	write_trace(_metadata, dir, "n.pt", &s);
	synth_free(&s);
	ASSERT_EQ(0, run_cli(dir, "report n.pt -o n.html", out, sizeof(out)));
	ASSERT_LT(0, slurp_into(dir, "n.html", html, sizeof(html)));
	EXPECT_EQ(NULL, strstr(html, "tab-tasks"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

/* Task names are bytes: quotes, backslashes, controls and non-ASCII escaped. */
TEST(json_names)
{
	char dir[64] = "/tmp/pagetrace-tasks-XXXXXX", cmd[128], out[4096];
	struct synth s;

	ASSERT_NE(NULL, mkdtemp(dir));
	synth_init(&s, 1, 4096, PAGETRACE_FLAG_TASKS);
	synth_name(&s, 0, 100, "q\"b\\c\x01\xc3\xa9\x7f");
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 0x100, 1);
	synth_flush_all(&s);
	write_trace(_metadata, dir, "t.pt", &s);
	synth_free(&s);

	ASSERT_EQ(0, run_cli(dir, "stats --by task --json t.pt", out, sizeof(out)));
	EXPECT_TRUE(strstr(out, "\"comm\": \"q\\\"b\\\\c\\u0001\\u00c3\\u00a9\\u007f\"") != NULL)
		TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN
