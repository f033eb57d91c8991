// SPDX-License-Identifier: GPL-2.0
/*
 * The mapped session: the consumer's side of the protocol drawn in
 * uapi/linux/pagetrace.h, so that no tool writes it again.
 *
 * The kernel publishes a CPU's chunks by advancing its produced position
 * with release, and takes them back when PAGETRACE_IOC_CONSUME stores a
 * new consumed position.  Between the two the chunks are ours to read in
 * place.  The ring keeps, per CPU, the first chunk its user has not yet
 * advanced past (@next); pgtrace_ring_consume() hands all of them back at once,
 * so that draining every CPU costs one system call.  In flight recorder
 * mode the writer moves consumed itself when it overwrites, so @next is
 * never taken below the kernel's consumed position.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "libpagetrace.h"
#include "internal.h"

struct pgtrace_ring {
	int				fd;
	void				*map;
	size_t				size;
	const struct pagetrace_meta	*meta;
	uint64_t			*next;	/* per CPU: first not advanced past */
	uint64_t			*pos;	/* the CONSUME argument */
};

static const struct pagetrace_meta_cpu *meta_cpu(const struct pgtrace_ring *r,
						 unsigned int cpu)
{
	return (const void *)((const char *)r->map + r->meta->cpu_offset +
			      (size_t)cpu * r->meta->cpu_stride);
}

static uint64_t load_acquire(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Whether [off, off + len) lies inside the mapping. */
static bool inside(const struct pgtrace_ring *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

/* The meta area describes a layout that fits the mapping. */
static bool meta_valid(const struct pgtrace_ring *r)
{
	const struct pagetrace_meta *m = r->meta;

	if (r->size < sizeof(*m) || m->magic != PAGETRACE_META_MAGIC ||
	    m->version != PAGETRACE_VERSION ||
	    m->header_size < sizeof(struct pagetrace_header) ||
	    m->mmap_size != r->size || !m->nr_cpus ||
	    m->cpu_stride < sizeof(struct pagetrace_meta_cpu) ||
	    m->chunk_size < sizeof(struct pagetrace_chunk) || !m->nr_bufs)
		return false;
	return inside(r, m->cpu_offset, (uint64_t)m->nr_cpus * m->cpu_stride) &&
	       inside(r, m->header_offset, m->header_size) &&
	       inside(r, m->snapshot_offset, m->snapshot_size) &&
	       m->ring_size >= (uint64_t)m->nr_bufs * m->chunk_size &&
	       m->data_offset <= r->size &&
	       m->nr_cpus <= (r->size - m->data_offset) / m->ring_size;
}

int pgtrace_ring_map(int fd, struct pgtrace_ring **out)
{
	struct pagetrace_mmap_info mi;
	struct pgtrace_ring *r;
	int ret;

	*out = NULL;
	if (ioctl(fd, PAGETRACE_IOC_MMAP_INFO, &mi))
		return -errno;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->size = mi.mmap_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED) {
		ret = -errno;
		r->map = NULL;
		goto free_ring;
	}
	r->meta = r->map;
	if (!meta_valid(r)) {
		ret = -EPROTO;
		goto unmap;
	}
	r->next = calloc(r->meta->nr_cpus, sizeof(*r->next));
	r->pos = calloc(r->meta->nr_cpus, sizeof(*r->pos));
	if (!r->next || !r->pos) {
		ret = -ENOMEM;
		goto free_positions;
	}
	*out = r;
	return 0;

free_positions:
	free(r->next);
	free(r->pos);
unmap:
	munmap(r->map, r->size);
free_ring:
	free(r);
	return ret;
}

void pgtrace_ring_unmap(struct pgtrace_ring *r)
{
	if (!r)
		return;
	free(r->next);
	free(r->pos);
	munmap(r->map, r->size);
	free(r);
}

int pgtrace_ring_claim(struct pgtrace_ring *r)
{
	struct pagetrace_consume c = { 0 };

	return ioctl(r->fd, PAGETRACE_IOC_CONSUME, &c) ? -errno : 0;
}

const struct pagetrace_meta *pgtrace_ring_meta(const struct pgtrace_ring *r)
{
	return r->meta;
}

uint32_t pgtrace_ring_flags(const struct pgtrace_ring *r)
{
	/* Acquire: pairs with the kernel's release of STOPPED and FROZEN. */
	return __atomic_load_n(&r->meta->flags, __ATOMIC_ACQUIRE);
}

const struct pagetrace_meta_cpu *pgtrace_ring_cpu(const struct pgtrace_ring *r, unsigned int cpu)
{
	return cpu < r->meta->nr_cpus ? meta_cpu(r, cpu) : NULL;
}

const struct pagetrace_header *pgtrace_ring_header(const struct pgtrace_ring *r,
					      const void **snapshot,
					      size_t *snapshot_len)
{
	const char *base = r->map;

	if (snapshot)
		*snapshot = base + r->meta->snapshot_offset;
	if (snapshot_len)
		*snapshot_len = r->meta->snapshot_size;
	return (const void *)(base + r->meta->header_offset);
}

/*
 * The pages the snapshot listed: its header record in the mapped header
 * (little-endian, like the stream).  Whether there is one in *@found.
 */
static uint64_t snapshot_pages(const struct pgtrace_ring *r, int *found)
{
	const unsigned char *h = (const unsigned char *)r->map + r->meta->header_offset;
	size_t off = sizeof(struct pagetrace_header), end = r->meta->header_size;

	*found = 0;
	if (!(pgtrace_load32(h + offsetof(struct pagetrace_header, flags)) &
	      PAGETRACE_FLAG_SNAPSHOT))
		return 0;
	while (end - off >= sizeof(struct pagetrace_record)) {
		uint32_t type = pgtrace_load32(h + off);
		uint64_t size = pgtrace_load32(h + off + 4), padded = (size + 7) & ~7ULL;

		if (type == PAGETRACE_REC_END || padded > end - off - 8)
			break;
		if (type == PAGETRACE_REC_SNAPSHOT &&
		    size >= sizeof(struct pagetrace_rec_snapshot)) {
			*found = 1;
			return pgtrace_load64(h + off + 8 +
					      offsetof(struct pagetrace_rec_snapshot, pages));
		}
		off += 8 + padded;
	}
	return 0;
}

int pgtrace_ring_pages(const struct pgtrace_ring *r, struct pgtrace_ring_pages *p)
{
	memset(p, 0, sizeof(*p));
	if (!(pgtrace_ring_flags(r) & PAGETRACE_META_PAGES))
		return -EOPNOTSUPP;
	p->snapshot = snapshot_pages(r, &p->has_snapshot);
	for (unsigned int cpu = 0; cpu < r->meta->nr_cpus; cpu++) {
		const struct pagetrace_meta_cpu *mc = meta_cpu(r, cpu);

		/* Written racily by the writer at chunk close: whole u64s. */
		p->alloc += __atomic_load_n(&mc->allocated_pages, __ATOMIC_RELAXED);
		p->free += __atomic_load_n(&mc->freed_pages, __ATOMIC_RELAXED);
	}
	p->in_use = (int64_t)(p->snapshot + p->alloc - p->free);
	return 0;
}

/* The first chunk of @cpu not advanced past: ours, or the kernel's consumed. */
static uint64_t first_pos(const struct pgtrace_ring *r, unsigned int cpu)
{
	uint64_t consumed = __atomic_load_n(&meta_cpu(r, cpu)->consumed,
					    __ATOMIC_RELAXED);

	return r->next[cpu] > consumed ? r->next[cpu] : consumed;
}

int64_t pgtrace_ring_peek(struct pgtrace_ring *r, unsigned int cpu, uint64_t *pos)
{
	uint64_t produced, first;

	if (cpu >= r->meta->nr_cpus)
		return -EINVAL;
	/* Acquire: pairs with the writer's release; the chunks are complete. */
	produced = load_acquire(&meta_cpu(r, cpu)->produced);
	first = first_pos(r, cpu);
	*pos = first;
	return produced > first ? (int64_t)(produced - first) : 0;
}

int pgtrace_ring_chunk(const struct pgtrace_ring *r, unsigned int cpu, uint64_t pos,
		  const struct pagetrace_chunk **chunk, size_t *len)
{
	const struct pagetrace_meta *m = r->meta;
	const struct pagetrace_meta_cpu *mc;
	const struct pagetrace_chunk *ch;
	size_t n;

	if (cpu >= m->nr_cpus)
		return -EINVAL;
	/* Only a closed chunk not given back is ours to read. */
	mc = meta_cpu(r, cpu);
	if (pos < __atomic_load_n(&mc->consumed, __ATOMIC_RELAXED) ||
	    pos >= load_acquire(&mc->produced))
		return -EINVAL;
	ch = (const void *)((const char *)r->map + m->data_offset +
			    cpu * m->ring_size + (pos % m->nr_bufs) * m->chunk_size);
	n = sizeof(*ch) + (size_t)ch->nr_words * sizeof(__u64);
	if (n > m->chunk_size)
		return -EBADMSG;
	*chunk = ch;
	*len = n;
	return 0;
}

int pgtrace_ring_advance(struct pgtrace_ring *r, unsigned int cpu, uint64_t n)
{
	uint64_t first, produced;

	if (cpu >= r->meta->nr_cpus)
		return -EINVAL;
	first = first_pos(r, cpu);
	produced = load_acquire(&meta_cpu(r, cpu)->produced);
	if (n > produced - first)
		return -EINVAL;
	r->next[cpu] = first + n;
	return 0;
}

int64_t pgtrace_ring_consume(struct pgtrace_ring *r)
{
	unsigned int nr = r->meta->nr_cpus;
	struct pagetrace_consume c = { .pos = (uintptr_t)r->pos, .nr_cpus = nr };
	int64_t moved = 0;

	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		/* One load: a flight recorder's writer may move it meanwhile. */
		uint64_t consumed = __atomic_load_n(&meta_cpu(r, cpu)->consumed,
						    __ATOMIC_RELAXED);

		r->pos[cpu] = r->next[cpu] > consumed ? r->next[cpu] : consumed;
		moved += r->pos[cpu] - consumed;
	}
	/*
	 * Nothing moved: no system call.  After PAGETRACE_IOC_STOP, a
	 * CONSUME that empties a ring lets the kernel put the losses that
	 * found no free buffer into one more chunk: a drain ends when a peek
	 * of every CPU finds nothing.
	 */
	if (!moved)
		return 0;
	if (ioctl(r->fd, PAGETRACE_IOC_CONSUME, &c))
		return -errno;
	return moved;
}
