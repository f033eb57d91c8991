// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_mmap_test: zero-copy reading of /dev/pagetrace - the mapping
 * (its meta area, geometry and header copy against INFO and read(); the
 * mappings the kernel refuses), the CONSUME handoff and its argument and
 * state checks, SET_MODE, FREEZE and THAW, poll, and flush.  The mapped
 * chunks must be byte for byte those read() returns, and the meta
 * counters, STATS and the decoded stream must agree exactly; a flight
 * recorder (4 one-page buffers, far more events) keeps exactly the newest
 * chunks, the event just before FREEZE among them, and reads after STOP.
 * The mapping is read through libpagetrace's ring (pgtrace_ring_*), as
 * pagetrace record reads it (pagetrace_record_test runs that).  Runs as
 * root with pagetrace.ko loaded with its default parameters (skips
 * otherwise); tests that need tiny buffers set them through sysfs for
 * their own session and restore them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define PAGE		4096UL

/* --------------------------------------------------------------- helpers */

static uint64_t now_ms(void)
{
	return pt_st_mono_ns() / 1000000;
}

/* pt_st_set_param() of a number. */
static int set_param_num(const char *name, long val)
{
	char s[32];

	snprintf(s, sizeof(s), "%ld", val);
	return pt_st_set_param(name, s);
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
static int drain_ring(struct pgtrace_ring *ring, struct pt_st_buf *b,
		      struct pt_st_buf *per_cpu)
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
			pt_st_buf_add(b, ch, len);
			if (per_cpu)
				pt_st_buf_add(&per_cpu[cpu], ch, len);
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
static int drain_to_end(struct pgtrace_ring *ring, struct pt_st_buf *b)
{
	int n, rounds = 0;

	do {
		n = drain_ring(ring, b, NULL);
	} while (n > 0 && ++rounds < 100);
	return n;
}

/* The stream's prefix from the mapping: the header, then the snapshot. */
static void add_header(struct pgtrace_ring *ring, struct pt_st_buf *b)
{
	const void *snap;
	size_t snap_len;
	const struct pagetrace_header *h = pgtrace_ring_header(ring, &snap, &snap_len);

	pt_st_buf_add(b, h, pgtrace_ring_meta(ring)->header_size);
	pt_st_buf_add(b, snap, snap_len);
}

/* ----------------------------------------------------------------- fixture */

FIXTURE(mm) {
	int			fd;
	struct pgtrace_ring	*ring;
	struct pt_st_buf	b;
	struct pt_st_counts	d;
	bool			params;	/* teardown restores buf_size/nr_bufs */
	const char		*skip;	/* why the tests cannot run here */
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
	else if (pt_st_get_param("buf_size") != PT_ST_DEF_BUF_SIZE ||
		 pt_st_get_param("nr_bufs") != PT_ST_DEF_NR_BUFS)
		self->skip = "pagetrace not loaded with its default parameters";
}

FIXTURE_TEARDOWN(mm)
{
	pgtrace_ring_unmap(self->ring);
	if (self->fd >= 0)
		close(self->fd);
	pt_st_buf_free(&self->b);
	if (self->params) {
		EXPECT_EQ(0, set_param_num("buf_size", PT_ST_DEF_BUF_SIZE));
		EXPECT_EQ(0, set_param_num("nr_bufs", PT_ST_DEF_NR_BUFS));
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
	ret = set_param_num("buf_size", buf_size);
	return ret ? ret : set_param_num("nr_bufs", nr_bufs);
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
	/* Not stopped, not frozen, not overwriting; the pages are counted. */
	ASSERT_EQ(PAGETRACE_META_PAGES, mt->flags);
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
	uint64_t pos[PT_ST_MAX_CPUS] = { 0 }, before[PT_ST_MAX_CPUS];
	unsigned int nr;
	ssize_t n;
	char byte;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(PT_ST_MAX_CPUS, nr);

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
	pt_st_touch_and_free(64 * PAGE);
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
	pt_st_touch_and_free(16 * PAGE);
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
	static struct pt_st_buf per_cpu[PT_ST_MAX_CPUS];
	struct pt_st_buf rd = { 0 }, mapped = { 0 };
	struct pt_st_counts *dr;
	uint64_t total = 0;
	unsigned int nr;
	size_t off;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(PT_ST_MAX_CPUS, nr);
	pt_st_on_every_cpu(256 * PAGE, NULL, 0);
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
			pt_st_buf_add(&per_cpu[cpu], ch, chunk_len(ch));
			pt_st_buf_add(&mapped, ch, chunk_len(ch));
		}
		total += end;
	}
	ASSERT_LT(0, total);

	/* Now read() the same session to its end. */
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &rd));
	/* The prefix: the header, then the snapshot chunks. */
	off = pgtrace_ring_meta(self->ring)->header_size + pgtrace_ring_meta(self->ring)->snapshot_size;
	ASSERT_LE(off, rd.len);
	ASSERT_EQ(0, memcmp(rd.p, mapped.p, off));
	while (off < rd.len) {
		const struct pagetrace_chunk *ch = (const void *)(rd.p + off);
		size_t len = chunk_len(ch);
		struct pt_st_buf *pc;

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
	pt_st_count_stream(&rd, dr, 0);
	pt_st_count_stream(&mapped, &self->d, 0);
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
	struct pagetrace_cpu_stats st[PT_ST_MAX_CPUS];
	struct pagetrace_stats s = { 0 };
	unsigned int nr;

	READY();
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(PT_ST_MAX_CPUS, nr);
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	for (int i = 0; i < 4; i++) {
		pt_st_on_every_cpu(128 * PAGE, NULL, 0);
		ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	}
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, drain_to_end(self->ring, &self->b));

	pt_st_count_stream(&self->b, &self->d, 0);
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
	ASSERT_LE(0, pt_st_pin_first_cpu());
	ASSERT_EQ(0, open_session(self));
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	for (int i = 0; i < 8; i++) {
		pfns[i] = pt_st_one_page_event(NULL, false);
		ASSERT_NE(0, pfns[i]) TH_LOG("no PFN from /proc/self/pagemap");
	}
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	/* No waiting: everything is in closed chunks when FLUSH returns. */
	ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	for (int i = 0; i < 8; i++) {
		pt_st_count_stream(&self->b, &self->d, pfns[i]);
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
	long flush_ms = pt_st_get_param("flush_ms");
	struct pollfd pfd;
	uint64_t pfn, t0, deadline;
	bool seen = false;

	READY();
	ASSERT_LE(10, flush_ms);
	ASSERT_LE(0, pt_st_pin_first_cpu());
	ASSERT_EQ(0, open_session(self));
	ASSERT_EQ(0, consume(self->fd, NULL, 0));
	add_header(self->ring, &self->b);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_LE(0, drain_ring(self->ring, &self->b, NULL));
	/* Claimed by the mapping: the unread header does not count. */
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };

	pfn = pt_st_one_page_event(NULL, false);
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
		pt_st_count_stream(&self->b, &self->d, pfn);
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
	uint64_t pfn, produced, consumed, pos[PT_ST_MAX_CPUS];
	struct pagetrace_info info;
	struct pagetrace_header h;
	unsigned int nr;
	int cpu;

	READY();
	ASSERT_EQ(0, small_buffers(self, PAGE, 4));
	cpu = pt_st_pin_first_cpu();
	ASSERT_LE(0, cpu);
	ASSERT_EQ(0, open_session(self));
	nr = pgtrace_ring_meta(self->ring)->nr_cpus;
	ASSERT_GE(PT_ST_MAX_CPUS, nr);
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
	pt_st_touch_and_free(4096 * PAGE);
	pfn = pt_st_one_page_event(NULL, false);
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
	pt_st_count_stream(&self->b, &self->d, pfn);
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
	pt_st_touch_and_free(4096 * PAGE);
	ASSERT_LT(produced + 4, load_acquire(&mc->produced));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_THAW));	/* no-op now */
	ASSERT_EQ(0, drain_to_end(self->ring, &self->b));
	pt_st_count_stream(&self->b, &self->d, 0);
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
	cpu = pt_st_pin_first_cpu();
	ASSERT_LE(0, cpu);
	self->fd = open(DEV, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_SET_MODE, &md));
	pt_st_touch_and_free(2048 * PAGE);
	pfn = pt_st_one_page_event(NULL, false);
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
		pt_st_buf_add(&self->b, hdr, n);
	}
	ASSERT_LE(info.header_size, self->b.len);

	/* Blocking now; it must still end, the session being stopped. */
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL,
			   fcntl(self->fd, F_GETFL) & ~O_NONBLOCK));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, pt_st_buf_drain(self->fd, &self->b));
	ASSERT_LT(info.header_size, self->b.len);

	pt_st_count_stream(&self->b, &self->d, pfn);
	ASSERT_EQ(0, self->d.err) TH_LOG("%s", self->d.why);
	ASSERT_EQ(4, self->d.chunks[cpu]);
	ASSERT_LT(0, self->d.missing[cpu]);
	ASSERT_TRUE(self->d.found_alloc);
}

TEST_HARNESS_MAIN
