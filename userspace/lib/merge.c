// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis's time order: each CPU's events wait in its queue until no
 * earlier event can come (every CPU has events queued, they are hold_ns
 * older than the latest, or max_held are held), then are merged by time,
 * ties in CPU order: by a loser tree over the queues' first events or, for
 * a release of few events close in time, by a counting sort.  The merged
 * events go to apply.c as the buffer fills.
 */
#include <errno.h>
#include <stdlib.h>
#include "analysis.h"

/*
 * A release of at most SORT_MAX events whose times span at most SORT_SPAN
 * steps of 128 ns per event is merged by a counting sort, not the tree.
 */
#define SORT_MAX		(1U << 15)
#define SORT_SPAN		4
/* Up to this many queues, merge keys are 64 bits: time | leaf. */
#define NARROW_LEAVES		64

/*
 * A leaf's key in the merge: the time of its queue's first event
 * (UINT64_MAX if none) and the leaf, so that ties go to the lower CPU and
 * one branchless compare decides.  Times are multiples of 128 ns (the
 * stream's step), so with NARROW_LEAVES leaves at most the key fits 64
 * bits: time | leaf.
 */
static tkey wide_key(uint64_t t, unsigned int leaf)
{
	return (tkey)t << 32 | leaf;
}

static uint64_t narrow_key(uint64_t t, unsigned int leaf)
{
	return t == UINT64_MAX ? UINT64_MAX : (t & ~(uint64_t)(NARROW_LEAVES - 1)) | leaf;
}

/* -------------------------------------------------------- time order */

struct queue *pgtrace_get_queue(struct pgtrace_analysis_priv *m, uint32_t cpu)
{
	unsigned int i = cpu + 1U, nr;
	struct queue *n;

	if (i >= m->nr_q) {
		if (i > PGTRACE_GO_MAX_P)
			return NULL;
		/* Doubling: CPUs (and Go Ps) come by one at a time. */
		nr = i + 1 > 2 * m->nr_q ? i + 1 : 2 * m->nr_q;
		if (nr > PGTRACE_GO_MAX_P + 1)
			nr = PGTRACE_GO_MAX_P + 1;
		n = realloc(m->q, nr * sizeof(*n));
		if (!n)
			return NULL;
		memset(n + m->nr_q, 0, (nr - m->nr_q) * sizeof(*n));
		m->q = n;
		m->nr_q = nr;
	}
	if (i >= m->q_hi) {
		m->q_hi = i + 1;
		m->tree_dirty = true;
	}
	if (i < m->q_off) {
		m->q_off = i;
		m->tree_dirty = true;
	}
	return &m->q[i];
}

static uint64_t head_time(const struct queue *q)
{
	return q->head < q->tail ? q->ev[q->head].time_ns : UINT64_MAX;
}

/* Build the loser tree over the queues' first events. */
static int tree_build(struct pgtrace_analysis_priv *m)
{
	unsigned int used = m->q_hi > m->q_off ? m->q_hi - m->q_off : 1, nl = 1;
	const struct pgtrace_compact_event **end;
	struct cursor *cur;
	tkey *win;

	while (nl < used)
		nl *= 2;
	if (nl != m->nl) {
		uint64_t *lt64 = realloc(m->lt64, nl * sizeof(*lt64));
		tkey *lt128 = lt64 ? realloc(m->lt128, nl * sizeof(*lt128)) : NULL;

		if (lt64)
			m->lt64 = lt64;
		if (lt128)
			m->lt128 = lt128;
		win = lt128 ? realloc(m->win, 2 * nl * sizeof(*win)) : NULL;
		if (win)
			m->win = win;
		cur = win ? realloc(m->cur, nl * sizeof(*cur)) : NULL;
		if (cur)
			m->cur = cur;
		end = cur ? realloc(m->sort_end, nl * sizeof(*end)) : NULL;
		if (!end)
			return -ENOMEM;
		m->sort_end = end;
		m->nl = nl;
	}
	m->wide = nl > NARROW_LEAVES;
	win = m->win;
	for (unsigned int i = 0; i < nl; i++)
		win[nl + i] = wide_key(i < used && i + m->q_off < m->nr_q ?
				       head_time(&m->q[i + m->q_off]) : UINT64_MAX, i);
	/* Winners bottom up; each node keeps the loser. */
	for (unsigned int n = nl - 1; n >= 1; n--) {
		tkey x = win[2 * n], y = win[2 * n + 1];

		win[n] = y < x ? y : x;
		m->lt128[n] = y < x ? x : y;
	}
	m->lt128[0] = win[1];
	/* Narrow keys order the same. */
	for (unsigned int n = 0; n < nl && !m->wide; n++)
		m->lt64[n] = narrow_key((uint64_t)(m->lt128[n] >> 32), (unsigned int)m->lt128[n]);
	m->tree_dirty = false;
	return 0;
}

/*
 * Play key @k of leaf @w, the winner's, up the loser tree @lt of @nl
 * leaves; return the new winner's key (for lt[0]).  One for each width.
 */
#define DEFINE_REPLAY(name, type)						\
static __attribute__((always_inline)) inline type				\
name(type *lt, unsigned int nl, unsigned int w, type k)				\
{										\
	for (unsigned int i = (w + nl) >> 1; i; i >>= 1) {			\
		type o = lt[i];							\
		bool sw = o < k;						\
										\
		lt[i] = sw ? k : o;						\
		k = sw ? o : k;							\
	}									\
	return k;								\
}
DEFINE_REPLAY(replay64, uint64_t)
DEFINE_REPLAY(replay128, tkey)

/*
 * Merge what may go: events before @bound, and the earliest ones past
 * max_held, into out in time order, applying them as it fills.
 */
static __attribute__((always_inline)) inline int
an_merge(struct pgtrace_analysis *a, uint64_t bound, const bool wide)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t excess = m->held > m->p.max_held ? m->held - m->p.max_held : 0;
	uint64_t n = 0, late = 0, last = m->last_released;
	struct cursor *cur = m->cur;
	unsigned int nl = m->nl;
	int ret = 0;

	for (;;) {
		unsigned int w;
		uint64_t t, next;
		struct cursor *c;

		if (wide) {
			w = (unsigned int)m->lt128[0];
			t = (uint64_t)(m->lt128[0] >> 32);
		} else {
			if (m->lt64[0] == UINT64_MAX)
				break;	/* all empty */
			w = m->lt64[0] & (NARROW_LEAVES - 1);
			t = m->lt64[0] & ~(uint64_t)(NARROW_LEAVES - 1);
		}
		if (t >= bound && n >= excess)
			break;
		c = &cur[w];
		m->out[m->nr_out] = *c->p++;
		if (m->want_full)
			m->out_full[m->nr_out] = *c->full++;
		__builtin_prefetch(c->p + 8);
		next = c->p < c->end ? c->p->time_ns : UINT64_MAX;
		/* Play the winner's next event up the tree. */
		if (wide)
			m->lt128[0] = replay128(m->lt128, nl, w, wide_key(next, w));
		else
			m->lt64[0] = replay64(m->lt64, nl, w, narrow_key(next, w));
		n++;
		/* Released before an earlier event: a CPU was held up too long. */
		if (t < last)
			late++;
		else
			last = t;
		if (++m->nr_out == OUT) {
			ret = pgtrace_process_out(a, true);
			if (ret)
				break;
		}
	}
	m->held -= n;
	m->last_released = last;
	a->late_events += late;
	return ret;
}

/* The first of @p[0, @n) at or after @t (sorted by time). */
static const struct pgtrace_compact_event *first_at(const struct pgtrace_compact_event *p, size_t n, uint64_t t)
{
	while (n) {
		size_t h = n / 2;

		if (p[h].time_ns < t) {
			p += h + 1;
			n -= h + 1;
		} else {
			n = h;
		}
	}
	return p;
}

/*
 * What an_merge() does for events before @bound, by a counting sort on their
 * time, when they are few and close in time (the usual release of a v1
 * stream): stable, queue by queue, it gives the same (time, CPU) order in
 * a few operations an event instead of a walk up the tree.  v1 times are
 * multiples of 128 ns, so the time of a bucket is exact.  Return 1 if it
 * does not apply, else what pgtrace_an_apply() returned.
 */
static int merge_sort(struct pgtrace_analysis *a, uint64_t bound)
{
	struct pgtrace_analysis_priv *m = a->priv;
	uint64_t lo = UINT64_MAX, hi = 0, total = 0, span, last = m->last_released, late = 0;
	const struct pgtrace_compact_event **end = m->sort_end;
	struct pgtrace_compact_event *out;
	unsigned int used = m->q_hi - m->q_off;
	uint32_t *cnt;
	int ret;

	for (unsigned int i = 0; i < used; i++) {
		const struct cursor *c = &m->cur[i];

		end[i] = c->p;
		if (c->p == c->end)
			continue;
		end[i] = first_at(c->p, c->end - c->p, bound);
		if (end[i] == c->p)
			continue;
		lo = c->p->time_ns < lo ? c->p->time_ns : lo;
		hi = end[i][-1].time_ns > hi ? end[i][-1].time_ns : hi;
		total += end[i] - c->p;
	}
	if (!total)
		return 0;
	span = ((hi - lo) >> PAGETRACE_TIME_LOST_BITS) + 1;
	if (total > SORT_MAX || span > SORT_SPAN * total)
		return 1;
	if (m->sorted_cap < total) {
		out = realloc(m->sorted, SORT_MAX * sizeof(*out));
		if (!out)
			return -ENOMEM;
		m->sorted = out;
		m->sorted_cap = SORT_MAX;
	}
	if (m->counts_cap < span) {
		cnt = realloc(m->counts, SORT_SPAN * SORT_MAX * sizeof(*cnt));
		if (!cnt)
			return -ENOMEM;
		m->counts = cnt;
		m->counts_cap = SORT_SPAN * SORT_MAX;
	}
	cnt = m->counts;
	out = m->sorted;
	memset(cnt, 0, span * sizeof(*cnt));
	for (unsigned int i = 0; i < used; i++)
		for (const struct pgtrace_compact_event *e = m->cur[i].p; e < end[i]; e++)
			cnt[(e->time_ns - lo) >> PAGETRACE_TIME_LOST_BITS]++;
	for (uint64_t b = 0, sum = 0; b < span; b++) {
		uint32_t k = cnt[b];

		cnt[b] = (uint32_t)sum;
		sum += k;
	}
	for (unsigned int i = 0; i < used; i++) {
		for (const struct pgtrace_compact_event *e = m->cur[i].p; e < end[i]; e++)
			out[cnt[(e->time_ns - lo) >> PAGETRACE_TIME_LOST_BITS]++] = *e;
		m->cur[i].p = end[i];
	}
	/* Released before an earlier event: a CPU was held up too long. */
	while (late < total && out[late].time_ns < last)
		late++;
	m->last_released = hi > last ? hi : last;
	a->late_events += late;
	m->held -= total;
	m->tree_dirty = true;	/* the tree still has the old first events */
	/* What an_merge() left first, then these. */
	ret = pgtrace_process_out(a, false);
	if (!ret)
		pgtrace_an_apply(a, out, NULL, (unsigned int)total, (unsigned int)total, &ret);
	return ret;
}

/* Queued events before this time may go now (0: none may). */
static uint64_t release_bound(const struct pgtrace_analysis_priv *m, bool drain)
{
	uint64_t b = 0;

	if (drain)
		return UINT64_MAX;
	/*
	 * Every CPU has events queued: none earlier than its last can come.
	 * Those at the earliest last time wait, so that ties keep CPU order.
	 */
	if (m->all_cpus_known && m->nr_nonempty == m->nr_active && m->nr_active) {
		b = UINT64_MAX;
		for (unsigned int i = 0; i < m->nr_q; i++) {
			const struct queue *q = &m->q[i];

			if (q->active && q->ev[q->tail - 1].time_ns < b)
				b = q->ev[q->tail - 1].time_ns;
		}
	}
	/* A CPU quiet for hold_ns: what is older than that goes. */
	if (m->p.hold_ns != UINT64_MAX && m->max_seen >= m->p.hold_ns &&
	    m->max_seen - m->p.hold_ns + 1 > b)
		b = m->max_seen - m->p.hold_ns + 1;
	return b;
}

/* Release what may go; with @drain, everything, and apply it all. */
int pgtrace_an_release(struct pgtrace_analysis *a, bool drain)
{
	struct pgtrace_analysis_priv *m = a->priv;
	unsigned int used;
	uint64_t bound;
	int ret = 0;

	if (m->held) {
		bound = release_bound(m, drain);
		if (m->tree_dirty) {
			ret = tree_build(m);
			if (ret)
				return ret;
		}
		used = m->q_hi - m->q_off;
		for (unsigned int i = 0; i < used; i++) {
			const struct queue *q = &m->q[m->q_off + i];

			/* A queue that never had events has no array. */
			memset(&m->cur[i], 0, sizeof(m->cur[i]));
			if (!q->ev)
				continue;
			m->cur[i].p = q->ev + q->head;
			m->cur[i].end = q->ev + q->tail;
			if (m->want_full)
				m->cur[i].full = q->full + q->head;
		}
		ret = 1;
		if (m->sortable && m->held <= m->p.max_held)
			ret = merge_sort(a, bound);
		if (ret == 1)
			ret = m->wide ? an_merge(a, bound, true) : an_merge(a, bound, false);
		m->nr_nonempty = 0;
		for (unsigned int i = 0; i < used; i++) {
			struct queue *q = &m->q[m->q_off + i];

			if (!q->ev)
				continue;
			q->head = m->cur[i].p - q->ev;
			if (q->head == q->tail)
				q->head = q->tail = 0;
			else
				m->nr_nonempty++;
		}
	}
	if (!ret && drain)
		ret = pgtrace_process_out(a, false);
	return ret;
}

/* Room for @n more events at the tail of @q. */
int pgtrace_queue_room(struct pgtrace_analysis_priv *m, struct queue *q, size_t n)
{
	size_t len = q->tail - q->head, cap;

	if (q->tail + n <= q->cap)
		return 0;
	if (q->head) {
		memmove(q->ev, q->ev + q->head, len * sizeof(*q->ev));
		if (m->want_full)
			memmove(q->full, q->full + q->head, len * sizeof(*q->full));
		q->head = 0;
		q->tail = len;
	}
	/* Keep half free after a move, so that moves cost O(1) an event. */
	if (len + n <= q->cap / 2)
		return 0;
	for (cap = q->cap ? 2 * q->cap : 1024; cap < 2 * (len + n); cap *= 2)
		;
	{
		struct pgtrace_compact_event *ev = realloc(q->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		q->ev = ev;
	}
	if (m->want_full) {
		struct pgtrace_event *full = realloc(q->full, cap * sizeof(*full));

		if (!full)
			return -ENOMEM;
		q->full = full;
	}
	q->cap = cap;
	return 0;
}

/* Event @i of @q is earlier than the one before it (Go): move it back. */
static void queue_sort_in(struct pgtrace_analysis_priv *m, struct queue *q, size_t i)
{
	struct pgtrace_compact_event ev = q->ev[i];
	struct pgtrace_event full;
	size_t j = i;

	if (m->want_full)
		full = q->full[i];
	while (j > q->head && q->ev[j - 1].time_ns > ev.time_ns) {
		q->ev[j] = q->ev[j - 1];
		if (m->want_full)
			q->full[j] = q->full[j - 1];
		j--;
	}
	q->ev[j] = ev;
	if (m->want_full)
		q->full[j] = full;
	if (j == q->head)
		m->tree_dirty = true;	/* a new first event */
}

/* @n events were written at the tail of @q: queue them, and release. */
int pgtrace_queue_commit(struct pgtrace_analysis *a, struct queue *q, unsigned int n)
{
	struct pgtrace_analysis_priv *m = a->priv;
	bool was_empty = q->head == q->tail;
	uint64_t max = m->max_seen;

	/*
	 * A v1 stream's CPU logs its events in time order (the reader checks
	 * it), but a Go P may not quite: insert from the back to keep the
	 * queue sorted.
	 */
	if (m->all_cpus_known) {
		max = n && q->ev[q->tail + n - 1].time_ns > max ? q->ev[q->tail + n - 1].time_ns : max;
	} else {
		for (size_t i = q->tail; i < q->tail + n; i++) {
			uint64_t t = q->ev[i].time_ns;

			max = t > max ? t : max;
			if (unlikely(i > q->head && q->ev[i - 1].time_ns > t))
				queue_sort_in(m, q, i);
		}
	}
	q->tail += n;
	if (was_empty) {
		m->nr_nonempty++;
		m->tree_dirty = true;
	}
	if (!q->active) {
		q->active = true;
		m->nr_active++;
	}
	m->held += n;
	if (m->held > a->max_held_seen)
		a->max_held_seen = m->held;
	m->max_seen = max;
	return pgtrace_an_release(a, false);
}
