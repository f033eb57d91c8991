/* SPDX-License-Identifier: GPL-2.0 */
#ifndef PAGETRACE_CMD_H
#define PAGETRACE_CMD_H

#include <stdbool.h>
#include <stdio.h>
#include "libpagetrace.h"

/* Exit codes: 1 for a bad or unreadable trace, 2 for a bad command line. */
#define EXIT_TRACE	1
#define EXIT_USAGE	2

int cmd_dump(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
int cmd_top(int argc, char **argv);
/*
 * Append symbol chunks naming the stack frames of the trace at @path, from
 * the kallsyms file @kallsyms (symbolize.c).  @from_record: quietly do
 * nothing for traces without stacks, and word failures as warnings.
 * Returns 0 or an exit code.
 */
int symbolize_file(const char *path, const char *kallsyms, bool from_record);
/*
 * Read the kallsyms file @path and check it against the trace's stacks
 * record; prints why not unless @quiet.  0 with *@out set, or -errno.
 */
int open_kallsyms(const char *path, const struct pagetrace_rec_stacks *st,
		  struct pgtrace_kallsyms **out, bool quiet);
/* stats --by task (bytask.c): print per-process totals; 0 or -errno. */
int stats_by_task(struct pgtrace_reader *r, const char *path, bool json);
/*
 * stats --reclaim (reclaim.c): reclaim by allocating task and stack, and
 * with @list every reclaim part; 0 or -errno.
 */
int stats_reclaim(struct pgtrace_reader *r, const char *path, bool json, bool list);
/* A duration for tables: "950 ns", "12.5 us", "3.2 ms", "1.5 s" (@buf >= 32 bytes). */
void fmt_ns(char *buf, uint64_t ns);
void stats_kernel_counts(const struct pgtrace_reader *r, const struct pgtrace_analysis *a,
			 bool json);
/* The same check as a section of the HTML report (kcounts.c). */
void report_kernel_counts(FILE *f, const struct pgtrace_reader *r, const struct pgtrace_analysis *a);

/*
 * Per-process totals (bytask.c), collected by an analysis run with
 * by_task_event() and by_task_change() as its hooks (arg: the by_task).
 * tgid 0 is the kernel, -1 events before any task record.
 */
struct task_stats {
	int64_t		tgid;
	uint64_t	events[4];	/* by PGTRACE_EV_* */
	uint64_t	pages[4];
	uint64_t	in_use;		/* pages it allocated still in use */
	/* convert --to perfetto: in_use when last written to its log */
	uint64_t	sampled;
	bool		used;
};
struct by_task;
struct by_task *by_task_new(void);
int by_task_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg);
void by_task_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
		    unsigned int order, void *arg);
/* The tasks, most pages allocated first: malloc'ed, *n entries; NULL if no memory. */
struct task_stats *by_task_list(const struct by_task *b, size_t *n);
void by_task_free(struct by_task *b);
/* Call @fn on every task seen so far, in no order; it may change ->sampled. */
void by_task_each(struct by_task *b, void (*fn)(struct task_stats *t, void *arg), void *arg);
/* A task's name for tables: its comm, "[kernel]", "[unknown]" or "?". */
const char *task_name(const struct pgtrace_reader *r, int64_t tgid);

/*
 * Open FILE ("-" is stdin) and read its header.  On failure prints
 * "pagetrace: FILE: why" and returns NULL; *fd is closed then.
 */
struct pgtrace_reader *open_trace(const char *path, unsigned int flags, int *fd);
void close_trace(struct pgtrace_reader *r, int fd);
/* Report a reader error the way every subcommand does. */
void trace_error(const char *path, struct pgtrace_reader *r, int err);
/*
 * Print @s to stdout as a JSON string, quotes included.  Task names are
 * bytes, not necessarily UTF-8: a byte outside printable ASCII becomes
 * \u00XX, so the output is always valid JSON and the bytes can be had
 * back.
 */
void json_str(const char *s);
/* Signed seconds.nanoseconds of @ns - @start, into @buf (>= 32 bytes). */
void fmt_rel_time(char *buf, uint64_t ns, uint64_t start);

/*
 * An 8-bit palette PNG of @w x @h pixels (row-major palette indices), in a
 * malloc'ed buffer; 0 or -ENOMEM.
 */
int png_indexed(const uint8_t *pix, unsigned int w, unsigned int h,
		const uint8_t (*pal)[3], unsigned int npal, unsigned char **out,
		size_t *outlen);
void base64_write(FILE *f, const unsigned char *p, size_t n);

#endif
