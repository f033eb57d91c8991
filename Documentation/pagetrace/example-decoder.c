// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal pagetrace v1 decoder: one line per event, in the format of
 * `pagetrace dump`.  It needs <linux/pagetrace.h> and libc, nothing else.
 *
 *   cc -I uapi -o example-decoder Documentation/pagetrace/example-decoder.c
 *   ./example-decoder [-t] trace.bin   (or: ./example-decoder [-t] < trace.bin)
 *
 * With -t each line ends with the event's task, as `pagetrace dump -t`
 * prints it: " tgid=N comm=NAME" (tgid -1 before a chunk's first task
 * record; NAME empty while no name is known, bytes outside 0x21..0x7e and
 * the backslash as \xHH).
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

/* Process names from name slices: tgid -> comm, open addressing. */
struct name {
	uint32_t	tgid;
	int		used;
	unsigned char	comm[PAGETRACE_COMM_LEN + 1];
};
static struct name *names;
static size_t names_cap, nr_names;

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

static struct name *name_slot(struct name *t, size_t cap, uint32_t tgid)
{
	size_t i = (tgid * 2654435761U) & (cap - 1);

	while (t[i].used && t[i].tgid != tgid)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* The last name a stream gives a tgid wins. */
static void name_set(uint32_t tgid, const unsigned char *comm)
{
	struct name *n;
	size_t i;

	if (2 * (nr_names + 1) > names_cap) {
		size_t cap = names_cap ? 2 * names_cap : 64;
		struct name *t = calloc(cap, sizeof(*t));

		if (!t)
			die("out of memory");
		for (i = 0; i < names_cap; i++)
			if (names[i].used)
				*name_slot(t, cap, names[i].tgid) = names[i];
		free(names);
		names = t;
		names_cap = cap;
	}
	n = name_slot(names, names_cap, tgid);
	nr_names += !n->used;
	n->used = 1;
	n->tgid = tgid;
	memcpy(n->comm, comm, PAGETRACE_COMM_LEN);
}

static void print_task(int64_t task)
{
	const struct name *n = NULL;
	const unsigned char *c;

	if (task >= 0 && names_cap) {
		n = name_slot(names, names_cap, (uint32_t)task);
		n = n->used ? n : NULL;
	}
	printf(" tgid=%lld comm=", (long long)task);
	for (c = n ? n->comm : (const unsigned char *)""; *c; c++) {
		if (*c > 0x20 && *c < 0x7f && *c != '\\')
			putchar(*c);
		else
			printf("\\x%02x", *c);
	}
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
	unsigned char comm[PAGETRACE_COMM_LEN];
	unsigned int slices;	/* of the name being read */
	int tasks = argc > 1 && !strcmp(argv[1], "-t");
	int64_t task;		/* tgid of the chunk's last task record */
	unsigned char *buf;

	if (tasks) {
		argc--;
		argv++;
	}
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
		task = -1;
		slices = 0;
		for (i = 2; i < nr; i++) {
			w = le(buf + 8 * i, 8);
			if (pagetrace_word_is_name(w)) {	/* a slice of a name */
				if (!slices)
					memset(comm, 0, sizeof(comm));
				if (pagetrace_word_name_index(w) != slices ||
				    pagetrace_word_name_bytes(w, comm))
					die("bad name slice");
				slices++;
				continue;
			}
			if (pagetrace_word_is_pid(w)) {	/* a task record */
				if (!pagetrace_word_is_task(w))
					die("pid word inside a chunk");
				task = pagetrace_word_tgid(w);
				if (slices)	/* it takes the name before it */
					name_set(pagetrace_word_tgid(w), comm);
				slices = 0;
				continue;
			}
			if (slices)
				die("name not followed by a task record");
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
				printf("%15s cpu%u %-7s pfn=0x%llx npages=%llu", ts, cpu,
				       name[pagetrace_word_type(w)],
				       (unsigned long long)pagetrace_word_pfn(w),
				       (unsigned long long)npages);
				if (tasks)
					print_task(task);
				putchar('\n');
			}
		}
		if (slices)
			die("name cut off by the end of its chunk");
		if (!(flags & PAGETRACE_CHUNK_SNAPSHOT)) {
			last[cpu] = t;
			next_seq[cpu] = GET(pagetrace_chunk, c, seq) + 1;
		}
	}
	return 0;
}
