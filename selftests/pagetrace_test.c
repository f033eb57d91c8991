// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_test: the semantics of /dev/pagetrace, checked against the real
 * kernel.  Runs as root with pagetrace.ko loaded; tests that unload and
 * reload the module find it at $PAGETRACE_KO (default ./pagetrace.ko).
 * Every test leaves the module loaded with its default parameters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
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
#define MOD_NAME	"pagetrace"
#define MOD_SYSFS	"/sys/module/pagetrace"

/* The module's defaults (module/session.c); teardown restores them. */
#define DEF_BUF_SIZE	65536
#define DEF_NR_BUFS	16
#define DEF_FLUSH_MS	250

#define NOBODY		65534
#define PAGE		4096UL

/* An address no process has mapped; volatile so the compiler lets it be. */
static void *volatile bad_addr = (void *)1;

/* --------------------------------------------------------------- helpers */

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static bool mod_live(void)
{
	char s[32] = "";
	int fd = open(MOD_SYSFS "/initstate", O_RDONLY);

	if (fd < 0)
		return false;
	if (read(fd, s, sizeof(s) - 1) < 0)
		s[0] = 0;
	close(fd);
	return !strncmp(s, "live", 4);
}

/* A bool module parameter from sysfs: "Y" or "1". */
static bool param_on(const char *name)
{
	char path[128], s[8] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), MOD_SYSFS "/parameters/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, s, sizeof(s) - 1);
	close(fd);
	return n > 0 && (s[0] == 'Y' || s[0] == '1');
}

/* A module parameter from sysfs, or -1. */
static long read_param(const char *name)
{
	char path[128], s[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), MOD_SYSFS "/parameters/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, s, sizeof(s) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	return strtol(s, NULL, 0);
}

/* Wait up to @ms for /dev/pagetrace to exist (@present) or not. */
static bool wait_dev(bool present, int ms)
{
	for (int i = 0; i <= ms / 10; i++) {
		if ((access(DEV, F_OK) == 0) == present)
			return true;
		usleep(10000);
	}
	return false;
}

static bool mod_is_default(void)
{
	return mod_live() && read_param("buf_size") == DEF_BUF_SIZE &&
	       read_param("nr_bufs") == DEF_NR_BUFS &&
	       read_param("flush_ms") == DEF_FLUSH_MS;
}

/* Make sure the module is loaded with its defaults; 0 or -errno. */
static int mod_ensure_default(void)
{
	int ret;

	if (!mod_is_default()) {
		if (mod_live()) {
			ret = pt_st_mod_unload();
			if (ret)
				return ret;
		}
		ret = pt_st_mod_load("");
		if (ret)
			return ret;
	}
	return wait_dev(true, 2000) && mod_is_default() ? 0 : -ENODEV;
}

/* A growable byte buffer for stream data. */
struct buf {
	unsigned char	*p;
	size_t		len;
	size_t		cap;
};

static void buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? 2 * b->cap : 1 << 20;
	b->p = realloc(b->p, b->cap);
	if (!b->p)
		abort();
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* One read() of up to 1 MiB appended to @b; returns read()'s result. */
static ssize_t buf_read(int fd, struct buf *b)
{
	ssize_t n;

	buf_reserve(b, 1 << 20);
	n = read(fd, b->p + b->len, 1 << 20);
	if (n > 0)
		b->len += n;
	return n;
}

/*
 * Read until EAGAIN (non-blocking fd) or EOF; returns 1 at EAGAIN, 0 at
 * EOF, -errno on another error.
 */
static int buf_drain(int fd, struct buf *b)
{
	for (;;) {
		ssize_t n = buf_read(fd, b);

		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EAGAIN ? 1 : -errno;
	}
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/*
 * The header as the kernel wrote it, parsed without the library.
 */
struct hdr {
	struct pagetrace_header		h;
	char				release[256];
	bool				have_release;
	struct pagetrace_rec_session	sess;
	bool				have_session;
	struct pagetrace_rec_zone	zones[64];
	unsigned int			nr_zones;
	bool				have_end;
	char				why[160];	/* "" if well formed */
};

static void parse_header(const unsigned char *raw, size_t len, struct hdr *hi)
{
	size_t pos = sizeof(hi->h), hsize;

	memset(hi, 0, sizeof(*hi));
	if (len < sizeof(hi->h)) {
		snprintf(hi->why, sizeof(hi->why), "only %zu bytes", len);
		return;
	}
	memcpy(&hi->h, raw, sizeof(hi->h));
	hsize = hi->h.header_size;
	if (hsize > len || hsize < sizeof(hi->h)) {
		snprintf(hi->why, sizeof(hi->why), "header_size %zu, have %zu",
			 hsize, len);
		return;
	}
	while (pos + sizeof(struct pagetrace_record) <= hsize) {
		struct pagetrace_record rec;
		const unsigned char *pl;
		size_t space;

		memcpy(&rec, raw + pos, sizeof(rec));
		if (rec.type == PAGETRACE_REC_END) {
			hi->have_end = true;
			if (rec.size)
				snprintf(hi->why, sizeof(hi->why),
					 "END record at %zu has size %u",
					 pos, rec.size);
			return;
		}
		space = (rec.size + 7) & ~7UL;
		pl = raw + pos + sizeof(rec);
		if (pos + sizeof(rec) + space > hsize) {
			snprintf(hi->why, sizeof(hi->why),
				 "record type %u at %zu overruns header_size %zu",
				 rec.type, pos, hsize);
			return;
		}
		for (size_t i = rec.size; i < space; i++) {
			if (pl[i]) {
				snprintf(hi->why, sizeof(hi->why),
					 "record at %zu: nonzero padding", pos);
				return;
			}
		}
		switch (rec.type) {
		case PAGETRACE_REC_RELEASE:
			if (!rec.size || rec.size > sizeof(hi->release) ||
			    pl[rec.size - 1]) {
				snprintf(hi->why, sizeof(hi->why),
					 "bad release record (size %u)", rec.size);
				return;
			}
			memcpy(hi->release, pl, rec.size);
			hi->have_release = true;
			break;
		case PAGETRACE_REC_SESSION:
			if (rec.size != sizeof(hi->sess)) {
				snprintf(hi->why, sizeof(hi->why),
					 "session record size %u", rec.size);
				return;
			}
			memcpy(&hi->sess, pl, sizeof(hi->sess));
			hi->have_session = true;
			break;
		case PAGETRACE_REC_ZONE:
			if (rec.size != sizeof(hi->zones[0]) ||
			    hi->nr_zones == 64) {
				snprintf(hi->why, sizeof(hi->why),
					 "zone record size %u (#%u)", rec.size,
					 hi->nr_zones);
				return;
			}
			memcpy(&hi->zones[hi->nr_zones++], pl, rec.size);
			break;
		}
		pos += sizeof(rec) + space;
	}
}

/* Read the whole header off a fresh session with plain read()s. */
static int read_header(int fd, struct buf *b, struct hdr *hi)
{
	struct pagetrace_header h;
	ssize_t n;

	buf_reserve(b, sizeof(h));
	n = read(fd, b->p + b->len, sizeof(h));
	if (n != sizeof(h))
		return n < 0 ? -errno : -EIO;
	memcpy(&h, b->p + b->len, sizeof(h));
	b->len += n;
	if (h.header_size < sizeof(h) || h.header_size > (1 << 20))
		return -EBADMSG;
	buf_reserve(b, h.header_size);
	while (b->len < h.header_size) {
		n = read(fd, b->p + b->len, h.header_size - b->len);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		b->len += n;
	}
	parse_header(b->p, b->len, hi);
	return 0;
}

static int get_info(int fd, struct pagetrace_info *info)
{
	memset(info, 0xa5, sizeof(*info));
	return ioctl(fd, PAGETRACE_IOC_INFO, info) ? -errno : 0;
}

/* PAGETRACE_IOC_STATS into @cpus[@nr]; 0 or -errno. */
static int get_stats(int fd, struct pagetrace_cpu_stats *cpus, unsigned int nr,
		     struct pagetrace_stats *st)
{
	memset(st, 0, sizeof(*st));
	memset(cpus, 0xa5, nr * sizeof(*cpus));
	st->cpus = (uintptr_t)cpus;
	st->nr_cpus = nr;
	return ioctl(fd, PAGETRACE_IOC_STATS, st) ? -errno : 0;
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

/* Touch @len bytes of fresh anonymous memory page by page, then free it. */
static void touch_and_free(size_t len)
{
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	/* Single pages, so that the event count follows the page count. */
	madvise((void *)p, len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len; i += PAGE)
		p[i] = 1;
	munmap((void *)p, len);
}

struct worker {
	pthread_t	thread;
	int		cpu;
	size_t		len;
	int		ran_on;		/* sched_getcpu() after the work */
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		w->ran_on = -1;
		return NULL;
	}
	touch_and_free(w->len);
	w->ran_on = sched_getcpu();
	return NULL;
}

/*
 * Run touch_and_free(@len) once on every CPU we may run on, each in a
 * thread pinned to it.  Returns how many CPUs, fills @cpus (0/1 per id), or
 * -1 if a thread could not be pinned.
 */
static int on_every_cpu(size_t len, unsigned char *cpus, unsigned int nr)
{
	struct worker w[256];
	cpu_set_t set;
	int n = 0, bad = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE && n < 256; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		w[n].cpu = cpu;
		w[n].len = len;
		w[n].ran_on = -1;
		if (pthread_create(&w[n].thread, NULL, worker_fn, &w[n]))
			return -1;
		n++;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].ran_on != w[i].cpu)
			bad = 1;
		else if ((unsigned int)w[i].cpu < nr)
			cpus[w[i].cpu] = 1;
	}
	return bad ? -1 : n;
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
	if (!(e & (1ULL << 63)))
		return 0;
	return e & ((1ULL << 55) - 1);
}

/*
 * Map and touch one page, note its PFN, unmap it: one alloc and one free
 * event of a PFN we know.  Returns the PFN (0 on failure) and the
 * CLOCK_MONOTONIC time just before the touch.
 */
static uint64_t one_page_event(uint64_t *mono_before)
{
	volatile char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t pfn;

	if (p == MAP_FAILED)
		return 0;
	*mono_before = now_ns(CLOCK_MONOTONIC);
	p[0] = 1;
	pfn = virt_to_pfn((const void *)p);
	munmap((void *)p, PAGE);
	/* The free may wait in an LRU batch (7.x). */
	pt_st_drain_lru();
	return pfn;
}

/*
 * Walk the chunks after the header in @b without the library, up to the
 * last complete chunk, checking each one's framing: magic, cpu, reserved,
 * size, and that it starts with pid(cpu) then a sync word at or after the
 * session start.  Returns the bytes covered by complete chunks (header
 * included); @why says what was wrong, "" if nothing.
 */
struct raw_cpu {
	uint64_t	chunks;
	uint64_t	bytes;
	uint64_t	lost;
	uint64_t	full_chunks;	/* not flushed */
	uint64_t	max_words;
};

static size_t walk_chunks(const struct buf *b, const struct pagetrace_header *h,
			  struct raw_cpu *cpus, char *why, size_t whylen)
{
	size_t pos = h->header_size;
	uint64_t start_base = h->start_ns & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
	uint32_t max_words = (h->chunk_size - sizeof(struct pagetrace_chunk)) / 8;

	why[0] = 0;
	while (pos + sizeof(struct pagetrace_chunk) <= b->len) {
		struct pagetrace_chunk ch;
		uint64_t w0, w1;
		size_t size;

		memcpy(&ch, b->p + pos, sizeof(ch));
		size = sizeof(ch) + (size_t)ch.nr_words * 8;
		if (memcmp(ch.magic, PAGETRACE_CHUNK_MAGIC, 4)) {
			snprintf(why, whylen, "offset %zu: no chunk magic", pos);
			break;
		}
		if (ch.cpu >= h->nr_cpus || ch.reserved ||
		    ch.nr_words < 2 || ch.nr_words > max_words) {
			snprintf(why, whylen,
				 "offset %zu: chunk cpu %u reserved %u nr_words %u (max %u)",
				 pos, ch.cpu, ch.reserved, ch.nr_words, max_words);
			break;
		}
		if (pos + size > b->len)
			break;	/* partial: the caller reads more */
		/*
		 * Unflushed chunks close only when the next event won't fit:
		 * at most 3 words, 7 with a name and a task record before it.
		 */
		if (!(ch.flags & PAGETRACE_CHUNK_FLUSHED) &&
		    ch.nr_words + (h->flags & PAGETRACE_FLAG_TASKS ? 7 : 3) <= max_words) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu not flushed but only %u of %u words",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 ch.nr_words, max_words);
			break;
		}
		if (ch.flags & ~PAGETRACE_CHUNK_FLUSHED) {
			snprintf(why, whylen, "offset %zu: chunk flags %#x",
				 pos, ch.flags);
			break;
		}
		memcpy(&w0, b->p + pos + sizeof(ch), 8);
		memcpy(&w1, b->p + pos + sizeof(ch) + 8, 8);
		if (!pagetrace_word_is_pid(w0) ||
		    pagetrace_word_id(w0) != ch.cpu) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu: word 0 is %#llx, not pid(%u)",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 (unsigned long long)w0, ch.cpu);
			break;
		}
		if (pagetrace_word_type(w1) != PAGETRACE_EV_SYNC ||
		    pagetrace_word_is_pid(w1) ||
		    pagetrace_word_sync_ns(w1) < start_base) {
			snprintf(why, whylen,
				 "offset %zu: cpu %u chunk seq %llu: word 1 %#llx is not a sync at or after start %llu",
				 pos, ch.cpu, (unsigned long long)ch.seq,
				 (unsigned long long)w1,
				 (unsigned long long)h->start_ns);
			break;
		}
		if (cpus) {
			cpus[ch.cpu].chunks++;
			cpus[ch.cpu].bytes += size;
			cpus[ch.cpu].lost += ch.lost;
			if (!(ch.flags & PAGETRACE_CHUNK_FLUSHED))
				cpus[ch.cpu].full_chunks++;
			if (ch.nr_words > cpus[ch.cpu].max_words)
				cpus[ch.cpu].max_words = ch.nr_words;
		}
		pos += size;
	}
	return pos;
}

/*
 * What the library decodes from a stream in memory, with the per-CPU
 * checks the stream promises: seq 0, 1, 2 ... and monotonic times.
 */
struct dec_cpu {
	uint64_t	next_seq;
	uint64_t	last_ns;
	uint64_t	events;
	uint64_t	chunks;
	uint64_t	lost;
};

struct decoded {
	int		err;
	char		errmsg[256];
	uint64_t	events;
	uint64_t	by_type[5];
	uint64_t	chunks;
	uint64_t	lost;
	uint64_t	seq_errors;
	uint64_t	time_errors;
	uint64_t	before_start;
	uint64_t	cpu_errors;
	char		first_problem[256];
	struct pgtrace_reader_counters ctr;
	unsigned int	nr_cpus;
	struct dec_cpu	*cpus;
	/* the event looked for, if any */
	uint64_t	want_pfn;
	bool		found_alloc;
	bool		found_free;
	uint64_t	found_alloc_ns;
	uint64_t	found_free_ns;
};

static void problem(struct decoded *d, const char *fmt, ...)
{
	va_list ap;

	if (d->first_problem[0])
		return;
	va_start(ap, fmt);
	vsnprintf(d->first_problem, sizeof(d->first_problem), fmt, ap);
	va_end(ap);
}

static int dec_chunk_cb(const struct pgtrace_chunk *c, void *arg)
{
	struct decoded *d = arg;

	if (c->cpu >= d->nr_cpus) {
		d->cpu_errors++;
		problem(d, "chunk at %llu: cpu %u >= nr_cpus %u",
			(unsigned long long)c->offset, c->cpu, d->nr_cpus);
		return 0;
	}
	if (c->seq != d->cpus[c->cpu].next_seq || c->missing) {
		d->seq_errors++;
		problem(d, "cpu %u: chunk seq %llu, expected %llu (missing %llu)",
			c->cpu, (unsigned long long)c->seq,
			(unsigned long long)d->cpus[c->cpu].next_seq,
			(unsigned long long)c->missing);
	}
	d->cpus[c->cpu].next_seq = c->seq + 1;
	d->cpus[c->cpu].chunks++;
	d->cpus[c->cpu].lost += c->lost;
	d->chunks++;
	d->lost += c->lost;
	return 0;
}

static void decode_mem(const unsigned char *p, size_t len, struct decoded *d)
{
	struct pgtrace_event evs[512];
	const struct pagetrace_header *h;
	struct pgtrace_reader *r = NULL;
	uint64_t want = d->want_pfn;
	int n;

	memset(d, 0, sizeof(*d));
	d->want_pfn = want;
	d->err = pgtrace_reader_open_mem(&r, p, len, 0);
	if (d->err) {
		if (r)
			snprintf(d->errmsg, sizeof(d->errmsg), "%s",
				 pgtrace_reader_error(r));
		pgtrace_reader_close(r);
		return;
	}
	h = pgtrace_reader_header(r);
	d->nr_cpus = h->nr_cpus;
	d->cpus = calloc(d->nr_cpus, sizeof(*d->cpus));
	pgtrace_reader_set_chunk_cb(r, dec_chunk_cb, d);
	while ((n = pgtrace_reader_next_batch(r, evs, 512)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pgtrace_event *e = &evs[i];
			struct dec_cpu *c;

			if (e->cpu >= d->nr_cpus) {
				d->cpu_errors++;
				continue;
			}
			c = &d->cpus[e->cpu];
			if (e->time_ns < c->last_ns) {
				d->time_errors++;
				problem(d, "cpu %u: event at %llu after one at %llu",
					e->cpu, (unsigned long long)e->time_ns,
					(unsigned long long)c->last_ns);
			}
			c->last_ns = e->time_ns;
			if (e->time_ns < h->start_ns) {
				d->before_start++;
				problem(d, "cpu %u: event at %llu before start %llu",
					e->cpu, (unsigned long long)e->time_ns,
					(unsigned long long)h->start_ns);
			}
			c->events++;
			d->events++;
			if (e->type < 5)
				d->by_type[e->type]++;
			if (want && e->pfn == want && e->npages == 1) {
				if (e->type == PGTRACE_EV_ALLOC && !d->found_alloc) {
					d->found_alloc = true;
					d->found_alloc_ns = e->time_ns;
				}
				if (e->type == PGTRACE_EV_FREE && d->found_alloc &&
				    !d->found_free) {
					d->found_free = true;
					d->found_free_ns = e->time_ns;
				}
			}
		}
	}
	d->err = n;
	if (n < 0)
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", pgtrace_reader_error(r));
	d->ctr = *pgtrace_reader_counters(r);
	pgtrace_reader_close(r);
}

static void decoded_free(struct decoded *d)
{
	free(d->cpus);
	d->cpus = NULL;
}

/* -------------------------------------------------------------- fixture */

/*
 * These tests are about the device's semantics and the framing of the
 * per-CPU chunks, which the memory map at session start would precede
 * (pagetrace_snapshot_test.c covers that): open sessions without it.
 */
static void set_snapshot(const char *on)
{
	int fd = open(MOD_SYSFS "/parameters/snapshot", O_WRONLY | O_CLOEXEC);

	/* Fails for the unprivileged child of the EPERM test: no matter. */
	if (fd >= 0) {
		ssize_t n = write(fd, on, 1);

		(void)n;
		close(fd);
	}
}

static int open_dev(int flags)
{
	set_snapshot("0");
	return open(DEV, flags);
}

FIXTURE(pt) {
	int		fd;
	int		kmsg;
	bool		chmodded;
	struct buf	b;
	struct hdr	hi;
	struct decoded	dec;
};

FIXTURE_SETUP(pt)
{
	self->fd = -1;
	self->kmsg = -1;
	/* Normally a no-op: the runner loaded pagetrace.ko with defaults. */
	ASSERT_EQ(0, mod_ensure_default())
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
	if (self->chmodded)
		chmod(DEV, 0600);
	buf_free(&self->b);
	decoded_free(&self->dec);
	set_snapshot("1");
	ret = mod_ensure_default();
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
	self->fd = open_dev(O_RDONLY | O_CLOEXEC | flags);
	if (self->fd < 0)
		return -errno;
	return read_header(self->fd, &self->b, &self->hi);
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
	real0 = now_ns(CLOCK_REALTIME);
	mono0 = now_ns(CLOCK_MONOTONIC);
	self->fd = open_dev(O_RDONLY | O_CLOEXEC);
	mono1 = now_ns(CLOCK_MONOTONIC);
	real1 = now_ns(CLOCK_REALTIME);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", DEV, strerror(errno));
	ASSERT_EQ(0, read_header(self->fd, &self->b, &self->hi));
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
	ASSERT_EQ(read_param("buf_size"), (long)h->chunk_size);
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
	ASSERT_EQ(read_param("nr_bufs"), (long)self->hi.sess.nr_bufs);
	ASSERT_EQ(read_param("flush_ms"), (long)self->hi.sess.flush_ms);
	ASSERT_GE(PAGETRACE_BACKEND_TRACEPOINT, self->hi.sess.backend);
	ASSERT_EQ(0, self->hi.sess.uncovered);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, self->hi.sess.reserved[i]);
	}
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
	self->fd = open_dev(O_RDONLY | O_CLOEXEC);
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
	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(PAGETRACE_VERSION, info.version);
	ASSERT_EQ(self->hi.h.header_size, info.header_size);
	ASSERT_EQ(self->hi.h.chunk_size, info.chunk_size);
	ASSERT_EQ(read_param("buf_size"), (long)info.chunk_size);
	ASSERT_EQ(read_param("nr_bufs"), (long)info.nr_bufs);
	ASSERT_EQ(read_param("flush_ms"), (long)info.flush_ms);
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

TEST_F_TIMEOUT(pt, stream, 180)
{
	const struct pagetrace_header *h = &self->hi.h;
	struct pagetrace_cpu_stats *st, *st2;
	struct pagetrace_stats s, s2;
	struct raw_cpu *raw;
	unsigned char ran[1024] = { 0 };
	uint64_t sum_ev = 0, sum_lost = 0, sum_chunks = 0, sum_bytes = 0;
	char why[256];
	size_t flushed_len, end;
	int ncpu;

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	raw = calloc(h->nr_cpus, sizeof(*raw));
	st = calloc(h->nr_cpus, sizeof(*st));
	st2 = calloc(h->nr_cpus, sizeof(*st2));
	ASSERT_TRUE(raw && st && st2);

	/* 2 MiB on every CPU: ~512 allocs and frees each. */
	ncpu = on_every_cpu(2 << 20, ran, sizeof(ran));
	ASSERT_LE(1, ncpu) TH_LOG("could not run pinned threads");

	/* FLUSH closes every partly filled buffer: every CPU has a chunk. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, set_nonblock(self->fd, true));
	ASSERT_EQ(1, buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));
	flushed_len = self->b.len;
	end = walk_chunks(&self->b, h, raw, why, sizeof(why));
	ASSERT_STREQ("", why);
	ASSERT_EQ(flushed_len, end) TH_LOG("drained data ends inside a chunk");
	for (unsigned int cpu = 0; cpu < sizeof(ran) && cpu < h->nr_cpus; cpu++)
		if (ran[cpu]) {
			ASSERT_LE(1, raw[cpu].chunks)
				TH_LOG("no chunk from cpu %u after FLUSH", cpu);
		}

	/* More, then STOP and read to the end. */
	ASSERT_LE(1, on_every_cpu(1 << 20, ran, sizeof(ran)));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));
	/* EOF sticks, blocking or not, and poll says readable. */
	ASSERT_EQ(0, set_nonblock(self->fd, false));
	ASSERT_EQ(0, buf_read(self->fd, &self->b));
	{
		struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 0));
		ASSERT_TRUE(pfd.revents & POLLIN);
	}

	ASSERT_EQ(0, get_stats(self->fd, st, h->nr_cpus, &s));
	ASSERT_EQ(h->nr_cpus, s.nr_cpus);
	/* Stopped means stopped: more allocations change nothing. */
	touch_and_free(1 << 20);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, get_stats(self->fd, st2, h->nr_cpus, &s2));
	ASSERT_EQ(0, memcmp(st, st2, h->nr_cpus * sizeof(*st)));
	ASSERT_EQ(0, buf_read(self->fd, &self->b));

	/* Raw framing of every chunk, per-CPU totals. */
	memset(raw, 0, h->nr_cpus * sizeof(*raw));
	end = walk_chunks(&self->b, h, raw, why, sizeof(why));
	ASSERT_STREQ("", why);
	ASSERT_EQ(self->b.len, end) TH_LOG("stream ends inside a chunk");

	/* The library's view. */
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	ASSERT_EQ(0, self->dec.seq_errors);
	ASSERT_EQ(0, self->dec.time_errors);
	ASSERT_EQ(0, self->dec.before_start);
	ASSERT_EQ(0, self->dec.cpu_errors);
	ASSERT_EQ(0, self->dec.ctr.seq_gaps);
	ASSERT_EQ(0, self->dec.ctr.snapshot_chunks);
	ASSERT_EQ(self->b.len, self->dec.ctr.bytes);
	ASSERT_EQ(self->dec.events, self->dec.ctr.events);
	ASSERT_EQ(self->dec.chunks, self->dec.ctr.chunks);
	ASSERT_EQ(self->dec.lost, self->dec.ctr.lost);
	TH_LOG("%d cpus, %llu chunks, %llu events (%llu alloc, %llu free, %llu reclaim), %llu lost",
	       ncpu, (unsigned long long)self->dec.chunks,
	       (unsigned long long)self->dec.events,
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_ALLOC],
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_FREE],
	       (unsigned long long)self->dec.by_type[PGTRACE_EV_RECLAIM],
	       (unsigned long long)self->dec.lost);
	ASSERT_LE(500ULL * ncpu, self->dec.by_type[PGTRACE_EV_ALLOC]);
	ASSERT_LE(500ULL * ncpu, self->dec.by_type[PGTRACE_EV_FREE]);

	/* The kernel's counters agree exactly, CPU by CPU. */
	for (unsigned int cpu = 0; cpu < h->nr_cpus; cpu++) {
		ASSERT_EQ(st[cpu].events, self->dec.cpus[cpu].events)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].chunks, self->dec.cpus[cpu].chunks)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].chunks, raw[cpu].chunks) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].bytes, raw[cpu].bytes) TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].lost, self->dec.cpus[cpu].lost)
			TH_LOG("cpu %u", cpu);
		ASSERT_EQ(st[cpu].lost, raw[cpu].lost) TH_LOG("cpu %u", cpu);
		/* No filter, no sampling in this session. */
		ASSERT_EQ(0, st[cpu].filtered);
		ASSERT_EQ(0, st[cpu].samples);
		ASSERT_EQ(0, st[cpu].stacks_unknown);
		sum_ev += st[cpu].events;
		sum_lost += st[cpu].lost;
		sum_chunks += st[cpu].chunks;
		sum_bytes += st[cpu].bytes;
	}
	ASSERT_EQ(sum_ev, self->dec.events);
	ASSERT_EQ(sum_chunks, self->dec.chunks);
	ASSERT_EQ(sum_lost, self->dec.lost);
	ASSERT_EQ(sum_bytes + h->header_size, self->b.len);
	ASSERT_GE(sum_lost, s.probe_missed);
	free(raw);
	free(st);
	free(st2);
}

TEST_F(pt, busy)
{
	struct hdr hi;
	struct buf b = { 0 };
	int fd2, status;
	pid_t pid;

	ASSERT_EQ(0, start_session(self, 0));
	fd2 = open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(-1, fd2);
	ASSERT_EQ(EBUSY, errno);
	fd2 = open_dev(O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_EQ(-1, fd2);
	ASSERT_EQ(EBUSY, errno);
	/* Another process too. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(open_dev(O_RDONLY) < 0 ? errno : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(EBUSY, WEXITSTATUS(status));
	/* The failed opens did not disturb the session. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));

	close(self->fd);
	self->fd = open_dev(O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("reopen after close: %s", strerror(errno));
	ASSERT_EQ(0, read_header(self->fd, &b, &hi));
	ASSERT_STREQ("", hi.why);
	ASSERT_EQ(0, memcmp(hi.h.magic, "PGTRACE", 8));
	/* A new session: a new start time. */
	ASSERT_LT(self->hi.h.start_ns, hi.h.start_ns);
	buf_free(&b);
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
		fd = open_dev(O_RDONLY);
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
	struct hdr hi;
	char *p;
	ssize_t n;
	uint32_t hsize;
	char why[256];

	self->fd = open_dev(O_RDONLY | O_CLOEXEC);
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
	buf_reserve(&self->b, 1 << 16);
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
	parse_header(self->b.p, self->b.len, &hi);
	ASSERT_STREQ("", hi.why);
	ASSERT_TRUE(hi.have_end);
	ASSERT_TRUE(hi.have_release);
	ASSERT_LE(1, hi.nr_zones);

	/* A fault at the start of a chunk loses nothing either. */
	touch_and_free(256 << 10);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(-1, read(self->fd, bad_addr, 4096));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, read(self->fd, p + PAGE - 16, 4096));
	ASSERT_EQ(EFAULT, errno);
	/* The next read starts with that chunk, seq 0 of some CPU. */
	n = buf_read(self->fd, &self->b);
	ASSERT_LT(32, n);
	ASSERT_EQ(0, memcmp(self->b.p + hsize, PAGETRACE_CHUNK_MAGIC, 4));

	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, buf_drain(self->fd, &self->b));
	ASSERT_EQ(self->b.len, walk_chunks(&self->b, &hi.h, NULL, why, sizeof(why)));
	ASSERT_STREQ("", why);
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_EQ(0, self->dec.seq_errors) TH_LOG("%s", self->dec.first_problem);
	ASSERT_GE(1024, hi.h.nr_cpus);
	ASSERT_EQ(0, get_stats(self->fd, st, hi.h.nr_cpus, &s));
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
	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(PAGETRACE_VERSION, info.version);
}

TEST_F(pt, read_eagain_eof)
{
	char c;
	ssize_t n;
	int i;

	ASSERT_EQ(0, start_session(self, O_NONBLOCK));
	ASSERT_STREQ("", self->hi.why);
	/* Zero-byte reads return 0 and consume nothing. */
	ASSERT_EQ(0, read(self->fd, &c, 0));
	ASSERT_EQ(0, read(self->fd, NULL, 0));

	/*
	 * Just after the header nothing is closed yet (the timer's first
	 * tick is flush_ms away, and one buffer holds thousands of events).
	 */
	n = read(self->fd, self->b.p, 4096);
	ASSERT_EQ(-1, n) TH_LOG("read after the header returned %zd", n);
	ASSERT_EQ(EAGAIN, errno);

	/* Drained after a flush: EAGAIN again, within a few rounds. */
	touch_and_free(64 << 10);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_LT(0, buf_read(self->fd, &self->b));
	for (i = 0; i < 100; i++) {
		if (buf_drain(self->fd, &self->b) == 1)
			break;
	}
	ASSERT_GT(100, i);
	ASSERT_EQ(0, read(self->fd, &c, 0));

	/* After STOP the rest, then EOF (0), not EAGAIN, and it stays so. */
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));	/* idempotent */
	ASSERT_EQ(0, buf_drain(self->fd, &self->b));
	ASSERT_EQ(0, read(self->fd, self->b.p, 4096));
	ASSERT_EQ(0, set_nonblock(self->fd, false));
	ASSERT_EQ(0, read(self->fd, self->b.p, 4096));
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	ASSERT_LT(0, self->dec.by_type[PGTRACE_EV_ALLOC]);
}

/*
 * Wait for the alloc and free of @pfn by polling (@use_poll) or by
 * blocking reads, decoding what comes; returns the ns from @t0 (monotonic)
 * to when they were seen, or -1 after @timeout_ms.  *first_ns is when the
 * first data came.
 */
static int64_t wait_for_pfn(FIXTURE_DATA(pt) *self, uint64_t pfn, uint64_t t0,
			    int timeout_ms, bool use_poll, int64_t *first_ns)
{
	uint64_t deadline = t0 + timeout_ms * 1000000ULL;
	char why[256];

	*first_ns = -1;
	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		size_t before = self->b.len;
		int ret;

		if (now >= deadline)
			return -1;
		if (use_poll) {
			struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

			ret = poll(&pfd, 1, (deadline - now) / 1000000 + 1);
			if (ret < 0)
				return -1;
			if (ret == 0)
				continue;
			if (!(pfd.revents & POLLIN) || (pfd.revents & POLLERR))
				return -1;
			if (buf_drain(self->fd, &self->b) < 0)
				return -1;
		} else {
			if (buf_read(self->fd, &self->b) <= 0)
				return -1;
		}
		if (self->b.len == before)
			continue;
		if (*first_ns < 0)
			*first_ns = now_ns(CLOCK_MONOTONIC) - t0;
		/* Decode the complete chunks so far. */
		{
			struct buf whole = self->b;

			whole.len = walk_chunks(&self->b, &self->hi.h, NULL, why,
						sizeof(why));
			if (why[0])
				return -1;
			decoded_free(&self->dec);
			self->dec.want_pfn = pfn;
			decode_mem(whole.p, whole.len, &self->dec);
			if (self->dec.err || self->dec.first_problem[0])
				return -1;
			if (self->dec.found_alloc && self->dec.found_free)
				return now_ns(CLOCK_MONOTONIC) - t0;
		}
	}
}

/* Map a CLOCK_MONOTONIC time to the trace clock with the header's pair. */
static uint64_t mono_to_trace(const struct pagetrace_header *h, uint64_t mono)
{
	return h->start_ns + (mono - h->start_mono_ns);
}

/*
 * Trace time (local_clock()) vs a CLOCK_MONOTONIC time mapped with the
 * header's pair may differ by this much: without a stable TSC (TCG)
 * local_clock() is per-CPU and only kept within a tick of the gtod clock.
 * Tests that map times pin themselves to one CPU to keep this small.
 */
#define CLOCK_SLACK_NS	10000000ULL

static int pin_to_first_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

TEST_F(pt, poll)
{
	struct pollfd pfd;
	long flush_ms = read_param("flush_ms");
	uint64_t t0, pfn, trig;
	int64_t took, first;

	ASSERT_LE(10, flush_ms);
	ASSERT_EQ(0, pin_to_first_cpu());
	self->fd = open_dev(O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	/* The unread header alone makes the device readable. */
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	ASSERT_EQ(POLLIN, pfd.revents & (POLLIN | POLLERR | POLLHUP));
	ASSERT_EQ(0, read_header(self->fd, &self->b, &self->hi));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(1, buf_drain(self->fd, &self->b));

	pfn = one_page_event(&t0);
	ASSERT_NE(0, pfn) TH_LOG("no PFN from /proc/self/pagemap");
	took = wait_for_pfn(self, pfn, t0, 2 * flush_ms + PT_ST_LATE_MS, true, &first);
	TH_LOG("pfn %#llx: first data after %lld ms, found after %lld ms (flush_ms %ld)",
	       (unsigned long long)pfn, (long long)first / 1000000,
	       (long long)took / 1000000, flush_ms);
	ASSERT_LE(0, took) TH_LOG("alloc+free of pfn %#llx not seen within 2 x flush_ms + %d ms",
				  (unsigned long long)pfn, PT_ST_LATE_MS);
	trig = mono_to_trace(&self->hi.h, t0);
	TH_LOG("alloc at trace %llu, trigger mapped to %llu (diff %lld ns)",
	       (unsigned long long)self->dec.found_alloc_ns,
	       (unsigned long long)trig,
	       (long long)(self->dec.found_alloc_ns - trig));
	ASSERT_LE(trig - CLOCK_SLACK_NS, self->dec.found_alloc_ns);
	ASSERT_LE(self->dec.found_alloc_ns, self->dec.found_free_ns);
}

TEST_F(pt, trickle)
{
	long flush_ms = read_param("flush_ms");
	uint64_t t0, pfn, trig, now;
	int64_t took, first;

	ASSERT_EQ(0, pin_to_first_cpu());
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(0, set_nonblock(self->fd, true));
	ASSERT_EQ(1, buf_drain(self->fd, &self->b));
	ASSERT_EQ(0, set_nonblock(self->fd, false));

	pfn = one_page_event(&t0);
	ASSERT_NE(0, pfn) TH_LOG("no PFN from /proc/self/pagemap");
	/* Blocking reads: the first must return after about flush_ms. */
	took = wait_for_pfn(self, pfn, t0, 2 * flush_ms + PT_ST_LATE_MS, false,
			    &first);
	now = now_ns(CLOCK_MONOTONIC);
	TH_LOG("pfn %#llx: first read returned after %lld ms, found after %lld ms",
	       (unsigned long long)pfn, (long long)first / 1000000,
	       (long long)took / 1000000);
	ASSERT_LE(0, first);
	ASSERT_GE((2 * flush_ms + PT_ST_LATE_MS) * 1000000LL, first);
	ASSERT_LE(0, took) TH_LOG("alloc+free of pfn %#llx not seen within 2 x flush_ms + %d ms (%llu ms)",
				  (unsigned long long)pfn, PT_ST_LATE_MS,
				  (unsigned long long)(now - t0) / 1000000);
	trig = mono_to_trace(&self->hi.h, t0);
	TH_LOG("alloc at trace %llu, trigger mapped to %llu (diff %lld ns)",
	       (unsigned long long)self->dec.found_alloc_ns,
	       (unsigned long long)trig,
	       (long long)(self->dec.found_alloc_ns - trig));
	ASSERT_LE(trig - CLOCK_SLACK_NS, self->dec.found_alloc_ns);
	ASSERT_GE(mono_to_trace(&self->hi.h, now) + CLOCK_SLACK_NS,
		  self->dec.found_free_ns);
}

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
	ASSERT_TRUE(mod_live());
	ASSERT_EQ(0, access(DEV, F_OK));
	/* and the session goes on. */
	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_FLUSH));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, buf_drain(self->fd, &self->b));
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	/* Still pinned after STOP: only close ends the session. */
	ASSERT_EQ(-EWOULDBLOCK, pt_st_mod_unload());
	ASSERT_TRUE(mod_live());

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_FALSE(mod_live());
	ASSERT_NE(0, access(MOD_SYSFS, F_OK));
	ASSERT_TRUE(wait_dev(false, 2000));
	fd = open_dev(O_RDONLY);
	ASSERT_EQ(-1, fd);
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(-ENOENT, pt_st_mod_unload());

	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(mod_live());
	ASSERT_TRUE(wait_dev(true, 2000));
	ASSERT_EQ(-EEXIST, pt_st_mod_load(""));
	buf_free(&self->b);
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(0, memcmp(self->hi.h.magic, "PGTRACE", 8));
}

/* All /dev/kmsg records from the current position on, joined by '\n'. */
static void kmsg_collect(int fd, char *out, size_t len)
{
	char rec[8192];
	size_t used = 0;

	out[0] = 0;
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *msg;

		if (n < 0 && errno == EPIPE)
			continue;	/* overrun; go on with what is left */
		if (n <= 0)
			break;
		rec[n] = 0;
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		used += snprintf(out + used, len - used, "%s", msg);
		if (used >= len - 1)
			break;
	}
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
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, self->kmsg);
	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_FALSE(mod_live());

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char range[64], *line;
		bool found = false;
		int ret;

		ASSERT_LE(0, lseek(self->kmsg, 0, SEEK_END));
		ret = pt_st_mod_load(bad[i].params);
		ASSERT_EQ(-EINVAL, ret) TH_LOG("\"%s\" loaded (%d)", bad[i].params, ret);
		ASSERT_FALSE(mod_live());
		ASSERT_FALSE(wait_dev(true, 0));
		kmsg_collect(self->kmsg, log, sizeof(log));
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
	ASSERT_TRUE(mod_is_default());
	ASSERT_TRUE(wait_dev(true, 2000));
}

TEST_F_TIMEOUT(pt, params_valid, 180)
{
	struct pagetrace_info info;
	struct raw_cpu *raw;
	uint64_t full = 0;
	char why[256];
	uint32_t cap = (8192 - 32) / 8;

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load("buf_size=8192 nr_bufs=4 flush_ms=500"));
	ASSERT_TRUE(wait_dev(true, 2000));
	ASSERT_EQ(8192, read_param("buf_size"));
	ASSERT_EQ(4, read_param("nr_bufs"));
	ASSERT_EQ(500, read_param("flush_ms"));

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_EQ(8192, self->hi.h.chunk_size);
	ASSERT_EQ(4, self->hi.sess.nr_bufs);
	ASSERT_EQ(500, self->hi.sess.flush_ms);
	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(8192, info.chunk_size);
	ASSERT_EQ(4, info.nr_bufs);
	ASSERT_EQ(500, info.flush_ms);

	/*
	 * ~2000 events on this CPU fill 8 KiB buffers (1020 words each)
	 * faster than the timer (which flushes only buffers that saw no
	 * rotation for a whole period) closes them.
	 */
	touch_and_free(4 << 20);
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, buf_drain(self->fd, &self->b));
	raw = calloc(self->hi.h.nr_cpus, sizeof(*raw));
	ASSERT_NE(NULL, raw);
	ASSERT_EQ(self->b.len, walk_chunks(&self->b, &self->hi.h, raw, why,
					   sizeof(why)));
	ASSERT_STREQ("", why);
	for (unsigned int cpu = 0; cpu < self->hi.h.nr_cpus; cpu++) {
		ASSERT_GE(cap, raw[cpu].max_words);
		full += raw[cpu].full_chunks;
	}
	free(raw);
	/* Buffers rotated at the smaller size. */
	ASSERT_LE(1, full);
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);

	/* Parameters changed through sysfs apply to the next session. */
	close(self->fd);
	self->fd = -1;
	buf_free(&self->b);
	{
		int fd = open(MOD_SYSFS "/parameters/nr_bufs", O_WRONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(-1, write(fd, "1", 1));
		ASSERT_EQ(EINVAL, errno);
		ASSERT_EQ(2, write(fd, "7\n", 2));
		close(fd);
	}
	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_EQ(7, info.nr_bufs);
	ASSERT_EQ(8192, info.chunk_size);
}

/*
 * With two 4 KiB buffers per CPU and nobody reading, a burst must lose
 * events; every loss must still reach the stream, even those that happen
 * after the last free buffer is gone and before the session stops.
 */
TEST_F_TIMEOUT(pt, lost_counted, 180)
{
	const struct pagetrace_header *h = &self->hi.h;
	struct pagetrace_cpu_stats *st;
	struct pagetrace_stats s;
	unsigned char ran[1024] = { 0 };
	uint64_t sum_lost = 0, sum_ev = 0;

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load("buf_size=4096 nr_bufs=2"));
	ASSERT_TRUE(wait_dev(true, 2000));

	ASSERT_EQ(0, start_session(self, 0));
	ASSERT_STREQ("", self->hi.why);
	ASSERT_LE(1, on_every_cpu(4 << 20, ran, sizeof(ran)));
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	ASSERT_EQ(0, buf_drain(self->fd, &self->b)) TH_LOG("%s", strerror(errno));

	st = calloc(h->nr_cpus, sizeof(*st));
	ASSERT_NE(NULL, st);
	ASSERT_EQ(0, get_stats(self->fd, st, h->nr_cpus, &s));
	decode_mem(self->b.p, self->b.len, &self->dec);
	ASSERT_EQ(0, self->dec.err) TH_LOG("decode: %s", self->dec.errmsg);
	ASSERT_STREQ("", self->dec.first_problem);
	for (unsigned int cpu = 0; cpu < h->nr_cpus; cpu++) {
		ASSERT_EQ(st[cpu].lost, self->dec.cpus[cpu].lost)
			TH_LOG("cpu %u: lost in kernel vs in stream", cpu);
		ASSERT_EQ(st[cpu].events, self->dec.cpus[cpu].events)
			TH_LOG("cpu %u", cpu);
		sum_lost += st[cpu].lost;
		sum_ev += st[cpu].events;
	}
	free(st);
	TH_LOG("%llu events kept, %llu lost", (unsigned long long)sum_ev,
	       (unsigned long long)sum_lost);
	ASSERT_LT(0, sum_lost) TH_LOG("no loss with 2 x 4 KiB buffers and no reader");
	ASSERT_EQ(sum_lost, self->dec.lost);
	ASSERT_EQ(sum_ev, self->dec.events);
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
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
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
		ASSERT_FALSE(mod_live());
		kmsg_collect(self->kmsg, log, sizeof(log));
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
	ASSERT_TRUE(mod_is_default());
	ASSERT_TRUE(wait_dev(true, 2000));
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
	ASSERT_TRUE(wait_dev(true, 2000));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	touch_and_free(64 * PAGE);
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	close(fd);
	EXPECT_EQ(PAGETRACE_UNCOVERED_REQUIRED, t.uncovered);
	EXPECT_LT(0, t.nr) TH_LOG("no event traced in a partial session");
	pt_st_trace_free(&t);

	ASSERT_EQ(0, pt_st_mod_unload());
	ASSERT_EQ(0, pt_st_mod_load(""));
	ASSERT_TRUE(wait_dev(true, 2000));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pt_st_collect(fd, &t)) TH_LOG("%s", t.err);
	close(fd);
	EXPECT_EQ(0, t.uncovered);
	pt_st_trace_free(&t);
	ASSERT_TRUE(mod_is_default());
}

TEST_HARNESS_MAIN
