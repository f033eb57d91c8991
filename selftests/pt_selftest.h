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

/*
 * How late past two flush periods an event may reach a waiting reader:
 * the flush timer delivers after about flush_ms (255-280 ms for 250 in
 * the logs), but a TCG guest on a busy host can stall for a good part of
 * a second.  A reader that is never woken still fails.
 */
#define PT_ST_LATE_MS	3000

/* A whole session, decoded. */
struct pt_st_trace {
	struct pagetrace_header	hdr;
	unsigned int		backend;	/* from the session record */
	unsigned int		clock_error_ns;	/* likewise */
	unsigned int		uncovered;	/* likewise */
	struct pgtrace_event		*ev;
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
/*
 * Write @value to /sys/module/pagetrace/parameters/@name: 0, or -errno of
 * the open or write (a value the module refuses is -EINVAL).
 */
int pt_st_set_param(const char *name, const char *value);
/* The same for a parameter of any @module (pagetrace_gt.ko's, say). */
int pt_st_set_module_param(const char *module, const char *name,
			   const char *value);

/*
 * The raw stream, for tests that check the words the module wrote:
 * pt_st_header_record() finds the first header record of @type (its
 * payload, *@size bytes) or returns NULL; pt_st_next_chunk() steps *@off
 * (0 to start) from chunk to chunk: 1 with *@c set, 0 at the end, -1 if a
 * chunk runs past @len.
 */
const void *pt_st_header_record(const void *stream, size_t len, uint32_t type,
				uint32_t *size);
int pt_st_next_chunk(const void *stream, size_t len, size_t *off,
		     const struct pagetrace_chunk **c);

/*
 * Kernel addresses, as root sees them: pt_st_ksym() gives [start, end) of
 * the function @name from /proc/kallsyms (end: the next symbol's
 * address), pt_st_module_text() the span of a loaded module from
 * /proc/modules.  0 or -ENOENT.
 */
int pt_st_ksym(const char *name, uint64_t *start, uint64_t *end);
int pt_st_module_text(const char *mod, uint64_t *start, uint64_t *end);
/*
 * Free the pages munmap() left in the CPUs' LRU batches: drain every
 * CPU's (mbind() with MPOL_MF_MOVE), then write 1 to drop_caches.
 * 0 or -errno.
 */
int pt_st_drain_lru(void);
/* Run on @cpu only: 0 or -errno. */
int pt_st_pin_cpu(int cpu);
/* The PFN behind a virtual address of ours: 0, -ENOENT if not present. */
int pt_st_pagemap_pfn(const void *addr, uint64_t *pfn);
uint64_t pt_st_mono_ns(void);
/* A CLOCK_MONOTONIC time on the trace clock, by the header's pair. */
uint64_t pt_st_mono_to_trace(const struct pagetrace_header *h, uint64_t mono);

/*
 * Loading and unloading pagetrace.ko ($PAGETRACE_KO, else ./pagetrace.ko
 * if present, else modprobe pagetrace): 0 or -errno; @params is the
 * module's parameters, "name=value" separated by spaces, or NULL.  pt_st_mod_reload() unloads it if loaded,
 * loads it with @params and waits for /dev/pagetrace.
 */
/* $PAGETRACE_KO, else ./pagetrace.ko if there is one, else NULL (modprobe). */
const char *pt_st_ko_path(void);
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
