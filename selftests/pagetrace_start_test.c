// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_start_test: a session start its opener can give up on.  After
 * the memory map the start waits for a Tasks RCU grace period (so that no
 * allocation preempted across the walk's end fires its event after the
 * start counters); a task that neither blocks nor runs in user space
 * holds such a grace period back for as long as it runs.  With
 * pagetrace_gt's spinning kernel thread (spin_on) the open() must still be
 * waiting after two seconds, a SIGKILL must end it at once, and once the
 * thread stops a session opens again and the module unloads (module exit
 * waits for the callback the abandoned wait left queued).  Needs root,
 * pagetrace.ko and pagetrace_gt.ko (pt_selftest.c loads them); skips on a
 * kernel without CONFIG_TASKS_RCU, where the wait is a normal RCU grace
 * period that no kernel thread can hold back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV	"/dev/pagetrace"

/* How long an open() held back must stay waiting, and a killed one may take. */
#define HELD_S		2
#define KILLED_S	10

FIXTURE(start)
{
	char report[512];
	pid_t child;
};

FIXTURE_SETUP(start)
{
	self->child = -1;
	ASSERT_EQ(0, pt_st_gt_load());
}

FIXTURE_TEARDOWN(start)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	pt_st_gt_run("spin_off", self->report, sizeof(self->report));
}

/* waitpid() for up to @secs: the status, or -1 if it still runs. */
static int wait_for(pid_t pid, int secs)
{
	int i, st;

	for (i = 0; i < secs * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(100000);
	}
	return -1;
}

/* The kernel stack of @pid, one line, for the log. */
static const char *stack_of(pid_t pid)
{
	static char buf[1024];
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return buf;
}

TEST_F_TIMEOUT(start, killed_while_waiting, 120)
{
	int st, dev;

	ASSERT_EQ(0, pt_st_gt_run("spin_on", self->report, sizeof(self->report)));
	if (strstr(self->report, " skip "))
		SKIP(return, "%s", self->report);
	ASSERT_NE(NULL, strstr(self->report, "held")) TH_LOG("%s", self->report);

	self->child = fork();
	ASSERT_LE(0, self->child);
	if (self->child == 0) {
		int fd = open(DEV, O_RDONLY | O_CLOEXEC);

		/* Returning at all while the thread spins is the failure. */
		_exit(fd < 0 ? 2 : 3);
	}
	st = wait_for(self->child, HELD_S);
	ASSERT_EQ(-1, st) TH_LOG("open() returned (exit %d) while a kernel thread held Tasks RCU back: the start does not wait",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	TH_LOG("open() waiting after %d s: %s", HELD_S, stack_of(self->child));

	ASSERT_EQ(0, kill(self->child, SIGKILL));
	st = wait_for(self->child, KILLED_S);
	ASSERT_NE(-1, st) TH_LOG("open() not ended %d s after SIGKILL: %s", KILLED_S,
				 stack_of(self->child));
	self->child = -1;
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

	/* The given-up start left nothing behind: a session opens again. */
	ASSERT_EQ(0, pt_st_gt_run("spin_off", self->report, sizeof(self->report)));
	dev = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev) TH_LOG("open after the killed start: %s", strerror(errno));
	close(dev);
	/* And the module unloads, its queued callback run first. */
	EXPECT_EQ(0, pt_st_mod_reload(NULL));
}

TEST_HARNESS_MAIN
