// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the decoders: the input is tried as a v1 stream and
 * as a Go page trace, read every way the library offers (one event at a
 * time, batches, through a small fd buffer so records straddle refills,
 * pgtrace_stats_collect(), pgtrace_analysis_collect() with a tiny max_held).  Built
 * with ASan and UBSan; any crash, leak, hang or out-of-bounds read fails.
 * The first input byte picks the batch and buffer sizes, so the fuzzer
 * explores those too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "libpagetrace.h"

static int chunk_cb(const struct pgtrace_chunk *c, void *arg)
{
	uint64_t *n = arg;

	/* Now and then stop the reader from the callback. */
	return ++*n == 1000 + (c->seq & 7) ? -ECANCELED : 0;
}

static void drain(struct pgtrace_reader *r, unsigned int batch)
{
	struct pgtrace_event evs[64];
	uint64_t n = 0;
	int ret;

	pgtrace_reader_set_chunk_cb(r, chunk_cb, &n);
	while ((ret = pgtrace_reader_next_batch(r, evs, batch)) > 0) {
		for (int i = 0; i < ret; i++)
			if (evs[i].type < PGTRACE_EV_ALLOC || evs[i].type > PGTRACE_EV_TASK)
				abort();
	}
	/* Errors stick. */
	if (ret < 0 && pgtrace_reader_next_batch(r, evs, batch) != ret)
		abort();
	if (ret < 0 && !*pgtrace_reader_error(r) && ret != -ECANCELED)
		abort();
}

static void one(const uint8_t *data, size_t size, unsigned int flags, unsigned int batch,
		unsigned int bufsz, int fd)
{
	struct pgtrace_analysis_params ap = { .max_held = 1 + batch % 32 };
	struct pgtrace_reader_params p = { .flags = flags, .buf_size = bufsz };
	struct pgtrace_analysis a;
	struct pgtrace_stats s;
	struct pgtrace_reader *r;

	if (!pgtrace_reader_open_mem(&r, data, size, flags)) {
		struct pgtrace_event e;

		for (int i = 0; i < 3 && pgtrace_reader_next(r, &e) > 0; i++)
			;
		drain(r, batch);
	}
	pgtrace_reader_close(r);

	if (fd >= 0 && lseek(fd, 0, SEEK_SET) == 0) {
		if (!pgtrace_reader_open_fd_params(&r, fd, &p))
			drain(r, batch);
		pgtrace_reader_close(r);
	}

	if (!pgtrace_reader_open_mem(&r, data, size, flags)) {
		pgtrace_stats_collect(r, &s);
		pgtrace_stats_free(&s);
	}
	pgtrace_reader_close(r);

	if (!pgtrace_reader_open_mem(&r, data, size, flags)) {
		pgtrace_analysis_collect(r, &a, &ap);
		for (unsigned int o = 0; o < PGTRACE_LIFE_ORDERS; o++)
			pgtrace_life_percentile(&a.life[o], 99);
		pgtrace_analysis_free(&a);
	}
	pgtrace_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int knob = size ? data[size - 1] : 0;
	unsigned int batch = 1 + knob % 64;
	unsigned int bufsz = PGTRACE_READER_MIN_BUF + 8 * (knob >> 6) * 13;
	int fd = memfd_create("fuzz", 0);

	if (fd >= 0 && (size_t)write(fd, data, size) != size) {
		close(fd);
		fd = -1;
	}
	one(data, size, PGTRACE_READER_TASKS, batch, bufsz, fd);
	one(data, size, PGTRACE_READER_GO, batch, bufsz, fd);
	if (fd >= 0)
		close(fd);
	return 0;
}
