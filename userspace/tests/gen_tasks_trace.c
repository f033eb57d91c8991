// SPDX-License-Identifier: GPL-2.0
/*
 * gen_tasks_trace: a synthetic v1 stream with what a converter to other
 * formats must carry over, for tests/tracecmd-roundtrip.sh:
 *
 *   gen_tasks_trace [-n EVENTS] [-c CPUS] [-s SEED] OUT
 *
 * Task records and names (short, 8 to 14 bytes, the full 16, with a space,
 * the kernel's tgid 0 unnamed), allocs, frees and reclaims of orders 0..11
 * and of sizes that are not a power of two, large events (1024 pages and
 * more), a snapshot chunk, gaps between events long enough to need a time
 * extend in a ring buffer (over 2^27 ns), and lost events: on chunks with
 * events, on an empty chunk whose losses the next chunk inherits, and one
 * chunk of CPU 0 missing (a seq gap, as a flight recorder's overwrite
 * leaves: the header has PAGETRACE_FLAG_OVERWRITE).
 * CPU 1's clock runs 20 us behind, so that its first events come before
 * the snapshot's (the session start).  Small chunks (4 KiB), so there
 * are many.  Task names are written the way
 * the module writes them: before the task record of every chunk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "synth.h"

static const struct {
	uint32_t	tgid;
	const char	*comm;
} tasks[] = {
	{ 0, NULL },			/* the kernel: interrupts, idle */
	{ 42, "kworker/u4:1" },
	{ 45, "kswapd0" },
	{ 1200, "bash" },
	{ 3001, "stress-ng-vm" },
	{ 4000, "abcdefghijklmnop" },	/* 16 bytes, no NUL */
	{ 5000, "Web Content" },
};
#define NR_TASKS	(sizeof(tasks) / sizeof(tasks[0]))

static uint64_t npages_of(uint64_t *rng)
{
	static const uint64_t odd[] = { 3, 5, 7, 100, 1000, 1023, 1536, 3000 };
	unsigned int x = synth_rand(rng) % 100;

	if (x < 60)
		return 1;
	if (x < 88)
		return 1ULL << (1 + synth_rand(rng) % 11);	/* 2 .. 2048 */
	return odd[synth_rand(rng) % (sizeof(odd) / sizeof(odd[0]))];
}

int main(int argc, char **argv)
{
	unsigned int nr_cpus = 4, n = 5000;
	uint64_t rng = 0x9e3779b97f4a7c15ULL, seed = 1;
	int64_t *cur;
	uint64_t *t;
	struct synth s;
	FILE *f;
	int c;

	while ((c = getopt(argc, argv, "n:c:s:")) != -1) {
		if (c == 'n')
			n = strtoul(optarg, NULL, 0);
		else if (c == 'c')
			nr_cpus = strtoul(optarg, NULL, 0);
		else if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else
			goto usage;
	}
	if (argc - optind != 1 || nr_cpus < 2 || nr_cpus > 256)
		goto usage;
	rng ^= seed * 0x2545f4914f6cdd1dULL;
	synth_init(&s, nr_cpus, 4096, PAGETRACE_FLAG_TASKS | PAGETRACE_FLAG_SNAPSHOT |
		   PAGETRACE_FLAG_OVERWRITE);
	cur = calloc(nr_cpus, sizeof(*cur));
	t = calloc(nr_cpus, sizeof(*t));
	if (!cur || !t)
		return 1;

	/* The memory map at the start, on CPU 1: runs of any length. */
	synth_snapshot(&s, 1);
	synth_event(&s, 1, s.hdr.start_ns, PAGETRACE_EV_ALLOC, 0x1000, 5000);
	synth_event(&s, 1, s.hdr.start_ns, PAGETRACE_EV_ALLOC, 0x3000, 7);
	synth_event(&s, 1, s.hdr.start_ns, PAGETRACE_EV_ALLOC, 0x3100, 1);
	synth_flush(&s, 1, 0);

	for (unsigned int i = 0; i < nr_cpus; i++) {
		t[i] = s.hdr.start_ns + 1000 * i;
		cur[i] = -1;
	}
	t[1] = s.cpus[1].last = s.hdr.start_ns - 20000;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int cpu = synth_rand(&rng) % nr_cpus;
		unsigned int k = synth_rand(&rng) % NR_TASKS;
		unsigned int x = synth_rand(&rng) % 1000;
		struct synth_cpu *sc = &s.cpus[cpu];
		unsigned int type;

		/* Mostly microseconds apart; now and then 0.2 to 1 s. */
		t[cpu] += x < 3 ? 200000000 + synth_rand(&rng) % 800000000 :
			  synth_rand(&rng) % 20000;
		type = x % 3 == 0 ? PAGETRACE_EV_FREE : PAGETRACE_EV_ALLOC;
		if (x % 17 == 0) {
			type = PAGETRACE_EV_RECLAIM;
			k = 2;
		}
		/* Room for a name, its task record and a large event with a sync. */
		if (sc->nr && sc->nr + 4 + 3 > s.max_words)
			synth_flush(&s, cpu, 0);
		if (!sc->nr) {
			cur[cpu] = -1;
			if (synth_rand(&rng) % 8 == 0)
				sc->lost = 1 + synth_rand(&rng) % 300;
			/* An empty chunk that only reports losses: the next one follows. */
			if (synth_rand(&rng) % 16 == 0) {
				uint64_t w[2] = { pagetrace_pid_word(cpu),
						  pagetrace_sync_word(sc->last) };

				synth_put_chunk(&s, cpu, PAGETRACE_CHUNK_FLUSHED, sc->seq++,
						7 + synth_rand(&rng) % 50, w, 2);
			}
			/* CPU 0's chunk 3 was overwritten before it was read. */
			if (cpu == 0 && sc->seq == 3)
				sc->seq++;
		}
		if (cur[cpu] != tasks[k].tgid) {
			if (tasks[k].comm)
				synth_name(&s, cpu, tasks[k].tgid, tasks[k].comm);
			else
				synth_task(&s, cpu, tasks[k].tgid);
			cur[cpu] = tasks[k].tgid;
		}
		synth_event(&s, cpu, t[cpu], type,
			    0x1000 + synth_rand(&rng) % 0x3fe000, npages_of(&rng));
	}
	synth_flush_all(&s);
	f = fopen(argv[optind], "w");
	if (!f || fwrite(s.buf, 1, s.len, f) != s.len || fclose(f)) {
		perror(argv[optind]);
		return 1;
	}
	synth_free(&s);
	free(cur);
	free(t);
	return 0;
usage:
	fprintf(stderr, "usage: gen_tasks_trace [-n EVENTS] [-c CPUS 2..256] [-s SEED] OUT\n");
	return 2;
}
