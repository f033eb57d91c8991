/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flight recorder triggers (pagetrace record --trigger EXPR): what fires a
 * dump of the mapped buffers to a new file.  Parsing is separate from
 * arming, so that a bad expression is a usage error before the device is
 * opened, and so that the parser can be tested on the host.
 */
#ifndef PAGETRACE_TRIGGER_H
#define PAGETRACE_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRIGGER_MAX		16
#define TRIGGER_PATH_MAX	512
/* The kernel's PSI trigger limits (kernel/sched/psi.c: psi_trigger_create()). */
#define TRIGGER_PSI_WIN_MIN_US	500000ULL
#define TRIGGER_PSI_WIN_MAX_US	10000000ULL
/* How often the oom trigger reads /proc/vmstat. */
#define TRIGGER_OOM_POLL_MS	100
/* How often the inuse trigger reads the session's page counters. */
#define TRIGGER_INUSE_POLL_MS	100

struct pgtrace_ring;

enum trigger_kind {
	TRIGGER_SIGNAL,		/* SIGUSR1 */
	TRIGGER_OOM,		/* /proc/vmstat oom_kill went up */
	TRIGGER_PSI,		/* a PSI trigger on a memory pressure file */
	TRIGGER_INUSE,		/* the trace's pages in use went above a limit */
};

struct trigger {
	enum trigger_kind kind;
	char		expr[64];		/* as given, for the file's record */
	/* psi */
	bool		full;			/* "full", else "some" */
	uint64_t	stall_us;
	uint64_t	window_us;
	char		path[TRIGGER_PATH_MAX];	/* the pressure file */
	/* inuse */
	uint64_t	inuse_limit;		/* pages; fires above it */
	/* armed state */
	int		fd;			/* psi: the pressure file, else -1 */
	uint64_t	oom_kills;		/* oom: the counter when last read */
	/* inuse: the session, set by the caller before trigger_arm() */
	const struct pgtrace_ring *ring;
	bool		above;			/* inuse: fired, not re-armed yet */
	int64_t		inuse_seen;		/* inuse: the count last read */
};

/* The trigger's short name for file names: "signal", "oom", "psi", "inuse". */
const char *trigger_name(const struct trigger *t);

/*
 * Parse @expr into @t (not armed: fd -1).  On error returns -EINVAL and
 * puts why into @err (@len bytes), e.g. "psi window 100 us is out of
 * range (500000 .. 10000000)".
 */
int trigger_parse(const char *expr, struct trigger *t, char *err, size_t len);

/*
 * Arm @t: a PSI trigger is written to its pressure file, oom reads the
 * counter's current value, inuse checks that @t->ring (the caller's
 * mapped session) counts pages and has a memory map at start.  0 or
 * -errno, with why in @err.
 */
int trigger_arm(struct trigger *t, char *err, size_t len);
void trigger_disarm(struct trigger *t);

/*
 * Whether @t fired since the last call.  @revents: poll()'s result for
 * t->fd (0 if not polled).  Signals are the caller's.  Returns 1 fired,
 * 0 not, -errno when it can no longer fire (the cgroup went away).
 * @detail (@len bytes) says what was seen, e.g. "oom_kill 3 -> 4".
 *
 * inuse fires once per crossing: when a check finds the count above the
 * limit and the previous one did not (the first check after arming
 * counts as a crossing if the count is above already); it is re-armed by
 * a check that finds the count at or below the limit.
 */
int trigger_check(struct trigger *t, short revents, char *detail, size_t len);

/* /proc/vmstat's oom_kill: 0 or -errno (the kernel predates it: -ENOENT). */
int trigger_read_oom_kills(uint64_t *n);

/* ---- trigger_file.c: the files a trigger writes ---- */

/*
 * What a triggered dump covers, from decoding it: the first and last event
 * after the memory map at start (trace clock ns; 0 if none), their number,
 * and the reader's lost and missing counts.  Times on CLOCK_MONOTONIC and
 * CLOCK_REALTIME come from the header's start_mono_ns and the offset
 * @mono_to_real_ns.
 */
struct trigger_span {
	uint64_t	first_ns, last_ns;
	uint64_t	events, lost, missing_chunks;
	uint64_t	start_ns, start_mono_ns;	/* the header's */
};

/*
 * The file for dump number @n of @t, fired at @when (CLOCK_REALTIME, s):
 * DIR/pagetrace-YYYYmmdd-HHMMSS-NAME-N.bin.  0 or -ENAMETOOLONG.
 */
int trigger_file_path(char *buf, size_t len, const char *dir, const struct trigger *t,
		      unsigned int n, int64_t when);
/* Decode @path to the end into @s: 0, or -errno with why in @err. */
int trigger_file_span(const char *path, struct trigger_span *s, char *err, size_t len);

/* What the sidecar DIR/NAME.json says about one dump. */
struct trigger_record {
	const struct trigger	*t;
	const char		*bin;		/* the trace file's path */
	const char		*detail;	/* trigger_check()'s */
	int64_t			inuse_pages;	/* inuse: the count that fired it */
	unsigned int		n;		/* dump number, from 1 */
	unsigned int		coalesced;	/* firings while --post ran */
	double			post_s;
	uint64_t		fired_mono_ns, frozen_mono_ns;
	int64_t			mono_to_real_ns;	/* REALTIME - MONOTONIC */
	uint64_t		bytes;
	const struct trigger_span *span;
};
/* Write @rec as BIN's ".json" sidecar (atomically: tmp + rename): 0 or -errno. */
int trigger_write_json(const struct trigger_record *rec);
/*
 * Keep the newest @max dumps in @dir (pagetrace-*.bin by mtime, then
 * name): older ones are removed with their sidecars.  Returns how many
 * were removed, or -errno.
 */
int trigger_prune(const char *dir, unsigned int max);

#endif
