// SPDX-License-Identifier: GPL-2.0
/*
 * The memory map at session start: snapshot chunks, right after the
 * header, list the pages allocated when the session began.  Pages we hold
 * (PFNs from /proc/self/pagemap) must all be listed; pages we freed just
 * before must not be (but for the few someone else took meanwhile); the
 * chunks must be well formed and described by the header's REC_SNAPSHOT;
 * a snapshot of more runs than one small chunk holds must be listed whole
 * (the module's area grows as the walk fills it); snapshot=0 must turn it
 * all off.
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

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define PAGE	4096UL
#define NPAGES	512

/* The REC_SNAPSHOT payload of a header, or NULL. */
static const struct pagetrace_rec_snapshot *find_rec(const void *hdr)
{
	const struct pagetrace_header *h = hdr;
	const char *p = (const char *)hdr + sizeof(*h);
	const char *end = (const char *)hdr + h->header_size;

	while (p + sizeof(struct pagetrace_record) <= end) {
		const struct pagetrace_record *rec = (const void *)p;

		if (rec->type == PAGETRACE_REC_END)
			break;
		if (rec->type == PAGETRACE_REC_SNAPSHOT)
			return (const void *)(rec + 1);
		p += sizeof(*rec) + ((rec->size + 7) & ~7U);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many of @pfns (sorted) snapshot events cover. */
static size_t covered(const struct pt_st_trace *t, const uint64_t *pfns,
		      size_t n)
{
	unsigned char *hit = calloc(n, 1);
	size_t i, k = 0;

	for (i = 0; hit && i < t->nr; i++) {
		const struct pgtrace_event *ev = &t->ev[i];
		const uint64_t *lo;

		if (!(ev->chunk_flags & PAGETRACE_CHUNK_SNAPSHOT))
			continue;
		lo = pfns;
		while (lo < pfns + n && *lo < ev->pfn)
			lo++;
		for (; lo < pfns + n && *lo < ev->pfn + ev->npages; lo++)
			hit[lo - pfns] = 1;
	}
	for (i = 0; hit && i < n; i++)
		k += hit[i];
	free(hit);
	return k;
}

/*
 * The header's REC_SNAPSHOT describes the snapshot chunks exactly: their
 * alloc events and pages.  Read raw, so that the header's records are at
 * hand, and decode with libpagetrace.
 */
TEST(snapshot_record)
{
	static char stream[16 << 20];
	const struct pagetrace_rec_snapshot *rec;
	struct pgtrace_reader *r = NULL;
	uint64_t runs = 0, pages = 0;
	struct pgtrace_event ev;
	size_t len = 0;
	ssize_t n;
	int dev, ret;

	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ioctl(dev, PAGETRACE_IOC_STOP));
	while ((n = read(dev, stream + len, sizeof(stream) - len)) > 0)
		len += n;
	close(dev);
	ASSERT_LT(sizeof(struct pagetrace_header), len);

	ASSERT_TRUE(((const struct pagetrace_header *)stream)->flags &
		    PAGETRACE_FLAG_SNAPSHOT);
	rec = find_rec(stream);
	ASSERT_NE(NULL, rec) TH_LOG("no REC_SNAPSHOT in the header");
	TH_LOG("snapshot: %llu runs, %llu pages (%llu MiB), walk %llu us, %llu unlisted",
	       (unsigned long long)rec->runs, (unsigned long long)rec->pages,
	       (unsigned long long)(rec->pages * PAGE >> 20),
	       (unsigned long long)rec->walk_ns / 1000,
	       (unsigned long long)rec->unlisted);
	EXPECT_EQ(0, (uint64_t)rec->unlisted);

	ASSERT_EQ(0, pgtrace_reader_open_mem(&r, stream, len, 0));
	while ((ret = pgtrace_reader_next(r, &ev)) == 1) {
		if (!(ev.chunk_flags & PAGETRACE_CHUNK_SNAPSHOT))
			continue;
		runs++;
		pages += ev.npages;
	}
	EXPECT_EQ(0, ret) TH_LOG("decode: %s", pgtrace_reader_error(r));
	pgtrace_reader_close(r);
	EXPECT_EQ((uint64_t)rec->runs, runs);
	EXPECT_EQ((uint64_t)rec->pages, pages);
	EXPECT_LT(0, runs);
}

/* The whole stream through read(): snapshot chunks, then the rest. */
TEST(snapshot_chunks_cover_held_pages)
{
	uint64_t held[NPAGES], freed[NPAGES];
	struct pt_st_trace t = { 0 };
	size_t i, nh = 0, nf = 0, in_held, in_freed, snap = 0, pages = 0;
	char *keep, *gone;
	int dev;

	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	keep = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(keep != MAP_FAILED && gone != MAP_FAILED);
	madvise(keep, NPAGES * PAGE, MADV_NOHUGEPAGE);
	madvise(gone, NPAGES * PAGE, MADV_NOHUGEPAGE);
	for (i = 0; i < NPAGES; i++) {
		keep[i * PAGE] = 1;
		gone[i * PAGE] = 1;
		if (!pt_st_pagemap_pfn(keep + i * PAGE, &held[nh]))
			nh++;
		if (!pt_st_pagemap_pfn(gone + i * PAGE, &freed[nf]))
			nf++;
	}
	munmap(gone, NPAGES * PAGE);
	ASSERT_EQ(NPAGES, nh);
	ASSERT_EQ(NPAGES, nf);
	qsort(held, nh, sizeof(*held), cmp_u64);
	qsort(freed, nf, sizeof(*freed), cmp_u64);

	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	close(dev);
	munmap(keep, NPAGES * PAGE);

	ASSERT_TRUE(t.hdr.flags & PAGETRACE_FLAG_SNAPSHOT);
	for (i = 0; i < t.nr; i++) {
		if (!(t.ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT))
			continue;
		snap++;
		pages += t.ev[i].npages;
		/* Stamped with the session's start, and allocations only. */
		EXPECT_EQ(PGTRACE_EV_ALLOC, t.ev[i].type);
		EXPECT_GE(t.hdr.start_ns, t.ev[i].time_ns);
		EXPECT_LT(t.hdr.start_ns - 128, t.ev[i].time_ns);
		if (t.ev[i].type != PGTRACE_EV_ALLOC)
			break;
	}
	in_held = covered(&t, held, nh);
	in_freed = covered(&t, freed, nf);
	TH_LOG("%zu snapshot runs, %zu pages; held pages listed %zu/%zu, freed pages listed %zu/%zu",
	       snap, pages, in_held, nh, in_freed, nf);
	EXPECT_EQ(nh, in_held);
	/* Freed pages may be taken again by others before the walk: a few. */
	EXPECT_GT(nf / 10, in_freed);
	pt_st_trace_free(&t);
}

/*
 * More runs than two 4 KiB chunks hold (506 one-word runs each): every
 * other page of 32 MiB we hold is given back (some of the gaps are
 * allocated again by others, and some pages lie next to others' blocks:
 * about 1,500 runs from 4,096 held pages on 7.3, so twice as many), and
 * the module's snapshot area, one chunk at first, has to grow at least
 * twice.  All must be listed, and every page we still hold.
 */
TEST(snapshot_grows)
{
	const size_t n = 8192, per_chunk = 4096 / 8 - 4 - 2;
	const struct pagetrace_rec_snapshot *rec;
	long buf_size = pt_st_get_param("buf_size");
	struct pt_st_trace t = { 0 };
	size_t i, nh = 0, runs = 0, in_held;
	uint64_t *held;
	char old[32];
	char *p;
	int dev, ret;

	ASSERT_LT(0, buf_size);
	held = calloc(n, sizeof(*held));
	ASSERT_NE(NULL, held);
	p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, n * PAGE, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * PAGE] = 1;
	for (i = 0; i < n; i += 2) {
		if (!pt_st_pagemap_pfn(p + i * PAGE, &held[nh]))
			nh++;
		madvise(p + (i + 1) * PAGE, PAGE, MADV_DONTNEED);
	}
	ASSERT_EQ(n / 2, nh);
	qsort(held, nh, sizeof(*held), cmp_u64);

	snprintf(old, sizeof(old), "%ld", buf_size);
	ASSERT_EQ(0, pt_st_set_param("snapshot", "1"));
	ASSERT_EQ(0, pt_st_set_param("buf_size", "4096"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	pt_st_set_param("buf_size", old);
	ASSERT_LE(0, dev);
	ret = pt_st_collect(dev, &t);
	close(dev);
	munmap(p, n * PAGE);
	ASSERT_EQ(0, ret) TH_LOG("%s", t.err);

	rec = find_rec(t.raw);
	ASSERT_NE(NULL, rec) TH_LOG("no REC_SNAPSHOT in the header");
	for (i = 0; i < t.nr; i++)
		runs += !!(t.ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT);
	in_held = covered(&t, held, nh);
	TH_LOG("snapshot: %zu runs in 4 KiB chunks (%zu a chunk), %llu unlisted; held pages listed %zu/%zu",
	       runs, per_chunk, (unsigned long long)rec->unlisted, in_held, nh);
	EXPECT_LT(2 * per_chunk, runs);
	EXPECT_EQ((uint64_t)rec->runs, runs);
	EXPECT_EQ(0, (uint64_t)rec->unlisted);
	EXPECT_EQ(nh, in_held);
	pt_st_trace_free(&t);
	free(held);
}

TEST(snapshot_off)
{
	struct pt_st_trace t = { 0 };
	size_t i, snap = 0;
	int dev;

	ASSERT_EQ(0, pt_st_set_param("snapshot", "0"));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, pt_st_collect(dev, &t)) TH_LOG("%s", t.err);
	close(dev);
	pt_st_set_param("snapshot", "1");
	EXPECT_FALSE(t.hdr.flags & PAGETRACE_FLAG_SNAPSHOT);
	for (i = 0; i < t.nr; i++)
		snap += !!(t.ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT);
	EXPECT_EQ(0, snap);
	pt_st_trace_free(&t);
}

TEST_HARNESS_MAIN
