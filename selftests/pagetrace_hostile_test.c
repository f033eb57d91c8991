// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_hostile_test: /dev/pagetrace against hostile callers.  Runs as
 * root with pagetrace.ko loaded.  Every call gets a clear error (or works),
 * the session is still sound afterwards, and the kernel log stays clean.
 *
 *  ioctl_unknown   every command number of our type with every direction
 *                  and a range of sizes, and other types: ENOTTY
 *  ioctl_pointers  NULL, unmapped, kernel, non-canonical and read-only
 *                  pointers, and structures that straddle into a hole
 *  ioctl_random    a bounded loop of random commands and argument bytes
 *                  (PT_HOSTILE_ITERS, default 20000; the seed is logged,
 *                  PT_HOSTILE_SEED repeats a run)
 *  mmap_bad        every bad offset/length/prot/flags combination
 *  read_bad        bad pointers, zero and huge sizes
 *  dev_node        the node is root's, 0600; others cannot open it
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
#include <sys/wait.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV	"/dev/pagetrace"
#define PAGE	4096UL

static const unsigned long known[] = {
	PAGETRACE_IOC_INFO, PAGETRACE_IOC_FLUSH, PAGETRACE_IOC_STATS,
	PAGETRACE_IOC_STOP, PAGETRACE_IOC_COUNTERS, PAGETRACE_IOC_MMAP_INFO,
	PAGETRACE_IOC_CONSUME,
	PAGETRACE_IOC_SET_MODE, PAGETRACE_IOC_FREEZE, PAGETRACE_IOC_THAW,
};

static bool is_known(unsigned long cmd)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i] == cmd)
			return true;
	return false;
}

FIXTURE(h) {
	int	fd;
	int	kmsg;
	char	*area;		/* 3 pages: RW, read-only, unmapped */
};

FIXTURE_SETUP(h)
{
	self->kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	if (!pt_st_mod_loaded())
		ASSERT_EQ(0, pt_st_mod_reload(""));
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	self->area = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->area);
	memset(self->area, 0, 2 * PAGE);
	ASSERT_EQ(0, mprotect(self->area + PAGE, PAGE, PROT_READ));
	ASSERT_EQ(0, munmap(self->area + 2 * PAGE, PAGE));
}

FIXTURE_TEARDOWN(h)
{
	static char splats[8192];
	int n;

	if (self->fd >= 0)
		close(self->fd);
	munmap(self->area, 2 * PAGE);
	n = pt_st_kmsg_splats(self->kmsg, splats, sizeof(splats));
	EXPECT_EQ(0, n) TH_LOG("kernel log:\n%s", splats);
	close(self->kmsg);
}

/* The session still records and decodes after the abuse. */
static void still_sound(struct __test_metadata *_metadata, int fd)
{
	struct pt_st_trace t;
	char *p = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 64 * PAGE);
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	EXPECT_LE(64, t.nr);
	pt_st_trace_free(&t);
}

TEST_F(h, ioctl_unknown)
{
	static const unsigned int sizes[] = { 0, 1, 4, 8, 16, 32, 64, 128, 4096, 16383 };
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE,
					     _IOC_READ | _IOC_WRITE };
	unsigned long tried = 0;

	for (unsigned int nr = 0; nr < 256; nr++)
		for (size_t d = 0; d < 4; d++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				unsigned long cmd = _IOC(dirs[d], PAGETRACE_IOC_MAGIC,
							 nr, sizes[s]);

				if (is_known(cmd))
					continue;
				errno = 0;
				ASSERT_EQ(-1, ioctl(self->fd, cmd, self->area))
					TH_LOG("cmd %#lx", cmd);
				ASSERT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", cmd);
				tried++;
			}
	/* Other types, our numbers. */
	for (unsigned int type = 0; type < 256; type++) {
		if (type == PAGETRACE_IOC_MAGIC)
			continue;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			unsigned long cmd = (known[i] & ~(0xffUL << _IOC_TYPESHIFT)) |
					    ((unsigned long)type << _IOC_TYPESHIFT);
			int ret = ioctl(self->fd, cmd, self->area);

			/* The VFS answers a few generic ones (FIONREAD...). */
			if (ret == 0)
				continue;
			ASSERT_TRUE(errno == ENOTTY || errno == EINVAL || errno == EFAULT)
				TH_LOG("cmd %#lx: %s", cmd, strerror(errno));
			tried++;
		}
	}
	TH_LOG("%lu unknown commands refused", tried);
	still_sound(_metadata, self->fd);
}

TEST_F(h, ioctl_pointers)
{
	void *bad[] = {
		NULL, (void *)1, self->area + 2 * PAGE,	/* unmapped */
		(void *)0xffffffff81000000UL,		/* kernel text */
		(void *)0xffff888000000000UL,		/* direct map */
		(void *)0x8000000000000000UL,		/* non-canonical */
		(void *)-1UL,
	};
	static const unsigned long outs[] = {
		PAGETRACE_IOC_INFO, PAGETRACE_IOC_STATS, PAGETRACE_IOC_MMAP_INFO,
		PAGETRACE_IOC_CONSUME, PAGETRACE_IOC_SET_MODE,
	};
	struct pagetrace_stats *st;
	struct pagetrace_consume *c;

	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			errno = 0;
			EXPECT_EQ(-1, ioctl(self->fd, outs[i], bad[j]));
			EXPECT_EQ(EFAULT, errno) TH_LOG("cmd %#lx arg %p", outs[i], bad[j]);
		}
		/* The last bytes of a page, the rest in the hole. */
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, outs[i], self->area + 3 * PAGE - 8));
		EXPECT_EQ(EFAULT, errno) TH_LOG("cmd %#lx straddling", outs[i]);
	}
	/* Output ioctls into a read-only page. */
	EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_INFO, self->area + PAGE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_MMAP_INFO, self->area + PAGE));
	EXPECT_EQ(EFAULT, errno);

	/* STATS: a bad array, and an array that ends in the hole. */
	st = (void *)self->area;
	for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
		*st = (struct pagetrace_stats){ .cpus = (uintptr_t)bad[j], .nr_cpus = 1 };
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, st));
		EXPECT_EQ(EFAULT, errno) TH_LOG("cpus %p", bad[j]);
	}
	*st = (struct pagetrace_stats){
		.cpus = (uintptr_t)(self->area + 3 * PAGE -
				    sizeof(struct pagetrace_cpu_stats)),
		.nr_cpus = UINT32_MAX,
	};
	if (sysconf(_SC_NPROCESSORS_CONF) > 1) {
		EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, st));
		EXPECT_EQ(EFAULT, errno);
	}
	st->cpus = (uintptr_t)(self->area + PAGE);	/* read-only */
	EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, st));
	EXPECT_EQ(EFAULT, errno);
	st->cpus = (uintptr_t)(self->area + 1024);
	st->reserved0 = 1;
	EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_STATS, st));
	EXPECT_EQ(EINVAL, errno);

	/* CONSUME: bad position arrays, huge counts. */
	c = (void *)self->area;
	for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
		*c = (struct pagetrace_consume){ .pos = (uintptr_t)bad[j], .nr_cpus = 1 };
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, c));
		EXPECT_EQ(EFAULT, errno) TH_LOG("pos %p", bad[j]);
	}
	*c = (struct pagetrace_consume){ .pos = (uintptr_t)(self->area + 1024),
					 .nr_cpus = UINT32_MAX };
	EXPECT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, c));
	EXPECT_EQ(EINVAL, errno);
	/* The refusals above claimed nothing: read() still works. */
	still_sound(_metadata, self->fd);
}

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the logged seed */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 2685821657736338717ULL;
}

TEST_F_TIMEOUT(h, ioctl_random, 280)
{
	long iters = getenv("PT_HOSTILE_ITERS") ? atol(getenv("PT_HOSTILE_ITERS")) : 20000;
	uint64_t seed = getenv("PT_HOSTILE_SEED") ?
			strtoull(getenv("PT_HOSTILE_SEED"), NULL, 0) :
			(uint64_t)time(NULL) * 2654435761ULL + getpid();
	unsigned long ok = 0, refused = 0, sessions = 1;
	unsigned char *arg = (unsigned char *)self->area;

	TH_LOG("seed %#llx (PT_HOSTILE_SEED repeats it), %ld iterations",
	       (unsigned long long)seed, iters);
	rnd_state = seed | 1;
	for (long i = 0; i < iters; i++) {
		unsigned long cmd;
		void *p;
		int ret;

		switch (rnd() % 4) {
		case 0:		/* a known command */
		case 1:
			cmd = known[rnd() % (sizeof(known) / sizeof(known[0]))];
			break;
		case 2:		/* our type, any number, direction, size */
			cmd = _IOC(rnd() % 4, PAGETRACE_IOC_MAGIC, rnd() % 256,
				   rnd() % 64);
			break;
		default:	/* anything */
			cmd = (uint32_t)rnd();
		}
		/* Random bytes in a real buffer, or a random pointer. */
		for (size_t b = 0; b < 128; b += 8) {
			uint64_t v = rnd();

			/* Now and then small values, to get past the checks. */
			if (rnd() % 2)
				v %= 4;
			memcpy(arg + b, &v, 8);
		}
		switch (rnd() % 8) {
		case 0:
			p = (void *)(uintptr_t)rnd();
			if ((uintptr_t)p - (uintptr_t)self->area < 4 * PAGE)
				p = NULL;
			break;
		case 1:
			p = self->area + PAGE;	/* read-only */
			break;
		default:
			p = arg;
		}
		/* Keep the session from ending at every step. */
		if (cmd == PAGETRACE_IOC_STOP && rnd() % 16)
			continue;
		errno = 0;
		ret = ioctl(self->fd, cmd, p);
		if (ret == 0) {
			ok++;
		} else {
			ASSERT_EQ(-1, ret);
			/*
			 * ENOSPC and EAGAIN: PAGETRACE_IOC_COUNTERS with a
			 * small size, or the stop's before the stop.
			 */
			ASSERT_TRUE(errno == ENOTTY || errno == EINVAL ||
				    errno == EFAULT || errno == EBUSY ||
				    errno == ENOMEM || errno == ENOSPC ||
				    errno == EAGAIN)
				TH_LOG("iteration %ld: cmd %#lx arg %p: %s", i, cmd,
				       p, strerror(errno));
			refused++;
		}
		/* A fresh session now and then (and after a STOP). */
		if (cmd == PAGETRACE_IOC_STOP || i % 2000 == 1999) {
			close(self->fd);
			self->fd = open(DEV, O_RDONLY | O_CLOEXEC);
			ASSERT_LE(0, self->fd) TH_LOG("reopen: %s", strerror(errno));
			sessions++;
		}
	}
	TH_LOG("%lu calls worked, %lu refused, %lu sessions", ok, refused, sessions);
	close(self->fd);
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	still_sound(_metadata, self->fd);
}

TEST_F(h, mmap_bad)
{
	struct pagetrace_mmap_info mi;
	const int prots[] = { PROT_READ, PROT_WRITE, PROT_READ | PROT_WRITE,
			      PROT_EXEC, PROT_READ | PROT_EXEC, PROT_NONE };
	const int flags[] = { MAP_SHARED, MAP_PRIVATE, MAP_SHARED | MAP_POPULATE,
			      MAP_PRIVATE | MAP_POPULATE, MAP_SHARED | MAP_LOCKED };
	unsigned long good = 0, refused = 0;
	void *m;

	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_MMAP_INFO, &mi));
	{
		const off_t offs[] = { 0, 1, PAGE, (off_t)mi.data_offset,
				       (off_t)mi.mmap_size, (off_t)(mi.mmap_size - PAGE),
				       (off_t)1 << 40, -(off_t)PAGE };
		const size_t lens[] = { 0, 1, PAGE, mi.mmap_size - PAGE,
					mi.mmap_size - 1, mi.mmap_size,
					mi.mmap_size + 1, mi.mmap_size + PAGE,
					(size_t)1 << 40, SIZE_MAX };

		for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t p = 0; p < sizeof(prots) / sizeof(prots[0]); p++)
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			/* Only offset 0, the exact size (a partial last page
			 * rounds up to it), readable or not, neither writable
			 * nor executable, shared. */
			bool ok = offs[o] == 0 &&
				  (lens[l] == mi.mmap_size ||
				   lens[l] == mi.mmap_size - 1) &&
				  !(prots[p] & (PROT_WRITE | PROT_EXEC)) &&
				  (flags[f] & MAP_SHARED) &&
				  !(flags[f] & MAP_PRIVATE);
			errno = 0;
			m = mmap(NULL, lens[l], prots[p], flags[f], self->fd, offs[o]);
			if (m != MAP_FAILED) {
				EXPECT_TRUE(ok) TH_LOG("mapped: off %#llx len %#zx prot %d flags %#x",
						       (long long)offs[o], lens[l], prots[p], flags[f]);
				/* Writable or executable later?  Never. */
				EXPECT_EQ(-1, mprotect(m, PAGE, PROT_READ | PROT_WRITE));
				EXPECT_EQ(EACCES, errno);
				EXPECT_EQ(-1, mprotect(m, PAGE, PROT_READ | PROT_EXEC));
				EXPECT_EQ(EACCES, errno);
				/* Nor bigger. */
				EXPECT_EQ(MAP_FAILED, mremap(m, lens[l], lens[l] + PAGE, MREMAP_MAYMOVE));
				munmap(m, lens[l]);
				good++;
				continue;
			}
			EXPECT_FALSE(ok) TH_LOG("refused: off %#llx len %#zx prot %d flags %#x: %s",
						(long long)offs[o], lens[l], prots[p], flags[f],
						strerror(errno));
			EXPECT_TRUE(errno == EINVAL || errno == EPERM ||
				    errno == EACCES || errno == ENOMEM ||
				    errno == EOVERFLOW || errno == EAGAIN)
				TH_LOG("off %#llx len %#zx prot %d flags %#x: %s",
				       (long long)offs[o], lens[l], prots[p], flags[f],
				       strerror(errno));
			refused++;
		}
	}
	TH_LOG("%lu mappings made, %lu refused", good, refused);
	EXPECT_LT(0, good);
	/* Nothing was consumed through a mapping: read() still works. */
	still_sound(_metadata, self->fd);
}

/* read(2) past the compiler's checks of buffer and size. */
static ssize_t raw_read(int fd, void *buf, size_t count)
{
	return syscall(SYS_read, fd, buf, count);
}

TEST_F(h, read_bad)
{
	unsigned char *p = (unsigned char *)self->area;
	ssize_t n;

	EXPECT_EQ(0, raw_read(self->fd, self->area, 0));
	EXPECT_EQ(0, raw_read(self->fd, NULL, 0));
	EXPECT_EQ(-1, raw_read(self->fd, NULL, 4096));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, raw_read(self->fd, (void *)0xffff888000000000UL, 4096));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, raw_read(self->fd, self->area + PAGE, 4096));	/* read-only */
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, raw_read(self->fd, self->area, SIZE_MAX));
	EXPECT_EQ(EFAULT, errno);
	/* 100 bytes, then the read-only page: the piece does not fit, EFAULT. */
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(-1, raw_read(self->fd, self->area + PAGE - 100, 4096));
		EXPECT_EQ(EFAULT, errno);
	}
	/* None of that consumed a byte: the stream decodes from its start. */
	still_sound(_metadata, self->fd);

	/* A huge count (clamped by the VFS) into a buffer big enough. */
	close(self->fd);
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	n = raw_read(self->fd, p, (size_t)1 << 40);
	/*
	 * Older kernels' VFS checks the whole count against the address
	 * space first (access_ok(), 5.10): EFAULT, and we are never called.
	 */
	if (n < 0 && errno == EFAULT) {
		TH_LOG("the VFS refuses a 1 TiB count on this kernel");
		still_sound(_metadata, self->fd);
		return;
	}
	EXPECT_TRUE(n > 0 && n <= (ssize_t)(2 * PAGE)) TH_LOG("read %zd: %s", n, strerror(errno));
	EXPECT_EQ(0, memcmp(p, PAGETRACE_MAGIC, 8));
}

TEST_F(h, dev_node)
{
	struct stat sb;
	int status;
	pid_t pid;

	ASSERT_EQ(0, stat(DEV, &sb));
	EXPECT_TRUE(S_ISCHR(sb.st_mode));
	EXPECT_EQ(0600, sb.st_mode & 07777);
	EXPECT_EQ(0, sb.st_uid);
	EXPECT_EQ(0, sb.st_gid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (open(DEV, O_RDONLY) >= 0)
			_exit(3);
		_exit(errno == EACCES ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("2: setuid, 3: opened, 4: not EACCES");
}

TEST_HARNESS_MAIN
