// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_soak_test: recording sessions back to back for a long time
 * under a mixed load, the way a tracer left running in production is
 * used.  Runs as root with pagetrace.ko loaded, in the VM of
 * scripts/test/soak.sh (`make soak`), for PT_SOAK_SECONDS; without that
 * variable it skips, so that the ordinary selftest runs leave it out.
 *
 * Sessions alternate between the two ways of reading:
 *
 *  flight  the mapped rings in overwrite mode (PAGETRACE_MODE_FLIGHT), as
 *          `pagetrace record --flight-recorder` uses them: every 5 to 30
 *          s FREEZE, copy the newest chunks, THAW (a SIGUSR1 snapshot);
 *          at the end STOP and copy the rest
 *  stream  read() in a thread that now and then stalls for seconds, long
 *          enough that the buffers fill and events are lost
 *
 * while child processes keep the page allocator busy the whole time: fork
 * storms, page cache churn (a file written, dropped with drop_caches, read
 * back, removed), memcg reclaim (a file reader in a cgroup whose
 * memory.max is a third of the file), THP faults (MADV_HUGEPAGE, when THP
 * is not "never") and CPU 1 going offline and online every few seconds.
 * Mid-session an intruder opens the device and sends ioctls it must refuse;
 * between sessions a few bare open/close cycles run.
 *
 * After every session, its result line (a nested KTAP result, counts in the
 * "# session N" diagnostics) says whether all of these held:
 *  - the kernel's accounting: per CPU events + lost + filtered >= attempts,
 *    the excess over all CPUs being exactly probe_missed
 *  - the trace against the kernel: per CPU, stream mode: the events, the
 *    chunks' lost fields and the chunks in the file equal the kernel's
 *    counts, seq 0, 1, 2 ... without a gap; flight mode: every chunk the
 *    kernel closed is in the file or was overwritten (seq gaps add up to
 *    the ring's overwritten count) and the ring's counters equal STATS
 *  - the trace decodes with libpagetrace, each CPU's times in order and
 *    none before the session start
 *  - after close, the module's memory is what it was idle: its vmalloc
 *    areas (/proc/vmallocinfo), its /proc/modules size and use count; on
 *    a kernel with kmemleak, a scan reports nothing
 *  - no splat in the kernel log
 * The summary at the end gives sessions, events, lost, elapsed time and
 * what the load did.  PT_SOAK_SESSION_SECONDS (default 60) is how long a
 * session records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define KMEMLEAK	"/sys/kernel/debug/kmemleak"
#define CG_ROOT		"/sys/fs/cgroup"
#define CG_SOAK		CG_ROOT "/pt_soak"
#define SOAK_IMG	"/tmp/pt-soak.img"
#define SOAK_MNT	"/tmp/pt-soak"
#define MAX_CPUS	64
#define NS		1000000000ULL

/* Read a small file into @buf; the bytes read, or -errno. */
static ssize_t read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < (ssize_t)len &&
	       (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	close(fd);
	return got;
}

static double secs_since(uint64_t t0)
{
	return (pt_st_mono_ns() - t0) / 1e9;
}

/* Sleep @ms, in short naps, or less if *@cut becomes true. */
static void nap_ms(unsigned int ms, volatile bool *cut)
{
	while (ms && !(cut && *cut)) {
		unsigned int d = ms < 100 ? ms : 100;

		usleep(d * 1000);
		ms -= d;
	}
}

/* A diagnostic line of our own, in the KTAP stream (stdout). */
static __attribute__((format(printf, 1, 2))) void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* ------------------------------------------------------------- the load */

enum {
	LOAD_FORK,
	LOAD_CACHE,
	LOAD_MEMCG,
	LOAD_THP,
	LOAD_HOTPLUG,
	NR_LOADS
};

static const char * const load_names[NR_LOADS] = {
	"fork storm", "page cache churn", "memcg reclaim", "THP", "cpu1 hotplug",
};

/* Progress of the load children, in memory they share with us. */
struct load_counters {
	volatile unsigned long	rounds[NR_LOADS];
	volatile unsigned long	errors[NR_LOADS];
};

struct load {
	pid_t			pid[NR_LOADS];
	const char		*why_not[NR_LOADS];	/* NULL: running */
	struct load_counters	*ctr;
	bool			ext4;		/* SOAK_MNT is ext4 on loop */
	bool			cgroup;
	uint64_t		thp_before;
};

/* Anonymous memory touched and unmapped: what most allocations look like. */
static void touch_anon(size_t pages)
{
	char *p = mmap(NULL, pages << 12, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < pages; i++)
		p[i << 12] = 1;
	munmap(p, pages << 12);
}

/* Sixteen children at a time, each touching a little memory and exiting. */
static void load_fork(struct load_counters *c)
{
	for (;;) {
		for (int i = 0; i < 16; i++) {
			pid_t pid = fork();

			if (!pid) {
				touch_anon(32 + i * 4);
				_exit(0);
			}
			if (pid < 0)
				c->errors[LOAD_FORK]++;
		}
		while (wait(NULL) > 0)
			;
		c->rounds[LOAD_FORK]++;
	}
}

/* Write @mib MiB to @path; 0 or -1. */
static int write_file_mib(const char *path, unsigned int mib)
{
	static char block[64 << 10];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	memset(block, 0x5a, sizeof(block));
	for (unsigned int i = 0; i < mib * 16; i++) {
		if (write(fd, block, sizeof(block)) != sizeof(block)) {
			close(fd);
			return -1;
		}
	}
	fsync(fd);
	close(fd);
	return 0;
}

/* Read @path to its end; 0 or -1. */
static int read_file(const char *path)
{
	static char block[64 << 10];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, block, sizeof(block))) > 0)
		;
	close(fd);
	return n < 0 ? -1 : 0;
}

/*
 * Page cache allocated (the write), freed (drop_caches: clean pages on
 * ext4 can go; on tmpfs it frees nothing of ours but still walks every
 * cache), allocated again (the read) and freed (the unlink).
 */
static void load_cache(struct load_counters *c)
{
	for (;;) {
		if (write_file_mib(SOAK_MNT "/churn", 32) ||
		    pt_st_write_file("/proc/sys/vm/drop_caches", "3") ||
		    read_file(SOAK_MNT "/churn"))
			c->errors[LOAD_CACHE]++;
		unlink(SOAK_MNT "/churn");
		c->rounds[LOAD_CACHE]++;
	}
}

/*
 * A 96 MiB file read over and over by a task whose cgroup may hold 32
 * MiB: the memcg reclaims its own page cache all the time.  The file is
 * on ext4, so its clean pages can be reclaimed without swap.
 */
static void load_memcg(struct load_counters *c)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (pt_st_write_file(CG_SOAK "/cgroup.procs", pid))
		_exit(3);
	for (;;) {
		if ((c->rounds[LOAD_MEMCG] % 8 == 0 &&
		     write_file_mib(SOAK_MNT "/hog", 96)) ||
		    read_file(SOAK_MNT "/hog"))
			c->errors[LOAD_MEMCG]++;
		c->rounds[LOAD_MEMCG]++;
	}
}

/* 8 MiB of anonymous memory asking for huge pages, touched, unmapped. */
static void load_thp(struct load_counters *c)
{
	const size_t len = 8 << 20, huge = 2 << 20;

	for (;;) {
		char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *p;

		if (raw == MAP_FAILED) {
			c->errors[LOAD_THP]++;
			usleep(100000);
			continue;
		}
		/* A 2 MiB aligned range, so that its faults can be huge. */
		p = (char *)(((uintptr_t)raw + huge - 1) & ~(huge - 1));
		if (madvise(p, len, MADV_HUGEPAGE))
			c->errors[LOAD_THP]++;
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap(raw, len + huge);
		c->rounds[LOAD_THP]++;
	}
}

/* CPU 1 off for a second, on for three; a refused write is counted. */
static void load_hotplug(struct load_counters *c)
{
	for (;;) {
		if (pt_st_write_file(PT_ST_CPU1_ONLINE, "0"))
			c->errors[LOAD_HOTPLUG]++;
		sleep(1);
		if (pt_st_write_file(PT_ST_CPU1_ONLINE, "1"))
			c->errors[LOAD_HOTPLUG]++;
		sleep(3);
		c->rounds[LOAD_HOTPLUG]++;
	}
}

/*
 * The file system the churn and the hog use: ext4 on a loop device where
 * busybox can make one (page cache that reclaim can drop), else tmpfs,
 * on which the memcg hog cannot run (no swap: it would be an OOM).
 */
static void load_setup_fs(struct load *l)
{
	int fd;

	mkdir(SOAK_MNT, 0755);
	umount2(SOAK_MNT, MNT_DETACH);
	unlink(SOAK_IMG);
	fd = open(SOAK_IMG, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 && !ftruncate(fd, 256 << 20)) {
		close(fd);
		/* busybox mke2fs wants a block device: attach the image. */
		l->ext4 = !system("set -e; d=$(losetup -f); losetup $d " SOAK_IMG
				  "; mke2fs -q $d >/dev/null 2>&1; mount -t ext4 $d "
				  SOAK_MNT);
	} else if (fd >= 0) {
		close(fd);
	}
	if (!l->ext4) {
		unlink(SOAK_IMG);
		mount("tmpfs", SOAK_MNT, "tmpfs", 0, "size=128m");
	}
}

static const char *load_setup_cgroup(void)
{
	if (access(CG_ROOT "/cgroup.controllers", F_OK)) {
		mkdir(CG_ROOT, 0755);
		mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL);
	}
	if (access(CG_ROOT "/cgroup.controllers", F_OK))
		return "no cgroup v2";
	pt_st_write_file(CG_ROOT "/cgroup.subtree_control", "+memory");
	rmdir(CG_SOAK);
	if (mkdir(CG_SOAK, 0755))
		return "cannot make the cgroup";
	if (pt_st_write_file(CG_SOAK "/memory.max", "32M"))
		return "no memory.max (memory controller)";
	pt_st_write_file(CG_SOAK "/memory.swap.max", "0");
	return NULL;
}

static pid_t load_spawn(struct load *l, int kind)
{
	pid_t pid = pt_st_fork_tied();

	if (pid)
		return pid;
	/* Gone with us, whatever way we end. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The load may be killed under pressure, never the test. */
	pt_st_write_file("/proc/self/oom_score_adj", "500");
	switch (kind) {
	case LOAD_FORK:
		load_fork(l->ctr);
		break;
	case LOAD_CACHE:
		load_cache(l->ctr);
		break;
	case LOAD_MEMCG:
		load_memcg(l->ctr);
		break;
	case LOAD_THP:
		load_thp(l->ctr);
		break;
	case LOAD_HOTPLUG:
		load_hotplug(l->ctr);
		break;
	}
	_exit(0);
}

static int load_start(struct load *l)
{
	char thp[128] = "";

	memset(l, 0, sizeof(*l));
	l->ctr = mmap(NULL, sizeof(*l->ctr), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l->ctr == MAP_FAILED)
		return -errno;
	memset(l->ctr, 0, sizeof(*l->ctr));
	load_setup_fs(l);
	if (!l->ext4)
		l->why_not[LOAD_MEMCG] =
			"no ext4 on loop (tmpfs pages cannot be reclaimed without swap)";
	else
		l->why_not[LOAD_MEMCG] = load_setup_cgroup();
	if (read_str(THP_ENABLED, thp, sizeof(thp)) <= 0)
		l->why_not[LOAD_THP] = "THP not built in (no " THP_ENABLED ")";
	else if (strstr(thp, "[never]"))
		l->why_not[LOAD_THP] = "THP disabled (enabled is [never])";
	if (access(PT_ST_CPU1_ONLINE, W_OK))
		l->why_not[LOAD_HOTPLUG] = "no " PT_ST_CPU1_ONLINE " (one CPU, or no CONFIG_HOTPLUG_CPU)";
	else if (pt_st_cpu_unplug_hangs())
		l->why_not[LOAD_HOTPLUG] = pt_st_cpu_unplug_hangs();
	l->thp_before = pt_st_vmstat("thp_fault_alloc");
	for (int k = 0; k < NR_LOADS; k++) {
		if (l->why_not[k]) {
			diag("load: no %s: %s", load_names[k], l->why_not[k]);
			continue;
		}
		l->pid[k] = load_spawn(l, k);
		if (l->pid[k] < 0)
			return -errno;
	}
	diag("load: %s%s%s%s%s on %s", l->why_not[LOAD_FORK] ? "" : "fork storm, ",
	     l->why_not[LOAD_CACHE] ? "" : "page cache churn, ",
	     l->why_not[LOAD_MEMCG] ? "" : "memcg reclaim (96 MiB file, memory.max 32M), ",
	     l->why_not[LOAD_THP] ? "" : "THP (madvise), ",
	     l->why_not[LOAD_HOTPLUG] ? "" : "cpu1 off 1 s / on 3 s",
	     l->ext4 ? "ext4 over loop" : "tmpfs");
	return 0;
}

static void load_stop(struct load *l)
{
	for (int k = 0; k < NR_LOADS; k++) {
		if (l->pid[k] > 0) {
			kill(l->pid[k], SIGKILL);
			waitpid(l->pid[k], NULL, 0);
			l->pid[k] = 0;
		}
	}
	/* The hotplug child may have died with CPU 1 offline. */
	if (!access(PT_ST_CPU1_ONLINE, W_OK))
		pt_st_write_file(PT_ST_CPU1_ONLINE, "1");
	rmdir(CG_SOAK);
	unlink(SOAK_MNT "/churn");
	unlink(SOAK_MNT "/hog");
	umount2(SOAK_MNT, MNT_DETACH);
	if (l->ext4)
		system("for d in /dev/loop*; do losetup -d $d 2>/dev/null; done; true");
	unlink(SOAK_IMG);
	rmdir(SOAK_MNT);
}

/* ------------------------------------------------ the module's memory */

/*
 * What pagetrace holds outside a session should be the same before the
 * first session and after every close: its vmalloc areas (the rings and
 * the snapshot are vmalloc_user()), and its /proc/modules line (size and
 * use count: a session pins the module, and a reference left behind would
 * keep it from ever unloading).
 */
struct mod_mem {
	unsigned long	vm_areas;
	unsigned long	vm_bytes;
	unsigned long	mod_size;
	long		mod_refs;
	char		first_area[200];
};

static int mod_mem_read(struct mod_mem *m)
{
	char line[512];
	FILE *f;

	memset(m, 0, sizeof(*m));
	m->mod_refs = -1;
	f = fopen("/proc/vmallocinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long size;

		if (!strstr(line, "[pagetrace]"))
			continue;
		if (sscanf(line, "%*s %lu", &size) != 1)
			continue;
		if (!m->vm_areas)
			snprintf(m->first_area, sizeof(m->first_area), "%.*s",
				 (int)strcspn(line, "\n"), line);
		m->vm_areas++;
		m->vm_bytes += size;
	}
	fclose(f);
	f = fopen("/proc/modules", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "pagetrace ", 10)) {
			if (sscanf(line + 10, "%lu %ld", &m->mod_size, &m->mod_refs) != 2)
				m->mod_refs = -1;
			break;
		}
	}
	fclose(f);
	return m->mod_refs < 0 ? -ENOENT : 0;
}

static bool mod_mem_same(const struct mod_mem *a, const struct mod_mem *b)
{
	return a->vm_areas == b->vm_areas && a->vm_bytes == b->vm_bytes &&
	       a->mod_size == b->mod_size && a->mod_refs == b->mod_refs;
}

/*
 * kmemleak's report after a scan, of the objects pagetrace allocated ("" if
 * none, or no kmemleak), and in @others how many other objects it reported:
 * the kernel's own, which a kernel built with kmemleak may leak or be
 * suspected of (a scan cannot tell pointers hidden in a page's flags or a
 * cpumask from none), none of the module's doing.  An object is ours when
 * its allocation's backtrace has a function of the module ("[pagetrace]").
 * Objects younger than about 5 s are never reported, so a leak at one
 * close shows at the next session's scan, and the last one waits before
 * scanning.
 */
static void kmemleak_scan(char *out, size_t len, int *others)
{
	static char report[1 << 18];
	const char *obj, *next;
	size_t used = 0;

	out[0] = 0;
	*others = 0;
	if (access(KMEMLEAK, W_OK))
		return;
	pt_st_write_file(KMEMLEAK, "scan");
	read_str(KMEMLEAK, report, sizeof(report));
	/* Reported once: the next session's scan shows only new ones. */
	if (report[0])
		pt_st_write_file(KMEMLEAK, "clear");
	for (obj = strstr(report, "unreferenced object"); obj; obj = next) {
		size_t n;

		next = strstr(obj + 1, "unreferenced object");
		n = next ? (size_t)(next - obj) : strlen(obj);
		if (!memmem(obj, n, "[pagetrace]", strlen("[pagetrace]"))) {
			(*others)++;
			continue;
		}
		if (used + n < len) {
			memcpy(out + used, obj, n);
			used += n;
			out[used] = 0;
		}
	}
}

/* ------------------------------------------------------------ sessions */

enum { MODE_STREAM, MODE_FLIGHT };

struct session {
	int			nr;
	int			mode;
	double			secs;
	int			fd;
	struct pt_st_buf	b;
	/* read() mode: the stalling reader */
	pthread_t		thread;
	bool			reading;
	volatile bool		fast;
	int			read_err;
	unsigned int		stalls;
	double			stalled_s;
	/* flight mode */
	struct pgtrace_ring	*ring;
	unsigned int		snapshots;
	/* the kernel's counts at the end (uint64_t: printed with PRIu64) */
	unsigned int		nr_cpus;
	struct {
		uint64_t	events, lost, chunks, attempts, filtered;
	}			st[MAX_CPUS];
	uint64_t		probe_missed;
	struct {
		uint64_t	events, lost, chunks, produced, overwritten;
	}			mc[MAX_CPUS];
	/* the module's memory mid-session, to show the idle check sees it */
	struct mod_mem		busy;
	/* what the session showed */
	unsigned int		failures;
	uint64_t		events, lost, overwritten, by_type[4];
};

static __attribute__((format(printf, 2, 3)))
void fail(struct session *s, const char *fmt, ...)
{
	va_list ap;

	printf("# session %d: ", s->nr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	s->failures++;
}

/*
 * The stalling reader: 1 MiB read()s; every 5 to 15 s it stops reading for
 * 2 to 20 s, long enough at the rates of the load for the 1 MiB per CPU of
 * the default buffers to fill.
 */
static void *stall_reader(void *arg)
{
	static const unsigned int stall_ms[] = { 2000, 5000, 10000, 20000 };
	struct session *s = arg;
	uint64_t next = pt_st_mono_ns() + 5 * NS;

	for (;;) {
		ssize_t n = pt_st_buf_read(s->fd, &s->b);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			s->read_err = errno;
			return NULL;
		}
		if (n == 0)
			return NULL;	/* stopped and drained */
		if (!s->fast && pt_st_mono_ns() >= next) {
			uint64_t t0 = pt_st_mono_ns();

			nap_ms(stall_ms[s->stalls % 4], &s->fast);
			s->stalled_s += secs_since(t0);
			s->stalls++;
			next = pt_st_mono_ns() + (5 + (s->stalls * 7) % 11) * NS;
		}
	}
}

/* Copy every closed chunk of the ring into the trace, give them back. */
static int64_t flight_drain(struct session *s)
{
	const struct pagetrace_meta *m = pgtrace_ring_meta(s->ring);
	int64_t total = 0, moved;

	for (unsigned int cpu = 0; cpu < m->nr_cpus; cpu++) {
		uint64_t pos;
		int64_t n = pgtrace_ring_peek(s->ring, cpu, &pos);

		for (int64_t i = 0; i < n; i++) {
			const struct pagetrace_chunk *ch;
			size_t len;
			int ret = pgtrace_ring_chunk(s->ring, cpu, pos + i, &ch, &len);

			if (ret)
				return ret;
			pt_st_buf_add(&s->b, ch, len);
		}
		if (n > 0 && pgtrace_ring_advance(s->ring, cpu, n))
			return -EINVAL;
		total += n > 0 ? n : 0;
	}
	moved = pgtrace_ring_consume(s->ring);
	return moved < 0 ? moved : total;
}

/* What a second client tries mid-session; all of it must be refused. */
static void second_client(struct session *s)
{
	struct pagetrace_consume c = { 0 };
	int fd = open(DEV, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		fail(s, "second client: a second open succeeded during the session");
		close(fd);
	} else if (errno != EBUSY) {
		fail(s, "second client: second open: %s, not EBUSY", strerror(errno));
	}
	if (ioctl(s->fd, _IO(PAGETRACE_IOC_MAGIC, 0x7f)) != -1 || errno != ENOTTY)
		fail(s, "second client: an unknown ioctl was not ENOTTY");
	if (ioctl(s->fd, PAGETRACE_IOC_STATS, (void *)8) != -1 || errno != EFAULT)
		fail(s, "second client: STATS with a bad pointer was not EFAULT");
	/* read() has claimed a stream session: the mapping's claim fails. */
	if (s->mode == MODE_STREAM &&
	    (ioctl(s->fd, PAGETRACE_IOC_CONSUME, &c) != -1 || errno != EBUSY))
		fail(s, "second client: CONSUME on a read() session was not EBUSY");
}

static int session_open(struct session *s)
{
	s->fd = open(DEV, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (s->mode == MODE_STREAM) {
		if (pthread_create(&s->thread, NULL, stall_reader, s))
			return -EAGAIN;
		s->reading = true;
		return 0;
	}
	{
		struct pagetrace_mode mode = { .mode = PAGETRACE_MODE_FLIGHT };
		const struct pagetrace_header *h;
		const void *snap;
		size_t snap_len;
		int ret;

		if (ioctl(s->fd, PAGETRACE_IOC_SET_MODE, &mode))
			return -errno;
		ret = pgtrace_ring_map(s->fd, &s->ring);
		if (!ret)
			ret = pgtrace_ring_claim(s->ring);
		if (ret)
			return ret;
		/* The file begins with the header and the memory map at start. */
		h = pgtrace_ring_header(s->ring, &snap, &snap_len);
		pt_st_buf_add(&s->b, h, pgtrace_ring_meta(s->ring)->header_size);
		pt_st_buf_add(&s->b, snap, snap_len);
	}
	return 0;
}

/*
 * Record for @secs.  Flight mode takes a snapshot every 5 to 30 s: at the
 * load's rate under TCG (~70 KB/s a CPU) the default 1 MiB ring of a CPU
 * wraps in about 15 s, so the longer gaps overwrite chunks and the shorter
 * ones do not.
 */
static void session_record(struct session *s, double secs)
{
	uint64_t t0 = pt_st_mono_ns(), end = t0 + (uint64_t)(secs * NS);
	bool intruded = false;

	while (pt_st_mono_ns() < end) {
		uint64_t left = (end - pt_st_mono_ns()) / 1000000;
		unsigned int ms = (5 + (s->snapshots * 7) % 26) * 1000;

		if (!intruded && pt_st_mono_ns() - t0 > (uint64_t)(secs * NS) / 2) {
			mod_mem_read(&s->busy);
			second_client(s);
			intruded = true;
			continue;
		}
		nap_ms(ms < left ? ms : left, NULL);
		if (s->mode != MODE_FLIGHT || pt_st_mono_ns() >= end)
			continue;
		if (ioctl(s->fd, PAGETRACE_IOC_FREEZE)) {
			fail(s, "FREEZE: %s", strerror(errno));
			continue;
		}
		if (flight_drain(s) < 0)
			fail(s, "snapshot %u: copying the ring failed", s->snapshots);
		if (ioctl(s->fd, PAGETRACE_IOC_THAW))
			fail(s, "THAW: %s", strerror(errno));
		s->snapshots++;
	}
	if (!intruded) {
		mod_mem_read(&s->busy);
		second_client(s);
	}
}

/* STOP, read to the end, and take the kernel's final counts. */
static int session_stop(struct session *s)
{
	static struct pagetrace_cpu_stats cs[MAX_CPUS];
	struct pagetrace_stats st = {
		.cpus = (uintptr_t)cs, .nr_cpus = MAX_CPUS,
	};

	if (ioctl(s->fd, PAGETRACE_IOC_STOP))
		fail(s, "STOP: %s", strerror(errno));
	if (s->mode == MODE_STREAM) {
		s->fast = true;
		pthread_join(s->thread, NULL);
		s->reading = false;
		if (s->read_err)
			fail(s, "read: %s", strerror(s->read_err));
	} else {
		int64_t n;

		/* Late losses after STOP close one more chunk: until none. */
		while ((n = flight_drain(s)) > 0)
			;
		if (n < 0)
			fail(s, "copying the ring after STOP: %s", strerror((int)-n));
	}
	memset(cs, 0, sizeof(cs));
	if (ioctl(s->fd, PAGETRACE_IOC_STATS, &st))
		return -errno;
	s->nr_cpus = st.nr_cpus < MAX_CPUS ? st.nr_cpus : MAX_CPUS;
	s->probe_missed = st.probe_missed;
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		const struct pagetrace_meta_cpu *mc;

		s->st[cpu].events = cs[cpu].events;
		s->st[cpu].lost = cs[cpu].lost;
		s->st[cpu].chunks = cs[cpu].chunks;
		s->st[cpu].attempts = cs[cpu].attempts;
		s->st[cpu].filtered = cs[cpu].filtered;
		mc = s->ring ? pgtrace_ring_cpu(s->ring, cpu) : NULL;
		if (!mc)
			continue;
		s->mc[cpu].events = mc->events;
		s->mc[cpu].lost = mc->lost;
		s->mc[cpu].chunks = mc->chunks;
		s->mc[cpu].produced = mc->produced;
		s->mc[cpu].overwritten = mc->overwritten;
	}
	return 0;
}

static void session_close(struct session *s)
{
	if (s->fd >= 0 && s->reading) {
		ioctl(s->fd, PAGETRACE_IOC_STOP);
		s->fast = true;
		pthread_join(s->thread, NULL);
		s->reading = false;
	}
	pgtrace_ring_unmap(s->ring);
	s->ring = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Per CPU, what the trace holds. */
struct trace_cpu {
	uint64_t	events, lost, chunks;
	uint64_t	first_seq, next_seq, gaps;
	uint64_t	last_ns;
	bool		seen;
};

struct trace_tally {
	struct trace_cpu	cpu[MAX_CPUS];
	unsigned int		nr_cpus;
	uint64_t		start_ns;
	uint64_t		seq_back, time_back, before_start, bad_cpu;
	uint64_t		by_type[4];
	char			first[200];
};

static int tally_chunk(const struct pgtrace_chunk *c, void *arg)
{
	struct trace_tally *t = arg;
	struct trace_cpu *tc;

	/* The memory map at start is no CPU's traffic. */
	if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
		return 0;
	if (c->cpu >= t->nr_cpus || c->cpu >= MAX_CPUS) {
		t->bad_cpu++;
		return 0;
	}
	tc = &t->cpu[c->cpu];
	if (!tc->seen) {
		tc->seen = true;
		tc->first_seq = c->seq;
	} else if (c->seq < tc->next_seq) {
		t->seq_back++;
		if (!t->first[0])
			snprintf(t->first, sizeof(t->first),
				 "cpu %u: chunk seq %" PRIu64 " after %" PRIu64,
				 c->cpu, c->seq, tc->next_seq - 1);
	} else {
		tc->gaps += c->seq - tc->next_seq;
	}
	tc->next_seq = c->seq + 1;
	tc->chunks++;
	tc->lost += c->lost;
	return 0;
}

/* Decode the whole trace: 0, or the library's -errno with @why set. */
static int tally_trace(const struct pt_st_buf *b, struct trace_tally *t,
		       char *why, size_t len)
{
	struct pgtrace_event ev[1024];
	struct pgtrace_reader *r = NULL;
	int n;

	memset(t, 0, sizeof(*t));
	n = pgtrace_reader_open_mem(&r, b->p, b->len, 0);
	if (n) {
		snprintf(why, len, "%s", r ? pgtrace_reader_error(r) : strerror(-n));
		pgtrace_reader_close(r);
		return n;
	}
	t->nr_cpus = pgtrace_reader_header(r)->nr_cpus;
	t->start_ns = pgtrace_reader_header(r)->start_ns;
	pgtrace_reader_set_chunk_cb(r, tally_chunk, t);
	while ((n = pgtrace_reader_next_batch(r, ev, 1024)) > 0) {
		for (int i = 0; i < n; i++) {
			struct trace_cpu *tc;

			if (ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
				continue;
			if (ev[i].cpu >= t->nr_cpus || ev[i].cpu >= MAX_CPUS) {
				t->bad_cpu++;
				continue;
			}
			tc = &t->cpu[ev[i].cpu];
			if (ev[i].time_ns < tc->last_ns) {
				t->time_back++;
				if (!t->first[0])
					snprintf(t->first, sizeof(t->first),
						 "cpu %u: event at %" PRIu64 " ns after one at %" PRIu64,
						 ev[i].cpu, ev[i].time_ns, tc->last_ns);
			}
			tc->last_ns = ev[i].time_ns;
			if (ev[i].time_ns < t->start_ns)
				t->before_start++;
			tc->events++;
			if (ev[i].type < 4)
				t->by_type[ev[i].type]++;
		}
	}
	if (n < 0)
		snprintf(why, len, "%s", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	return n;
}

/* events + lost + filtered against attempts + probe_missed. */
static void check_kernel_counts(struct session *s)
{
	uint64_t excess = 0;

	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		const typeof(s->st[0]) *c = &s->st[cpu];
		uint64_t kept = c->events + c->lost + c->filtered;

		if (kept < c->attempts)
			fail(s, "cpu %u: events %" PRIu64 " + lost %" PRIu64 " + filtered %" PRIu64
			     " < attempts %" PRIu64, cpu, c->events, c->lost, c->filtered,
			     c->attempts);
		else
			excess += kept - c->attempts;
	}
	if (excess != s->probe_missed)
		fail(s, "events + lost + filtered - attempts = %" PRIu64
		     " over all CPUs, probe_missed %" PRIu64, excess, s->probe_missed);
}

/* The trace in the file against what the kernel says it wrote. */
static void check_trace(struct session *s, const struct trace_tally *t)
{
	if (t->nr_cpus != s->nr_cpus)
		fail(s, "header nr_cpus %u, STATS %u", t->nr_cpus, s->nr_cpus);
	if (t->seq_back || t->time_back || t->before_start || t->bad_cpu)
		fail(s, "decode: %" PRIu64 " seq going back, %" PRIu64 " times going back, %"
		     PRIu64 " events before the start, %" PRIu64 " bad cpus; first: %s",
		     t->seq_back, t->time_back, t->before_start, t->bad_cpu, t->first);
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		const struct trace_cpu *tc = &t->cpu[cpu];
		const typeof(s->st[0]) *c = &s->st[cpu];

		if (s->mode == MODE_STREAM) {
			if (tc->events != c->events || tc->lost != c->lost ||
			    tc->chunks != c->chunks)
				fail(s, "cpu %u: file events/lost/chunks %" PRIu64 "/%" PRIu64
				     "/%" PRIu64 ", kernel %" PRIu64 "/%" PRIu64 "/%" PRIu64,
				     cpu, tc->events, tc->lost, tc->chunks, c->events,
				     c->lost, c->chunks);
			if (tc->chunks && (tc->first_seq || tc->gaps))
				fail(s, "cpu %u: stream mode, yet seq starts at %" PRIu64
				     " with %" PRIu64 " missing", cpu, tc->first_seq, tc->gaps);
			continue;
		}
		/* Flight: the ring's counters are the kernel's, after STOP... */
		if (s->mc[cpu].events != c->events || s->mc[cpu].lost != c->lost ||
		    s->mc[cpu].chunks != c->chunks || s->mc[cpu].produced != c->chunks)
			fail(s, "cpu %u: ring events/lost/chunks/produced %" PRIu64 "/%" PRIu64
			     "/%" PRIu64 "/%" PRIu64 ", STATS %" PRIu64 "/%" PRIu64 "/%" PRIu64,
			     cpu, s->mc[cpu].events, s->mc[cpu].lost,
			     s->mc[cpu].chunks, s->mc[cpu].produced,
			     c->events, c->lost, c->chunks);
		/* ...and every chunk it closed was copied or overwritten. */
		if (tc->chunks + s->mc[cpu].overwritten != c->chunks)
			fail(s, "cpu %u: %" PRIu64 " chunks in the file + %" PRIu64
			     " overwritten != %" PRIu64 " closed", cpu, tc->chunks,
			     s->mc[cpu].overwritten, c->chunks);
		if (tc->chunks && (tc->next_seq != c->chunks ||
				   tc->first_seq + tc->gaps != s->mc[cpu].overwritten))
			fail(s, "cpu %u: seq %" PRIu64 "..%" PRIu64 " with %" PRIu64
			     " missing; %" PRIu64 " closed, %" PRIu64 " overwritten", cpu,
			     tc->first_seq, tc->next_seq - 1, tc->gaps, c->chunks,
			     s->mc[cpu].overwritten);
		if (tc->events > c->events || tc->lost > c->lost ||
		    (!s->mc[cpu].overwritten &&
		     (tc->events != c->events || tc->lost != c->lost)))
			fail(s, "cpu %u: file events/lost %" PRIu64 "/%" PRIu64
			     ", kernel %" PRIu64 "/%" PRIu64 ", %" PRIu64 " chunks overwritten",
			     cpu, tc->events, tc->lost, c->events, c->lost,
			     s->mc[cpu].overwritten);
	}
}

/*
 * After close: the module's memory back to @idle; kmemleak silent.  A
 * check that cannot see the module's memory would pass anything: mid-session
 * there must have been more of it (the rings) and a reference (the open).
 */
static void check_memory(struct session *s, const struct mod_mem *idle)
{
	static char leaks[16384];
	struct mod_mem now;
	uint64_t t0 = pt_st_mono_ns();
	int others;

	if (s->busy.vm_bytes <= idle->vm_bytes || s->busy.mod_refs <= idle->mod_refs)
		fail(s, "mid-session: vmalloc %lu areas %lu bytes, used by %ld: %s",
		     s->busy.vm_areas, s->busy.vm_bytes, s->busy.mod_refs,
		     "no more than idle, so the idle check sees nothing");

	/* Freeing may trail the close a little (RCU, a worker): wait 10 s. */
	for (;;) {
		int ret = mod_mem_read(&now);

		if (ret) {
			fail(s, "after close: reading the module's memory: %s", strerror(-ret));
			return;
		}
		if (mod_mem_same(&now, idle) || secs_since(t0) > 10)
			break;
		usleep(200000);
	}
	if (!mod_mem_same(&now, idle))
		fail(s, "after close: vmalloc %lu areas %lu bytes, module size %lu refs %ld; "
		     "idle: %lu areas %lu bytes, size %lu refs %ld; first area now: %s",
		     now.vm_areas, now.vm_bytes, now.mod_size, now.mod_refs,
		     idle->vm_areas, idle->vm_bytes, idle->mod_size, idle->mod_refs,
		     now.first_area[0] ? now.first_area : "-");
	kmemleak_scan(leaks, sizeof(leaks), &others);
	if (leaks[0])
		fail(s, "kmemleak:\n%s", leaks);
	if (others)
		diag("session %d: kmemleak: %d objects the kernel allocated, not pagetrace",
		     s->nr, others);
}

static void check_kmsg(struct session *s, int kmsg)
{
	static char splats[8192];
	int n = pt_st_kmsg_splats(kmsg, splats, sizeof(splats));

	if (n)
		fail(s, "%d splat lines in the kernel log:\n%s", n, splats);
}

/* ---------------------------------------------------------------- test */

FIXTURE(soak) {
	int		kmsg;
	struct load	load;
	bool		loaded;
	struct session	*s;
};

FIXTURE_SETUP(soak)
{
	self->kmsg = -1;
	self->loaded = false;
	self->s = NULL;
	/* The test itself skips (a SKIP here would not stop it). */
	if (!getenv("PT_SOAK_SECONDS"))
		return;
	self->kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, self->kmsg);
	if (!pt_st_mod_loaded())
		ASSERT_EQ(0, pt_st_mod_reload(""));
	/* Under memory pressure the load is the OOM killer's, never us. */
	pt_st_write_file("/proc/self/oom_score_adj", "-1000");
}

FIXTURE_TEARDOWN(soak)
{
	if (self->s) {
		session_close(self->s);
		pt_st_buf_free(&self->s->b);
		free(self->s);
	}
	if (self->loaded)
		load_stop(&self->load);
	if (self->kmsg >= 0)
		close(self->kmsg);
}

/* A few bare open/close cycles between sessions. */
static void open_close(struct session *s, int n)
{
	char hdr[64];

	for (int i = 0; i < n; i++) {
		int fd = open(DEV, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			fail(s, "open/close cycle %d: open: %s", i, strerror(errno));
			return;
		}
		if (i == 0 && (read(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
			       memcmp(hdr, PAGETRACE_MAGIC, 8)))
			fail(s, "open/close cycle: no stream header");
		close(fd);
	}
}

TEST_F_TIMEOUT(soak, sessions, 86400)
{
	long total = pt_st_env_long("PT_SOAK_SECONDS", 3600);
	long per = pt_st_env_long("PT_SOAK_SESSION_SECONDS", 60);
	uint64_t t0 = pt_st_mono_ns(), events = 0, lost = 0, overwritten = 0;
	uint64_t by_type[4] = { 0 }, missed = 0;
	unsigned long stalls = 0;
	unsigned int snapshots = 0;
	int nr = 0, failed = 0, nr_mode[2] = { 0 };
	struct mod_mem idle;
	char leaks[4096];
	int others;

	if (!getenv("PT_SOAK_SECONDS"))
		SKIP(return, "PT_SOAK_SECONDS is not set: the soak runs from `make soak` only");
	ASSERT_LT(0, total);
	ASSERT_LT(0, per);
	ASSERT_EQ(0, mod_mem_read(&idle)) TH_LOG("pagetrace is not in /proc/modules");
	diag("idle module: %lu vmalloc areas, %lu bytes; /proc/modules size %lu, used by %ld",
	     idle.vm_areas, idle.vm_bytes, idle.mod_size, idle.mod_refs);
	/*
	 * Leaks from before the soak are none of ours.  The test scans after
	 * each session itself: kmemleak's own scanning thread, every 10
	 * minutes, holds an RCU read-side section across a scan long enough,
	 * on a KASAN kernel under TCG beside the load, for an RCU stall
	 * warning (seen once in an hour's soak), so it is stopped.
	 */
	kmemleak_scan(leaks, sizeof(leaks), &others);
	if (!access(KMEMLEAK, W_OK)) {
		pt_st_write_file(KMEMLEAK, "scan=off");
		diag("kmemleak: on, its thread off; before the soak (cleared): %s of pagetrace's, %d others",
		     leaks[0] ? "reports" : "nothing", others);
	}
	ASSERT_EQ(0, load_start(&self->load));
	self->loaded = true;
	diag("soak: %ld s, sessions of %ld s, flight and stream in turn", total, per);
	printf("    KTAP version 1\n    # Subtest: soak.sessions\n");
	fflush(stdout);

	/* A session of each kind at least, however short the soak. */
	while (nr < 2 || secs_since(t0) + 10 < total) {
		struct session *s = calloc(1, sizeof(*s));
		double left = total - secs_since(t0), len = per;
		struct trace_tally *t = calloc(1, sizeof(*t));
		char why[256] = "";
		uint64_t ts = pt_st_mono_ns();
		int ret;

		ASSERT_TRUE(s && t);
		self->s = s;
		s->nr = ++nr;
		s->fd = -1;
		s->mode = nr % 2 ? MODE_FLIGHT : MODE_STREAM;
		/* The last session takes what is left, if that is not too little. */
		if (left < len + 10 && left > 10)
			len = left;
		ret = session_open(s);
		if (ret) {
			fail(s, "open: %s", strerror(-ret));
		} else {
			session_record(s, len);
			ret = session_stop(s);
			if (ret)
				fail(s, "STATS: %s", strerror(-ret));
			else
				check_kernel_counts(s);
		}
		session_close(s);
		s->secs = secs_since(ts);
		if (!ret) {
			ret = tally_trace(&s->b, t, why, sizeof(why));
			if (ret)
				fail(s, "decode: %s (%zu bytes)", why, s->b.len);
			else
				check_trace(s, t);
		}
		check_memory(s, &idle);
		check_kmsg(s, self->kmsg);
		open_close(s, 3);
		for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
			s->events += s->st[cpu].events;
			s->lost += s->st[cpu].lost;
			s->overwritten += s->mc[cpu].overwritten;
		}
		diag("session %d %s: %.1f s, %zu bytes, events %" PRIu64 " (alloc %" PRIu64
		     ", free %" PRIu64 ", reclaim %" PRIu64 " in the file), lost %" PRIu64
		     ", probe missed %" PRIu64,
		     nr, s->mode == MODE_FLIGHT ? "flight" : "stream", s->secs, s->b.len,
		     s->events, t->by_type[PGTRACE_EV_ALLOC], t->by_type[PGTRACE_EV_FREE],
		     t->by_type[PGTRACE_EV_RECLAIM], s->lost, s->probe_missed);
		diag("session %d: mid-session the module had %lu vmalloc areas, %lu bytes, %s %ld",
		     nr, s->busy.vm_areas, s->busy.vm_bytes, "used by", s->busy.mod_refs);
		if (s->mode == MODE_FLIGHT)
			diag("session %d: %u snapshots, %" PRIu64 " chunks overwritten",
			     nr, s->snapshots, s->overwritten);
		else
			diag("session %d: reader stalled %u times, %.0f s in all",
			     nr, s->stalls, s->stalled_s);
		printf("    %s %d session %d %s\n", s->failures ? "not ok" : "ok", nr, nr,
		       s->mode == MODE_FLIGHT ? "flight" : "stream");
		fflush(stdout);
		failed += !!s->failures;
		nr_mode[s->mode]++;
		events += s->events;
		lost += s->lost;
		missed += s->probe_missed;
		overwritten += s->overwritten;
		stalls += s->stalls;
		snapshots += s->snapshots;
		for (int k = 0; k < 4; k++)
			by_type[k] += t->by_type[k];
		pt_st_buf_free(&s->b);
		free(t);
		free(s);
		self->s = NULL;
	}
	printf("    1..%d\n", nr);
	fflush(stdout);

	for (int k = 0; k < NR_LOADS; k++) {
		if (self->load.why_not[k])
			diag("load %s: not run (%s)", load_names[k], self->load.why_not[k]);
		else
			diag("load %s: %lu rounds, %lu errors", load_names[k],
			     self->load.ctr->rounds[k], self->load.ctr->errors[k]);
	}
	if (!self->load.why_not[LOAD_MEMCG]) {
		char ev[512] = "";

		/* How often the hog's cgroup hit memory.max: its reclaim. */
		read_str(CG_SOAK "/memory.events", ev, sizeof(ev));
		for (char *p = ev; (p = strchr(p, '\n')); )
			*p = ' ';
		diag("load memcg reclaim: memory.events: %s", ev);
	}
	if (!self->load.why_not[LOAD_THP])
		diag("load THP: %" PRIu64 " huge page faults (thp_fault_alloc)",
		     pt_st_vmstat("thp_fault_alloc") - self->load.thp_before);
	load_stop(&self->load);
	self->loaded = false;
	/* Objects freed less than 5 s ago are not yet kmemleak's to report. */
	if (!access(KMEMLEAK, W_OK)) {
		sleep(6);
		kmemleak_scan(leaks, sizeof(leaks), &others);
		EXPECT_EQ(0, leaks[0]) TH_LOG("kmemleak after the last session:\n%s", leaks);
		diag("kmemleak after the last session: %s of pagetrace's, %d others",
		     leaks[0] ? "reports" : "nothing", others);
	}
	diag("soak summary: %d sessions (%d flight, %d stream), %d failed; events %" PRIu64
	     " (in the files: alloc %" PRIu64 ", free %" PRIu64 ", reclaim %" PRIu64
	     "), lost %" PRIu64 ", probe missed %" PRIu64 ", chunks overwritten %" PRIu64
	     ", %u flight snapshots, %lu reader stalls; elapsed %.0f s",
	     nr, nr_mode[MODE_FLIGHT], nr_mode[MODE_STREAM], failed, events,
	     by_type[PGTRACE_EV_ALLOC], by_type[PGTRACE_EV_FREE],
	     by_type[PGTRACE_EV_RECLAIM], lost, missed, overwritten, snapshots, stalls,
	     secs_since(t0));
	EXPECT_EQ(0, failed) TH_LOG("%d of %d sessions failed a check (see # session lines)",
				    failed, nr);
	/* Load that never ran is no soak: fail rather than pass an idle run. */
	EXPECT_LT(0UL, self->load.ctr->rounds[LOAD_FORK]);
	EXPECT_LT(0UL, self->load.ctr->rounds[LOAD_CACHE]);
}

TEST_HARNESS_MAIN
