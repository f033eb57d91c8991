// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace top: a view of page allocation refreshed every interval, like
 * top(1) or slabtop(1), live from /dev/pagetrace or replayed from a file.
 *
 * Both ways run the library's analysis, so that events come in time order
 * and pages in use are matched as pagetrace stats matches them; the
 * analysis' hooks feed the model (top_model.c), and a cut of the model is
 * one frame.
 *
 * A replay is one thread: the hooks cut a frame each time an event crosses
 * the next boundary of trace time (interval x speed), then wait until the
 * frame's wall-clock time has come, reading keys meanwhile, and draw it.
 * The frames are therefore the same at every run, which is what lets the
 * tests check their numbers.
 *
 * Live, the session is mapped as pagetrace record maps it; the main thread
 * copies closed chunks from the mapping into a pipe, and an analyzer thread
 * runs the analysis on the other end.  The model is behind a lock that the
 * hooks take; at each interval the main thread takes it and cuts, between
 * two events.  The model keeps its own copies of task names and stacks, so
 * a cut does not touch the reader, which the analyzer may be in.  A pipe
 * rather than a reader over the mapping, because the reader and the
 * analysis pull their input (read()), and the ring's chunks must be handed
 * back as soon as they are copied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include "top.h"

#define DEV		"/dev/pagetrace"
#define PIPE_SIZE	(1 << 20)
#define CG_CACHE	4096
#define CG_TTL_NS	(10ULL * 1000000000ULL)

struct opts {
	double		interval;	/* seconds */
	double		speed;
	unsigned long	iterations;	/* 0: until q */
	bool		batch;
	enum top_sort	sort;
	const char	*replay;
};

/* What is on the screen, and how to draw it again. */
struct screen {
	const struct opts *o;
	struct top_view	view;
	struct top_frame shown;
	bool		have_frame;
	unsigned long	frames_shown;
	char		*buf;
	size_t		len;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void top_usage(FILE *f)
{
	fprintf(f,
		"usage: pagetrace top [-d SECS] [-n ITER] [-b] [-s KEY] [--replay FILE [--speed X]]\n\n"
		"Page allocation, free and reclaim rates and pages in use by task, cgroup,\n"
		"order, zone and sampled stack, refreshed every interval: live from\n"
		DEV " (root), or replayed from a recorded trace in trace time.\n\n"
		"  -d, --delay SECS      refresh interval (default 1; fractions allowed)\n"
		"  -n, --iterations ITER this many frames, then exit\n"
		"  -b, --batch           plain text frames on stdout, no terminal control\n"
		"  -s, --sort KEY        alloc, free, inuse or reclaim (keys a, f, u, r)\n"
		"  -r, --replay FILE     replay a trace instead of the live session\n"
		"  -x, --speed X         replay X trace seconds per second (default 1)\n\n"
		"keys: a sort by alloc rate, f by free rate, u by pages in use, r by reclaim\n"
		"rate, q quits.\n");
}

static int sort_key(int c, enum top_sort *s)
{
	switch (c) {
	case 'a':
		*s = TOP_SORT_ALLOC;
		return 1;
	case 'f':
		*s = TOP_SORT_FREE;
		return 1;
	case 'u':
		*s = TOP_SORT_INUSE;
		return 1;
	case 'r':
		*s = TOP_SORT_RECLAIM;
		return 1;
	}
	return 0;
}

static void redraw(struct screen *s)
{
	FILE *f;

	if (!s->have_frame)
		return;
	top_frame_sort(&s->shown, s->view.sort);
	if (s->o->batch) {
		top_draw(stdout, &s->view, &s->shown);
		printf("\n");
		fflush(stdout);
		return;
	}
	top_term_size(&s->view.width, &s->view.height);
	free(s->buf);
	s->buf = NULL;
	f = open_memstream(&s->buf, &s->len);
	if (!f)
		return;
	top_draw(f, &s->view, &s->shown);
	if (fclose(f))
		return;
	top_term_show(s->buf, s->len);
}

/*
 * Wait until @deadline (CLOCK_MONOTONIC ns), handling keys; @fd as for
 * top_term_wait(), @on_fd called when it is readable.  Returns 1 to quit.
 */
static int wait_until(struct screen *s, uint64_t deadline, int fd,
		      int (*on_fd)(void *), void *arg)
{
	for (;;) {
		uint64_t now = now_ns();
		int ms, k;

		if (now >= deadline)
			return top_term_stopped();
		ms = (int)((deadline - now + 999999) / 1000000);
		k = top_term_wait(ms, fd);
		if (k == TOP_KEY_QUIT || k == 'q' || k == 'Q')
			return 1;
		if (k == TOP_KEY_FD && on_fd && on_fd(arg))
			return 1;
		if (k == TOP_KEY_RESIZE || k == 12 /* ^L */ || sort_key(k, &s->view.sort))
			redraw(s);
	}
}

/* Until the first interval is over, say what is coming. */
static void placeholder(const struct screen *s)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line), "pagetrace top - %s: the first frame comes after "
		     "one interval (q quits)\n", s->view.title);
	if (n > 0)
		top_term_show(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* A new frame on the screen; 1 when -n frames have been shown. */
static int show(struct screen *s, struct top_frame *f)
{
	top_frame_free(&s->shown);
	s->shown = *f;
	memset(f, 0, sizeof(*f));
	s->have_frame = true;
	redraw(s);
	s->frames_shown++;
	/* A reader of -b that went away (| head) ends it, as it would top -b. */
	if (s->o->batch && ferror(stdout))
		return 1;
	return s->o->iterations && s->frames_shown >= s->o->iterations;
}

/* ------------------------------------------------------------ symbols */

struct syms {
	struct pgtrace_reader	*r;	/* a second reader of the file, at its end */
	int			fd;
	struct pgtrace_kallsyms	*k;
};

static const char *sym_name(uint64_t addr, void *arg)
{
	struct syms *y = arg;
	const char *n = NULL;

	if (y->r)
		n = pgtrace_reader_symbol(y->r, addr, NULL);
	if (!n && y->k)
		n = pgtrace_kallsyms_lookup(y->k, addr, NULL);
	return n;
}

/*
 * pagetrace record appends the frames' names at the end of a trace, after
 * every event a replay needs them for: read the file once up front.
 */
static void syms_open(struct syms *y, const char *path, const struct pagetrace_rec_stacks *st)
{
	struct pgtrace_compact_event ev[256];
	const struct pgtrace_chunk *c;
	struct stat sb;

	y->fd = -1;
	if (!st)
		return;
	if (path && strcmp(path, "-") && !stat(path, &sb) && S_ISREG(sb.st_mode)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && !pgtrace_reader_open_fd(&y->r, fd, 0)) {
			while (pgtrace_reader_next_run(y->r, ev, 256, &c) > 0)
				;
			y->fd = fd;
			if (pgtrace_reader_counters(y->r)->symbols)
				return;
		}
		pgtrace_reader_close(y->r);
		y->r = NULL;
		if (fd >= 0)
			close(fd);
		y->fd = -1;
	}
	/* Else the running kernel's, if the trace is of this boot. */
	open_kallsyms("/proc/kallsyms", st, &y->k, true);
}

static void syms_close(struct syms *y)
{
	pgtrace_reader_close(y->r);
	if (y->fd >= 0)
		close(y->fd);
	pgtrace_kallsyms_close(y->k);
}

/* ------------------------------------------------------------- replay */

struct replay {
	struct screen	*s;
	struct top_model *m;
	struct top_frame next;
	uint64_t	origin;		/* header start_ns */
	uint64_t	step;		/* trace ns per frame */
	uint64_t	cut_at;		/* end of the frame being counted */
	uint64_t	wall0;
	int		err;
	bool		quit;
};

/* Show frame of the interval ending at @end once its time has come. */
static int replay_frame(struct replay *p, uint64_t end, bool ended)
{
	uint64_t due = p->wall0 + (uint64_t)((end - p->origin) / p->s->o->speed);
	int ret;

	ret = top_model_cut(p->m, end, (int64_t)(end - p->origin), &p->next);
	if (ret) {
		p->err = ret;
		return 1;
	}
	p->next.ended = ended;
	if (wait_until(p->s, due, -1, NULL, NULL) || show(p->s, &p->next)) {
		p->quit = true;
		return 1;
	}
	return 0;
}

/* Every boundary of trace time before @t closes a frame. */
static int replay_reach(struct replay *p, uint64_t t)
{
	if (p->quit || p->err)
		return 1;
	while (t >= p->cut_at) {
		if (replay_frame(p, p->cut_at, false))
			return 1;
		p->cut_at += p->step;
	}
	return 0;
}

static int replay_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a,
			void *arg)
{
	struct replay *p = arg;

	if (!(ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT) && replay_reach(p, ev->time_ns))
		return p->err ? p->err : -ECANCELED;
	return top_model_event(ev, a, p->m);
}

static void replay_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
			  unsigned int order, void *arg)
{
	struct replay *p = arg;

	/* The frame ends before the event this change belongs to. */
	if (time_ns >= p->origin)
		replay_reach(p, time_ns);
	top_model_change(time_ns, pfn, npages, sign, order, p->m);
}

static int run_replay(struct screen *s, const struct opts *o)
{
	struct replay p = { .s = s };
	struct pgtrace_analysis a = { 0 };
	struct pgtrace_analysis_params ap = {
		.event = replay_event, .change = replay_change, .arg = &p,
	};
	struct syms y = { .fd = -1 };
	struct pgtrace_reader *r;
	char title[256];
	int fd, ret, rc = 0;

	r = open_trace(o->replay, 0, &fd);
	if (!r)
		return EXIT_TRACE;
	p.m = top_model_new(r, &a);
	if (!p.m) {
		fprintf(stderr, "pagetrace: top: out of memory\n");
		close_trace(r, fd);
		return EXIT_TRACE;
	}
	syms_open(&y, o->replay, pgtrace_reader_stacks(r));
	if (pgtrace_reader_filter(r) && pgtrace_reader_filter(r)->cgroup_id) {
		static char note[160];

		snprintf(note, sizeof(note), "cgroups: every event is of cgroup id %" PRIu64
			 " or below it (the trace was filtered by filter_cgroup)",
			 (uint64_t)pgtrace_reader_filter(r)->cgroup_id);
		top_model_set_cgroups(p.m, NULL, NULL, note);
	}
	snprintf(title, sizeof(title), "replay %s (x%g)", o->replay, o->speed);
	s->view.title = title;
	s->view.symbol = sym_name;
	s->view.symbol_arg = &y;
	p.origin = pgtrace_reader_header(r)->start_ns;
	p.step = (uint64_t)(o->interval * o->speed * 1e9);
	if (!p.step)
		p.step = 1;
	p.cut_at = p.origin + p.step;
	top_model_set_start(p.m, p.origin);
	p.wall0 = now_ns();

	if (!o->batch && top_term_open()) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (!o->batch)
		placeholder(s);
	ret = pgtrace_analysis_collect(r, &a, &ap);
	if (p.err) {
		ret = p.err;
	} else if (!p.quit) {
		uint64_t last = top_model_last_ns(p.m);
		uint64_t start = p.cut_at - p.step;

		/*
		 * The rest of the trace: up to its last event, also when it is
		 * cut off or corrupt after that (then said below).
		 */
		replay_frame(&p, last > start ? last : start, true);
		if (p.err)
			ret = p.err;
	}
	if (!p.quit && !p.err) {
		if (ret < 0) {
			static char msg[300];

			snprintf(msg, sizeof(msg), "pagetrace: %s: %s", o->replay,
				 *pgtrace_reader_error(r) ? pgtrace_reader_error(r) :
				 strerror(-ret));
			s->view.status = msg;
		} else {
			s->view.status = "(end of the trace: q quits)";
		}
		/* Keep the last frame up until q, as top keeps its screen. */
		if (!o->batch) {
			redraw(s);
			while (!wait_until(s, UINT64_MAX, -1, NULL, NULL))
				;
		}
	}
	top_term_close();
	if (ret < 0 && ret != -ECANCELED) {
		if (p.err)
			fprintf(stderr, "pagetrace: top: %s\n", strerror(-p.err));
		else
			trace_error(o->replay, r, ret);
		rc = EXIT_TRACE;
	}
out:
	top_frame_free(&p.next);
	top_model_free(p.m);
	pgtrace_analysis_free(&a);
	syms_close(&y);
	close_trace(r, fd);
	return rc;
}

/* --------------------------------------------------------------- live */

struct cg_ent {
	int64_t		tgid;
	uint64_t	when;
	char		path[64];
};

struct live {
	int		dev;
	struct pgtrace_ring *ring;
	const struct pagetrace_meta *meta;
	int		pipe_r, pipe_w;
	pthread_t	thread;
	bool		started;
	pthread_mutex_t	lock;
	/* Under lock: */
	struct top_model *m;
	struct pgtrace_reader *r;
	struct pgtrace_analysis a;
	bool		done;
	int		err;
	char		errmsg[256];
	struct top_frame cut;
	bool		failed;		/* the main thread's copying failed */
	/* The analyzer's own: */
	struct cg_ent	*cg;
	uint64_t	wall0;
};

static void device_error(int err)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		fprintf(stderr, "pagetrace: top: " DEV ": %s: the pagetrace module is not "
			"loaded (insmod pagetrace.ko, or modprobe pagetrace); or replay a "
			"recorded trace with --replay FILE\n", strerror(err));
		break;
	case EACCES:
	case EPERM:
		fprintf(stderr, "pagetrace: top: " DEV ": %s: the live view needs root "
			"(CAP_SYS_ADMIN); or replay a recorded trace with --replay FILE\n",
			strerror(err));
		break;
	case EBUSY:
		fprintf(stderr, "pagetrace: top: " DEV ": %s: another session is running "
			"(pagetrace record, pagetrace.service or another top: one session at a "
			"time); with the service, systemctl kill -s USR1 pagetrace writes a file "
			"for --replay FILE\n", strerror(err));
		break;
	default:
		fprintf(stderr, "pagetrace: top: " DEV ": %s\n", strerror(err));
	}
}

/*
 * The cgroup (v2, or v1's memory controller) of a live process, from
 * /proc; cached, since every cut asks for every task.  The analyzer
 * thread's alone.
 */
static const char *live_cgroup(int64_t tgid, void *arg)
{
	struct live *l = arg;
	struct cg_ent *e = &l->cg[(uint64_t)tgid % CG_CACHE];
	uint64_t now = now_ns();
	char path[64], line[512];
	FILE *f;

	if (e->tgid == tgid && now - e->when < CG_TTL_NS)
		return e->path;
	e->tgid = tgid;
	e->when = now;
	snprintf(e->path, sizeof(e->path), "(exited)");
	snprintf(path, sizeof(path), "/proc/%" PRId64 "/cgroup", tgid);
	f = fopen(path, "re");
	if (!f)
		return e->path;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *q = p ? strchr(p + 1, ':') : NULL;

		if (!q)
			continue;
		q[strcspn(q, "\n")] = '\0';
		/* "0::/path" is v2; on v1 the memory controller's line counts. */
		if (!strncmp(line, "0::", 3) || !strncmp(p, ":memory:", 8)) {
			snprintf(e->path, sizeof(e->path), "%s", q + 1);
			if (!strncmp(line, "0::", 3))
				break;
		}
	}
	fclose(f);
	return e->path;
}

static int live_event(const struct pgtrace_event *ev, const struct pgtrace_analysis *a,
		      void *arg)
{
	struct live *l = arg;
	int ret;

	pthread_mutex_lock(&l->lock);
	ret = top_model_event(ev, a, l->m);
	pthread_mutex_unlock(&l->lock);
	return ret;
}

static void live_change(uint64_t time_ns, uint64_t pfn, uint64_t npages, int sign,
			unsigned int order, void *arg)
{
	struct live *l = arg;

	pthread_mutex_lock(&l->lock);
	top_model_change(time_ns, pfn, npages, sign, order, l->m);
	pthread_mutex_unlock(&l->lock);
}

static void *analyzer(void *arg)
{
	struct live *l = arg;
	struct pgtrace_analysis_params ap = {
		.event = live_event, .change = live_change, .arg = l,
	};
	const struct pgtrace_session *ses;
	struct pgtrace_reader *r;
	int ret;

	ret = pgtrace_reader_open_fd(&r, l->pipe_r, 0);
	pthread_mutex_lock(&l->lock);
	if (ret) {
		snprintf(l->errmsg, sizeof(l->errmsg), "%s",
			 r ? pgtrace_reader_error(r) : strerror(-ret));
		pgtrace_reader_close(r);
		goto done;
	}
	l->r = r;
	l->m = top_model_new(r, &l->a);
	if (!l->m) {
		ret = -ENOMEM;
		goto done;
	}
	top_model_set_start(l->m, l->wall0);
	top_model_set_cgroups(l->m, live_cgroup, l,
			      "cgroups: the tasks' cgroups now, from /proc/PID/cgroup "
			      "(pages in use: those their tasks allocated)");
	pthread_mutex_unlock(&l->lock);

	/*
	 * Events wait for every CPU's later ones to be in time order; the
	 * main thread flushes the buffers at each interval, so a quiet CPU
	 * holds the others back only this long.
	 */
	ses = pgtrace_reader_session(r);
	ap.hold_ns = (2ULL * (ses && ses->flush_ms ? ses->flush_ms : 250) + 250) * 1000000ULL;
	ret = pgtrace_analysis_collect(r, &l->a, &ap);
	pthread_mutex_lock(&l->lock);
	if (ret < 0 && *pgtrace_reader_error(r))
		snprintf(l->errmsg, sizeof(l->errmsg), "%s", pgtrace_reader_error(r));
done:
	l->err = ret;
	l->done = true;
	/* The main thread's next write to the pipe fails, and it stops. */
	close(l->pipe_r);
	l->pipe_r = -1;
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= w;
	}
	return 0;
}

/* Copy every CPU's closed chunks into the pipe and give them back. */
static int live_drain(void *arg)
{
	struct live *l = arg;
	int64_t moved;

	for (unsigned int cpu = 0; cpu < l->meta->nr_cpus; cpu++) {
		uint64_t pos;
		int64_t n = pgtrace_ring_peek(l->ring, cpu, &pos);

		for (int64_t i = 0; i < n; i++) {
			const struct pagetrace_chunk *ch;
			size_t len;

			if (pgtrace_ring_chunk(l->ring, cpu, pos + i, &ch, &len)) {
				fprintf(stderr, "pagetrace: top: cpu %u chunk %" PRIu64
					" is corrupt\n", cpu, pos + i);
				l->failed = true;
				return 1;
			}
			if (write_all(l->pipe_w, ch, len)) {
				/* The analyzer stopped: it says why. */
				l->failed = true;
				return 1;
			}
		}
		if (n > 0)
			pgtrace_ring_advance(l->ring, cpu, n);
	}
	moved = pgtrace_ring_consume(l->ring);
	if (moved < 0) {
		fprintf(stderr, "pagetrace: top: giving buffers back failed: %s\n",
			strerror((int)-moved));
		l->failed = true;
		return 1;
	}
	return 0;
}

/* The kernel's lost count, the losses not yet in a chunk included. */
static uint64_t live_lost(const struct live *l)
{
	unsigned int nr = l->meta->nr_cpus;
	struct pagetrace_cpu_stats *cs = calloc(nr, sizeof(*cs));
	struct pagetrace_stats st = { .cpus = (uintptr_t)cs, .nr_cpus = nr };
	uint64_t lost = 0;

	if (cs && !ioctl(l->dev, PAGETRACE_IOC_STATS, &st)) {
		for (unsigned int c = 0; c < nr; c++)
			lost += cs[c].lost;
	} else {
		for (unsigned int c = 0; c < nr; c++)
			lost += pgtrace_ring_cpu(l->ring, c)->lost;
	}
	free(cs);
	return lost;
}

static int live_open(struct live *l)
{
	int ret, p[2];

	l->dev = open(DEV, O_RDONLY | O_CLOEXEC);
	if (l->dev < 0) {
		device_error(errno);
		return -1;
	}
	ret = pgtrace_ring_map(l->dev, &l->ring);
	if (ret) {
		fprintf(stderr, "pagetrace: top: cannot map " DEV ": %s%s\n", strerror(-ret),
			ret == -ENOTTY || ret == -EPROTO ?
			" (is the module older or newer than this tool?)" : "");
		return -1;
	}
	l->meta = pgtrace_ring_meta(l->ring);
	ret = pgtrace_ring_claim(l->ring);
	if (ret) {
		fprintf(stderr, "pagetrace: top: " DEV ": %s\n", strerror(-ret));
		return -1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		fprintf(stderr, "pagetrace: top: pipe: %s\n", strerror(errno));
		return -1;
	}
	l->pipe_r = p[0];
	l->pipe_w = p[1];
	/* Room for a burst, so that the main thread seldom waits. */
	fcntl(l->pipe_w, F_SETPIPE_SZ, PIPE_SIZE);
	return 0;
}

static int run_live(struct screen *s, const struct opts *o)
{
	struct live l = { .dev = -1, .pipe_r = -1, .pipe_w = -1 };
	const struct pagetrace_header *h;
	struct syms y = { .fd = -1 };
	const void *snap;
	size_t snap_len;
	uint64_t step = (uint64_t)(o->interval * 1e9), next;
	int rc = EXIT_TRACE, quit = 0, ret;
	sigset_t block, orig;

	pthread_mutex_init(&l.lock, NULL);
	l.cg = calloc(CG_CACHE, sizeof(*l.cg));
	if (!l.cg) {
		fprintf(stderr, "pagetrace: top: out of memory\n");
		goto out;
	}
	if (live_open(&l))
		goto out;
	h = pgtrace_ring_header(l.ring, &snap, &snap_len);
	if (h->flags & PAGETRACE_FLAG_STACKS) {
		/* The stacks record is in the header: read it with a reader of its own. */
		struct pgtrace_reader *hr;

		if (!pgtrace_reader_open_mem(&hr, h, l.meta->header_size, 0)) {
			open_kallsyms("/proc/kallsyms", pgtrace_reader_stacks(hr), &y.k, true);
			pgtrace_reader_close(hr);
		}
	}
	s->view.title = "live " DEV;
	s->view.symbol = sym_name;
	s->view.symbol_arg = &y;
	l.wall0 = now_ns();
	/*
	 * Signals go to the main thread only, which waits in poll() for
	 * them; the analyzer would take them without waking anybody.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &block, &orig);
	ret = pthread_create(&l.thread, NULL, analyzer, &l);
	pthread_sigmask(SIG_SETMASK, &orig, NULL);
	if (ret) {
		fprintf(stderr, "pagetrace: top: cannot start a thread: %s\n", strerror(ret));
		goto out;
	}
	l.started = true;
	if (!o->batch && top_term_open()) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (!o->batch)
		placeholder(s);
	if (write_all(l.pipe_w, h, l.meta->header_size) ||
	    (snap_len && write_all(l.pipe_w, snap, snap_len)))
		goto stopped;

	for (next = l.wall0 + step; !quit; next += step) {
		uint64_t t;
		int err;

		quit = wait_until(s, next, l.dev, live_drain, &l);
		if (quit)
			break;
		/* Every event so far into a closed chunk, and into the pipe. */
		ioctl(l.dev, PAGETRACE_IOC_FLUSH);
		if (live_drain(&l))
			goto stopped;
		t = now_ns();
		ret = 0;
		pthread_mutex_lock(&l.lock);
		if (l.m) {
			top_model_set_lost(l.m, live_lost(&l));
			ret = top_model_cut(l.m, t, (int64_t)(t - l.wall0), &l.cut);
			if (!ret)
				quit = show(s, &l.cut);
		}
		err = l.done ? l.err : 0;
		pthread_mutex_unlock(&l.lock);
		if (ret) {
			fprintf(stderr, "pagetrace: top: %s\n", strerror(-ret));
			goto stopped;
		}
		if (err)
			goto stopped;
	}
	rc = l.failed ? EXIT_TRACE : 0;
stopped:
	top_term_close();
	pthread_mutex_lock(&l.lock);
	if (l.done && l.err < 0 && l.err != -ECANCELED) {
		fprintf(stderr, "pagetrace: top: the live stream: %s\n",
			*l.errmsg ? l.errmsg : strerror(-l.err));
		rc = EXIT_TRACE;
	}
	pthread_mutex_unlock(&l.lock);
out:
	top_term_close();
	/* End of input: the analyzer returns, at worst inside a chunk. */
	if (l.pipe_w >= 0)
		close(l.pipe_w);
	if (l.started)
		pthread_join(l.thread, NULL);
	top_frame_free(&l.cut);
	top_model_free(l.m);
	pgtrace_analysis_free(&l.a);
	pgtrace_reader_close(l.r);
	if (l.pipe_r >= 0)	/* the analyzer never ran */
		close(l.pipe_r);
	pgtrace_ring_unmap(l.ring);
	if (l.dev >= 0)
		close(l.dev);
	syms_close(&y);
	free(l.cg);
	return rc;
}

/* ------------------------------------------------------------ command */

static int parse(struct opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "batch", no_argument, NULL, 'b' },
		{ "sort", required_argument, NULL, 's' },
		{ "replay", required_argument, NULL, 'r' },
		{ "speed", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool speed = false;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "d:n:bs:r:x:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.01 && o->interval <= 86400)) {
				fprintf(stderr, "pagetrace: top: -d %s: not a number of seconds "
					"from 0.01 to 86400\n", optarg);
				return -1;
			}
			break;
		case 'n':
			errno = 0;
			o->iterations = strtoul(optarg, &end, 10);
			if (errno || *end || !o->iterations || *optarg == '-') {
				fprintf(stderr, "pagetrace: top: -n %s: not a positive number of "
					"frames\n", optarg);
				return -1;
			}
			break;
		case 'b':
			o->batch = true;
			break;
		case 's':
			if (!strcmp(optarg, "alloc") || !strcmp(optarg, "a"))
				o->sort = TOP_SORT_ALLOC;
			else if (!strcmp(optarg, "free") || !strcmp(optarg, "f"))
				o->sort = TOP_SORT_FREE;
			else if (!strcmp(optarg, "inuse") || !strcmp(optarg, "u"))
				o->sort = TOP_SORT_INUSE;
			else if (!strcmp(optarg, "reclaim") || !strcmp(optarg, "r"))
				o->sort = TOP_SORT_RECLAIM;
			else {
				fprintf(stderr, "pagetrace: top: --sort %s: one of alloc, free, "
					"inuse, reclaim\n", optarg);
				return -1;
			}
			break;
		case 'r':
			o->replay = optarg;
			break;
		case 'x':
			o->speed = strtod(optarg, &end);
			speed = true;
			if (*end || !(o->speed >= 0.001 && o->speed <= 1e9)) {
				fprintf(stderr, "pagetrace: top: --speed %s: not a factor from "
					"0.001 to 1e9\n", optarg);
				return -1;
			}
			break;
		case 'h':
			top_usage(stdout);
			exit(0);
		default:
			top_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pagetrace: top: unexpected argument '%s' (a trace is "
			"replayed with --replay FILE)\n", argv[optind]);
		return -1;
	}
	if (speed && !o->replay) {
		fprintf(stderr, "pagetrace: top: --speed is for --replay: the live view "
			"runs in real time\n");
		return -1;
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct opts o = { .interval = 1, .speed = 1 };
	struct screen s = { .o = &o };
	int rc;

	if (parse(&o, argc, argv))
		return EXIT_USAGE;
	s.view.sort = o.sort;
	if (o.batch)
		top_term_signals();
	rc = o.replay ? run_replay(&s, &o) : run_live(&s, &o);
	top_frame_free(&s.shown);
	free(s.buf);
	if (o.batch && (fflush(stdout) || ferror(stdout)) && errno != EPIPE) {
		fprintf(stderr, "pagetrace: top: write error\n");
		return EXIT_TRACE;
	}
	return rc;
}
