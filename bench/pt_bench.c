// SPDX-License-Identifier: GPL-2.0
/*
 * pt_bench: an allocator microbenchmark for comparing tracers' overhead.
 *
 *   echo "ORDER ITERS [BATCH]" > /sys/kernel/debug/pt_bench/run
 *   cat /sys/kernel/debug/pt_bench/run
 *
 * The write starts one kthread bound to each online CPU; they begin
 * together and each does ITERS times alloc_pages(GFP_KERNEL, ORDER) and
 * __free_pages(), timed with local_clock() in batches of BATCH (default
 * 1000).  The write returns when every thread is done; a read gives the
 * last result, one "key=value ..." line per CPU and a total line:
 *
 *   cpu=0 ops=100000 ns_per_op=812.3 batch_ns_per_op=790.1
 *   total order=0 cpus=2 ops=200000 ns_per_op=815.0
 *         batch_ns_per_op=791.4 events_per_op=2
 *
 * ns_per_op is the wall time of a thread's whole loop per operation (what
 * the workload feels, preemption by a recorder included); batch_ns_per_op is
 * the median batch per operation (the cost on the allocation path itself,
 * mostly free of preemption).  The totals are means over the CPUs.  One
 * operation is two page events: an allocation and a free.
 *
 *   echo 1 > /sys/kernel/debug/pt_bench/empty_kprobes
 *
 * registers kprobes with empty handlers on the functions pagetrace's kprobe
 * backend hooks for the allocations and frees of the benchmarks (0 removes
 * them): the cost of the kprobe core alone, the floor under any tracer
 * built on kprobes.  -ENOENT if this kernel lacks one of them.
 *
 *   echo 1 > /sys/kernel/debug/pt_bench/empty_tracepoints
 *
 * registers empty probes on the tracepoints pagetrace's default backend
 * hooks for the benchmarks' allocations and frees (mm_page_alloc,
 * mm_page_free; 0 removes them): the floor under any tracer built on those
 * tracepoints, what the kernel's tracepoint calls cost by themselves.
 */
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#define PT_BENCH_MAX_ORDER	10
#define PT_BENCH_MAX_ITERS	100000000UL
#define PT_BENCH_RESULT_SIZE	8192

struct pt_bench_cpu {
	struct task_struct *task;
	unsigned int cpu;
	unsigned int order;
	unsigned long iters;
	unsigned long batch;
	u64 *batch_ns;		/* one entry per batch */
	unsigned long nr_batches;
	u64 wall_ns;
	unsigned long done_ops;
	int err;
};

static DEFINE_MUTEX(pt_bench_lock);
static char pt_bench_result[PT_BENCH_RESULT_SIZE];
static size_t pt_bench_result_len;
static struct dentry *pt_bench_dir;

static DECLARE_COMPLETION(pt_bench_start);
static DECLARE_COMPLETION(pt_bench_done);
static atomic_t pt_bench_running;

static int pt_bench_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void pt_bench_loop(struct pt_bench_cpu *c)
{
	unsigned long b, i, n;
	u64 t0, t1, start;

	start = local_clock();
	for (b = 0; b < c->nr_batches; b++) {
		n = min(c->batch, c->iters - b * c->batch);
		t0 = local_clock();
		for (i = 0; i < n; i++) {
			struct page *page = alloc_pages(GFP_KERNEL, c->order);

			if (!page) {
				c->err = -ENOMEM;
				return;
			}
			__free_pages(page, c->order);
		}
		t1 = local_clock();
		/* Per operation, in 1/1000 ns, so the median keeps its digits. */
		c->batch_ns[b] = div64_ul((t1 - t0) * 1000, n);
		c->done_ops += n;
		cond_resched();
	}
	c->wall_ns = local_clock() - start;
}

static int pt_bench_thread(void *arg)
{
	struct pt_bench_cpu *c = arg;

	wait_for_completion(&pt_bench_start);
	pt_bench_loop(c);
	if (atomic_dec_and_test(&pt_bench_running))
		complete(&pt_bench_done);

	/* Stay until kthread_stop(), which needs the task to exist. */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* Append to the result (truncated if it ever fills). */
static __printf(1, 2) void pt_bench_print(const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	pt_bench_result_len += vscnprintf(pt_bench_result + pt_bench_result_len,
					  PT_BENCH_RESULT_SIZE - pt_bench_result_len,
					  fmt, args);
	va_end(args);
}

/* A time in 1/1000 ns as nanoseconds with one decimal, "812.3". */
static const char *pt_bench_ns(char *buf, size_t size, u64 mns)
{
	u64 tenths = div_u64(mns + 50, 100);

	snprintf(buf, size, "%llu.%llu", div_u64(tenths, 10), tenths % 10);
	return buf;
}

static int pt_bench_run(unsigned int order, unsigned long iters,
			unsigned long batch)
{
	struct pt_bench_cpu *cpus;
	unsigned int cpu, n = 0, i;
	u64 sum_wall = 0, sum_batch = 0, ops = 0;
	char w[24], m[24];
	int err = 0;

	cpus_read_lock();
	cpus = kcalloc(num_online_cpus(), sizeof(*cpus), GFP_KERNEL);
	if (!cpus) {
		cpus_read_unlock();
		return -ENOMEM;
	}
	reinit_completion(&pt_bench_start);
	reinit_completion(&pt_bench_done);
	for_each_online_cpu(cpu) {
		struct pt_bench_cpu *c = &cpus[n];

		c->cpu = cpu;
		c->order = order;
		c->iters = iters;
		c->batch = batch;
		c->nr_batches = DIV_ROUND_UP(iters, batch);
		c->batch_ns = kvcalloc(c->nr_batches, sizeof(u64), GFP_KERNEL);
		if (!c->batch_ns) {
			err = -ENOMEM;
			break;
		}
		c->task = kthread_create_on_cpu(pt_bench_thread, c, cpu,
						"pt_bench/%u");
		if (IS_ERR(c->task)) {
			err = PTR_ERR(c->task);
			c->task = NULL;
			kvfree(c->batch_ns);
			break;
		}
		n++;
	}
	atomic_set(&pt_bench_running, n);
	for (i = 0; i < n; i++)
		wake_up_process(cpus[i].task);
	/* Start the threads even after an error, so that they can stop. */
	complete_all(&pt_bench_start);
	if (n)
		wait_for_completion(&pt_bench_done);

	pt_bench_result_len = 0;
	for (i = 0; i < n; i++) {
		struct pt_bench_cpu *c = &cpus[i];

		kthread_stop(c->task);
		if (c->err && !err)
			err = c->err;
		if (!err && c->done_ops) {
			u64 wall = div64_ul(c->wall_ns * 1000, c->done_ops);
			u64 med;

			sort(c->batch_ns, c->nr_batches, sizeof(u64),
			     pt_bench_cmp, NULL);
			med = c->batch_ns[c->nr_batches / 2];
			pt_bench_print("cpu=%u ops=%lu ns_per_op=%s batch_ns_per_op=%s\n",
				       c->cpu, c->done_ops,
				       pt_bench_ns(w, sizeof(w), wall),
				       pt_bench_ns(m, sizeof(m), med));
			sum_wall += wall;
			sum_batch += med;
			ops += c->done_ops;
		}
		kvfree(c->batch_ns);
	}
	cpus_read_unlock();
	kfree(cpus);
	if (err || !n) {
		pt_bench_result_len = 0;
		return err ?: -ENODEV;
	}
	pt_bench_print("total order=%u cpus=%u ops=%llu ", order, n, ops);
	pt_bench_print("ns_per_op=%s batch_ns_per_op=%s events_per_op=2\n",
		       pt_bench_ns(w, sizeof(w), div_u64(sum_wall, n)),
		       pt_bench_ns(m, sizeof(m), div_u64(sum_batch, n)));
	return 0;
}

static ssize_t pt_bench_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	unsigned long iters, batch = 1000;
	unsigned int order;
	char buf[64];
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	ret = sscanf(buf, "%u %lu %lu", &order, &iters, &batch);
	if (ret < 2 || order > PT_BENCH_MAX_ORDER || !iters ||
	    iters > PT_BENCH_MAX_ITERS || !batch)
		return -EINVAL;

	ret = mutex_lock_interruptible(&pt_bench_lock);
	if (ret)
		return ret;
	ret = pt_bench_run(order, iters, min(batch, iters));
	mutex_unlock(&pt_bench_lock);
	return ret ?: len;
}

static int pt_bench_empty(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

/*
 * The kprobe backend's allocation and free hooks (module/hooks.c), per
 * generation of the allocator: 7.x's, 6.12's, 6.1's, 5.10's.  The first
 * set that attaches whole is used.  Not a union: 6.1 has a
 * free_unref_page() too, which calls free_pcp_prepare(), so it would
 * count two hits per free.
 */
#define PT_BENCH_MAX_KPS	4
static const char * const pt_bench_syms[][PT_BENCH_MAX_KPS] = {
	{ "__alloc_frozen_pages_noprof", "__free_frozen_pages",
	  "__free_pages_ok", "free_unref_folios" },
	{ "__alloc_pages_noprof", "free_unref_page", "__free_pages_ok",
	  "free_unref_folios" },
	{ "__alloc_pages", "free_pcp_prepare", "__free_pages_ok" },
	{ "__alloc_pages_nodemask", "free_pcp_prepare", "__free_pages_ok" },
};

static struct kprobe pt_bench_kps[PT_BENCH_MAX_KPS];
static unsigned int pt_bench_nr_kps;

static void pt_bench_kprobes_off(void)
{
	lockdep_assert_held(&pt_bench_lock);
	while (pt_bench_nr_kps)
		unregister_kprobe(&pt_bench_kps[--pt_bench_nr_kps]);
}

static int pt_bench_kprobes_on(void)
{
	unsigned int set, i;

	lockdep_assert_held(&pt_bench_lock);
	if (pt_bench_nr_kps)
		return 0;
	for (set = 0; set < ARRAY_SIZE(pt_bench_syms); set++) {
		for (i = 0; i < PT_BENCH_MAX_KPS && pt_bench_syms[set][i]; i++) {
			struct kprobe *kp = &pt_bench_kps[i];

			*kp = (struct kprobe){
				.symbol_name = pt_bench_syms[set][i],
				.pre_handler = pt_bench_empty,
			};
			if (register_kprobe(kp))
				break;
			pt_bench_nr_kps++;
		}
		if (i == PT_BENCH_MAX_KPS || !pt_bench_syms[set][i])
			return 0;
		pt_bench_kprobes_off();
	}
	return -ENOENT;
}

static void pt_bench_tp_alloc(void *data, struct page *page,
			      unsigned int order, gfp_t gfp, int migratetype)
{
}

static void pt_bench_tp_free(void *data, struct page *page, unsigned int order)
{
}

static struct pt_bench_tp {
	const char		*name;
	void			*probe;
	struct tracepoint	*tp;
	bool			on;
} pt_bench_tps[] = {
	{ "mm_page_alloc", pt_bench_tp_alloc },
	{ "mm_page_free", pt_bench_tp_free },
};

static void pt_bench_tp_find(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pt_bench_tps); i++)
		if (!strcmp(tp->name, pt_bench_tps[i].name))
			pt_bench_tps[i].tp = tp;
}

static void pt_bench_tps_off(void)
{
	unsigned int i;

	lockdep_assert_held(&pt_bench_lock);
	for (i = 0; i < ARRAY_SIZE(pt_bench_tps); i++) {
		if (!pt_bench_tps[i].on)
			continue;
		tracepoint_probe_unregister(pt_bench_tps[i].tp,
					    pt_bench_tps[i].probe, NULL);
		pt_bench_tps[i].on = false;
	}
	tracepoint_synchronize_unregister();
}

static int pt_bench_tps_on(void)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&pt_bench_lock);
	for_each_kernel_tracepoint(pt_bench_tp_find, NULL);
	for (i = 0; i < ARRAY_SIZE(pt_bench_tps); i++) {
		if (pt_bench_tps[i].on)
			continue;
		ret = pt_bench_tps[i].tp ?
		      tracepoint_probe_register(pt_bench_tps[i].tp,
						pt_bench_tps[i].probe, NULL) :
		      -ENOENT;
		if (ret) {
			pt_bench_tps_off();
			return ret;
		}
		pt_bench_tps[i].on = true;
	}
	return 0;
}

/* The empty probes of one mechanism, turned on and off by a debugfs file. */
struct pt_bench_floor {
	int	(*on)(void);
	void	(*off)(void);
};

static struct pt_bench_floor pt_bench_kprobes = {
	pt_bench_kprobes_on, pt_bench_kprobes_off
};

static struct pt_bench_floor pt_bench_tracepoints = {
	pt_bench_tps_on, pt_bench_tps_off
};

static ssize_t pt_bench_floor_write(struct file *file, const char __user *ubuf,
				    size_t len, loff_t *ppos)
{
	const struct pt_bench_floor *floor = file->private_data;
	bool on;
	int ret;

	ret = kstrtobool_from_user(ubuf, len, &on);
	if (ret)
		return ret;
	mutex_lock(&pt_bench_lock);
	if (on)
		ret = floor->on();
	else
		floor->off();
	mutex_unlock(&pt_bench_lock);
	return ret ?: len;
}

static const struct file_operations pt_bench_floor_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= pt_bench_floor_write,
	.llseek	= default_llseek,
};

static ssize_t pt_bench_read(struct file *file, char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&pt_bench_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, pt_bench_result,
				      pt_bench_result_len);
	mutex_unlock(&pt_bench_lock);
	return ret;
}

static const struct file_operations pt_bench_fops = {
	.owner	= THIS_MODULE,
	.read	= pt_bench_read,
	.write	= pt_bench_write,
	.llseek	= default_llseek,
};

static int __init pt_bench_init(void)
{
	pt_bench_dir = debugfs_create_dir("pt_bench", NULL);
	debugfs_create_file("run", 0600, pt_bench_dir, NULL, &pt_bench_fops);
	debugfs_create_file("empty_kprobes", 0200, pt_bench_dir,
			    &pt_bench_kprobes, &pt_bench_floor_fops);
	debugfs_create_file("empty_tracepoints", 0200, pt_bench_dir,
			    &pt_bench_tracepoints, &pt_bench_floor_fops);
	return 0;
}

static void __exit pt_bench_exit(void)
{
	debugfs_remove_recursive(pt_bench_dir);
	mutex_lock(&pt_bench_lock);
	pt_bench_kprobes_off();
	pt_bench_tps_off();
	mutex_unlock(&pt_bench_lock);
}

module_init(pt_bench_init);
module_exit(pt_bench_exit);
MODULE_DESCRIPTION("pagetrace benchmark: per-CPU alloc_pages/__free_pages loops");
MODULE_LICENSE("GPL");
