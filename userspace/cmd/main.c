// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace: read pagetrace v1 streams.
 */
#include <stdio.h>
#include <string.h>
#include "cmd.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "dump",  cmd_dump,  "dump [-v] FILE      one line per event" },
	{ "stats", cmd_stats, "stats [--json] FILE counts by type, order and CPU" },
	{ "record", cmd_record, "record [-o FILE] [-d SECS] [--flight-recorder] [-- CMD]  record /dev/pagetrace (root)" },
	{ "convert", cmd_convert, "convert --to csv|perfetto|trace-cmd FILE   CSV, Chrome JSON trace events or trace.dat" },
	{ "report", cmd_report, "report FILE -o report.html    one HTML page with figures" },
	{ "symbolize", cmd_symbolize, "symbolize [--kallsyms PATH] FILE  append names of the stack frames" },
	{ "pprof", cmd_pprof, "pprof FILE -o OUT.pb.gz [--kallsyms PATH]  sampled stacks for go tool pprof" },
	{ "top", cmd_top, "top [-d SECS] [-n ITER] [-b] [--replay FILE [--speed X]]  live view (root), or a replay" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pagetrace [--help | --version] COMMAND [ARGS]\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %s\n", cmds[i].help);
	fprintf(f, "\nFILE is a pagetrace v1 stream, - for stdin, or a trace-cmd data file of kmem\n"
		   "page events (trace-cmd record -e kmem:mm_page_alloc -e kmem:mm_page_free\n"
		   "[-T]), read with libtracecmd: it has no snapshot and no reclaims (counted\n"
		   "as frees), as pagetrace then says; -T stacks of allocations become sampled\n"
		   "stacks (every allocation a sample).\n"
		   "Exit status: 0 ok, 1 unreadable or corrupt trace, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pagetrace %s (stream format v%d)\n", PGTRACE_VERSION_STRING,
		       PAGETRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "pagetrace: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
