// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_device_test: /dev/pagetrace itself, checked against the real
 * kernel.  The header a session starts with, parsed here without the
 * library (every field and record, the clock pair against our own
 * clocks) and then read by libpagetrace; PAGETRACE_IOC_INFO against it
 * and the module's parameters; one session at a time (EBUSY, also from
 * another process); who may open it (mode 0600, then CAP_SYS_ADMIN, each
 * tried as nobody and as root without it); read() into bad buffers
 * (EFAULT, and nothing of the header or of a chunk lost); and the ioctls'
 * argument checks (unknown numbers, sizes and directions, bad pointers,
 * reserved fields, short arrays).  The stream after the header is
 * pagetrace_stream_test's.  Runs as root with pagetrace.ko loaded (or
 * loads it, pt_selftest.c); every test leaves it loaded with its default
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
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"

#define NOBODY		65534
#define PAGE		4096UL

/* An address no process has mapped; volatile so the compiler lets it be. */
static void *volatile bad_addr = (void *)1;

/* --------------------------------------------------------------- helpers */

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A bool module parameter from sysfs: "Y" or "1". */
static bool param_on(const char *name)
{
	char s[8];

	return pt_st_get_param_str(name, s, sizeof(s)) > 0 &&
	       (s[0] == 'Y' || s[0] == '1');
}

/* CPU ids below this: the last id in /sys/devices/system/cpu/possible + 1. */
static unsigned int possible_cpu_ids(void)
{
	char s[256] = "", *p;
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, s, sizeof(s) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	s[n] = 0;
	p = s + strcspn(s, "\n");
	while (p > s && (p[-1] >= '0' && p[-1] <= '9'))
		p--;
	return strtoul(p, NULL, 10) + 1;
}

/* -------------------------------------------------------------- fixture */

/*
 * These tests are about the device's semantics, and the memory map at
 * session start would only add to its header and the stream
 * (pagetrace_snapshot_test.c covers that): sessions are opened without it
 * (pt_st_open_dev(); teardown turns it back on).
 */
FIXTURE(pt) {
	int			fd;
	bool			chmodded;
	struct pt_st_buf	b;
	struct pt_st_hdr	hi;
	struct pt_st_decoded	dec;
};

FIXTURE_SETUP(pt)
{
	self->fd = -1;
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
	if (self->chmodded)
		chmod(DEV, 0600);
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

TEST_F(pt, header)
{
	uint64_t mono0, mono1, real0, real1;
	const struct pagetrace_header *h = &self->hi.h;
	const struct pgtrace_zone *zones;
	struct pgtrace_reader *r = NULL;
	struct utsname uts;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	ASSERT_EQ(0, uname(&uts));
	real0 = real_ns();
	mono0 = pt_st_mono_ns();
	self->fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC);
	mono1 = pt_st_mono_ns();
	real1 = real_ns();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", DEV, strerror(errno));
	ASSERT_EQ(0, pt_st_read_header(self->fd, &self->b, &self->hi));
	ASSERT_STREQ("", self->hi.why);

	ASSERT_EQ(0, memcmp(h->magic, "PGTRACE", 8));
	ASSERT_EQ(1, h->version);
	ASSERT_EQ(0, h->header_size % 8);
	ASSERT_LE(64, h->header_size);
	ASSERT_EQ(self->b.len, h->header_size);
	ASSERT_EQ(12, h->page_shift);
	ASSERT_EQ(sysconf(_SC_PAGESIZE), 1L << h->page_shift);
	ASSERT_EQ(7, h->time_lost_bits);
	ASSERT_EQ(16, h->time_delta_bits);
	ASSERT_LE(online, (long)h->nr_cpus);
	ASSERT_EQ(possible_cpu_ids(), h->nr_cpus);
	ASSERT_EQ(pt_st_get_param("buf_size"), (long)h->chunk_size);
	/* Which of the two: pagetrace_clock_test. */
	ASSERT_TRUE((h->flags & PAGETRACE_CLOCK_MASK) == PAGETRACE_CLOCK_LOCAL ||
		    (h->flags & PAGETRACE_CLOCK_MASK) == PAGETRACE_CLOCK_TSC);
	/* No flight recorder or snapshot here; task records if tasks=1. */
	ASSERT_EQ(param_on("tasks") ? PAGETRACE_FLAG_TASKS : 0,
		  h->flags & ~PAGETRACE_CLOCK_MASK);
	/* The same clock as ours, sampled inside open(). */
	ASSERT_LE(mono0, h->start_mono_ns);
	ASSERT_GE(mono1, h->start_mono_ns);
	ASSERT_LE(real0 - 1000000000ULL, h->start_real_ns);
	ASSERT_GE(real1 + 1000000000ULL, h->start_real_ns);
	ASSERT_NE(0, h->start_ns);

	/* Records */
	ASSERT_TRUE(self->hi.have_end);
	ASSERT_TRUE(self->hi.have_release);
	ASSERT_STREQ(uts.release, self->hi.release);
	ASSERT_TRUE(self->hi.have_session);
	ASSERT_EQ(pt_st_get_param("nr_bufs"), (long)self->hi.sess.nr_bufs);
	ASSERT_EQ(pt_st_get_param("flush_ms"), (long)self->hi.sess.flush_ms);
	ASSERT_GE(PAGETRACE_BACKEND_TRACEPOINT, self->hi.sess.backend);
	ASSERT_EQ(0, self->hi.sess.uncovered);
	for (size_t i = 0; i < ARRAY_SIZE(self->hi.sess.reserved); i++) {
		ASSERT_EQ(0, self->hi.sess.reserved[i]);
	}
	/* Recording began inside open(). */
	ASSERT_LT(0, self->hi.sess.attach_us);
	ASSERT_GE(mono1, h->start_mono_ns + self->hi.sess.attach_us * 1000ULL);
	if ((h->flags & PAGETRACE_CLOCK_MASK) != PAGETRACE_CLOCK_TSC) {
		ASSERT_EQ(0, self->hi.sess.clock_error_ns);
	} else {
		/* Half of two TSC reads around local_clock(): not 10 us. */
		ASSERT_LT(0, self->hi.sess.clock_error_ns);
		ASSERT_GT(10000, self->hi.sess.clock_error_ns);
	}
	ASSERT_LE(1, self->hi.nr_zones);
	for (unsigned int i = 0; i < self->hi.nr_zones; i++) {
		const struct pagetrace_rec_zone *z = &self->hi.zones[i];

		TH_LOG("zone %u: node %u zone %u %.16s pfn %#llx..%#llx present %llu",
		       i, z->node, z->zone, (const char *)z->name,
		       (unsigned long long)z->start_pfn,
		       (unsigned long long)z->end_pfn,
		       (unsigned long long)z->present_pages);
		ASSERT_LT(z->start_pfn, z->end_pfn);
		ASSERT_LT(0, z->present_pages);
		ASSERT_GE(z->end_pfn - z->start_pfn, z->present_pages);
		ASSERT_GT(6, z->zone);	/* below MAX_NR_ZONES */
		ASSERT_NE(0, z->name[0]);
		ASSERT_NE(NULL, memchr(z->name, 0, sizeof(z->name)));
		/* Zones of one node do not overlap. */
		for (unsigned int j = 0; j < i; j++) {
			const struct pagetrace_rec_zone *y = &self->hi.zones[j];

			if (y->node == z->node) {
				ASSERT_TRUE(z->start_pfn >= y->end_pfn ||
					    y->start_pfn >= z->end_pfn);
			}
		}
	}

	/* The library reads the same header straight off the device. */
	close(self->fd);
	self->fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ret = pgtrace_reader_open_fd(&r, self->fd, 0);
	ASSERT_EQ(0, ret) TH_LOG("pgtrace_reader_open_fd: %s", r ? pgtrace_reader_error(r) : "");
	ASSERT_EQ(h->header_size, pgtrace_reader_header(r)->header_size);
	ASSERT_EQ(h->chunk_size, pgtrace_reader_header(r)->chunk_size);
	ASSERT_EQ(h->nr_cpus, pgtrace_reader_header(r)->nr_cpus);
	ASSERT_LT(h->start_ns, pgtrace_reader_header(r)->start_ns);
	ASSERT_STREQ(uts.release, pgtrace_reader_kernel_release(r));
	ASSERT_EQ(self->hi.nr_zones, pgtrace_reader_zones(r, &zones));
	for (unsigned int i = 0; i < self->hi.nr_zones; i++) {
		ASSERT_EQ(self->hi.zones[i].start_pfn, zones[i].start_pfn);
		ASSERT_EQ(self->hi.zones[i].end_pfn, zones[i].end_pfn);
		ASSERT_STREQ((const char *)self->hi.zones[i].name, zones[i].name);
	}
	ASSERT_NE(NULL, pgtrace_reader_session(r));
	ASSERT_EQ(self->hi.sess.nr_bufs, pgtrace_reader_session(r)->nr_bufs);
	pgtrace_reader_close(r);
}

TEST_F(pt, info)
{
	struct pagetrace_info info;

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(0, pt_st_info(self->fd, &info));
	ASSERT_EQ(PAGETRACE_VERSION, info.version);
	ASSERT_EQ(self->hi.h.header_size, info.header_size);
	ASSERT_EQ(self->hi.h.chunk_size, info.chunk_size);
	ASSERT_EQ(pt_st_get_param("buf_size"), (long)info.chunk_size);
	ASSERT_EQ(pt_st_get_param("nr_bufs"), (long)info.nr_bufs);
	ASSERT_EQ(pt_st_get_param("flush_ms"), (long)info.flush_ms);
	ASSERT_EQ(self->hi.sess.nr_bufs, info.nr_bufs);
	ASSERT_EQ(self->hi.sess.flush_ms, info.flush_ms);
	ASSERT_EQ(self->hi.sess.backend, info.backend);
	ASSERT_EQ(self->hi.h.nr_cpus, info.nr_cpus);
	ASSERT_EQ(self->hi.h.page_shift, info.page_shift);
	ASSERT_EQ(self->hi.h.flags, info.flags);
	for (int i = 0; i < 7; i++) {
		ASSERT_EQ(0, info.reserved[i]);
	}
}

TEST_F(pt, busy)
{
	struct pt_st_hdr hi;
	struct pt_st_buf b = { 0 };
	int fd2, status;
	pid_t pid;

	ASSERT_EQ(0, start_session(self, 0));
	fd2 = pt_st_open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(-1, fd2);
	ASSERT_EQ(EBUSY, errno);
	fd2 = pt_st_open_dev(O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_EQ(-1, fd2);
	ASSERT_EQ(EBUSY, errno);
	/* Another process too. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(pt_st_open_dev(O_RDONLY) < 0 ? errno : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(EBUSY, WEXITSTATUS(status));
	/* The failed opens did not disturb the session. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));

	close(self->fd);
	self->fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("reopen after close: %s", strerror(errno));
	ASSERT_EQ(0, pt_st_read_header(self->fd, &b, &hi));
	ASSERT_STREQ("", hi.why);
	ASSERT_EQ(0, memcmp(hi.h.magic, "PGTRACE", 8));
	/* A new session: a new start time. */
	ASSERT_LT(self->hi.h.start_ns, hi.h.start_ns);
	pt_st_buf_free(&b);
}

/* In a child: become @uid/@gid, maybe drop CAP_SYS_ADMIN, open; exit errno. */
static int open_as(uid_t uid, gid_t gid, bool drop_sys_admin)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		int fd;

		if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
			_exit(200);
		if (drop_sys_admin) {
			struct __user_cap_header_struct hdr = {
				.version = _LINUX_CAPABILITY_VERSION_3,
			};
			struct __user_cap_data_struct data[2];

			if (syscall(SYS_capget, &hdr, data))
				_exit(201);
			data[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
			data[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
			data[CAP_SYS_ADMIN / 32].inheritable &= ~(1U << (CAP_SYS_ADMIN % 32));
			if (syscall(SYS_capset, &hdr, data))
				_exit(202);
		}
		fd = pt_st_open_dev(O_RDONLY);
		if (fd < 0)
			_exit(errno);
		close(fd);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST_F(pt, eperm)
{
	struct stat st;

	ASSERT_EQ(0, stat(DEV, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	ASSERT_EQ(0600, st.st_mode & 07777);
	ASSERT_EQ(0, st.st_uid);
	ASSERT_EQ(0, st.st_gid);

	/* Positive control: root with its capabilities opens. */
	ASSERT_EQ(0, open_as(0, 0, false));
	/* nobody is stopped by the mode first. */
	ASSERT_EQ(EACCES, open_as(NOBODY, NOBODY, false));
	/* Root without CAP_SYS_ADMIN passes DAC (owner) but not the module. */
	ASSERT_EQ(EPERM, open_as(0, 0, true));

	/* With the mode out of the way, the module's own check says no. */
	self->chmodded = true;
	ASSERT_EQ(0, chmod(DEV, 0666));
	ASSERT_EQ(EPERM, open_as(NOBODY, NOBODY, false));
	ASSERT_EQ(0, chmod(DEV, 0600));
	self->chmodded = false;
	ASSERT_EQ(0, stat(DEV, &st));
	ASSERT_EQ(0600, st.st_mode & 07777);

	/* The refused opens left no session behind. */
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
}

TEST_F(pt, efault_read)
{
	struct pagetrace_cpu_stats st[1024];
	struct pagetrace_stats s;
	struct pt_st_hdr hi;
	char *p;
	ssize_t n;
	uint32_t hsize;
	char why[256];

	self->fd = pt_st_open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	/* Two pages, the second unmapped: a buffer running into a hole. */
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + PAGE, PAGE));

	ASSERT_EQ(-1, read(self->fd, bad_addr, 64));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, read(self->fd, p + PAGE, 64));
	ASSERT_EQ(EFAULT, errno);
	/* 8 good bytes, then a fault, then the rest of the header. */
	pt_st_buf_reserve(&self->b, 1 << 16);
	ASSERT_EQ(8, read(self->fd, self->b.p, 8));
	self->b.len = 8;
	ASSERT_EQ(0, memcmp(self->b.p, "PGTRACE", 8));
	n = read(self->fd, p + PAGE - 16, 4096);
	ASSERT_EQ(-1, n) TH_LOG("read across the hole returned %zd", n);
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, read(self->fd, bad_addr, 64));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(56, read(self->fd, self->b.p + 8, 56));
	self->b.len = 64;
	memcpy(&hsize, self->b.p + offsetof(struct pagetrace_header, header_size), 4);
	ASSERT_LE(64, hsize);
	ASSERT_GT(1 << 16, hsize);
	ASSERT_EQ(-1, read(self->fd, bad_addr, 64));
	ASSERT_EQ(EFAULT, errno);
	while (self->b.len < hsize) {
		n = read(self->fd, self->b.p + self->b.len, hsize - self->b.len);
		ASSERT_LT(0, n);
		self->b.len += n;
	}
	pt_st_parse_header(self->b.p, self->b.len, &hi);
	ASSERT_STREQ("", hi.why);
	ASSERT_TRUE(hi.have_end);
	ASSERT_TRUE(hi.have_release);
	ASSERT_LE(1, hi.nr_zones);

	/* A fault at the start of a chunk loses nothing either. */
	pt_st_touch_and_free(256 << 10);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(-1, read(self->fd, bad_addr, 4096));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, read(self->fd, p + PAGE - 16, 4096));
	ASSERT_EQ(EFAULT, errno);
	/* The next read starts with that chunk, seq 0 of some CPU. */
	n = pt_st_buf_read(self->fd, &self->b);
	ASSERT_LT(32, n);
	ASSERT_EQ(0, memcmp(self->b.p + hsize, PAGETRACE_CHUNK_MAGIC, 4));

	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b));
	ASSERT_EQ(self->b.len, pt_st_walk_chunks(&self->b, &hi.h, NULL, why, sizeof(why)));
	ASSERT_STREQ("", why);
	pt_st_decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_EQ(0, self->dec.seq_errors) TH_LOG("%s", self->dec.first_problem);
	ASSERT_GE(1024, hi.h.nr_cpus);
	ASSERT_EQ(0, pt_st_stats_poisoned(self->fd, st, hi.h.nr_cpus, &s));
	for (unsigned int cpu = 0; cpu < hi.h.nr_cpus; cpu++) {
		ASSERT_EQ(st[cpu].events, self->dec.cpus[cpu].events);
		ASSERT_EQ(st[cpu].chunks, self->dec.cpus[cpu].chunks);
	}
	ASSERT_LT(0, self->dec.events);
	munmap(p, PAGE);
}

TEST_F(pt, ioctl_errors)
{
	struct pagetrace_cpu_stats cpus[1024];
	struct pagetrace_stats s;
	struct pagetrace_info info;
	char big[256] = { 0 };
	const unsigned long bad[] = {
		_IO('x', 0x01),					/* wrong magic */
		_IOR('P', 0x01, struct pagetrace_info),		/* wrong magic */
		_IO(PAGETRACE_IOC_MAGIC, 0x00),			/* wrong nr */
		_IO(PAGETRACE_IOC_MAGIC, 0x05),
		_IO(PAGETRACE_IOC_MAGIC, 0x7f),
		_IOR(PAGETRACE_IOC_MAGIC, 0x01, __u32),		/* INFO, wrong size */
		_IOW(PAGETRACE_IOC_MAGIC, 0x01, struct pagetrace_info), /* wrong dir */
		_IO(PAGETRACE_IOC_MAGIC, 0x01),
		_IOR(PAGETRACE_IOC_MAGIC, 0x02, int),		/* FLUSH with data */
		_IOWR(PAGETRACE_IOC_MAGIC, 0x03, __u64),	/* STATS, wrong size */
		_IOR(PAGETRACE_IOC_MAGIC, 0x03, struct pagetrace_stats),
		_IOW(PAGETRACE_IOC_MAGIC, 0x04, int),		/* STOP with data */
		0,
	};
	unsigned int nr;

	ASSERT_EQ(0, start_session(self, 0));
	nr = self->hi.h.nr_cpus;
	ASSERT_GE(1024, nr);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ASSERT_EQ(-1, ioctl(self->fd, bad[i], big))
			TH_LOG("ioctl %#lx succeeded", bad[i]);
		ASSERT_EQ(ENOTTY, errno) TH_LOG("ioctl %#lx", bad[i]);
	}

	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_INFO, NULL));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_INFO, (void *)1));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, NULL));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, (void *)1));
	ASSERT_EQ(EFAULT, errno);
	/* A good struct pointing at a bad array. */
	memset(&s, 0, sizeof(s));
	s.cpus = 1;
	s.nr_cpus = nr;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	ASSERT_EQ(EFAULT, errno);

	/* Reserved fields must be zero. */
	memset(&s, 0, sizeof(s));
	s.cpus = (uintptr_t)cpus;
	s.nr_cpus = nr;
	s.reserved0 = 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	ASSERT_EQ(EINVAL, errno);
	for (int i = 0; i < 5; i++) {
		memset(&s, 0, sizeof(s));
		s.cpus = (uintptr_t)cpus;
		s.nr_cpus = nr;
		s.reserved[i] = 1ULL << 40;
		ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
		ASSERT_EQ(EINVAL, errno) TH_LOG("reserved[%d]", i);
	}
	/* probe_missed is output only: garbage in it is fine. */
	memset(&s, 0, sizeof(s));
	s.cpus = (uintptr_t)cpus;
	s.nr_cpus = nr;
	s.probe_missed = ~0ULL;
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	ASSERT_EQ(nr, s.nr_cpus);

	/* A short array: only that many entries are written. */
	memset(cpus, 0xa5, sizeof(cpus));
	memset(&s, 0, sizeof(s));
	s.cpus = (uintptr_t)cpus;
	s.nr_cpus = 1;
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	ASSERT_EQ(nr, s.nr_cpus);
	/* Written whole: no filter and no sampling in this session. */
	ASSERT_EQ(0, cpus[0].filtered);
	ASSERT_EQ(0, cpus[0].samples);
	ASSERT_EQ(0, cpus[0].stacks_unknown);
	ASSERT_EQ(0xa5a5a5a5a5a5a5a5ULL, cpus[1].events);
	/* nr_cpus 0: nothing written, none read, the count still comes back. */
	memset(&s, 0, sizeof(s));
	s.cpus = 1;
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	ASSERT_EQ(nr, s.nr_cpus);

	/* The session is unharmed. */
	ASSERT_EQ(0, pt_st_info(self->fd, &info));
	ASSERT_EQ(PAGETRACE_VERSION, info.version);
}

TEST_HARNESS_MAIN
