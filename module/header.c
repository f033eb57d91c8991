// SPDX-License-Identifier: GPL-2.0
/*
 * The stream header, built once when a session starts.
 *
 *   struct pagetrace_header            64 bytes
 *   REC_RELEASE   utsname release      what kernel the PFNs belong to
 *   REC_SESSION   nr_bufs, backend...  how the session was set up
 *   REC_SNAPSHOT  walk time, runs...   the memory map at start (if taken)
 *   REC_STACKS    rate, anchor         how allocations are sampled (if so)
 *   REC_FILTER    types, orders...     which events were kept (if filtered)
 *   REC_ZONE      one per populated zone, so decoders can map PFNs to
 *                 nodes and zones without /proc
 *   REC_END
 *
 * The three start times are read back to back with interrupts off, so they
 * name the same instant to within a few hundred nanoseconds.
 */
#include <linux/irqflags.h>
#include <linux/mmzone.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>

#include "clock.h"
#include "pagetrace.h"

/* The session record's layout is the format's: moving a field breaks it. */
static_assert(sizeof(struct pagetrace_rec_session) == 32);
static_assert(offsetof(struct pagetrace_rec_session, attach_us) == 20);

static size_t pt_rec_space(size_t payload)
{
	return sizeof(struct pagetrace_record) + ALIGN(payload, 8);
}

/*
 * Append one record at *pos; the buffer is zeroed, so padding is too, and
 * so is the payload of a record put with @payload NULL, to be filled in.
 */
static void pt_rec_put(void **pos, u32 type, const void *payload, u32 size)
{
	struct pagetrace_record *rec = *pos;

	rec->type = pt_le32(type);
	rec->size = pt_le32(size);
	if (payload)
		memcpy(rec + 1, payload, size);
	*pos += pt_rec_space(size);
}

/*
 * pfn_limit=: the first PFN the stream cannot carry, for the selftests,
 * which lower it to see the refusal below on a small machine; 0 (the
 * default) means the format's own, PAGETRACE_PFN_MAX + 1.
 */
static unsigned long pt_pfn_limit;
module_param_named(pfn_limit, pt_pfn_limit, ulong, 0644);
MODULE_PARM_DESC(pfn_limit,
		 "For tests: refuse sessions on memory at or above this PFN (default 0: the stream's 35-bit limit)");

/*
 * The stream's PFN field has PAGETRACE_PFN_BITS (35: 128 TiB of 4 KiB
 * pages).  Memory placed higher (CXL, a hotplug window above 128 TiB on a
 * 5-level paging kernel) would alias to wrong PFNs, so a session on such
 * a machine is refused, and the kernel log names the zone and the limit.
 * Memory onlined above the limit during a session has its events counted
 * as lost (pt_write()) and its pages left out of the snapshot
 * (pt_snap_run()).
 */

/**
 * pt_header_pfns_fit - whether the stream can carry every page's PFN
 *
 * Context: session start, in process context, before anything is allocated.
 *
 * Return: 0, or -ERANGE if a populated zone reaches beyond the PFN field
 * (or pfn_limit=).
 */
int pt_header_pfns_fit(void)
{
	unsigned long limit = READ_ONCE(pt_pfn_limit);
	bool forced = limit && limit <= PAGETRACE_PFN_MAX;
	struct zone *zone = NULL;

	if (!forced)
		limit = PAGETRACE_PFN_MAX + 1;
	while ((zone = pt_next_zone(zone))) {
		if (zone_end_pfn(zone) <= limit)
			continue;
		if (forced)
			pr_err("pagetrace: node %d zone %s reaches PFN %#lx, at or above pfn_limit=%#lx: refusing the session\n",
			       zone_to_nid(zone), zone->name,
			       zone_end_pfn(zone) - 1, limit);
		else
			pr_err("pagetrace: node %d zone %s reaches PFN %#lx, beyond the stream's %u-bit PFN field (at most %#lx): refusing the session\n",
			       zone_to_nid(zone), zone->name,
			       zone_end_pfn(zone) - 1, PAGETRACE_PFN_BITS,
			       limit - 1);
		return -ERANGE;
	}
	return 0;
}

/**
 * pt_header_build - the stream header of a new session
 * @sess: the session, its parameters set
 *
 * Return: 0 or -ENOMEM.
 */
int pt_header_build(struct pt_session *sess)
{
	const char *release = utsname()->release;
	struct pagetrace_rec_session info = {
		.nr_bufs = pt_le32(sess->nr_bufs),
		.backend = pt_le32(sess->backend),
		.flush_ms = pt_le32(sess->flush_ms),
		.clock_error_ns = pt_le32(pt_tsc.error_ns),
	};
	struct pagetrace_header *h;
	unsigned long flags;
	struct zone *zone = NULL;
	size_t size;
	void *pos;

	/* Zones can come and go with memory hotplug: leave room for that. */
	size = sizeof(*h) + pt_rec_space(strlen(release) + 1) +
	       pt_rec_space(sizeof(info)) +
	       pt_rec_space(sizeof(struct pagetrace_rec_snapshot)) +
	       pt_rec_space(sizeof(struct pagetrace_rec_stacks)) +
	       pt_rec_space(sizeof(struct pagetrace_rec_filter)) +
	       (pt_zones_count() + 4) * pt_rec_space(sizeof(struct pagetrace_rec_zone)) +
	       pt_rec_space(pt_counters_size(pt_zones_count() + 4)) +
	       pt_rec_space(0);
	h = kzalloc(size, GFP_KERNEL);
	if (!h)
		return -ENOMEM;

	memcpy(h->magic, PAGETRACE_MAGIC, PAGETRACE_MAGIC_LEN);
	h->version = pt_le32(PAGETRACE_VERSION);
	h->page_shift = pt_le32(PAGE_SHIFT);
	h->time_lost_bits = pt_le32(PAGETRACE_TIME_LOST_BITS);
	h->time_delta_bits = pt_le32(PAGETRACE_TIME_DELTA_BITS);
	h->nr_cpus = pt_le32(sess->nr_cpus);
	h->chunk_size = pt_le32(sess->chunk_size);
	h->flags = pt_le32(sess->header_flags);

	local_irq_save(flags);
	h->start_ns = pt_le64(pt_clock_now());
	sess->start_mono_ns = ktime_get_ns();
	h->start_mono_ns = pt_le64(sess->start_mono_ns);
	h->start_real_ns = pt_le64(ktime_get_real_ns());
	local_irq_restore(flags);

	pos = h + 1;
	pt_rec_put(&pos, PAGETRACE_REC_RELEASE, release, strlen(release) + 1);
	sess->sess_rec_off = pos + sizeof(struct pagetrace_record) - (void *)h;
	pt_rec_put(&pos, PAGETRACE_REC_SESSION, &info, sizeof(info));
	if (sess->header_flags & PAGETRACE_FLAG_SNAPSHOT) {
		/* Filled in by pt_snapshot_build(), before anyone reads. */
		struct pagetrace_rec_snapshot snap = { };

		sess->snap_rec_off = pos + sizeof(struct pagetrace_record) -
				     (void *)h;
		pt_rec_put(&pos, PAGETRACE_REC_SNAPSHOT, &snap, sizeof(snap));
	}
	if (sess->header_flags & PAGETRACE_FLAG_STACKS) {
		struct pagetrace_rec_stacks stacks;

		pt_stacks_record(&stacks, sess->stack_rate);
		pt_rec_put(&pos, PAGETRACE_REC_STACKS, &stacks, sizeof(stacks));
	}
	if (sess->header_flags & PAGETRACE_FLAG_FILTERED) {
		struct pagetrace_rec_filter filter;

		pt_filter_record(&sess->filter, &filter);
		pt_rec_put(&pos, PAGETRACE_REC_FILTER, &filter, sizeof(filter));
	}
	/*
	 * Filled in by pt_header_set_counters() once the snapshot is taken,
	 * before anyone reads; zeroed (no zone) until then.  Room for the
	 * zones memory hotplug may add meanwhile, as below.
	 */
	sess->counters_max = pt_zones_count() + 4;
	sess->counters_rec_off = pos + sizeof(struct pagetrace_record) -
				 (void *)h;
	pt_rec_put(&pos, PAGETRACE_REC_COUNTERS, NULL,
		   pt_counters_size(sess->counters_max));
	while ((zone = pt_next_zone(zone))) {
		struct pagetrace_rec_zone z = {
			.node = pt_le32(zone_to_nid(zone)),
			.zone = pt_le32(zone_idx(zone)),
			.start_pfn = pt_le64(zone->zone_start_pfn),
			.end_pfn = pt_le64(zone_end_pfn(zone)),
			.present_pages = pt_le64(zone->present_pages),
		};

		if (pos + pt_rec_space(sizeof(z)) + pt_rec_space(0) >
		    (void *)h + size)
			break;
		strscpy((char *)z.name, zone->name, sizeof(z.name));
		pt_rec_put(&pos, PAGETRACE_REC_ZONE, &z, sizeof(z));
	}
	pt_rec_put(&pos, PAGETRACE_REC_END, NULL, 0);

	sess->header = h;
	sess->header_size = pos - (void *)h;
	h->header_size = pt_le32(sess->header_size);
	return 0;
}

/**
 * pt_header_set_attach - write in the header what attaching the hooks found
 * @sess: the session, hooks attached, no writer published yet
 * @attach_ns: CLOCK_MONOTONIC time from the header's start_mono_ns to now
 *
 * hook=auto is resolved, what the hooks cannot see is known, and how long
 * attaching took is measured only here: the header (and its copy in the
 * meta area) was built first.  Nobody reads either yet.  @attach_ns is
 * taken before any writer is published, so that no event of the session
 * precedes it; in microseconds, rounded down, and at least 1 (attaching
 * takes far longer), as 0 says "unknown" (traces of earlier versions).
 */
void pt_header_set_attach(struct pt_session *sess, u64 attach_ns)
{
	u64 attach_us = clamp_t(u64, div_u64(attach_ns, NSEC_PER_USEC), 1,
				U32_MAX);
	struct {
		size_t	off;
		u32	val;
	} set[] = {
		{ offsetof(struct pagetrace_rec_session, backend),
		  pt_le32(sess->backend) },
		{ offsetof(struct pagetrace_rec_session, uncovered),
		  pt_le32(sess->uncovered) },
		{ offsetof(struct pagetrace_rec_session, attach_us),
		  pt_le32(attach_us) },
	};
	void *meta_header = (void *)sess->meta + sess->meta->header_offset;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(set); i++) {
		size_t off = sess->sess_rec_off + set[i].off;

		memcpy(sess->header + off, &set[i].val, sizeof(set[i].val));
		memcpy(meta_header + off, &set[i].val, sizeof(set[i].val));
	}
}

/**
 * pt_header_set_flags - rewrite the header's flags, in both copies
 * @sess: the session, before any reader has read its header
 * @flags: PAGETRACE_FLAG_*
 */
void pt_header_set_flags(struct pt_session *sess, u32 flags)
{
	struct pagetrace_header *h = sess->header;
	struct pagetrace_header *mh = (void *)sess->meta +
				      sess->meta->header_offset;

	sess->header_flags = flags;
	h->flags = pt_le32(flags);
	WRITE_ONCE(mh->flags, pt_le32(flags));
}

/**
 * pt_header_set_counters - the zones' counters now, into the header
 * @sess: the session, hooks attached and the snapshot taken, before open()
 *	  returns: nobody reads either copy of the header yet
 */
void pt_header_set_counters(struct pt_session *sess)
{
	struct pagetrace_rec_counters *rec = sess->header +
					     sess->counters_rec_off;

	pt_counters_read(rec, sess->counters_max, sess);
	memcpy((void *)sess->meta + sess->meta->header_offset +
	       sess->counters_rec_off, rec,
	       pt_counters_size(sess->counters_max));
}
