// SPDX-License-Identifier: GPL-2.0
/*
 * Write the fuzzer's seed corpus into DIR: small v1 streams built by
 * tests/synth.c (several CPUs, large events, syncs, task records and
 * names, a snapshot, seq gaps with the overwrite flag, sampled stacks
 * with a filter record and a symbol chunk) and hand-made Go
 * traces.
 */
#include <stdio.h>
#include <stdlib.h>
#include "synth.h"

#define SEC	1000000000ULL

static void save(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct synth s;
	uint64_t st = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: seeds DIR\n");
		return 2;
	}
	synth_init(&s, 3, 512, PAGETRACE_FLAG_TASKS);
	for (unsigned int i = 0; i < 60; i++) {
		uint64_t x = synth_rand(&st);

		synth_event(&s, i % 3, SEC + i * (x % 3 ? 1000 : PAGETRACE_TIME_MAX_DELTA),
			    1 + x % 3, 0x1000 + x % 4096, x % 7 ? 1 << (x % 4) : 2048);
		if (i % 17 == 0)
			synth_task(&s, i % 3, 100 + i);
		else if (i % 13 == 0)	/* names of 1, 2 and 3 slices */
			synth_name(&s, i % 3, 200 + i, i % 2 ? "kworker/0:1H" : i % 3 ? "sh" :
				   "systemd-journald");
	}
	synth_flush_all(&s);
	save(argv[1], "v1-mixed", s.buf, s.len);
	synth_free(&s);

	synth_init(&s, 2, 256, PAGETRACE_FLAG_SNAPSHOT | PAGETRACE_FLAG_OVERWRITE);
	synth_snapshot(&s, 0);
	synth_event(&s, 0, SEC / 2, 1, 0x2000, 4);
	synth_flush(&s, 0, 0);
	synth_event(&s, 1, SEC + 5, 1, 0x3000, 1);
	synth_event(&s, 0, SEC + 9, 2, 0x2001, 1);
	s.cpus[1].seq = 3;
	s.cpus[1].lost = 9;
	synth_flush_all(&s);
	synth_event(&s, 1, SEC + 500, 3, 0x3000, 1);
	synth_flush_all(&s);
	save(argv[1], "v1-snapshot-gaps", s.buf, s.len);
	synth_free(&s);

	{
		/* Sampled stacks, a filter record and a symbol chunk at the end. */
		static const uint64_t fr[] = { 0xffffffff81003010ULL, 0xffffffffc0001008ULL };
		static const char *const names[] = { "__alloc_pages", "mod_fn [mymod]" };
		static const uint64_t offs[] = { 0x10, 8 };

		synth_init(&s, 2, 512, PAGETRACE_FLAG_STACKS | PAGETRACE_FLAG_FILTERED);
		synth_stack_def(&s, 0, 1, 2, false, fr);
		synth_sample(&s, 0, SEC, 1, 0x100, 1);
		synth_sample(&s, 0, SEC + 10, 0, 0x200, 2);
		synth_stack_def(&s, 1, 1, 2, false, fr);
		synth_sample(&s, 1, SEC + 20, 1, 0x4000, 2048);
		synth_event(&s, 1, SEC + 30, 2, 0x100, 1);
		synth_flush_all(&s);
		synth_symbols(&s, 2, fr, names, offs);
		save(argv[1], "v1-stacks-symbols", s.buf, s.len);
		synth_free(&s);
	}

	{
		/* P 1 and P -1; a large event whose npages word looks like a pid. */
		uint64_t t = SEC << 3;
		const uint64_t w[] = {
			1 << 3 | 4, pagetrace_sync_word(t),
			pagetrace_event_word(256, 0x6000000, 3, 1),
			pagetrace_large_event_word(512, 0x6000100, 2), 1028,
			pagetrace_sync_word(t + PAGETRACE_TIME_MAX_DELTA),
			pagetrace_event_word(0, 0x6000000, 3, 3),
			~0ULL << 3 | 4, pagetrace_sync_word(t + 7),
			pagetrace_event_word(0, 0x6000200, 1, 1),
		};

		save(argv[1], "go-small", w, sizeof(w));
	}
	return 0;
}
