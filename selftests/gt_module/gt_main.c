// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_gt: ground truth for the pagetrace selftests.
 *
 * Allocates and frees pages through every entry point of the page
 * allocator, and reports what it did: for each block, the operation, the
 * PFN, the number of pages, and a window [t0, t1] on local_clock() (the
 * trace clock) around the call.  The test then asks the trace for exactly
 * one matching event inside each window.
 *
 *   echo OP > /sys/kernel/debug/pagetrace_gt/run     run one group of ops
 *   cat /sys/kernel/debug/pagetrace_gt/run           read its report
 *
 * Report lines:
 *   <op> <alloc|free> pfn=<pfn> npages=<n> t0=<ns> t1=<ns>
 *   <op> alloc-cover ...       one allocation that covers the range
 *   <op> alloc-or-lost ...     one allocation, or none and counted lost
 *                              (bulk_large_beyond)
 *   <op> unseen pfn=<pfn>      a page allocated where the trace cannot see
 *                              it (bulk_in_kprobe): its free alone is listed
 *   <op> skip <reason>         the allocation itself failed (no memory),
 *                              or this kernel cannot do it
 *
 * The test pins itself to one CPU, so that the window and the event are
 * taken on one CPU's clock.
 *
 * This file holds the report, the debugfs files and the table of
 * operations; gt_alloc.c the allocator's entry points, one block of known
 * fate each; gt_context.c the allocations in odd contexts (interrupts,
 * the lock-free allocator, inside pagetrace's own event writer) and
 * another ftrace user on the allocator (ipmodify_*); gt_spin.c a kernel
 * thread that holds Tasks RCU grace periods back (spin_*).  gt.h is what
 * they share.
 *
 * The module builds on every kernel from 5.10 to 7.x.  Where a call we
 * make came, went or was renamed, the Kbuild asks the headers for it
 * (GT_HAVE_*), or we ask #ifdef of a macro: never the version.  An
 * operation the kernel cannot do (folios before 5.16, the bulk allocator
 * before 5.13, its list variant after 6.13) reports a skip saying why.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "gt.h"

#define GT_REPORT_SIZE	(64 << 10)

static DEFINE_MUTEX(gt_lock);		/* guards the report */
static char *gt_report;
static size_t gt_len;
static struct dentry *gt_dir;

__printf(1, 2) void gt_line(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	gt_len += vscnprintf(gt_report + gt_len, GT_REPORT_SIZE - gt_len,
			     fmt, args);
	va_end(args);
}

void gt_event(const char *op, const char *ev, unsigned long pfn,
	      unsigned long npages, u64 t0, u64 t1)
{
	gt_line("%s %s pfn=%lu npages=%lu t0=%llu t1=%llu\n", op, ev, pfn,
		npages, t0, t1);
}

void gt_skip(const char *op, const char *why)
{
	gt_line("%s skip %s\n", op, why);
}

static const struct gt_op {
	const char	*name;
	void		(*run)(const char *op);
} gt_ops[] = {
	{ "pages_order0",	gt_order0 },
	{ "pages_order3",	gt_order3 },
	{ "pages_order5",	gt_order5 },
	{ "pages_order10",	gt_order10 },
	{ "pages_atomic",	gt_atomic },
	{ "get_free_pages",	gt_get_free_pages },
	{ "page_put",		gt_page_put },
	{ "folio_order0",	gt_folio0 },
	{ "folio_order2",	gt_folio2 },
	{ "folio_thp",		gt_folio_thp },
	{ "pages_node",		gt_node },
	{ "pages_exact",	gt_exact },
	{ "bulk_array",		gt_bulk_array },
	{ "bulk_list",		gt_bulk_list },
	{ "bulk_prefilled",	gt_bulk_prefilled },
	{ "bulk_large",		gt_bulk_large },
	{ "bulk_large_beyond",	gt_bulk_large_beyond },
	{ "bulk_single",	gt_bulk_single },
	{ "bulk_in_kprobe",	gt_bulk_in_kprobe },
	{ "vmalloc",		gt_vmalloc },
	{ "split_free",		gt_split_free },
	{ "softirq",		gt_softirq },
	{ "hardirq",		gt_hardirq },
	{ "marker",		gt_marker },
	{ "contig",		gt_contig },
	{ "nolock",		gt_nolock },
	{ "reenter_nmi",	gt_reenter_nmi },
	{ "reenter_kprobe",	gt_reenter_kprobe },
	{ "ipmodify_on",	gt_ipmodify_on },
	{ "ipmodify_off",	gt_ipmodify_off },
	{ "spin_on",		gt_spin_on },
	{ "spin_off",		gt_spin_off },
};

static ssize_t gt_write(struct file *file, const char __user *ubuf,
			size_t count, loff_t *ppos)
{
	char name[32];
	unsigned int i;
	ssize_t ret = -EINVAL;

	if (count >= sizeof(name))
		return -EINVAL;
	if (copy_from_user(name, ubuf, count))
		return -EFAULT;
	name[count] = '\0';
	strim(name);

	mutex_lock(&gt_lock);
	for (i = 0; i < ARRAY_SIZE(gt_ops); i++) {
		if (strcmp(name, gt_ops[i].name))
			continue;
		gt_len = 0;
		gt_report[0] = '\0';
		gt_ops[i].run(gt_ops[i].name);
		ret = count;
		break;
	}
	mutex_unlock(&gt_lock);
	return ret;
}

static ssize_t gt_read(struct file *file, char __user *ubuf, size_t count,
		       loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&gt_lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, gt_report, gt_len);
	mutex_unlock(&gt_lock);
	return ret;
}

static const struct file_operations gt_fops = {
	.owner	= THIS_MODULE,
	.read	= gt_read,
	.write	= gt_write,
	.llseek	= default_llseek,
};

/* The list of op names, for the test to iterate over. */
static int gt_ops_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(gt_ops); i++)
		seq_printf(m, "%s\n", gt_ops[i].name);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gt_ops);

static int __init gt_init(void)
{
	gt_report = kzalloc(GT_REPORT_SIZE, GFP_KERNEL);
	if (!gt_report)
		return -ENOMEM;
	gt_dir = debugfs_create_dir("pagetrace_gt", NULL);
	debugfs_create_file("run", 0600, gt_dir, NULL, &gt_fops);
	debugfs_create_file("ops", 0400, gt_dir, NULL, &gt_ops_fops);
	return 0;
}

static void __exit gt_exit(void)
{
	debugfs_remove_recursive(gt_dir);
	gt_ipmodify_exit();
	gt_spin_exit();
	gt_vmalloc_exit();
	kfree(gt_report);
}

module_init(gt_init);
module_exit(gt_exit);

MODULE_DESCRIPTION("pagetrace selftest: pages of known fate");
MODULE_LICENSE("GPL");
