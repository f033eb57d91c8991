// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace top's accounting.  The analysis hands every event over in time
 * order, with every change of the pages in use; the model keeps running
 * totals (by task through bytask.c, by order, by zone, by sampled stack)
 * and a copy of them as they were at the previous cut.  A cut turns the
 * difference into a frame: pages per type in the interval, pages in use
 * now and their change.  Running totals and differences, rather than
 * counters reset at each cut, because bytask.c's totals are cumulative and
 * because a difference cannot drift: the sum of the frames' counts is
 * exactly what pagetrace stats counts for the whole trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "top.h"

#define ORDERS		PGTRACE_LIFE_ORDERS
#define MAX_CGROUPS	256

struct totals {
	uint64_t	pages[4];
	int64_t		in_use;
};

struct prev_task {
	int64_t		tgid;
	uint64_t	pages[4];
	int64_t		in_use;
};

struct name_ent {
	int64_t		tgid;
	bool		used;
	char		comm[PAGETRACE_COMM_LEN + 1];
};

struct stack_ent {
	uint32_t	id;		/* 0: empty slot */
	unsigned int	depth;
	uint64_t	pages, prev_pages;
	uint64_t	frames[PAGETRACE_STACK_MAX_DEPTH];
};

struct top_model {
	struct pgtrace_reader	*r;
	struct pgtrace_analysis	*a;
	struct by_task		*tasks;
	bool			zones_known;
	unsigned int		nr_zones;	/* the trace's, "outside" is one more */
	struct totals		all, prev_all;
	struct totals		order[ORDERS], prev_order[ORDERS];
	struct totals		*zone, *prev_zone;
	struct prev_task	*prev_tasks;
	size_t			nr_prev_tasks;
	struct name_ent		*names;		/* open addressing by tgid */
	size_t			names_cap, nr_names;
	int64_t			last_tgid;	/* of the last event: its name is known */
	struct stack_ent	*stacks;	/* open addressing by id */
	size_t			stacks_cap, nr_stacks;
	uint32_t		stack_rate;
	uint64_t		events, lost, ext_lost, prev_lost, late, last_ns;
	uint64_t		start_ns;	/* of the interval being counted */
	unsigned int		frames;
	top_cgroup_fn		cg_fn;
	void			*cg_arg;
	const char		*cg_note;
	bool			nomem;
};

struct top_model *top_model_new(struct pgtrace_reader *r, struct pgtrace_analysis *a)
{
	struct top_model *m = calloc(1, sizeof(*m));
	const struct pagetrace_rec_stacks *st = pgtrace_reader_stacks(r);

	if (!m)
		return NULL;
	m->r = r;
	m->a = a;
	m->tasks = by_task_new();
	if (!m->tasks) {
		free(m);
		return NULL;
	}
	m->stack_rate = st ? st->rate : 0;
	m->last_tgid = INT64_MIN;
	m->cg_note = "cgroups: not recorded in the trace (it has tasks, not cgroups)";
	return m;
}

void top_model_free(struct top_model *m)
{
	if (!m)
		return;
	by_task_free(m->tasks);
	free(m->zone);
	free(m->prev_zone);
	free(m->prev_tasks);
	free(m->stacks);
	free(m->names);
	free(m);
}

void top_model_set_start(struct top_model *m, uint64_t start_ns)
{
	m->start_ns = start_ns;
}

void top_model_set_lost(struct top_model *m, uint64_t lost)
{
	m->ext_lost = lost;
}

void top_model_set_cgroups(struct top_model *m, top_cgroup_fn fn, void *arg, const char *note)
{
	m->cg_fn = fn;
	m->cg_arg = arg;
	if (note)
		m->cg_note = note;
}

uint64_t top_model_last_ns(const struct top_model *m)
{
	return m->last_ns;
}

/* The analysis has its zones once it runs: the first hook sizes ours. */
static bool zones_ready(struct top_model *m)
{
	if (m->zones_known)
		return true;
	m->nr_zones = m->a->nr_zones;
	m->zone = calloc(m->nr_zones + 1, sizeof(*m->zone));
	m->prev_zone = calloc(m->nr_zones + 1, sizeof(*m->prev_zone));
	if (!m->zone || !m->prev_zone) {
		m->nomem = true;
		return false;
	}
	m->zones_known = true;
	return true;
}

static unsigned int zone_of(const struct top_model *m, uint64_t pfn)
{
	unsigned int z = pgtrace_analysis_zone(m->a, pfn);

	return z == PGTRACE_ZONE_OTHER || z >= m->nr_zones ? m->nr_zones : z;
}

static size_t stack_hash(uint32_t id, size_t cap)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 24) & (cap - 1);
}

static struct stack_ent *stack_get(struct top_model *m, uint32_t id)
{
	struct stack_ent *e;
	size_t i;

	if (2 * (m->nr_stacks + 1) > m->stacks_cap) {
		size_t cap = m->stacks_cap ? 2 * m->stacks_cap : 64;
		struct stack_ent *ns = calloc(cap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (i = 0; i < m->stacks_cap; i++) {
			size_t j;

			if (!m->stacks[i].id)
				continue;
			for (j = stack_hash(m->stacks[i].id, cap); ns[j].id; j = (j + 1) & (cap - 1))
				;
			ns[j] = m->stacks[i];
		}
		free(m->stacks);
		m->stacks = ns;
		m->stacks_cap = cap;
	}
	for (i = stack_hash(id, m->stacks_cap); m->stacks[i].id; i = (i + 1) & (m->stacks_cap - 1))
		if (m->stacks[i].id == id)
			return &m->stacks[i];
	e = &m->stacks[i];
	e->id = id;
	m->nr_stacks++;
	/*
	 * The frames are copied now, in the thread that decodes: a live
	 * view draws in another one, and the reader's table is not its.
	 */
	if (id != PGTRACE_STACK_UNKNOWN) {
		const uint64_t *fr;
		int d = pgtrace_reader_stack(m->r, id, &fr, NULL);

		if (d > 0) {
			if (d > PAGETRACE_STACK_MAX_DEPTH)
				d = PAGETRACE_STACK_MAX_DEPTH;
			memcpy(e->frames, fr, d * sizeof(*fr));
			e->depth = d;
		}
	}
	return e;
}

static size_t name_hash(int64_t tgid, size_t cap)
{
	return (size_t)(((uint64_t)tgid * 0x9e3779b97f4a7c15ULL) >> 24) & (cap - 1);
}

static struct name_ent *name_slot(struct name_ent *t, size_t cap, int64_t tgid)
{
	size_t i;

	for (i = name_hash(tgid, cap); t[i].used && t[i].tgid != tgid; i = (i + 1) & (cap - 1))
		;
	return &t[i];
}

/*
 * The model keeps its own copy of the tasks' names, taken as their
 * events pass: a live view cuts frames in another thread than the one
 * that decodes, and the reader's table of names is that one's.
 */
static int name_note(struct top_model *m, int64_t tgid)
{
	const char *n;
	struct name_ent *e;

	if (tgid == m->last_tgid)
		return 0;
	m->last_tgid = tgid;
	n = pgtrace_reader_task_name(m->r, tgid);
	if (!n)
		return 0;
	if (2 * (m->nr_names + 1) > m->names_cap) {
		size_t cap = m->names_cap ? 2 * m->names_cap : 256;
		struct name_ent *nt = calloc(cap, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < m->names_cap; i++)
			if (m->names[i].used)
				*name_slot(nt, cap, m->names[i].tgid) = m->names[i];
		free(m->names);
		m->names = nt;
		m->names_cap = cap;
	}
	e = name_slot(m->names, m->names_cap, tgid);
	if (!e->used) {
		e->used = true;
		e->tgid = tgid;
		m->nr_names++;
	}
	snprintf(e->comm, sizeof(e->comm), "%s", n);
	return 0;
}

static const char *name_of(const struct top_model *m, int64_t tgid)
{
	if (m->names_cap) {
		const struct name_ent *e = name_slot(m->names, m->names_cap, tgid);

		if (e->used)
			return e->comm;
	}
	return tgid == 0 ? "[kernel]" : tgid < 0 ? "[unknown]" : "?";
}

int top_model_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct top_model *m = arg;
	unsigned int t = ev->type, o;
	int ret;

	ret = by_task_event(ev, a, m->tasks);
	if (!ret)
		ret = name_note(m, ev->task);
	if (ret)
		return ret;
	if (!zones_ready(m))
		return -ENOMEM;
	m->lost = a->stats.lost;
	m->late = a->late_events;
	/* The memory map at the start is in use, but nobody's doing now. */
	if ((ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) || t < PGTRACE_EV_ALLOC ||
	    t > PGTRACE_EV_RECLAIM)
		return 0;
	m->events++;
	m->last_ns = ev->time_ns;
	o = pgtrace_life_order(ev->npages);
	m->all.pages[t] += ev->npages;
	m->order[o].pages[t] += ev->npages;
	m->zone[zone_of(m, ev->pfn)].pages[t] += ev->npages;
	if (ev->stack) {
		struct stack_ent *e = stack_get(m, ev->stack);

		if (!e)
			return -ENOMEM;
		/* A sample stands for max(npages, rate) pages. */
		e->pages += ev->npages > m->stack_rate ? ev->npages : m->stack_rate;
	}
	return m->nomem ? -ENOMEM : 0;
}

void top_model_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
		      unsigned int order, void *arg)
{
	struct top_model *m = arg;
	int64_t d = sign > 0 ? (int64_t)npages : -(int64_t)npages;

	by_task_change(time_ns, pfn, npages, sign, order, m->tasks);
	if (!zones_ready(m))
		return;
	if (order >= ORDERS)
		order = ORDERS - 1;
	m->all.in_use += d;
	m->order[order].in_use += d;
	m->zone[zone_of(m, pfn)].in_use += d;
}

static void row_fill(struct top_row *row, const struct totals *now, const struct totals *prev)
{
	for (int t = 1; t <= 3; t++)
		row->pages[t] = now->pages[t] - prev->pages[t];
	row->in_use = now->in_use;
	row->in_use_delta = now->in_use - prev->in_use;
}

static bool row_empty(const struct top_row *row)
{
	return !row->pages[1] && !row->pages[2] && !row->pages[3] && !row->in_use &&
	       !row->in_use_delta;
}

static int cmp_prev(const void *x, const void *y)
{
	const struct prev_task *p = x, *q = y;

	return p->tgid < q->tgid ? -1 : p->tgid > q->tgid;
}

static const struct prev_task *prev_find(const struct top_model *m, int64_t tgid)
{
	struct prev_task key = { .tgid = tgid };

	if (!m->nr_prev_tasks)
		return NULL;
	return bsearch(&key, m->prev_tasks, m->nr_prev_tasks, sizeof(key), cmp_prev);
}

static int cut_tasks(struct top_model *m, struct top_frame *f)
{
	static const struct prev_task none;
	struct task_stats *list;
	struct prev_task *np;
	size_t n, i;

	list = by_task_list(m->tasks, &n);
	if (!list)
		return -ENOMEM;
	np = malloc((n ? n : 1) * sizeof(*np));
	f->tasks = calloc(n ? n : 1, sizeof(*f->tasks));
	if (!np || !f->tasks) {
		free(list);
		free(np);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct task_stats *t = &list[i];
		const struct prev_task *p = prev_find(m, t->tgid);
		struct top_row *row = &f->tasks[f->nr_tasks];

		if (!p)
			p = &none;
		row->id = t->tgid;
		for (int k = 1; k <= 3; k++)
			row->pages[k] = t->pages[k] - p->pages[k];
		row->in_use = (int64_t)t->in_use;
		row->in_use_delta = (int64_t)t->in_use - p->in_use;
		np[i].tgid = t->tgid;
		memcpy(np[i].pages, t->pages, sizeof(np[i].pages));
		np[i].in_use = (int64_t)t->in_use;
		if (row_empty(row))
			continue;
		snprintf(row->name, sizeof(row->name), "%s", name_of(m, t->tgid));
		f->nr_tasks++;
	}
	free(list);
	qsort(np, n, sizeof(*np), cmp_prev);
	free(m->prev_tasks);
	m->prev_tasks = np;
	m->nr_prev_tasks = n;
	return 0;
}

/* Tasks summed by cgroup; those whose cgroup is unknown under "?". */
static int cut_cgroups(struct top_model *m, struct top_frame *f)
{
	if (!m->cg_fn) {
		snprintf(f->cgroup_note, sizeof(f->cgroup_note), "%s", m->cg_note);
		return 0;
	}
	snprintf(f->cgroup_note, sizeof(f->cgroup_note), "%s", m->cg_note);
	f->cgroups = calloc(MAX_CGROUPS, sizeof(*f->cgroups));
	if (!f->cgroups)
		return -ENOMEM;
	for (size_t i = 0; i < f->nr_tasks; i++) {
		const struct top_row *t = &f->tasks[i];
		const char *cg = t->id > 0 ? m->cg_fn(t->id, m->cg_arg) : NULL;
		struct top_row *c;
		size_t j;

		if (!cg || !*cg)
			cg = t->id == 0 ? "[kernel: interrupts]" : "?";
		for (j = 0; j < f->nr_cgroups; j++)
			if (!strcmp(f->cgroups[j].name, cg))
				break;
		if (j == f->nr_cgroups && j < MAX_CGROUPS) {
			f->nr_cgroups++;
			snprintf(f->cgroups[j].name, sizeof(f->cgroups[j].name), "%s", cg);
		} else if (j == f->nr_cgroups) {
			/* The table is full: the last line takes the rest. */
			j = MAX_CGROUPS - 1;
			snprintf(f->cgroups[j].name, sizeof(f->cgroups[j].name), "(others)");
		}
		c = &f->cgroups[j];
		c->id = (int64_t)j;
		for (int k = 1; k <= 3; k++)
			c->pages[k] += t->pages[k];
		c->in_use += t->in_use;
		c->in_use_delta += t->in_use_delta;
	}
	return 0;
}

static void cut_stacks(struct top_model *m, struct top_frame *f)
{
	f->stack_rate = m->stack_rate;
	for (size_t i = 0; i < m->stacks_cap; i++) {
		struct stack_ent *e = &m->stacks[i];
		uint64_t d;
		unsigned int k;

		if (!e->id)
			continue;
		d = e->pages - e->prev_pages;
		e->prev_pages = e->pages;
		if (!d)
			continue;
		/* Insertion into the short list, most pages first, then by id. */
		for (k = f->nr_stacks; k > 0; k--) {
			const struct top_stack_row *s = &f->stacks[k - 1];

			if (s->pages > d || (s->pages == d && s->id < e->id))
				break;
		}
		if (k >= TOP_STACKS)
			continue;
		if (f->nr_stacks < TOP_STACKS)
			f->nr_stacks++;
		memmove(&f->stacks[k + 1], &f->stacks[k],
			(f->nr_stacks - 1 - k) * sizeof(f->stacks[0]));
		f->stacks[k].id = e->id;
		f->stacks[k].pages = d;
		f->stacks[k].depth = e->depth;
		memcpy(f->stacks[k].frames, e->frames, e->depth * sizeof(e->frames[0]));
	}
}

int top_model_cut(struct top_model *m, uint64_t end_ns, int64_t rel_ns, struct top_frame *f)
{
	uint64_t lost = m->lost > m->ext_lost ? m->lost : m->ext_lost;
	int ret;

	top_frame_free(f);
	memset(f, 0, sizeof(*f));
	if (m->nomem)
		return -ENOMEM;
	f->index = m->frames++;
	f->end_rel_ns = rel_ns;
	f->secs = end_ns > m->start_ns ? (end_ns - m->start_ns) / 1e9 : 0;
	m->start_ns = end_ns;
	f->total.id = -1;
	row_fill(&f->total, &m->all, &m->prev_all);
	m->prev_all = m->all;
	f->lost = lost;
	f->lost_delta = lost - m->prev_lost;
	m->prev_lost = lost;
	f->events = m->events;
	f->late = m->late;

	f->orders = calloc(ORDERS, sizeof(*f->orders));
	f->zones = calloc(m->nr_zones + 1, sizeof(*f->zones));
	if (!f->orders || !f->zones)
		return -ENOMEM;
	for (unsigned int o = 0; o < ORDERS; o++) {
		struct top_row *row = &f->orders[f->nr_orders];

		row->id = o;
		row_fill(row, &m->order[o], &m->prev_order[o]);
		m->prev_order[o] = m->order[o];
		if (!row_empty(row))
			f->nr_orders++;
	}
	for (unsigned int z = 0; m->zones_known && z <= m->nr_zones; z++) {
		struct top_row *row = &f->zones[f->nr_zones];

		row->id = z;
		row_fill(row, &m->zone[z], &m->prev_zone[z]);
		m->prev_zone[z] = m->zone[z];
		if (z == m->nr_zones) {
			if (row_empty(row))
				continue;
			snprintf(row->name, sizeof(row->name), "outside zones");
		} else {
			snprintf(row->name, sizeof(row->name), "%u/%s", m->a->zones[z].node,
				 m->a->zones[z].name);
		}
		f->nr_zones++;
	}
	ret = cut_tasks(m, f);
	if (!ret)
		ret = cut_cgroups(m, f);
	if (ret)
		return ret;
	cut_stacks(m, f);
	return 0;
}

void top_frame_free(struct top_frame *f)
{
	free(f->tasks);
	free(f->orders);
	free(f->zones);
	free(f->cgroups);
	f->tasks = f->orders = f->zones = f->cgroups = NULL;
	f->nr_tasks = f->nr_orders = f->nr_zones = f->nr_cgroups = 0;
}

static enum top_sort sort_key;

static uint64_t key_of(const struct top_row *r)
{
	switch (sort_key) {
	case TOP_SORT_FREE:
		return r->pages[PGTRACE_EV_FREE];
	case TOP_SORT_RECLAIM:
		return r->pages[PGTRACE_EV_RECLAIM];
	case TOP_SORT_INUSE:
		return r->in_use > 0 ? (uint64_t)r->in_use : 0;
	default:
		return r->pages[PGTRACE_EV_ALLOC];
	}
}

static int cmp_rows(const void *x, const void *y)
{
	const struct top_row *p = x, *q = y;
	uint64_t a = key_of(p), b = key_of(q);

	if (a != b)
		return a > b ? -1 : 1;
	/* Ties: more allocated first, then by id, so the order is stable. */
	if (p->pages[PGTRACE_EV_ALLOC] != q->pages[PGTRACE_EV_ALLOC])
		return p->pages[PGTRACE_EV_ALLOC] > q->pages[PGTRACE_EV_ALLOC] ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

void top_frame_sort(struct top_frame *f, enum top_sort key)
{
	sort_key = key;
	if (f->nr_tasks)
		qsort(f->tasks, f->nr_tasks, sizeof(*f->tasks), cmp_rows);
	if (f->nr_cgroups)
		qsort(f->cgroups, f->nr_cgroups, sizeof(*f->cgroups), cmp_rows);
}
