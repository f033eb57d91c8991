// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal pagetrace v1 decoder: one line per event, in the format of
 * `pagetrace dump`.  It needs <linux/pagetrace.h> and libc, nothing else.
 *
 *   cc -I uapi -o example-decoder Documentation/pagetrace/example-decoder.c
 *   ./example-decoder trace.bin        (or: ./example-decoder < trace.bin)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/pagetrace.h>

/* Field f of struct s at p, whatever its size, read as little-endian. */
#define GET(s, p, f) le((p) + offsetof(struct s, f), sizeof(((struct s *)0)->f))

static FILE *in;
static unsigned long long off;	/* stream offset, for messages */

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void die(const char *why)
{
	fflush(stdout);
	fprintf(stderr, "example-decoder: offset %llu: %s\n", off, why);
	exit(1);
}

/* Read n bytes; 0 only at a clean end of file, if eof_ok. */
static int get(unsigned char *buf, size_t n, int eof_ok)
{
	size_t got = fread(buf, 1, n, in);

	if (!got && eof_ok && feof(in))
		return 0;
	if (got != n)
		die("truncated stream");
	off += n;
	return 1;
}

int main(int argc, char **argv)
{
	static const char *const name[] = { "sync", "alloc", "free", "reclaim" };
	unsigned char h[sizeof(struct pagetrace_header)];
	unsigned char c[sizeof(struct pagetrace_chunk)];
	uint64_t start, *last, *next_seq, base, t, w, npages;
	uint32_t hsize, nr_cpus, csize, hflags, nr, cpu, flags, i;
	unsigned char *buf;

	in = argc > 1 ? fopen(argv[1], "rb") : stdin;
	if (!in)
		die("cannot open input");
	get(h, sizeof(h), 0);
	if (memcmp(h, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN) ||
	    GET(pagetrace_header, h, version) != PAGETRACE_VERSION ||
	    GET(pagetrace_header, h, time_lost_bits) != PAGETRACE_TIME_LOST_BITS ||
	    GET(pagetrace_header, h, time_delta_bits) != PAGETRACE_TIME_DELTA_BITS)
		die("not a pagetrace v1 stream");
	hsize = GET(pagetrace_header, h, header_size);
	nr_cpus = GET(pagetrace_header, h, nr_cpus);
	csize = GET(pagetrace_header, h, chunk_size);
	hflags = GET(pagetrace_header, h, flags);
	start = GET(pagetrace_header, h, start_ns);
	if (hsize < sizeof(h) || hsize % 8 || !nr_cpus || nr_cpus > 65536 ||
	    csize < sizeof(c) + 16)
		die("bad header");
	buf = malloc(hsize > csize ? hsize : csize);
	last = calloc(nr_cpus, sizeof(*last));
	next_seq = calloc(nr_cpus, sizeof(*next_seq));
	if (!buf || !last || !next_seq)
		die("out of memory");
	get(buf, hsize - sizeof(h), 0);		/* header records: not needed here */

	while (get(c, sizeof(c), 1)) {
		cpu = GET(pagetrace_chunk, c, cpu);
		flags = GET(pagetrace_chunk, c, flags);
		nr = GET(pagetrace_chunk, c, nr_words);
		if (memcmp(c, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN) ||
		    cpu >= nr_cpus || nr < 2 || sizeof(c) + 8ULL * nr > csize ||
		    GET(pagetrace_chunk, c, reserved))
			die("bad chunk header");
		if (flags & PAGETRACE_CHUNK_SNAPSHOT) {
			if (GET(pagetrace_chunk, c, seq))
				die("snapshot chunk with seq != 0");
		} else if (GET(pagetrace_chunk, c, seq) < next_seq[cpu] ||
			   (GET(pagetrace_chunk, c, seq) > next_seq[cpu] &&
			    !(hflags & PAGETRACE_FLAG_OVERWRITE))) {
			die("chunk seq out of order");	/* gaps only when OVERWRITE */
		}
		get(buf, 8 * nr, 0);
		w = le(buf, 8);
		if (!pagetrace_word_is_pid(w) || pagetrace_word_id(w) != cpu)
			die("chunk does not start with pid(cpu)");
		w = le(buf + 8, 8);
		if (w & (PAGETRACE_TYPE_MASK | PAGETRACE_IS_PID))
			die("chunk word 1 is not a sync word");
		base = pagetrace_word_sync_ns(w);
		/* Snapshot chunks keep their own time line. */
		t = flags & PAGETRACE_CHUNK_SNAPSHOT ? base : last[cpu];
		if (base < t)
			die("time goes backwards");
		t = base;
		for (i = 2; i < nr; i++) {
			w = le(buf + 8 * i, 8);
			if (pagetrace_word_is_name(w)) {	/* name record: skip */
				if (i + PAGETRACE_NAME_WORDS > nr)
					die("name record cut off");
				i += PAGETRACE_NAME_WORDS - 1;
				continue;
			}
			if (pagetrace_word_is_pid(w)) {	/* a task record: skip */
				if (!pagetrace_word_is_task(w))
					die("pid word inside a chunk");
				continue;
			}
			if (!pagetrace_word_type(w)) {	/* sync: a new time base */
				base = pagetrace_word_sync_ns(w);
				if (base < t)
					die("time goes backwards");
				t = base;
				continue;
			}
			npages = pagetrace_word_npages(w);
			if (pagetrace_word_is_large(w)) {
				if (++i == nr)
					die("large event without its npages word");
				npages = le(buf + 8 * i, 8);
			}
			if (base + pagetrace_word_delta_ns(w) < t)
				die("time goes backwards");
			t = base + pagetrace_word_delta_ns(w);
			{
				uint64_t d = t < start ? start - t : t - start;
				char ts[32];

				snprintf(ts, sizeof(ts), "%s%llu.%09llu", t < start ? "-" : "",
					 (unsigned long long)(d / 1000000000),
					 (unsigned long long)(d % 1000000000));
				printf("%15s cpu%u %-7s pfn=0x%llx npages=%llu\n", ts, cpu,
				       name[pagetrace_word_type(w)],
				       (unsigned long long)pagetrace_word_pfn(w),
				       (unsigned long long)npages);
			}
		}
		if (!(flags & PAGETRACE_CHUNK_SNAPSHOT)) {
			last[cpu] = t;
			next_seq[cpu] = GET(pagetrace_chunk, c, seq) + 1;
		}
	}
	return 0;
}
