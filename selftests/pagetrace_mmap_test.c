// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_mmap_test: zero-copy reading of /dev/pagetrace - the mapping,
 * the CONSUME handoff, poll, flush, and the flight recorder (FREEZE/THAW).
 * Runs as root with pagetrace.ko loaded; leaves it with its default
 * parameters (tests that need tiny buffers set them through sysfs for their
 * own session and restore them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define PARAMS		"/sys/module/pagetrace/parameters/"
#define PAGE		4096UL
#define MAX_CPUS	512

/* The module's defaults (module/session.c); teardown restores them. */
#define DEF_BUF_SIZE	65536
#define DEF_NR_BUFS	16

/* --------------------------------------------------------------- helpers */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static int write_param(const char *name, long val)
{
	char path[128], s[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%ld", val);
	if (write(fd, s, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static long read_param(const char *name)
{
	char path[128], s[32] = "";
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (read(fd, s, sizeof(s) - 1) <= 0)
		s[0] = 0;
	close(fd);
	return strtol(s, NULL, 0);
}

struct buf {
	unsigned char	*p;
	size_t		len;
	size_t		cap;
};

static void buf_add(struct buf *b, const void *p, size_t len)
{
	if (b->len + len > b->cap) {
		while (b->len + len > b->cap)
			b->cap = b->cap ? 2 * b->cap : 1 << 20;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

/* read() until EOF into @b; 0 or -errno. */
static int read_all(int fd, struct buf *b)
{
	static unsigned char tmp[1 << 16];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0)
			return -errno;
		if (!n)
			return 0;
		buf_add(b, tmp, n);
	}
}

/* Touch @len bytes of fresh anonymous memory page by page, then free it. */
static void touch_and_free(size_t len)
{
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	madvise((void *)p, len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len; i += PAGE)
		p[i] = 1;
	munmap((void *)p, len);
}

static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Pin to the first CPU we may run on; returns it, or -1. */
static int pin_to_first_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	return pin_to_cpu(cpu) ? -1 : cpu;
}

struct worker {
	pthread_t	thread;
	int		cpu;
	size_t		len;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;

	pin_to_cpu(w->cpu);
	touch_and_free(w->len);
	return NULL;
}

/* touch_and_free(@len) on every CPU we may run on, in parallel. */
static void on_every_cpu(size_t len)
{
	static struct worker w[CPU_SETSIZE];
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		w[n].cpu = cpu;
		w[n].len = len;
		if (pthread_create(&w[n].thread, NULL, worker_fn, &w[n]))
			break;
		n++;
	}
	while (n--)
		pthread_join(w[n].thread, NULL);
}

/* The physical frame behind a mapped address (root sees PFNs), or 0. */
static uint64_t virt_to_pfn(const void *addr)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e), (uintptr_t)addr / PAGE * 8) != sizeof(e))
		e = 0;
	close(fd);
	return e & (1ULL << 63) ? e & ((1ULL << 55) - 1) : 0;
}

/* Touch one fresh page and free it: an alloc and a free of a known PFN. */
static uint64_t one_page_event(void)
{
	volatile char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t pfn;

	if (p == MAP_FAILED)
		return 0;
	p[0] = 1;
	pfn = virt_to_pfn((const void *)p);
	munmap((void *)p, PAGE);
	return pfn;
}

/* ------------------------------------------------------- a mapped session */

/*
 * The session's mapping is read through libpagetrace's ring (pgtrace_ring_*),
 * as pagetrace record reads it; the tests of the kernel's own checks call
 * mmap() and PAGETRACE_IOC_CONSUME directly.
 */

static uint64_t load_acquire(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static size_t chunk_len(const struct pagetrace_chunk *ch)
{
	return sizeof(*ch) + (size_t)ch->nr_words * 8;
}

/* The chunk of @cpu at @pos, or NULL if the ring finds it corrupt. */
static const struct pagetrace_chunk *ring_chunk(struct pgtrace_ring *ring,
						unsigned int cpu, uint64_t pos)
{
	const struct pagetrace_chunk *ch;
	size_t len;

	return pgtrace_ring_chunk(ring, cpu, pos, &ch, &len) ? NULL : ch;
}

static int consume(int fd, const uint64_t *pos, unsigned int nr)
{
	struct pagetrace_consume c = { .pos = (uintptr_t)pos, .nr_cpus = nr };

	return ioctl(fd, PAGETRACE_IOC_CONSUME, &c) ? -errno : 0;
}

/* Every CPU's consumed position, into @pos. */
static void current_pos(struct pgtrace_ring *ring, uint64_t *pos)
{
	for (unsigned int cpu = 0; cpu < pgtrace_ring_meta(ring)->nr_cpus; cpu++)
		pos[cpu] = pgtrace_ring_cpu(ring, cpu)->consumed;
}

/*
 * The recorder's loop, once: append every CPU's closed chunks to @b
 * (@per_cpu: to that CPU's buffer as well), then give them back.
 * Returns the chunks taken, or -errno.
 */
static int drain_ring(struct pgtrace_ring *ring, struct buf *b, struct buf *per_cpu)
{
	unsigned int nr = pgtrace_ring_meta(ring)->nr_cpus;
	int64_t moved;
	int taken = 0;

	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		uint64_t pos;
		int64_t n = pgtrace_ring_peek(ring, cpu, &pos);

		for (int64_t i = 0; i < n; i++, taken++) {
			const struct pagetrace_chunk *ch;
			size_t len;
			int ret = pgtrace_ring_chunk(ring, cpu, pos + i, &ch, &len);

			if (ret)
				return ret;
			buf_add(b, ch, len);
			if (per_cpu)
				buf_add(&per_cpu[cpu], ch, len);
		}
		if (n > 0 && pgtrace_ring_advance(ring, cpu, n))
			return -EINVAL;
	}
	moved = pgtrace_ring_consume(ring);
	if (moved < 0)
		return (int)moved;
	return moved == taken ? taken : -EPROTO;
}

/* Drain until a pass finds nothing: after STOP, everything. */
static int drain_to_end(struct pgtrace_ring *ring, struct buf *b)
{
	int n, rounds = 0;

	do {
		n = drain_ring(ring, b, NULL);
	} while (n > 0 && ++rounds < 100);
	return n;
}

/* The stream's prefix from the mapping: the header, then the snapshot. */
static void add_header(struct pgtrace_ring *ring, struct buf *b)
{
	const void *snap;
	size_t snap_len;
	const struct pagetrace_header *h = pgtrace_ring_header(ring, &snap, &snap_len);

	buf_add(b, h, pgtrace_ring_meta(ring)->header_size);
	buf_add(b, snap, snap_len);
}

/* What a decode of a stream found. */
struct decoded {
	int		err;
	char		why[256];
	uint64_t	events[MAX_CPUS];
	uint64_t	chunks[MAX_CPUS];
	uint64_t	lost[MAX_CPUS];
	uint64_t	bytes[MAX_CPUS];
	uint64_t	missing[MAX_CPUS];
	uint64_t	first_seq[MAX_CPUS];
	uint64_t	last_seq[MAX_CPUS];
	bool		found_alloc;
	int		found_cpu;
	uint64_t	found_seq;
};

static int dec_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct decoded *d = arg;

	if (c->cpu >= MAX_CPUS || (c->flags & PAGETRACE_CHUNK_SNAPSHOT))
		return 0;
	if (!d->chunks[c->cpu])
		d->first_seq[c->cpu] = c->seq;
	d->last_seq[c->cpu] = c->seq;
	d->chunks[c->cpu]++;
	d->lost[c->cpu] += c->lost;
	d->bytes[c->cpu] += 32 + 8ULL * c->nr_words;
	d->missing[c->cpu] += c->missing;
	return 0;
}

/* Decode the stream in @b into @d; look for an alloc of @want_pfn. */
static void decode(const struct buf *b, struct decoded *d, uint64_t want_pfn)
{
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	int ret;

	memset(d, 0, sizeof(*d));
	d->found_cpu = -1;
	ret = pgtrace_reader_open_mem(&r, b->p, b->len, 0);
	if (ret) {
		d->err = ret;
		snprintf(d->why, sizeof(d->why), "%s", r ? pgtrace_reader_error(r) : "open");
		pgtrace_reader_close(r);
		return;
	}
	pgtrace_reader_set_chunk_cb(r, dec_chunk, d);
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		/* The memory map at start is no CPU's traffic: not counted. */
		if (ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
			continue;
		if (ev.cpu < MAX_CPUS)
			d->events[ev.cpu]++;
		if (want_pfn && ev.type == PGTRACE_EV_ALLOC && ev.pfn <= want_pfn &&
		    want_pfn < ev.pfn + ev.npages) {
			d->found_alloc = true;
			d->found_cpu = ev.cpu;
			d->found_seq = ev.seq;
		}
	}
	if (ret < 0) {
		d->err = ret;
		snprintf(d->why, sizeof(d->why), "%s", pgtrace_reader_error(r));
	}
	pgtrace_reader_close(r);
}

/* ----------------------------------------------------------------- fixture */

FIXTURE(mm) {
	int		fd;
	struct pgtrace_ring	*ring;
	struct buf	b;
	struct decoded	d;
	bool		params;		/* teardown restores buf_size/nr_bufs */
	const char	*skip;		/* why the tests cannot run here */
};

/*
 * SKIP() in a fixture setup does not stop the test body in this harness,
 * so setup only notes why, and every test starts with READY().
 */
#define READY() do {							\
	if (self->skip)							\
		SKIP(return, "%s", self->skip);				\
} while (0)

FIXTURE_SETUP(mm)
{
	self->fd = -1;
	if (access(DEV, F_OK))
		self->skip = DEV " missing: load pagetrace.ko first";
	else if (read_param("buf_size") != DEF_BUF_SIZE ||
		 read_param("nr_bufs") != DEF_NR_BUFS)
		self->skip = "pagetrace not loaded with its default parameters";
}

FIXTURE_TEARDOWN(mm)
{
	pgtrace_ring_unmap(self->ring);
	if (self->fd >= 0)
		close(self->fd);
	free(self->b.p);
	if (self->params) {
		EXPECT_EQ(0, write_param("buf_size", DEF_BUF_SIZE));
		EXPECT_EQ(0, write_param("nr_bufs", DEF_NR_BUFS));
	}
}

static int open_session(FIXTURE_DATA(mm) *self)
{
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	if (self->fd < 0)
		return -errno;
	return pgtrace_ring_map(self->fd, &self->ring);
}

/* Tiny rings for this test's session: @nr_bufs buffers of @buf_size. */
static int small_buffers(FIXTURE_DATA(mm) *self, long buf_size, long nr_bufs)
{
	int ret;

	self->params = true;
	ret = write_param("buf_size", buf_size);
	return ret ? ret : write_param("nr_bufs", nr_bufs);
}

/* ------------------------------------------------------------------ tests */

/* The meta area describes the mapping, and agrees with INFO and read(). */
TEST_F(mm, geometry)
{
	const struct pagetrace_meta *mt;
	struct pagetrace_mmap_info mi;
	struct pagetrace_info info;
	struct pagetrace_header h;
	static unsigned char hdr[1 << 16];
	ssize_t n;

	READY();
	ASSERT_EQ(0, open_session(self));
	mt = pgtrace_ring_meta(self->ring);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_INFO, &info));
	memset(&mi, 0xa5, sizeof(mi));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_MMAP_INFO, &mi));

	ASSERT_EQ(PAGETRACE_META_MAGIC, mt->magic);
	ASSERT_EQ(PAGETRACE_VERSION, mt->version);
	ASSERT_EQ(0, mt->meta_size % PAGE);
	ASSERT_EQ(sizeof(*mt), mt->cpu_offset);
	ASSERT_EQ(sizeof(struct pagetrace_meta_cpu), mt->cpu_stride);
	ASSERT_EQ(128, mt->cpu_stride);
	ASSERT_EQ(info.nr_cpus, mt->nr_cpus);
	ASSERT_EQ(info.chunk_size, mt->chunk_size);
	ASSERT_EQ(info.nr_bufs, mt->nr_bufs);
	ASSERT_EQ(info.header_size, mt->header_size);
	ASSERT_EQ(info.page_shift, mt->page_shift);
	ASSERT_EQ(PAGETRACE_MODE_STREAM, mt->mode);
	ASSERT_EQ(0, mt->flags);
	ASSERT_EQ(mt->cpu_offset + mt->nr_cpus * mt->cpu_stride, mt->header_offset);
	ASSERT_LE(mt->header_offset + mt->header_size, mt->meta_size);
	ASSERT_EQ(mt->meta_size, mt->data_offset);
	ASSERT_EQ((uint64_t)mt->nr_bufs * mt->chunk_size, mt->ring_size);
	/* The memory map at start, if taken, follows the last ring. */
	ASSERT_EQ(mt->data_offset + mt->nr_cpus * mt->ring_size,
		  mt->snapshot_offset);
	ASSERT_EQ(mt->snapshot_offset +
		  ((mt->snapshot_size + PAGE - 1) & ~(uint64_t)(PAGE - 1)),
		  mt->mmap_size);
	ASSERT_EQ(mt->mmap_size, mi.mmap_size);
	ASSERT_EQ(mt->data_offset, mi.data_offset);
	ASSERT_EQ(mt->ring_size, mi.ring_size);
	ASSERT_EQ(mt->meta_size, mi.meta_size);
	ASSERT_EQ(mt->nr_cpus, mi.nr_cpus);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, mi.reserved[i]);
	for (size_t i = 0; i < sizeof(mt->reserved) / sizeof(mt->reserved[0]); i++)
		ASSERT_EQ(0, mt->reserved[i]);

	/* The header copy is the header read() gives (read() claims nothing). */
	ASSERT_LE(info.header_size, sizeof(hdr));
	n = read(self->fd, hdr, info.header_size);
	ASSERT_EQ((ssize_t)info.header_size, n);
	ASSERT_EQ(0, memcmp(hdr, pgtrace_ring_header(self->ring, NULL, NULL), n));
	memcpy(&h, hdr, sizeof(h));
	ASSERT_EQ(0, h.flags & PAGETRACE_FLAG_OVERWRITE);
	/* Still unclaimed: CONSUME may claim it for the mapping. */
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
}

/* Writable, private, partial and offset mappings are refused. */
TEST_F(mm, bad_mmap)
{
	struct pagetrace_mmap_info mi;
	size_t size;
	void *p;

	READY();
	/* O_RDWR, so that the kernel leaves the write check to us. */
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_MMAP_INFO, &mi));
	size = mi.mmap_size;
	ASSERT_EQ(0, size % PAGE);

	struct { int prot, flags; off_t off; size_t len; int err; } bad[] = {
		{ PROT_READ | PROT_WRITE, MAP_SHARED, 0, size, EPERM },
		{ PROT_WRITE, MAP_SHARED, 0, size, EPERM },
		{ PROT_READ | PROT_EXEC, MAP_SHARED, 0, size, EPERM },
		{ PROT_READ | PROT_WRITE, MAP_PRIVATE, 0, size, EPERM },
		{ PROT_READ, MAP_PRIVATE, 0, size, EINVAL },
		{ PROT_READ, MAP_SHARED, 0, size - PAGE, EINVAL },
		{ PROT_READ, MAP_SHARED, 0, size + PAGE, EINVAL },
		{ PROT_READ, MAP_SHARED, 0, PAGE, EINVAL },
		{ PROT_READ, MAP_SHARED, PAGE, size - PAGE, EINVAL },
		{ PROT_READ, MAP_SHARED, PAGE, size, EINVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		p = mmap(NULL, bad[i].len, bad[i].prot, bad[i].flags, self->fd,
			 bad[i].off);
		ASSERT_EQ(MAP_FAILED, p) TH_LOG("case %zu mapped", i);
		ASSERT_EQ(bad[i].err, errno) TH_LOG("case %zu", i);
	}

	/* A good mapping cannot be made writable or executable, nor grown. */
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, mprotect(p, size, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(-1, mprotect(p, size, PROT_READ | PROT_EXEC));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(MAP_FAILED, mremap(p, size, size + PAGE, MREMAP_MAYMOVE));
	/* It reads: the magic, and the last byte of the last ring. */
	ASSERT_EQ(PAGETRACE_META_MAGIC, ((const struct pagetrace_meta *)p)->magic);
	ASSERT_EQ(0, ((volatile char *)p)[size - 1]);
	munmap(p, size);
}

/* CONSUME, SET_MODE, FREEZE and THAW check their arguments and state. */
TEST_F(mm, bad_ioctl)
{
	static unsigned char tmp[1 << 16];
	struct pagetrace_consume c;
	struct pagetrace_mode md;
	uint64_t pos[MAX_CPUS] = { 0 }, before[MAX_CPUS];
	unsigned int nr;
	ssize_t n;
	char byte;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(MAX_CPUS, nr);

	memset(&c, 0, sizeof(c));
	c.pos = (uintptr_t)pos;
	c.nr_cpus = nr + 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, &c));
	ASSERT_EQ(EINVAL, errno);
	c.nr_cpus = nr;
	c.flags = 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, &c));
	ASSERT_EQ(EINVAL, errno);
	c.flags = 0;
	c.reserved[1] = 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, &c));
	ASSERT_EQ(EINVAL, errno);
	c.reserved[1] = 0;
	c.pos = 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, &c));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_CONSUME, NULL));
	ASSERT_EQ(EFAULT, errno);

	md = (struct pagetrace_mode){ .mode = 2 };
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(EINVAL, errno);
	md = (struct pagetrace_mode){ .mode = PAGETRACE_MODE_FLIGHT };
	md.reserved[2] = 1;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, NULL));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_MMAP_INFO, NULL));
	ASSERT_EQ(EFAULT, errno);
	/* FREEZE and THAW are for flight recorders only. */
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_FREEZE));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_THAW));
	ASSERT_EQ(EINVAL, errno);
	/* Setting the mode a session has is a no-op. */
	md = (struct pagetrace_mode){ .mode = PAGETRACE_MODE_STREAM };
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));

	/* Positions beyond produced or behind consumed: nothing moves. */
	touch_and_free(64 * PAGE);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	current_pos(self->ring, before);
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		pos[cpu] = load_acquire(&pgtrace_ring_cpu(self->ring, cpu)->produced);
	pos[nr - 1] += 1;
	ASSERT_EQ(-EINVAL, consume(self->fd, pos, nr));
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		ASSERT_EQ(before[cpu], pgtrace_ring_cpu(self->ring, cpu)->consumed);
	pos[nr - 1] -= 1;
	ASSERT_EQ(0, consume(self->fd, pos, nr));
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		ASSERT_EQ(pos[cpu], pgtrace_ring_cpu(self->ring, cpu)->consumed);
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		if (!pos[cpu])
			continue;
		pos[cpu]--;
		ASSERT_EQ(-EINVAL, consume(self->fd, pos, nr));
		pos[cpu]++;
	}

	/* The mapping consumes now: read() and SET_MODE are refused. */
	ASSERT_EQ(-1, read(self->fd, &byte, 1));
	ASSERT_EQ(EBUSY, errno);
	md.mode = PAGETRACE_MODE_FLIGHT;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(EBUSY, errno);

	/* And the other way round, in a new session. */
	pgtrace_ring_unmap(self->ring);
	self->ring = NULL;
	close(self->fd);
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	/* The header and at least one chunk (the flush makes one). */
	touch_and_free(16 * PAGE);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	n = read(self->fd, tmp, sizeof(tmp));
	ASSERT_LT(0, n);
	n = read(self->fd, tmp, sizeof(tmp));
	ASSERT_TRUE(n > 0 || errno == EAGAIN);
	ASSERT_EQ(-EBUSY, consume(self->fd, NULL, 0));
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(EBUSY, errno);
	/* Mapping to watch is still fine. */
	ASSERT_EQ(0, pgtrace_ring_map(self->fd, &self->ring));
}

/*
 * For the same session, the chunks in the mapping are byte for byte the
 * chunks read() returns, CPU by CPU, and decode to the same events.
 */
TEST_F_TIMEOUT(mm, same_as_read, 120)
{
	static struct buf per_cpu[MAX_CPUS];
	struct buf rd = { 0 }, mapped = { 0 };
	struct decoded *dr;
	uint64_t total = 0;
	unsigned int nr;
	size_t off;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(MAX_CPUS, nr);
	on_every_cpu(256 * PAGE);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_TRUE(pgtrace_ring_flags(self->ring) & PAGETRACE_META_STOPPED);

	/* Copy the mapped chunks out without consuming them. */
	add_header(self->ring, &mapped);
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		const struct pagetrace_meta_cpu *mc = pgtrace_ring_cpu(self->ring, cpu);
		uint64_t end = load_acquire(&mc->produced);

		ASSERT_EQ(0, mc->consumed);
		ASSERT_GE(pgtrace_ring_meta(self->ring)->nr_bufs, end) TH_LOG("cpu %u wrapped", cpu);
		for (uint64_t p = 0; p < end; p++) {
			const struct pagetrace_chunk *ch = ring_chunk(self->ring, cpu, p);

			ASSERT_NE(NULL, ch);
			buf_add(&per_cpu[cpu], ch, chunk_len(ch));
			buf_add(&mapped, ch, chunk_len(ch));
		}
		total += end;
	}
	ASSERT_LT(0, total);

	/* Now read() the same session to its end. */
	ASSERT_EQ(0, read_all(self->fd, &rd));
	/* The prefix: the header, then the snapshot chunks. */
	off = pgtrace_ring_meta(self->ring)->header_size + pgtrace_ring_meta(self->ring)->snapshot_size;
	ASSERT_LE(off, rd.len);
	ASSERT_EQ(0, memcmp(rd.p, mapped.p, off));
	while (off < rd.len) {
		const struct pagetrace_chunk *ch = (const void *)(rd.p + off);
		size_t len = chunk_len(ch);
		struct buf *pc;

		ASSERT_GE(rd.len, off + len);
		ASSERT_GT(nr, ch->cpu);
		pc = &per_cpu[ch->cpu];
		/* Take the per-CPU copy from its front as we go. */
		ASSERT_LE(len, pc->len) TH_LOG("read() has an extra chunk of cpu %u",
					       ch->cpu);
		ASSERT_EQ(0, memcmp(pc->p, ch, len))
			TH_LOG("cpu %u seq %llu differs", ch->cpu,
			       (unsigned long long)ch->seq);
		memmove(pc->p, pc->p + len, pc->len - len);
		pc->len -= len;
		off += len;
	}
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		ASSERT_EQ(0, per_cpu[cpu].len) TH_LOG("read() missed chunks of cpu %u", cpu);
		/* read() consumed them all, and the meta area says so. */
		ASSERT_EQ(pgtrace_ring_cpu(self->ring, cpu)->produced,
			  pgtrace_ring_cpu(self->ring, cpu)->consumed);
	}

	/* Both decode, to the same events per CPU. */
	dr = calloc(1, sizeof(*dr));
	ASSERT_NE(NULL, dr);
	decode(&rd, dr, 0);
	decode(&mapped, &self->d, 0);
	ASSERT_EQ(0, dr->err) TH_LOG("read stream: %s", dr->why);
	ASSERT_EQ(0, self->d.err) TH_LOG("mapped stream: %s", self->d.why);
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		ASSERT_EQ(dr->events[cpu], self->d.events[cpu]);
	free(dr);
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		free(per_cpu[cpu].p);
	free(rd.p);
	free(mapped.p);
}

/*
 * Recorded through the mapping: the meta counters, the STATS ioctl and the
 * decoded stream agree exactly once the session is stopped and drained.
 */
TEST_F_TIMEOUT(mm, counters, 120)
{
	struct pagetrace_cpu_stats st[MAX_CPUS];
	struct pagetrace_stats s = { 0 };
	unsigned int nr;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(MAX_CPUS, nr);
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	for (int i = 0; i < 4; i++) {
		on_every_cpu(128 * PAGE);
		ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	}
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, drain_to_end(self->ring, &self->b));

	decode(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	s.cpus = (uintptr_t)st;
	s.nr_cpus = nr;
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STATS, &s));
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		const struct pagetrace_meta_cpu *mc = pgtrace_ring_cpu(self->ring, cpu);

		ASSERT_EQ(mc->produced, mc->consumed);
		ASSERT_EQ(mc->produced, mc->chunks);
		ASSERT_EQ(self->d.chunks[cpu], mc->chunks) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(self->d.events[cpu], mc->events) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(self->d.lost[cpu], mc->lost) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(self->d.bytes[cpu], mc->bytes) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(0, mc->overwritten);
		ASSERT_EQ(0, self->d.missing[cpu]);
		ASSERT_EQ(st[cpu].events, mc->events);
		ASSERT_EQ(st[cpu].lost, mc->lost);
		ASSERT_EQ(st[cpu].chunks, mc->chunks);
		ASSERT_EQ(st[cpu].bytes, mc->bytes);
	}
}

/* FLUSH makes every event so far visible at once, without the timer. */
TEST_F(mm, flush_returns_all)
{
	uint64_t pfns[8];
	unsigned int found = 0;

	READY();
	ASSERT_LE(0, pin_to_first_cpu());
	ASSERT_EQ(0, open_session(self));
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	for (int i = 0; i < 8; i++) {
		pfns[i] = one_page_event();
		ASSERT_NE(0, pfns[i]) TH_LOG("no PFN from /proc/self/pagemap");
	}
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	/* No waiting: everything is in closed chunks when FLUSH returns. */
	ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	for (int i = 0; i < 8; i++) {
		decode(&self->b, &self->d, pfns[i]);
		ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
		found += self->d.found_alloc;
		if (!self->d.found_alloc)
			TH_LOG("pfn %#llx missing", (unsigned long long)pfns[i]);
	}
	ASSERT_EQ(8, found);
}

/* A mapping reader blocked in poll() wakes within the flush period. */
TEST_F(mm, poll_wakes)
{
	long flush_ms = read_param("flush_ms");
	struct pollfd pfd;
	uint64_t pfn, t0, deadline;
	bool seen = false;

	READY();
	ASSERT_LE(10, flush_ms);
	ASSERT_LE(0, pin_to_first_cpu());
	ASSERT_EQ(0, open_session(self));
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	/* Claimed by the mapping: the unread header does not count. */
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };

	pfn = one_page_event();
	ASSERT_NE(0, pfn);
	t0 = now_ms();
	deadline = t0 + 2 * flush_ms + PT_ST_LATE_MS;
	while (!seen && now_ms() < deadline) {
		int ret = poll(&pfd, 1, deadline - now_ms());

		ASSERT_LE(0, ret);
		if (!ret)
			break;
		ASSERT_EQ(POLLIN, pfd.revents & (POLLIN | POLLERR | POLLHUP));
		ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
		decode(&self->b, &self->d, pfn);
		ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
		seen = self->d.found_alloc;
	}
	TH_LOG("pfn %#llx seen after %llu ms (flush_ms %ld)",
	       (unsigned long long)pfn, (unsigned long long)(now_ms() - t0),
	       flush_ms);
	ASSERT_TRUE(seen) TH_LOG("not woken with it within 2 x flush_ms + %d ms",
				 PT_ST_LATE_MS);
}

/*
 * Flight recorder: with 4 buffers of one page per CPU and far more events
 * than they hold, FREEZE leaves exactly the 4 newest chunks of the busy
 * CPU, the event just before the freeze among them; the decoder reports
 * the older chunks as missing, not as an error.  After THAW recording
 * goes on, and a second dump follows the first in the same file.
 */
TEST_F_TIMEOUT(mm, flight_newest, 120)
{
	struct pagetrace_mode md = { .mode = PAGETRACE_MODE_FLIGHT };
	const struct pagetrace_meta_cpu *mc;
	uint64_t pfn, produced, consumed, pos[MAX_CPUS];
	struct pagetrace_info info;
	struct pagetrace_header h;
	unsigned int nr;
	int cpu;

	READY();
	ASSERT_EQ(0, small_buffers(self, PAGE, 4));
	cpu = pin_to_first_cpu();
	ASSERT_LE(0, cpu);
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(MAX_CPUS, nr);
	ASSERT_EQ(PAGE, pgtrace_ring_meta(self->ring)->chunk_size);
	ASSERT_EQ(4, pgtrace_ring_meta(self->ring)->nr_bufs);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(PAGETRACE_MODE_FLIGHT, pgtrace_ring_meta(self->ring)->mode);
	ASSERT_TRUE(pgtrace_ring_flags(self->ring) & PAGETRACE_META_OVERWRITE);
	memcpy(&h, pgtrace_ring_header(self->ring, NULL, NULL), sizeof(h));
	ASSERT_TRUE(h.flags & PAGETRACE_FLAG_OVERWRITE);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_INFO, &info));
	ASSERT_TRUE(info.flags & PAGETRACE_FLAG_OVERWRITE);
	/* No way back to stream mode. */
	md.mode = PAGETRACE_MODE_STREAM;
	ASSERT_EQ(-1, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	ASSERT_EQ(EBUSY, errno);

	/* ~8000 events on our CPU; 4 one-page chunks hold ~2000. */
	touch_and_free(4096 * PAGE);
	pfn = one_page_event();
	ASSERT_NE(0, pfn);
	/* Running: the writers own consumed, consumers keep off. */
	current_pos(self->ring, pos);
	ASSERT_EQ(-EBUSY, consume(self->fd, pos, nr));

	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FREEZE));
	ASSERT_TRUE(pgtrace_ring_flags(self->ring) & PAGETRACE_META_FROZEN);
	mc = pgtrace_ring_cpu(self->ring, cpu);
	produced = load_acquire(&mc->produced);
	consumed = mc->consumed;
	TH_LOG("cpu %d: produced %llu consumed %llu overwritten %llu", cpu,
	       (unsigned long long)produced, (unsigned long long)consumed,
	       (unsigned long long)mc->overwritten);
	ASSERT_EQ(4, produced - consumed);
	ASSERT_LT(4, produced);
	ASSERT_EQ(consumed, mc->overwritten);
	for (uint64_t p = consumed; p < produced; p++) {
		ASSERT_NE(NULL, ring_chunk(self->ring, cpu, p));
		ASSERT_EQ(p, ring_chunk(self->ring, cpu, p)->seq);
	}

	/* The dump: header + the newest chunks of every CPU. */
	add_header(self->ring, &self->b);
	ASSERT_LT(0, drain_ring(self->ring, &self->b, NULL));
	ASSERT_EQ(produced, mc->consumed);
	decode(&self->b, &self->d, pfn);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_EQ(4, self->d.chunks[cpu]);
	ASSERT_EQ(consumed, self->d.first_seq[cpu]);
	ASSERT_EQ(produced - 1, self->d.last_seq[cpu]);
	ASSERT_EQ(consumed, self->d.missing[cpu]);
	ASSERT_TRUE(self->d.found_alloc) TH_LOG("the event before FREEZE is missing");
	ASSERT_EQ(cpu, self->d.found_cpu);
	/* In the newest chunk, or the one before if its free filled that. */
	ASSERT_LE(produced - 2, self->d.found_seq);

	/* THAW: overwriting resumes; a second dump follows the first. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_THAW));
	ASSERT_FALSE(pgtrace_ring_flags(self->ring) & PAGETRACE_META_FROZEN);
	current_pos(self->ring, pos);
	ASSERT_EQ(-EBUSY, consume(self->fd, pos, nr));
	touch_and_free(4096 * PAGE);
	ASSERT_LT(produced + 4, load_acquire(&mc->produced));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_THAW));	/* no-op now */
	ASSERT_EQ(0, drain_to_end(self->ring, &self->b));
	decode(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_LT(consumed, self->d.missing[cpu]);
	ASSERT_EQ(load_acquire(&mc->produced) - 1, self->d.last_seq[cpu]);
}

/* A stopped flight recorder reads with read() too: the newest chunks. */
TEST_F_TIMEOUT(mm, flight_read_after_stop, 120)
{
	struct pagetrace_mode md = { .mode = PAGETRACE_MODE_FLIGHT };
	static unsigned char hdr[1 << 16];
	struct pagetrace_info info;
	uint64_t pfn;
	int cpu;

	READY();
	ASSERT_EQ(0, small_buffers(self, PAGE, 4));
	cpu = pin_to_first_cpu();
	ASSERT_LE(0, cpu);
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	touch_and_free(2048 * PAGE);
	pfn = one_page_event();
	ASSERT_NE(0, pfn);

	/* Before STOP: the header, then nothing (EAGAIN), never a chunk. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_INFO, &info));
	ASSERT_TRUE(info.flags & PAGETRACE_FLAG_OVERWRITE);
	ASSERT_GE(sizeof(hdr), info.header_size);
	/* The header and the memory map at start, then EAGAIN. */
	for (;;) {
		ssize_t n = read(self->fd, hdr, sizeof(hdr));

		if (n < 0) {
			ASSERT_EQ(EAGAIN, errno);
			break;
		}
		ASSERT_LT(0, n);
		buf_add(&self->b, hdr, n);
	}
	ASSERT_LE(info.header_size, self->b.len);

	/* Blocking now; it must still end, the session being stopped. */
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL,
			   fcntl(self->fd, F_GETFL) & ~O_NONBLOCK));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, read_all(self->fd, &self->b));
	ASSERT_LT(info.header_size, self->b.len);

	decode(&self->b, &self->d, pfn);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_EQ(4, self->d.chunks[cpu]);
	ASSERT_LT(0, self->d.missing[cpu]);
	ASSERT_TRUE(self->d.found_alloc);
}

/* ------------------------------------------------------- pagetrace record */

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

FIXTURE(rec) {
	const char	*bin;
	char		out[4096];	/* the recorder's stdout + stderr */
	struct buf	b;
	struct decoded	d;
	bool		mounted;
};

FIXTURE_SETUP(rec)
{
	self->bin = getenv("PAGETRACE_BIN");
}

FIXTURE_TEARDOWN(rec)
{
	free(self->b.p);
	if (self->mounted)
		umount("/tmp/pt-small");
}

#define REC_READY() do {						\
	if (access(DEV, F_OK))						\
		SKIP(return, DEV " missing: load pagetrace.ko first");	\
	if (!self->bin || access(self->bin, X_OK))			\
		SKIP(return, "no pagetrace CLI: set PAGETRACE_BIN");	\
} while (0)

/*
 * Wait until a recorder's session has its probes attached, so that what we
 * allocate next is recorded: whatever the backend, a session's last probe
 * is the kprobe on compaction (module/hooks.c attaches the roles in
 * order), on split_map_pages, post_alloc_hook or compaction_alloc.  (A
 * fixed sleep is not enough under emulation: session start walks all of
 * memory for the snapshot.)
 */
static bool wait_for_session(void)
{
	static char list[1 << 16];

	for (int i = 0; i < 500; i++) {
		int fd = open("/sys/kernel/debug/kprobes/list", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, list, sizeof(list) - 1);

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			list[n] = '\0';
			if (strstr(list, " split_map_pages+0x") ||
			    strstr(list, " post_alloc_hook+0x") ||
			    strstr(list, " compaction_alloc+0x"))
				return true;
		}
		usleep(20000);
	}
	return false;
}

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

static int load_file(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY), ret;

	if (fd < 0)
		return -errno;
	ret = read_all(fd, b);
	close(fd);
	return ret;
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
	ASSERT_LE(0, pin_to_first_cpu());
	pid = rec_start(self, argv, &rfd);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(wait_for_session());
	for (int i = 0; i < 20; i++)
		touch_and_free(64 * PAGE);
	pfn = one_page_event();
	ASSERT_NE(0, pfn);
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(0, st);
	ASSERT_NE(NULL, strstr(self->out, "\"stopped_by\": \"duration\""));
	ASSERT_NE(NULL, strstr(self->out, "\"lost\": 0,"));
	ASSERT_NE(NULL, strstr(self->out, "\"error\": null"));
	ASSERT_EQ(0, load_file("/tmp/pt-rec.bin", &self->b));
	decode(&self->b, &self->d, pfn);
	unlink("/tmp/pt-rec.bin");
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_TRUE(self->d.found_alloc);
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
	ASSERT_EQ(0, load_file("/tmp/pt-cmd.bin", &self->b));
	unlink("/tmp/pt-cmd.bin");
	decode(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	for (int cpu = 0; cpu < MAX_CPUS; cpu++)
		events += self->d.events[cpu];
	ASSERT_LT(0, events);
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
		on_every_cpu(256 * PAGE);
	}
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(1, st);
	ASSERT_NE(NULL, strstr(self->out, "disk full"));
	ASSERT_NE(NULL, strstr(self->out, "valid trace"));
	ASSERT_EQ(0, stat("/tmp/pt-small/t.bin", &sb));
	ASSERT_GE(256 * 1024, sb.st_size);
	ASSERT_EQ(0, load_file("/tmp/pt-small/t.bin", &self->b));
	decode(&self->b, &self->d, 0);
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
	ASSERT_LE(0, pin_to_first_cpu());
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
	touch_and_free(2048 * PAGE);
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	usleep(300000);
	/* ~8000 events on our CPU: far more than 32 KiB of chunks hold. */
	touch_and_free(4096 * PAGE);
	ASSERT_EQ(0, kill(pid, SIGINT));	/* Ctrl-C: the final dump */
	st = rec_wait(self, pid, rfd);
	TH_LOG("%s", self->out);
	ASSERT_EQ(0, st);
	ASSERT_NE(NULL, strstr(self->out, "snapshot 1:"));
	/* The module's defaults are back after the session. */
	ASSERT_EQ(DEF_BUF_SIZE, read_param("buf_size"));
	ASSERT_EQ(DEF_NR_BUFS, read_param("nr_bufs"));
	ASSERT_EQ(0, load_file("/tmp/pt-fr.bin", &self->b));
	unlink("/tmp/pt-fr.bin");
	decode(&self->b, &self->d, 0);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	for (int cpu = 0; cpu < MAX_CPUS; cpu++)
		missing += self->d.missing[cpu];
	ASSERT_LT(0, missing);
}

TEST_HARNESS_MAIN
