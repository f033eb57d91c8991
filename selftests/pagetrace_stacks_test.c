// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled call stacks (stack_rate=N): checked on the raw words the module
 * wrote, against allocations of known origin.
 *
 *  - gt_kprobe, gt_tracepoint: with stack_rate=1 every allocation is
 *    sampled.  Every alloc event must come right after a SAMPLE word whose
 *    stack the same chunk defined before; the allocations pagetrace_gt.ko
 *    made must have a stack that passes through pagetrace_gt's code, and
 *    (kprobe) starts at the entry of the allocator function that was
 *    hooked or (tracepoint) inside the function that fired the tracepoint.
 *  - gt_tracepoint_shared: the same with the kernel's kmem:mm_page_alloc
 *    trace event on as well, so that the tracepoint reaches our probe
 *    through __traceiter_mm_page_alloc(), where every such stack must
 *    then start, not in the allocator.
 *  - gt_tracepoint_here: the same with the module's test_stacks_here
 *    knob, which takes a tracepoint's stacks from the probe (with the
 *    module's own frames dropped) instead of unwinding from its caller's
 *    frame, the way left for a build whose calls to the writer are not
 *    tail calls: the same checks hold.
 *  - rate: with stack_rate=8 a process that faults in 4096 single pages
 *    gets about one sample per 8 pages allocated (within a factor of 2),
 *    and the words agree with the kernel's samples counters.
 *  - off: stack_rate=0 writes no stack word, no flag, no record.
 *  - record: REC_STACKS has the rate and an anchor matching /proc/kallsyms.
 *  - param_invalid: out-of-range rates are refused.
 *
 * Environment: PAGETRACE_GT_KO (see pagetrace_gt_test.c); pagetrace.ko
 * loaded.  Runs pinned to CPU 0; stack_rate and hook are put back after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/pagetrace.h>
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define MAX_GT		512
#define MAX_IDS		(1 << 16)

struct gt_alloc {
	uint64_t	pfn;
	uint64_t	npages;
	int		found;		/* its event had a good stack */
};

/* What the words of a stream say about stacks. */
struct stack_walk {
	uint64_t	allocs;		/* alloc events */
	uint64_t	alloc_pages;
	uint64_t	samples;	/* SAMPLE words */
	uint64_t	unknown;	/* SAMPLE words with id 0 */
	uint64_t	defs;
	uint64_t	stack_words;
	char		err[256];	/* the first rule broken */
};

/* A stack as defined in the stream, by id (ids are small: see stacks.c). */
struct stack_def {
	unsigned int	depth;
	uint64_t	frames[PAGETRACE_STACK_MAX_DEPTH];
};

static struct stack_def *defs;

/* (The folio and bulk ones skip on kernels without them, such as 5.10.) */
static const char *const gt_ops[] = {
	"pages_order0", "pages_order3", "pages_order5", "pages_atomic",
	"get_free_pages", "folio_order2", "bulk_array", "bulk_list",
};

/* Parse every "<op> alloc pfn=N npages=N" line of a report. */
static int gt_parse(const char *report, struct gt_alloc *gt, int n)
{
	const char *l = report;

	while ((l = strstr(l, " alloc pfn=")) && n < MAX_GT) {
		if (sscanf(l, " alloc pfn=%" SCNu64 " npages=%" SCNu64,
			   &gt[n].pfn, &gt[n].npages) == 2)
			gt[n++].found = 0;
		l++;
	}
	return n;
}

/*
 * Walk every chunk: check the stack words' rules, and call @check on each
 * sampled alloc event with its stack (NULL if unknown).
 */
static int walk(const void *s, size_t len, struct stack_walk *sw,
		void (*check)(uint64_t pfn, uint64_t npages,
			      const struct stack_def *d, void *arg),
		void *arg)
{
	const struct pagetrace_chunk *c;
	size_t off = 0;
	int ret;

	memset(sw, 0, sizeof(*sw));
	while ((ret = pt_st_next_chunk(s, len, &off, &c)) == 1) {
		const uint64_t *w = (const void *)(c + 1);
		static unsigned char defined[MAX_IDS];
		uint32_t sample = 0;
		bool sampled = false;
		unsigned int i, k;

		if (c->flags & PAGETRACE_CHUNK_SNAPSHOT)
			continue;
		memset(defined, 0, sizeof(defined));
		for (i = 2; i < c->nr_words; i++) {
			uint64_t x = w[i];

			if (pagetrace_word_is_stack(x)) {
				unsigned int kind = pagetrace_word_stack_kind(x);
				uint32_t id = pagetrace_word_stack_id(x);

				sw->stack_words++;
				if (sampled) {
					snprintf(sw->err, sizeof(sw->err),
						 "cpu %u: SAMPLE not followed by its event", c->cpu);
					return -1;
				}
				if (id >= MAX_IDS) {
					snprintf(sw->err, sizeof(sw->err), "stack id %u too large", id);
					return -1;
				}
				if (kind == PAGETRACE_STACK_DEF) {
					struct stack_def d;

					d.depth = pagetrace_word_stack_depth(x);
					if (!id || !d.depth || d.depth > PAGETRACE_STACK_MAX_DEPTH ||
					    i + d.depth >= c->nr_words) {
						snprintf(sw->err, sizeof(sw->err),
							 "bad DEF word 0x%016" PRIx64, x);
						return -1;
					}
					for (k = 0; k < d.depth; k++) {
						uint64_t f = w[i + 1 + k];

						if (!pagetrace_word_is_stack(f) ||
						    pagetrace_word_stack_kind(f) != PAGETRACE_STACK_FRAME) {
							snprintf(sw->err, sizeof(sw->err),
								 "DEF of depth %u has %u frames", d.depth, k);
							return -1;
						}
						d.frames[k] = pagetrace_word_frame_addr(f);
					}
					if (defs[id].depth &&
					    (defs[id].depth != d.depth ||
					     memcmp(defs[id].frames, d.frames, 8 * d.depth))) {
						snprintf(sw->err, sizeof(sw->err),
							 "stack %u defined twice, differently", id);
						return -1;
					}
					defs[id] = d;
					defined[id] = 1;
					sw->defs++;
					i += d.depth;
				} else if (kind == PAGETRACE_STACK_SAMPLE) {
					if (id && !defined[id]) {
						snprintf(sw->err, sizeof(sw->err),
							 "cpu %u seq %llu: SAMPLE of stack %u not defined in the chunk",
							 c->cpu, (unsigned long long)c->seq, id);
						return -1;
					}
					sampled = true;
					sample = id;
				} else {
					snprintf(sw->err, sizeof(sw->err),
						 "stray stack word 0x%016" PRIx64, x);
					return -1;
				}
				continue;
			}
			if (pagetrace_word_is_pid(x) || !pagetrace_word_type(x))
				continue;	/* task records, names, syncs */
			{
				uint64_t np = pagetrace_word_npages(x);

				if (pagetrace_word_is_large(x))
					np = w[++i];
				if (pagetrace_word_type(x) == PAGETRACE_EV_ALLOC) {
					sw->allocs++;
					sw->alloc_pages += np;
				}
				if (sampled && pagetrace_word_type(x) != PAGETRACE_EV_ALLOC) {
					snprintf(sw->err, sizeof(sw->err),
						 "SAMPLE before a non-alloc event");
					return -1;
				}
				if (sampled) {
					sw->samples++;
					sw->unknown += !sample;
					if (check)
						check(pagetrace_word_pfn(x), np,
						      sample ? &defs[sample] : NULL, arg);
				}
				sampled = false;
			}
		}
	}
	if (ret < 0)
		snprintf(sw->err, sizeof(sw->err), "chunk runs past the end");
	return ret;
}

struct gt_check {
	struct gt_alloc	*gt;
	int		nr_gt;
	uint64_t	mod_start, mod_end;	/* pagetrace_gt's code */
	uint64_t	first_start[2], first_end[2];	/* allocator functions */
	int		bad_first;
	char		first_err[160];
};

static bool in(uint64_t a, uint64_t start, uint64_t end)
{
	return a >= start && a < end;
}

static void gt_check_event(uint64_t pfn, uint64_t npages,
			   const struct stack_def *d, void *arg)
{
	struct gt_check *g = arg;
	unsigned int k;
	bool through_gt = false;
	int i;

	for (i = 0; i < g->nr_gt; i++) {
		if (g->gt[i].pfn != pfn || g->gt[i].npages != npages)
			continue;
		if (!d)
			return;
		for (k = 0; k < d->depth; k++)
			through_gt |= in(d->frames[k], g->mod_start, g->mod_end);
		if (!in(d->frames[0], g->first_start[0], g->first_end[0]) &&
		    !in(d->frames[0], g->first_start[1], g->first_end[1])) {
			g->bad_first++;
			snprintf(g->first_err, sizeof(g->first_err),
				 "pfn %" PRIu64 ": first frame 0x%" PRIx64
				 " is not in the allocator", pfn, d->frames[0]);
		}
		if (through_gt)
			g->gt[i].found = 1;
	}
}

/* The first address of an existing one of two names: 0 or -ENOENT. */
/* The first of @names the kernel has: 0, or -ENOENT with *start = *end = 0. */
static int ksym_first(const char * const *names, size_t n, uint64_t *start,
		      uint64_t *end)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!pt_st_ksym(names[i], start, end))
			return 0;
	*start = *end = 0;
	return -ENOENT;
}

/* The allocator's entry points and the bulk allocator, as hooks.c tries them. */
static const char * const alloc_funcs[] = {
	"__alloc_frozen_pages_noprof", "__alloc_pages_noprof",
	"__alloc_pages", "__alloc_pages_nodemask",
};
static const char * const bulk_funcs[] = {
	"alloc_pages_bulk_noprof", "__alloc_pages_bulk",
};

/* The kernel's own trace event on the tracepoint our probe is on. */
#define SHARED_EVENT	"/sys/kernel/tracing/events/kmem/mm_page_alloc/enable"
/* What SHARED_EVENT held before a test turned it on, "" if untouched. */
static char shared_old[8];

static int shared_on(void)
{
	FILE *f = fopen(SHARED_EVENT, "re");
	bool got = f && fgets(shared_old, sizeof(shared_old), f);

	if (f)
		fclose(f);
	if (!got)
		return -ENOENT;
	return pt_st_write_file(SHARED_EVENT, "1");
}

static void shared_restore(void)
{
	if (shared_old[0])
		pt_st_write_file(SHARED_EVENT, shared_old[0] == '1' ? "1" : "0");
	shared_old[0] = '\0';
}

FIXTURE(st) {
	int		dev;
	void		*stream;
	size_t		len;
};

FIXTURE_SETUP(st)
{
	self->dev = -1;
	self->stream = NULL;
	defs = calloc(MAX_IDS, sizeof(*defs));
	ASSERT_NE(NULL, defs);
	ASSERT_EQ(0, pt_st_pin_cpu(0));
}

FIXTURE_TEARDOWN(st)
{
	if (self->dev >= 0)
		close(self->dev);
	free(self->stream);
	free(defs);
	pt_st_set_param("stack_rate", "0");
	pt_st_set_hook("auto");
	pt_st_set_param("test_stacks_here", "0");
	shared_restore();
}

/* Start a session with stack_rate=@rate on backend @hook. */
static int start(FIXTURE_DATA(st) *self, const char *rate, const char *hook)
{
	int ret = pt_st_set_param("stack_rate", rate);

	if (!ret)
		ret = pt_st_set_hook(hook);
	if (ret)
		return ret;
	self->dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	return self->dev < 0 ? -errno : 0;
}

static uint64_t samples_counted(int dev);

/*
 * Stop the session and read all of it; *@counted gets the kernel's count
 * of samples, which then covers every chunk.
 */
static int finish(FIXTURE_DATA(st) *self, uint64_t *counted)
{
	if (ioctl(self->dev, PAGETRACE_IOC_STOP))
		return -errno;
	*counted = samples_counted(self->dev);
	self->stream = pt_st_read_all(self->dev, &self->len);
	return self->stream ? 0 : -EIO;
}

static uint64_t samples_counted(int dev)
{
	struct pagetrace_cpu_stats cpus[256];
	uint64_t n = 0;
	unsigned int i;

	memset(cpus, 0, sizeof(cpus));
	if (pt_st_stats(dev, cpus, 256, NULL))
		return UINT64_MAX;
	for (i = 0; i < 256; i++)
		n += cpus[i].samples;
	return n;
}

/*
 * How a tracepoint's stacks are taken: from the frame of the probe's
 * caller, the tracepoint's call site in the allocator (DIRECT); the same
 * with the kernel's own kmem:mm_page_alloc trace event on too, so that the
 * tracepoint calls its probes through __traceiter_mm_page_alloc(), not
 * straight into ours, and the first frame is in that function (SHARED);
 * from the probe, the module's frames dropped (HERE).
 */
enum gt_way { GT_DIRECT, GT_SHARED, GT_HERE };

static void gt_stacks(struct __test_metadata *_metadata, FIXTURE_DATA(st) *self,
		      const char *hook, enum gt_way way)
{
	static char report[1 << 16];
	struct gt_alloc gt[MAX_GT];
	struct gt_check g = { .gt = gt };
	struct stack_walk sw;
	int i, nr = 0, found = 0;
	uint64_t counted;

	if (pt_st_gt_load())
		SKIP(return, "pagetrace_gt.ko cannot be loaded (PAGETRACE_GT_KO)");
	/*
	 * The kprobe backend takes an allocation's stack in the kretprobe's
	 * return handler: the unwinder gets through the kretprobe trampoline
	 * only where the kernel can look up the real return address
	 * (kretprobe_find_ret_addr(), 5.15; rethook_find_ret_addr() where
	 * kretprobes run on rethook).
	 */
	if (!strcmp(hook, "kprobe") &&
	    pt_st_ksym("kretprobe_find_ret_addr", &g.first_start[0], &g.first_end[0]) &&
	    pt_st_ksym("rethook_find_ret_addr", &g.first_start[0], &g.first_end[0]))
		SKIP(return, "this kernel cannot unwind through a kretprobe's trampoline (before 5.15)");
	ASSERT_EQ(0, pt_st_module_text("pagetrace_gt", &g.mod_start, &g.mod_end));
	ASSERT_EQ(0, ksym_first(alloc_funcs, 4, &g.first_start[0], &g.first_end[0]));
	/* None before 5.13. */
	ksym_first(bulk_funcs, 2, &g.first_start[1], &g.first_end[1]);
	if (strcmp(hook, "tracepoint")) {
		/*
		 * A kretprobe's stack starts at its function's entry: the
		 * probe's address, past the endbr64 where the kernel has IBT.
		 */
		g.first_end[0] = g.first_start[0] + 8;
		if (g.first_start[1])
			g.first_end[1] = g.first_start[1] + 8;
	}

	if (way == GT_SHARED) {
		/* Every stack of the tracepoint starts there, none in the allocator. */
		if (pt_st_ksym("__traceiter_mm_page_alloc", &g.first_start[0],
			       &g.first_end[0]))
			SKIP(return, "no __traceiter_mm_page_alloc (kallsyms)");
		if (shared_on())
			SKIP(return, "cannot turn on " SHARED_EVENT);
	}
	if (way == GT_HERE)
		ASSERT_EQ(0, pt_st_set_param("test_stacks_here", "1"));
	ASSERT_EQ(0, start(self, "1", hook));
	for (i = 0; i < (int)(sizeof(gt_ops) / sizeof(gt_ops[0])); i++) {
		ASSERT_EQ(0, pt_st_gt_run(gt_ops[i], report, sizeof(report)));
		nr = gt_parse(report, gt, nr);
	}
	ASSERT_LT(4, nr);
	ASSERT_EQ(0, finish(self, &counted));
	shared_restore();
	g.nr_gt = nr;

	ASSERT_EQ(0, walk(self->stream, self->len, &sw, gt_check_event, &g)) {
		TH_LOG("%s", sw.err);
	}
	TH_LOG("%s: %" PRIu64 " allocs, %" PRIu64 " samples (%" PRIu64
	       " unknown), %" PRIu64 " definitions, %d ground-truth allocations",
	       hook, sw.allocs, sw.samples, sw.unknown, sw.defs, nr);
	/* Rate 1: every allocation is sampled, and the kernel counted each. */
	EXPECT_EQ(sw.allocs, sw.samples);
	EXPECT_EQ(counted, sw.samples);
	EXPECT_LT(0, sw.defs);
	for (i = 0; i < nr; i++) {
		found += gt[i].found;
		if (!gt[i].found)
			TH_LOG("pfn %" PRIu64 " npages %" PRIu64
			       ": no sampled event whose stack passes through pagetrace_gt",
			       gt[i].pfn, gt[i].npages);
	}
	EXPECT_EQ(nr, found);
	EXPECT_EQ(0, g.bad_first) {
		TH_LOG("%s", g.first_err);
	}
}

TEST_F_TIMEOUT(st, gt_kprobe, 200)
{
	gt_stacks(_metadata, self, "kprobe", GT_DIRECT);
}

TEST_F_TIMEOUT(st, gt_tracepoint, 200)
{
	gt_stacks(_metadata, self, "tracepoint", GT_DIRECT);
}

TEST_F_TIMEOUT(st, gt_tracepoint_shared, 200)
{
	gt_stacks(_metadata, self, "tracepoint", GT_SHARED);
}

TEST_F_TIMEOUT(st, gt_tracepoint_here, 200)
{
	gt_stacks(_metadata, self, "tracepoint", GT_HERE);
}

TEST_F_TIMEOUT(st, rate, 200)
{
	size_t page = getpagesize(), n = 4096, i;
	struct stack_walk sw;
	uint64_t counted;
	double per;
	char *p;

	ASSERT_EQ(0, start(self, "8", "kprobe"));
	p = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	/*
	 * Single pages: a huge page is always sampled (it stands for its
	 * own 512 pages, not for 8 of them), which would hide the rate.
	 */
	madvise(p, n * page, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * page] = 1;
	munmap(p, n * page);
	ASSERT_EQ(0, finish(self, &counted));
	ASSERT_EQ(0, walk(self->stream, self->len, &sw, NULL, NULL)) {
		TH_LOG("%s", sw.err);
	}
	ASSERT_LE(n, sw.alloc_pages);
	per = (double)sw.alloc_pages / (sw.samples ? sw.samples : 1);
	TH_LOG("%" PRIu64 " pages allocated, %" PRIu64 " samples: one per %.1f pages",
	       sw.alloc_pages, sw.samples, per);
	EXPECT_LE(4.0, per);
	EXPECT_GE(16.0, per);
	EXPECT_EQ(counted, sw.samples);
	EXPECT_GT(sw.allocs, sw.samples);
}

TEST_F(st, off)
{
	const struct pagetrace_header *h;
	struct stack_walk sw;
	uint64_t counted;
	uint32_t size;
	char *p;

	ASSERT_EQ(0, start(self, "0", "kprobe"));
	p = mmap(NULL, 64 << 12, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 64 << 12);
	ASSERT_EQ(0, finish(self, &counted));
	EXPECT_EQ(0, counted);
	h = self->stream;
	EXPECT_EQ(0, h->flags & PAGETRACE_FLAG_STACKS);
	EXPECT_EQ(NULL, pt_st_header_record(self->stream, self->len,
					    PAGETRACE_REC_STACKS, &size));
	ASSERT_EQ(0, walk(self->stream, self->len, &sw, NULL, NULL));
	EXPECT_LT(64, sw.allocs);
	EXPECT_EQ(0, sw.stack_words);
}

TEST_F(st, record)
{
	const struct pagetrace_rec_stacks *rec;
	const struct pagetrace_header *h;
	uint64_t sched, sched_end, counted;
	uint32_t size = 0;

	ASSERT_EQ(0, start(self, "37", "kprobe"));
	ASSERT_EQ(0, finish(self, &counted));
	h = self->stream;
	EXPECT_NE(0, h->flags & PAGETRACE_FLAG_STACKS);
	rec = pt_st_header_record(self->stream, self->len, PAGETRACE_REC_STACKS, &size);
	ASSERT_NE(NULL, rec);
	ASSERT_EQ(sizeof(*rec), size);
	EXPECT_EQ(37, rec->rate);
	EXPECT_LE(1, rec->max_depth);
	EXPECT_GE(PAGETRACE_STACK_MAX_DEPTH, rec->max_depth);
	ASSERT_EQ(0, pt_st_ksym((const char *)rec->anchor_name, &sched, &sched_end));
	EXPECT_EQ(sched, rec->anchor_addr);
}

TEST_F(st, param_invalid)
{
	/* The harness names the line of a failed one. */
	EXPECT_EQ(-EINVAL, pt_st_set_param("stack_rate", "1048577"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("stack_rate", "-1"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("stack_rate", "abc"));
	EXPECT_EQ(-EINVAL, pt_st_set_param("stack_rate", "8 pages"));
	EXPECT_EQ(0, pt_st_set_param("stack_rate", "1048576"));
}

TEST_HARNESS_MAIN
