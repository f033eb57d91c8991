// SPDX-License-Identifier: GPL-2.0
/*
 * Memory offlined and onlined again, in a loop, while sessions start (the
 * snapshot walks struct pages and reads the per-CPU lists) and stop (the
 * zone counters read them): every session either starts and decodes, or
 * is refused with EBUSY while memory is being offlined; an offline that
 * comes while the module reads is refused with EBUSY (module/memhotplug.c);
 * no splat.  Needs memory blocks that can go offline
 * (/sys/devices/system/memory, CONFIG_MEMORY_HOTREMOVE); skips without.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define MEMDIR		"/sys/devices/system/memory"
#define SESSIONS	12
/*
 * Sessions are started for this long at most: a start may wait for the
 * offline running beside it (its Tasks RCU grace period, on a slow RT
 * guest), and the harness kills the test at 30 s.
 */
#define SESSIONS_NS	(20 * 1000000000ull)

/*
 * A memory block that can go offline now (tried from the highest down,
 * and put back online): its number, its state file in @path; or -1.
 */
static int offlinable_block(char *path, size_t len)
{
	DIR *d = opendir(MEMDIR);
	struct dirent *e;
	int top = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int n;

		if (sscanf(e->d_name, "memory%d", &n) == 1 && n > top)
			top = n;
	}
	closedir(d);
	for (int n = top; n > 0 && n > top - 8; n--) {
		snprintf(path, len, MEMDIR "/memory%d/state", n);
		if (access(path, W_OK) || pt_st_write_file(path, "offline"))
			continue;
		if (pt_st_write_file(path, "online"))
			return -1;
		return n;
	}
	return -1;
}

/* Offline and online @path until killed; counts the offlines that worked. */
static void cycle(const char *path, int done_fd)
{
	unsigned int n[2] = { 0, 0 };	/* offlined, refused */

	for (;;) {
		int ret = pt_st_write_file(path, "offline");

		if (!ret)
			n[0]++;
		else if (ret == -EBUSY)
			n[1]++;
		pt_st_write_file(path, "online");
		if (write(done_fd, n, sizeof(n)) < 0)
			_exit(1);
	}
}

TEST(offline_while_tracing)
{
	char path[256], splats[4096];
	unsigned int started = 0, busy = 0, n[2] = { 0, 0 }, v[2];
	uint64_t deadline;
	int kmsg, p[2], block;
	pid_t pid;

	block = offlinable_block(path, sizeof(path));
	if (block < 0)
		SKIP(return, "no memory block here can go offline (CONFIG_MEMORY_HOTREMOVE, or all in use)");
	kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, pipe(p));
	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	pid = pt_st_fork_tied();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(p[0]);
		cycle(path, p[1]);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);

	deadline = pt_st_mono_ns() + SESSIONS_NS;
	for (int i = 0; i < SESSIONS && pt_st_mono_ns() < deadline; i++) {
		struct pt_st_buf b = { 0 };
		struct pt_st_hdr hi;
		int fd = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			ASSERT_EQ(EBUSY, errno);
			busy++;
			continue;
		}
		ASSERT_EQ(0, pt_st_read_header(fd, &b, &hi));
		usleep(100000);
		ASSERT_EQ(0, ioctl(fd, PAGETRACE_IOC_STOP));
		ASSERT_EQ(0, pt_st_buf_drain(fd, &b));
		close(fd);
		{
			struct pt_st_counts d;

			pt_st_count_stream(&b, &d, 0);
			EXPECT_EQ(0, d.err) TH_LOG("%s", d.why);
		}
		pt_st_buf_free(&b);
		started++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	while (read(p[0], v, sizeof(v)) == sizeof(v))
		memcpy(n, v, sizeof(n));
	close(p[0]);
	pt_st_write_file(path, "online");
	TH_LOG("memory block %d: %u offlines went through, %u refused (EBUSY); %u sessions started, %u refused",
	       block, n[0], n[1], started, busy);
	EXPECT_LT(0, started);
	EXPECT_EQ(0, pt_st_kmsg_splats(kmsg, splats, sizeof(splats)))
		TH_LOG("%s", splats);
	close(kmsg);
}

TEST_HARNESS_MAIN
