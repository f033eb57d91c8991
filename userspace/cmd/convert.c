// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace convert: a trace as CSV (one row per event, stream order), as
 * a Chrome JSON trace (the trace event format Perfetto and chrome://tracing
 * open): counter tracks of pages in use per zone and per order, and an
 * instant event per reclaim burst, pages in use per task (the --tasks
 * tasks that allocated the most pages, the others summed on one track),
 * and alloc/free/reclaim events per second, or as a trace-cmd data file
 * (tracedat.c).
 *
 * The JSON stays a size Perfetto can load whatever the trace's length:
 * pages in use (per zone, order and task) are sampled at most once per
 * --interval (the state after the first event past each interval
 * boundary), so each of those tracks has at most one counter event per
 * interval plus one at the end: with the defaults at most
 * (zones + 1 + PGTRACE_LIFE_ORDERS + 16 + 1) * (duration / 1 ms + 1).
 * Changes that come and go within one interval do not show.  The rates
 * are the analysis's rate bins (1 ms, doubled as the trace grows so that
 * there are at most PGTRACE_RATE_BINS): at most 3 * (PGTRACE_RATE_BINS + 1)
 * counter events whatever the trace holds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "tracedat.h"

enum { TO_NONE, TO_CSV, TO_PERFETTO, TO_TRACECMD };

static void convert_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace convert --to csv|perfetto|trace-cmd [-o OUT] [--go] FILE\n"
		   "  -t, --to FORMAT       csv: one row per event, in stream order\n"
		   "                        perfetto: Chrome JSON trace events (Perfetto UI,\n"
		   "                        chrome://tracing): pages in use per zone, per\n"
		   "                        order and per task, reclaim bursts, alloc, free\n"
		   "                        and reclaim events per second\n"
		   "                        trace-cmd: a trace.dat file (version 6) for\n"
		   "                        trace-cmd report and KernelShark: the events as\n"
		   "                        kmem:mm_page_alloc, kmem:mm_page_free,\n"
		   "                        pagetrace:page_reclaim, pagetrace:page_snapshot\n"
		   "                        (pfn, order, npages; pid = tgid), lost events as\n"
		   "                        trace-cmd's EVENTS DROPPED marks; not with --go\n"
		   "  -o, --output OUT      write OUT instead of stdout\n"
		   "  -g, --go              FILE is a Go runtime page trace (GODEBUG=pagetrace)\n"
		   "  -i, --interval US     perfetto: counter samples at most every US\n"
		   "                        microseconds (default 1000; 0: every change)\n"
		   "  -b, --burst-gap US    perfetto: reclaims closer than this belong to one\n"
		   "                        burst (default 1000)\n"
		   "  -m, --burst-min N     perfetto: bursts of fewer pages are not shown\n"
		   "                        (default 32)\n"
		   "  -k, --tasks N         perfetto: a track of pages in use for each of the N\n"
		   "                        tasks that allocated the most pages, one for the\n"
		   "                        others' sum (default 16; 0: none)\n");
}

static int to_csv(struct pgtrace_reader *r, FILE *out)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	struct pgtrace_event evs[256];
	int ret;

	fprintf(out, "time_ns,rel_ns,cpu,type,pfn,addr,npages,snapshot,offset\n");
	while ((ret = pgtrace_reader_next_batch(r, evs, 256)) > 0) {
		for (int i = 0; i < ret; i++) {
			const struct pgtrace_event *e = &evs[i];

			fprintf(out, "%" PRIu64 ",%" PRId64 ",%d,%s,%" PRIu64 ",0x%" PRIx64
				",%" PRIu64 ",%d,%" PRIu64 "\n", e->time_ns,
				(int64_t)(e->time_ns - h->start_ns),
				e->cpu == PGTRACE_CPU_NONE ? -1 : (int)e->cpu,
				pgtrace_event_type_name(e->type), e->pfn, e->pfn << h->page_shift,
				e->npages, !!(e->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT),
				e->offset);
		}
	}
	return ret;
}

struct perfetto {
	FILE		*out;
	uint64_t	start_ns;
	uint64_t	interval_ns;
	uint64_t	next_ns;
	uint64_t	burst_gap_ns;
	uint64_t	burst_min;
	/* last value written per track: zones (+ outside), then orders */
	uint64_t	*last;
	unsigned int	nr_tracks;
	bool		sampled;
	/* the reclaim burst being gathered */
	uint64_t	burst_start, burst_end, burst_pages, burst_events;
	uint64_t	bursts;
	/*
	 * Pages in use per task.  The top tasks are known only at the end (and
	 * the input may be a pipe, read once), so every sample's changes are
	 * logged, in time order, and written out once the trace is read.
	 */
	unsigned int	max_tasks;
	struct by_task	*bt;
	struct task_point *log;
	size_t		nr_log, log_cap;
	uint64_t	log_t;		/* the time of the sample being logged */
	bool		nomem;
};

/* One task's pages in use at a sample, when it changed since the last. */
struct task_point {
	uint64_t	t;
	int64_t		tgid;
	uint64_t	in_use;
	int64_t		delta;		/* since its previous point */
};

/* A task's comm as a JSON string: bytes outside ASCII as util.c's json_str() writes them. */
static void json_put_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const char *c = s; *c; c++)
		fprintf(out, *c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ||
			(unsigned char)*c >= 0x7f ? "\\u%04x" : "%c", (unsigned char)*c);
	fputc('"', out);
}

static void put_ts(struct perfetto *p, uint64_t ns)
{
	/* Microseconds; snapshot times may predate the start: clamp to 0. */
	uint64_t d = ns > p->start_ns ? ns - p->start_ns : 0;

	fprintf(p->out, "%" PRIu64 ".%03" PRIu64, d / 1000, d % 1000);
}

static void zone_name(const struct pgtrace_analysis *a, unsigned int i, char *buf, size_t n)
{
	if (i < a->nr_zones)
		snprintf(buf, n, "node%u %s", a->zones[i].node, a->zones[i].name);
	else
		snprintf(buf, n, "outside zones");
}

static void sample(struct perfetto *p, const struct pgtrace_analysis *a, uint64_t t, bool all)
{
	char name[64];

	for (unsigned int k = 0; k < p->nr_tracks; k++) {
		uint64_t v;

		if (k <= a->nr_zones)
			v = k < a->nr_zones ? a->zone_stats[k].in_use : a->other_zone.in_use;
		else
			v = a->in_use_by_order[k - a->nr_zones - 1];
		if (!all && v == p->last[k])
			continue;
		if (!all && !p->sampled && !v)
			continue;
		if (k <= a->nr_zones) {
			char zn[48];

			zone_name(a, k, zn, sizeof(zn));
			snprintf(name, sizeof(name), "pages in use: %s", zn);
		} else {
			snprintf(name, sizeof(name), "pages in use: order %u",
				 k - a->nr_zones - 1);
		}
		fprintf(p->out, ",\n{\"name\": \"%s\", \"ph\": \"C\", \"pid\": 1, \"ts\": ", name);
		put_ts(p, t);
		fprintf(p->out, ", \"args\": {\"pages\": %" PRIu64 "}}", v);
		p->last[k] = v;
	}
	p->sampled = true;
}

static void end_burst(struct perfetto *p)
{
	if (!p->burst_events)
		return;
	if (p->burst_pages >= p->burst_min) {
		fprintf(p->out, ",\n{\"name\": \"reclaim burst\", \"ph\": \"i\", \"s\": \"g\","
			" \"pid\": 1, \"tid\": 1, \"ts\": ");
		put_ts(p, p->burst_start);
		fprintf(p->out, ", \"args\": {\"pages\": %" PRIu64 ", \"events\": %" PRIu64
			", \"duration_ns\": %" PRIu64 "}}", p->burst_pages, p->burst_events,
			p->burst_end - p->burst_start);
		p->bursts++;
	}
	p->burst_events = p->burst_pages = 0;
}

/* The tracks of the tasks, of the rates: processes of their own in the UI. */
#define TASKS_PID	2
#define RATES_PID	3
#define OTHER_TASKS	"in use: other tasks"

static void log_task(struct task_stats *t, void *arg)
{
	struct perfetto *p = arg;
	struct task_point *tp;

	if (t->in_use == t->sampled)
		return;
	if (p->nr_log == p->log_cap) {
		size_t cap = p->log_cap ? 2 * p->log_cap : 4096;
		struct task_point *n = realloc(p->log, cap * sizeof(*n));

		if (!n) {
			p->nomem = true;
			return;
		}
		p->log = n;
		p->log_cap = cap;
	}
	tp = &p->log[p->nr_log++];
	tp->t = p->log_t;
	tp->tgid = t->tgid;
	tp->in_use = t->in_use;
	tp->delta = (int64_t)(t->in_use - t->sampled);
	t->sampled = t->in_use;
}

/* Log the tasks whose pages in use changed since the last sample. */
static int sample_tasks(struct perfetto *p, uint64_t t)
{
	if (!p->bt)
		return 0;
	p->log_t = t;
	by_task_each(p->bt, log_task, p);
	return p->nomem ? -ENOMEM : 0;
}

static void put_task_point(struct perfetto *p, const char *name, uint64_t t, uint64_t v)
{
	fprintf(p->out, ",\n{\"name\": ");
	json_put_str(p->out, name);
	fprintf(p->out, ", \"ph\": \"C\", \"pid\": %d, \"ts\": ", TASKS_PID);
	put_ts(p, t);
	fprintf(p->out, ", \"args\": {\"pages\": %" PRIu64 "}}", v);
}

/*
 * The log as counter tracks: one per top task, one for the others' sum.
 * Each track also gets the state at @end_ns unless its last point already
 * says it, so that its last value is the task's pages in use at the end.
 */
static int write_tasks(struct perfetto *p, const struct pgtrace_reader *r, uint64_t end_ns)
{
	struct task_stats *list;
	size_t n, top, i, j, k;
	uint64_t rest = 0;
	bool rest_written = false;
	bool *written;
	char (*names)[64];
	int ret;

	ret = sample_tasks(p, end_ns);
	if (ret)
		return ret;
	list = by_task_list(p->bt, &n);
	if (!list)
		return -ENOMEM;
	/* Most pages allocated first; a task that allocated none has no track. */
	for (top = 0; top < n && top < p->max_tasks && list[top].pages[PGTRACE_EV_ALLOC]; top++)
		;
	names = calloc(top + 1, sizeof(*names));
	written = calloc(top + 1, sizeof(*written));
	if (!names || !written) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < top; k++)
		snprintf(names[k], sizeof(names[k]), "in use: %s (%" PRId64 ")",
			 task_name(r, list[k].tgid), list[k].tgid);
	for (i = 0; i < p->nr_log; i = j) {
		int64_t d = 0;

		for (j = i; j < p->nr_log && p->log[j].t == p->log[i].t; j++) {
			const struct task_point *tp = &p->log[j];

			for (k = 0; k < top && list[k].tgid != tp->tgid; k++)
				;
			if (k < top) {
				put_task_point(p, names[k], tp->t, tp->in_use);
				written[k] = true;
			} else {
				d += tp->delta;
			}
		}
		if (d) {
			rest += (uint64_t)d;
			put_task_point(p, OTHER_TASKS, p->log[i].t, rest);
			rest_written = true;
		}
	}
	for (k = 0; k < top; k++)
		if (!written[k])
			put_task_point(p, names[k], end_ns, list[k].in_use);
	if (n > top && !rest_written)
		put_task_point(p, OTHER_TASKS, end_ns, rest);
out:
	free(names);
	free(written);
	free(list);
	return ret;
}

/*
 * Events per second of each type, from the analysis's rate bins (snapshot
 * events left out): a point at the start of every bin, and a 0 where the
 * last one ends.  Bins are 1 ms times a power of two, so each value is
 * the bin's count times 1000 / 2^k, which a double holds exactly: the
 * count is the value times the bin's width.
 */
static void write_rates(struct perfetto *p, const struct pgtrace_analysis *a)
{
	for (unsigned int type = PGTRACE_EV_ALLOC; type <= PGTRACE_EV_RECLAIM; type++) {
		for (unsigned int i = 0; a->nr_bins && i <= a->nr_bins; i++) {
			double v = i < a->nr_bins ? (double)a->bins[i].events[type] * 1e9 /
						    (double)a->bin_ns : 0;

			fprintf(p->out, ",\n{\"name\": \"%s rate\", \"ph\": \"C\", \"pid\": %d,"
				" \"ts\": ", pgtrace_event_type_name(type), RATES_PID);
			put_ts(p, a->origin_ns + i * a->bin_ns);
			fprintf(p->out, ", \"args\": {\"events/s\": %.17g}}", v);
		}
	}
}

static void perfetto_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
			    unsigned int order, void *arg)
{
	by_task_change(time_ns, pfn, npages, sign, order, ((struct perfetto *)arg)->bt);
}

static int perfetto_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct perfetto *p = arg;

	if (p->bt) {
		int ret = by_task_event(ev, a, p->bt);

		if (ret)
			return ret;
	}
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
		return 0;
	if (ev->type == PGTRACE_EV_RECLAIM) {
		if (p->burst_events && ev->time_ns - p->burst_end > p->burst_gap_ns)
			end_burst(p);
		if (!p->burst_events)
			p->burst_start = ev->time_ns;
		p->burst_end = ev->time_ns;
		p->burst_events++;
		p->burst_pages += ev->npages;
	}
	if (ev->time_ns >= p->next_ns) {
		int ret;

		sample(p, a, ev->time_ns, false);
		ret = sample_tasks(p, ev->time_ns);
		if (ret)
			return ret;
		if (p->interval_ns)
			p->next_ns = ev->time_ns - ev->time_ns % p->interval_ns + p->interval_ns;
	}
	return 0;
}

static int to_perfetto(struct pgtrace_reader *r, FILE *out, struct perfetto *p, const char *path)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	struct pgtrace_analysis_params ap = { .event = perfetto_event, .arg = p };
	struct pgtrace_analysis a;
	const struct pgtrace_zone *z;
	int ret, ret2 = 0;

	p->out = out;
	p->start_ns = h->start_ns;
	p->nr_tracks = pgtrace_reader_zones(r, &z) + 1 + PGTRACE_LIFE_ORDERS;
	p->last = calloc(p->nr_tracks, sizeof(*p->last));
	if (!p->last)
		return -ENOMEM;
	if (p->max_tasks) {
		p->bt = by_task_new();
		if (!p->bt) {
			free(p->last);
			return -ENOMEM;
		}
		ap.change = perfetto_change;
	}
	fprintf(out, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": \"");
	for (const char *c = path; *c; c++)
		fprintf(out, *c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ? "\\u%04x" : "%c",
			(unsigned char)*c);
	fprintf(out, "\", \"release\": \"%s\", \"page_shift\": %u, \"start_ns\": %llu},\n"
		"\"traceEvents\": [\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1,"
		" \"args\": {\"name\": \"pagetrace\"}}", pgtrace_reader_kernel_release(r), h->page_shift,
		(unsigned long long)h->start_ns);
	if (p->bt)
		fprintf(out, ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d,"
			" \"args\": {\"name\": \"pages in use by task\"}}", TASKS_PID);
	fprintf(out, ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d,"
		" \"args\": {\"name\": \"events per second\"}}", RATES_PID);
	ret = pgtrace_analysis_collect(r, &a, &ap);
	end_burst(p);
	/* The state at the end, every track, so each one ends where it should. */
	if (a.stats.events) {
		sample(p, &a, a.stats.last_ns, true);
		if (p->bt && ret >= 0)
			ret2 = write_tasks(p, r, a.stats.last_ns);
	}
	write_rates(p, &a);
	fprintf(out, "\n]}\n");
	pgtrace_analysis_free(&a);
	by_task_free(p->bt);
	free(p->log);
	free(p->last);
	return ret < 0 ? ret : ret2;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "go", no_argument, NULL, 'g' },
		{ "interval", required_argument, NULL, 'i' },
		{ "burst-gap", required_argument, NULL, 'b' },
		{ "burst-min", required_argument, NULL, 'm' },
		{ "tasks", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct perfetto p = {
		.interval_ns = 1000000, .burst_gap_ns = 1000000, .burst_min = 32, .max_tasks = 16,
	};
	const char *path, *outpath = NULL;
	unsigned int flags = 0;
	struct pgtrace_reader *r;
	int c, fd, ret, to = TO_NONE;
	FILE *out = stdout;
	char *end;

	while ((c = getopt_long(argc, argv, "t:o:gi:b:m:k:h", opts, NULL)) != -1) {
		unsigned long long v = 0;

		if (c == 'i' || c == 'b' || c == 'm' || c == 'k') {
			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || v > UINT64_MAX / 1000) {
				fprintf(stderr, "pagetrace: bad number '%s'\n", optarg);
				return EXIT_USAGE;
			}
		}
		switch (c) {
		case 't':
			if (!strcmp(optarg, "csv")) {
				to = TO_CSV;
			} else if (!strcmp(optarg, "perfetto")) {
				to = TO_PERFETTO;
			} else if (!strcmp(optarg, "trace-cmd")) {
				to = TO_TRACECMD;
			} else {
				fprintf(stderr, "pagetrace: unknown format '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'g':
			flags |= PGTRACE_READER_GO;
			break;
		case 'i':
			p.interval_ns = v * 1000;
			break;
		case 'b':
			p.burst_gap_ns = v * 1000;
			break;
		case 'm':
			p.burst_min = v;
			break;
		case 'k':
			if (v > 4096) {
				fprintf(stderr, "pagetrace: --tasks: at most 4096\n");
				return EXIT_USAGE;
			}
			p.max_tasks = (unsigned int)v;
			break;
		case 'h':
			convert_usage(stdout);
			return 0;
		default:
			convert_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || to == TO_NONE) {
		convert_usage(stderr);
		return EXIT_USAGE;
	}
	if (to == TO_TRACECMD && (flags & PGTRACE_READER_GO)) {
		fprintf(stderr, "pagetrace: --to trace-cmd needs a pagetrace stream: a Go trace's"
			" pages are not the kernel's\n");
		return EXIT_USAGE;
	}
	/* Binary: refuse a terminal rather than fill it with bytes. */
	if (to == TO_TRACECMD && !outpath && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "pagetrace: --to trace-cmd writes a binary file: give -o FILE\n");
		return EXIT_USAGE;
	}
	path = argv[optind];
	r = open_trace(path, flags, &fd);
	if (!r)
		return EXIT_TRACE;
	if (outpath) {
		out = fopen(outpath, "w");
		if (!out) {
			fprintf(stderr, "pagetrace: %s: %s\n", outpath, strerror(errno));
			close_trace(r, fd);
			return EXIT_TRACE;
		}
	}
	if (to == TO_CSV)
		ret = to_csv(r, out);
	else if (to == TO_TRACECMD)
		ret = tracedat_write(r, out);
	else
		ret = to_perfetto(r, out, &p, path);
	if (ret < 0)
		trace_error(path, r, ret);
	if ((fflush(out) || ferror(out)) && ret >= 0) {
		fprintf(stderr, "pagetrace: %s: write error\n", outpath ? outpath : "stdout");
		ret = -EIO;
	}
	if (out != stdout)
		fclose(out);
	close_trace(r, fd);
	return ret < 0 ? EXIT_TRACE : 0;
}
