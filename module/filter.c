// SPDX-License-Identifier: GPL-2.0
/*
 * Which events a session keeps: the filter_* parameters.
 *
 *   filter_types=alloc,free,reclaim   event types (default: all)
 *   filter_orders=0-3,9               orders, log2 of npages rounded up
 *   filter_nodes=0,2-3                NUMA nodes of the pages
 *   filter_cgroup=/path               tasks in this cgroup (v2) or below it,
 *                                     the path as /proc/PID/cgroup shows it
 *
 * An empty value (or "all") keeps everything.  Each parameter is checked
 * when it is set, so a bad value fails insmod (or the write to sysfs) with
 * a message; like the others, they are read when a session starts.  The
 * hooks apply the filter (filter.h) in pt_emit() before anything is
 * written: a left out event is counted in the CPU's filtered, not lost.
 *
 * The cgroup is looked up again at session start, and the session holds
 * it; an event belongs to the cgroup of the task that runs the hook, so
 * events in interrupts (whose task is whoever was interrupted) are left
 * out, as are frees and reclaims done for the cgroup by other tasks
 * (kswapd).
 *
 * Concurrency: the parameters are written under the module's parameter
 * lock (sysfs takes it; insmod runs before anyone can write them) and
 * copied under it; struct pt_filter is read-only while the probes are
 * attached.
 */
#include <linux/bitmap.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nodemask.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "pagetrace.h"

#define PT_ALL_TYPES	(BIT(PAGETRACE_EV_ALLOC) | BIT(PAGETRACE_EV_FREE) | \
			 BIT(PAGETRACE_EV_RECLAIM))
#define PT_CGROUP_PATH_MAX	1024

static_assert(MAX_NUMNODES <= PAGETRACE_FILTER_NODES);

static const char * const pt_type_names[] = {
	[PAGETRACE_EV_ALLOC]	= "alloc",
	[PAGETRACE_EV_FREE]	= "free",
	[PAGETRACE_EV_RECLAIM]	= "reclaim",
};

/* The parameters as set: a value, and its text for reading back. */
static u8 pt_types = PT_ALL_TYPES;
static u64 pt_orders = U64_MAX;
static bool pt_all_nodes = true;
static nodemask_t pt_nodes;
static char pt_cgroup_path[PT_CGROUP_PATH_MAX];

/* "", "\n" (echo > param) and "all" keep everything. */
static bool pt_keeps_all(const char *val)
{
	return sysfs_streq(val, "") || sysfs_streq(val, "all");
}

static int pt_bad(const struct kernel_param *kp, const char *val,
		  const char *allowed)
{
	pr_err("pagetrace: %s=%s is invalid: allowed %s\n", kp->name, val,
	       allowed);
	return -EINVAL;
}

static int pt_types_set(const char *val, const struct kernel_param *kp)
{
	char buf[64], *s = buf, *tok;
	u8 types = 0;
	int i;

	if (pt_keeps_all(val)) {
		pt_types = PT_ALL_TYPES;
		return 0;
	}
	if (strscpy(buf, val, sizeof(buf)) < 0)
		return pt_bad(kp, val, "a list of alloc, free, reclaim");
	while ((tok = strsep(&s, ","))) {
		tok = strim(tok);
		for (i = PAGETRACE_EV_ALLOC; i <= PAGETRACE_EV_RECLAIM; i++) {
			if (!strcmp(tok, pt_type_names[i]))
				break;
		}
		if (i > PAGETRACE_EV_RECLAIM)
			return pt_bad(kp, val, "a list of alloc, free, reclaim");
		types |= BIT(i);
	}
	pt_types = types;
	return 0;
}

static int pt_types_get(char *buf, const struct kernel_param *kp)
{
	int i, n = 0;

	for (i = PAGETRACE_EV_ALLOC; i <= PAGETRACE_EV_RECLAIM; i++) {
		if (pt_types & BIT(i))
			n += sysfs_emit_at(buf, n, "%s%s", n ? "," : "",
					   pt_type_names[i]);
	}
	return n + sysfs_emit_at(buf, n, "\n");
}

static int pt_orders_set(const char *val, const struct kernel_param *kp)
{
	DECLARE_BITMAP(orders, 64);
	unsigned int order;
	u64 mask = 0;

	if (pt_keeps_all(val)) {
		pt_orders = U64_MAX;
		return 0;
	}
	if (bitmap_parselist(val, orders, 64) || bitmap_empty(orders, 64))
		return pt_bad(kp, val, "a list of orders 0..63 and ranges, e.g. 0-3,9");
	/* Bit by bit: bitmap_to_arr64() is newer than some kernels we build for. */
	for_each_set_bit(order, orders, 64)
		mask |= BIT_ULL(order);
	pt_orders = mask;
	return 0;
}

static int pt_orders_get(char *buf, const struct kernel_param *kp)
{
	DECLARE_BITMAP(orders, 64);

	bitmap_from_u64(orders, pt_orders);
	return sysfs_emit(buf, "%*pbl\n", 64, orders);
}

static int pt_nodes_set(const char *val, const struct kernel_param *kp)
{
	nodemask_t nodes;

	if (pt_keeps_all(val)) {
		pt_all_nodes = true;
		return 0;
	}
	if (nodelist_parse(val, nodes) || nodes_empty(nodes))
		return pt_bad(kp, val, "a list of node ids and ranges, e.g. 0,2-3");
	pt_nodes = nodes;
	pt_all_nodes = false;
	return 0;
}

static int pt_nodes_get(char *buf, const struct kernel_param *kp)
{
	if (pt_all_nodes)
		return sysfs_emit(buf, "all\n");
	return sysfs_emit(buf, "%*pbl\n", nodemask_pr_args(&pt_nodes));
}

static int pt_cgroup_set(const char *val, const struct kernel_param *kp)
{
	struct cgroup *cgrp;
	char *path, *p;
	int ret = 0;

	if (pt_keeps_all(val)) {
		pt_cgroup_path[0] = '\0';
		return 0;
	}
	/* Not on the stack: a path may take a kilobyte. */
	path = kmalloc(PT_CGROUP_PATH_MAX, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	if (strscpy(path, val, PT_CGROUP_PATH_MAX) < 0) {
		ret = pt_bad(kp, val, "a cgroup path shorter than 1024 bytes");
		goto free_path;
	}
	p = strim(path);
	if (p[0] != '/') {
		ret = pt_bad(kp, val, "a cgroup v2 path starting with /, as in /proc/PID/cgroup");
		goto free_path;
	}
	cgrp = cgroup_get_from_path(p);
	if (IS_ERR(cgrp)) {
		pr_err("pagetrace: %s=%s: no such cgroup in the cgroup v2 hierarchy\n",
		       kp->name, val);
		ret = PTR_ERR(cgrp);
		goto free_path;
	}
	cgroup_put(cgrp);
	strscpy(pt_cgroup_path, p, sizeof(pt_cgroup_path));
free_path:
	kfree(path);
	return ret;
}

static int pt_cgroup_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", pt_cgroup_path);
}

#define PT_FILTER_PARAM(name, desc)					\
	static const struct kernel_param_ops pt_##name##_ops = {	\
		.set = pt_##name##_set,					\
		.get = pt_##name##_get,					\
	};								\
	module_param_cb(filter_##name, &pt_##name##_ops, NULL, 0644);	\
	MODULE_PARM_DESC(filter_##name, desc)

PT_FILTER_PARAM(types, "Keep only these event types: alloc,free,reclaim (default all)");
PT_FILTER_PARAM(orders, "Keep only events of these orders, e.g. 0-3,9 (default all)");
PT_FILTER_PARAM(nodes, "Keep only events of pages on these NUMA nodes (default all)");
PT_FILTER_PARAM(cgroup, "Keep only events of tasks in this cgroup v2 path or below (default all)");

/**
 * pt_filter_setup - the session's filter, from the parameters
 * @f: zeroed; filled in here
 *
 * Return: 0, or -ENOENT if the cgroup is gone (logged).
 */
int pt_filter_setup(struct pt_filter *f)
{
	struct cgroup *cgrp = NULL;
	unsigned int type;

	/*
	 * The cgroup is looked up under the parameters' lock (a mutex: the
	 * lookup may sleep), so that its path needs no copy on the stack.
	 */
	kernel_param_lock(THIS_MODULE);
	f->types = pt_types;
	f->orders = pt_orders;
	f->all_nodes = pt_all_nodes;
	f->fast.nodes = pt_nodes;
	if (pt_cgroup_path[0]) {
		cgrp = cgroup_get_from_path(pt_cgroup_path);
		if (IS_ERR(cgrp))
			pr_err("pagetrace: filter_cgroup=%s: the cgroup is gone\n",
			       pt_cgroup_path);
	}
	kernel_param_unlock(THIS_MODULE);
	if (IS_ERR(cgrp))
		return PTR_ERR(cgrp);
	f->fast.cgrp = cgrp;
	for (type = PAGETRACE_EV_ALLOC; type <= PAGETRACE_EV_RECLAIM; type++)
		f->keep_several[type] = f->types & BIT(type) ? f->orders : 0;
	f->tests = (f->types != PT_ALL_TYPES || f->orders != U64_MAX ?
		    PT_FILTER_ORDERS : 0) |
		   (f->all_nodes ? 0 : PT_FILTER_NODES) |
		   (f->fast.cgrp ? PT_FILTER_CGROUP : 0);
	/*
	 * A filter of one kind makes its test alone; several kinds start
	 * with the order test on an empty table, which sends every event on
	 * to pt_filter_keeps_several() (pt_filter_keeps()).
	 */
	switch (f->tests) {
	case PT_FILTER_NODES:
		f->kind = PT_FILTER_FIRST_NODES;
		break;
	case PT_FILTER_CGROUP:
		f->kind = PT_FILTER_FIRST_CGROUP;
		break;
	case PT_FILTER_ORDERS:
		memcpy(f->fast.keep, f->keep_several, sizeof(f->fast.keep));
		f->kind = PT_FILTER_FIRST_ORDERS;
		break;
	case 0:
		f->kind = PT_FILTER_NONE;
		break;
	default:
		f->kind = PT_FILTER_FIRST_SEVERAL;
		f->fast.several = f;
	}
	return 0;
}

void pt_filter_release(struct pt_filter *f)
{
	if (f->fast.cgrp)
		cgroup_put(f->fast.cgrp);
	f->fast.cgrp = NULL;
}

bool pt_filter_keeps_node(const struct pt_filter *f, int nid)
{
	return f->all_nodes || node_isset(nid, f->fast.nodes);
}

/* The header record. */
void pt_filter_record(const struct pt_filter *f,
		      struct pagetrace_rec_filter *rec)
{
	unsigned int nid;

	memset(rec, 0, sizeof(*rec));
	rec->types = pt_le32(f->types);
	rec->orders = pt_le64(f->orders);
	for (nid = 0; nid < PAGETRACE_FILTER_NODES; nid++) {
		if (nid < MAX_NUMNODES ? !pt_filter_keeps_node(f, nid) :
					 !f->all_nodes)
			continue;
		rec->nodes[nid / 64] |= 1ULL << (nid % 64);
	}
	for (nid = 0; nid < ARRAY_SIZE(rec->nodes); nid++)
		rec->nodes[nid] = pt_le64(rec->nodes[nid]);
	if (f->fast.cgrp)
		rec->cgroup_id = pt_le64(cgroup_id(f->fast.cgrp));
}
