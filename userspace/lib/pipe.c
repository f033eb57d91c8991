// SPDX-License-Identifier: GPL-2.0
/*
 * The analysis on two threads: the reading thread decodes, counts and
 * merges the events into time order (analysis.c, merge.c) as it does on
 * one; what it would apply goes instead, in the same order, through a
 * ring of blocks to a second thread, which applies it to the block map
 * and counts it (apply.c).  Each thread's figures are its own (the reader
 * writes the stats, rate bins and lost sites; the applier the blocks,
 * lifetimes, pages in use, zones and snapshot counts), so nothing needs
 * merging and the result is the one-thread result to the byte: the
 * applier sees the same events, snapshot runs and the kernel counters'
 * mark in the same order.
 *
 * Why not more threads: the block state of a PFN depends on every event of
 * it in time order, and the peak of pages in use on every event of all
 * PFNs in that order, so the order must be made once; making it is about
 * a third of the work and applying it the rest (see
 * bench/results/userspace-decode.rst).
 *
 * A single producer and a single consumer: the counts of blocks published
 * and consumed are atomics; a side that finds the ring full or empty
 * spins a little (the other side is usually a block away) and then sleeps
 * on a condition variable, which the other wakes only if someone sleeps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "analysis.h"

/*
 * Events in a block, and blocks in the ring: 96 KiB and 1.5 MiB, room for
 * the bursts of a release (up to 32K events at once) while the other side
 * goes on.
 */
#define PIPE_EVENTS	4096
#define PIPE_BLOCKS	16
/*
 * Tries before sleeping: a few microseconds, short because the two threads
 * may share one CPU, where spinning only delays the other.
 */
#define PIPE_SPINS	256

struct pipe_block {
	enum pipe_kind		kind;
	unsigned int		n;
	struct pgtrace_compact_event ev[PIPE_EVENTS];
};

struct pgtrace_pipe {
	struct pgtrace_analysis	*a;
	struct pipe_block	*blocks;
	struct pipe_block	*cur;		/* being filled, not published */
	/* Apart, so that each side's counter dirties the other's line less. */
	_Alignas(64) atomic_ulong published;
	_Alignas(64) atomic_ulong consumed;
	_Alignas(64) atomic_int	err;		/* the applier's first error */
	atomic_int		sleepers;
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	pthread_t		thread;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Until the ring has a block to take (@room: room for one more). */
static void pipe_wait(struct pgtrace_pipe *p, bool room)
{
	for (unsigned int i = 0;; i++) {
		unsigned long pub = atomic_load(&p->published), con = atomic_load(&p->consumed);

		if (room ? pub - con < PIPE_BLOCKS : pub != con)
			return;
		if (i < PIPE_SPINS) {
			cpu_relax();
			continue;
		}
		pthread_mutex_lock(&p->lock);
		atomic_fetch_add(&p->sleepers, 1);
		for (;;) {
			pub = atomic_load(&p->published);
			con = atomic_load(&p->consumed);
			if (room ? pub - con < PIPE_BLOCKS : pub != con)
				break;
			pthread_cond_wait(&p->cond, &p->lock);
		}
		atomic_fetch_sub(&p->sleepers, 1);
		pthread_mutex_unlock(&p->lock);
		return;
	}
}

/* After a side moved its counter: wake the other if it sleeps. */
static void pipe_wake(struct pgtrace_pipe *p)
{
	if (!atomic_load(&p->sleepers))
		return;
	pthread_mutex_lock(&p->lock);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* ---------------------------------------------------------- applier */

static void *applier(void *arg)
{
	struct pgtrace_pipe *p = arg;

	for (;;) {
		struct pipe_block *b;
		int ret = 0;

		pipe_wait(p, false);
		b = &p->blocks[atomic_load(&p->consumed) % PIPE_BLOCKS];
		if (b->kind == PIPE_END)
			return NULL;
		/* After an error, what comes is only taken off the ring. */
		if (!atomic_load_explicit(&p->err, memory_order_relaxed)) {
			if (b->kind == PIPE_MERGED)
				ret = pgtrace_apply_merged(p->a, b->ev, b->n);
			else if (b->kind == PIPE_SNAPSHOT)
				ret = pgtrace_apply_snapshot(p->a, b->ev, NULL, b->n);
			else
				pgtrace_mark_zones(p->a);
			if (ret)
				atomic_store(&p->err, ret);
		}
		atomic_fetch_add(&p->consumed, 1);
		pipe_wake(p);
	}
}

/* --------------------------------------------------------- producer */

/* Publish the block being filled, if any. */
static void pipe_publish(struct pgtrace_pipe *p)
{
	if (!p->cur)
		return;
	p->cur = NULL;
	atomic_fetch_add(&p->published, 1);
	pipe_wake(p);
}

/* The block to fill with @kind, with room for one event at least. */
static struct pipe_block *pipe_block(struct pgtrace_pipe *p, enum pipe_kind kind)
{
	struct pipe_block *b = p->cur;

	if (b && b->kind == kind && b->n < PIPE_EVENTS)
		return b;
	pipe_publish(p);
	pipe_wait(p, true);
	b = &p->blocks[atomic_load(&p->published) % PIPE_BLOCKS];
	b->kind = kind;
	b->n = 0;
	p->cur = b;
	return b;
}

/*
 * Start the applier for @a: 0, or an error, and then nothing has changed
 * (the analysis stays on the calling thread).
 */
int pgtrace_pipe_start(struct pgtrace_analysis *a)
{
	struct pgtrace_pipe *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->a = a;
	p->blocks = malloc(PIPE_BLOCKS * sizeof(*p->blocks));
	if (!p->blocks) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	ret = pthread_create(&p->thread, NULL, applier, p);
	if (ret) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p->blocks);
		free(p);
		return -ret;
	}
	a->priv->pipe = p;
	return 0;
}

/*
 * Hand events @ev[0, @n) of @kind to the applier, in order; 0, or the
 * applier's first error (so that the reading side stops as it would).
 */
int pgtrace_pipe_put(struct pgtrace_analysis *a, unsigned int kind,
		     const struct pgtrace_compact_event *ev, unsigned int n)
{
	struct pgtrace_pipe *p = a->priv->pipe;

	while (n) {
		struct pipe_block *b = pipe_block(p, kind);
		unsigned int k = PIPE_EVENTS - b->n < n ? PIPE_EVENTS - b->n : n;

		memcpy(b->ev + b->n, ev, k * sizeof(*ev));
		b->n += k;
		ev += k;
		n -= k;
	}
	return atomic_load_explicit(&p->err, memory_order_relaxed);
}

int pgtrace_pipe_mark(struct pgtrace_analysis *a)
{
	struct pgtrace_pipe *p = a->priv->pipe;

	pipe_block(p, PIPE_MARK);
	pipe_publish(p);
	return atomic_load_explicit(&p->err, memory_order_relaxed);
}

/*
 * The end: everything handed over is applied when this returns, and the
 * thread gone.  Returns the applier's first error, or 0.
 */
int pgtrace_pipe_finish(struct pgtrace_analysis *a)
{
	struct pgtrace_pipe *p = a->priv->pipe;
	int ret;

	if (!p)
		return 0;
	pipe_block(p, PIPE_END);
	pipe_publish(p);
	pthread_join(p->thread, NULL);
	ret = atomic_load(&p->err);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->blocks);
	free(p);
	a->priv->pipe = NULL;
	return ret;
}
