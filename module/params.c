// SPDX-License-Identifier: GPL-2.0
/*
 * The kinds of module parameter pagetrace has, each checked when set, so
 * that a bad value fails insmod (or the write to
 * /sys/module/pagetrace/parameters) with a message naming the parameter
 * and what it allows: numbers in a range (struct pt_uint_param) and one
 * of a list of names (struct pt_choice_param).  The parameters themselves
 * live with the code that reads them.
 */
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "pagetrace.h"

static int pt_uint_param_set(const char *val, const struct kernel_param *kp)
{
	const struct pt_uint_param *p = kp->arg;
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < p->min || v > p->max ||
	    v % p->step) {
		pr_err("pagetrace: %s=%s is invalid: allowed %u..%u%s\n",
		       kp->name, val, p->min, p->max,
		       p->step > 1 ? ", a multiple of the page size" : "");
		return -EINVAL;
	}
	WRITE_ONCE(*p->value, v);
	return 0;
}

static int pt_uint_param_get(char *buf, const struct kernel_param *kp)
{
	const struct pt_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*p->value));
}

const struct kernel_param_ops pt_uint_param_ops = {
	.set = pt_uint_param_set,
	.get = pt_uint_param_get,
};

/*
 * Parameters that take one of a list of names (hook=, clock=): the value
 * is the name's index.  A bad name is refused with the allowed ones named.
 */
static int pt_choice_param_set(const char *val, const struct kernel_param *kp)
{
	const struct pt_choice_param *p = kp->arg;
	int i = __sysfs_match_string(p->names, p->nr, val);
	char allowed[64];
	size_t len = 0;
	unsigned int k;

	if (i < 0) {
		for (k = 0; k < p->nr; k++)
			len += scnprintf(allowed + len, sizeof(allowed) - len,
					 "%s%s", k ? ", " : "", p->names[k]);
		pr_err("pagetrace: %s=%s is invalid: allowed %s\n", kp->name,
		       val, allowed);
		return -EINVAL;
	}
	WRITE_ONCE(*p->value, i);
	return 0;
}

static int pt_choice_param_get(char *buf, const struct kernel_param *kp)
{
	const struct pt_choice_param *p = kp->arg;

	return sysfs_emit(buf, "%s\n", p->names[READ_ONCE(*p->value)]);
}

const struct kernel_param_ops pt_choice_param_ops = {
	.set = pt_choice_param_set,
	.get = pt_choice_param_get,
};
