/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pagetrace top: the live view.  Split in three:
 *
 *   top_model.c  accounting: fed the analysis' hooks in time order, it
 *                keeps running totals and, at each cut, turns what
 *                changed since the previous cut into a struct top_frame
 *   top_draw.c   a frame as lines of text, for a terminal or for -b
 *   top_term.c   the terminal: raw mode, the alternate screen, keys,
 *                its size, and putting it all back on the way out
 *   top.c        the command: options, replay of a file, the live
 *                session's feeder (ring to pipe) and analyzer thread
 */
#ifndef PAGETRACE_TOP_H
#define PAGETRACE_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include "cmd.h"

/* Stacks a frame lists, most sampled pages in the interval first. */
#define TOP_STACKS	5

/* Sort keys of the task and cgroup tables. */
enum top_sort {
	TOP_SORT_ALLOC,		/* 'a': pages allocated per second */
	TOP_SORT_FREE,		/* 'f': pages freed per second */
	TOP_SORT_INUSE,		/* 'u': pages in use */
	TOP_SORT_RECLAIM,	/* 'r': pages reclaimed per second */
};

/* One line of a table: what one task, order, zone or cgroup did. */
struct top_row {
	int64_t		id;		/* tgid, order, zone index */
	char		name[64];	/* comm, zone or cgroup name */
	uint64_t	pages[4];	/* in the interval, by PGTRACE_EV_* */
	int64_t		in_use;		/* pages in use at the cut */
	int64_t		in_use_delta;	/* change since the previous cut */
};

struct top_stack_row {
	uint32_t	id;
	uint64_t	pages;		/* sampled pages in the interval (weighted) */
	unsigned int	depth;
	uint64_t	frames[PAGETRACE_STACK_MAX_DEPTH];
};

/**
 * struct top_frame - what the view shows for one interval
 * @index: 0 for the first frame
 * @end_rel_ns: end of the interval, ns since the trace's start_ns (replay)
 *		or the session's start (live)
 * @secs: length of the interval, in trace seconds for a replay
 * @total: all tasks together, a row as the tables' (id -1)
 * @lost, @lost_delta: events lost so far and in the interval
 * @events: events so far
 * @late: events the time ordering had to release out of order, so far
 * @tasks, @nr_tasks: tasks that did something in the interval or hold pages
 * @orders, @nr_orders: by allocation order, those with anything to show
 * @zones, @nr_zones: by zone, "outside zones" last if anything is there
 * @cgroups, @nr_cgroups: by cgroup, when known (live: /proc/PID/cgroup)
 * @cgroup_note: why there is no cgroup table, or what it means
 * @stacks, @nr_stacks: the top stacks of the interval
 * @stack_rate: the trace's stack sampling rate, 0 without stacks
 * @ended: the trace has ended (replay), this is the last frame
 */
struct top_frame {
	unsigned int	index;
	int64_t		end_rel_ns;
	double		secs;
	struct top_row	total;
	uint64_t	lost;
	uint64_t	lost_delta;
	uint64_t	events;
	uint64_t	late;
	struct top_row	*tasks;
	size_t		nr_tasks;
	struct top_row	*orders;
	size_t		nr_orders;
	struct top_row	*zones;
	size_t		nr_zones;
	struct top_row	*cgroups;
	size_t		nr_cgroups;
	char		cgroup_note[160];
	struct top_stack_row stacks[TOP_STACKS];
	unsigned int	nr_stacks;
	uint32_t	stack_rate;
	bool		ended;
};

struct top_model;

/*
 * A model over the analysis @a that pgtrace_analysis_collect() is about
 * to fill from @r (the zones are read from @a at the first event).
 */
struct top_model *top_model_new(struct pgtrace_reader *r, struct pgtrace_analysis *a);
void top_model_free(struct top_model *m);
/* The analysis hooks; @arg is the model. */
int top_model_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg);
void top_model_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
		      unsigned int order, void *arg);
/*
 * End the interval at @end_ns (on the trace clock for a replay, else any
 * clock as long as it is the same at every cut) and fill @f with it
 * (top_frame_free() what it held before).  @rel_ns goes to f->end_rel_ns.
 * It reads only the model's own data (names and stacks are copied as
 * events pass), so another thread may cut between two hook calls.
 * Returns 0 or -ENOMEM.
 */
int top_model_cut(struct top_model *m, uint64_t end_ns, int64_t rel_ns, struct top_frame *f);
/* The start of the first interval, on the clock of top_model_cut(). */
void top_model_set_start(struct top_model *m, uint64_t start_ns);
/* Lost events the source knows of that the stream does not say yet (live). */
void top_model_set_lost(struct top_model *m, uint64_t lost);
/*
 * Cgroups of tasks, looked up by the caller (live mode: /proc/PID/cgroup);
 * NULL or "" for a task whose cgroup is not known.  Without a lookup the
 * frame says @note instead of a table.
 */
typedef const char *(*top_cgroup_fn)(int64_t tgid, void *arg);
void top_model_set_cgroups(struct top_model *m, top_cgroup_fn fn, void *arg, const char *note);
/* The time of the last event fed, on the trace clock (0 before any). */
uint64_t top_model_last_ns(const struct top_model *m);

void top_frame_free(struct top_frame *f);
/* Sort the task and cgroup tables of @f by @key. */
void top_frame_sort(struct top_frame *f, enum top_sort key);

/* A name for the frames of the view's stacks: "function" or NULL. */
typedef const char *(*top_symbol_fn)(uint64_t addr, void *arg);

struct top_view {
	const char	*title;		/* "replay FILE (x10)", "live" */
	enum top_sort	sort;
	unsigned int	width, height;	/* 0: no limit (batch) */
	const char	*status;	/* a note for the last line, or NULL */
	top_symbol_fn	symbol;
	void		*symbol_arg;
};

/* The frame as text: lines ending in '\n', at most view->height of them. */
void top_draw(FILE *out, const struct top_view *v, const struct top_frame *f);
const char *top_sort_name(enum top_sort key);

/*
 * The terminal (top_term.c).  top_term_open() enters raw mode and the
 * alternate screen and installs the signal handlers; top_term_close()
 * undoes both, and is also run at exit and on a fatal signal.
 */
int top_term_open(void);
void top_term_close(void);
/* The terminal's size; 80x24 if it cannot say. */
void top_term_size(unsigned int *w, unsigned int *h);
/*
 * Wait up to @ms for a key, a resize or a signal: returns the key (a
 * byte), TOP_KEY_RESIZE, TOP_KEY_QUIT (SIGINT, SIGTERM, SIGHUP, or the
 * input closed) or 0 on timeout.  @fd, if >= 0, is polled for input as
 * well: then TOP_KEY_FD when it is readable.
 */
#define TOP_KEY_RESIZE	0x100
#define TOP_KEY_QUIT	0x101
#define TOP_KEY_FD	0x102
int top_term_wait(int ms, int fd);
/* Draw a whole screen from @buf (the lines of top_draw()). */
void top_term_show(const char *buf, size_t len);
/* SIGINT/SIGTERM/SIGHUP arrived (also in batch mode). */
bool top_term_stopped(void);
/* Signal handlers for batch mode: stop flags only, no terminal. */
void top_term_signals(void);

#endif
