// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace record: the fast reader of /dev/pagetrace.
 *
 * The session is mapped (see the drawing in uapi/linux/pagetrace.h); each
 * closed chunk is written to the output straight from the mapping with
 * writev() - one copy, into the page cache, the fewest buffered I/O allows -
 * and then handed back with one PAGETRACE_IOC_CONSUME for every CPU.  No
 * vmsplice(): a pipe would keep referring to buffers the writer reuses.
 *
 * Stream mode: sleep in ppoll() until a chunk closes (the kernel batches
 * wakeups; the flush timer closes idle buffers), drain, repeat.  At the stop
 * (SIGINT/SIGTERM, -d, or COMMAND's exit) PAGETRACE_IOC_STOP detaches the
 * probes and closes every buffer, and the rest is drained: the file holds
 * every event up to that instant.
 *
 * Flight recorder mode: the kernel overwrites the oldest buffers; nothing
 * is written until SIGUSR1 (a snapshot: FREEZE, dump the newest chunks of
 * every CPU, THAW) or the stop (STOP, dump).  The file's header has
 * PAGETRACE_FLAG_OVERWRITE, and seq gaps mark what was overwritten.
 *
 * Triggers (--trigger, flight recorder only): -o names a directory, and
 * each time a trigger fires (trigger.c: oom, psi, inuse, signal), after --post
 * seconds more of recording, the snapshot goes to a new file there with a
 * JSON sidecar saying which trigger fired, when, and the span the trace
 * covers (trigger_file.c).  Nothing is written at the stop unless a
 * trigger is waiting out its --post.
 *
 * The file is only ever extended by whole chunks; if a write fails (ENOSPC)
 * it is truncated back to the last complete one, so it stays a valid trace.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "cmd.h"
#include "trigger.h"

#define DEV		"/dev/pagetrace"
#define PARAMS		"/sys/module/pagetrace/parameters/"
#define STATUS_MS	500
#define MAX_NR_BUFS	4096		/* module/session.c: nr_bufs range */
#define MAX_BUF_SIZE	(16U << 20)	/* module/session.c: buf_size range */
#define DEFAULT_KEEP	(64ULL << 20)	/* --trigger: kept in all, all CPUs */

struct rec {
	/* options */
	const char	*path;
	double		duration;	/* seconds, 0: none */
	uint64_t	buffer_size;	/* per CPU, 0: the module's */
	bool		flight;
	bool		quiet;
	bool		json;
	char		**cmd;
	struct trigger	trig[TRIGGER_MAX];
	int		nr_trig;
	bool		trig_signal;	/* --trigger signal */
	bool		trig_inuse;	/* an inuse trigger: needs the snapshot */
	uint64_t	keep;		/* --keep, all CPUs together */
	double		post;		/* --post seconds */
	unsigned int	max_files;	/* --max-files, 0: no limit */

	/* the session */
	int		dev;
	struct pgtrace_ring	*ring;
	const struct pagetrace_meta *meta;

	/* the output */
	int		out;
	uint64_t	file_off;	/* end of the last complete chunk */
	uint64_t	chunks;		/* chunks written */
	struct iovec	*iov;
	size_t		*iov_chunk;	/* chunk length behind each iov */
	int		iov_max;
	int		write_err;	/* errno of a failed write, sticky */

	/* progress */
	bool		status_line;
	unsigned int	snapshots;
	const char	*stopped_by;
	pid_t		child;
	int		child_status;	/* as from waitpid(), -1 if none */
	struct timespec	start;

	/* triggers */
	const struct trigger *pending;	/* fired, waiting out --post */
	char		pending_detail[256];
	int64_t		pending_inuse;	/* inuse: the count that fired it */
	double		pending_at;	/* elapsed() when it fired */
	uint64_t	pending_mono;	/* CLOCK_MONOTONIC ns then */
	unsigned int	coalesced;	/* firings while one was pending */
	unsigned int	dumps;		/* trigger files written */
	uint64_t	dump_bytes;
};

static volatile sig_atomic_t got_stop, got_usr1, got_chld;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else if (sig == SIGCHLD)
		got_chld = 1;
	else
		got_stop = sig;
}

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: pagetrace record [-o FILE] [-d SECONDS] [--buffer-size SIZE]\n"
		"                        [--flight-recorder] [-q] [--json] [-- COMMAND [ARGS]]\n"
		"       pagetrace record --flight-recorder --trigger EXPR [--trigger EXPR...]\n"
		"                        -o DIR [--keep SIZE] [--post SECS] [--max-files N]\n\n"
		"Record page allocations and frees from /dev/pagetrace (root) into FILE\n"
		"(default trace.bin, - for stdout) until Ctrl-C, SECONDS, or COMMAND exits.\n\n"
		"  -o, --output FILE      where to write the v1 stream\n"
		"  -d, --duration SECS    stop after this long (fractions allowed)\n"
		"  -b, --buffer-size SIZE ring size per CPU (K, M, G suffixes), instead of\n"
		"                         the module's buf_size x nr_bufs\n"
		"  -f, --flight-recorder  keep only the newest SIZE per CPU; SIGUSR1 dumps a\n"
		"                         snapshot, the stop dumps the last one\n"
		"  -q, --quiet            no status line, no summary (warnings still)\n"
		"      --json             the summary as one JSON object on stdout\n"
		"  -t, --trigger EXPR     (flight recorder) write a trace file to DIR each\n"
		"                         time EXPR fires: oom (an OOM kill), signal\n"
		"                         (SIGUSR1), psi=some|full:STALL_US/WINDOW_US[@CGROUP]\n"
		"                         (memory pressure, system-wide or of a cgroup v2),\n"
		"                         inuse>PAGES or inuse>SIZE (the trace's pages in\n"
		"                         use went above PAGES, or SIZE with K/M/G/T)\n"
		"      --keep SIZE        with --trigger: keep about SIZE in all (default\n"
		"                         64M), split over the CPUs\n"
		"      --post SECS        with --trigger: record SECS more before writing\n"
		"      --max-files N      with --trigger: keep only the newest N files in DIR\n");
}

static double elapsed(const struct rec *r)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - r->start.tv_sec) +
	       (now.tv_nsec - r->start.tv_nsec) / 1e9;
}

/* "64M" -> 67108864; 0 on error. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: return *end ? 0 : v;
	}
	end++;
	if (*end == 'i')	/* 4MiB, 4Mi */
		end++;
	if (*end == 'B')	/* 4MB, 4MiB */
		end++;
	return *end ? 0 : v;
}

static long read_param(const char *name)
{
	char path[128], s[32] = "";
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (read(fd, s, sizeof(s) - 1) <= 0)
		s[0] = 0;
	close(fd);
	return strtol(s, NULL, 0);
}

static int write_param(const char *name, long val)
{
	char path[128], s[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%ld", val);
	if (write(fd, s, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* A parameter as its file says it ("Y\n" for a bool): 0 or -errno. */
static int read_param_str(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int write_param_str(const char *name, const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/* Say loudly why the device cannot be used. */
static void device_error(int err)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		fprintf(stderr, "pagetrace: " DEV ": %s: the pagetrace module is not loaded "
			"(insmod pagetrace.ko, or modprobe pagetrace)\n", strerror(err));
		break;
	case EACCES:
	case EPERM:
		fprintf(stderr, "pagetrace: " DEV ": %s: recording needs root "
			"(CAP_SYS_ADMIN)\n", strerror(err));
		break;
	case EBUSY:
		fprintf(stderr, "pagetrace: " DEV ": %s: another recorder is running "
			"(pagetrace record, pagetrace.service or pagetrace top: one session at "
			"a time)\n", strerror(err));
		break;
	default:
		fprintf(stderr, "pagetrace: " DEV ": %s\n", strerror(err));
	}
}

/*
 * Open the device.  With --buffer-size the module's parameters are set for
 * this one session (they are read when a session starts) and put back
 * right after, so other sessions keep the administrator's settings.  An
 * inuse trigger turns the memory map at start (snapshot) on the same way:
 * the trace's count of pages in use starts from it.
 */
static int open_device(struct rec *r)
{
	long old_size = -1, old_nr = -1;
	char old_snap[16] = "";
	int ret = 0, err;

	if (r->trig_inuse) {
		if (read_param_str("snapshot", old_snap, sizeof(old_snap))) {
			device_error(access(DEV, F_OK) ? errno : ENODEV);
			return -1;
		}
		if (strcmp(old_snap, "Y") && strcmp(old_snap, "1")) {
			ret = write_param_str("snapshot", "1");
			if (ret) {
				fprintf(stderr, "pagetrace: cannot turn the memory map at start "
					"on (" PARAMS "snapshot), which inuse needs: %s\n",
					strerror(-ret));
				return -1;
			}
		} else {
			old_snap[0] = '\0';	/* on already: nothing to put back */
		}
	}

	if (r->buffer_size) {
		uint64_t page = sysconf(_SC_PAGESIZE);
		uint64_t chunk, nr;

		old_size = read_param("buf_size");
		old_nr = read_param("nr_bufs");
		if (old_size < 0 || old_nr < 0) {
			device_error(access(DEV, F_OK) ? errno : ENODEV);
			return -1;
		}
		chunk = old_size;
		if (r->buffer_size < 2 * chunk)
			chunk = (r->buffer_size / 2) / page * page;
		if (chunk < page)
			chunk = page;
		nr = r->buffer_size / chunk;
		while (nr > MAX_NR_BUFS && chunk < MAX_BUF_SIZE) {
			chunk *= 2;
			nr = r->buffer_size / chunk;
		}
		if (nr < 2 || nr > MAX_NR_BUFS) {
			fprintf(stderr, "pagetrace: --buffer-size %" PRIu64 " is out of range "
				"(%" PRIu64 " .. %u MiB per CPU)\n", r->buffer_size,
				2 * page, (MAX_NR_BUFS * (MAX_BUF_SIZE >> 20)));
			return -2;
		}
		ret = write_param("buf_size", chunk);
		if (!ret)
			ret = write_param("nr_bufs", nr);
		if (ret) {
			fprintf(stderr, "pagetrace: cannot set the buffer size (" PARAMS
				"): %s%s\n", strerror(-ret),
				ret == -EACCES || ret == -EPERM ? ": recording needs root" : "");
			write_param("buf_size", old_size);
			if (old_snap[0])
				write_param_str("snapshot", old_snap);
			return -1;
		}
	}
	r->dev = open(DEV, O_RDONLY | O_CLOEXEC);
	err = errno;
	if (old_size >= 0) {
		write_param("buf_size", old_size);
		write_param("nr_bufs", old_nr);
	}
	if (old_snap[0])
		write_param_str("snapshot", old_snap);
	if (r->dev < 0) {
		device_error(err);
		return -1;
	}
	return 0;
}

static int map_session(struct rec *r)
{
	int ret;

	if (r->flight) {
		struct pagetrace_mode m = { .mode = PAGETRACE_MODE_FLIGHT };

		if (ioctl(r->dev, PAGETRACE_IOC_SET_MODE, &m)) {
			fprintf(stderr, "pagetrace: cannot switch to flight recorder mode: %s "
				"(is the module older than this tool?)\n", strerror(errno));
			return -1;
		}
	}
	ret = pgtrace_ring_map(r->dev, &r->ring);
	if (ret) {
		fprintf(stderr, "pagetrace: cannot map " DEV ": %s%s\n", strerror(-ret),
			ret == -ENOTTY || ret == -EPROTO ?
			" (is the module older or newer than this tool?)" : "");
		return -1;
	}
	r->meta = pgtrace_ring_meta(r->ring);
	r->iov_max = IOV_MAX;
	r->iov = calloc(r->iov_max, sizeof(*r->iov));
	r->iov_chunk = calloc(r->iov_max, sizeof(*r->iov_chunk));
	if (!r->iov || !r->iov_chunk) {
		fprintf(stderr, "pagetrace: out of memory\n");
		return -1;
	}
	/* Claim the session for the mapping (read() is refused from now on). */
	ret = pgtrace_ring_claim(r->ring);
	if (ret) {
		fprintf(stderr, "pagetrace: " DEV ": %s\n", strerror(-ret));
		return -1;
	}
	return 0;
}

/*
 * A write failed after @r->file_off bytes of complete chunks: cut the file
 * back there, so that it ends at a chunk boundary, and say so.
 */
static void write_failed(struct rec *r, int err)
{
	bool cut = ftruncate(r->out, r->file_off) == 0;

	r->write_err = err;
	if (r->status_line)
		fputc('\n', stderr);
	fprintf(stderr, "pagetrace: %s: %s%s: recording stopped; the file %s a valid "
		"trace up to its last complete chunk (%" PRIu64 " bytes)\n",
		r->path, strerror(err), err == ENOSPC ? " (disk full)" : "",
		cut ? "is" : "may not be (truncating it failed), else is", r->file_off);
}

/*
 * Write the iovecs gathered so far; whole chunks only count.  Returns 0,
 * or -1 after write_failed().
 */
static int flush_iov(struct rec *r, int n)
{
	int i = 0;

	while (i < n) {
		ssize_t w = writev(r->out, r->iov + i, n - i);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			write_failed(r, errno);
			return -1;
		}
		if (w == 0) {
			write_failed(r, EIO);
			return -1;
		}
		/* Account whole chunks; resume a partly written one. */
		while (i < n && (size_t)w >= r->iov[i].iov_len) {
			w -= r->iov[i].iov_len;
			r->iov[i].iov_base = (char *)r->iov[i].iov_base + r->iov[i].iov_len;
			r->iov[i].iov_len = 0;
			r->file_off += r->iov_chunk[i];
			r->chunks++;
			i++;
		}
		if (i < n) {
			r->iov[i].iov_base = (char *)r->iov[i].iov_base + w;
			r->iov[i].iov_len -= w;
		}
	}
	return 0;
}

/*
 * The recorder's step: write every CPU's closed chunks from the mapping,
 * then give them all back with one CONSUME.  Returns the chunks written,
 * or -1 on a write or CONSUME error.
 */
static long drain(struct rec *r)
{
	unsigned int nr = r->meta->nr_cpus;
	long total = 0;
	int64_t moved;
	int n = 0;

	if (r->write_err)
		return -1;
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		uint64_t pos;
		int64_t avail = pgtrace_ring_peek(r->ring, cpu, &pos);

		for (int64_t i = 0; i < avail; i++) {
			const struct pagetrace_chunk *ch;
			size_t len;

			if (pgtrace_ring_chunk(r->ring, cpu, pos + i, &ch, &len)) {
				fprintf(stderr, "pagetrace: cpu %u chunk %" PRIu64 " is "
					"corrupt (more words than its buffer holds)\n",
					cpu, pos + i);
				r->write_err = EBADMSG;
				return -1;
			}
			r->iov[n].iov_base = (void *)ch;
			r->iov[n].iov_len = len;
			r->iov_chunk[n] = len;
			if (++n == r->iov_max) {
				if (flush_iov(r, n))
					return -1;
				n = 0;
			}
			total++;
		}
		if (avail > 0)
			pgtrace_ring_advance(r->ring, cpu, avail);
	}
	if (n && flush_iov(r, n))
		return -1;
	/* write() has returned: the bytes are out of the mapping. */
	moved = pgtrace_ring_consume(r->ring);
	if (moved < 0) {
		fprintf(stderr, "pagetrace: giving buffers back failed: %s\n",
			strerror((int)-moved));
		r->write_err = (int)-moved;
		return -1;
	}
	return total;
}

/* After STOP: drain until a pass finds nothing (late losses add a chunk). */
static int drain_to_end(struct rec *r)
{
	long n;

	do {
		n = drain(r);
	} while (n > 0);
	return n < 0 ? -1 : 0;
}

/* A byte count for people: "512 KiB", "1.5 MiB". */
static const char *human(uint64_t n, char *buf, size_t len)
{
	if (n < (1ULL << 20))
		snprintf(buf, len, "%.0f KiB", n / 1024.0);
	else if (n < (1ULL << 30))
		snprintf(buf, len, "%.1f MiB", n / 1048576.0);
	else
		snprintf(buf, len, "%.2f GiB", n / 1073741824.0);
	return buf;
}

/* FREEZE, write the newest chunks of every CPU, THAW: 0 or -1 (reported). */
static int freeze_drain(struct rec *r)
{
	int ret;

	if (ioctl(r->dev, PAGETRACE_IOC_FREEZE)) {
		fprintf(stderr, "pagetrace: snapshot failed: %s\n", strerror(errno));
		return -1;
	}
	ret = drain(r) < 0 ? -1 : 0;
	if (ioctl(r->dev, PAGETRACE_IOC_THAW) && !ret) {
		fprintf(stderr, "pagetrace: resuming after the snapshot failed: %s\n",
			strerror(errno));
		ret = -1;
	}
	return ret;
}

/* Flight recorder: dump the newest chunks of every CPU now. */
static int snapshot(struct rec *r)
{
	uint64_t before = r->file_off;
	int ret = freeze_drain(r);

	if (!ret) {
		r->snapshots++;
		if (!r->quiet && !r->json) {
			if (r->status_line)
				fputc('\n', stderr);
			char hb[32];

			fprintf(stderr, "pagetrace: snapshot %u: %s written to %s\n",
				r->snapshots, human(r->file_off - before, hb, sizeof(hb)),
				r->path);
		}
	}
	return ret;
}

struct totals {
	uint64_t	events;
	uint64_t	lost;
	uint64_t	overwritten;
};

static void meta_totals(const struct rec *r, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned int cpu = 0; cpu < r->meta->nr_cpus; cpu++) {
		const struct pagetrace_meta_cpu *mc = pgtrace_ring_cpu(r->ring, cpu);

		t->events += mc->events;
		t->lost += mc->lost;
		t->overwritten += mc->overwritten;
	}
}

/* The kernel's own counts, losses not yet in a chunk included. */
static void kernel_totals(const struct rec *r, struct totals *t)
{
	unsigned int nr = r->meta->nr_cpus;
	struct pagetrace_cpu_stats *cs = calloc(nr, sizeof(*cs));
	struct pagetrace_stats st = { .cpus = (uintptr_t)cs, .nr_cpus = nr };

	meta_totals(r, t);
	if (!cs || ioctl(r->dev, PAGETRACE_IOC_STATS, &st)) {
		free(cs);
		return;
	}
	t->events = t->lost = 0;
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		t->events += cs[cpu].events;
		t->lost += cs[cpu].lost;
	}
	free(cs);
}

static void status(struct rec *r, double *last_t, uint64_t *last_events)
{
	struct totals t;
	double now = elapsed(r), rate;

	meta_totals(r, &t);
	rate = now > *last_t ? (t.events - *last_events) / (now - *last_t) : 0;
	*last_t = now;
	*last_events = t.events;
	if (r->flight)
		fprintf(stderr, "\rpagetrace: %7.1f s  %10.0f events/s  %" PRIu64
			" chunks overwritten  %u %s  lost %" PRIu64 "   ",
			now, rate, t.overwritten, r->nr_trig ? r->dumps : r->snapshots,
			r->nr_trig ? "files" : "snapshots", t.lost);
	else
		fprintf(stderr, "\rpagetrace: %7.1f s  %10.0f events/s  %8.1f MiB  lost %"
			PRIu64 "   ", now, rate, r->file_off / 1048576.0, t.lost);
}

static void reap_child(struct rec *r, bool wait)
{
	int st;

	if (r->child <= 0)
		return;
	if (waitpid(r->child, &st, wait ? 0 : WNOHANG) == r->child) {
		r->child_status = st;
		r->child = 0;
	}
}

static pid_t start_command(char **argv, const sigset_t *orig)
{
	pid_t pid = fork();

	if (pid == 0) {
		sigprocmask(SIG_SETMASK, orig, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "pagetrace: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "pagetrace: fork: %s\n", strerror(errno));
	return pid;
}

static void summary(struct rec *r, double secs)
{
	struct rusage ru;
	struct totals t;
	double user, sys, mib = r->file_off / 1048576.0;
	uint64_t ring = r->meta->ring_size;
	char hb[32];

	kernel_totals(r, &t);
	getrusage(RUSAGE_SELF, &ru);
	user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (secs <= 0)
		secs = 1e-9;

	if (r->json) {
		printf("{\"output\": ");
		json_str(r->path);
		printf(", \"mode\": \"%s\", \"stopped_by\": \"%s\", "
		       "\"duration_s\": %.3f, \"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"overwritten_chunks\": %" PRIu64 ", \"snapshots\": %u, "
		       "\"chunks\": %" PRIu64 ", \"bytes\": %" PRIu64 ", "
		       "\"events_per_s\": %.0f, \"mib_per_s\": %.3f, "
		       "\"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f, "
		       "\"buffer_size_per_cpu\": %" PRIu64 ", \"nr_cpus\": %u, "
		       "\"trigger_files\": %u, \"command_status\": %d, \"error\": ",
		       r->flight ? "flight" : "stream", r->stopped_by, secs,
		       t.events, t.lost, t.overwritten, r->snapshots, r->chunks,
		       r->file_off, t.events / secs, mib / secs, user, sys, ring,
		       r->meta->nr_cpus, r->dumps,
		       r->child_status < 0 ? -1 :
		       WIFEXITED(r->child_status) ? WEXITSTATUS(r->child_status) :
		       128 + WTERMSIG(r->child_status));
		if (r->write_err)
			printf("\"%s\"}\n", strerror(r->write_err));
		else
			printf("null}\n");
	} else if (!r->quiet) {
		fprintf(stderr, "pagetrace: %" PRIu64 " events in %.1f s (%.0f/s), %.1f MiB "
			"in %" PRIu64 " chunks to %s (%.1f MiB/s); recorder CPU %.2f s user, "
			"%.2f s sys\n", t.events, secs, t.events / secs, mib, r->chunks,
			r->path, mib / secs, user, sys);
		if (r->nr_trig)
			fprintf(stderr, "pagetrace: flight recorder: %u trigger file(s) in %s, "
				"each the newest %s per CPU at most; %" PRIu64 " chunks were "
				"overwritten before a dump\n", r->dumps, r->path,
				human(ring, hb, sizeof(hb)), t.overwritten);
		else if (r->flight)
			fprintf(stderr, "pagetrace: flight recorder: %u snapshot(s) plus the "
				"final dump, each the newest %s per CPU; %" PRIu64
				" chunks were overwritten before a dump\n", r->snapshots,
				human(ring, hb, sizeof(hb)), t.overwritten);
	}
	if (t.lost)
		fprintf(stderr, "pagetrace: WARNING: %" PRIu64 " events lost (%.3f%%)%s; "
			"use a larger --buffer-size (now %s per CPU)%s\n", t.lost,
			100.0 * t.lost / (t.events + t.lost),
			r->flight ? " while snapshots were taken" :
				    ": the recorder did not keep up",
			human(ring, hb, sizeof(hb)),
			r->flight ? "" : ", a faster disk, or a lower event rate");
}

static int parse_args(struct rec *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "flight-recorder", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "trigger", required_argument, NULL, 't' },
		{ "keep", required_argument, NULL, 'K' },
		{ "post", required_argument, NULL, 'P' },
		{ "max-files", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool output = false;
	char *end, err[256];
	unsigned long n;
	int c;

	/* '+': stop at the first non-option, COMMAND's own options are its. */
	while ((c = getopt_long(argc, argv, "+o:d:b:fqt:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			r->path = optarg;
			output = true;
			break;
		case 'd':
			r->duration = strtod(optarg, &end);
			if (*end || r->duration <= 0) {
				fprintf(stderr, "pagetrace: -d %s: not a positive number of "
					"seconds\n", optarg);
				return -1;
			}
			break;
		case 'b':
			r->buffer_size = parse_size(optarg);
			if (!r->buffer_size) {
				fprintf(stderr, "pagetrace: --buffer-size %s: not a size "
					"(e.g. 4M)\n", optarg);
				return -1;
			}
			break;
		case 'f':
			r->flight = true;
			break;
		case 'q':
			r->quiet = true;
			break;
		case 'j':
			r->json = true;
			break;
		case 't':
			if (r->nr_trig == TRIGGER_MAX) {
				fprintf(stderr, "pagetrace: at most %d --trigger\n", TRIGGER_MAX);
				return -1;
			}
			if (trigger_parse(optarg, &r->trig[r->nr_trig], err, sizeof(err))) {
				fprintf(stderr, "pagetrace: --trigger: %s\n", err);
				return -1;
			}
			if (r->trig[r->nr_trig].kind == TRIGGER_SIGNAL)
				r->trig_signal = true;
			if (r->trig[r->nr_trig].kind == TRIGGER_INUSE)
				r->trig_inuse = true;
			r->nr_trig++;
			break;
		case 'K':
			r->keep = parse_size(optarg);
			if (!r->keep) {
				fprintf(stderr, "pagetrace: --keep %s: not a size (e.g. 64M)\n",
					optarg);
				return -1;
			}
			break;
		case 'P':
			r->post = strtod(optarg, &end);
			if (*end || end == optarg || !(r->post >= 0 && r->post <= 3600)) {
				fprintf(stderr, "pagetrace: --post %s: not a number of seconds "
					"from 0 to 3600\n", optarg);
				return -1;
			}
			break;
		case 'M':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || optarg[0] == '-' || !n ||
			    n > 1000000) {
				fprintf(stderr, "pagetrace: --max-files %s: not a number of files "
					"from 1 to 1000000\n", optarg);
				return -1;
			}
			r->max_files = n;
			break;
		case 'h':
			record_usage(stdout);
			exit(0);
		default:
			record_usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		r->cmd = argv + optind;
	if (!r->nr_trig) {
		if (r->keep || r->post || r->max_files) {
			fprintf(stderr, "pagetrace: --keep, --post and --max-files go with "
				"--trigger\n");
			return -1;
		}
		return 0;
	}
	/* A trigger only makes sense with the history the flight recorder keeps. */
	r->flight = true;
	if (!output || !strcmp(r->path, "-")) {
		fprintf(stderr, "pagetrace: --trigger writes one file per trigger: give "
			"the directory for them with -o DIR\n");
		return -1;
	}
	if (r->keep && r->buffer_size) {
		fprintf(stderr, "pagetrace: --keep (in all) and --buffer-size (per CPU) say "
			"the same thing: give one\n");
		return -1;
	}
	return 0;
}

/*
 * --keep SIZE (default DEFAULT_KEEP) in all: the per-CPU ring size, within
 * what the module takes (2 pages .. MAX_NR_BUFS x MAX_BUF_SIZE per CPU).
 */
static void keep_to_buffer_size(struct rec *r)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t page = sysconf(_SC_PAGESIZE), per_cpu;

	if (r->buffer_size || !r->nr_trig)
		return;
	if (ncpu < 1)
		ncpu = 1;
	per_cpu = (r->keep ? r->keep : DEFAULT_KEEP) / ncpu / page * page;
	if (per_cpu < 2 * page)
		per_cpu = 2 * page;
	if (per_cpu > (uint64_t)MAX_NR_BUFS * MAX_BUF_SIZE)
		per_cpu = (uint64_t)MAX_NR_BUFS * MAX_BUF_SIZE;
	r->buffer_size = per_cpu;
}

/* The directory for trigger files: made if missing, must be writable. */
static int open_trigger_dir(struct rec *r)
{
	struct stat st;

	if (mkdir(r->path, 0755) && errno != EEXIST) {
		fprintf(stderr, "pagetrace: %s: cannot make the directory: %s\n", r->path,
			strerror(errno));
		return -1;
	}
	if (stat(r->path, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "pagetrace: %s: not a directory (--trigger writes one file "
			"per trigger into -o DIR)\n", r->path);
		return -1;
	}
	if (access(r->path, W_OK | X_OK)) {
		fprintf(stderr, "pagetrace: %s: cannot write there: %s\n", r->path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Arm the triggers that need no session (@session false: before the
 * device is opened, so that a bad one costs nothing), or those that count
 * in the mapped session (inuse; @session true, once it is mapped).
 */
static int arm_triggers(struct rec *r, bool session)
{
	char err[TRIGGER_PATH_MAX + 256];

	for (int i = 0; i < r->nr_trig; i++) {
		if ((r->trig[i].kind == TRIGGER_INUSE) != session)
			continue;
		r->trig[i].ring = r->ring;
		if (trigger_arm(&r->trig[i], err, sizeof(err))) {
			fprintf(stderr, "pagetrace: --trigger: %s\n", err);
			return -1;
		}
	}
	return 0;
}

static int open_output(struct rec *r)
{
	if (!strcmp(r->path, "-")) {
		if (isatty(STDOUT_FILENO)) {
			fprintf(stderr, "pagetrace: not writing a binary trace to a "
				"terminal; use -o FILE or a pipe\n");
			return -1;
		}
		if (r->json) {
			fprintf(stderr, "pagetrace: --json prints to stdout: it cannot "
				"go with -o -\n");
			return -1;
		}
		r->out = STDOUT_FILENO;
		return 0;
	}
	r->out = open(r->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->out < 0) {
		fprintf(stderr, "pagetrace: %s: cannot write: %s\n", r->path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Write @len bytes from @p; 0 or -1 (reported). */
static int write_all(struct rec *r, const void *buf, size_t len);

/*
 * After the stop: the kernel's counters of every zone at that instant, as
 * a counters chunk at the end of the file, so that the trace's pages in
 * use can be checked against them.  A module without them (ENOTTY) is
 * not an error; the trace just cannot be checked at the end.
 */
static int append_counters(struct rec *r)
{
	struct pagetrace_counters_req req = { .which = PAGETRACE_COUNTERS_STOP };
	struct pagetrace_chunk *ch = NULL;
	int ret = -1;

	/* Asked for its size first: -ENOSPC says how much. */
	if (!ioctl(r->dev, PAGETRACE_IOC_COUNTERS, &req) || errno != ENOSPC) {
		if (errno == ENOTTY)
			return 0;
		fprintf(stderr, "pagetrace: reading the zone counters failed: %s\n",
			strerror(errno));
		return -1;
	}
	ch = calloc(1, sizeof(*ch) + req.size);
	if (!ch)
		return -1;
	req.buf = (uintptr_t)(ch + 1);
	if (ioctl(r->dev, PAGETRACE_IOC_COUNTERS, &req) || req.size % 8) {
		fprintf(stderr, "pagetrace: reading the zone counters failed: %s\n",
			req.size % 8 ? "odd size" : strerror(errno));
		goto out;
	}
	memcpy(ch->magic, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN);
	ch->flags = htole16(PAGETRACE_CHUNK_COUNTERS);
	ch->nr_words = htole32(req.size / 8);
	if (!write_all(r, ch, sizeof(*ch) + req.size)) {
		r->file_off += sizeof(*ch) + req.size;
		ret = 0;
	}
out:
	free(ch);
	return ret;
}

static int write_all(struct rec *r, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(r->out, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			write_failed(r, w < 0 ? errno : EIO);
			return -1;
		}
		p += w;
		len -= w;
	}
	return 0;
}

/* The stream's prefix: the header, then the memory map at start. */
static int write_header(struct rec *r)
{
	const void *snap;
	size_t snap_len;
	const struct pagetrace_header *h = pgtrace_ring_header(r->ring, &snap, &snap_len);

	if (write_all(r, h, r->meta->header_size) || write_all(r, snap, snap_len))
		return -1;
	r->file_off = r->meta->header_size + snap_len;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A trigger fired (r->pending) and its --post is over: the newest chunks
 * of every CPU go to a new file in the directory r->path, with its JSON
 * sidecar; then the oldest files beyond --max-files go.  0, or -1 when
 * recording cannot go on (a failed write or ioctl, reported).
 */
static int trigger_dump(struct rec *r)
{
	const char *dir = r->path;
	int64_t mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	int64_t when = (int64_t)(r->pending_mono + mono_to_real) / 1000000000;
	char bin[TRIGGER_PATH_MAX + 64], tmp[TRIGGER_PATH_MAX + 64], err[256], hb[32];
	struct trigger_span span;
	struct trigger_record rec = {
		.t = r->pending, .bin = bin, .detail = r->pending_detail,
		.n = r->dumps + 1, .coalesced = r->coalesced, .post_s = r->post,
		.inuse_pages = r->pending_inuse,
		.fired_mono_ns = r->pending_mono, .mono_to_real_ns = mono_to_real,
		.span = &span,
	};
	int ret;

	/*
	 * The file is written under a name of its own and renamed when it is
	 * complete (symbols appended, decoded once): whoever watches the
	 * directory (a log shipper, --max-files) never sees half a file, and
	 * a recorder killed while writing leaves only the temporary name,
	 * which the next dump reuses.  The final name is one no file has:
	 * a recorder restarted within the same second counts from 1 again.
	 */
	for (unsigned int k = rec.n;; k++) {
		if (k - rec.n >= 1000 ||
		    trigger_file_path(bin, sizeof(bin), dir, r->pending, k, when)) {
			fprintf(stderr, "pagetrace: %s: no free file name for trigger %s\n",
				dir, r->pending->expr);
			return -1;
		}
		if (access(bin, F_OK) && errno == ENOENT)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%s/.pagetrace-writing.bin", dir);
	r->out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->out < 0) {
		fprintf(stderr, "pagetrace: %s: cannot write: %s\n", tmp, strerror(errno));
		return -1;
	}
	/* write_failed() names r->path: the file, while it is written. */
	r->path = tmp;
	r->file_off = 0;
	rec.frozen_mono_ns = clock_ns(CLOCK_MONOTONIC);
	ret = write_header(r) || freeze_drain(r) ? -1 : 0;
	if (!ret && fsync(r->out) && errno != EINVAL) {
		fprintf(stderr, "pagetrace: %s: %s\n", bin, strerror(errno));
		ret = -1;
	}
	if (close(r->out) && !ret) {
		fprintf(stderr, "pagetrace: %s: %s\n", bin, strerror(errno));
		ret = -1;
	}
	r->out = -1;
	r->path = dir;
	rec.bytes = r->file_off;
	r->dump_bytes += r->file_off;
	r->pending = NULL;
	r->coalesced = 0;
	if (ret)
		return -1;
	r->dumps++;
	symbolize_file(tmp, "/proc/kallsyms", true);
	if (trigger_file_span(tmp, &span, err, sizeof(err)))
		fprintf(stderr, "pagetrace: %s: WARNING: the file just written does not "
			"decode: %s\n", bin, err);
	if (rename(tmp, bin)) {
		fprintf(stderr, "pagetrace: %s: renaming it to %s: %s\n", tmp, bin,
			strerror(errno));
		return -1;
	}
	ret = trigger_write_json(&rec);
	if (ret)
		fprintf(stderr, "pagetrace: %s: writing its .json: %s\n", bin, strerror(-ret));
	if (r->max_files) {
		ret = trigger_prune(dir, r->max_files);
		if (ret < 0)
			fprintf(stderr, "pagetrace: %s: removing old files: %s\n", dir,
				strerror(-ret));
	}
	if (!r->quiet && !r->json) {
		if (r->status_line)
			fputc('\n', stderr);
		fprintf(stderr, "pagetrace: trigger %s%s%s%s: %s, %.3f s of trace to %s\n",
			rec.t->expr, rec.detail[0] ? " (" : "", rec.detail,
			rec.detail[0] ? ")" : "", human(rec.bytes, hb, sizeof(hb)),
			(span.last_ns - span.first_ns) / 1e9, bin);
	}
	return 0;
}

/* Note that @t fired; the dump waits for --post.  @detail: what was seen. */
static void trigger_fired(struct rec *r, const struct trigger *t, const char *detail)
{
	if (r->pending) {
		r->coalesced++;
		return;
	}
	r->pending = t;
	r->pending_at = elapsed(r);
	r->pending_mono = clock_ns(CLOCK_MONOTONIC);
	snprintf(r->pending_detail, sizeof(r->pending_detail), "%s", detail);
	r->pending_inuse = t->inuse_seen;
	if (r->post > 0 && !r->quiet && !r->json) {
		if (r->status_line)
			fputc('\n', stderr);
		fprintf(stderr, "pagetrace: trigger %s fired%s%s%s; writing in %.1f s\n",
			t->expr, detail[0] ? " (" : "", detail, detail[0] ? ")" : "", r->post);
	}
}

/* Check every armed trigger after a wake-up; @pfd from wait_for_work(). */
static void check_triggers(struct rec *r, const struct pollfd *pfd)
{
	char detail[256];

	for (int i = 0; i < r->nr_trig; i++) {
		struct trigger *t = &r->trig[i];
		short revents = 0;
		int ret;

		if (t->fd >= 0)
			for (int j = 1; j <= r->nr_trig; j++)
				if (pfd[j].fd == t->fd)
					revents = pfd[j].revents;
		detail[0] = '\0';
		ret = trigger_check(t, revents, detail, sizeof(detail));
		if (ret == 1) {
			trigger_fired(r, t, detail);
		} else if (ret < 0) {
			fprintf(stderr, "pagetrace: trigger %s: %s is gone (its cgroup was "
				"removed?); it will not fire again\n", t->expr, t->path);
			trigger_disarm(t);
		}
	}
}

/*
 * Sleep until a chunk is ready (stream mode), a PSI trigger fires, a
 * signal, or @ms; @pfd gets poll()'s results (1 + r->nr_trig entries).
 */
static void wait_for_work(struct rec *r, int ms, const sigset_t *waitmask,
			  struct pollfd *pfd)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int n = 1;

	pfd[0] = (struct pollfd){ .fd = r->dev, .events = r->flight ? 0 : POLLIN };
	for (int i = 0; i < r->nr_trig; i++)
		if (r->trig[i].fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = r->trig[i].fd, .events = POLLPRI };
	if (ppoll(pfd, n, &ts, waitmask) <= 0)
		for (int i = 0; i < n; i++)
			pfd[i].revents = 0;
	for (int i = n; i <= r->nr_trig; i++)
		pfd[i] = (struct pollfd){ .fd = -1 };
}

int cmd_record(int argc, char **argv)
{
	struct rec r = {
		.path = "trace.bin", .dev = -1, .out = -1, .child = -1,
		.child_status = -1, .stopped_by = "signal",
	};
	sigset_t block, orig, waitmask;
	struct sigaction sa = { .sa_handler = on_signal };
	struct pollfd pfd[1 + TRIGGER_MAX];
	const struct trigger *sig_trig = NULL;
	bool dump_failed = false;
	int poll_ms = 0;	/* the oom and inuse triggers read counters */
	uint64_t last_events = 0;
	double last_t = 0, stop_at;
	int ret = EXIT_TRACE;

	if (parse_args(&r, argc, argv))
		return EXIT_USAGE;
	keep_to_buffer_size(&r);
	for (int i = 0; i < r.nr_trig; i++) {
		if (r.trig[i].kind == TRIGGER_SIGNAL)
			sig_trig = &r.trig[i];
		if (r.trig[i].kind == TRIGGER_OOM &&
		    (!poll_ms || poll_ms > TRIGGER_OOM_POLL_MS))
			poll_ms = TRIGGER_OOM_POLL_MS;
		if (r.trig[i].kind == TRIGGER_INUSE &&
		    (!poll_ms || poll_ms > TRIGGER_INUSE_POLL_MS))
			poll_ms = TRIGGER_INUSE_POLL_MS;
	}
	r.status_line = isatty(STDERR_FILENO) && !r.quiet && !r.json;

	/* Signals are only taken inside ppoll(): no EINTR anywhere else. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &orig);
	waitmask = orig;
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGHUP);
	sigdelset(&waitmask, SIGUSR1);
	sigdelset(&waitmask, SIGCHLD);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);

	if (r.nr_trig && (open_trigger_dir(&r) || arm_triggers(&r, false)))
		goto out;
	if (open_device(&r))
		goto out;
	if (map_session(&r))
		goto out;
	if (r.trig_inuse && arm_triggers(&r, true))
		goto out;
	for (int i = 0; i < r.nr_trig && !r.quiet && !r.json; i++)
		if (r.trig[i].kind == TRIGGER_INUSE)
			fprintf(stderr, "pagetrace: %s: %" PRId64 " pages in use now, by the "
				"trace's count\n", r.trig[i].expr, r.trig[i].inuse_seen);
	if (!r.nr_trig && (open_output(&r) || write_header(&r)))
		goto out;

	clock_gettime(CLOCK_MONOTONIC, &r.start);
	if (r.cmd) {
		r.child = start_command(r.cmd, &orig);
		if (r.child < 0)
			goto stop;
	}
	if (!r.quiet && !r.json && r.nr_trig) {
		char hb[32];

		fprintf(stderr, "pagetrace: flight recorder keeping %s per CPU; a file in %s "
			"for each trigger:", human(r.buffer_size ? r.buffer_size :
						  r.meta->ring_size, hb, sizeof(hb)), r.path);
		for (int i = 0; i < r.nr_trig; i++)
			fprintf(stderr, " %s", r.trig[i].expr);
		fprintf(stderr, " (%s)\n", r.cmd ? "until the command exits or Ctrl-C" :
			r.duration ? "for the duration, or Ctrl-C" : "Ctrl-C to stop");
	} else if (!r.quiet && !r.json)
		fprintf(stderr, "pagetrace: recording to %s%s (%s)\n", r.path,
			r.flight ? " as a flight recorder, SIGUSR1 dumps a snapshot" : "",
			r.cmd ? "until the command exits or Ctrl-C" :
			r.duration ? "for the duration, or Ctrl-C" : "Ctrl-C to stop");
	stop_at = r.duration ? r.duration : -1;

	for (;;) {
		double now = elapsed(&r);
		int ms = STATUS_MS;

		if (got_stop)
			break;
		if (got_chld) {
			got_chld = 0;
			reap_child(&r, false);
			if (r.child == 0) {
				r.stopped_by = "command";
				break;
			}
		}
		if (stop_at > 0 && now >= stop_at) {
			r.stopped_by = "duration";
			break;
		}
		if (got_usr1 && r.nr_trig) {
			got_usr1 = 0;
			if (sig_trig)
				trigger_fired(&r, sig_trig, "SIGUSR1");
			else
				fprintf(stderr, "pagetrace: SIGUSR1 ignored: no --trigger signal\n");
		} else if (got_usr1 && r.flight) {
			got_usr1 = 0;
			if (snapshot(&r))
				goto stop;
		}
		if (r.pending && now >= r.pending_at + r.post && trigger_dump(&r)) {
			dump_failed = true;
			goto stop;
		}
		if (!r.flight && drain(&r) < 0)
			goto stop;
		if (r.status_line)
			status(&r, &last_t, &last_events);
		if (stop_at > 0 && (stop_at - now) * 1000 < ms)
			ms = (stop_at - now) * 1000 + 1;
		if (poll_ms && ms > poll_ms)
			ms = poll_ms;
		if (r.pending && (r.pending_at + r.post - now) * 1000 < ms)
			ms = (r.pending_at + r.post - now) * 1000 + 1;
		if (ms < 1)
			ms = 1;
		wait_for_work(&r, ms, &waitmask, pfd);
		if (r.nr_trig)
			check_triggers(&r, pfd);
	}

stop:
	/* A trigger still in its --post: the stop cuts it short, not off. */
	if (r.pending && !dump_failed && trigger_dump(&r))
		dump_failed = true;
	/* Every event up to now is in a closed chunk once STOP returns. */
	if (ioctl(r.dev, PAGETRACE_IOC_STOP))
		fprintf(stderr, "pagetrace: stopping the session failed: %s\n",
			strerror(errno));
	if (r.nr_trig) {
		ret = r.write_err || dump_failed ? EXIT_TRACE : 0;
		r.file_off = r.dump_bytes;	/* for the summary */
	}
	else if (!r.write_err && !drain_to_end(&r) && !append_counters(&r))
		ret = 0;
	if (r.status_line) {
		status(&r, &last_t, &last_events);
		fputc('\n', stderr);
	}
	if (r.out >= 0 && r.out != STDOUT_FILENO && fsync(r.out) && errno != EINVAL) {
		fprintf(stderr, "pagetrace: %s: %s\n", r.path, strerror(errno));
		ret = EXIT_TRACE;
	}
	/* Name the sampled stacks' frames while this kernel's symbols are at hand. */
	if (!ret && !r.nr_trig && r.out >= 0 && r.out != STDOUT_FILENO) {
		struct stat st;

		if (!fstat(r.out, &st) && S_ISREG(st.st_mode))
			symbolize_file(r.path, "/proc/kallsyms", true);
	}
	if (r.child > 0) {
		/* Stopped before the command ended: end it like timeout(1) does. */
		kill(r.child, SIGTERM);
		reap_child(&r, true);
	}
	summary(&r, elapsed(&r));
out:
	if (r.out >= 0 && r.out != STDOUT_FILENO && close(r.out) && !ret) {
		fprintf(stderr, "pagetrace: %s: %s\n", r.path, strerror(errno));
		ret = EXIT_TRACE;
	}
	pgtrace_ring_unmap(r.ring);
	if (r.dev >= 0)
		close(r.dev);
	free(r.iov);
	free(r.iov_chunk);
	for (int i = 0; i < r.nr_trig; i++)
		trigger_disarm(&r.trig[i]);
	return ret;
}
