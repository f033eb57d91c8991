// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace top's screen: one frame as plain lines.  The same text goes to
 * a terminal (cut to its width and height) and, in batch mode, to stdout
 * whole, so that what a script parses is what a person sees.
 *
 * Rates are pages per second of the interval (trace seconds in a replay).
 * The lost count is on the second line, which every terminal height keeps.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "top.h"

/* Rows of the small tables at most, on a terminal. */
#define SMALL_ROWS	8
#define CGROUP_ROWS	5

struct lines {
	char		**l;
	size_t		n, cap;
	unsigned int	width;
};

static void add(struct lines *ls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct lines *ls, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return;
	if (ls->width && strlen(s) > ls->width)
		s[ls->width] = '\0';
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? 2 * ls->cap : 64;
		char **nl = realloc(ls->l, cap * sizeof(*nl));

		if (!nl) {
			free(s);
			return;
		}
		ls->l = nl;
		ls->cap = cap;
	}
	ls->l[ls->n++] = s;
}

static void lines_free(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->l[i]);
	free(ls->l);
}

const char *top_sort_name(enum top_sort key)
{
	switch (key) {
	case TOP_SORT_FREE:
		return "free rate";
	case TOP_SORT_INUSE:
		return "in use";
	case TOP_SORT_RECLAIM:
		return "reclaim rate";
	default:
		return "alloc rate";
	}
}

static double rate(const struct top_frame *f, uint64_t pages)
{
	return f->secs > 0 ? pages / f->secs : 0;
}

#define COLS_HDR	"%10s %10s %10s %12s %10s"
#define COLS_ROW	"%10.0f %10.0f %10.0f %12" PRId64 " %+10" PRId64

static void table_head(struct lines *ls, const char *first)
{
	add(ls, "%s " COLS_HDR, first, "ALLOC/s", "FREE/s", "RECLAIM/s", "IN USE", "CHANGE");
}

static void table_row(struct lines *ls, const struct top_frame *f, const char *first,
		      const struct top_row *r)
{
	add(ls, "%s " COLS_ROW, first, rate(f, r->pages[PGTRACE_EV_ALLOC]),
	    rate(f, r->pages[PGTRACE_EV_FREE]), rate(f, r->pages[PGTRACE_EV_RECLAIM]),
	    r->in_use, r->in_use_delta);
}

/* Allocator functions every stack starts with: they say nothing. */
static bool boring(const char *name)
{
	static const char *const pfx[] = {
		"__alloc_pages", "alloc_pages", "__alloc_frozen_pages", "alloc_frozen_pages",
		"__folio_alloc", "folio_alloc", "get_page_from_freelist", "__get_free_pages",
		"post_alloc_hook", "prep_new_page", "__kretprobe_trampoline",
		"kretprobe_trampoline", "pt_", "pagetrace", "trace_", "__traceiter_",
		"__rmqueue", "rmqueue",
	};

	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (!strncmp(name, pfx[i], strlen(pfx[i])))
			return true;
	return false;
}

static void stack_line(struct lines *ls, const struct top_view *v, const struct top_frame *f,
		       const struct top_stack_row *s)
{
	char buf[1024], addr[24];
	const char *names[PAGETRACE_STACK_MAX_DEPTH];
	unsigned int i, first = 0;
	size_t len = 0;

	for (i = 0; i < s->depth; i++)
		names[i] = v->symbol ? v->symbol(s->frames[i], v->symbol_arg) : NULL;
	while (first < s->depth && names[first] && boring(names[first]))
		first++;
	if (first == s->depth)
		first = 0;
	buf[0] = '\0';
	for (i = first; i < s->depth && len < sizeof(buf) - 64; i++) {
		const char *n = names[i];

		if (!n) {
			snprintf(addr, sizeof(addr), "0x%" PRIx64, s->frames[i]);
			n = addr;
		}
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i > first ? " < " : "", n);
	}
	if (!s->depth)
		snprintf(buf, sizeof(buf), s->id == PGTRACE_STACK_UNKNOWN ?
			 "(stack not known: the CPU's table was full)" : "(stack not defined)");
	add(ls, "%10.0f  %s", rate(f, s->pages), buf);
}

void top_draw(FILE *out, const struct top_view *v, const struct top_frame *f)
{
	struct lines head = { .width = v->width }, tail = { .width = v->width };
	struct lines tasks = { .width = v->width };
	size_t small, rows, i, room;
	unsigned int height;
	char t[32];

	fmt_rel_time(t, f->end_rel_ns >= 0 ? (uint64_t)f->end_rel_ns : 0,
		     f->end_rel_ns >= 0 ? 0 : (uint64_t)-f->end_rel_ns);
	t[strlen(t) - 6] = '\0';	/* milliseconds are enough */
	add(&head, "pagetrace top - %s   t=%s s   interval %.3f s   sort: %s   "
	    "(a/f/u/r sort, q quits)%s", v->title, t, f->secs, top_sort_name(v->sort),
	    f->ended ? "   END OF TRACE" : "");
	add(&head, "lost: %" PRIu64 " events (+%" PRIu64 ")   events: %" PRIu64
	    "   late: %" PRIu64, f->lost, f->lost_delta, f->events, f->late);
	add(&head, "pages/s: alloc %.0f   free %.0f   reclaim %.0f   in use: %" PRId64
	    " pages (%+" PRId64 ")   interval: alloc %" PRIu64 " free %" PRIu64
	    " reclaim %" PRIu64 " pages", rate(f, f->total.pages[PGTRACE_EV_ALLOC]),
	    rate(f, f->total.pages[PGTRACE_EV_FREE]), rate(f, f->total.pages[PGTRACE_EV_RECLAIM]),
	    f->total.in_use, f->total.in_use_delta, f->total.pages[PGTRACE_EV_ALLOC],
	    f->total.pages[PGTRACE_EV_FREE], f->total.pages[PGTRACE_EV_RECLAIM]);
	add(&head, "%s", "");

	/* Tasks. */
	table_head(&tasks, "    TGID COMM            ");
	for (i = 0; i < f->nr_tasks; i++) {
		char first[40];

		snprintf(first, sizeof(first), "%8" PRId64 " %-16.16s", f->tasks[i].id,
			 f->tasks[i].name);
		table_row(&tasks, f, first, &f->tasks[i]);
	}
	if (!f->nr_tasks)
		add(&tasks, "    (no task did anything in this interval)");

	/* Cgroups, orders and zones, stacks. */
	small = v->height ? SMALL_ROWS : SIZE_MAX;
	add(&tail, "%s", "");
	if (f->cgroups) {
		table_head(&tail, "CGROUP                   ");
		for (i = 0; i < f->nr_cgroups && i < (v->height ? CGROUP_ROWS : SIZE_MAX); i++) {
			char first[40];

			snprintf(first, sizeof(first), "%-25.25s", f->cgroups[i].name);
			table_row(&tail, f, first, &f->cgroups[i]);
		}
		add(&tail, "%s", f->cgroup_note);
	} else {
		add(&tail, "%s", f->cgroup_note);
	}
	add(&tail, "%s", "");
	table_head(&tail, "ORDER                    ");
	for (i = 0; i < f->nr_orders && i < small; i++) {
		char first[40];

		snprintf(first, sizeof(first), "%-25" PRId64, f->orders[i].id);
		table_row(&tail, f, first, &f->orders[i]);
	}
	if (i < f->nr_orders)
		add(&tail, "  (%zu more orders)", f->nr_orders - i);
	add(&tail, "%s", "");
	table_head(&tail, "ZONE                     ");
	for (i = 0; i < f->nr_zones && i < small; i++) {
		char first[40];

		snprintf(first, sizeof(first), "%-25.25s", f->zones[i].name);
		table_row(&tail, f, first, &f->zones[i]);
	}
	if (i < f->nr_zones)
		add(&tail, "  (%zu more zones)", f->nr_zones - i);
	add(&tail, "%s", "");
	if (f->stack_rate) {
		add(&tail, "TOP STACKS (sampled, 1 per %u pages)  PAGES/s  innermost first",
		    f->stack_rate);
		for (i = 0; i < f->nr_stacks; i++)
			stack_line(&tail, v, f, &f->stacks[i]);
		if (!f->nr_stacks)
			add(&tail, "  (no stack sampled in this interval)");
	} else {
		add(&tail, "stacks: not sampled in this trace (stack_rate=0)");
	}

	/* The tasks get what the rest leaves, a few lines at least. */
	height = v->height && v->status ? v->height - 1 : v->height;
	rows = tasks.n;
	if (height) {
		room = height > head.n + tail.n ? height - head.n - tail.n : 0;
		if (room < 4)
			room = 4;
		if (rows > room)
			rows = room;
	}
	room = height ? height : SIZE_MAX;
	for (i = 0; i < head.n && room; i++, room--)
		fprintf(out, "%s\n", head.l[i]);
	for (i = 0; i < rows && room; i++, room--)
		fprintf(out, "%s\n", tasks.l[i]);
	for (i = 0; i < tail.n && room; i++, room--)
		fprintf(out, "%s\n", tail.l[i]);
	if (v->status)
		fprintf(out, "%.*s\n", v->width ? (int)v->width : (int)strlen(v->status),
			v->status);
	lines_free(&head);
	lines_free(&tasks);
	lines_free(&tail);
}
