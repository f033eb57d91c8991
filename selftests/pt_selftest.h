/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the pagetrace selftests that check traces against
 * pages of known fate: running pagetrace_gt.ko's operations, collecting a
 * whole session, and reading PFNs from /proc/self/pagemap.
 */
#ifndef PT_SELFTEST_H
#define PT_SELFTEST_H

#include <stddef.h>
#include <stdint.h>
#include <linux/pagetrace.h>
#include "libpagetrace.h"

#define PT_GT_DIR	"/sys/kernel/debug/pagetrace_gt"

/* A whole session, decoded. */
struct pt_st_trace {
	struct pagetrace_header	hdr;
	unsigned int		backend;	/* from the session record */
	struct pt_event		*ev;
	size_t			nr;
	char			err[256];	/* why collecting failed */
};

/* Read @fd to its end into a malloc'ed buffer of *@len bytes, or NULL. */
void *pt_st_read_all(int fd, size_t *len);

/* Stop the session on @dev, read it to the end and decode it: 0 or -errno. */
int pt_st_collect(int dev, struct pt_st_trace *t);
void pt_st_trace_free(struct pt_st_trace *t);

/* Load pagetrace_gt.ko ($PAGETRACE_GT_KO, default ./pagetrace_gt.ko). */
int pt_st_gt_load(void);
/* Run one of its operations; its report goes to @report.  0 or -errno. */
int pt_st_gt_run(const char *op, char *report, size_t len);

/* Choose the backend (hook=) of the next session: 0 or -errno. */
int pt_st_set_hook(const char *hook);
/* Run on @cpu only: 0 or -errno. */
int pt_st_pin_cpu(int cpu);
/* The PFN behind a virtual address of ours: 0, -ENOENT if not present. */
int pt_st_pagemap_pfn(const void *addr, uint64_t *pfn);
uint64_t pt_st_mono_ns(void);
/* A CLOCK_MONOTONIC time on the trace clock, by the header's pair. */
uint64_t pt_st_mono_to_trace(const struct pagetrace_header *h, uint64_t mono);

/*
 * Loading and unloading pagetrace.ko ($PAGETRACE_KO, default
 * ./pagetrace.ko): 0 or -errno.  pt_st_mod_reload() unloads it if loaded,
 * loads it with @params and waits for /dev/pagetrace.
 */
int pt_st_mod_load(const char *params);
int pt_st_mod_unload(void);
int pt_st_mod_reload(const char *params);
int pt_st_mod_loaded(void);

/*
 * The kernel log: pt_st_kmsg_open() returns an fd positioned at the end;
 * pt_st_kmsg_splats() reads what was logged since and copies the lines
 * that show a kernel problem (BUG, WARNING, KASAN, lockdep, sleeping in
 * atomic context, suspicious RCU usage, Oops, Call Trace) to @out.
 * Returns how many there were.
 */
int pt_st_kmsg_open(void);
int pt_st_kmsg_splats(int fd, char *out, size_t len);

/* PAGETRACE_IOC_STATS for @nr CPUs: 0 or -errno; @missed may be NULL. */
int pt_st_stats(int dev, struct pagetrace_cpu_stats *cpus, unsigned int nr,
		uint64_t *missed);

#endif /* PT_SELFTEST_H */
