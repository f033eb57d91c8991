// SPDX-License-Identifier: GPL-2.0
/*
 * Closing a session while a CPU is offline.  A buffer that fills on a CPU
 * as it goes down closes there and asks for the reader's wakeup; on
 * PREEMPT_RT that wakeup (an irq_work) runs in the CPU's irq_work thread,
 * which hotplug has parked by then, so it would stay pending until the CPU
 * came back, and the close, which waits for it, with it.  The test fills
 * small buffers on every CPU with an allocation storm, takes CPU 1 down
 * and up under it, and closes the session each time with CPU 1 down: every
 * close must return within seconds.  On kernels without PREEMPT_RT the
 * same run checks that nothing else in the close waits for CPU 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define MAX_KIDS	64
#define CLOSE_LIMIT_S	30

/* A child that maps, touches and unmaps 1 MiB in a loop until killed. */
static void churn(void)
{
	for (;;) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		for (size_t off = 0; off < (1 << 20); off += 4096)
			p[off] = 1;
		munmap(p, 1 << 20);
	}
}

struct closer {
	int fd;
	volatile int done;
};

static void *close_fn(void *arg)
{
	struct closer *c = arg;

	close(c->fd);
	c->done = 1;
	return NULL;
}

/* close(@fd) in a thread; whether it returned within @secs. */
static bool close_within(int fd, int secs)
{
	static struct closer c;	/* outlives a close that never returns */
	pthread_t t;

	c.fd = fd;
	c.done = 0;
	if (pthread_create(&t, NULL, close_fn, &c))
		return false;
	for (int i = 0; i < secs * 10 && !c.done; i++)
		usleep(100000);
	if (!c.done)
		return false;
	pthread_join(t, NULL);
	return true;
}

FIXTURE(oc)
{
	pid_t kids[MAX_KIDS];
	int nkids;
};

FIXTURE_SETUP(oc)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	self->nkids = 0;
	if (access(PT_ST_CPU1_ONLINE, W_OK))
		SKIP(return, "no %s: needs 2 CPUs and CONFIG_HOTPLUG_CPU", PT_ST_CPU1_ONLINE);
	if (pt_st_cpu_unplug_hangs())
		SKIP(return, "%s", pt_st_cpu_unplug_hangs());
	ASSERT_EQ(0, pt_st_cpu1_set(true));
	/* One-page buffers: one closes every few hundred events. */
	ASSERT_EQ(0, pt_st_mod_reload("buf_size=4096 nr_bufs=4 flush_ms=10"));
	for (int i = 0; i < ncpu * 2 && i < MAX_KIDS; i++) {
		pid_t pid = pt_st_fork_tied();

		ASSERT_LE(0, pid);
		if (!pid)
			churn();
		self->kids[self->nkids++] = pid;
	}
}

FIXTURE_TEARDOWN(oc)
{
	for (int i = 0; i < self->nkids; i++) {
		kill(self->kids[i], SIGKILL);
		waitpid(self->kids[i], NULL, 0);
	}
	pt_st_cpu1_set(true);
	pt_st_mod_reload("");
}

TEST_F_TIMEOUT(oc, close_with_cpu1_down, 600)
{
	int rounds = 20, fd;

	for (int i = 0; i < rounds; i++) {
		fd = open(DEV, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("round %d: open: %s", i, strerror(errno));
		/* Nobody reads: the buffers fill and close on every CPU. */
		usleep(50000);
		ASSERT_EQ(0, pt_st_cpu1_set(false)) TH_LOG("round %d: offline", i);
		usleep(20000);
		ASSERT_TRUE(close_within(fd, CLOSE_LIMIT_S))
			TH_LOG("round %d: close() has not returned after %d s with cpu 1 offline",
			       i, CLOSE_LIMIT_S);
		ASSERT_EQ(0, pt_st_cpu1_set(true)) TH_LOG("round %d: online", i);
	}
}

TEST_HARNESS_MAIN
