// SPDX-License-Identifier: GPL-2.0
/*
 * Task names, as reader.c decodes them from name slices: tgid -> comm,
 * last one wins, a table of at most PGTRACE_READER_MAX_NAMES entries (open
 * addressing, linear probing, kept at most half full).
 */
#include <stdlib.h>
#include "internal.h"

static unsigned int name_hash(uint32_t tgid, unsigned int cap)
{
	return (unsigned int)((tgid * 0x9e3779b1U) & (cap - 1));
}

static struct pgtrace_name *name_slot(struct pgtrace_name *t, unsigned int cap, uint32_t tgid)
{
	unsigned int i = name_hash(tgid, cap);

	while (t[i].used && t[i].tgid != tgid)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static int names_grow(struct pgtrace_reader *r)
{
	unsigned int cap = r->names_cap ? 2 * r->names_cap : 64;
	struct pgtrace_name *t = calloc(cap, sizeof(*t));

	if (!t)
		return -1;
	for (unsigned int i = 0; i < r->names_cap; i++)
		if (r->names[i].used)
			*name_slot(t, cap, r->names[i].tgid) = r->names[i];
	free(r->names);
	r->names = t;
	r->names_cap = cap;
	return 0;
}

void pgtrace_set_name(struct pgtrace_reader *r, uint32_t tgid, const unsigned char *comm)
{
	struct pgtrace_name *n = NULL;

	if (r->names_cap)
		n = name_slot(r->names, r->names_cap, tgid);
	if (!n || !n->used) {
		if (r->nr_names >= PGTRACE_READER_MAX_NAMES) {
			r->names_dropped++;
			return;
		}
		if (2 * (r->nr_names + 1) > r->names_cap) {
			if (names_grow(r)) {
				r->names_dropped++;
				return;
			}
		}
		n = name_slot(r->names, r->names_cap, tgid);
		n->used = true;
		n->tgid = tgid;
		r->nr_names++;
	}
	memcpy(n->comm, comm, PAGETRACE_COMM_LEN);
	n->comm[PAGETRACE_COMM_LEN] = '\0';
}

void pgtrace_names_free(struct pgtrace_reader *r)
{
	free(r->names);
	r->names = NULL;
	r->names_cap = 0;
	r->nr_names = 0;
}

const char *pgtrace_reader_task_name(const struct pgtrace_reader *r, int64_t tgid)
{
	const struct pgtrace_name *n;

	if (!r->names_cap || tgid < 0 || tgid > (int64_t)PAGETRACE_ID_TGID_MASK)
		return NULL;
	n = name_slot(r->names, r->names_cap, (uint32_t)tgid);
	return n->used ? n->comm : NULL;
}

uint64_t pgtrace_reader_names_dropped(const struct pgtrace_reader *r)
{
	return r->names_dropped;
}
