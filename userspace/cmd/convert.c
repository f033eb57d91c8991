// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace convert: a trace as CSV (one row per event, stream order), as
 * a Chrome JSON trace (the trace event format Perfetto and chrome://tracing
 * open): counter tracks of pages in use per zone and per order, and an
 * instant event per reclaim burst, or as a trace-cmd data file
 * (tracedat.c).  Counters are sampled at most once per
 * --interval (the state after the first event past each interval
 * boundary), so a trace of any length stays a size Perfetto can load;
 * changes that come and go within one interval do not show.
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
		   "                        chrome://tracing): pages in use per zone and per\n"
		   "                        order, reclaim bursts\n"
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
		   "                        (default 32)\n");
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
};

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

static int perfetto_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct perfetto *p = arg;

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
		sample(p, a, ev->time_ns, false);
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
	int ret;

	p->out = out;
	p->start_ns = h->start_ns;
	p->nr_tracks = pgtrace_reader_zones(r, &z) + 1 + PGTRACE_LIFE_ORDERS;
	p->last = calloc(p->nr_tracks, sizeof(*p->last));
	if (!p->last)
		return -ENOMEM;
	fprintf(out, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": \"");
	for (const char *c = path; *c; c++)
		fprintf(out, *c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ? "\\u%04x" : "%c",
			(unsigned char)*c);
	fprintf(out, "\", \"release\": \"%s\", \"page_shift\": %u, \"start_ns\": %llu},\n"
		"\"traceEvents\": [\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1,"
		" \"args\": {\"name\": \"pagetrace\"}}", pgtrace_reader_kernel_release(r), h->page_shift,
		(unsigned long long)h->start_ns);
	ret = pgtrace_analysis_collect(r, &a, &ap);
	end_burst(p);
	/* The state at the end, every track, so each one ends where it should. */
	if (a.stats.events)
		sample(p, &a, a.stats.last_ns, true);
	fprintf(out, "\n]}\n");
	pgtrace_analysis_free(&a);
	free(p->last);
	return ret;
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
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct perfetto p = {
		.interval_ns = 1000000, .burst_gap_ns = 1000000, .burst_min = 32,
	};
	const char *path, *outpath = NULL;
	unsigned int flags = 0;
	struct pgtrace_reader *r;
	int c, fd, ret, to = TO_NONE;
	FILE *out = stdout;
	char *end;

	while ((c = getopt_long(argc, argv, "t:o:gi:b:m:h", opts, NULL)) != -1) {
		unsigned long long v = 0;

		if (c == 'i' || c == 'b' || c == 'm') {
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
