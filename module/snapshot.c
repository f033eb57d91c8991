// SPDX-License-Identifier: GPL-2.0
/*
 * The memory map at session start: which pages are allocated when the
 * session begins, so that the pages in use at any time of the trace are
 * the snapshot plus the allocations minus the frees and reclaims.
 *
 * The snapshot is a run of chunks flagged PAGETRACE_CHUNK_SNAPSHOT, laid
 * out back to back in one vmalloc'd area exactly as they appear in the
 * stream, so readers copy it as one byte range after the header.  The
 * memory map is walked once; the area doubles (its contents moved) when a
 * chunk would not fit:
 *
 *   snap -> +-----------------------------+
 *           | pagetrace_chunk (SNAPSHOT)  |  seq 0; the last one's lost =
 *           | pid(cpu) sync(start) alloc  |  runs not listed for want of
 *           | alloc ... (delta 0)         |  room (0 in practice)
 *           +-----------------------------+  32 + 8 * nr_words bytes
 *           | next snapshot chunk ...     |
 *           +-----------------------------+  snap_len bytes in all
 *
 * Each alloc event is a run of consecutive allocated pages (not one
 * allocation: a run may span several blocks, and a run of 1024 pages or
 * more is a large event), stamped with the session's start time.
 *
 * How the walk decides, page by page, without the zone lock (so without
 * stopping the allocator):
 *  - a PageBuddy page heads a free block of 2^page_private() pages: skip
 *    it whole;
 *  - the head of a compound page is allocated with all its tails;
 *  - any other page with a zero reference count is free if it is on a
 *    per-CPU free list (pcp.c: skip its block whole), and allocated
 *    otherwise: a tail of a block allocated without __GFP_COMP, or a
 *    page handed out frozen (7.x slab pages);  where the per-CPU lists
 *    cannot be read (pt_pcp_collect()), such a page is taken as free;
 *  - everything else is allocated, reserved memory included;
 *  - pages outside System RAM (the holes of a zone's span, whose struct
 *    pages exist, reserved, but which the zone's present pages do not
 *    count) are not walked at all: pt_snap_ram_ranges().
 * Known inexactness, documented in Documentation/pagetrace/design.rst:
 * without the per-CPU lists (5.10), the tail pages of a non-compound
 * block and frozen pages are taken as free; and the allocator runs during
 * the walk.  The walk happens after the probes are
 * attached, so a page allocated during it can appear both in the snapshot
 * and as an allocation event, and one freed during it as a free of a page
 * the snapshot does not list; none is missed by both.
 */
#include <linux/bitmap.h>
#include <linux/ioport.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/moduleparam.h>
#include <linux/page-flags.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "pagetrace.h"

/*
 * snapshot=0 skips the walk (a large machine's memory map takes a while);
 * read when a session starts, like the other parameters.
 */
static bool pt_snapshot_on = true;
module_param_named(snapshot, pt_snapshot_on, bool, 0644);
MODULE_PARM_DESC(snapshot,
		 "List the pages allocated at session start (default 1)");

bool pt_snapshot_wanted(void)
{
	return READ_ONCE(pt_snapshot_on);
}

struct pt_pfn_range {
	unsigned long	start;
	unsigned long	end;
};

struct pt_snap_writer {
	struct pt_session	*sess;
	void			*area;
	size_t			size;		/* bytes of area */
	size_t			len;		/* bytes used by closed chunks */
	struct pagetrace_chunk	*chunk;		/* open chunk */
	struct pagetrace_chunk	*last;		/* last closed chunk */
	__le64			*words;
	u32			nr_words;
	u32			cap;		/* words per chunk */
	u64			base;		/* time base of every chunk */
	u16			cpu;
	u64			runs;		/* alloc events */
	u64			pages;		/* pages in them */
	u64			unlisted;	/* runs that found no room */
	bool			full;		/* the area could not grow */
	u64			taken_free;	/* zero count, lists unread */
	u64			flags;		/* PAGETRACE_SNAPSHOT_* */
	unsigned long		since_resched;	/* pages walked */
	/* System RAM as PFN ranges [start, end), or nr_ram 0: all of it */
	struct pt_pfn_range	*ram;
	unsigned int		nr_ram;
	/* The per-CPU lists' blocks (pcp.c), or NULL: see the rules above */
	struct pt_pcp_set	*pcp;
	/* The slice being walked: its first PFN, and a bit per page */
	unsigned long		slice;
	unsigned long		*used;		/* allocated */
	unsigned long		*unsure;	/* to look at again */
};

/*
 * The largest buddy order, from the free lists' own array: MAX_ORDER
 * meant one past it before 6.4 and the order itself in 6.4-6.7, and
 * MAX_PAGE_ORDER took over in 6.8.
 */
#define PT_MAX_BUDDY_ORDER	\
	(ARRAY_SIZE(((struct zone *)NULL)->free_area) - 1)

static void pt_snap_close(struct pt_snap_writer *w)
{
	struct pagetrace_chunk *ch = w->chunk;

	if (!ch)
		return;
	memcpy(ch->magic, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN);
	ch->cpu = pt_le16(w->cpu);
	ch->flags = pt_le16(PAGETRACE_CHUNK_SNAPSHOT);
	ch->nr_words = pt_le32(w->nr_words);
	ch->reserved = 0;
	ch->seq = 0;
	/* The last chunk carries the runs that found no room (see below). */
	ch->lost = 0;
	w->len += sizeof(*ch) + w->nr_words * sizeof(u64);
	w->last = ch;
	w->chunk = NULL;
}

/*
 * Move the area's chunks to one of @size bytes.  Only between chunks, so
 * that of the writer's pointers into it only @last needs moving; the
 * chunks themselves hold none.  Sleeps.
 */
static int pt_snap_move(struct pt_snap_writer *w, size_t size)
{
	void *area = vmalloc_user(size);

	if (!area)
		return -ENOMEM;
	memcpy(area, w->area, w->len);
	if (w->last)
		w->last = area + ((void *)w->last - w->area);
	vfree(w->area);
	w->area = area;
	w->size = size;
	return 0;
}

/*
 * Open a chunk with room for @need words of events, or fail: the area
 * grows first to hold a whole chunk, or, if it cannot, the chunk gets
 * what room is left.
 */
static bool pt_snap_open(struct pt_snap_writer *w, unsigned int need)
{
	size_t bytes = sizeof(struct pagetrace_chunk) + (2 + need) * sizeof(u64);

	/* Room for a whole chunk more: the area doubles, once it failed no more. */
	if (w->len + w->sess->chunk_size > w->size && !w->full &&
	    pt_snap_move(w, max(2 * w->size, w->len + w->sess->chunk_size)))
		w->full = true;
	if (w->len + bytes > w->size)
		return false;
	w->chunk = w->area + w->len;
	w->words = (__le64 *)(w->chunk + 1);
	w->words[0] = cpu_to_le64(pagetrace_pid_word(w->cpu));
	w->words[1] = cpu_to_le64(pagetrace_sync_word(w->base));
	w->nr_words = 2;
	/* The chunk may grow up to a full buffer, or to the end of the area. */
	w->cap = min_t(size_t, w->sess->chunk_size - sizeof(*w->chunk),
		       w->size - w->len - sizeof(*w->chunk)) / sizeof(u64);
	return true;
}

/* Record a run of @npages allocated pages from @pfn. */
static void pt_snap_run(struct pt_snap_writer *w, unsigned long pfn,
			unsigned long npages)
{
	unsigned int need = npages > PAGETRACE_NPAGES_MAX ? 2 : 1;
	u64 word;

	/*
	 * Memory onlined above the stream's PFN field since the session's
	 * check (pt_header_pfns_fit()): unlisted, never truncated.
	 */
	if (unlikely(pfn + npages - 1 > PAGETRACE_PFN_MAX)) {
		w->unlisted++;
		return;
	}
	w->runs++;
	w->pages += npages;
	if (w->chunk && w->nr_words + need > w->cap)
		pt_snap_close(w);
	if (!w->chunk && !pt_snap_open(w, need)) {
		w->unlisted++;
		return;
	}
	if (need == 1) {
		word = pagetrace_event_word(0, pfn, npages, PAGETRACE_EV_ALLOC);
		w->words[w->nr_words++] = cpu_to_le64(word);
	} else {
		word = pagetrace_large_event_word(0, pfn, PAGETRACE_EV_ALLOC);
		w->words[w->nr_words++] = cpu_to_le64(word);
		w->words[w->nr_words++] = cpu_to_le64(npages);
	}
}

/*
 * Whether @pfn, a page with a zero count that is no block's head, lies in
 * a free block of the buddy lists that starts before it: a block that grew
 * by merging after the walk passed its head.
 */
static bool pt_snap_in_free_block(unsigned long pfn)
{
	unsigned int order;

	for (order = 1; order <= PT_MAX_BUDDY_ORDER; order++) {
		unsigned long head_pfn = pfn & ~((1UL << order) - 1);
		struct page *head = pfn_to_online_page(head_pfn);

		/* Read without the zone lock: it may just have changed. */
		if (head && PageBuddy(head) && page_private(head) >= order &&
		    page_private(head) <= PT_MAX_BUDDY_ORDER)
			return true;
	}
	return false;
}

/* What the walk makes of a page, in pt_snap_decide(). */
enum pt_snap_page { PT_SNAP_FREE, PT_SNAP_USED, PT_SNAP_UNSURE };

/*
 * Decide [@pfn, @end), one slice within one zone, into the slice's bitmaps
 * (bit 0 is @w->slice): see the rules above.  A page with a zero count on
 * no free list seen so far is "unsure": pt_snap_slice() looks at the
 * per-CPU lists again once the slice is walked.
 */
static void pt_snap_decide(struct pt_snap_writer *w, struct zone *zone,
			   unsigned long pfn, unsigned long end)
{
	while (pfn < end) {
		struct page *page = pfn_to_online_page(pfn);
		enum pt_snap_page what = PT_SNAP_FREE;
		unsigned long step = 1;

		if (++w->since_resched >= 4096) {
			w->since_resched = 0;
			cond_resched();
		}
		if (!page) {
			/* A hole or offline memory: the rest of its section. */
			step = ALIGN(pfn + 1, PAGES_PER_SECTION) - pfn;
		} else if (page_zone(page) != zone) {
			/* Another zone's, whose span overlaps: walked with it. */
		} else if (PageBuddy(page)) {
			unsigned long order = page_private(page);

			/* Read without the zone lock: it may just have changed. */
			if (order <= PT_MAX_BUDDY_ORDER)
				step = 1UL << order;
		} else if (PageHead(page)) {
			step = compound_nr(page);
			what = PT_SNAP_USED;
		} else if (PageTail(page) || page_count(page) || PageSlab(page)) {
			/* A slab page may be frozen (7.x): allocated all the same. */
			what = PT_SNAP_USED;
		} else if (!w->pcp) {
			/*
			 * The lists unread: free, as it may well be, but a tail
			 * of a block allocated without __GFP_COMP is not; the
			 * count bounds what the trace may start short by.
			 */
			if (!pt_snap_in_free_block(pfn))
				w->taken_free++;
		} else {
			/*
			 * The per-CPU lists first: a binary search, where the
			 * buddy test walks every order; they hold most such
			 * pages (thousands on 7.x), and a whole block is
			 * skipped at once.
			 */
			unsigned long left = pt_pcp_find(w->pcp, pfn);

			if (left)
				step = left;
			else if (!pt_snap_in_free_block(pfn))
				what = PT_SNAP_UNSURE;
		}
		step = min(step, end - pfn);
		if (what == PT_SNAP_USED)
			bitmap_set(w->used, pfn - w->slice, step);
		else if (what == PT_SNAP_UNSURE)
			bitmap_set(w->unsure, pfn - w->slice, step);
		pfn += step;
	}
}

/*
 * Whether an unsure page is free at the second look: on a per-CPU list as
 * just read, or in the buddy allocator by now.  A page allocated at the
 * first look and freed since has a free event, which applies after the
 * snapshot: listing it as free changes nothing.
 */
static bool pt_snap_free_now(struct pt_snap_writer *w, unsigned long pfn)
{
	struct page *page = pfn_to_online_page(pfn);

	return pt_pcp_find(w->pcp, pfn) || (page && PageBuddy(page)) ||
	       pt_snap_in_free_block(pfn);
}

/*
 * Walk [@pfn, @end), at most PT_SNAP_SLICE pages of one zone: decide each
 * page with the per-CPU lists as read right before, settle the unsure
 * ones with the lists as read right after (a page that joined a list
 * meanwhile was free; one allocated and freed onto it meanwhile has a
 * free event, which applies after the snapshot, so listing it as free
 * changes nothing), and list the runs of allocated pages.
 */
static void pt_snap_slice(struct pt_snap_writer *w, struct zone *zone,
			  unsigned long pfn, unsigned long end)
{
	unsigned long n = end - pfn, i, j;

	w->slice = pfn;
	bitmap_zero(w->used, n);
	bitmap_zero(w->unsure, n);
	pt_snap_decide(w, zone, pfn, end);
	if (w->pcp && !bitmap_empty(w->unsure, n)) {
		if (pt_pcp_collect(w->pcp, zone, pfn, end)) {
			/* No second look: unsure pages stay allocated. */
			w->flags &= ~PAGETRACE_SNAPSHOT_PCP;
			bitmap_or(w->used, w->used, w->unsure, n);
		} else {
			for_each_set_bit(i, w->unsure, n) {
				if (!pt_snap_free_now(w, pfn + i))
					__set_bit(i, w->used);
			}
		}
	}
	for (i = find_first_bit(w->used, n); i < n;
	     i = find_next_bit(w->used, n, j)) {
		j = find_next_zero_bit(w->used, n, i);
		pt_snap_run(w, pfn + i, j - i);
	}
}

/* Pages walked after one reading of the per-CPU lists: 128 MiB. */
#define PT_SNAP_SLICE	(1UL << (27 - PAGE_SHIFT))

/*
 * Walk [@pfn, @end) of @zone in slices, the per-CPU lists read right
 * before each (pt_pcp_collect() says why).  A reading that fails leaves
 * the slice to the old rule (zero count, on no free list: free) and the
 * snapshot record without PAGETRACE_SNAPSHOT_PCP.
 */
static void pt_snap_sliced(struct pt_snap_writer *w, struct zone *zone,
			   unsigned long pfn, unsigned long end)
{
	while (pfn < end) {
		unsigned long e = min(end, pfn + PT_SNAP_SLICE);
		struct pt_pcp_set *pcp = w->pcp;

		w->pcp = NULL;
		if (pcp && !pt_pcp_collect(pcp, zone, pfn, e))
			w->pcp = pcp;
		else if (pcp)
			w->flags &= ~PAGETRACE_SNAPSHOT_PCP;
		pt_snap_slice(w, zone, pfn, e);
		w->pcp = pcp;
		pfn = e;
	}
}

/* Walk the System RAM of one zone. */
static void pt_snap_zone(struct pt_snap_writer *w, struct zone *zone)
{
	unsigned long start = zone->zone_start_pfn, end = zone_end_pfn(zone);
	unsigned int i;

	if (!w->nr_ram) {
		pt_snap_sliced(w, zone, start, end);
		return;
	}
	for (i = 0; i < w->nr_ram; i++) {
		unsigned long s = max(start, w->ram[i].start);
		unsigned long e = min(end, w->ram[i].end);

		if (s < e)
			pt_snap_sliced(w, zone, s, e);
	}
}

struct pt_ram_walk {
	struct pt_pfn_range	*ram;
	unsigned int		n;
	unsigned int		max;
};

static int pt_snap_ram_range(struct resource *res, void *arg)
{
	struct pt_ram_walk *rw = arg;
	/* Whole pages only, as the zones count them present. */
	unsigned long start = PFN_UP(res->start), end = PFN_DOWN(res->end + 1);

	if (start >= end)
		return 0;
	if (rw->n == rw->max)
		return -ENOSPC;
	rw->ram[rw->n].start = start;
	rw->ram[rw->n].end = end;
	rw->n++;
	return 0;
}

/*
 * The System RAM ranges of the resource tree (/proc/iomem), which are the
 * memory the zones count as present: their spans also cover holes, whose
 * struct pages are reserved and would otherwise be listed as allocated.
 * Without them (no room, or none found) the walk covers the whole spans,
 * as it always did.  Returns the array (kfree() it) and *@n.
 */
static struct pt_pfn_range *pt_snap_ram_ranges(unsigned int *n)
{
	struct pt_ram_walk rw = { .max = 256 };

	*n = 0;
	rw.ram = kmalloc_array(rw.max, sizeof(*rw.ram), GFP_KERNEL);
	if (!rw.ram)
		return NULL;
	if (walk_iomem_res_desc(IORES_DESC_NONE,
				IORESOURCE_SYSTEM_RAM | IORESOURCE_BUSY, 0,
				U64_MAX, &rw, pt_snap_ram_range) == -ENOSPC ||
	    !rw.n) {
		kfree(rw.ram);
		return NULL;
	}
	*n = rw.n;
	return rw.ram;
}

static void pt_snap_walk(struct pt_snap_writer *w)
{
	struct zone *zone = NULL;

	/* A node filter applies to the snapshot too; see pagetrace_rec_filter. */
	while ((zone = pt_next_zone(zone))) {
		if (pt_filter_keeps_node(&w->sess->filter, zone_to_nid(zone)))
			pt_snap_zone(w, zone);
	}
	pt_snap_close(w);
	/* Runs the area had no room for count as lost events. */
	if (w->last)
		w->last->lost = pt_le64(w->unlisted);
}

/* Fill the header's REC_SNAPSHOT, and its copy in the meta area. */
static void pt_snap_record(struct pt_session *sess,
			   const struct pt_snap_writer *w, u64 walk_ns)
{
	struct pagetrace_rec_snapshot rec = {
		.walk_ns = pt_le64(walk_ns),
		.runs = pt_le64(w->runs),
		.pages = pt_le64(w->pages),
		.unlisted = pt_le64(w->unlisted),
		.flags = pt_le64(w->flags | PAGETRACE_SNAPSHOT_TAKEN_FREE),
		.taken_free = pt_le64(w->taken_free),
	};

	if (!sess->snap_rec_off)
		return;
	memcpy(sess->header + sess->snap_rec_off, &rec, sizeof(rec));
	memcpy((void *)sess->meta + sess->meta->header_offset +
	       sess->snap_rec_off, &rec, sizeof(rec));
}

/**
 * pt_snapshot_build - list the pages allocated at session start
 * @sess: the session, probes attached, before open() returns
 *
 * One walk, into an area that grows as it fills (pt_snap_open()).  The
 * area may be mapped to userspace, so it comes zeroed from vmalloc_user().
 * Sleeps.
 *
 * Return: 0 or -ENOMEM.
 */
int pt_snapshot_build(struct pt_session *sess)
{
	const struct pagetrace_header *h = sess->header;
	struct pt_snap_writer w = {
		.sess = sess,
		.base = le64_to_cpu((__force __le64)h->start_ns) &
			~((1ULL << PAGETRACE_TIME_LOST_BITS) - 1),
		.cpu = raw_smp_processor_id(),
	};
	u64 t0 = local_clock();
	struct pt_pcp_set pcp = { };

	/* No memory goes away under the walk: memhotplug.c. */
	if (pt_mem_read_begin()) {
		pr_info("pagetrace: memory is being offlined: no session until it is done\n");
		return -EBUSY;
	}
	w.used = bitmap_zalloc(PT_SNAP_SLICE, GFP_KERNEL);
	w.unsure = bitmap_zalloc(PT_SNAP_SLICE, GFP_KERNEL);
	if (!w.used || !w.unsure)
		goto free_bitmaps;
	w.size = sess->chunk_size;
	w.area = vmalloc_user(w.size);
	if (!w.area)
		goto free_bitmaps;
	w.ram = pt_snap_ram_ranges(&w.nr_ram);
	if (!pt_pcp_alloc(&pcp)) {
		w.pcp = &pcp;
		w.flags |= PAGETRACE_SNAPSHOT_PCP;
	}
	pt_snap_walk(&w);
	/*
	 * Doubling leaves up to half the area unused: a quarter or more is
	 * given back (the area stays as it is if the copy finds no memory).
	 */
	if (w.size - w.len >= max_t(size_t, w.len / 4, PAGE_SIZE))
		pt_snap_move(&w, PAGE_ALIGN(max_t(size_t, w.len, 1)));
	pt_pcp_free(&pcp);
	kfree(w.ram);
	bitmap_free(w.unsure);
	bitmap_free(w.used);
	pt_mem_read_end();

	sess->snap = w.area;
	sess->snap_len = w.len;
	pt_snap_record(sess, &w, local_clock() - t0);
	pt_meta_add_snapshot(sess);
	return 0;

free_bitmaps:
	bitmap_free(w.unsure);
	bitmap_free(w.used);
	pt_mem_read_end();
	return -ENOMEM;
}

void pt_snapshot_free(struct pt_session *sess)
{
	vfree(sess->snap);
	sess->snap = NULL;
	sess->snap_len = 0;
}
