// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_trigger_test: pagetrace record --flight-recorder --trigger
 * ($PAGETRACE_BIN), which keeps the newest events in the mapped buffers and
 * writes one trace file (and its JSON sidecar) per trigger into -o DIR.
 *
 *  - signal: SIGUSR1 writes one file that decodes and holds the page we
 *    allocated just before the signal;
 *  - oom: a process in a memory cgroup with memory.max=32M allocates until
 *    the OOM killer kills it: exactly one file, that decodes, whose trace
 *    goes on after the trigger fired, with the victim's allocations (task
 *    records) and frees of its pages after them (its exit, after the kill);
 *  - psi: a process over a small memory.high stalls, and
 *    psi=some:...@CGROUP fires on the cgroup's memory.pressure;
 *  - inuse: inuse>N, N 20,000 pages above the count at the start, does not
 *    fire until we touch 40,000 pages, then writes exactly one file, with
 *    the count in its sidecar and our pages' allocations in its trace;
 *  - keep: --keep 2M under a load that writes 8 times that and more gives
 *    a file of at most 2M of events, and not much less; keep_default:
 *    without --keep the rings hold 64 MiB in all (--json summary).
 *
 * And what inuse counts with: the meta area's allocated_pages and freed_pages
 * (meta_pages), summed over the CPUs after a stream session's stop, are
 * exactly the pages of the allocations and of the frees and reclaims its
 * stream holds.
 *
 * Runs as root with pagetrace.ko loaded; skips without the CLI, without
 * cgroup v2's memory controller, without oom_kill in /proc/vmstat (before
 * 4.13) or without PSI (/proc/pressure missing).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/pagetrace.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV		"/dev/pagetrace"
#define PAGE		4096UL
#define CG_ROOT		"/sys/fs/cgroup"
#define TASKS_PARAM	"tasks"

FIXTURE(trig) {
	const char		*bin;
	char			out[8192];	/* the recorder's stdout + stderr */
	char			dir[64];	/* -o DIR */
	char			cgroup[128];	/* made by the test, or "" */
	char			old_tasks[16];	/* the tasks parameter, or "" */
	pid_t			rec, child;
	int			rfd;
	struct pt_st_buf	b;
};

FIXTURE_SETUP(trig)
{
	self->bin = getenv("PAGETRACE_BIN");
	self->rec = self->child = -1;
	self->rfd = -1;
}

FIXTURE_TEARDOWN(trig)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	if (self->rec > 0) {
		kill(self->rec, SIGKILL);
		waitpid(self->rec, NULL, 0);
	}
	if (self->rfd >= 0)
		close(self->rfd);
	if (self->old_tasks[0])
		pt_st_set_param(TASKS_PARAM, self->old_tasks);
	if (self->cgroup[0])
		rmdir(self->cgroup);
	if (self->dir[0])
		pt_st_rm_dir(self->dir);
	pt_st_buf_free(&self->b);
}

#define TRIG_READY() do {						\
	if (access(DEV, F_OK))						\
		SKIP(return, DEV " missing: load pagetrace.ko first");	\
	if (!self->bin || access(self->bin, X_OK))			\
		SKIP(return, "no pagetrace CLI: set PAGETRACE_BIN");	\
} while (0)

/* Start the recorder with @argv (argv[0] ignored); its output to a pipe. */
static int rec_start(FIXTURE_DATA(trig) *self, char **argv)
{
	int p[2];

	if (pipe(p))
		return -1;
	self->rec = fork();
	if (self->rec == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		argv[0] = (char *)self->bin;
		execv(self->bin, argv);
		_exit(127);
	}
	close(p[1]);
	self->rfd = p[0];
	return self->rec > 0 ? 0 : -1;
}

/* SIGINT, then its output and exit status. */
static int rec_stop(FIXTURE_DATA(trig) *self)
{
	size_t len = 0;
	ssize_t n;
	int st;

	kill(self->rec, SIGINT);
	while ((n = read(self->rfd, self->out + len, sizeof(self->out) - 1 - len)) > 0)
		len += n;
	self->out[len] = 0;
	close(self->rfd);
	self->rfd = -1;
	if (waitpid(self->rec, &st, 0) != self->rec)
		return -1;
	self->rec = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The trigger files in @dir: how many; the first one's name in @name. */
static int count_files(const char *dir, const char *ext, char *name, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), e = strlen(ext);

		if (strncmp(de->d_name, "pagetrace-", 10) || l < e ||
		    strcmp(de->d_name + l - e, ext))
			continue;
		if (!n++ && name && strlen(dir) + l + 2 <= len) {
			size_t dl = strlen(dir);

			memcpy(name, dir, dl);
			name[dl] = '/';
			memcpy(name + dl + 1, de->d_name, l + 1);
		}
	}
	closedir(d);
	return n;
}

/* Wait up to @secs for a sidecar (written last) in @dir. */
static bool wait_for_file(const char *dir, int secs)
{
	for (int i = 0; i < secs * 10; i++) {
		if (count_files(dir, ".json", NULL, 0))
			return true;
		usleep(100000);
	}
	return false;
}

/* The number after "KEY": in the sidecar @json, or 0. */
static uint64_t json_u64(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(json, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

/* The sidecar of @bin, NUL-terminated in @b. */
static int load_json(const char *bin, struct pt_st_buf *b)
{
	char path[600];
	int ret;

	snprintf(path, sizeof(path), "%.*s.json", (int)strlen(bin) - 4, bin);
	ret = pt_st_load_file(path, b);
	if (!ret)
		pt_st_buf_add(b, "", 1);
	return ret;
}

/* Mount cgroup2 if need be, turn on the memory controller, make @name. */
static int cgroup_make(FIXTURE_DATA(trig) *self, const char *name)
{
	if (access(CG_ROOT "/cgroup.procs", F_OK)) {
		mkdir(CG_ROOT, 0755);
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL))
			return -errno;
	}
	pt_st_write_file(CG_ROOT "/cgroup.subtree_control", "+memory");
	snprintf(self->cgroup, sizeof(self->cgroup), CG_ROOT "/%s", name);
	if (mkdir(self->cgroup, 0755) && errno != EEXIST) {
		self->cgroup[0] = '\0';
		return -errno;
	}
	return 0;
}

static int cgroup_write(FIXTURE_DATA(trig) *self, const char *file, const char *s)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", self->cgroup, file);
	return pt_st_write_file(path, s);
}

/*
 * A child that waits for a byte on @go, then maps and touches @mib MiB a
 * MiB at a time (single pages, never freed) and sleeps.  It is put into
 * the cgroup before it is told to go.
 */
static pid_t start_hog(FIXTURE_DATA(trig) *self, size_t mib, const char *comm)
{
	int go[2];
	char c = 'g', pid_s[16];
	pid_t pid;

	if (pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		prctl(PR_SET_NAME, comm);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (size_t i = 0; i < mib; i++) {
			char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				_exit(2);
			madvise(p, 1 << 20, MADV_NOHUGEPAGE);
			for (size_t off = 0; off < (1 << 20); off += PAGE)
				p[off] = 1;
		}
		for (;;)
			pause();
	}
	close(go[0]);
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	if (pid < 0 || cgroup_write(self, "cgroup.procs", pid_s) ||
	    write(go[1], &c, 1) != 1) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		close(go[1]);
		return -1;
	}
	close(go[1]);
	return pid;
}

/* What a trigger file holds, for the tests' checks. */
struct scan {
	uint64_t	pfn;		/* signal: our page */
	bool		found_pfn;
	int64_t		victim;		/* oom: the victim's tgid */
	uint64_t	victim_allocs;	/* pages it allocated */
	uint64_t	victim_frees;	/* frees of those pages after their alloc */
	uint64_t	events;
	uint64_t	last_ns;
	uint64_t	lost;		/* the decoder's count of the file's losses */
	uint64_t	missing;	/* and of its chunks missing */
	char		why[256];
};

struct victim_page {
	uint64_t	pfn, time;
};

static int by_pfn(const void *a, const void *b)
{
	const struct victim_page *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/*
 * Decode @b to the end: 0, or -1 with s->why.  Two passes for the victim:
 * its allocations, then frees of those pages later than their allocation
 * (the file holds each CPU's chunks in turn, not in time order).
 */
static int scan_file(const struct pt_st_buf *b, struct scan *s)
{
	struct victim_page *vp = NULL;
	size_t nvp = 0, cap = 0;
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	int ret;

	for (int pass = 0; pass < (s->victim ? 2 : 1); pass++) {
		ret = pgtrace_reader_open_mem(&r, b->p, b->len, 0);
		if (ret) {
			snprintf(s->why, sizeof(s->why), "open: %s", r ?
				 pgtrace_reader_error(r) : strerror(-ret));
			goto out;
		}
		while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
			bool snap = ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT;

			if (pass == 0 && !snap) {
				s->events++;
				if (ev.time_ns > s->last_ns)
					s->last_ns = ev.time_ns;
			}
			if (pass == 0 && !snap && ev.type == PGTRACE_EV_ALLOC &&
			    s->pfn >= ev.pfn && s->pfn < ev.pfn + ev.npages)
				s->found_pfn = true;
			if (pass == 0 && !snap && ev.type == PGTRACE_EV_ALLOC &&
			    s->victim && ev.task == s->victim) {
				s->victim_allocs += ev.npages;
				for (uint64_t i = 0; i < ev.npages; i++) {
					if (nvp == cap) {
						cap = cap ? 2 * cap : 4096;
						vp = realloc(vp, cap * sizeof(*vp));
						if (!vp)
							goto out;
					}
					vp[nvp++] = (struct victim_page){ ev.pfn + i, ev.time_ns };
				}
			}
			if (pass == 1 && ev.type == PGTRACE_EV_FREE) {
				for (uint64_t i = 0; i < ev.npages; i++) {
					struct victim_page key = { ev.pfn + i, 0 }, *f;

					f = bsearch(&key, vp, nvp, sizeof(*vp), by_pfn);
					if (f && ev.time_ns > f->time)
						s->victim_frees++;
				}
			}
		}
		if (ret) {
			snprintf(s->why, sizeof(s->why), "decode: %s", pgtrace_reader_error(r));
			goto out;
		}
		if (pass == 0) {
			s->lost = pgtrace_reader_counters(r)->lost;
			s->missing = pgtrace_reader_counters(r)->missing_chunks;
		}
		pgtrace_reader_close(r);
		r = NULL;
		if (pass == 0 && nvp)
			qsort(vp, nvp, sizeof(*vp), by_pfn);
	}
out:
	pgtrace_reader_close(r);
	free(vp);
	return ret ? -1 : 0;
}

/* SIGUSR1 writes one file that decodes and holds the page we just allocated. */
TEST_F_TIMEOUT(trig, signal, 180)
{
	char *argv[] = { NULL, "record", "--trigger", "signal", "-o", "/tmp/pt-trig-sig",
			 "--keep", "16M", "-d", "120", NULL };
	struct pt_st_buf json = { 0 };
	struct scan s = { 0 };
	char bin[512];

	TRIG_READY();
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-sig");
	pt_st_rm_dir(self->dir);
	ASSERT_LE(0, pt_st_pin_first_cpu());
	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));
	s.pfn = pt_st_one_page_event(NULL, false);
	ASSERT_NE(0, s.pfn);
	ASSERT_EQ(0, kill(self->rec, SIGUSR1));
	EXPECT_TRUE(wait_for_file(self->dir, 60));
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%s", self->out);
	ASSERT_EQ(1, count_files(self->dir, ".bin", bin, sizeof(bin)));
	ASSERT_NE(NULL, strstr(bin, "-signal-1.bin")) TH_LOG("%s", bin);
	ASSERT_EQ(0, pt_st_load_file(bin, &self->b));
	ASSERT_EQ(0, scan_file(&self->b, &s)) TH_LOG("%s", s.why);
	EXPECT_TRUE(s.found_pfn) TH_LOG("pfn %#" PRIx64 " not in %s", s.pfn, bin);
	ASSERT_EQ(0, load_json(bin, &json));
	TH_LOG("%s", (char *)json.p);
	EXPECT_NE(NULL, strstr((char *)json.p, "\"trigger\": \"signal\""));
	EXPECT_EQ(s.events, json_u64((char *)json.p, "events"));
	EXPECT_EQ(s.last_ns, json_u64((char *)json.p, "last_event_ns"));
	/* The sidecar's losses are the file's, as a decoder counts them. */
	EXPECT_EQ(s.lost, json_u64((char *)json.p, "lost"));
	EXPECT_EQ(s.missing, json_u64((char *)json.p, "missing_chunks"));
	EXPECT_LE(json_u64((char *)json.p, "fired_mono_ns"),
		  json_u64((char *)json.p, "span_end_mono_ns"));
	pt_st_buf_free(&json);
}

/* The --json summary's number after "KEY": in the recorder's output, or 0. */
static uint64_t summary_u64(FIXTURE_DATA(trig) *self, const char *key)
{
	const char *j = strstr(self->out, "{\"output\": ");

	return j ? json_u64(j, key) : 0;
}

#define KEEP		(2ULL << 20)	/* --keep 2M */
#define DEFAULT_KEEP	(64ULL << 20)	/* what --keep is without one */

/*
 * --keep 2M bounds what a trigger file holds: the CPUs write at least
 * eight times that before SIGUSR1 (every CPU its share), and the file has
 * at most 2M of events (each at least one 8-byte word) and at most a
 * quarter more on disk (the header, task records), yet not trivially
 * little: at least half of it (each CPU's ring was filled right before).
 * Ignored, the default 64M would keep all 16M+ of them.
 */
TEST_F_TIMEOUT(trig, keep, 300)
{
	char *argv[] = { NULL, "record", "--trigger", "signal", "-o", "/tmp/pt-trig-keep",
			 "--keep", "2M", "--json", "-d", "280", NULL };
	struct pt_st_buf json = { 0 };
	struct scan s = { 0 };
	uint64_t ring, written, bytes;
	struct stat sb;
	char bin[512];
	int ncpu = 0, rounds = 0;
	time_t t0;

	TRIG_READY();
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-keep");
	pt_st_rm_dir(self->dir);
	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));
	/*
	 * 4 MiB of single pages touched and freed on every CPU: 1,024 pages,
	 * at least 2,048 events, 16 KiB of trace per CPU and round, until
	 * 24 MiB were written, 12 x --keep (or 150 s went by: the summary
	 * says what was written).
	 */
	t0 = time(NULL);
	while (rounds * ncpu < 1536 && time(NULL) - t0 < 150) {
		ncpu = pt_st_on_every_cpu(4 << 20, NULL, 0);
		ASSERT_LT(0, ncpu);
		rounds++;
	}
	ASSERT_EQ(0, kill(self->rec, SIGUSR1));
	EXPECT_TRUE(wait_for_file(self->dir, 60));
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%d rounds on %d CPUs in %ld s; %s", rounds, ncpu, (long)(time(NULL) - t0),
	       self->out);
	/* What the recorder set up, and what the CPUs wrote. */
	ring = summary_u64(self, "buffer_size_per_cpu") * summary_u64(self, "nr_cpus");
	written = summary_u64(self, "events") * 8;
	TH_LOG("rings %" PRIu64 " bytes in all; %" PRIu64 " bytes of events written",
	       ring, written);
	EXPECT_LE(ring, KEEP);
	EXPECT_LE(KEEP / 2, ring);
	ASSERT_LE(8 * KEEP, written) TH_LOG("the load wrote too little to tell");

	ASSERT_EQ(1, count_files(self->dir, ".bin", bin, sizeof(bin)));
	ASSERT_EQ(0, stat(bin, &sb));
	ASSERT_EQ(0, pt_st_load_file(bin, &self->b));
	ASSERT_EQ(0, scan_file(&self->b, &s)) TH_LOG("%s", s.why);
	bytes = s.events * 8;
	TH_LOG("%s: %lld bytes, %" PRIu64 " events (%" PRIu64 " bytes)", bin,
	       (long long)sb.st_size, s.events, bytes);
	EXPECT_GE(KEEP, bytes);
	EXPECT_LE(KEEP / 2, bytes);
	EXPECT_GE(KEEP + KEEP / 4, (uint64_t)sb.st_size);
	ASSERT_EQ(0, load_json(bin, &json));
	EXPECT_EQ((uint64_t)sb.st_size, json_u64((char *)json.p, "bytes"));
	EXPECT_EQ(s.events, json_u64((char *)json.p, "events"));
	pt_st_buf_free(&json);
}

/*
 * Without --keep, the rings of a trigger recorder hold 64 MiB in all: the
 * per-CPU size in the --json summary times the CPUs, at most 64 MiB and
 * short of it by no more than the rounding to whole chunks.
 */
TEST_F_TIMEOUT(trig, keep_default, 120)
{
	char *argv[] = { NULL, "record", "--trigger", "signal", "-o", "/tmp/pt-trig-keep0",
			 "--json", "-d", "100", NULL };
	uint64_t per_cpu, cpus;

	TRIG_READY();
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-keep0");
	pt_st_rm_dir(self->dir);
	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%s", self->out);
	per_cpu = summary_u64(self, "buffer_size_per_cpu");
	cpus = summary_u64(self, "nr_cpus");
	ASSERT_LT(0, cpus);
	TH_LOG("%" PRIu64 " bytes per CPU, %" PRIu64 " CPUs, %ld configured", per_cpu, cpus,
	       sysconf(_SC_NPROCESSORS_CONF));
	EXPECT_GE(DEFAULT_KEEP, per_cpu * cpus);
	EXPECT_LT(DEFAULT_KEEP / 16 * 15, per_cpu * cpus);
	/* The module's own sizes are back after the session. */
	EXPECT_EQ(PT_ST_DEF_BUF_SIZE, pt_st_get_param("buf_size"));
	EXPECT_EQ(PT_ST_DEF_NR_BUFS, pt_st_get_param("nr_bufs"));
}

/*
 * A memcg OOM kill: exactly one file, whose trace holds the victim's
 * allocations and, after them, frees of its pages (the kill's aftermath),
 * and ends after the trigger fired.
 */
TEST_F_TIMEOUT(trig, oom, 300)
{
	char *argv[] = { NULL, "record", "--trigger", "oom", "-o", "/tmp/pt-trig-oom",
			 "--post", "1", "-d", "240", NULL };
	struct pt_st_buf json = { 0 };
	struct scan s = { 0 };
	char bin[512];
	uint64_t kills;
	int st, n;

	TRIG_READY();
	{
		FILE *f = fopen("/proc/vmstat", "re");
		char line[128];

		kills = UINT64_MAX;
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "oom_kill ", 9))
				kills = strtoull(line + 9, NULL, 10);
		if (f)
			fclose(f);
		if (kills == UINT64_MAX)
			SKIP(return, "no oom_kill in /proc/vmstat (kernel before 4.13)");
	}
	if (cgroup_make(self, "pt-trig-oom"))
		SKIP(return, "no cgroup v2 hierarchy to make a cgroup in");
	if (cgroup_write(self, "memory.max", "32M"))
		SKIP(return, "no memory controller in cgroup v2 (memory.max)");
	cgroup_write(self, "memory.swap.max", "0");
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-oom");
	pt_st_rm_dir(self->dir);

	/* Task records for this session only (read when it starts). */
	ASSERT_LT(0, pt_st_get_param_str(TASKS_PARAM, self->old_tasks,
					 sizeof(self->old_tasks)));
	self->old_tasks[strcspn(self->old_tasks, "\n")] = '\0';
	ASSERT_EQ(0, pt_st_set_param(TASKS_PARAM, "1"));
	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));

	self->child = start_hog(self, 256, "pt-oom-victim");
	ASSERT_LT(0, self->child);
	ASSERT_EQ(self->child, waitpid(self->child, &st, 0));
	s.victim = self->child;
	self->child = -1;
	ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		TH_LOG("the hog was not OOM killed: status %#x", st);
	EXPECT_TRUE(wait_for_file(self->dir, 60));
	/* Long enough for a second file, if one were coming (--post 1). */
	sleep(3);
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%s", self->out);
	n = count_files(self->dir, ".bin", bin, sizeof(bin));
	ASSERT_EQ(1, n);
	ASSERT_NE(NULL, strstr(bin, "-oom-1.bin")) TH_LOG("%s", bin);
	ASSERT_EQ(0, pt_st_load_file(bin, &self->b));
	ASSERT_EQ(0, scan_file(&self->b, &s)) TH_LOG("%s", s.why);
	TH_LOG("victim %" PRId64 ": %" PRIu64 " pages allocated, %" PRIu64 " of them freed "
	       "later, %" PRIu64 " events", s.victim, s.victim_allocs, s.victim_frees,
	       s.events);
	/* 32M is 8192 pages: most of them are the hog's, and in the file. */
	EXPECT_LT(4096, s.victim_allocs);
	EXPECT_LT(1024, s.victim_frees);
	ASSERT_EQ(0, load_json(bin, &json));
	TH_LOG("%s", (char *)json.p);
	EXPECT_NE(NULL, strstr((char *)json.p, "\"trigger\": \"oom\""));
	EXPECT_NE(NULL, strstr((char *)json.p, "\"detail\": \"oom_kill "));
	EXPECT_LE(json_u64((char *)json.p, "fired_mono_ns"),
		  json_u64((char *)json.p, "span_end_mono_ns"));
	EXPECT_LE(json_u64((char *)json.p, "span_start_mono_ns"),
		  json_u64((char *)json.p, "fired_mono_ns"));
	/* --post 1: the ring was frozen no sooner than a second after. */
	EXPECT_LE(json_u64((char *)json.p, "fired_mono_ns") + 1000000000ULL,
		  json_u64((char *)json.p, "frozen_mono_ns"));
	EXPECT_EQ(s.lost, json_u64((char *)json.p, "lost"));
	EXPECT_EQ(s.missing, json_u64((char *)json.p, "missing_chunks"));
	pt_st_buf_free(&json);
}

/* A process over a small memory.high stalls; the cgroup's PSI trigger fires. */
TEST_F_TIMEOUT(trig, psi, 300)
{
	char *argv[] = { NULL, "record", "--trigger",
			 "psi=some:50000/1000000@" CG_ROOT "/pt-trig-psi",
			 "-o", "/tmp/pt-trig-psi", "--keep", "16M", "-d", "240", NULL };
	struct pt_st_buf json = { 0 };
	struct scan s = { 0 };
	char bin[512];

	TRIG_READY();
	if (access("/proc/pressure/memory", F_OK))
		SKIP(return, "no PSI (/proc/pressure/memory missing: CONFIG_PSI off or psi=0)");
	if (cgroup_make(self, "pt-trig-psi"))
		SKIP(return, "no cgroup v2 hierarchy to make a cgroup in");
	if (cgroup_write(self, "memory.high", "8M"))
		SKIP(return, "no memory controller in cgroup v2 (memory.high)");
	cgroup_write(self, "memory.swap.max", "0");
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-psi");
	pt_st_rm_dir(self->dir);
	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));
	/* Far over memory.high with nothing to reclaim: throttled, stalling. */
	self->child = start_hog(self, 128, "pt-psi-hog");
	ASSERT_LT(0, self->child);
	EXPECT_TRUE(wait_for_file(self->dir, 120));
	kill(self->child, SIGKILL);
	waitpid(self->child, NULL, 0);
	self->child = -1;
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%s", self->out);
	ASSERT_LE(1, count_files(self->dir, ".bin", bin, sizeof(bin)));
	ASSERT_NE(NULL, strstr(bin, "-psi-")) TH_LOG("%s", bin);
	ASSERT_EQ(0, pt_st_load_file(bin, &self->b));
	ASSERT_EQ(0, scan_file(&self->b, &s)) TH_LOG("%s", s.why);
	EXPECT_LT(0, s.events);
	ASSERT_EQ(0, load_json(bin, &json));
	TH_LOG("%s", (char *)json.p);
	EXPECT_NE(NULL, strstr((char *)json.p, "\"trigger\": \"psi\""));
	EXPECT_NE(NULL, strstr((char *)json.p, "pt-trig-psi/memory.pressure"));
	pt_st_buf_free(&json);
}

/*
 * The meta counters inuse reads: after a stream session's stop, every
 * event written is in a published chunk, and with nothing lost every one
 * is in the stream, so the sums over the CPUs of allocated_pages and
 * freed_pages are exactly the pages of its allocations, and of its frees
 * and reclaims.  No memory map at start: it is no CPU's events.
 */
FIXTURE(pages) {
	int			fd;
	struct pgtrace_ring	*ring;
	struct pt_st_buf	b;
	struct pt_st_decoded	d;
};

FIXTURE_SETUP(pages)
{
	self->fd = -1;
}

FIXTURE_TEARDOWN(pages)
{
	pgtrace_ring_unmap(self->ring);
	if (self->fd >= 0)
		close(self->fd);
	pt_st_session_cleanup(&self->b, &self->d);
}

TEST_F_TIMEOUT(pages, meta_pages, 180)
{
	uint64_t meta_alloc = 0, meta_free = 0, meta_lost = 0, meta_events = 0;
	uint64_t pages[4] = { 0 }, events = 0;
	struct pgtrace_ring_pages rp;
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	struct pt_st_hdr hi;
	int ret;

	if (access(DEV, F_OK))
		SKIP(return, DEV " missing: load pagetrace.ko first");
	ASSERT_EQ(0, pt_st_start_session(&self->fd, O_NONBLOCK, &self->b, &hi));
	ASSERT_STREQ("", hi.why);
	/* A read() consumer may map the session to watch its counters. */
	ASSERT_EQ(0, pgtrace_ring_map(self->fd, &self->ring));
	ASSERT_TRUE(pgtrace_ring_flags(self->ring) & PAGETRACE_META_PAGES);
	/* 8 x 1024 pages allocated and freed, read as we go: nothing lost. */
	for (int i = 0; i < 8; i++) {
		pt_st_touch_and_free(4 << 20);
		ASSERT_LE(0, pt_st_buf_drain(self->fd, &self->b));
	}
	ASSERT_EQ(0, ioctl(self->fd, PAGETRACE_IOC_STOP));
	for (int i = 0; (ret = pt_st_buf_drain(self->fd, &self->b)) == 1 && i < 500; i++)
		usleep(10000);
	ASSERT_EQ(0, ret);

	for (unsigned int cpu = 0; cpu < pgtrace_ring_meta(self->ring)->nr_cpus; cpu++) {
		const struct pagetrace_meta_cpu *mc = pgtrace_ring_cpu(self->ring, cpu);

		meta_alloc += mc->allocated_pages;
		meta_free += mc->freed_pages;
		meta_lost += mc->lost;
		meta_events += mc->events;
	}
	ASSERT_EQ(0, pgtrace_ring_pages(self->ring, &rp));
	EXPECT_EQ(meta_alloc, rp.alloc);
	EXPECT_EQ(meta_free, rp.free);
	EXPECT_FALSE(rp.has_snapshot);
	EXPECT_EQ(0, rp.snapshot);
	EXPECT_EQ((int64_t)(meta_alloc - meta_free), rp.in_use);

	ret = pgtrace_reader_open_mem(&r, self->b.p, self->b.len, 0);
	ASSERT_EQ(0, ret) TH_LOG("%s", r ? pgtrace_reader_error(r) : strerror(-ret));
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		if (ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
			continue;
		if (ev.type >= PGTRACE_EV_ALLOC && ev.type <= PGTRACE_EV_RECLAIM) {
			pages[ev.type] += ev.npages;
			events++;
		}
	}
	EXPECT_EQ(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
	EXPECT_EQ(0, pgtrace_reader_counters(r)->lost);
	pgtrace_reader_close(r);
	TH_LOG("meta: %" PRIu64 " events, %" PRIu64 " pages allocated, %" PRIu64
	       " freed or reclaimed, %" PRIu64 " lost; stream: %" PRIu64 " events, %"
	       PRIu64 " + %" PRIu64 " + %" PRIu64 " pages", meta_events, meta_alloc,
	       meta_free, meta_lost, events, pages[1], pages[2], pages[3]);
	ASSERT_EQ(0, meta_lost);
	EXPECT_EQ(meta_events, events);
	EXPECT_LE(8 * 1024, pages[PGTRACE_EV_ALLOC]);
	EXPECT_EQ(pages[PGTRACE_EV_ALLOC], meta_alloc);
	EXPECT_EQ(pages[PGTRACE_EV_FREE] + pages[PGTRACE_EV_RECLAIM], meta_free);
}

#define INUSE_KEEP_MB	16		/* the recorder's --keep */
#define INUSE_MARGIN	20000		/* pages above the count at the start */
#define INUSE_TOUCH	40000		/* pages we then touch and keep */

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * inuse>N: quiet while the count is below N, then one file once we hold
 * more than the margin: its sidecar names inuse and the count seen, and
 * its trace holds the allocations of our pages (PFNs from
 * /proc/self/pagemap).
 */
TEST_F_TIMEOUT(trig, inuse, 300)
{
	char expr[64], keep[16];
	char *argv[] = { NULL, "record", "--trigger", expr, "-o", "/tmp/pt-trig-inuse",
			 "--keep", keep, "-d", "240", NULL };
	struct pt_st_buf json = { 0 };
	struct pgtrace_ring *ring = NULL;
	struct pgtrace_ring_pages rp;
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	uint64_t limit, *pfns = NULL, *map = NULL, ours = 0, nr_pfns = 0;
	size_t len = (size_t)INUSE_TOUCH * PAGE;
	char bin[512];
	char *p;
	int fd, ret;

	TRIG_READY();
	snprintf(self->dir, sizeof(self->dir), "/tmp/pt-trig-inuse");
	pt_st_rm_dir(self->dir);
	snprintf(keep, sizeof(keep), "%dM", INUSE_KEEP_MB);

	/*
	 * The count now, by a session of our own with the memory map at start
	 * (its buffers are in it, as the recorder's will be in its own: those
	 * are --keep, ours the module's default, far less).
	 */
	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ret = pgtrace_ring_map(fd, &ring);
	if (!ret)
		ret = pgtrace_ring_pages(ring, &rp);
	pgtrace_ring_unmap(ring);
	close(fd);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(rp.has_snapshot);
	limit = rp.in_use + ((uint64_t)INUSE_KEEP_MB << 20) / PAGE + INUSE_MARGIN;
	snprintf(expr, sizeof(expr), "inuse>%" PRIu64, limit);
	TH_LOG("%" PRId64 " pages in use (snapshot %" PRIu64 "): %s", rp.in_use,
	       rp.snapshot, expr);

	ASSERT_EQ(0, rec_start(self, argv));
	ASSERT_TRUE(pt_st_wait_recording(20000));
	/* Below the limit: nothing. */
	sleep(2);
	ASSERT_EQ(0, count_files(self->dir, ".bin", NULL, 0));

	/* Over it, by our pages alone: kept mapped until the end. */
	ASSERT_LE(0, pt_st_pin_first_cpu());
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += PAGE)
		p[off] = 1;
	EXPECT_TRUE(wait_for_file(self->dir, 60));
	/* Still above: no second file (it fires once per crossing). */
	sleep(3);
	EXPECT_EQ(0, rec_stop(self));
	TH_LOG("%s", self->out);

	/* Our pages' PFNs, sorted. */
	map = calloc(INUSE_TOUCH, sizeof(*map));
	pfns = calloc(INUSE_TOUCH, sizeof(*pfns));
	ASSERT_TRUE(map && pfns);
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)(INUSE_TOUCH * sizeof(*map)),
		  pread(fd, map, INUSE_TOUCH * sizeof(*map),
			(uintptr_t)p / PAGE * sizeof(*map)));
	close(fd);
	for (size_t i = 0; i < INUSE_TOUCH; i++)
		if (map[i] & (1ULL << 63))
			pfns[nr_pfns++] = map[i] & ((1ULL << 55) - 1);
	qsort(pfns, nr_pfns, sizeof(*pfns), by_u64);

	ASSERT_EQ(1, count_files(self->dir, ".bin", bin, sizeof(bin)));
	ASSERT_NE(NULL, strstr(bin, "-inuse-1.bin")) TH_LOG("%s", bin);
	ASSERT_EQ(0, pt_st_load_file(bin, &self->b));
	ret = pgtrace_reader_open_mem(&r, self->b.p, self->b.len, 0);
	ASSERT_EQ(0, ret) TH_LOG("%s", r ? pgtrace_reader_error(r) : strerror(-ret));
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		if ((ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) || ev.type != PGTRACE_EV_ALLOC)
			continue;
		for (uint64_t i = 0; i < ev.npages; i++) {
			uint64_t pfn = ev.pfn + i;

			if (bsearch(&pfn, pfns, nr_pfns, sizeof(*pfns), by_u64))
				ours++;
		}
	}
	EXPECT_EQ(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	TH_LOG("%" PRIu64 " of our %" PRIu64 " pages' allocations are in %s", ours,
	       nr_pfns, bin);
	EXPECT_EQ(INUSE_TOUCH, nr_pfns);
	/* It fired after more than the margin of them; they are all kept. */
	EXPECT_LE(INUSE_MARGIN / 2, ours);

	ASSERT_EQ(0, load_json(bin, &json));
	TH_LOG("%s", (char *)json.p);
	EXPECT_NE(NULL, strstr((char *)json.p, "\"trigger\": \"inuse\""));
	EXPECT_NE(NULL, strstr((char *)json.p, "\"detail\": \"inuse "));
	EXPECT_EQ(limit, json_u64((char *)json.p, "inuse_limit"));
	EXPECT_LT(limit, json_u64((char *)json.p, "inuse_pages"));
	pt_st_buf_free(&json);
	free(map);
	free(pfns);
	munmap(p, len);
}

TEST_HARNESS_MAIN
