// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the pagetrace selftests: the module and its parameters,
 * the kernel log, pages and CPUs; see pt_selftest.h.  Those for the stream
 * (buffers, the raw stream, decoding) are in pt_st_stream.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/mempolicy.h>

#include "pt_selftest.h"

/* Read until EOF; the session is stopped, so EOF comes. */
void *pt_st_read_all(int fd, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	while (buf) {
		if (n == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			*len = n;
			return buf;
		}
		if (r < 0)
			break;
		n += r;
	}
	free(buf);
	return NULL;
}

int pt_st_collect(int dev, struct pt_st_trace *t)
{
	struct pgtrace_reader *r = NULL;
	size_t len, cap = 1 << 14;
	void *stream;
	int ret;

	memset(t, 0, sizeof(*t));
	if (ioctl(dev, PAGETRACE_IOC_STOP)) {
		ret = -errno;
		snprintf(t->err, sizeof(t->err), "PAGETRACE_IOC_STOP: %s",
			 strerror(-ret));
		return ret;
	}
	stream = pt_st_read_all(dev, &len);
	if (!stream) {
		snprintf(t->err, sizeof(t->err), "reading the stream failed");
		return -EIO;
	}
	ret = pgtrace_reader_open_mem(&r, stream, len, 0);
	if (ret >= 0) {
		t->hdr = *pgtrace_reader_header(r);
		t->backend = pgtrace_reader_session(r) ?
			     pgtrace_reader_session(r)->backend : ~0U;
		t->clock_error_ns = pgtrace_reader_session(r) ?
				    pgtrace_reader_session(r)->clock_error_ns : 0;
		t->uncovered = pgtrace_reader_session(r) ?
			       pgtrace_reader_session(r)->uncovered : 0;
		t->attach_us = pgtrace_reader_session(r) ?
			       pgtrace_reader_session(r)->attach_us : 0;
	}
	t->ev = malloc(cap * sizeof(*t->ev));
	while (ret >= 0 && t->ev) {
		if (t->nr + 4096 > cap) {
			struct pgtrace_event *more;

			cap *= 2;
			more = realloc(t->ev, cap * sizeof(*t->ev));
			if (!more) {
				ret = -ENOMEM;
				break;
			}
			t->ev = more;
		}
		ret = pgtrace_reader_next_batch(r, t->ev + t->nr, 4096);
		if (ret <= 0)
			break;
		t->nr += ret;
	}
	if (!t->ev)
		ret = -ENOMEM;
	if (ret >= 0) {
		const struct pgtrace_kernel_counters *kc =
			pgtrace_reader_kernel_counters(r, PGTRACE_KERNEL_COUNTERS_START);

		t->snap_end_ns = kc ? kc->time_ns : 0;
	}
	if (ret < 0)
		snprintf(t->err, sizeof(t->err), "decode: %s",
			 r ? pgtrace_reader_error(r) : strerror(-ret));
	pgtrace_reader_close(r);
	t->raw = stream;
	t->raw_len = len;
	return ret < 0 ? ret : 0;
}

void pt_st_trace_free(struct pt_st_trace *t)
{
	free(t->ev);
	free(t->raw);
	t->ev = NULL;
	t->raw = NULL;
	t->nr = 0;
}

int pt_st_gt_load(void)
{
	const char *ko = getenv("PAGETRACE_GT_KO");
	int fd, ret;

	if (access(PT_GT_DIR "/run", W_OK) == 0)
		return 0;
	fd = open(ko ? ko : "./pagetrace_gt.ko", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0);
	ret = ret && errno != EEXIST ? -errno : 0;
	close(fd);
	return ret;
}

int pt_st_gt_run(const char *op, char *report, size_t len)
{
	int fd = open(PT_GT_DIR "/run", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (write(fd, op, strlen(op)) != (ssize_t)strlen(op)) {
		close(fd);
		return -EINVAL;
	}
	n = pread(fd, report, len - 1, 0);
	close(fd);
	if (n < 0)
		return -errno;
	report[n] = '\0';
	return 0;
}

int pt_st_set_hook(const char *hook)
{
	return pt_st_set_param("hook", hook);
}

int pt_st_set_param(const char *name, const char *value)
{
	return pt_st_set_module_param("pagetrace", name, value);
}

int pt_st_set_module_param(const char *module, const char *name,
			   const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module, name);
	return pt_st_write_file(path, value);
}

int pt_st_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		ret = -errno;
	else if (n != (ssize_t)strlen(s))
		ret = -EIO;
	close(fd);
	return ret;
}

long pt_st_env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : def;
}

uint64_t pt_st_vmstat(const char *name)
{
	static char buf[32768];
	size_t len = strlen(name);
	ssize_t n, got = 0;
	char *p = buf;
	int fd;

	fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (got + 1 < (ssize_t)sizeof(buf) &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtoull(p + len + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

int pt_st_cpu1_set(bool on)
{
	return pt_st_write_file(PT_ST_CPU1_ONLINE, on ? "1" : "0");
}

const char *pt_st_cpu_unplug_hangs(void)
{
	struct utsname u;

	/*
	 * Debian's 5.10-rt (5.10.223-rt) backports 5.11's CPU unplug rework
	 * without its later fixes: under an anonymous-memory churn on both
	 * CPUs, cpu1 offline hangs within a few cycles with cpuhp/1 waiting
	 * in sched_cpu_wait_empty() for a run queue that never empties (and
	 * everything that takes cpus_read_lock() behind it).  Seen in a boot
	 * that never loaded pagetrace ("Not tainted"): a static program of
	 * four children mapping, touching and unmapping 1 MiB in a loop while
	 * the parent writes 0 and 1 to cpu1/online, 50 ms apart, hung in
	 * round 1 of 40.  No kernel of the matrix but this one does.
	 */
	if (uname(&u))
		return NULL;
	if (!strncmp(u.release, "5.10.", 5) && strstr(u.version, "PREEMPT_RT"))
		return "5.10-rt's CPU unplug hangs under load without pagetrace (sched_cpu_wait_empty(); pt_st_cpu_unplug_hangs())";
	return NULL;
}

const void *pt_st_header_record(const void *stream, size_t len, uint32_t type,
				uint32_t *size)
{
	const struct pagetrace_header *h = stream;
	size_t off = sizeof(*h), end;

	if (len < sizeof(*h))
		return NULL;
	end = h->header_size < len ? h->header_size : len;
	while (off + sizeof(struct pagetrace_record) <= end) {
		const struct pagetrace_record *rec = (const void *)((const char *)stream + off);

		if (rec->type == PAGETRACE_REC_END)
			return NULL;
		if (off + sizeof(*rec) + rec->size > end)
			return NULL;
		if (rec->type == type) {
			*size = rec->size;
			return rec + 1;
		}
		off += sizeof(*rec) + ((rec->size + 7) & ~7U);
	}
	return NULL;
}

int pt_st_next_chunk(const void *stream, size_t len, size_t *off,
		     const struct pagetrace_chunk **c)
{
	const struct pagetrace_header *h = stream;
	const struct pagetrace_chunk *ch;

	if (!*off)
		*off = h->header_size;
	if (*off + sizeof(*ch) > len)
		return 0;
	ch = (const void *)((const char *)stream + *off);
	if (*off + sizeof(*ch) + 8ULL * ch->nr_words > len)
		return -1;
	*off += sizeof(*ch) + 8ULL * ch->nr_words;
	*c = ch;
	return 1;
}

/*
 * A page munmap() drops may still sit in a CPU's LRU batch, which holds a
 * reference, until the batch is drained: munmap drains only the batches
 * of the CPU it runs on, and a task that moved between CPUs while it
 * touched its pages left some behind.  mbind() with MPOL_MF_MOVE drains
 * every CPU's batches first (lru_cache_disable(); migrate_prep() before
 * 5.13), on a mapping with no page to move.  Then drop_caches, as before
 * (clean page cache, which costs only events).
 */
int pt_st_drain_lru(void)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd, ret = 0;

	if (p == MAP_FAILED)
		return -errno;
	/* Without NUMA (ENOSYS) there is nothing to drain this way. */
	if (syscall(SYS_mbind, p, page, MPOL_DEFAULT, NULL, 0UL, MPOL_MF_MOVE) &&
	    errno != ENOSYS)
		ret = -errno;
	munmap(p, page);
	if (ret)
		return ret;
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

int pt_st_ksym(const char *name, uint64_t *start, uint64_t *end)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long long addr;
	char line[512], sym[256];
	bool found = false;

	if (!f)
		return -errno;
	*end = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %*s %255s", &addr, sym) != 2)
			continue;
		if (!found && !strcmp(sym, name) && !strchr(line, '[')) {
			*start = addr;
			found = true;
		}
	}
	if (found) {
		/* kallsyms is not sorted: the nearest address above. */
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx", &addr) == 1 && addr > *start &&
			    addr < *end)
				*end = addr;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

int pt_st_module_text(const char *mod, uint64_t *start, uint64_t *end)
{
	FILE *f = fopen("/proc/modules", "re");
	unsigned long long size, addr;
	char line[512], name[64];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &addr) == 3 &&
		    !strcmp(name, mod)) {
			*start = addr;
			*end = addr + size;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int pt_st_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

pid_t pt_st_fork_tied(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid)
		return pid;
	/* The parent may have died before the prctl(): then exit now. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	return 0;
}

int pt_st_pagemap_pfn(const void *addr, uint64_t *pfn)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	off_t off = (uintptr_t)addr / getpagesize() * sizeof(uint64_t);
	uint64_t entry;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, &entry, sizeof(entry), off);
	close(fd);
	if (n != sizeof(entry))
		return -EIO;
	if (!(entry & (1ULL << 63)))
		return -ENOENT;
	*pfn = entry & ((1ULL << 55) - 1);
	return 0;
}

int pt_st_mark(struct pt_st_mark *m)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	m->addr = NULL;
	if (p == MAP_FAILED)
		return -errno;
	/* Left mapped: its PFN must not be freed and reused before it is looked up. */
	p[0] = 1;
	m->addr = p;
	return pt_st_pagemap_pfn(p, &m->pfn);
}

/* The latest allocation covering @pfn at or before @limit, outside the snapshot. */
static uint64_t last_alloc(const struct pt_st_trace *t, uint64_t pfn, uint64_t limit)
{
	uint64_t when = 0;
	size_t i;

	for (i = 0; i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];

		if (ev->type == PGTRACE_EV_ALLOC && pfn >= ev->pfn &&
		    pfn < ev->pfn + ev->npages && ev->time_ns <= limit &&
		    !(ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) && ev->time_ns > when)
			when = ev->time_ns;
	}
	return when;
}

uint64_t pt_st_mark_time(const struct pt_st_trace *t, const struct pt_st_mark *m)
{
	uint64_t now, moved;

	if (!m->addr || pt_st_pagemap_pfn(m->addr, &now))
		return 0;
	if (now == m->pfn)
		return last_alloc(t, m->pfn, UINT64_MAX);
	/* Moved (once): the move allocated @now, then freed the old page. */
	moved = last_alloc(t, now, UINT64_MAX);
	return moved ? last_alloc(t, m->pfn, moved) : 0;
}

uint64_t pt_st_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t pt_st_mono_to_trace(const struct pagetrace_header *h, uint64_t mono)
{
	return mono - h->start_mono_ns + h->start_ns;
}

const char *pt_st_ko_path(void)
{
	const char *ko = getenv("PAGETRACE_KO");

	if (ko && *ko)
		return ko;
	return access("./pagetrace.ko", R_OK) == 0 ? "./pagetrace.ko" : NULL;
}

/*
 * modprobe pagetrace PARAMS...: how a kernel CI run, which installs the
 * module with the kernel's, loads it.  0, or -ENOENT when modprobe is
 * missing or fails (it prints why).
 */
static int pt_st_modprobe(const char *params)
{
	char buf[512], *argv[64], *save = NULL, *tok;
	int argc = 0, status;
	pid_t pid;

	argv[argc++] = "modprobe";
	argv[argc++] = "pagetrace";
	snprintf(buf, sizeof(buf), "%s", params ? params : "");
	for (tok = strtok_r(buf, " ", &save); tok && argc < 63;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp("modprobe", argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ENOENT;
}

int pt_st_mod_load(const char *params)
{
	const char *ko = pt_st_ko_path();
	int fd, ret, err;

	if (!ko)
		return pt_st_modprobe(params);
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params ? params : "", 0);
	err = errno;
	close(fd);
	return ret ? -err : 0;
}

/*
 * Every program needs the module.  The VM runner of scripts/test/check.sh
 * loads it first; run_kselftest.sh (kernel CI) does not, so a program
 * that finds no /dev/pagetrace loads it itself, from $PAGETRACE_KO,
 * ./pagetrace.ko or with modprobe, and otherwise skips all its tests
 * (KTAP "1..0 # SKIP", exit status 4), saying why.  Runs before the
 * harness's main().
 */
static void __attribute__((constructor)) pt_st_need_module(void)
{
	int ret, i;

	if (access("/dev/pagetrace", F_OK) == 0)
		return;
	if (pt_st_mod_loaded())
		ret = -ENODEV;	/* loaded, but no device: wait for udev */
	else
		ret = pt_st_mod_load(NULL);
	if (ret == -EEXIST)	/* someone else loaded it meanwhile */
		ret = -ENODEV;
	for (i = 0; i < 200 && (!ret || ret == -ENODEV); i++) {
		if (access("/dev/pagetrace", F_OK) == 0)
			return;
		usleep(10000);
	}
	printf("TAP version 13\n1..0 # SKIP pagetrace is not loaded and cannot be: %s (%s)\n",
	       pt_st_ko_path() ? pt_st_ko_path() : "modprobe pagetrace",
	       ret ? strerror(-ret) : "no /dev/pagetrace after 2 s");
	fflush(stdout);
	_exit(4);	/* KSFT_SKIP */
}

int pt_st_mod_unload(void)
{
	return syscall(SYS_delete_module, "pagetrace", O_NONBLOCK) ? -errno : 0;
}

int pt_st_mod_loaded(void)
{
	return access("/sys/module/pagetrace/initstate", F_OK) == 0;
}

int pt_st_mod_reload(const char *params)
{
	int ret, i;

	/*
	 * A test process the harness killed may still be exiting (its
	 * waitpid() returns early on SIGALRM), holding the device for a
	 * moment: give it a second.
	 */
	for (i = 0; pt_st_mod_loaded(); i++) {
		ret = pt_st_mod_unload();
		if (!ret)
			break;
		if (ret != -EWOULDBLOCK || i == 100)
			return ret;
		usleep(10000);
	}
	ret = pt_st_mod_load(params);
	if (ret)
		return ret;
	for (i = 0; i < 200; i++) {
		if (access("/dev/pagetrace", F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -ENODEV;
}

int pt_st_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The next record from /dev/kmsg @fd, read into @rec (@len bytes): its
 * message, after the "prio,seq,time,flags;" prefix, or NULL at the end
 * (or on an error).  An overrun (EPIPE) goes on with what is left.
 */
static const char *pt_st_kmsg_next(int fd, char *rec, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, rec, len - 1);
		char *msg;

		if (n < 0 && errno == EPIPE)
			continue;	/* overrun; go on with what is left */
		if (n <= 0)
			return NULL;
		rec[n] = 0;
		msg = strchr(rec, ';');
		return msg ? msg + 1 : rec;
	}
}

void pt_st_kmsg_read(int fd, char *out, size_t len)
{
	char rec[8192];
	const char *msg;
	size_t used = 0;

	out[0] = 0;
	while ((msg = pt_st_kmsg_next(fd, rec, sizeof(rec)))) {
		used += snprintf(out + used, len - used, "%s", msg);
		if (used >= len - 1)
			break;
	}
}

/*
 * A frame of a backtrace, "  ? lockdep_hardirqs_on+0x7d/0x100 [mod]": its
 * function's name may hold any of the words below (a debug kernel's OOM
 * report shows lockdep_* and kasan_* frames), so frames count only
 * through the "Call Trace" line that heads them.
 */
static bool pt_st_kmsg_frame(const char *msg)
{
	const char *end, *plus;

	msg += strspn(msg, " ");
	if (!strncmp(msg, "? ", 2))
		msg += 2;
	end = msg + strcspn(msg, " \n");
	plus = strstr(msg, "+0x");
	return plus && plus < end && strstr(plus, "/0x") &&
	       strstr(plus, "/0x") < end;
}

int pt_st_kmsg_splats(int fd, char *out, size_t len)
{
	/*
	 * Lockdep reports start with "WARNING:", "BUG:" or "INFO:", and the
	 * validator says so when it turns itself off; RCU stalls start with
	 * "INFO:" too, debugobjects reports with "ODEBUG:".
	 */
	static const char *const bad[] = {
		"BUG:", "WARNING:", "INFO:", "ODEBUG:", "Oops", "KASAN",
		"locking correctness validator",
		"possible recursive locking", "possible circular locking",
		"sleeping function called from invalid context",
		"suspicious RCU usage", "Call Trace", "general protection",
		"UBSAN", "list_add corruption", "list_del corruption",
	};
	char rec[8192];
	const char *msg;
	size_t used = 0;
	int found = 0;
	bool oom = false;

	if (len)
		out[0] = 0;
	while ((msg = pt_st_kmsg_next(fd, rec, sizeof(rec)))) {
		/*
		 * An OOM kill report dumps the stack of the task that
		 * invoked the killer: expected under memory pressure, not a
		 * kernel problem.  Its "Call Trace" is not a splat.
		 */
		if (strstr(msg, "invoked oom-killer:"))
			oom = true;
		else if (strstr(msg, "Killed process") || strstr(msg, "Out of memory"))
			oom = false;
		if (pt_st_kmsg_frame(msg))
			continue;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (!strstr(msg, bad[i]) ||
			    (oom && !strcmp(bad[i], "Call Trace")))
				continue;
			found++;
			if (used + 1 < len)
				used += snprintf(out + used, len - used, "%s", msg);
			if (used >= len)
				used = len - 1;
			break;
		}
	}
	return found;
}

/* PAGETRACE_IOC_STATS into @cpus[@nr], filled with @fill bytes first. */
static int pt_st_stats_fill(int dev, struct pagetrace_cpu_stats *cpus,
			    unsigned int nr, int fill, struct pagetrace_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->cpus = (uintptr_t)cpus;
	st->nr_cpus = nr;
	memset(cpus, fill, nr * sizeof(*cpus));
	return ioctl(dev, PAGETRACE_IOC_STATS, st) ? -errno : 0;
}

int pt_st_stats(int dev, struct pagetrace_cpu_stats *cpus, unsigned int nr,
		uint64_t *missed)
{
	struct pagetrace_stats st;
	int ret = pt_st_stats_fill(dev, cpus, nr, 0, &st);

	if (!ret && missed)
		*missed = st.probe_missed;
	return ret;
}

int pt_st_stats_poisoned(int dev, struct pagetrace_cpu_stats *cpus,
			 unsigned int nr, struct pagetrace_stats *st)
{
	return pt_st_stats_fill(dev, cpus, nr, 0xa5, st);
}

int pt_st_info(int fd, struct pagetrace_info *info)
{
	memset(info, 0xa5, sizeof(*info));
	return ioctl(fd, PAGETRACE_IOC_INFO, info) ? -errno : 0;
}

/* ---------------------------------------------- the module's parameters */

int pt_st_get_param_str(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/module/pagetrace/parameters/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

long pt_st_get_param(const char *name)
{
	char s[32];

	if (pt_st_get_param_str(name, s, sizeof(s)) <= 0)
		return -1;
	return strtol(s, NULL, 0);
}

int pt_st_mod_live(void)
{
	char s[32] = "";
	int fd = open("/sys/module/pagetrace/initstate", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, s, sizeof(s) - 1) < 0)
		s[0] = 0;
	close(fd);
	return !strncmp(s, "live", 4);
}

bool pt_st_wait_dev(bool present, int ms)
{
	for (int i = 0; i <= ms / 10; i++) {
		if ((access("/dev/pagetrace", F_OK) == 0) == present)
			return true;
		usleep(10000);
	}
	return false;
}

bool pt_st_wait_recording(int ms)
{
	char v[8];

	for (int i = 0; i <= ms / 10; i++) {
		if (pt_st_get_param_str("recording", v, sizeof(v)) > 0 &&
		    (v[0] == 'Y' || v[0] == '1'))
			return true;
		usleep(10000);
	}
	return false;
}

bool pt_st_mod_is_default(void)
{
	return pt_st_mod_live() &&
	       pt_st_get_param("buf_size") == PT_ST_DEF_BUF_SIZE &&
	       pt_st_get_param("nr_bufs") == PT_ST_DEF_NR_BUFS &&
	       pt_st_get_param("flush_ms") == PT_ST_DEF_FLUSH_MS;
}

int pt_st_mod_ensure_default(void)
{
	int ret;

	if (!pt_st_mod_is_default()) {
		if (pt_st_mod_live()) {
			ret = pt_st_mod_unload();
			if (ret)
				return ret;
		}
		ret = pt_st_mod_load("");
		if (ret)
			return ret;
	}
	return pt_st_wait_dev(true, 2000) && pt_st_mod_is_default() ? 0 : -ENODEV;
}

int pt_st_open_dev(int flags)
{
	pt_st_set_param("snapshot", "0");
	return open("/dev/pagetrace", flags);
}

/* ----------------------------------------------------------- page traffic */

void pt_st_touch_and_free(size_t len)
{
	size_t page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	/* Single pages, so that the event count follows the page count. */
	madvise((void *)p, len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len; i += page)
		p[i] = 1;
	munmap((void *)p, len);
}

struct pt_st_worker {
	pthread_t	thread;
	int		cpu;
	size_t		len;
	int		ran_on;		/* sched_getcpu() after the work */
};

static void *pt_st_worker_fn(void *arg)
{
	struct pt_st_worker *w = arg;

	if (pt_st_pin_cpu(w->cpu)) {
		w->ran_on = -1;
		return NULL;
	}
	pt_st_touch_and_free(w->len);
	w->ran_on = sched_getcpu();
	return NULL;
}

int pt_st_on_every_cpu(size_t len, unsigned char *cpus, unsigned int nr)
{
	struct pt_st_worker *w = calloc(CPU_SETSIZE, sizeof(*w));
	cpu_set_t set;
	int n = 0, bad = 0;

	if (!w)
		return -1;
	if (sched_getaffinity(0, sizeof(set), &set)) {
		free(w);
		return -1;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		w[n].cpu = cpu;
		w[n].len = len;
		w[n].ran_on = -1;
		if (pthread_create(&w[n].thread, NULL, pt_st_worker_fn, &w[n])) {
			bad = 1;
			break;
		}
		n++;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].ran_on != w[i].cpu)
			bad = 1;
		else if (cpus && (unsigned int)w[i].cpu < nr)
			cpus[w[i].cpu] = 1;
	}
	free(w);
	return bad ? -1 : n;
}

uint64_t pt_st_one_page_event(uint64_t *mono_before, bool drain_lru)
{
	size_t page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t pfn;

	if (p == MAP_FAILED)
		return 0;
	if (mono_before)
		*mono_before = pt_st_mono_ns();
	p[0] = 1;
	if (pt_st_pagemap_pfn((const void *)p, &pfn))
		pfn = 0;
	munmap((void *)p, page);
	/* The free may wait in an LRU batch (7.x). */
	if (drain_lru)
		pt_st_drain_lru();
	return pfn;
}

int pt_st_pin_first_cpu(void)
{
	cpu_set_t set;
	int cpu, ret;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	if (cpu == CPU_SETSIZE)
		return -ENOENT;
	ret = pt_st_pin_cpu(cpu);
	return ret ? ret : cpu;
}
