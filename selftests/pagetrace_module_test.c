// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_module_test: loading and unloading pagetrace.ko.  Parameters
 * out of range (buf_size, nr_bufs, flush_ms) are refused with EINVAL and
 * a kernel message naming the range; valid ones shape the next session
 * (its header, INFO, buffers rotating at the smaller size), and a change
 * through sysfs the session after.  An attach point this kernel lacks
 * (require=, or an allocator helper the compiler inlined here) refuses
 * the load with ENOENT, naming the symbol and the kernel; partial=1 loads
 * anyway and says in the session record what is missing; hook= and clock=
 * must name an existing choice.  An open session pins the module until
 * it is closed.  The tests of exact load errors need pagetrace.ko's file
 * ($PAGETRACE_KO or ./pagetrace.ko) and skip under modprobe, which
 * reports no errno.  Runs as root with pagetrace.ko loaded (or loads it,
 * pt_selftest.c); every test leaves it loaded with its default
 * parameters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define MOD_SYSFS	"/sys/module/pagetrace"

#define PAGE		4096UL

/* -------------------------------------------------------------- fixture */

/*
 * Sessions are opened without the memory map at start, which would only
 * lengthen them (pagetrace_snapshot_test.c covers it): pt_st_open_dev();
 * teardown turns it back on.
 */
FIXTURE(pt) {
	int			fd;
	int			kmsg;
	struct pt_st_buf	b;
	struct pt_st_hdr	hi;
	struct pt_st_decoded	dec;
};

FIXTURE_SETUP(pt)
{
	self->fd = -1;
	self->kmsg = -1;
	/* Normally a no-op: the runner loaded pagetrace.ko with defaults. */
	ASSERT_EQ(0, pt_st_mod_ensure_default())
		TH_LOG("pagetrace not loaded with default parameters and %s cannot be loaded",
		       pt_st_ko_path() ? pt_st_ko_path() : "modprobe pagetrace");
}

FIXTURE_TEARDOWN(pt)
{
	int ret;

	if (self->fd >= 0)
		close(self->fd);
	if (self->kmsg >= 0)
		close(self->kmsg);
	ret = pt_st_session_cleanup(&self->b, &self->dec);
	/*
	 * No TH_LOG on the EXPECT: after a failed ASSERT the harness's
	 * trigger is still set and would print it even on success.
	 */
	EXPECT_EQ(0, ret);
	if (ret)
		TH_LOG("could not restore pagetrace with default parameters: %s",
		       strerror(-ret));
}

/* Open a session and read its header into self->b / self->hi. */
static int start_session(FIXTURE_DATA(pt) *self, int flags)
{
	return pt_st_start_session(&self->fd, flags, &self->b, &self->hi);
}

/* ----------------------------------------------------------------- tests */

TEST_F_TIMEOUT(pt, rmmod_while_open, 120)
{
	struct pagetrace_info info;
	int fd;

	/* modprobe reports no errno: exact load errors need the file. */
	if (!pt_st_ko_path())
		SKIP(return, "needs pagetrace.ko's file for exact load errors: set PAGETRACE_KO");
	ASSERT_EQ(0, start_session(self, 0));
	/* The open file pins the module: delete_module says EWOULDBLOCK. */
	ASSERT_EQ(-EWOULDBLOCK, pt_st_mod_unload());
	ASSERT_TRUE(pt_st_mod_live());
	ASSERT_EQ(0, access(DEV, F_OK));
	/* and the session goes on. */
	ASSERT_EQ(0, pt_st_info(self->fd, &info));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b));
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	/* Still pinned after STOP: only close ends the session. */
	ASSERT_EQ(-EWOULDBLOCK, pt_st_mod_unload());
	ASSERT_TRUE(pt_st_mod_live());

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_FALSE(pt_st_mod_live());
	ASSERT_NE(0, access(MOD_SYSFS, F_OK));
	ASSERT_TRUE(pt_st_wait_dev(false, 2000));
	fd = pt_st_open_dev(O_RDONLY);
	ASSERT_EQ(-1, fd);
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(-ENOENT, pt_st_mod_unload());

	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(pt_st_mod_live());
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
	ASSERT_EQ(-EEXIST, pt_st_mod_load(""));
	pt_st_buf_free(&self->b);
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(0, memcmp(self->hi.h.magic, "PGTRACE", 8));
}

TEST_F_TIMEOUT(pt, params_invalid, 180)
{
	static const struct {
		const char *params, *name;
		unsigned int min, max;
	} bad[] = {
		{ "buf_size=1000",	"buf_size", 4096, 16 << 20 },
		{ "buf_size=0",		"buf_size", 4096, 16 << 20 },
		{ "buf_size=6000",	"buf_size", 4096, 16 << 20 },	/* not a page multiple */
		{ "buf_size=33554432",	"buf_size", 4096, 16 << 20 },
		{ "nr_bufs=1",		"nr_bufs",  2, 4096 },
		{ "nr_bufs=100000",	"nr_bufs",  2, 4096 },
		{ "flush_ms=0",		"flush_ms", 10, 500 },
		{ "flush_ms=501",	"flush_ms", 10, 500 },
		{ "flush_ms=abc",	"flush_ms", 10, 500 },
		{ "nr_bufs=4 flush_ms=5", "flush_ms", 10, 500 },
	};
	static char log[1 << 16];

	/* modprobe reports no errno: exact load errors need the file. */
	if (!pt_st_ko_path())
		SKIP(return, "needs pagetrace.ko's file for exact load errors: set PAGETRACE_KO");
	self->kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_FALSE(pt_st_mod_live());

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char range[64], *line;
		bool found = false;
		int ret;

		ASSERT_LE(0, lseek(self->kmsg, 0, SEEK_END));
		ret = pt_st_mod_load(bad[i].params);
		ASSERT_EQ(-EINVAL, ret) TH_LOG("\"%s\" loaded (%d)", bad[i].params, ret);
		ASSERT_FALSE(pt_st_mod_live());
		ASSERT_FALSE(pt_st_wait_dev(true, 0));
		pt_st_kmsg_read(self->kmsg, log, sizeof(log));
		snprintf(range, sizeof(range), "%u..%u", bad[i].min, bad[i].max);
		for (line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
			if (strstr(line, bad[i].name) && strstr(line, range)) {
				found = true;
				break;
			}
		}
		ASSERT_TRUE(found)
			TH_LOG("\"%s\": no kernel message naming %s and %s",
			       bad[i].params, bad[i].name, range);
	}
	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(pt_st_mod_is_default());
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
}

TEST_F_TIMEOUT(pt, params_valid, 180)
{
	struct pagetrace_info info;
	struct pt_st_raw_cpu *raw;
	uint64_t full = 0;
	char why[256];
	uint32_t cap = (8192 - 32) / 8;

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load("buf_size=8192 nr_bufs=4 flush_ms=500"));
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
	ASSERT_EQ(8192, pt_st_get_param("buf_size"));
	ASSERT_EQ(4, pt_st_get_param("nr_bufs"));
	ASSERT_EQ(500, pt_st_get_param("flush_ms"));

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(8192, self->hi.h.chunk_size);
	ASSERT_EQ(4, self->hi.sess.nr_bufs);
	ASSERT_EQ(500, self->hi.sess.flush_ms);
	ASSERT_EQ(0, pt_st_info(self->fd, &info));
	ASSERT_EQ(8192, info.chunk_size);
	ASSERT_EQ(4, info.nr_bufs);
	ASSERT_EQ(500, info.flush_ms);

	/*
	 * ~2000 events on this CPU fill 8 KiB buffers (1020 words each)
	 * faster than the timer (which flushes only buffers that saw no
	 * rotation for a whole period) closes them.
	 */
	pt_st_touch_and_free(4 << 20);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b));
	raw = calloc(self->hi.h.nr_cpus, sizeof(*raw));
	ASSERT_NE(NULL, raw);
	ASSERT_EQ(self->b.len, pt_st_walk_chunks(&self->b, &self->hi.h, raw, why,
					   sizeof(why)));
	ASSERT_STREQ("", why);
	for (unsigned int cpu = 0; cpu < self->hi.h.nr_cpus; cpu++) {
		ASSERT_GE(cap, raw[cpu].max_words);
		full += raw[cpu].full_chunks;
	}
	free(raw);
	/* Buffers rotated at the smaller size. */
	ASSERT_LE(1, full);
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);

	/* Parameters changed through sysfs apply to the next session. */
	close(self->fd);
	self->fd = -1;
	pt_st_buf_free(&self->b);
	{
		int fd = open(MOD_SYSFS "/parameters/nr_bufs", O_WRONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(-1, write(fd, "1", 1));
		ASSERT_EQ(EINVAL, errno);
		ASSERT_EQ(2, write(fd, "7\n", 2));
		close(fd);
	}
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_EQ(0, pt_st_info(self->fd, &info));
	ASSERT_EQ(7, info.nr_bufs);
	ASSERT_EQ(8192, info.chunk_size);
}

/*
 * A kernel whose allocator lacks a symbol we probe (missing or inlined)
 * must refuse the module with the symbol and the kernel named, not load
 * into a partial trace.  require= adds one more mandatory attach point, so
 * the real registration path meets a name this kernel does not have; and
 * hook= and clock= must name an existing choice.
 */
TEST_F_TIMEOUT(pt, missing_symbol_refused, 180)
{
	/*
	 * Allocator helpers the compiler inlines on some builds: prep_new_page
	 * into get_page_from_freelist() on 6.1 and 6.12 (not on 5.10).  The
	 * first this kernel does not list stands for an inlined function.
	 */
	static const char * const inlined[] = {
		"prep_new_page", "free_unref_page_prepare", "rmqueue_pcplist",
		"__rmqueue_smallest",
	};
	static char inlined_req[64];
	static const char *bad[][2] = {
		{ "require=pagetrace_no_such_function", "pagetrace_no_such_function" },
		{ inlined_req, NULL },
		{ "hook=ftrace", "kprobe, tracepoint, auto" },
		{ "clock=tsc", "auto, local" },
	};
	static char log[1 << 16];
	struct utsname u;

	/* modprobe reports no errno: exact load errors need the file. */
	if (!pt_st_ko_path())
		SKIP(return, "needs pagetrace.ko's file for exact load errors: set PAGETRACE_KO");
	ASSERT_EQ(0, uname(&u));
	for (size_t i = 0; i < sizeof(inlined) / sizeof(inlined[0]); i++) {
		uint64_t start, end;

		if (pt_st_ksym(inlined[i], &start, &end)) {
			snprintf(inlined_req, sizeof(inlined_req), "require=%s",
				 inlined[i]);
			bad[1][1] = inlined[i];
			break;
		}
	}
	ASSERT_NE(NULL, bad[1][1]) TH_LOG("every candidate inlined helper is out of line here");
	self->kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	ASSERT_EQ(0, pt_st_mod_unload());

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool require = strncmp(bad[i][0], "require=", 8) == 0;
		char *line;
		bool found = false;
		int ret;

		ASSERT_LE(0, lseek(self->kmsg, 0, SEEK_END));
		ret = pt_st_mod_load(bad[i][0]);
		ASSERT_NE(0, ret) TH_LOG("\"%s\" loaded", bad[i][0]);
		ASSERT_EQ(require ? -ENOENT : -EINVAL, ret);
		ASSERT_FALSE(pt_st_mod_live());
		pt_st_kmsg_read(self->kmsg, log, sizeof(log));
		for (line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
			if (strstr(line, bad[i][1]) &&
			    (!require || strstr(line, u.release))) {
				found = true;
				break;
			}
		}
		ASSERT_TRUE(found) TH_LOG("\"%s\": no kernel message naming %s%s%s",
					  bad[i][0], bad[i][1], require ? " and " : "",
					  require ? u.release : "");
	}
	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(pt_st_mod_is_default());
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
}

/*
 * partial=1 loads where something cannot be hooked (here the function
 * require= names), traces the rest, and says in every session record
 * what the trace lacks; a complete session says nothing.
 */
TEST_F_TIMEOUT(pt, partial_says_what_is_missing, 180)
{
	struct pt_st_trace t = { 0 };
	int fd;

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load("partial=1 require=pagetrace_no_such_function"));
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	pt_st_touch_and_free(64 * PAGE);
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	close(fd);
	EXPECT_EQ(PAGETRACE_UNCOVERED_REQUIRED, t.uncovered);
	EXPECT_LT(0, t.nr) TH_LOG("no event traced in a partial session");
	pt_st_trace_free(&t);

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(pt_st_wait_dev(true, 2000));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	close(fd);
	EXPECT_EQ(0, t.uncovered);
	pt_st_trace_free(&t);
	ASSERT_TRUE(pt_st_mod_is_default());
}

TEST_HARNESS_MAIN
