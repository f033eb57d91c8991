/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A synthetic trace writer for the tests: builds v1 streams in memory with
 * the uapi encoders, the way the module is meant to, and records the events
 * a correct reader must return for them.
 */
#ifndef PT_TESTS_SYNTH_H
#define PT_TESTS_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "libpagetrace.h"

struct synth_cpu {
	uint64_t	*words;
	unsigned int	nr;
	uint64_t	seq;
	uint64_t	lost;
	uint64_t	base;		/* time base of the open chunk, 128 ns steps */
	uint64_t	last;		/* latest time written, for clamping */
	int64_t		task;
	bool		snapshot;	/* the open chunk is a snapshot chunk */
	uint64_t	saved_last;	/* last outside the snapshot */
	struct pgtrace_event	*pending;	/* expected events of the open chunk */
	unsigned int	npending;
};

struct synth {
	unsigned char	*buf;
	size_t		len;
	size_t		cap;
	struct pagetrace_header hdr;
	unsigned int	max_words;	/* words a chunk holds */
	struct synth_cpu *cpus;
	struct pgtrace_event	*exp;		/* what the reader must return, in order */
	size_t		nexp;
	size_t		capexp;
	uint64_t	nsyncs;		/* sync words written after word 1 */
	/* Offsets of the stacks and filter records' payloads, 0 if none. */
	size_t		stacks_rec_off;
	size_t		filter_rec_off;
};

/*
 * With PAGETRACE_FLAG_STACKS in the flags, the header gets this stacks
 * record; with PAGETRACE_FLAG_FILTERED, a filter record keeping allocs
 * and frees of orders 0..3 on node 0 of cgroup 1234.
 */
#define SYNTH_RATE		64
#define SYNTH_ANCHOR_NAME	"_stext"
#define SYNTH_ANCHOR_ADDR	0xffffffff81000000ULL

/* A header with a release, one zone and a session record; start_ns = 1 s. */
void synth_init(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
		unsigned int flags);
/* The same with these zone records (node, zone, PFNs, present, name). */
/*
 * synth_init() with the kernel's start counters in the header, read at
 * @counters_ns: the end of the snapshot for the analysis.
 */
void synth_init_counted(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			unsigned int flags, uint64_t counters_ns);
void synth_init_zones(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
		      unsigned int flags, const struct pgtrace_zone *zones, unsigned int nr_zones);
/* Both: these zones, and the start counters (of the first zone) at @counters_ns. */
void synth_init_zones_counted(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			      unsigned int flags, const struct pgtrace_zone *zones,
			      unsigned int nr_zones, uint64_t counters_ns);
/*
 * synth_init_counted() with PAGETRACE_FLAG_SNAPSHOT and the snapshot
 * header record @snap (host byte order; NULL: none).
 */
void synth_init_snapshot_rec(struct synth *s, unsigned int nr_cpus, unsigned int chunk_size,
			     uint64_t counters_ns, const struct pagetrace_rec_snapshot *snap);
void synth_free(struct synth *s);

/* t is clamped up to the CPU's last time, as a writer must. */
void synth_event(struct synth *s, unsigned int cpu, uint64_t t, unsigned int type,
		 uint64_t pfn, uint64_t npages);
void synth_task(struct synth *s, unsigned int cpu, uint32_t tgid);
/*
 * A named task record: the name slices of @comm (NUL-padded or cut to
 * PAGETRACE_COMM_LEN bytes), then the task record of @tgid.
 */
void synth_name(struct synth *s, unsigned int cpu, uint32_t tgid, const char *comm);
/* Close the CPU's open chunk (no-op if none) with these chunk flags. */
void synth_flush(struct synth *s, unsigned int cpu, unsigned int flags);
void synth_flush_all(struct synth *s);
/* Start a snapshot chunk on @cpu; synth_flush() ends it. */
void synth_snapshot(struct synth *s, unsigned int cpu);

/* Define stack @id on @cpu: a DEF word and @depth FRAME words. */
void synth_stack_def(struct synth *s, unsigned int cpu, uint32_t id, unsigned int depth,
		     bool cut, const uint64_t *frames);
/*
 * A sampled allocation: a SAMPLE word naming stack @id (0: unknown) and
 * the alloc event; the expected event has stack @id (PGTRACE_STACK_UNKNOWN
 * for 0).  The stack must be defined in the CPU's open chunk, so
 * synth_stack_def() and this should go in the same chunk (@room words
 * are reserved by synth_stack_def for that).
 */
void synth_sample(struct synth *s, unsigned int cpu, uint64_t t, uint32_t id,
		  uint64_t pfn, uint64_t npages);
/*
 * A symbol chunk naming @n addresses: @names[i] at @addrs[i], @offsets[i]
 * bytes into its function.
 */
void synth_symbols(struct synth *s, unsigned int n, const uint64_t *addrs,
		   const char *const *names, const uint64_t *offsets);

/* Raw pieces, for corrupting. */
void synth_put(struct synth *s, const void *p, size_t n);
void synth_put_chunk(struct synth *s, unsigned int cpu, unsigned int flags,
		     uint64_t seq, uint64_t lost, const uint64_t *words, unsigned int n);

/* Write all of s->buf to @fd in pieces of 1..@max_piece bytes. */
int synth_write_slowly(int fd, const void *buf, size_t len, unsigned int max_piece,
		       unsigned int seed);

/* A small deterministic PRNG so failures reproduce. */
static inline uint64_t synth_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/*
 * For tests of the CLI: run @cmd with popen(), its stdout (at most
 * @len - 1 bytes) into @out, NUL-terminated; returns pclose()'s status or
 * -1.  synth_write_file() writes @n bytes to a new file at @path.
 */
int synth_run(const char *cmd, char *out, size_t len);
void synth_write_file(const char *path, const void *p, size_t n);



/*
 * Read @r to its end into a malloc'ed array (*evs, *n); returns the final
 * pgtrace_reader_next_batch() result: 0 or an error.  @batch 1 uses
 * pgtrace_reader_next().
 */
int synth_read_all(struct pgtrace_reader *r, unsigned int batch, struct pgtrace_event **evs,
		   size_t *n);
/*
 * Compare @n events against the first @n expected ones (all of them if
 * @exact); returns -1 if equal, else the first index that differs, with a
 * description in @why.
 */
long synth_compare(const struct synth *s, const struct pgtrace_event *got, size_t n,
		   bool exact, char *why, size_t whylen);

#endif
