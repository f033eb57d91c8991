// SPDX-License-Identifier: GPL-2.0
/*
 * The read-only mapping of a session: the meta area, then each CPU's ring.
 * The layout is drawn in uapi/linux/pagetrace.h; in short:
 *
 *   [0, meta_size)                      struct pagetrace_meta,
 *                                       struct pagetrace_meta_cpu[nr_cpus],
 *                                       a copy of the stream header
 *   [data_offset + cpu * ring_size,     CPU cpu's nr_bufs buffers, exactly
 *    ... + ring_size)                   the memory the writer fills
 *   [snapshot_offset, mmap_size)        the snapshot chunks (snapshot.c)
 *
 * Each piece is its own vmalloc_user() area; a page fault finds the page
 * behind an offset with vmalloc_to_page() (as perf does for its vmalloc'ed
 * ring buffers), so a mapping costs nothing until it is touched and never
 * needs to be torn down by us.  The memory lives as long as the session,
 * and the session as long as the file: every mapping holds a reference on
 * the file (vma->vm_file), so release() - which frees the session - runs
 * only after the last mapping is gone.
 *
 * What a mapping must be, checked in this order:
 *  - neither writable nor executable (VM_WRITE, VM_EXEC): -EPERM.
 *    VM_MAYWRITE and VM_MAYEXEC are cleared too, so mprotect() cannot
 *    add either later: the rings are data the kernel writes.
 *  - shared (MAP_SHARED, VM_MAYSHARE): -EINVAL for MAP_PRIVATE, whose
 *    copy-on-write pages would silently stop following the writer.
 *  - offset 0 and length exactly mmap_size: -EINVAL otherwise.  Partial
 *    mappings would make the offsets in the meta area lie.
 * It gets VM_DONTEXPAND (mremap() cannot grow it past the end) and
 * VM_DONTDUMP (a core dump of the recorder does not copy the rings).
 */
#include <linux/fs.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "pagetrace.h"

/**
 * pt_meta_init - allocate and fill the meta area
 * @sess: a session whose buffers and header are set up
 *
 * Also points every CPU's @meta at its entry: from here on the positions
 * live in the meta area.
 *
 * Return: 0, -E2BIG if the area would not fit its size field, or -ENOMEM.
 */
int pt_meta_init(struct pt_session *sess)
{
	struct pagetrace_meta *m;
	size_t cpu_off = sizeof(*m);
	size_t hdr_off = cpu_off + (size_t)sess->nr_cpus *
			 sizeof(struct pagetrace_meta_cpu);
	size_t size = PAGE_ALIGN(hdr_off + sess->header_size);
	unsigned int cpu;

	if (size > U32_MAX)
		return -E2BIG;
	m = vmalloc_user(size);
	if (!m)
		return -ENOMEM;

	sess->meta = m;
	sess->meta_size = size;
	sess->ring_size = (u64)sess->nr_bufs * sess->chunk_size;
	sess->mmap_size = size + sess->nr_cpus * sess->ring_size;

	m->magic = PAGETRACE_META_MAGIC;
	m->version = PAGETRACE_VERSION;
	m->meta_size = size;
	m->cpu_offset = cpu_off;
	m->cpu_stride = sizeof(struct pagetrace_meta_cpu);
	m->nr_cpus = sess->nr_cpus;
	m->header_offset = hdr_off;
	m->header_size = sess->header_size;
	m->chunk_size = sess->chunk_size;
	m->nr_bufs = sess->nr_bufs;
	m->page_shift = PAGE_SHIFT;
	m->mode = sess->mode;
	/* The writers count pages per type (pt_cpu.pages). */
	m->flags = PAGETRACE_META_PAGES;
	m->data_offset = size;
	m->ring_size = sess->ring_size;
	m->mmap_size = sess->mmap_size;
	memcpy((void *)m + hdr_off, sess->header, sess->header_size);

	for (cpu = 0; cpu < sess->nr_cpus; cpu++)
		sess->cpus[cpu].meta = (void *)m + cpu_off +
				       cpu * sizeof(struct pagetrace_meta_cpu);
	return 0;
}

/**
 * pt_meta_free - free what pt_meta_init() allocated
 * @sess: a session no CPU writes to and no reader maps any more
 */
void pt_meta_free(struct pt_session *sess)
{
	vfree(sess->meta);
	sess->meta = NULL;
}

/*
 * Update the meta area's flags.  Callers hold state_lock (or are alone), so
 * flags changes do not race each other; release so that a reader that sees
 * STOPPED sees every chunk published before it.
 */
void pt_meta_set_flags(struct pt_session *sess, u32 set, u32 clear)
{
	u32 flags = (READ_ONCE(sess->meta->flags) & ~clear) | set;

	/* Release: what the caller published is visible before the flags. */
	smp_store_release(&sess->meta->flags, flags);
}

/**
 * pt_meta_add_snapshot - show the snapshot chunks after the last ring
 * @sess: a session whose snapshot was just taken, before open() returns
 *
 * No mapping can exist yet, so the mapping may still grow.
 */
void pt_meta_add_snapshot(struct pt_session *sess)
{
	sess->snap_offset = sess->mmap_size;
	sess->mmap_size += PAGE_ALIGN(sess->snap_len);
	sess->meta->snapshot_offset = sess->snap_offset;
	sess->meta->snapshot_size = sess->snap_len;
	sess->meta->mmap_size = sess->mmap_size;
}

/* The kernel address behind mapping offset @off, or NULL past the end. */
static void *pt_mmap_addr(struct pt_session *sess, u64 off)
{
	u64 cpu;

	if (off < sess->meta_size)
		return (void *)sess->meta + off;
	if (sess->snap && off >= sess->snap_offset && off < sess->mmap_size)
		return sess->snap + (off - sess->snap_offset);
	off -= sess->meta_size;
	cpu = div64_u64(off, sess->ring_size);
	if (cpu >= sess->nr_cpus || !cpu_possible(cpu))
		return NULL;
	return sess->cpus[cpu].bufs + (off - cpu * sess->ring_size);
}

static vm_fault_t pt_mmap_fault(struct vm_fault *vmf)
{
	struct pt_session *sess = vmf->vma->vm_file->private_data;
	struct page *page;
	void *addr;

	addr = pt_mmap_addr(sess, (u64)vmf->pgoff << PAGE_SHIFT);
	if (!addr)
		return VM_FAULT_SIGBUS;
	page = vmalloc_to_page(addr);
	if (!page)
		return VM_FAULT_SIGBUS;
	/* The core maps it and drops this reference when done faulting. */
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct pt_vm_ops = {
	.fault	= pt_mmap_fault,
};

int pt_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct pt_session *sess = file->private_data;
	unsigned long size = vma->vm_end - vma->vm_start;

	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	/* Not VM_SHARED: mmap() clears it for read-only files. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff || size != sess->mmap_size)
		return -EINVAL;

	/* vm_flags became read-only in 6.3; Kbuild checks for the helpers. */
#ifdef PT_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP, VM_MAYWRITE | VM_MAYEXEC);
#else
	vma->vm_flags &= ~(VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &pt_vm_ops;
	return 0;
}
