// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace dump: one greppable line per event.  Everything that is not an
 * event (header, chunk boundaries, task records; only with -v) starts with
 * '#', so `grep -v '^#'` always leaves just the events.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"

static void dump_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace dump [-v] [-t] [-S] [--go] FILE\n"
		   "  -v, --verbose  also print the header, chunk boundaries and task records\n"
		   "  -t, --tasks    end each event line with its task: tgid=N comm=NAME\n"
		   "  -S, --stacks   after each sampled allocation (stack=ID), its frames:\n"
		   "                 '#   0xADDRESS name+0xOFFSET' lines, innermost first\n"
		   "  -g, --go       FILE is a Go runtime page trace (GODEBUG=pagetrace):\n"
		   "                 lines show the P and the address instead of the PFN\n");
}

/*
 * " tgid=N comm=NAME": the tgid of the event's task record (-1 before
 * one), its last name so far (empty if none), bytes outside 0x21..0x7e
 * and the backslash as \xHH, so that the line splits on spaces.
 */
static void print_task(const struct pgtrace_reader *r, int64_t task)
{
	const char *n = pgtrace_reader_task_name(r, task);

	printf(" tgid=%" PRId64 " comm=", task);
	for (const unsigned char *c = (const unsigned char *)(n ? n : ""); *c; c++) {
		if (*c > 0x20 && *c < 0x7f && *c != '\\')
			putchar(*c);
		else
			printf("\\x%02x", *c);
	}
}

/* Where names come from: a first pass over the file (symbols come last). */
static struct pgtrace_reader *sym_src;

/*
 * The frames of stack @id, innermost first, with the names of the trace's
 * symbol chunks (for stdin, only those read so far).
 */
static void print_stack(const struct pgtrace_reader *r, uint32_t id)
{
	const uint64_t *frames;
	int cut, depth = pgtrace_reader_stack(r, id, &frames, &cut);

	if (depth < 0) {
		printf("#   (stack not known)\n");
		return;
	}
	for (int i = 0; i < depth; i++) {
		uint64_t off;
		const char *name = pgtrace_reader_symbol(sym_src ? sym_src : r, frames[i], &off);

		if (name)
			printf("#   0x%016" PRIx64 " %s+0x%" PRIx64 "\n", frames[i], name, off);
		else
			printf("#   0x%016" PRIx64 "\n", frames[i]);
	}
	if (cut)
		printf("#   (cut at max_depth)\n");
}

static int print_chunk(const struct pgtrace_chunk *c, void *arg)
{
	(void)arg;
	if (arg) {
		/* Go: a P's buffer, its length not known until the next one. */
		printf("# buffer offset=%" PRIu64 " p=%d seq=%" PRIu64 "\n", c->offset,
		       c->cpu == PGTRACE_CPU_NONE ? -1 : (int)c->cpu, c->seq);
		return 0;
	}
	printf("# chunk offset=%" PRIu64 " cpu=%u seq=%" PRIu64 " flags=0x%x nr_words=%u"
	       " lost=%" PRIu64 " missing=%" PRIu64 "\n", c->offset, c->cpu, c->seq,
	       c->flags, c->nr_words, c->lost, c->missing);
	return 0;
}

static void print_header(struct pgtrace_reader *r)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	const struct pgtrace_session *s = pgtrace_reader_session(r);
	const struct pgtrace_zone *z;
	unsigned int nz = pgtrace_reader_zones(r, &z);

	printf("# pagetrace v%u header_size=%u nr_cpus=%u page_shift=%u chunk_size=%u"
	       " flags=0x%x start_ns=%llu start_mono_ns=%llu start_real_ns=%llu\n",
	       h->version, h->header_size, h->nr_cpus, h->page_shift, h->chunk_size,
	       h->flags, (unsigned long long)h->start_ns,
	       (unsigned long long)h->start_mono_ns, (unsigned long long)h->start_real_ns);
	printf("# release %s\n", pgtrace_reader_kernel_release(r));
	for (unsigned int i = 0; i < nz; i++)
		printf("# zone node=%u zone=%u name=%s pfn=0x%" PRIx64 "-0x%" PRIx64
		       " present_pages=%" PRIu64 "\n", z[i].node, z[i].zone, z[i].name,
		       z[i].start_pfn, z[i].end_pfn, z[i].present_pages);
	if (!s)
		return;
	printf("# session nr_bufs=%u backend=%u flush_ms=%u attach_us=", s->nr_bufs,
	       s->backend, s->flush_ms);
	if (s->attach_us)
		printf("%u\n", s->attach_us);
	else
		printf("unknown\n");
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "tasks", no_argument, NULL, 't' },
		{ "stacks", no_argument, NULL, 'S' },
		{ "go", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	static char obuf[1 << 16];
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	bool verbose = false, go = false, tasks = false, stacks = false;
	const char *path;
	uint64_t start;
	int c, fd, sym_fd = -1, ret;

	while ((c = getopt_long(argc, argv, "vtSgh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 't':
			tasks = true;
			break;
		case 'S':
			stacks = true;
			break;
		case 'g':
			go = true;
			break;
		case 'h':
			dump_usage(stdout);
			return 0;
		default:
			dump_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		dump_usage(stderr);
		return EXIT_USAGE;
	}
	path = argv[optind];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));

	r = open_trace(path, (verbose ? PGTRACE_READER_TASKS : 0) | (go ? PGTRACE_READER_GO : 0), &fd);
	if (!r)
		return EXIT_TRACE;
	if (stacks && strcmp(path, "-")) {
		struct pgtrace_compact_event ce[256];
		const struct pgtrace_chunk *ch;

		sym_src = open_trace(path, 0, &sym_fd);
		/* An error shows again in the main pass, after the events before it. */
		while (sym_src && pgtrace_reader_next_run(sym_src, ce, 256, &ch) > 0)
			;
	}
	start = pgtrace_reader_header(r)->start_ns;
	if (verbose && go) {
		printf("# go page trace: page_shift 13, start_ns=%llu (first buffer)\n",
		       (unsigned long long)start);
		pgtrace_reader_set_chunk_cb(r, print_chunk, &go);
	} else if (verbose) {
		print_header(r);
		pgtrace_reader_set_chunk_cb(r, print_chunk, NULL);
	}
	while ((ret = pgtrace_reader_next(r, &ev)) > 0) {
		char t[32];

		fmt_rel_time(t, ev.time_ns, start);
		if (go)
			printf("%15s p%-3d %-8s addr=0x%" PRIx64 " npages=%" PRIu64 "\n", t,
			       ev.cpu == PGTRACE_CPU_NONE ? -1 : (int)ev.cpu,
			       ev.type == PGTRACE_EV_RECLAIM ? "scavenge" : pgtrace_event_type_name(ev.type),
			       ev.pfn << 13, ev.npages);
		else if (ev.type == PGTRACE_EV_TASK)
			printf("# task offset=%" PRIu64 " cpu=%u tgid=%" PRId64 " time=%s\n",
			       ev.offset, ev.cpu, ev.task, t);
		else
			printf("%15s cpu%u %-7s pfn=0x%" PRIx64 " npages=%" PRIu64, t,
			       ev.cpu, pgtrace_event_type_name(ev.type), ev.pfn, ev.npages);
		if (go || ev.type == PGTRACE_EV_TASK)
			continue;
		if (ev.stack == PGTRACE_STACK_UNKNOWN)
			printf(" stack=?");
		else if (ev.stack)
			printf(" stack=%u", ev.stack);
		if (tasks)
			print_task(r, ev.task);
		putchar('\n');
		if (stacks && ev.stack)
			print_stack(r, ev.stack);
	}
	/* Events come first, so a pipe shows them before the error. */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "pagetrace: write error: %s\n", strerror(errno));
		if (!ret)
			ret = -EIO;
	}
	if (ret < 0 && *pgtrace_reader_error(r))
		trace_error(path, r, ret);
	close_trace(r, fd);
	if (sym_src)
		close_trace(sym_src, sym_fd);
	return ret < 0 ? EXIT_TRACE : 0;
}
