// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_start_test: a session start that a kernel thread holds back.
 * After the memory map the start waits for a Tasks RCU grace period (so
 * that no allocation preempted across the walk's end fires its event after
 * the start counters); a task that neither blocks nor runs in user space
 * holds such a grace period back for as long as it runs, so the start
 * waits at most a second (PT_TASKS_WAIT_MAX) and then goes on.  With
 * pagetrace_gt's spinning kernel thread (spin_on) the open() must take
 * that second, no less (the wait is there) and not much more (it gives
 * up), and succeed; the kernel log says so; a SIGKILL during the wait
 * ends the open(); the module's unload waits for the grace periods the
 * abandoned waits left running and ends once the thread stops; then the
 * module loads again and a session opens.  The header's session record
 * says when the session began to record (attach_us after start_mono_ns):
 * within the open() call, before the wait, which a start held back makes
 * a second long, and just before the first event of a process that
 * allocates all through the start.  While a start waits, another device's
 * open does not: /dev/pagetrace is no misc device, whose opens share a
 * lock held across the driver's open().  Needs root, pagetrace.ko and
 * pagetrace_gt.ko
 * (pt_selftest.c loads them); skips on a kernel without CONFIG_TASKS_RCU,
 * where the wait is a normal RCU grace period that no kernel thread can
 * hold back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV	"/dev/pagetrace"

/* The start's longest wait (module/session.c), and how late it may end. */
#define WAIT_MAX_S	1.0
#define LATE_S		10.0

FIXTURE(start)
{
	char report[512];
};

FIXTURE_SETUP(start)
{
	ASSERT_EQ(0, pt_st_gt_load());
}

FIXTURE_TEARDOWN(start)
{
	pt_st_gt_run("spin_off", self->report, sizeof(self->report));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * When the session on @fd could record its first event (CLOCK_MONOTONIC,
 * seconds), from its header; -1 if the header is malformed or says 0.
 */
static double attached_at(int fd, double *header_start)
{
	struct pt_st_buf b = { 0 };
	struct pt_st_hdr hi;
	double at = -1;

	if (!pt_st_read_header(fd, &b, &hi) && !hi.why[0] && hi.have_session &&
	    hi.sess.attach_us) {
		*header_start = hi.h.start_mono_ns / 1e9;
		at = *header_start + hi.sess.attach_us / 1e6;
	}
	pt_st_buf_free(&b);
	return at;
}

TEST_F(start, attach_time_in_open)
{
	double t0, t1, head, at;
	int fd;

	t0 = now_s();
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	t1 = now_s();
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	at = attached_at(fd, &head);
	close(fd);
	ASSERT_LT(0, at) TH_LOG("no attach_us in the session record");
	TH_LOG("open() %.1f ms, first event possible after %.1f ms",
	       (t1 - t0) * 1e3, (at - t0) * 1e3);
	EXPECT_LE(t0, head);
	EXPECT_LT(head, at);
	EXPECT_GE(t1, at);
}

/*
 * A process allocates and frees pages all through the start: the first
 * event outside the snapshot comes right after attach_us, never before
 * it.  attach_us is on CLOCK_MONOTONIC, event times on the trace clock,
 * mapped by the header's pair: exact to the TSC's 128 ns steps where the
 * trace clock is the TSC, and to about a tick where it is local_clock()
 * on a TSC the kernel distrusts (TCG; pt_selftest.h, marks).  After the
 * event, a wide margin for a host that stalls the VM.  Taken before the
 * probes attached (at the header's build), attach_us would be some 150
 * ms early in the VM, where attaching under this load takes that long;
 * taken after the walk, tens of ms late.  Where attaching is quicker than
 * the margin, an early attach_us goes unseen.
 */
#define FIRST_SLACK_TSC_NS	(1000 * 1000ULL)
#define FIRST_SLACK_LOCAL_NS	(5 * 1000 * 1000ULL)
#define FIRST_LATE_NS		(50 * 1000 * 1000ULL)

TEST_F(start, first_event_after_attach)
{
	struct pt_st_trace t = { 0 };
	uint64_t attached, slack, first = UINT64_MAX;
	int fd, st;
	size_t i;
	pid_t pid;

	/* The child allocates on CPU 1 while open() runs on CPU 0. */
	if (pt_st_pin_cpu(1) || pt_st_pin_cpu(0))
		SKIP(return, "needs CPUs 0 and 1 online");
	pid = pt_st_fork_tied();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (pt_st_pin_cpu(1))
			_exit(1);
		for (;;)
			pt_st_touch_and_free(16 * 4096);
	}
	usleep(100000);
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	usleep(100000);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		TH_LOG("the allocating child ended on its own (status %#x)", st);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	close(fd);
	ASSERT_LT(0, t.attach_us) TH_LOG("no attach_us in the session record");
	attached = t.hdr.start_ns + t.attach_us * 1000ULL;
	slack = (t.hdr.flags & PAGETRACE_CLOCK_MASK) == PAGETRACE_CLOCK_TSC ?
		FIRST_SLACK_TSC_NS : FIRST_SLACK_LOCAL_NS;
	for (i = 0; i < t.nr; i++)
		if (!(t.ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) &&
		    t.ev[i].time_ns < first)
			first = t.ev[i].time_ns;
	pt_st_trace_free(&t);
	ASSERT_NE(UINT64_MAX, first) TH_LOG("no event outside the snapshot");
	TH_LOG("attach_us %u; first event %+.3f ms from it", t.attach_us,
	       ((double)first - (double)attached) / 1e6);
	EXPECT_LE(attached - slack, first)
		TH_LOG("an event before the session began to record");
	EXPECT_GE(attached + FIRST_LATE_NS + slack, first)
		TH_LOG("no event for 50 ms after the session began to record");
}

/* A misc device (major 10) this machine has, or NULL. */
static const char *misc_device(void)
{
	static const char *const devs[] = {
		"/dev/cpu_dma_latency", "/dev/loop-control", "/dev/vga_arbiter",
		"/dev/rfkill", "/dev/fuse", "/dev/uinput",
	};
	struct stat st;

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		if (!stat(devs[i], &st) && S_ISCHR(st.st_mode) &&
		    major(st.st_rdev) == 10)
			return devs[i];
	return NULL;
}

/*
 * A child that opens @dev 300 ms from now, into the start's wait: its
 * exit status is how long the open took, in hundredths of a second (up
 * to 254), or 255 if it failed.
 */
static pid_t open_later(const char *dev)
{
	pid_t pid = fork();
	double t;
	int fd;

	if (pid)
		return pid;
	usleep(300000);
	t = now_s();
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	t = now_s() - t;
	_exit(fd < 0 ? 255 : t * 100 < 254 ? (int)(t * 100) : 254);
}

TEST_F_TIMEOUT(start, held_back, 120)
{
	const char *misc = misc_device();
	double t0, took, head, at;
	pid_t pid, misc_pid = -1;
	int fd, kmsg, st;

	ASSERT_EQ(0, pt_st_gt_run("spin_on", self->report, sizeof(self->report)));
	if (strstr(self->report, " skip "))
		SKIP(return, "%s", self->report);
	ASSERT_NE(NULL, strstr(self->report, "held")) TH_LOG("%s", self->report);
	kmsg = pt_st_kmsg_open();

	/* The wait is there, and gives up: about a second, then a session. */
	if (misc)
		misc_pid = open_later(misc);
	t0 = now_s();
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	took = now_s() - t0;
	if (misc_pid > 0) {
		ASSERT_EQ(misc_pid, waitpid(misc_pid, &st, 0));
		ASSERT_TRUE(WIFEXITED(st));
		EXPECT_NE(255, WEXITSTATUS(st)) TH_LOG("open %s failed", misc);
		TH_LOG("open(%s) during the start took %.2f s", misc, WEXITSTATUS(st) / 100.0);
		EXPECT_GT(20, WEXITSTATUS(st))
			TH_LOG("open(%s) waited for /dev/pagetrace's start", misc);
	} else {
		TH_LOG("no misc device here: another device's open is not tried");
	}
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	at = attached_at(fd, &head);
	close(fd);
	TH_LOG("open() took %.2f s with Tasks RCU held back", took);
	EXPECT_LE(WAIT_MAX_S * 0.9, took) TH_LOG("the start did not wait for Tasks RCU");
	/* The probes attached, and the session recorded, before the wait. */
	EXPECT_LT(0, at) TH_LOG("no attach_us in the session record");
	EXPECT_LE(WAIT_MAX_S * 0.9, t0 + took - at)
		TH_LOG("attach_us %.3f s into a start of %.3f s", at - head, took);
	EXPECT_GE(LATE_S, took) TH_LOG("the start's wait did not give up");
	if (kmsg >= 0) {
		static char log[1 << 16];

		pt_st_kmsg_read(kmsg, log, sizeof(log));
		EXPECT_NE(NULL, strstr(log, "before a Tasks RCU grace period ended"));
		close(kmsg);
	}

	/* A fatal signal ends a start that waits. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		fd = open(DEV, O_RDONLY | O_CLOEXEC);
		_exit(fd < 0 ? 2 : 3);
	}
	usleep(300000);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	TH_LOG("the second open() %s", WIFSIGNALED(st) ? "was killed" : "had returned");

	/*
	 * The waits given up on are still running: the module's exit waits
	 * for them (its unload is held back as long as the grace period),
	 * and ends once the thread stops.
	 */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(pt_st_mod_unload() ? 1 : 0);
	usleep(500000);
	EXPECT_EQ(0, waitpid(pid, &st, WNOHANG))
		TH_LOG("the module unloaded while a grace period it waits for was held back");
	ASSERT_EQ(0, pt_st_gt_run("spin_off", self->report, sizeof(self->report)));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("the unload failed");

	/* Nothing left behind: the module loads again and a session opens. */
	ASSERT_EQ(0, pt_st_mod_reload(NULL));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open after the held-back starts: %s", strerror(errno));
	close(fd);
}

TEST_HARNESS_MAIN
