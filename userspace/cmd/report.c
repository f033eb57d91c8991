// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace report: one self-contained HTML page (inline SVG and CSS, no
 * script) with a summary and five figures:
 *
 *   fig-heatmap   physical memory by time: each cell the share of its PFN
 *                 range allocated at the end of its time slice (blue), or
 *                 reclaimed in it (red); grey where no zone has pages
 *   fig-rate      events per second per type
 *   fig-orders    events per order
 *   fig-lifetime  lifetimes, alloc to free/reclaim, in power-of-two bins
 *   fig-cpus      events per CPU (Go traces: per P), lost events in red
 *
 * and, for streams with task records, a table (tab-tasks) of the processes
 * that allocated most: pages allocated, freed, reclaimed and still in use
 * at the end, with their names (cmd/bytask.c).
 *
 * Then who caused reclaim (sec-reclaim, from libpagetrace's
 * pgtrace_reclaim_*): the pages reclaimed by the task that allocated them
 * (tab-reclaim-tasks) and by the allocation's sampled stack
 * (tab-reclaim-stacks, traces with stacks), how long they lived
 * (fig-reclaim-life), and the pages whose allocation the trace does not
 * hold, counted apart.  Last, for pagetrace streams, the trace checked
 * against the kernel's own count of pages in use per zone
 * (sec-kernel-counts, cmd/kcounts.c).
 *
 * Everything is binned to a fixed size (the heatmap is at most 800 x 400
 * cells, an inline PNG), so the page stays well under 2 MiB however large
 * the trace.  Two passes over FILE: the first finds the time and PFN
 * ranges, the second runs the analysis; so FILE must be a file, not a pipe.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "tracedat_in.h"

#define HEAT_W		800
#define HEAT_H		400
#define BLUE_LEVELS	64
#define RED_LEVELS	16
#define PAL_FREE	0
#define PAL_HOLE	1
#define PAL_BLUE	2
#define PAL_RED		(PAL_BLUE + BLUE_LEVELS)
#define PAL_N		(PAL_RED + RED_LEVELS)

static const char *const type_color[4] = { "#888", "#1f77b4", "#2ca02c", "#d62728" };

struct heat {
	unsigned int	w, h;		/* columns (time), rows (PFN) */
	unsigned int	ncols, cur;	/* columns with data; next to fill */
	uint64_t	t0, col_ns;
	uint64_t	lo, hi, row_pages;
	int64_t		*live;		/* pages allocated now, per row */
	uint64_t	*cap;		/* pages a row holds (0: a hole) */
	uint8_t		*occ;		/* per cell: 0..255 allocated share */
	uint32_t	*recl;		/* per cell: pages reclaimed */
};

static void heat_snap(struct heat *hm, unsigned int c)
{
	for (unsigned int r = 0; r < hm->h; r++) {
		int64_t v = hm->live[r];
		uint64_t cap = hm->cap[r];

		if (v < 0 || !cap)
			v = 0;
		/* Rounded up: one live page in a big row still shows. */
		hm->occ[(size_t)c * hm->h + r] = (uint8_t)((uint64_t)v >= cap ? 255 :
							    ((uint64_t)v * 255 + cap - 1) / cap);
	}
}

/* Apply @fn(row, pages) to the rows [pfn, pfn + n) covers. */
#define FOR_ROWS(hm, pfn, n, body) do {					\
	uint64_t _s = (pfn) < (hm)->lo ? (hm)->lo : (pfn);			\
	uint64_t _e = (pfn) + (n) > (hm)->hi ? (hm)->hi : (pfn) + (n);		\
	while (_s < _e) {							\
		unsigned int row = (unsigned int)((_s - (hm)->lo) / (hm)->row_pages); \
		uint64_t _re = (hm)->lo + (uint64_t)(row + 1) * (hm)->row_pages; \
		uint64_t pages = (_re < _e ? _re : _e) - _s;			\
		body;								\
		_s += pages;							\
	}									\
} while (0)

static void heat_change(uint64_t t, uint64_t pfn, uint64_t npages, int sign,
			unsigned int order, void *arg)
{
	struct heat *hm = arg;

	(void)t;
	(void)order;
	FOR_ROWS(hm, pfn, npages, hm->live[row] += sign * (int64_t)pages);
}

static int heat_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct heat *hm = arg;
	uint64_t col;

	(void)a;
	if (ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT || ev->time_ns < hm->t0)
		return 0;
	col = (ev->time_ns - hm->t0) / hm->col_ns;
	if (col >= hm->ncols)
		col = hm->ncols - 1;
	/* Columns before this event's are done: the state at their end. */
	while (hm->cur < col)
		heat_snap(hm, hm->cur++);
	if (ev->type == PGTRACE_EV_RECLAIM)
		FOR_ROWS(hm, ev->pfn, ev->npages,
			 hm->recl[col * hm->h + row] += (uint32_t)(pages > UINT32_MAX ?
								    UINT32_MAX : pages));
	return 0;
}

/* The analysis hooks of pass 2: the heatmap's, the per-process totals' and reclaim's. */
struct report_hooks {
	struct heat	*hm;
	struct by_task	*tasks;		/* NULL: no task records */
	struct pgtrace_reclaim *reclaim;
};

static int report_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a, void *arg)
{
	struct report_hooks *h = arg;
	int ret = heat_event(ev, a, h->hm);

	if (!ret && h->tasks)
		ret = by_task_event(ev, a, h->tasks);
	return ret ? ret : pgtrace_reclaim_event(ev, a, h->reclaim);
}

static void report_change(uint64_t t, uint64_t pfn, uint64_t npages, int sign,
			  unsigned int order, void *arg)
{
	struct report_hooks *h = arg;

	heat_change(t, pfn, npages, sign, order, h->hm);
	if (h->tasks)
		by_task_change(t, pfn, npages, sign, order, h->tasks);
}

/* Pass 1: time range of the events, PFN range of zones or events. */
static int scan(struct pgtrace_reader *r, struct heat *hm, struct pgtrace_stats *s)
{
	const struct pgtrace_zone *z;
	unsigned int nz = pgtrace_reader_zones(r, &z);
	uint64_t lo = UINT64_MAX, hi = 0, t0 = UINT64_MAX, t1 = 0;
	struct pgtrace_event evs[256];
	int ret;

	ret = pgtrace_stats_init(s, pgtrace_reader_header(r)->nr_cpus);
	if (ret)
		return ret;
	while ((ret = pgtrace_reader_next_batch(r, evs, 256)) > 0) {
		for (int i = 0; i < ret; i++) {
			const struct pgtrace_event *e = &evs[i];

			pgtrace_stats_add_event(s, e);
			if (e->pfn < lo)
				lo = e->pfn;
			if (e->pfn + e->npages > hi)
				hi = e->pfn + e->npages;
			if (e->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
				continue;
			if (e->time_ns < t0)
				t0 = e->time_ns;
			if (e->time_ns > t1)
				t1 = e->time_ns;
		}
	}
	if (ret)
		return ret;
	if (nz) {
		lo = UINT64_MAX;
		hi = 0;
		for (unsigned int i = 0; i < nz; i++) {
			if (z[i].start_pfn < lo)
				lo = z[i].start_pfn;
			if (z[i].end_pfn > hi)
				hi = z[i].end_pfn;
		}
	}
	if (lo >= hi) {
		lo = 0;
		hi = 1;
	}
	if (t0 > t1)
		t0 = t1 = pgtrace_reader_header(r)->start_ns;
	hm->lo = lo;
	hm->hi = hi;
	hm->row_pages = (hi - lo + HEAT_H - 1) / HEAT_H;
	hm->h = (unsigned int)((hi - lo + hm->row_pages - 1) / hm->row_pages);
	hm->t0 = t0;
	hm->col_ns = (t1 - t0) / HEAT_W + 1;
	hm->w = HEAT_W;
	hm->ncols = (unsigned int)((t1 - t0) / hm->col_ns + 1);
	hm->live = calloc(hm->h, sizeof(*hm->live));
	hm->cap = calloc(hm->h, sizeof(*hm->cap));
	hm->occ = calloc((size_t)hm->w * hm->h, 1);
	hm->recl = calloc((size_t)hm->w * hm->h, sizeof(*hm->recl));
	if (!hm->live || !hm->cap || !hm->occ || !hm->recl)
		return -ENOMEM;
	if (!nz) {
		for (unsigned int row = 0; row < hm->h; row++)
			hm->cap[row] = hm->row_pages;
	}
	for (unsigned int i = 0; i < nz; i++)
		FOR_ROWS(hm, z[i].start_pfn, z[i].end_pfn - z[i].start_pfn,
			 hm->cap[row] += pages);
	return 0;
}

static void put_heatmap_png(FILE *f, const struct heat *hm)
{
	uint8_t pal[PAL_N][3];
	unsigned char *png;
	uint8_t *pix;
	size_t len;

	pal[PAL_FREE][0] = pal[PAL_FREE][1] = pal[PAL_FREE][2] = 255;
	pal[PAL_HOLE][0] = pal[PAL_HOLE][1] = pal[PAL_HOLE][2] = 200;
	for (int i = 0; i < BLUE_LEVELS; i++) {
		/* Light to dark blue. */
		pal[PAL_BLUE + i][0] = (uint8_t)(220 - 212 * i / (BLUE_LEVELS - 1));
		pal[PAL_BLUE + i][1] = (uint8_t)(235 - 187 * i / (BLUE_LEVELS - 1));
		pal[PAL_BLUE + i][2] = (uint8_t)(255 - 148 * i / (BLUE_LEVELS - 1));
	}
	for (int i = 0; i < RED_LEVELS; i++) {
		/* Orange to dark red. */
		pal[PAL_RED + i][0] = (uint8_t)(255 - 90 * i / (RED_LEVELS - 1));
		pal[PAL_RED + i][1] = (uint8_t)(150 - 150 * i / (RED_LEVELS - 1));
		pal[PAL_RED + i][2] = (uint8_t)(60 - 60 * i / (RED_LEVELS - 1));
	}
	pix = calloc((size_t)hm->ncols * hm->h, 1);
	if (!pix)
		return;
	for (unsigned int c = 0; c < hm->ncols; c++) {
		for (unsigned int r = 0; r < hm->h; r++) {
			size_t cell = (size_t)c * hm->h + r;
			uint8_t v;

			if (!hm->cap[r])
				v = PAL_HOLE;
			else if (hm->recl[cell])
				v = PAL_RED + (uint8_t)(hm->recl[cell] >= hm->cap[r] ?
					RED_LEVELS - 1 :
					(uint64_t)hm->recl[cell] * (RED_LEVELS - 1) / hm->cap[r]);
			else if (hm->occ[cell])
				v = PAL_BLUE + hm->occ[cell] * BLUE_LEVELS / 256;
			else
				v = PAL_FREE;
			/* Low PFNs at the bottom, like any y axis. */
			pix[(size_t)(hm->h - 1 - r) * hm->ncols + c] = v;
		}
	}
	if (!png_indexed(pix, hm->ncols, hm->h, (const uint8_t (*)[3])pal, PAL_N, &png, &len)) {
		fputs("data:image/png;base64,", f);
		base64_write(f, png, len);
		free(png);
	}
	free(pix);
}

/* ------------------------------------------------------------ SVG */

#define FW	900	/* figure width */
#define FH	320
#define ML	80	/* margins */
#define MR	20
#define MT	20
#define MB	50
#define PW	(FW - ML - MR)
#define PH	(FH - MT - MB)

static double nice_step(double max, int n)
{
	double raw = max / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void fmt_num(char *b, size_t n, double v)
{
	if (v >= 1e9)
		snprintf(b, n, "%gG", v / 1e9);
	else if (v >= 1e6)
		snprintf(b, n, "%gM", v / 1e6);
	else if (v >= 1e3)
		snprintf(b, n, "%gk", v / 1e3);
	else
		snprintf(b, n, "%g", v);
}

static void svg_open(FILE *f, const char *id, const char *title, int h)
{
	fprintf(f, "<figure><figcaption>%s</figcaption>\n<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\""
		" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", title, id, FW, h, FW, h);
}

static void svg_close(FILE *f)
{
	fprintf(f, "</svg></figure>\n");
}

/* Axes and y grid of a plot area; returns the y scale maximum. */
static double axes(FILE *f, double ymax, const char *xlabel, const char *ylabel)
{
	double step = nice_step(ymax > 0 ? ymax : 1, 5), top;
	char b[32];

	top = ceil((ymax > 0 ? ymax : 1) / step) * step;
	for (double v = 0; v <= top + step / 2; v += step) {
		double y = MT + PH - v / top * PH;

		fmt_num(b, sizeof(b), v);
		fprintf(f, "<path class=\"grid\" d=\"M%d %.1fH%d\"/><text x=\"%d\" y=\"%.1f\""
			" class=\"yt\">%s</text>\n", ML, y, ML + PW, ML - 6, y + 4, b);
	}
	fprintf(f, "<path class=\"axis\" d=\"M%d %dV%dH%d\"/>\n", ML, MT, MT + PH, ML + PW);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"xl\">%s</text>\n", ML + PW / 2, FH - 8, xlabel);
	fprintf(f, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"xl\">%s</text>\n",
		MT + PH / 2, ylabel);
	return top;
}

static void xticks(FILE *f, double xmax, double scale_div)
{
	double step = nice_step(xmax > 0 ? xmax : 1, 8);
	char b[32];

	for (double v = 0; v <= xmax + 1e-12; v += step) {
		double x = ML + (xmax > 0 ? v / xmax : 0) * PW;

		snprintf(b, sizeof(b), "%g", v / scale_div);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%s</text>\n", x,
			MT + PH + 16, b);
	}
}

/* A bar chart of @n values against an axis up to @top; @red stacks on top. */
static void bars(FILE *f, const double *v, char **labels, unsigned int n,
		 const char *color, const double *red, double top)
{
	double bw = n ? (double)PW / n : PW;

	for (unsigned int i = 0; i < n; i++) {
		double hgt = top > 0 ? v[i] / top * PH : 0;
		double x = ML + i * bw;

		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
			"<title>%s: %.0f</title></rect>\n", x + bw * 0.1, MT + PH - hgt, bw * 0.8,
			hgt, color, labels[i], v[i]);
		if (red && red[i] > 0) {
			double rh = red[i] / top * PH;

			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
				" fill=\"#d62728\"><title>lost: %.0f</title></rect>\n",
				x + bw * 0.1, MT + PH - hgt - rh, bw * 0.8, rh, red[i]);
		}
		if (n <= 40 || i % (n / 20 + 1) == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%s</text>\n",
				x + bw / 2, MT + PH + 16, labels[i]);
	}
}

static void fig_bars(FILE *f, const char *id, const char *title, const double *v,
		     char **labels, unsigned int n, const char *color, const char *xl,
		     const char *yl, const double *red)
{
	double max = 0, top;

	for (unsigned int i = 0; i < n; i++)
		if (v[i] + (red ? red[i] : 0) > max)
			max = v[i] + (red ? red[i] : 0);
	svg_open(f, id, title, FH);
	top = axes(f, max, xl, yl);
	bars(f, v, labels, n, color, red, top);
	svg_close(f);
}

static void fig_rate(FILE *f, const struct pgtrace_analysis *a)
{
	double max = 0, top, xmax, sec = a->bin_ns / 1e9;
	unsigned int n = a->nr_bins;

	for (unsigned int i = 0; i < n; i++)
		for (int t = 1; t <= 3; t++)
			if (a->bins[i].events[t] / sec > max)
				max = a->bins[i].events[t] / sec;
	svg_open(f, "fig-rate", "Events per second, by type", FH);
	top = axes(f, max, "time since start (s)", "events/s");
	xmax = n * sec;
	xticks(f, xmax, 1);
	for (int t = 1; t <= 3; t++) {
		fprintf(f, "<path class=\"line\" stroke=\"%s\" d=\"", type_color[t]);
		for (unsigned int i = 0; i < n; i++) {
			double x = ML + (i + 0.5) / n * PW;
			double y = MT + PH - a->bins[i].events[t] / sec / top * PH;

			fprintf(f, "%s%.1f %.1f", i ? "L" : "M", x, y);
		}
		if (!n)
			fprintf(f, "M%d %d", ML, MT + PH);
		fprintf(f, "\"/>\n<text x=\"%d\" y=\"%d\" fill=\"%s\" class=\"lg\">%s</text>\n",
			ML + 10 + 90 * (t - 1), MT + 12, type_color[t],
			t == 3 && !a->nr_zones && a->stats.by_type[3] ? "scavenge/reclaim" :
			pgtrace_event_type_name(t));
	}
	svg_close(f);
}

static void fig_orders(FILE *f, const struct pgtrace_stats *s)
{
	double v[PGTRACE_STATS_MAX_ORDER + 2];
	char *lab[PGTRACE_STATS_MAX_ORDER + 2], buf[PGTRACE_STATS_MAX_ORDER + 2][16];
	unsigned int n = 11;

	for (unsigned int o = 11; o <= PGTRACE_STATS_MAX_ORDER; o++)
		if (s->by_order[o])
			n = o + 1;
	for (unsigned int o = 0; o < n; o++) {
		v[o] = (double)s->by_order[o];
		snprintf(buf[o], sizeof(buf[o]), "%u", o);
		lab[o] = buf[o];
	}
	v[n] = (double)s->other_order;
	snprintf(buf[n], sizeof(buf[n]), "other");
	lab[n] = buf[n];
	fig_bars(f, "fig-orders", "Events by order (npages = 2^order)", v, lab, n + 1,
		 "#1f77b4", "order", "events", NULL);
}

/* Power-of-two ns bins of lifetimes, from 128 ns (2^7) to 2^45 ns (~10 h). */
#define LIFE_LO		7
#define LIFE_HI		46

static void life_label(char *buf, size_t n, double ns)
{
	if (ns < 1e3)
		snprintf(buf, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.0fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.0fms", ns / 1e6);
	else
		snprintf(buf, n, "%.0fs", ns / 1e9);
}

static void fig_lifetime(FILE *f, const struct pgtrace_analysis *a)
{
	enum { LO = LIFE_LO, HI = LIFE_HI };
	double v[HI - LO];
	char *lab[HI - LO], buf[HI - LO][16];
	unsigned int first = HI - LO, last = 0;

	memset(v, 0, sizeof(v));
	for (unsigned int b = 0; b < PGTRACE_LIFE_BUCKETS; b++) {
		uint64_t ns = pgtrace_life_bucket_ns(b);
		int k = ns ? 63 - __builtin_clzll(ns) : LO;

		if (k < LO)
			k = LO;
		if (k >= HI)
			k = HI - 1;
		v[k - LO] += (double)a->life_all.buckets[b];
	}
	for (unsigned int i = 0; i < HI - LO; i++) {
		double ns = ldexp(1, (int)(i + LO));

		if (v[i] && i < first)
			first = i;
		if (v[i])
			last = i;
		life_label(buf[i], sizeof(buf[i]), ns);
		lab[i] = buf[i];
	}
	if (first > last)
		first = last = 0;
	fig_bars(f, "fig-lifetime",
		 "Page lifetimes, allocation to free or reclaim (bins from 2^k ns)",
		 v + first, lab + first, last - first + 1, "#9467bd", "lifetime at least",
		 "blocks", NULL);
}

static void fig_cpus(FILE *f, const struct pgtrace_stats *s, bool go)
{
	unsigned int n = s->nr_cpus + (s->no_cpu.chunks ? 1 : 0);
	double *v = calloc(n + 1, sizeof(*v)), *red = calloc(n + 1, sizeof(*red));
	char **lab = calloc(n + 1, sizeof(*lab)), *buf = calloc(n + 1, 16);

	if (!v || !red || !lab || !buf)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		const struct pgtrace_cpu_stats *c = i < s->nr_cpus ? &s->cpus[i] : &s->no_cpu;

		v[i] = (double)c->events;
		red[i] = (double)c->lost;
		lab[i] = buf + 16 * i;
		if (i < s->nr_cpus)
			snprintf(lab[i], 16, "%u", i);
		else
			snprintf(lab[i], 16, "none");
	}
	fig_bars(f, "fig-cpus", go ? "Events per P (none: no P), lost in red" :
		 "Events per CPU, lost in red", v, lab, n, "#ff7f0e", go ? "P" : "CPU",
		 "events", red);
out:
	free(v);
	free(red);
	free(lab);
	free(buf);
}

static void fig_heatmap(FILE *f, const struct heat *hm, const struct pgtrace_analysis *a,
			const struct pagetrace_header *h)
{
	int ih = 400, fh = MT + ih + MB;
	double span = (double)hm->ncols * hm->col_ns / 1e9;

	svg_open(f, "fig-heatmap", "Physical memory over time: allocated share (blue), "
		 "reclaimed (red), free (white), no zone (grey)", fh);
	fprintf(f, "<image x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\""
		" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"",
		ML, MT, PW, ih);
	put_heatmap_png(f, hm);
	fprintf(f, "\"/>\n<path class=\"axis\" d=\"M%d %dV%dH%d\"/>\n", ML, MT, MT + ih, ML + PW);
	/* Zone boundaries and names on the PFN axis. */
	for (unsigned int i = 0; i < a->nr_zones; i++) {
		const struct pgtrace_zone *z = &a->zones[i];
		double y = MT + ih - (double)(z->start_pfn - hm->lo) / (hm->hi - hm->lo) * ih;

		/* Names above the line, first PFNs below, inside the plot. */
		fprintf(f, "<path class=\"zl\" d=\"M%d %.1fH%d\"/><text x=\"%d\" y=\"%.1f\""
			" class=\"zt\">node %u %s</text><text x=\"%d\" y=\"%.1f\" class=\"zt\">"
			"0x%" PRIx64 "</text>\n", ML, y, ML + PW, ML + PW - 4, y - 3, z->node,
			z->name, ML + PW - 4, y + 11, z->start_pfn);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"yt\">0x%" PRIx64 "</text>"
		"<text x=\"%d\" y=\"%d\" class=\"yt\">0x%" PRIx64 "</text>\n",
		ML - 6, MT + 10, hm->hi, ML - 6, MT + ih, hm->lo);
	{
		/* Round ticks in time since start_ns, which may be before t0. */
		double rel0 = (double)(int64_t)(hm->t0 - h->start_ns) / 1e9;
		double step = nice_step(span > 0 ? span : 1, 8);

		for (double v = ceil(rel0 / step) * step; v <= rel0 + span + 1e-12; v += step)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%g</text>\n",
				ML + (v - rel0) / span * PW, MT + ih + 16, fabs(v) < step / 1e6 ? 0 : v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"xl\">time since start (s); %u x %u cells of "
		"%" PRIu64 " pages x %.3g ms</text>\n", ML + PW / 2, fh - 8, hm->ncols, hm->h,
		hm->row_pages, hm->col_ns / 1e6);
	fprintf(f, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"xl\">%s</text>\n",
		MT + ih / 2, h->header_size ? "PFN" : "Go heap page (address >> 13)");
	svg_close(f);
}

static void html_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

static void summary(FILE *f, const char *path, const struct pgtrace_reader *r,
		    const struct pgtrace_analysis *a)
{
	const struct pagetrace_header *h = pgtrace_reader_header(r);
	const struct pgtrace_stats *s = &a->stats;
	char t[32];

	fprintf(f, "<table class=\"sum\">\n<tr><th>trace</th><td>");
	html_escape(f, path);
	fprintf(f, "%s</td></tr>\n", h->header_size ? "" : " (Go runtime page trace)");
	/* A trace-cmd file: what it lacks, as stderr said it. */
	if (tracedat_in_notes()) {
		fprintf(f, "<tr><th>source</th><td>");
		html_escape(f, tracedat_in_notes());
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "<tr><th>kernel</th><td>");
	html_escape(f, pgtrace_reader_kernel_release(r));
	fmt_rel_time(t, s->last_ns, s->first_ns);
	fprintf(f, "</td></tr>\n<tr><th>events</th><td>%" PRIu64 " (alloc %" PRIu64 ", free %"
		PRIu64 ", %s %" PRIu64 ") over %s s</td></tr>\n", s->events, s->by_type[1],
		s->by_type[2], h->header_size ? "reclaim" : "scavenge", s->by_type[3], t);
	fmt_rel_time(t, a->peak_ns, h->start_ns);
	fprintf(f, "<tr><th>pages in use</th><td>peak %" PRIu64 " at %s s; %" PRIu64
		" at the end; %" PRIu64 " at the start (snapshot)</td></tr>\n", a->peak_in_use,
		a->peak_in_use ? t : "0", a->in_use, a->snapshot_pages);
	fprintf(f, "<tr><th>lifetimes</th><td>%" PRIu64 " measured: p50 %.3g ms, p90 %.3g ms,"
		" p99 %.3g ms</td></tr>\n", a->life_all.count,
		pgtrace_life_percentile(&a->life_all, 50) / 1e6,
		pgtrace_life_percentile(&a->life_all, 90) / 1e6,
		pgtrace_life_percentile(&a->life_all, 99) / 1e6);
	fprintf(f, "<tr><th>lost</th><td>%" PRIu64 " events in %u chunks listed; %" PRIu64
		" chunks missing</td></tr>\n", s->lost, a->nr_lost_sites, s->missing_chunks);
	fprintf(f, "<tr><th>unmatched</th><td>%" PRIu64 " frees, %" PRIu64
		" reclaims of pages not known allocated (%" PRIu64 " and %" PRIu64
		" while the snapshot was taken)</td></tr>\n</table>\n",
		a->unmatched_events[PGTRACE_EV_FREE], a->unmatched_events[PGTRACE_EV_RECLAIM],
		a->unmatched_in_snapshot_events[PGTRACE_EV_FREE],
		a->unmatched_in_snapshot_events[PGTRACE_EV_RECLAIM]);
}

#define TASK_ROWS	25

/* The processes that allocated most, and the rest summed up in one row. */
static void table_tasks(FILE *f, const struct pgtrace_reader *r, const struct by_task *b)
{
	struct task_stats *list, rest = { 0 };
	size_t n, i;

	list = by_task_list(b, &n);
	if (!list)
		return;
	fprintf(f, "<h2>Pages by process</h2>\n<p>Allocations count for the process that "
		"allocated, frees and reclaims for the one that freed (0, the kernel: "
		"interrupts and the idle task); in use: pages the process allocated "
		"that are still allocated at the end.</p>\n<table id=\"tab-tasks\" "
		"class=\"tasks\">\n<tr><th>tgid</th><th>process</th><th>allocated</th>"
		"<th>freed</th><th>reclaimed</th><th>in use at end</th><th>allocations</th>"
		"</tr>\n");
	for (i = 0; i < n; i++) {
		const struct task_stats *t = &list[i];

		if (i >= TASK_ROWS) {
			for (int k = 0; k < 4; k++) {
				rest.pages[k] += t->pages[k];
				rest.events[k] += t->events[k];
			}
			rest.in_use += t->in_use;
			continue;
		}
		fprintf(f, "<tr><td>%" PRId64 "</td><td>", t->tgid);
		html_escape(f, task_name(r, t->tgid));
		fprintf(f, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n",
			t->pages[PGTRACE_EV_ALLOC], t->pages[PGTRACE_EV_FREE], t->pages[PGTRACE_EV_RECLAIM],
			t->in_use, t->events[PGTRACE_EV_ALLOC]);
	}
	if (n > TASK_ROWS)
		fprintf(f, "<tr><td></td><td>%zu more</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td></tr>\n", n - TASK_ROWS, rest.pages[PGTRACE_EV_ALLOC],
			rest.pages[PGTRACE_EV_FREE], rest.pages[PGTRACE_EV_RECLAIM], rest.in_use,
			rest.events[PGTRACE_EV_ALLOC]);
	fprintf(f, "</table>\n");
	free(list);
}

static void fig_reclaim_life(FILE *f, const struct pgtrace_reclaim_life *l)
{
	double v[LIFE_HI - LIFE_LO];
	char *lab[LIFE_HI - LIFE_LO], buf[LIFE_HI - LIFE_LO][16];
	unsigned int first = LIFE_HI - LIFE_LO, last = 0;

	memset(v, 0, sizeof(v));
	for (unsigned int b = 0; b < PGTRACE_RECLAIM_LIFE_BUCKETS; b++) {
		uint64_t ns = pgtrace_reclaim_bucket_ns(b);
		int k = ns ? 63 - __builtin_clzll(ns) : LIFE_LO;

		if (k < LIFE_LO)
			k = LIFE_LO;
		if (k >= LIFE_HI)
			k = LIFE_HI - 1;
		v[k - LIFE_LO] += (double)l->buckets[b];
	}
	for (unsigned int i = 0; i < LIFE_HI - LIFE_LO; i++) {
		if (v[i] && i < first)
			first = i;
		if (v[i])
			last = i;
		life_label(buf[i], sizeof(buf[i]), ldexp(1, (int)(i + LIFE_LO)));
		lab[i] = buf[i];
	}
	if (first > last)
		first = last = 0;
	fig_bars(f, "fig-reclaim-life",
		 "Reclaimed pages by how long they lived, allocation to reclaim (bins from 2^k ns)",
		 v + first, lab + first, last - first + 1, "#d62728", "lifetime at least",
		 "pages", NULL);
}

static void reclaim_row(FILE *f, const struct pgtrace_reclaim_group *g)
{
	fprintf(f, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.3g</td><td>%.3g</td>"
		"<td>%.3g</td></tr>\n", g->pages, g->blocks,
		pgtrace_reclaim_percentile(&g->life, 50) / 1e6,
		pgtrace_reclaim_percentile(&g->life, 90) / 1e6, g->life.max_ns / 1e6);
}

/* Up to TASK_ROWS groups of @g, the rest summed up in one row (without lifetimes). */
static void reclaim_rows(FILE *f, const struct pgtrace_reader *r,
			 const struct pgtrace_reclaim_group *g, size_t n, bool stacks)
{
	uint64_t pages = 0, blocks = 0;

	for (size_t i = 0; i < n; i++) {
		const uint64_t *frames;
		int depth;

		if (i >= TASK_ROWS) {
			pages += g[i].pages;
			blocks += g[i].blocks;
			continue;
		}
		if (!stacks) {
			fprintf(f, "<tr><td>%" PRId64 "</td><td>", g[i].key);
			html_escape(f, task_name(r, g[i].key));
			reclaim_row(f, &g[i]);
			continue;
		}
		if (!g[i].key || g[i].key == PGTRACE_STACK_UNKNOWN) {
			fprintf(f, "<tr><td></td><td>%s", g[i].key ? "sampled, stack unknown" :
				"not sampled");
			reclaim_row(f, &g[i]);
			continue;
		}
		fprintf(f, "<tr><td>%" PRId64 "</td><td>", g[i].key);
		depth = pgtrace_reader_stack(r, (uint32_t)g[i].key, &frames, NULL);
		for (int k = 0; k < depth && k < 3; k++) {
			const char *name = pgtrace_reader_symbol(r, frames[k], NULL);

			fputs(k ? " &lt; " : "", f);
			if (name)
				html_escape(f, name);
			else
				fprintf(f, "0x%" PRIx64, frames[k]);
		}
		reclaim_row(f, &g[i]);
	}
	if (n > TASK_ROWS)
		fprintf(f, "<tr><td></td><td>%zu more</td><td>%" PRIu64 "</td><td>%" PRIu64
			"</td><td></td><td></td><td></td></tr>\n", n - TASK_ROWS, pages, blocks);
}

/* Who caused reclaim: the pages reclaimed, by who allocated them. */
static void section_reclaim(FILE *f, const struct pgtrace_reader *r, const struct pgtrace_reclaim *rc)
{
	static const char head[] = "<th>pages reclaimed</th><th>allocations</th>"
				   "<th>p50 life (ms)</th><th>p90 (ms)</th><th>max (ms)</th></tr>\n";
	const struct pagetrace_rec_stacks *st = pgtrace_reader_stacks(r);

	fprintf(f, "<section id=\"sec-reclaim\">\n<h2>Who caused reclaim</h2>\n");
	if (!rc->events) {
		fprintf(f, "<p>No page was reclaimed in this trace.</p>\n</section>\n");
		return;
	}
	fprintf(f, "<p>%" PRIu64 " pages reclaimed in %" PRIu64 " events: %" PRIu64 " of them "
		"from %" PRIu64 " allocations in the trace, %" PRIu64 " allocated before it "
		"(listed in the snapshot; by whom is not known), %" PRIu64 " whose allocation "
		"is not in the trace (%s). "
		"Pages reclaimed out of a larger block count against the allocation of the "
		"block; lifetimes run from the allocation to the reclaim, one per page.</p>\n",
		rc->pages, rc->events, rc->traced_pages, rc->traced_blocks, rc->snapshot_pages,
		rc->unknown_pages, pgtrace_reader_header(r)->header_size ?
		"before the session without a snapshot, or lost" :
		"Go scavenges pages that are free, not allocated");
	/* Nothing to draw or to list when no page reclaimed has a known allocation. */
	if (!rc->traced_pages) {
		fprintf(f, "</section>\n");
		return;
	}
	fig_reclaim_life(f, &rc->life);
	fprintf(f, "<table id=\"tab-reclaim-tasks\" class=\"tasks\">\n<tr><th>tgid</th>"
		"<th>allocated by</th>%s", head);
	reclaim_rows(f, r, rc->by_task, rc->nr_tasks, false);
	fprintf(f, "</table>\n");
	if (st) {
		fprintf(f, "<p>By the call stack of the allocation, where it was sampled (about "
			"one allocation per %u pages).</p>\n<table id=\"tab-reclaim-stacks\" "
			"class=\"tasks\">\n<tr><th>stack</th><th>frames, innermost first</th>%s",
			st->rate, head);
		reclaim_rows(f, r, rc->by_stack, rc->nr_stacks, true);
		fprintf(f, "</table>\n");
	}
	fprintf(f, "</section>\n");
}

static const char css[] =
	"body{font:14px sans-serif;margin:20px;color:#222}"
	"figure{margin:24px 0}figcaption{font-weight:bold;margin-bottom:6px}"
	"svg text{font:11px sans-serif}.yt{text-anchor:end}.xt{text-anchor:middle}"
	".xl{text-anchor:middle;font-size:12px}.axis{stroke:#000;fill:none}"
	".grid{stroke:#ddd;fill:none}.line{fill:none;stroke-width:1.5}"
	".lg{font-weight:bold}.zl{stroke:#000;stroke-dasharray:4 3;fill:none}"
	".zt{text-anchor:end;font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:3px}table.sum th{text-align:left;padding-right:16px}"
	"h2{font-size:14px}table.tasks{border-collapse:collapse}"
	"table.tasks td,table.tasks th{padding:2px 10px;border-bottom:1px solid #ddd}"
	"table.tasks td{text-align:right}table.tasks td:nth-child(2){text-align:left}"
	"tr.off td{color:#c00;font-weight:bold}tr.short td{color:#777}";

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "go", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct pgtrace_analysis_params ap = { .event = report_event, .change = report_change };
	const char *path = NULL, *outpath = NULL;
	struct heat hm = { 0 };
	struct pgtrace_reclaim rc = { 0 };
	struct report_hooks hooks = { .hm = &hm, .reclaim = &rc };
	struct pgtrace_analysis a = { 0 };
	struct pgtrace_stats s = { 0 };
	unsigned int flags = 0;
	struct pgtrace_reader *r;
	int c, fd, ret;
	FILE *f;

	while ((c = getopt_long(argc, argv, "o:gh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outpath = optarg;
			break;
		case 'g':
			flags |= PGTRACE_READER_GO;
			break;
		case 'h':
			printf("usage: pagetrace report [--go] FILE -o OUT.html\n");
			return 0;
		default:
			fprintf(stderr, "usage: pagetrace report [--go] FILE -o OUT.html\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !outpath) {
		fprintf(stderr, "usage: pagetrace report [--go] FILE -o OUT.html\n");
		return EXIT_USAGE;
	}
	path = argv[optind];
	if (!strcmp(path, "-")) {
		fprintf(stderr, "pagetrace: report reads FILE twice: it cannot be stdin\n");
		return EXIT_USAGE;
	}
	r = open_trace(path, flags, &fd);
	if (!r)
		return EXIT_TRACE;
	ret = scan(r, &hm, &s);
	pgtrace_stats_free(&s);
	if (ret)
		trace_error(path, r, ret);
	close_trace(r, fd);
	if (ret)
		goto out;
	r = open_trace(path, flags, &fd);
	if (!r) {
		ret = -EIO;
		goto out;
	}
	if (pgtrace_reader_header(r)->flags & PAGETRACE_FLAG_TASKS) {
		hooks.tasks = by_task_new();
		if (!hooks.tasks) {
			fprintf(stderr, "pagetrace: %s: out of memory\n", path);
			close_trace(r, fd);
			ret = -ENOMEM;
			goto out;
		}
	}
	ap.arg = &hooks;
	ret = pgtrace_reclaim_init(&rc, NULL);
	if (!ret)
		ret = pgtrace_analysis_collect(r, &a, &ap);
	if (!ret)
		ret = pgtrace_reclaim_finish(&rc);
	if (ret) {
		trace_error(path, r, ret);
		close_trace(r, fd);
		goto out;
	}
	while (hm.cur < hm.ncols)
		heat_snap(&hm, hm.cur++);
	f = fopen(outpath, "w");
	if (!f) {
		fprintf(stderr, "pagetrace: %s: %s\n", outpath, strerror(errno));
		close_trace(r, fd);
		ret = -EIO;
		goto out;
	}
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<title>pagetrace report</title><style>%s</style></head><body>\n"
		"<h1>pagetrace report</h1>\n", css);
	summary(f, path, r, &a);
	fig_heatmap(f, &hm, &a, pgtrace_reader_header(r));
	fig_rate(f, &a);
	fig_orders(f, &a.stats);
	fig_lifetime(f, &a);
	fig_cpus(f, &a.stats, !pgtrace_reader_header(r)->header_size);
	if (hooks.tasks)
		table_tasks(f, r, hooks.tasks);
	section_reclaim(f, r, &rc);
	report_kernel_counts(f, r, &a);
	fprintf(f, "</body></html>\n");
	close_trace(r, fd);
	if (fflush(f) || ferror(f)) {
		fprintf(stderr, "pagetrace: %s: write error\n", outpath);
		ret = -EIO;
	}
	fclose(f);
out:
	pgtrace_analysis_free(&a);
	by_task_free(hooks.tasks);
	pgtrace_reclaim_free(&rc);
	free(hm.live);
	free(hm.cap);
	free(hm.occ);
	free(hm.recl);
	return ret ? EXIT_TRACE : 0;
}
