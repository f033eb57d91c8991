// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_record_test: pagetrace record, the CLI's recorder, which reads
 * the session through the mapping ($PAGETRACE_BIN).  A timed recording
 * while we allocate gives a valid file holding our page and nothing lost;
 * recording a command stops when it exits, with its events in the file;
 * a full disk (a 128 KiB tmpfs) stops it loudly, with a non-zero status
 * and a file that ends at a chunk boundary and decodes cleanly; a flight
 * recorder dumps on SIGUSR1 and at the stop, its seq gaps decode, and the
 * module's default parameters are back afterwards.  The file ends with the
 * kernel's zone counters at the stop, and pagetrace report's table sets
 * them beside the trace's count, none off.  pagetrace top reads the mapped
 * session live and shows our task, and its cgroup (one of ours) with the
 * task's numbers.  Runs as root with
 * pagetrace.ko loaded (skips otherwise, and without the CLI).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define PAGE		4096UL

/* ----------------------------------------------------------------- fixture */

FIXTURE(rec) {
	const char		*bin;
	char			out[4096];	/* the recorder's stdout + stderr */
	struct pt_st_buf	b;
	struct pt_st_counts	d;
	bool			mounted;
};

FIXTURE_SETUP(rec)
{
	self->bin = getenv("PAGETRACE_BIN");
}

FIXTURE_TEARDOWN(rec)
{
	pt_st_buf_free(&self->b);
	if (self->mounted)
		umount("/tmp/pt-small");
}

#define REC_READY() do {						\
	if (access(DEV, F_OK))						\
		SKIP(return, DEV " missing: load pagetrace.ko first");	\
	if (!self->bin || access(self->bin, X_OK))			\
		SKIP(return, "no pagetrace CLI: set PAGETRACE_BIN");	\
} while (0)

/* Start the recorder with @argv (argv[0] ignored); its output to a pipe. */
static pid_t rec_start(FIXTURE_DATA(rec) *self, char **argv, int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		argv[0] = (char *)self->bin;
		execv(self->bin, argv);
		_exit(127);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* Collect its output and exit status. */
static int rec_wait(FIXTURE_DATA(rec) *self, pid_t pid, int rfd)
{
	size_t len = 0;
	ssize_t n;
	int st;

	while ((n = read(rfd, self->out + len, sizeof(self->out) - 1 - len)) > 0)
		len += n;
	self->out[len] = 0;
	close(rfd);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A timed recording while we allocate: a valid file with our page, 0 lost. */
TEST_F_TIMEOUT(rec, duration, 120)
{
	char *argv[] = { NULL, "record", "-o", "/tmp/pt-rec.bin", "-d", "2",
			 "--json", NULL };
	uint64_t pfn = 0;
	int rfd, st;
	pid_t pid;

	REC_READY();
	ASSERT_LE(0, pt_st_pin_first_cpu());
	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(pt_st_wait_recording(20000));
	for (int i = 0; i < 20; i++)
		pt_st_touch_and_free(64 * PAGE);
	pfn = pt_st_one_page_event(NULL, false);
	ASSERT_NE(0, pfn);
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(0, st);
	ASSERT_NE(NULL, strstr(self->out, "\"stopped_by\": \"duration\""));
	ASSERT_NE(NULL, strstr(self->out, "\"lost\": 0,"));
	ASSERT_NE(NULL, strstr(self->out, "\"error\": null"));
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-rec.bin", &self->b));
	pt_st_count_stream(&self->b, &self->d, pfn);
	unlink("/tmp/pt-rec.bin");
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_TRUE(self->d.found_alloc);
}

/* Whether @html has the row @tr followed by @cells. */
static bool has_row(const struct pt_st_buf *html, const char *tr, const char *cells)
{
	char row[200];

	snprintf(row, sizeof(row), "%s%s", tr, cells);
	return strstr((const char *)html->p, row);
}

/*
 * pagetrace report of /tmp/pt-cmd.bin (@r, drained) checks the trace against
 * the kernel: its table has a row per zone at start and at stop with the
 * kernel's count from the stream, and none of them is marked off (more
 * than 0.1% and 2 pages apart; "short" where the snapshot says why).
 */
static void check_report_counts(struct __test_metadata *_metadata,
				FIXTURE_DATA(rec) *self, struct pgtrace_reader *r)
{
	char *argv[] = { NULL, "report", "/tmp/pt-cmd.bin", "-o", "/tmp/pt-cmd.html", NULL };
	static const char * const at[2] = { "start", "stop" };
	const struct pgtrace_zone *zones;
	unsigned int nz = pgtrace_reader_zones(r, &zones);
	struct pt_st_buf html = { 0 };
	char row[160];
	int rfd, st;
	pid_t pid;
	/*
	 * Where the walk could not read the per-CPU lists (5.10 PREEMPT_RT)
	 * the trace may be short by the pages it took as free: such a row
	 * is "short", and only those.
	 */
	const struct pagetrace_rec_snapshot *snap = pgtrace_reader_snapshot(r);
	bool short_ok = snap && !(snap->flags & PAGETRACE_SNAPSHOT_PCP) && snap->taken_free;

	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	st = rec_wait(self, pid, rfd);
	ASSERT_EQ(0, st) TH_LOG("pagetrace report: %s", self->out);
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-cmd.html", &html));
	unlink("/tmp/pt-cmd.html");
	pt_st_buf_add(&html, "", 1);
	EXPECT_NE(NULL, strstr((char *)html.p, "id=\"tab-kernel-counts\""));
	for (unsigned int w = 0; w < 2; w++) {
		const struct pgtrace_kernel_counters *k = pgtrace_reader_kernel_counters(r, w);

		for (unsigned int j = 0; k && j < k->nr_zones; j++) {
			const struct pgtrace_zone_counters *z = &k->zones[j];
			const char *name = NULL;

			for (unsigned int i = 0; i < nz; i++)
				if (zones[i].node == z->node && zones[i].zone == z->zone)
					name = zones[i].name;
			ASSERT_NE(NULL, name);
			snprintf(row, sizeof(row), "<td>%s</td><td>%u/%s</td><td>%lld</td>",
				 at[w], z->node, name,
				 (long long)pgtrace_zone_counters_in_use(z));
			EXPECT_TRUE(has_row(&html, "<tr>", row) ||
				    (short_ok && has_row(&html, "<tr class=\"short\">", row)))
				TH_LOG("no row %s", row);
		}
	}
	EXPECT_EQ(NULL, strstr((char *)html.p, "<tr class=\"off\">"))
		TH_LOG("%s", strstr((char *)html.p, "<tr class=\"off\">"));
	pt_st_buf_free(&html);
}

/* Recording a command stops when it exits, with its events in the file. */
TEST_F_TIMEOUT(rec, command, 120)
{
	char *argv[] = { NULL, "record", "-q", "-o", "/tmp/pt-cmd.bin", "--",
			 "sh", "-c", "dd if=/dev/zero of=/dev/null bs=1M count=4; exit 3",
			 NULL };
	uint64_t events = 0;
	int rfd, st;
	pid_t pid;

	REC_READY();
	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(0, st);
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-cmd.bin", &self->b));
	pt_st_count_stream(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	for (int cpu = 0; cpu < PT_ST_MAX_CPUS; cpu++)
		events += self->d.events[cpu];
	ASSERT_LT(0, events);

	/* The kernel's zone counters at the stop, appended after the events. */
	{
		struct pgtrace_reader *r = NULL;
		struct pgtrace_event ev;
		int ret;

		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, self->b.p, self->b.len, 0));
		while ((ret = pgtrace_reader_next(r, &ev)) == 1)
			;
		EXPECT_EQ(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
		EXPECT_NE(NULL, pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_START));
		EXPECT_NE(NULL, pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_STOP));
		check_report_counts(_metadata, self, r);
		pgtrace_reader_close(r);
	}
	unlink("/tmp/pt-cmd.bin");
}

#define CG_ROOT		"/sys/fs/cgroup"
#define TOP_CG		CG_ROOT "/pt-top-cg"

/* A cgroup v2 child of the root, mounting cgroup2 there if need be. */
static int top_cgroup_make(void)
{
	if (access(CG_ROOT "/cgroup.procs", F_OK)) {
		mkdir(CG_ROOT, 0755);
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL))
			return -errno;
	}
	if (mkdir(TOP_CG, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The line of @frame (up to @end) that starts with @head, or NULL. */
static const char *frame_line(const char *frame, const char *end, const char *head)
{
	size_t l = strlen(head);

	for (const char *p = frame; p && p < end; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, head, l))
			return p;
	return NULL;
}

/*
 * A table row's numbers (ALLOC/s FREE/s RECLAIM/s IN USE CHANGE), which
 * follow its 25-column first field, in @buf.  Returns the ALLOC/s.
 */
static double row_numbers(const char *line, char *buf, size_t len)
{
	size_t n = strcspn(line, "\n");

	if (n < 26)
		n = 26;
	snprintf(buf, len, "%.*s", (int)(n - 25), line + 25);
	return strtod(buf, NULL);
}

/*
 * pagetrace top, live: three frames of the mapped session in batch mode
 * while a task of ours named pt-top-load writes files, with the lost count
 * and our task among the rows.  The task runs in a cgroup v2 child cgroup
 * of its own (pt-top-cg), so the cgroup table, from /proc/PID/cgroup, must
 * have a /pt-top-cg row with exactly the task's numbers, and allocations.
 */
TEST_F_TIMEOUT(rec, top_live, 120)
{
	struct pt_st_buf out = { 0 };
	const char *p, *next, *end;
	int st = -1, frames = 0, cg_rows = 0, go[2];
	char c = 'g', pid_s[16];
	pid_t pid, load;

	REC_READY();
	ASSERT_EQ(0, top_cgroup_make()) TH_LOG("no cgroup v2 to make " TOP_CG " in");
	ASSERT_EQ(0, pipe(go));
	load = pt_st_fork_tied();
	ASSERT_LE(0, load);
	if (load == 0) {
		static char buf[1 << 16];

		prctl(PR_SET_NAME, "pt-top-load");
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (;;) {
			int fd = open("/tmp/pt-top-load", O_WRONLY | O_CREAT | O_TRUNC, 0600);

			for (int i = 0; fd >= 0 && i < 64; i++)
				if (write(fd, buf, sizeof(buf)) < 0)
					break;
			if (fd >= 0)
				close(fd);
			unlink("/tmp/pt-top-load");
		}
	}
	close(go[0]);
	snprintf(pid_s, sizeof(pid_s), "%d", load);
	st = pt_st_write_file(TOP_CG "/cgroup.procs", pid_s);
	if (!st && write(go[1], &c, 1) != 1)
		st = -1;
	close(go[1]);
	if (st) {
		kill(load, SIGKILL);
		waitpid(load, NULL, 0);
		rmdir(TOP_CG);
	}
	ASSERT_EQ(0, st) TH_LOG("cannot move the load into " TOP_CG);
	st = -1;
	/* Frames to a file: three of them outgrow a pipe's buffer. */
	pid = fork();
	if (pid == 0) {
		int fd = open("/tmp/pt-top.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(self->bin, self->bin, "top", "-b", "-d", "1", "-n", "3",
		      (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && waitpid(pid, &st, 0) == pid)
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	kill(load, SIGKILL);
	waitpid(load, NULL, 0);
	unlink("/tmp/pt-top-load");
	rmdir(TOP_CG);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-top.txt", &out));
	unlink("/tmp/pt-top.txt");
	pt_st_buf_add(&out, "", 1);
	TH_LOG("%.6000s", (char *)out.p);
	EXPECT_EQ(0, st);
	p = strstr((char *)out.p, "pagetrace top - live /dev/pagetrace");
	for (; p; p = next) {
		const char *task, *cg, *head;
		char tn[128], cn[128];

		frames++;
		next = strstr(p + 1, "pagetrace top - live /dev/pagetrace");
		end = next ? next : p + strlen(p);
		/* The task's row ("    TGID COMM"), by its pid and name. */
		snprintf(tn, sizeof(tn), "%8d pt-top-load ", load);
		task = frame_line(p, end, tn);
		head = frame_line(p, end, "CGROUP ");
		cg = head ? frame_line(head, end, "/pt-top-cg ") : NULL;
		if (!task && !cg)
			continue;
		EXPECT_NE(NULL, task) TH_LOG("frame %d: a /pt-top-cg row, no task row", frames);
		EXPECT_NE(NULL, cg) TH_LOG("frame %d: no /pt-top-cg row in the cgroup table",
					   frames);
		if (!task || !cg)
			continue;
		cg_rows++;
		EXPECT_LT(0, row_numbers(cg, cn, sizeof(cn)));
		row_numbers(task, tn, sizeof(tn));
		EXPECT_STREQ(tn, cn) TH_LOG("frame %d: task %s, cgroup %s", frames, tn, cn);
	}
	EXPECT_EQ(3, frames);
	EXPECT_LE(2, cg_rows);
	EXPECT_NE(NULL, strstr((char *)out.p, "\nlost: "));
	EXPECT_NE(NULL, strstr((char *)out.p, " pt-top-load "));
	pt_st_buf_free(&out);
}

/*
 * A full disk stops the recording loudly, with a non-zero status, and
 * leaves a file that ends at a chunk boundary and decodes cleanly.
 */
TEST_F_TIMEOUT(rec, enospc, 120)
{
	char *argv[] = { NULL, "record", "-o", "/tmp/pt-small/t.bin", "-d", "60",
			 NULL };
	siginfo_t si;
	struct stat sb;
	int rfd, st;
	pid_t pid;

	REC_READY();
	mkdir("/tmp/pt-small", 0700);
	if (mount("tmpfs", "/tmp/pt-small", "tmpfs", 0, "size=128k"))
		SKIP(return, "cannot mount a small tmpfs: %s", strerror(errno));
	self->mounted = true;
	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	/* Page churn until the recorder gives up (WNOWAIT: rec_wait reaps). */
	for (int i = 0; i < 1000; i++) {
		memset(&si, 0, sizeof(si));
		ASSERT_EQ(0, waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT));
		if (si.si_pid == pid)
			break;
		pt_st_on_every_cpu(256 * PAGE, NULL, 0);
	}
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(1, st);
	ASSERT_NE(NULL, strstr(self->out, "disk full"));
	ASSERT_NE(NULL, strstr(self->out, "valid trace"));
	ASSERT_EQ(0, stat("/tmp/pt-small/t.bin", &sb));
	ASSERT_GE(256 * 1024, sb.st_size);
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-small/t.bin", &self->b));
	pt_st_count_stream(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
}

/* A flight recorder dumps on SIGUSR1 and at the stop; seq gaps decode. */
TEST_F_TIMEOUT(rec, flight_sigusr1, 120)
{
	char *argv[] = { NULL, "record", "-f", "-b", "32K", "-o", "/tmp/pt-fr.bin",
			 "-d", "60", NULL };
	struct stat sb = { 0 };
	uint64_t missing = 0;
	int rfd, st;
	pid_t pid;

	REC_READY();
	ASSERT_LE(0, pt_st_pin_first_cpu());
	unlink("/tmp/pt-fr.bin");
	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	/*
	 * SIGUSR1 kills a process that has no handler yet: wait for the
	 * header, which the recorder writes after setting its handlers up.
	 */
	for (int i = 0; i < 1000 && (stat("/tmp/pt-fr.bin", &sb) || !sb.st_size); i++)
		usleep(10000);
	ASSERT_LT(0, sb.st_size) TH_LOG("the recorder did not start within 10 s");
	pt_st_touch_and_free(2048 * PAGE);
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	usleep(300000);
	/* ~8000 events on our CPU: far more than 32 KiB of chunks hold. */
	pt_st_touch_and_free(4096 * PAGE);
	ASSERT_EQ(0, kill(pid, SIGINT));	/* Ctrl-C: the final dump */
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(0, st);
	ASSERT_NE(NULL, strstr(self->out, "snapshot 1:"));
	/* The module's defaults are back after the session. */
	ASSERT_EQ(PT_ST_DEF_BUF_SIZE, pt_st_get_param("buf_size"));
	ASSERT_EQ(PT_ST_DEF_NR_BUFS, pt_st_get_param("nr_bufs"));
	ASSERT_EQ(0, pt_st_load_file("/tmp/pt-fr.bin", &self->b));
	unlink("/tmp/pt-fr.bin");
	pt_st_count_stream(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	for (int cpu = 0; cpu < PT_ST_MAX_CPUS; cpu++)
		missing += self->d.missing[cpu];
	ASSERT_LT(0, missing);
}

TEST_HARNESS_MAIN
