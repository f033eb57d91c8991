// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace record --trigger without the module: the expression parser
 * (what is accepted, what is refused and why; inuse's page counts and
 * sizes), the trigger files' names,
 * --max-files pruning, and the oom counter read from the host's
 * /proc/vmstat.  The triggers firing for real are tested in the VM
 * (selftests/pagetrace_trigger_test.c).
 *
 * The sources are compiled in: they belong to the CLI, not the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cmd/trigger.c"
#include "../cmd/trigger_file.c"
#include "kselftest_harness.h"

static int parse(const char *expr, struct trigger *t, char *err)
{
	err[0] = '\0';
	return trigger_parse(expr, t, err, 256);
}

TEST(simple)
{
	struct trigger t;
	char err[256];

	ASSERT_EQ(0, parse("oom", &t, err));
	EXPECT_EQ(TRIGGER_OOM, t.kind);
	EXPECT_EQ(-1, t.fd);
	EXPECT_STREQ("oom", trigger_name(&t));
	ASSERT_EQ(0, parse("signal", &t, err));
	EXPECT_EQ(TRIGGER_SIGNAL, t.kind);
	EXPECT_STREQ("signal", trigger_name(&t));
	ASSERT_EQ(0, parse("sigusr1", &t, err));
	EXPECT_EQ(TRIGGER_SIGNAL, t.kind);
}

TEST(psi_system)
{
	struct trigger t;
	char err[256];

	ASSERT_EQ(0, parse("psi=some:150000/1000000", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ(TRIGGER_PSI, t.kind);
	EXPECT_FALSE(t.full);
	EXPECT_EQ(150000, t.stall_us);
	EXPECT_EQ(1000000, t.window_us);
	EXPECT_STREQ("/proc/pressure/memory", t.path);
	EXPECT_STREQ("psi=some:150000/1000000", t.expr);
	ASSERT_EQ(0, parse("psi=full:500000/500000", &t, err)) TH_LOG("%s", err);
	EXPECT_TRUE(t.full);
	ASSERT_EQ(0, parse("psi=some:1/10000000", &t, err)) TH_LOG("%s", err);
}

TEST(psi_cgroup)
{
	struct trigger t;
	char err[256];

	ASSERT_EQ(0, parse("psi=full:100000/2000000@/sys/fs/cgroup/app", &t, err));
	EXPECT_STREQ("/sys/fs/cgroup/app/memory.pressure", t.path);
	ASSERT_EQ(0, parse("psi=some:100000/2000000@/sys/fs/cgroup/app/", &t, err));
	EXPECT_STREQ("/sys/fs/cgroup/app/memory.pressure", t.path);
	ASSERT_EQ(0, parse("psi=some:100000/2000000@/sys/fs/cgroup/a/memory.pressure",
			   &t, err));
	EXPECT_STREQ("/sys/fs/cgroup/a/memory.pressure", t.path);
	ASSERT_EQ(0, parse("psi=some:100000/2000000@/proc/pressure/memory", &t, err));
	EXPECT_STREQ("/proc/pressure/memory", t.path);
}

/* inuse>PAGES: a page count, or a size in bytes made whole pages. */
TEST(inuse)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct trigger t;
	char err[256];

	ASSERT_EQ(0, parse("inuse>500000", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ(TRIGGER_INUSE, t.kind);
	EXPECT_EQ(500000, t.inuse_limit);
	EXPECT_EQ(-1, t.fd);
	EXPECT_EQ(NULL, t.ring);
	EXPECT_STREQ("inuse", trigger_name(&t));
	EXPECT_STREQ("inuse>500000", t.expr);
	ASSERT_EQ(0, parse("inuse>1", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ(1, t.inuse_limit);
	ASSERT_EQ(0, parse("inuse>2G", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ((2ULL << 30) / page, t.inuse_limit);
	ASSERT_EQ(0, parse("inuse>2GiB", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ((2ULL << 30) / page, t.inuse_limit);
	ASSERT_EQ(0, parse("inuse>512M", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ((512ULL << 20) / page, t.inuse_limit);
	ASSERT_EQ(0, parse("inuse>1T", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ((1ULL << 40) / page, t.inuse_limit);
	/* Rounded down to whole pages. */
	ASSERT_EQ(0, parse("inuse>1025k", &t, err)) TH_LOG("%s", err);
	EXPECT_EQ((1025ULL << 10) / page, t.inuse_limit);
	/* Not armed: no session to count in. */
	EXPECT_EQ(-EINVAL, trigger_arm(&t, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "no session"));
}

/* Each refusal says what was wrong. */
TEST(refused)
{
	static const struct { const char *expr, *why; } bad[] = {
		{ "", "unknown trigger" },
		{ "oomkill", "unknown trigger" },
		{ "OOM", "unknown trigger" },
		{ "inuse", "expected inuse>PAGES" },
		{ "inuse<1000", "expected inuse>PAGES" },
		{ "inuse>=1000", "whole number of pages" },
		{ "inuse>", "whole number of pages" },
		{ "inuse>0", "at least one page" },
		{ "inuse>0G", "at least one page" },
		{ "inuse>1K", "at least one page" },
		{ "inuse>-5", "whole number of pages" },
		{ "inuse>+5", "whole number of pages" },
		{ "inuse> 5", "whole number of pages" },
		{ "inuse>5 ", "whole number of pages" },
		{ "inuse>12x", "whole number of pages" },
		{ "inuse>1.5G", "whole number of pages" },
		{ "inuse>2GB2", "whole number of pages" },
		{ "inuse>G", "whole number of pages" },
		{ "inuse>0x100", "whole number of pages" },
		{ "inuse>99999999999999999999", "too large" },
		{ "inuse>9999999999T", "too large" },
		{ "inuse>9223372036854775808", "too large" },
		{ "inusage>5", "unknown trigger" },
		{ "inuses>5", "expected inuse>PAGES" },
		{ "psi=", "expected psi=some" },
		{ "psi=half:1/1000000", "expected psi=some" },
		{ "psi=some:", "expected STALL_US/WINDOW_US" },
		{ "psi=some:1000", "expected STALL_US/WINDOW_US" },
		{ "psi=some:@/x/1000", "expected STALL_US/WINDOW_US" },
		{ "psi=some:/1000000", "whole numbers" },
		{ "psi=some:1ms/1000000", "whole numbers" },
		{ "psi=some:-1/1000000", "whole numbers" },
		{ "psi=some:1000/", "whole numbers" },
		{ "psi=some:1000/1000000x", "whole numbers" },
		{ "psi=some:1000/99999999999999999999999", "whole numbers" },
		{ "psi=some:100/499999", "out of the kernel's range" },
		{ "psi=some:100/10000001", "out of the kernel's range" },
		{ "psi=some:0/1000000", "more than 0" },
		{ "psi=some:1000001/1000000", "at most the window" },
		{ "psi=some:1000/1000000@", "absolute path" },
		{ "psi=some:1000/1000000@sys/fs/cgroup", "absolute path" },
		{ "signal=1", "unknown trigger" },
	};
	struct trigger t;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, parse(bad[i].expr, &t, err)) TH_LOG("'%s'", bad[i].expr);
		EXPECT_NE(NULL, strstr(err, bad[i].why))
			TH_LOG("'%s': '%s' lacks '%s'", bad[i].expr, err, bad[i].why);
	}
}

TEST(too_long)
{
	char expr[600], err[256];
	struct trigger t;

	memset(expr, 'a', sizeof(expr) - 1);
	expr[sizeof(expr) - 1] = '\0';
	EXPECT_EQ(-EINVAL, parse(expr, &t, err));
	EXPECT_NE(NULL, strstr(err, "too long"));
}

TEST(file_path)
{
	struct trigger t;
	char err[256], buf[128];

	ASSERT_EQ(0, parse("oom", &t, err));
	/* 2026-11-26 15:04:05 UTC */
	ASSERT_EQ(0, trigger_file_path(buf, sizeof(buf), "/var/d", &t, 3, 1795705445));
	EXPECT_STREQ("/var/d/pagetrace-20261126-150405-oom-3.bin", buf);
	EXPECT_EQ(-ENAMETOOLONG, trigger_file_path(buf, 20, "/var/d", &t, 3, 0));
}

static void touch(const char *dir, const char *name, time_t mtime)
{
	char path[256];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		futimens(fd, ts);
		close(fd);
	}
}

static bool exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* --max-files: the oldest .bin go, with their .json; other files stay. */
TEST(prune)
{
	char dir[] = "/tmp/pt-test-prune-XXXXXX";

	ASSERT_NE(NULL, mkdtemp(dir));
	touch(dir, "pagetrace-20260101-000003-oom-1.bin", 3000);
	touch(dir, "pagetrace-20260101-000003-oom-1.json", 3000);
	touch(dir, "pagetrace-20260101-000001-psi-2.bin", 1000);	/* oldest by mtime */
	touch(dir, "pagetrace-20260101-000001-psi-2.json", 1000);
	touch(dir, "pagetrace-20260101-000002-signal-3.bin", 2000);
	touch(dir, "pagetrace-20260101-000002-signal-3.json", 2000);
	touch(dir, "other.bin", 1);
	touch(dir, "pagetrace-notes.txt", 1);
	EXPECT_EQ(0, trigger_prune(dir, 3));
	EXPECT_EQ(1, trigger_prune(dir, 2));
	EXPECT_FALSE(exists(dir, "pagetrace-20260101-000001-psi-2.bin"));
	EXPECT_FALSE(exists(dir, "pagetrace-20260101-000001-psi-2.json"));
	EXPECT_TRUE(exists(dir, "pagetrace-20260101-000002-signal-3.bin"));
	EXPECT_EQ(1, trigger_prune(dir, 1));
	EXPECT_FALSE(exists(dir, "pagetrace-20260101-000002-signal-3.json"));
	EXPECT_TRUE(exists(dir, "pagetrace-20260101-000003-oom-1.bin"));
	EXPECT_TRUE(exists(dir, "pagetrace-20260101-000003-oom-1.json"));
	EXPECT_TRUE(exists(dir, "other.bin"));
	EXPECT_TRUE(exists(dir, "pagetrace-notes.txt"));
	EXPECT_EQ(-ENOENT, trigger_prune("/nonexistent/pt", 1));
	{
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		EXPECT_EQ(0, system(cmd));
	}
}

/* The host's own /proc/vmstat has the counter oom watches (since 4.13). */
TEST(oom_counter)
{
	struct trigger t;
	char err[256];
	uint64_t n;

	if (trigger_read_oom_kills(&n) == -ENOENT)
		SKIP(return, "no oom_kill in /proc/vmstat");
	ASSERT_EQ(0, parse("oom", &t, err));
	ASSERT_EQ(0, trigger_arm(&t, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_LE(n, t.oom_kills);
	/* Nothing was killed in between (or if so, it says by how much). */
	if (trigger_check(&t, 0, err, sizeof(err)) == 1)
		EXPECT_NE(NULL, strstr(err, "oom_kill "));
	trigger_disarm(&t);
}

TEST_HARNESS_MAIN
