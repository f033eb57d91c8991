// SPDX-License-Identifier: GPL-2.0
/*
 * top_fakedev.so: a stand-in for /dev/pagetrace, preloaded into the
 * pagetrace CLI (LD_PRELOAD), so that the host tests can drive the live
 * path of pagetrace top - mapping, ring positions, CONSUME, FLUSH, STATS,
 * poll - without the module.
 *
 *   PT_FAKE_TRACE=FILE   the trace whose chunks the fake "kernel" publishes
 *   PT_FAKE_SPEED=X      trace seconds per second (default 1)
 *   PT_FAKE_OPEN_ERRNO=N open() fails with errno N (EBUSY, EPERM ...)
 *
 * open("/dev/pagetrace") gives an eventfd, readable while chunks wait;
 * mmap() of it gives a meta area laid out as uapi/linux/pagetrace.h draws
 * it, with the trace's header and snapshot chunks, and a thread publishes
 * each CPU chunk of the trace into its CPU's ring when its first time
 * base comes (it waits while the ring is full).  STATS counts the lost
 * fields of the chunks published.  Only what pagetrace top uses.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/pagetrace.h>

#define DEV		"/dev/pagetrace"
#define NR_BUFS		8
#define META_SIZE	(1 << 20)

static int dev_fd = -1;
static unsigned char *map, *trace;
static size_t map_size, trace_len;
static struct pagetrace_meta *meta;
static uint64_t lost_published;
static pthread_t publisher;

static struct pagetrace_meta_cpu *mcpu(unsigned int cpu)
{
	return (void *)(map + meta->cpu_offset + (size_t)cpu * meta->cpu_stride);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ULL, ns % 1000000000ULL };

	nanosleep(&ts, NULL);
}

static void *publish(void *arg)
{
	const struct pagetrace_header *h = (const void *)trace;
	const char *sp = getenv("PT_FAKE_SPEED");
	double speed = sp ? atof(sp) : 1;
	uint64_t wall0 = mono_ns(), one = 1;
	size_t off = h->header_size;

	(void)arg;
	if (speed <= 0)
		speed = 1;
	while (off + sizeof(struct pagetrace_chunk) <= trace_len) {
		const struct pagetrace_chunk *c = (const void *)(trace + off);
		size_t len = sizeof(*c) + 8ULL * c->nr_words;
		struct pagetrace_meta_cpu *mc;
		uint64_t t, due, pos;

		off += len;
		if (c->flags & (PAGETRACE_CHUNK_SNAPSHOT | PAGETRACE_CHUNK_SYMBOLS) ||
		    c->cpu >= meta->nr_cpus || len > meta->chunk_size)
			continue;
		/* Word 1 is the chunk's first time base: sync, t >> 7 << 3. */
		memcpy(&t, (const char *)c + sizeof(*c) + 8, 8);
		t = (t >> 3) << 7;
		due = wall0 + (uint64_t)((t > h->start_ns ? t - h->start_ns : 0) / speed);
		while (mono_ns() < due)
			sleep_ns(1000000);
		mc = mcpu(c->cpu);
		while (mc->produced - __atomic_load_n(&mc->consumed, __ATOMIC_ACQUIRE) >= NR_BUFS)
			sleep_ns(1000000);
		pos = mc->produced;
		memcpy(map + meta->data_offset + c->cpu * meta->ring_size +
		       (pos % NR_BUFS) * meta->chunk_size, c, len);
		mc->lost += c->lost;
		mc->chunks++;
		mc->bytes += len;
		__atomic_fetch_add(&lost_published, c->lost, __ATOMIC_RELAXED);
		__atomic_store_n(&mc->produced, pos + 1, __ATOMIC_RELEASE);
		if (write(dev_fd, &one, 8) != 8)
			break;
	}
	return NULL;
}

/* The meta area, header and snapshot of the trace; 0 or -1. */
static int build(void)
{
	const char *path = getenv("PT_FAKE_TRACE");
	const struct pagetrace_header *h;
	size_t off, snap = 0, snap_off;
	FILE *f;

	if (!path)
		return -1;
	f = fopen(path, "re");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	trace_len = ftell(f);
	rewind(f);
	trace = malloc(trace_len);
	if (!trace || fread(trace, 1, trace_len, f) != trace_len) {
		fclose(f);
		return -1;
	}
	fclose(f);
	h = (const void *)trace;
	for (off = h->header_size; off + 32 <= trace_len;) {
		const struct pagetrace_chunk *c = (const void *)(trace + off);
		size_t len = sizeof(*c) + 8ULL * c->nr_words;

		if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
			snap += len;
		off += len;
	}
	snap_off = META_SIZE + (size_t)h->nr_cpus * NR_BUFS * h->chunk_size;
	map_size = (snap_off + snap + 4095) & ~4095UL;
	map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	meta = (void *)map;
	meta->magic = PAGETRACE_META_MAGIC;
	meta->version = PAGETRACE_VERSION;
	meta->meta_size = META_SIZE;
	meta->cpu_offset = 4096;
	meta->cpu_stride = sizeof(struct pagetrace_meta_cpu);
	meta->nr_cpus = h->nr_cpus;
	meta->header_offset = 65536;
	meta->header_size = h->header_size;
	meta->chunk_size = h->chunk_size;
	meta->nr_bufs = NR_BUFS;
	meta->page_shift = 12;
	meta->data_offset = META_SIZE;
	meta->ring_size = (uint64_t)NR_BUFS * h->chunk_size;
	meta->mmap_size = map_size;
	meta->snapshot_offset = snap_off;
	meta->snapshot_size = snap;
	memcpy(map + meta->header_offset, trace, h->header_size);
	for (off = h->header_size, snap = 0; off + 32 <= trace_len;) {
		const struct pagetrace_chunk *c = (const void *)(trace + off);
		size_t len = sizeof(*c) + 8ULL * c->nr_words;

		if (c->flags & PAGETRACE_CHUNK_SNAPSHOT) {
			memcpy(map + snap_off + snap, c, len);
			snap += len;
		}
		off += len;
	}
	return 0;
}

static int fake_open(void)
{
	const char *e = getenv("PT_FAKE_OPEN_ERRNO");

	if (e) {
		errno = atoi(e);
		return -1;
	}
	if (dev_fd >= 0) {
		errno = EBUSY;
		return -1;
	}
	if (build()) {
		errno = ENODEV;
		return -1;
	}
	dev_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev_fd >= 0)
		pthread_create(&publisher, NULL, publish, NULL);
	return dev_fd;
}

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	va_list ap;
	mode_t mode;

	if (!strcmp(path, DEV))
		return fake_open();
	if (!real)
		real = dlsym(RTLD_NEXT, "open");
	va_start(ap, flags);
	mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	va_list ap;
	mode_t mode;

	if (!strcmp(path, DEV))
		return fake_open();
	if (!real)
		real = dlsym(RTLD_NEXT, "open64");
	va_start(ap, flags);
	mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);

	if (fd >= 0 && fd == dev_fd)
		return len == map_size && !off ? (void *)map : MAP_FAILED;
	if (!real)
		real = dlsym(RTLD_NEXT, "mmap");
	return real(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	static int (*real)(void *, size_t);

	if (addr == map)
		return 0;	/* the publisher may still write to it */
	if (!real)
		real = dlsym(RTLD_NEXT, "munmap");
	return real(addr, len);
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd < 0 || fd != dev_fd) {
		if (!real)
			real = dlsym(RTLD_NEXT, "ioctl");
		return real(fd, req, arg);
	}
	if (req == PAGETRACE_IOC_MMAP_INFO) {
		struct pagetrace_mmap_info *mi = arg;

		memset(mi, 0, sizeof(*mi));
		mi->mmap_size = map_size;
		mi->data_offset = meta->data_offset;
		mi->ring_size = meta->ring_size;
		mi->meta_size = meta->meta_size;
		mi->nr_cpus = meta->nr_cpus;
		return 0;
	}
	if (req == PAGETRACE_IOC_CONSUME) {
		struct pagetrace_consume *c = arg;
		const uint64_t *pos = (const void *)(uintptr_t)c->pos;
		uint64_t n;

		for (unsigned int i = 0; i < c->nr_cpus && i < meta->nr_cpus; i++)
			if (pos[i] < mcpu(i)->consumed || pos[i] > mcpu(i)->produced) {
				errno = EINVAL;
				return -1;
			}
		for (unsigned int i = 0; i < c->nr_cpus && i < meta->nr_cpus; i++)
			__atomic_store_n(&mcpu(i)->consumed, pos[i], __ATOMIC_RELEASE);
		/* Readable again only when a chunk is published. */
		if (read(dev_fd, &n, 8) < 0 && errno != EAGAIN)
			return -1;
		return 0;
	}
	if (req == PAGETRACE_IOC_STATS) {
		struct pagetrace_stats *st = arg;
		struct pagetrace_cpu_stats *cs = (void *)(uintptr_t)st->cpus;

		for (unsigned int i = 0; i < st->nr_cpus && i < meta->nr_cpus; i++) {
			memset(&cs[i], 0, sizeof(cs[i]));
			cs[i].lost = mcpu(i)->lost;
		}
		st->nr_cpus = meta->nr_cpus;
		return 0;
	}
	if (req == PAGETRACE_IOC_FLUSH || req == PAGETRACE_IOC_STOP)
		return 0;
	errno = ENOTTY;
	return -1;
}
