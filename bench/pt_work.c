// SPDX-License-Identifier: GPL-2.0
/*
 * pt_work: the userspace workloads of `make bench`, and a CPU-time wrapper
 * for the recorders.  Built static, run in the VM by bench/run-guest.sh.
 *
 *   pt_work mmap MIB ITERS      per CPU (one pinned process each): ITERS
 *                               times mmap MIB of anonymous memory, touch
 *                               every 4 KiB page, munmap.  op = one page.
 *   pt_work fork ITERS          per CPU: ITERS times fork, _exit, wait.
 *                               op = one fork/exit.
 *   pt_work read FILE ITERS     per CPU (FILE.N for worker N, which must
 *                               exist): ITERS times fadvise(DONTNEED) the
 *                               file, then read it all.  op = one page read.
 *   pt_work rusage OUT -- CMD   run CMD, pass SIGINT/SIGTERM on to it, and
 *                               when it ends write "user_s sys_s status" of
 *                               it and its waited-for descendants to OUT.
 *   pt_work sessions DEV N      N times open DEV (/dev/pagetrace: a session
 *                               starts, and records before open() returns)
 *                               and close it (the session stops): prints
 *                               "first_ms=MEDIAN,MIN,MAX start_ms=...
 *                               stop_ms=...": from the open() call to the
 *                               first event the session could record (the
 *                               header's start_mono_ns and its session
 *                               record's attach_us), and of the open() and
 *                               close() calls.
 *   pt_work ftrace-raw DIR OUT  a minimal ftrace reader: one process per CPU
 *                               splices DIR/per_cpu/cpuN/trace_pipe_raw to
 *                               OUT.N (whole pages, as trace-cmd does) until
 *                               SIGINT/SIGTERM, then drains what is ready.
 *
 * The workloads print one line: "ops=N ns_per_op=X wall_s=Y", ns_per_op
 * being the mean over the workers of each worker's elapsed time per op.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/pagetrace.h>

#include "libpagetrace.h"

#define PAGE	4096L

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* One worker's loop; returns the ops done. */
static long work_mmap(long mib, long iters)
{
	size_t len = (size_t)mib << 20;
	long it, off;

	for (it = 0; it < iters; it++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		madvise((void *)p, len, MADV_NOHUGEPAGE);
		for (off = 0; off < (long)len; off += PAGE)
			p[off] = 1;
		munmap((void *)p, len);
	}
	return iters * (long)(len / PAGE);
}

static long work_fork(long iters)
{
	long it;

	for (it = 0; it < iters; it++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
	}
	return iters;
}

static long work_read(const char *file, long worker, long iters)
{
	static char buf[1 << 16];
	char path[4096];
	long it, pages = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s.%ld", file, worker);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	for (it = 0; it < iters; it++) {
		if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
			die("fadvise");
		if (lseek(fd, 0, SEEK_SET) < 0)
			die("lseek");
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			pages += n / PAGE;
		if (n < 0)
			die("read");
	}
	close(fd);
	return pages;
}

static int run_workers(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), total = 0, i;
	double sum_ns = 0, t0 = now();
	int fds[2];

	if (pipe(fds))
		die("pipe");
	for (i = 0; i < ncpu; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			double res[2], start;
			cpu_set_t set;
			long ops;

			CPU_ZERO(&set);
			CPU_SET(i, &set);
			sched_setaffinity(0, sizeof(set), &set);
			start = now();
			if (!strcmp(argv[1], "mmap") && argc == 4)
				ops = work_mmap(atol(argv[2]), atol(argv[3]));
			else if (!strcmp(argv[1], "fork") && argc == 3)
				ops = work_fork(atol(argv[2]));
			else if (!strcmp(argv[1], "read") && argc == 4)
				ops = work_read(argv[2], i, atol(argv[3]));
			else
				_exit(2);
			res[0] = ops;
			res[1] = (now() - start) * 1e9 / (ops ? ops : 1);
			if (write(fds[1], res, sizeof(res)) != sizeof(res))
				_exit(1);
			_exit(0);
		}
	}
	close(fds[1]);
	for (i = 0; i < ncpu; i++) {
		double res[2];
		int st;

		if (read(fds[0], res, sizeof(res)) != sizeof(res)) {
			fprintf(stderr, "pt_work: a worker failed (usage: see the source)\n");
			return 1;
		}
		total += (long)res[0];
		sum_ns += res[1];
		wait(&st);
	}
	printf("ops=%ld ns_per_op=%.1f wall_s=%.3f\n", total, sum_ns / ncpu,
	       now() - t0);
	return 0;
}

static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

static int run_rusage(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = forward };
	struct rusage ru;
	FILE *out;
	int st;

	if (argc < 5 || strcmp(argv[3], "--"))
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[4], argv + 4);
		die(argv[4]);
	}
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	getrusage(RUSAGE_CHILDREN, &ru);
	out = fopen(argv[2], "w");
	if (!out)
		die(argv[2]);
	fprintf(out, "%.3f %.3f %d\n",
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	fclose(out);
	return 0;
}

static volatile sig_atomic_t stopping;

/* A reader blocked just after it checked stopping ends by SIGALRM. */
static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
	alarm(5);
}

static void splice_all(int in, int out, unsigned int flags)
{
	ssize_t n, m;
	int p[2];

	if (pipe(p))
		die("pipe");
	while (!stopping || flags) {
		/*
		 * Wait in poll(), until buffer_percent of the CPU's buffer is
		 * filled: on 7.3 a blocking splice of trace_pipe_raw with no
		 * full page ready returns 0 at once, even on an empty buffer
		 * (6.1's waits).  Taken as the end, the reader quit before
		 * the first event: every event was overwritten and the
		 * reader's cost never counted; retried, it spins.
		 */
		if (!flags) {
			struct pollfd pfd = { .fd = in, .events = POLLIN };

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				die("poll");
			if (stopping)
				break;
		}
		n = splice(in, NULL, p[1], NULL, 1 << 16, SPLICE_F_MOVE | flags);
		if (n < 0 && errno == EINTR && !stopping)
			continue;
		/* Woken with no full page yet (7.3): wait again. */
		if (n == 0 && !flags)
			continue;
		if (n <= 0)
			break;
		while (n > 0) {
			m = splice(p[0], NULL, out, NULL, n, SPLICE_F_MOVE);
			if (m <= 0)
				die("splice");
			n -= m;
		}
	}
}

static int run_ftrace_raw(const char *dir, const char *prefix)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), i;
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART */
	sigset_t block, orig;
	pid_t pids[1024];
	char path[4096];

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (i = 0; i < ncpu && i < 1024; i++) {
		int in, out;

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%ld/trace_pipe_raw", dir, i);
		in = open(path, O_RDONLY);
		if (in < 0)
			die(path);
		snprintf(path, sizeof(path), "%s.%ld", prefix, i);
		out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (out < 0)
			die(path);
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			sigprocmask(SIG_SETMASK, &orig, NULL);
			splice_all(in, out, 0);
			/* Stopped: take the full pages left, without waiting. */
			splice_all(in, out, SPLICE_F_NONBLOCK);
			_exit(0);
		}
		close(in);
		close(out);
	}
	while (!stopping)
		sigsuspend(&orig);
	while (i-- > 0) {
		kill(pids[i], SIGTERM);
		waitpid(pids[i], NULL, 0);
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* "median,min,max" of @n durations in seconds, as ms. */
static void print_ms(const char *name, double *t, int n)
{
	qsort(t, n, sizeof(*t), cmp_double);
	printf("%s=%.1f,%.1f,%.1f", name, t[n / 2] * 1e3, t[0] * 1e3, t[n - 1] * 1e3);
}

/*
 * Seconds from @t0 (CLOCK_MONOTONIC) to the first event the session on @fd
 * could record, from its header (libpagetrace reads it); -1 if the header
 * does not say (a module before attach_us) or does not decode.
 */
static double first_event_after(int fd, double t0)
{
	const struct pagetrace_header *h;
	const struct pgtrace_session *s;
	struct pgtrace_reader *r = NULL;
	double t = -1;

	if (!pgtrace_reader_open_fd(&r, fd, 0)) {
		h = pgtrace_reader_header(r);
		s = pgtrace_reader_session(r);
		if (s && s->attach_us)
			t = h->start_mono_ns / 1e9 - t0 + s->attach_us / 1e6;
	}
	if (r)
		pgtrace_reader_close(r);
	return t;
}

static int run_sessions(const char *dev, int n)
{
	double first[256], start[256], stop[256];
	int i, no_first = 0;

	if (n < 1 || n > 256) {
		fprintf(stderr, "pt_work sessions: N is 1 to 256\n");
		return 2;
	}
	for (i = 0; i < n; i++) {
		double t0 = now(), t1, t2, t3;
		int fd = open(dev, O_RDONLY | O_CLOEXEC);

		t1 = now();
		if (fd < 0)
			die(dev);
		first[i] = first_event_after(fd, t0);
		if (first[i] < 0)
			no_first = 1;
		t2 = now();
		if (close(fd))
			die("close");
		t3 = now();
		start[i] = t1 - t0;
		stop[i] = t3 - t2;
	}
	/* A report shows "first_ms=-" as unknown. */
	if (no_first)
		fputs("first_ms=-", stdout);
	else
		print_ms("first_ms", first, n);
	putchar(' ');
	print_ms("start_ms", start, n);
	putchar(' ');
	print_ms("stop_ms", stop, n);
	putchar('\n');
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "sessions"))
		return run_sessions(argv[2], atoi(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "rusage"))
		return run_rusage(argc, argv);
	if (argc == 4 && !strcmp(argv[1], "ftrace-raw"))
		return run_ftrace_raw(argv[2], argv[3]);
	if (argc >= 3)
		return run_workers(argc, argv);
	fprintf(stderr, "usage: pt_work mmap MIB ITERS | fork ITERS | read FILE ITERS |\n"
		"               rusage OUT -- CMD [ARGS] | ftrace-raw TRACEFS OUT |\n"
		"               sessions DEV N\n");
	return 2;
}
