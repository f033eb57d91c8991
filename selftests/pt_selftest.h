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

#endif /* PT_SELFTEST_H */
