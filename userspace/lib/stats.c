// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of a whole stream: counts by type, order and CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

int pt_stats_init(struct pt_stats *s, unsigned int nr_cpus)
{
	memset(s, 0, sizeof(*s));
	s->first_ns = UINT64_MAX;
	if (!nr_cpus)
		return 0;
	s->cpus = calloc(nr_cpus, sizeof(*s->cpus));
	if (!s->cpus)
		return -ENOMEM;
	s->nr_cpus = nr_cpus;
	return 0;
}

void pt_stats_free(struct pt_stats *s)
{
	free(s->cpus);
	s->cpus = NULL;
	s->nr_cpus = 0;
}

void pt_stats_add_event(struct pt_stats *s, const struct pt_event *ev)
{
	uint64_t np = ev->npages;

	if (ev->type < PT_EV_ALLOC || ev->type > PT_EV_RECLAIM)
		return;
	s->events++;
	s->by_type[ev->type]++;
	s->pages_by_type[ev->type] += np;
	if (np && !(np & (np - 1)))
		s->by_order[__builtin_ctzll(np)]++;
	else
		s->other_order++;
	if (ev->cpu < s->nr_cpus)
		s->cpus[ev->cpu].events++;
	if (ev->time_ns < s->first_ns)
		s->first_ns = ev->time_ns;
	if (ev->time_ns > s->last_ns)
		s->last_ns = ev->time_ns;
}

void pt_stats_add_chunk(struct pt_stats *s, const struct pt_chunk *c)
{
	s->chunks++;
	if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
		s->snapshot_chunks++;
	s->lost += c->lost;
	if (c->missing) {
		s->seq_gaps++;
		s->missing_chunks += c->missing;
	}
	if (c->cpu < s->nr_cpus) {
		struct pt_cpu_stats *cs = &s->cpus[c->cpu];

		cs->chunks++;
		cs->lost += c->lost;
		if (c->missing) {
			cs->seq_gaps++;
			cs->missing_chunks += c->missing;
		}
	}
}

static int chunk_cb(const struct pt_chunk *c, void *arg)
{
	pt_stats_add_chunk(arg, c);
	return 0;
}

int pt_stats_collect(struct pt_reader *r, struct pt_stats *s)
{
	/* Big enough to amortise the call, small enough to stay in L1/L2. */
	struct pt_event evs[256];
	int ret;

	ret = pt_stats_init(s, pt_reader_header(r)->nr_cpus);
	if (ret)
		return ret;
	pt_reader_set_chunk_cb(r, chunk_cb, s);
	while ((ret = pt_reader_next_batch(r, evs, 256)) > 0) {
		for (int i = 0; i < ret; i++)
			pt_stats_add_event(s, &evs[i]);
	}
	pt_reader_set_chunk_cb(r, NULL, NULL);
	s->tasks = pt_reader_counters(r)->tasks;
	s->bytes = pt_reader_counters(r)->bytes;
	if (!s->events)
		s->first_ns = 0;
	return ret;
}
