// SPDX-License-Identifier: GPL-2.0
/*
 * bench_decode: events per second of the decode paths on one trace, for
 * scripts/bench/bench-decode.sh (not a test).
 *
 *   bench_decode FILE [ROUNDS]
 *
 * Each measurement is the best of ROUNDS (default 3) runs, the full
 * analysis (pagetrace stats) included.  The file is
 * read into memory first, so the "mem" rows measure decoding alone; the
 * "fd" row goes through read() from the page cache.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "libpagetrace.h"

/*
 * CPU time of this process: on a shared machine, time spent descheduled
 * would otherwise count as decoding.  The wall clock is printed too.
 */
static double now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const unsigned char *buf;
static size_t len;
static const char *path;

static uint64_t run_batch(void)
{
	static struct pgtrace_event evs[256];
	struct pgtrace_reader *r;
	uint64_t n = 0, sum = 0;
	int ret;

	if (pgtrace_reader_open_mem(&r, buf, len, 0))
		exit(1);
	while ((ret = pgtrace_reader_next_batch(r, evs, 256)) > 0) {
		n += ret;
		sum += evs[ret - 1].pfn;
	}
	if (ret)
		exit(1);
	pgtrace_reader_close(r);
	return n + (sum & 0);
}

static uint64_t run_runs(void)
{
	static struct pgtrace_compact_event evs[256];
	const struct pgtrace_chunk *c;
	struct pgtrace_reader *r;
	uint64_t n = 0;
	int ret;

	if (pgtrace_reader_open_mem(&r, buf, len, 0))
		exit(1);
	while ((ret = pgtrace_reader_next_run(r, evs, 256, &c)) > 0)
		n += ret;
	if (ret)
		exit(1);
	pgtrace_reader_close(r);
	return n;
}

static uint64_t run_fd(void)
{
	static struct pgtrace_event evs[256];
	struct pgtrace_reader *r;
	uint64_t n = 0;
	int ret, fd = open(path, O_RDONLY);

	if (fd < 0 || pgtrace_reader_open_fd(&r, fd, 0))
		exit(1);
	while ((ret = pgtrace_reader_next_batch(r, evs, 256)) > 0)
		n += ret;
	if (ret)
		exit(1);
	pgtrace_reader_close(r);
	close(fd);
	return n;
}

static uint64_t run_stats(void)
{
	struct pgtrace_reader *r;
	struct pgtrace_stats s;
	uint64_t n;

	if (pgtrace_reader_open_mem(&r, buf, len, 0) || pgtrace_stats_collect(r, &s))
		exit(1);
	n = s.events;
	pgtrace_stats_free(&s);
	pgtrace_reader_close(r);
	return n;
}

static uint64_t run_analysis(void)
{
	struct pgtrace_analysis a;
	struct pgtrace_reader *r;
	uint64_t n;

	if (pgtrace_reader_open_mem(&r, buf, len, 0) || pgtrace_analysis_collect(r, &a, NULL))
		exit(1);
	n = a.stats.events;
	pgtrace_analysis_free(&a);
	pgtrace_reader_close(r);
	return n;
}

static uint64_t run_quick(void)
{
	struct pgtrace_analysis_params p = { .flags = PGTRACE_ANALYSIS_UNORDERED };
	struct pgtrace_analysis a;
	struct pgtrace_reader *r;
	uint64_t n;

	if (pgtrace_reader_open_mem(&r, buf, len, 0) || pgtrace_analysis_collect(r, &a, &p))
		exit(1);
	n = a.stats.events;
	pgtrace_analysis_free(&a);
	pgtrace_reader_close(r);
	return n;
}

static void measure(const char *what, uint64_t (*fn)(void), int rounds)
{
	double best = 1e30, wall = 1e30;
	uint64_t n = 0;

	for (int i = 0; i < rounds; i++) {
		double w = now(CLOCK_MONOTONIC), t = now(CLOCK_PROCESS_CPUTIME_ID);

		n = fn();
		t = now(CLOCK_PROCESS_CPUTIME_ID) - t;
		w = now(CLOCK_MONOTONIC) - w;
		if (t < best)
			best = t;
		if (w < wall)
			wall = w;
	}
	printf("%-36s %11llu %9.3f %9.1f %9.3f %9.1f\n", what, (unsigned long long)n,
	       best, n / best / 1e6, wall, n / wall / 1e6);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	struct stat st;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_decode FILE [ROUNDS]\n");
		return 2;
	}
	path = argv[1];
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	len = st.st_size;
	buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (buf == MAP_FAILED)
		return 1;
	printf("%-36s %11s %9s %9s %9s %9s\n", "what (best of rounds)", "events", "cpu s",
	       "M ev/s", "wall s", "M ev/s");
	measure("decode, pgtrace_reader_next_batch (mem)", run_batch, rounds);
	measure("decode, pgtrace_reader_next_batch (fd)", run_fd, rounds);
	measure("decode, pgtrace_reader_next_run (mem)", run_runs, rounds);
	measure("stats, pgtrace_stats_collect", run_stats, rounds);
	measure("analysis, unordered (stats --quick)", run_quick, rounds);
	measure("analysis, pgtrace_analysis_collect", run_analysis, rounds);
	return 0;
}
