// SPDX-License-Identifier: GPL-2.0
/*
 * gen_trace: write a large, plausible synthetic v1 stream, in bounded
 * memory, for the benchmark (scripts/bench/bench-decode.sh) and the report test.
 *
 *   gen_trace [-n EVENTS] [-c CPUS] [-s SEED] [-k CHUNK_SIZE] OUT
 *
 * Two zones (DMA32 and Normal on node 0); blocks of orders 0..10 (mostly
 * small, never overlapping) are allocated on one CPU and freed, usually on
 * another, after a random lifetime; every so often a reclaim burst takes back a run of
 * allocated blocks, and now and then a chunk reports lost events.  Each
 * CPU's clock runs on its own; chunks are written as they fill, so CPUs
 * interleave as they would from the module.
 */
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/pagetrace.h>

#define LIVE_MAX	(1U << 16)
#define ZONE0_START	0x1000ULL
#define ZONE1_START	0x100000ULL
#define ZONE1_END	0x440000ULL

struct cpu {
	uint64_t	*w;
	unsigned int	n;
	uint64_t	seq, base, t, lost;
};

struct blk {
	uint64_t	pfn, t;
	unsigned int	order;
};

static FILE *out;
/* Pages in use, so that blocks never overlap: a bit per PFN. */
static uint64_t *used;
static unsigned int max_words;
static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void put(const void *p, size_t n)
{
	if (fwrite(p, 1, n, out) != n) {
		perror("gen_trace: write");
		exit(1);
	}
}

static void put32(uint32_t v)
{
	v = htole32(v);
	put(&v, 4);
}

static void put64(uint64_t v)
{
	v = htole64(v);
	put(&v, 8);
}

static bool range_free(uint64_t pfn, uint64_t n)
{
	for (uint64_t p = pfn; p < pfn + n; p++)
		if (used[p / 64] >> (p % 64) & 1)
			return false;
	return true;
}

static void range_set(uint64_t pfn, uint64_t n, bool on)
{
	for (uint64_t p = pfn; p < pfn + n; p++) {
		if (on)
			used[p / 64] |= 1ULL << (p % 64);
		else
			used[p / 64] &= ~(1ULL << (p % 64));
	}
}

static void flush_cpu(struct cpu *c, unsigned int id)
{
	if (c->n <= 2)
		return;
	put(PAGETRACE_CHUNK_MAGIC, 4);
	put32(id | 0U << 16);	/* cpu, flags 0 */
	put32(c->n);
	put32(0);
	put64(c->seq++);
	put64(c->lost);
	for (unsigned int i = 0; i < c->n; i++)
		c->w[i] = htole64(c->w[i]);
	put(c->w, 8ULL * c->n);
	c->lost = 0;
	c->n = 0;
}

static void word(struct cpu *c, unsigned int id, uint64_t w)
{
	c->w[c->n++] = w;
	(void)id;
}

/* Room for @need more words, a new chunk (pid, sync) if not. */
static void room(struct cpu *c, unsigned int id, unsigned int need)
{
	if (c->n && c->n + need <= max_words)
		return;
	flush_cpu(c, id);
	word(c, id, pagetrace_pid_word(id));
	c->base = c->t & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
	word(c, id, pagetrace_sync_word(c->base));
}

static void event(struct cpu *c, unsigned int id, unsigned int type, uint64_t pfn,
		  uint64_t np)
{
	room(c, id, 3);
	if (c->t - c->base >= PAGETRACE_TIME_MAX_DELTA) {
		c->base = c->t & ~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1);
		word(c, id, pagetrace_sync_word(c->base));
	}
	if (np > PAGETRACE_NPAGES_MAX) {
		word(c, id, pagetrace_large_event_word(c->t - c->base, pfn, type));
		word(c, id, np);
	} else {
		word(c, id, pagetrace_event_word(c->t - c->base, pfn, np, type));
	}
}

int main(int argc, char **argv)
{
	uint64_t nev = 1000000, chunk_size = 65536, start = 1000000000ULL, done = 0;
	unsigned int ncpu = 4, nlive = 0;
	struct blk *live;
	struct cpu *cpus;
	int opt;

	while ((opt = getopt(argc, argv, "n:c:s:k:")) != -1) {
		switch (opt) {
		case 'n':
			nev = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			ncpu = strtoul(optarg, NULL, 0);
			break;
		case 's':
			rng = strtoull(optarg, NULL, 0) * 2654435761ULL + 1;
			break;
		case 'k':
			chunk_size = strtoull(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || !ncpu || ncpu > 1024 || chunk_size < 256 || chunk_size % 8) {
usage:
		fprintf(stderr, "usage: gen_trace [-n EVENTS] [-c CPUS] [-s SEED] [-k CHUNK_SIZE] OUT\n");
		return 2;
	}
	out = fopen(argv[optind], "w");
	if (!out) {
		perror(argv[optind]);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	max_words = (chunk_size - sizeof(struct pagetrace_chunk)) / 8;
	cpus = calloc(ncpu, sizeof(*cpus));
	live = calloc(LIVE_MAX, sizeof(*live));
	used = calloc(ZONE1_END / 64 + 1, 8);
	if (!cpus || !live || !used)
		return 1;
	for (unsigned int i = 0; i < ncpu; i++) {
		cpus[i].w = malloc(8ULL * max_words);
		if (!cpus[i].w)
			return 1;
		cpus[i].t = start + i * 1000;
	}

	/* Header: 64 bytes, a release, two zones, a session, END. */
	{
		struct pagetrace_rec_zone z[2] = {
			{ .node = 0, .zone = 1, .start_pfn = htole64(ZONE0_START),
			  .end_pfn = htole64(ZONE1_START), .present_pages = htole64(ZONE1_START - ZONE0_START),
			  .name = "DMA32" },
			{ .node = 0, .zone = 2, .start_pfn = htole64(ZONE1_START),
			  .end_pfn = htole64(ZONE1_END), .present_pages = htole64(ZONE1_END - ZONE1_START),
			  .name = "Normal" },
		};
		struct pagetrace_rec_session ses = { .nr_bufs = htole32(4), .flush_ms = htole32(100) };
		static const char rel[16] = "6.1.0-gen";
		uint32_t hs = 64 + (8 + 16) + 2 * (8 + 48) + (8 + 32) + 8;

		put(PAGETRACE_MAGIC, 8);
		put32(PAGETRACE_VERSION);
		put32(hs);
		put32(12);
		put32(PAGETRACE_TIME_LOST_BITS);
		put32(PAGETRACE_TIME_DELTA_BITS);
		put32(ncpu);
		put64(start);
		put64(start);
		put64(1700000000000000000ULL);
		put32((uint32_t)chunk_size);
		put32(0);
		put32(PAGETRACE_REC_RELEASE);
		put32(sizeof(rel));
		put(rel, sizeof(rel));
		for (int i = 0; i < 2; i++) {
			put32(PAGETRACE_REC_ZONE);
			put32(sizeof(z[i]));
			put(&z[i], sizeof(z[i]));
		}
		put32(PAGETRACE_REC_SESSION);
		put32(sizeof(ses));
		put(&ses, sizeof(ses));
		put32(PAGETRACE_REC_END);
		put32(0);
	}

	while (done < nev) {
		unsigned int id = rnd() % ncpu;
		struct cpu *c = &cpus[id];
		uint64_t x = rnd();

		c->t += 50 + x % 400;
		if (x % 2000000 == 7)
			c->t += 300000000;	/* an idle stretch */
		if (x % 100000 == 3)
			c->lost += 1 + x % 500;
		if (nlive && x % 50000 == 11) {
			/* A reclaim burst: a run of live blocks goes. */
			unsigned int k = 16 + x % 200;

			while (k-- && nlive && done < nev) {
				unsigned int j = rnd() % nlive;
				struct blk b = live[j];

				live[j] = live[--nlive];
				range_set(b.pfn, 1ULL << b.order, false);
				if (c->t < b.t)
					c->t = b.t + 128;
				event(c, id, PAGETRACE_EV_RECLAIM, b.pfn, 1ULL << b.order);
				done++;
				c->t += 20;
			}
			continue;
		}
		if (nlive < LIVE_MAX / 2 || (nlive < LIVE_MAX && x % 2)) {
			unsigned int order = (x >> 8) % 16;
			uint64_t pfn;

			order = order < 8 ? 0 : order < 12 ? 1 : order < 14 ? 2 : (x >> 12) % 11;
			pfn = ZONE0_START + (x >> 20) % (ZONE1_END - ZONE0_START - 1024);
			pfn &= ~((1ULL << order) - 1);
			/* Taken: this time, no allocation (a rare miss). */
			if (!range_free(pfn, 1ULL << order))
				continue;
			range_set(pfn, 1ULL << order, true);
			live[nlive].pfn = pfn;
			live[nlive].t = c->t;
			live[nlive].order = order;
			nlive++;
			event(c, id, PAGETRACE_EV_ALLOC, pfn, 1ULL << order);
		} else {
			unsigned int j = (x >> 16) % nlive;
			struct blk b = live[j];

			live[j] = live[--nlive];
			range_set(b.pfn, 1ULL << b.order, false);
			if (c->t < b.t)
				c->t = b.t + 128;
			event(c, id, PAGETRACE_EV_FREE, b.pfn, 1ULL << b.order);
		}
		done++;
	}
	for (unsigned int i = 0; i < ncpu; i++)
		flush_cpu(&cpus[i], i);
	if (fclose(out)) {
		perror("gen_trace: close");
		return 1;
	}
	return 0;
}
