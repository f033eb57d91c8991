// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace symbolize: name the frames of a trace's sampled stacks with a
 * kallsyms file, in symbol chunks appended to the trace.  pagetrace record
 * does the same at the end of a clean stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"

#define PROC_KALLSYMS	"/proc/kallsyms"

int open_kallsyms(const char *path, const struct pagetrace_rec_stacks *st,
		  struct pgtrace_kallsyms **out, bool quiet)
{
	char anchor[sizeof(st->anchor_name) + 1];
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (!quiet)
			fprintf(stderr, "pagetrace: %s: %s\n", path, strerror(errno));
		return ret;
	}
	ret = pgtrace_kallsyms_open(out, fd);
	close(fd);
	if (ret) {
		if (quiet)
			return ret;
		if (ret == -EPERM)
			fprintf(stderr, "pagetrace: %s: every address is 0: it was read without "
				"the right to see kernel addresses (run as root, or lower "
				"kernel.kptr_restrict)\n", path);
		else if (ret == -ENODATA)
			fprintf(stderr, "pagetrace: %s: no text symbols: not a kallsyms file\n",
				path);
		else
			fprintf(stderr, "pagetrace: %s: %s\n", path, strerror(-ret));
		return ret;
	}
	ret = pgtrace_kallsyms_check(*out, st);
	if (ret) {
		if (!quiet) {
			memcpy(anchor, st->anchor_name, sizeof(st->anchor_name));
			anchor[sizeof(st->anchor_name)] = '\0';
			if (ret == -ESTALE)
				fprintf(stderr, "pagetrace: %s: does not match the traced kernel: "
					"%s is not at 0x%" PRIx64 " there (another boot or "
					"another kernel; KASLR moves addresses)\n", path, anchor,
					(uint64_t)st->anchor_addr);
			else
				fprintf(stderr, "pagetrace: %s: has no symbol '%s' to check it "
					"against the traced kernel\n", path, anchor);
		}
		pgtrace_kallsyms_close(*out);
		*out = NULL;
	}
	return ret;
}

/* Decode @path to its end; the reader (kept open) and its fd. */
static struct pgtrace_reader *drain_trace(const char *path, int *fd)
{
	struct pgtrace_compact_event ce[256];
	const struct pgtrace_chunk *c;
	struct pgtrace_reader *r;
	int ret;

	r = open_trace(path, 0, fd);
	if (!r)
		return NULL;
	while ((ret = pgtrace_reader_next_run(r, ce, 256, &c)) > 0)
		;
	if (ret < 0) {
		trace_error(path, r, ret);
		close_trace(r, *fd);
		return NULL;
	}
	return r;
}

int symbolize_file(const char *path, const char *kallsyms, bool from_record)
{
	const char *pfx = from_record ? "pagetrace: warning: no symbols appended: " :
					"pagetrace: ";
	struct pgtrace_kallsyms *k = NULL;
	uint64_t *addrs = NULL, bytes;
	struct pgtrace_reader *r;
	size_t n, len = 0;
	void *buf = NULL;
	int fd, out, ret = EXIT_TRACE, named;

	r = drain_trace(path, &fd);
	if (!r)
		return EXIT_TRACE;
	if (!pgtrace_reader_stacks(r)) {
		if (!from_record)
			fprintf(stderr, "%s%s: the trace has no call stacks "
				"(PAGETRACE_FLAG_STACKS)\n", pfx, path);
		ret = from_record ? 0 : EXIT_TRACE;
		goto out;
	}
	if (pgtrace_reader_counters(r)->symbol_chunks) {
		fprintf(stderr, "%s%s: the trace has symbols already\n", pfx, path);
		goto out;
	}
	bytes = pgtrace_reader_counters(r)->bytes;
	if (pgtrace_reader_stack_addrs(r, &addrs, &n)) {
		fprintf(stderr, "%s%s\n", pfx, strerror(ENOMEM));
		goto out;
	}
	if (!n) {
		if (!from_record)
			printf("%s: no stack was sampled: nothing to name\n", path);
		ret = 0;
		goto out;
	}
	if (from_record)
		fprintf(stderr, "pagetrace: naming %zu frame addresses from %s\n", n,
			kallsyms);
	if (open_kallsyms(kallsyms, pgtrace_reader_stacks(r), &k, false))
		goto out;
	named = pgtrace_symbol_chunks(k, addrs, n, &buf, &len);
	if (named < 0) {
		fprintf(stderr, "%s%s\n", pfx, strerror(-named));
		goto out;
	}
	out = open(path, O_WRONLY | O_CLOEXEC);
	if (out < 0 || lseek(out, (off_t)bytes, SEEK_SET) != (off_t)bytes ||
	    (len && write(out, buf, len) != (ssize_t)len) || fsync(out)) {
		fprintf(stderr, "%s%s: %s\n", pfx, path, strerror(errno));
		if (out >= 0)
			close(out);
		goto out;
	}
	if (close(out)) {
		fprintf(stderr, "%s%s: %s\n", pfx, path, strerror(errno));
		goto out;
	}
	if (!from_record)
		printf("%s: named %d of %zu frame addresses (%zu bytes of symbols)\n", path,
		       named, n, len);
	ret = 0;
out:
	free(buf);
	free(addrs);
	pgtrace_kallsyms_close(k);
	close_trace(r, fd);
	return ret;
}

static void symbolize_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace symbolize [--kallsyms PATH] FILE\n"
		   "  append the names of FILE's stack frames to FILE (symbol chunks)\n"
		   "  -k, --kallsyms PATH  the traced kernel's symbols (default "
		   PROC_KALLSYMS ");\n"
		   "                       checked against the trace's anchor address\n");
}

int cmd_symbolize(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	const char *kallsyms = PROC_KALLSYMS;
	int c;

	while ((c = getopt_long(argc, argv, "k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kallsyms = optarg;
			break;
		case 'h':
			symbolize_usage(stdout);
			return 0;
		default:
			symbolize_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !strcmp(argv[optind], "-")) {
		symbolize_usage(stderr);
		return EXIT_USAGE;
	}
	return symbolize_file(argv[optind], kallsyms, false);
}
