// SPDX-License-Identifier: GPL-2.0
/*
 * top_gen: a small trace whose pagetrace top frames are known, for
 * tests/top-tmux.sh.
 *
 *   top_gen OUT
 *
 * 20 s of trace from start_ns, 2 CPUs, named tasks, sampled stacks and
 * their symbols, a snapshot of 256 pages, and 42 lost events:
 *
 *   hog      tgid 4242, CPU 0: an order-2 block (4 pages) of zone Normal
 *            every 10 ms, never freed: 400 pages/s; every 10th sampled
 *            with stack 1 (hog_fill_buffer)
 *   churn    tgid 777, CPU 1: an order-0 page of DMA32 every 10 ms, freed
 *            5 ms later: 100 pages/s allocated and freed, none in use at a
 *            cut; every 20th sampled with stack 2 (churn_loop)
 *   kswapd0  tgid 99, CPU 1: from 10 s on, every 20 ms, reclaims the
 *            oldest of hog's blocks: 200 pages/s
 *
 * So with frames of 10 s of trace (top -d 1 --speed 10): frame 0 has hog
 * 400/s in use 4000 (+4000), churn 100/s alloc and free, no reclaim, 37
 * lost; frame 1 has hog 400/s in use 6000 (+2000), kswapd0 200/s reclaim,
 * 5 more lost.  Sorted by alloc rate hog leads, by free rate churn, by
 * reclaim rate kswapd0.
 */
#include <stdio.h>
#include <stdlib.h>
#include "synth.h"

#define MS		1000000ULL
#define START		1000000000ULL	/* synth's start_ns */
#define HOG_PFN		0x100000ULL	/* zone Normal */
#define CHURN_PFN	0x3000ULL	/* zone DMA32 */
#define SNAP_PFN	0x2000ULL

static const struct pgtrace_zone zones[] = {
	{ .node = 0, .zone = 1, .start_pfn = 0x1000, .end_pfn = 0x100000,
	  .present_pages = 0xff000, .name = "DMA32" },
	{ .node = 0, .zone = 2, .start_pfn = 0x100000, .end_pfn = 0x200000,
	  .present_pages = 0x100000, .name = "Normal" },
};

static const uint64_t frames[] = {
	0xffffffff81100000ULL, 0xffffffff81200000ULL, 0xffffffff81300000ULL,
	0xffffffff81400000ULL,
};
static const char *const names[] = {
	"__alloc_pages", "hog_fill_buffer", "do_syscall_64", "churn_loop",
};
static const uint64_t offsets[4];

static struct synth s;

/*
 * Room for a whole event in the open chunk, and the task record of
 * @tgid in it: the reader forgets the task at a chunk's start.
 */
static void as_task(unsigned int cpu, uint32_t tgid, const char *comm)
{
	struct synth_cpu *c = &s.cpus[cpu];

	if (c->nr && c->nr + 24 > s.max_words)
		synth_flush(&s, cpu, 0);
	if (!c->nr || c->task != (int64_t)tgid)
		synth_name(&s, cpu, tgid, comm);
}

int main(int argc, char **argv)
{
	const uint64_t hog_stack[] = { frames[0], frames[1], frames[2] };
	const uint64_t churn_stack[] = { frames[0], frames[3], frames[2] };
	uint64_t reclaimed = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: top_gen OUT\n");
		return 2;
	}
	synth_init_zones(&s, 2, 65536, PAGETRACE_FLAG_TASKS | PAGETRACE_FLAG_STACKS, zones, 2);

	synth_snapshot(&s, 0);
	synth_event(&s, 0, START, PAGETRACE_EV_ALLOC, SNAP_PFN, 256);
	synth_flush(&s, 0, 0);

	for (uint64_t k = 0; k < 2000; k++) {
		uint64_t t = START + k * 10 * MS;

		if (k == 500)
			s.cpus[0].lost += 37;
		if (k == 1500)
			s.cpus[0].lost += 5;
		as_task(0, 4242, "hog");
		if (k % 10 == 0) {
			synth_stack_def(&s, 0, 1, 3, false, hog_stack);
			synth_sample(&s, 0, t, 1, HOG_PFN + 4 * k, 4);
		} else {
			synth_event(&s, 0, t, PAGETRACE_EV_ALLOC, HOG_PFN + 4 * k, 4);
		}

		as_task(1, 777, "churn");
		if (k % 20 == 0) {
			synth_stack_def(&s, 1, 2, 3, false, churn_stack);
			synth_sample(&s, 1, t, 2, CHURN_PFN + k, 1);
		} else {
			synth_event(&s, 1, t, PAGETRACE_EV_ALLOC, CHURN_PFN + k, 1);
		}
		synth_event(&s, 1, t + 5 * MS, PAGETRACE_EV_FREE, CHURN_PFN + k, 1);

		if (k >= 1000 && k % 2 == 0) {
			as_task(1, 99, "kswapd0");
			synth_event(&s, 1, t + 7 * MS, PAGETRACE_EV_RECLAIM,
				    HOG_PFN + 4 * reclaimed++, 4);
		}
		/* Chunks close every 100 ms, as the module's flush timer closes them. */
		if (k % 10 == 9)
			synth_flush_all(&s);
	}
	synth_flush_all(&s);
	synth_symbols(&s, 4, frames, names, offsets);

	f = fopen(argv[1], "w");
	if (!f || fwrite(s.buf, 1, s.len, f) != s.len || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	synth_free(&s);
	return 0;
}
