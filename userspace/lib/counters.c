// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own count of each zone's pages, at the session's start (the
 * header's PAGETRACE_REC_COUNTERS record) and stop (a chunk flagged
 * PAGETRACE_CHUNK_COUNTERS, which the recorder appends): both are a
 * struct pagetrace_rec_counters, read here into host order.  The analysis
 * sets the trace's own pages in use beside them (pgtrace_zone_stats).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Zones a record may list; far more than any machine has populated. */
#define COUNTERS_MAX_ZONES	4096

/*
 * Parse @size bytes at @pl into @out: 0, or -EBADMSG (the error set at
 * @off, named after @what) or -ENOMEM.
 */
static int parse_counters(struct pgtrace_reader *r, const unsigned char *pl, uint64_t size,
			  uint64_t off, const char *what, struct pgtrace_kernel_counters *out)
{
	const size_t zsz = sizeof(struct pagetrace_zone_counters);
	const size_t head = offsetof(struct pagetrace_rec_counters, zones);
	uint32_t n;

	if (size < head)
		return pgtrace_set_error(r, -EBADMSG, off, "%s size %llu, need %zu", what,
				    (unsigned long long)size, head);
	n = pgtrace_load32(pl + offsetof(struct pagetrace_rec_counters, nr_zones));
	if (n > COUNTERS_MAX_ZONES || head + (uint64_t)n * zsz > size)
		return pgtrace_set_error(r, -EBADMSG, off,
				    "%s lists %u zones, %llu bytes hold %llu", what, n,
				    (unsigned long long)size,
				    (unsigned long long)((size - head) / zsz));
	if (pgtrace_load32(pl + offsetof(struct pagetrace_rec_counters, reserved0)) ||
	    pgtrace_load64(pl + offsetof(struct pagetrace_rec_counters, reserved)) ||
	    pgtrace_load64(pl + offsetof(struct pagetrace_rec_counters, reserved) + 8))
		return pgtrace_set_error(r, -EBADMSG, off, "%s reserved fields are not 0", what);
	out->zones = calloc(n ? n : 1, sizeof(*out->zones));
	if (!out->zones)
		return -ENOMEM;
	out->time_ns = pgtrace_load64(pl + offsetof(struct pagetrace_rec_counters, time_ns));
	out->nr_zones = n;
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *z = pl + head + i * zsz;
		struct pgtrace_zone_counters *c = &out->zones[i];

		c->node = pgtrace_load32(z + offsetof(struct pagetrace_zone_counters, node));
		c->zone = pgtrace_load32(z + offsetof(struct pagetrace_zone_counters, zone));
		c->present_pages = pgtrace_load64(z + offsetof(struct pagetrace_zone_counters,
							      present_pages));
		c->managed_pages = pgtrace_load64(z + offsetof(struct pagetrace_zone_counters,
							      managed_pages));
		c->free_pages = pgtrace_load64(z + offsetof(struct pagetrace_zone_counters,
							   free_pages));
		c->pcp_pages = pgtrace_load64(z + offsetof(struct pagetrace_zone_counters,
							  pcp_pages));
		c->spread_pages = pgtrace_load64(z + offsetof(struct pagetrace_zone_counters,
							     spread_pages));
		if (c->managed_pages > c->present_pages ||
		    c->free_pages + c->pcp_pages > c->present_pages) {
			free(out->zones);
			out->zones = NULL;
			return pgtrace_set_error(r, -EBADMSG, off,
					    "%s zone %u:%u counts more free (%llu + %llu per-CPU) or managed (%llu) pages than present (%llu)",
					    what, c->node, c->zone,
					    (unsigned long long)c->free_pages,
					    (unsigned long long)c->pcp_pages,
					    (unsigned long long)c->managed_pages,
					    (unsigned long long)c->present_pages);
		}
	}
	out->valid = true;
	return 0;
}

int pgtrace_parse_counters_rec(struct pgtrace_reader *r, const unsigned char *pl, uint32_t size,
			       uint64_t off)
{
	if (r->counters[PGTRACE_KERNEL_COUNTERS_START].valid)
		return pgtrace_set_error(r, -EBADMSG, off, "second counters record");
	return parse_counters(r, pl, size, off, "counters record",
			      &r->counters[PGTRACE_KERNEL_COUNTERS_START]);
}

int pgtrace_parse_counters_chunk(struct pgtrace_reader *r, const unsigned char *words,
				 uint32_t nr_words, uint64_t off)
{
	if (r->counters[PGTRACE_KERNEL_COUNTERS_STOP].valid)
		return pgtrace_set_error(r, -EBADMSG, off, "second counters chunk");
	return parse_counters(r, words, 8ULL * nr_words, off, "counters chunk",
			      &r->counters[PGTRACE_KERNEL_COUNTERS_STOP]);
}

void pgtrace_counters_free(struct pgtrace_reader *r)
{
	for (unsigned int i = 0; i < 2; i++) {
		free(r->counters[i].zones);
		memset(&r->counters[i], 0, sizeof(r->counters[i]));
	}
}

const struct pgtrace_kernel_counters *pgtrace_reader_kernel_counters(const struct pgtrace_reader *r,
							unsigned int which)
{
	if (which > PGTRACE_KERNEL_COUNTERS_STOP || !r->counters[which].valid)
		return NULL;
	return &r->counters[which];
}

int64_t pgtrace_zone_counters_in_use(const struct pgtrace_zone_counters *z)
{
	return (int64_t)(z->present_pages - z->free_pages - z->pcp_pages);
}
