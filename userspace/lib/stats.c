// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of a whole stream: counts by type, order and CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

int pgtrace_stats_init(struct pgtrace_stats *s, unsigned int nr_cpus)
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

void pgtrace_stats_free(struct pgtrace_stats *s)
{
	free(s->cpus);
	s->cpus = NULL;
	s->nr_cpus = 0;
}

/*
 * The per-CPU entry of @cpu: Go traces learn their P ids while reading, so
 * the array grows; NULL if @cpu is out of range or memory ran out (the
 * totals still count).
 */
static struct pgtrace_cpu_stats *cpu_stats(struct pgtrace_stats *s, uint32_t cpu)
{
	struct pgtrace_cpu_stats *n;
	unsigned int nr;

	if (likely(cpu < s->nr_cpus))
		return &s->cpus[cpu];
	if (cpu == PGTRACE_CPU_NONE)
		return &s->no_cpu;
	if (cpu >= PGTRACE_GO_MAX_P)
		return NULL;
	nr = cpu + 1 > 2 * s->nr_cpus ? cpu + 1 : 2 * s->nr_cpus;
	if (nr > PGTRACE_GO_MAX_P)
		nr = PGTRACE_GO_MAX_P;
	n = realloc(s->cpus, nr * sizeof(*n));
	if (!n)
		return NULL;
	memset(n + s->nr_cpus, 0, (nr - s->nr_cpus) * sizeof(*n));
	s->cpus = n;
	s->nr_cpus = nr;
	return &s->cpus[cpu];
}

void pgtrace_stats_add_event(struct pgtrace_stats *s, const struct pgtrace_event *ev)
{
	struct pgtrace_cpu_stats *cs;
	uint64_t np = ev->npages;

	if (ev->type < PGTRACE_EV_ALLOC || ev->type > PGTRACE_EV_RECLAIM)
		return;
	s->events++;
	s->by_type[ev->type]++;
	s->pages_by_type[ev->type] += np;
	if (np && !(np & (np - 1)))
		s->by_order[__builtin_ctzll(np)]++;
	else
		s->other_order++;
	cs = cpu_stats(s, ev->cpu);
	if (cs)
		cs->events++;
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
		return;
	if (ev->time_ns < s->first_ns)
		s->first_ns = ev->time_ns;
	if (ev->time_ns > s->last_ns)
		s->last_ns = ev->time_ns;
}

void pgtrace_stats_add_chunk(struct pgtrace_stats *s, const struct pgtrace_chunk *c)
{
	struct pgtrace_cpu_stats *cs;

	s->chunks++;
	if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
		s->snapshot_chunks++;
	if (c->flags & PAGETRACE_CHUNK_CLOCK_LOCAL)
		s->clock_local_chunks++;
	s->lost += c->lost;
	if (c->missing) {
		s->seq_gaps++;
		s->missing_chunks += c->missing;
	}
	cs = cpu_stats(s, c->cpu);
	if (cs) {
		cs->chunks++;
		cs->lost += c->lost;
		if (c->missing) {
			cs->seq_gaps++;
			cs->missing_chunks += c->missing;
		}
	}
}

static int chunk_cb(const struct pgtrace_chunk *c, void *arg)
{
	pgtrace_stats_add_chunk(arg, c);
	return 0;
}

/* @sorted: the run is in time order (v1), so its ends are its first and last. */
static __attribute__((always_inline)) inline void
add_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs, unsigned int n, uint32_t cpu,
	bool sorted)
{
	struct pgtrace_cpu_stats *cs = cpu_stats(s, cpu);
	uint64_t first = s->first_ns, last = s->last_ns;

	/* Runs share a chunk: the per-CPU count is one add per run. */
	if (cs)
		cs->events += n;
	s->events += n;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t np = pgtrace_compact_event_npages(&evs[i]);
		unsigned int t = pgtrace_compact_event_type(&evs[i]);
		uint64_t tm = evs[i].time_ns;

		s->by_type[t]++;
		s->pages_by_type[t] += np;
		if (likely(!(np & (np - 1))))
			s->by_order[__builtin_ctzll(np)]++;
		else
			s->other_order++;
		if (!sorted) {
			first = tm < first ? tm : first;
			last = tm > last ? tm : last;
		}
	}
	if (sorted && n) {
		first = evs[0].time_ns < first ? evs[0].time_ns : first;
		last = evs[n - 1].time_ns > last ? evs[n - 1].time_ns : last;
	}
	s->first_ns = first;
	s->last_ns = last;
}

void pgtrace_stats_add_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs, unsigned int n,
		      uint32_t cpu)
{
	add_run(s, evs, n, cpu, false);
}

void pgtrace_stats_add_sorted_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs, unsigned int n,
			     uint32_t cpu)
{
	add_run(s, evs, n, cpu, true);
}

void pgtrace_stats_add_snapshot_run(struct pgtrace_stats *s, const struct pgtrace_compact_event *evs,
				    unsigned int n, uint32_t cpu)
{
	uint64_t first = s->first_ns, last = s->last_ns;

	add_run(s, evs, n, cpu, false);
	s->first_ns = first;
	s->last_ns = last;
}

void pgtrace_stats_end_times(struct pgtrace_stats *s, uint64_t start_ns)
{
	if (!s->events)
		s->first_ns = s->last_ns = 0;
	else if (s->first_ns == UINT64_MAX)
		s->first_ns = s->last_ns = start_ns;
}

int pgtrace_stats_collect(struct pgtrace_reader *r, struct pgtrace_stats *s)
{
	/* Big enough to amortise the call, small enough to stay in L1/L2. */
	struct pgtrace_compact_event evs[256];
	const struct pgtrace_chunk *c;
	int ret;

	ret = pgtrace_stats_init(s, pgtrace_reader_header(r)->nr_cpus);
	if (ret)
		return ret;
	pgtrace_reader_set_chunk_cb(r, chunk_cb, s);
	while ((ret = pgtrace_reader_next_run(r, evs, 256, &c)) > 0) {
		if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
			pgtrace_stats_add_snapshot_run(s, evs, ret, c->cpu);
		else
			pgtrace_stats_add_run(s, evs, ret, c->cpu);
	}
	pgtrace_reader_set_chunk_cb(r, NULL, NULL);
	/* Growth doubles; report only the CPUs (Go: Ps) the trace has. */
	if (s->nr_cpus > pgtrace_reader_header(r)->nr_cpus)
		s->nr_cpus = pgtrace_reader_header(r)->nr_cpus;
	s->tasks = pgtrace_reader_counters(r)->tasks;
	s->bytes = pgtrace_reader_counters(r)->bytes;
	pgtrace_stats_end_times(s, pgtrace_reader_header(r)->start_ns);
	return ret;
}
