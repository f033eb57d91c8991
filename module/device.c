// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/pagetrace: one open is one session.
 *
 *  open     needs CAP_SYS_ADMIN (the stream holds physical page numbers,
 *           which /proc/PID/pagemap also hides from the unprivileged);
 *           a second open while a session runs gets -EBUSY.
 *  read     the stream: the header, then closed chunks as they come.
 *           Blocks until a chunk is closed (full, or flushed by the timer)
 *           unless O_NONBLOCK; returns 0 once the session is stopped and
 *           drained.  -EBUSY for chunks once the session is consumed
 *           through the mapping.  In flight recorder mode chunks are
 *           readable only after PAGETRACE_IOC_STOP.
 *  mmap     the meta area and every CPU's ring, read-only (mmap.c).
 *  poll     readable when a chunk is waiting or the session has stopped
 *           (or, before any chunk was consumed, while header bytes are
 *           left for read()).
 *  ioctl    PAGETRACE_IOC_INFO, _FLUSH, _STATS, _STOP, _COUNTERS, _MMAP_INFO,
 *           _CONSUME, _SET_MODE, _FREEZE, _THAW; others -ENOTTY.
 *  release  stops the session and frees it (after the last munmap()).
 *
 * One session has one consumer, read() or the mapping: whichever reads a
 * chunk first (a read() past the header, or PAGETRACE_IOC_CONSUME) claims
 * it, and the other gets -EBUSY from then on.  Mixing them would hand the
 * same chunk to both, or one's partial copy to the writer.
 *
 * The file holds a reference on the module (fops.owner), so rmmod while a
 * reader holds the device is refused (delete_module() fails with
 * -EWOULDBLOCK, "in use") instead of pulling the code from under it.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "pagetrace.h"

static atomic_t pt_busy = ATOMIC_INIT(0);

static int pt_open(struct inode *inode, struct file *file)
{
	struct pt_session *sess;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (atomic_cmpxchg(&pt_busy, 0, 1))
		return -EBUSY;
	ret = pt_session_start(&sess);
	if (ret) {
		atomic_set_release(&pt_busy, 0);
		return ret;
	}
	file->private_data = sess;
	return stream_open(inode, file);
}

static int pt_release(struct inode *inode, struct file *file)
{
	struct pt_session *sess = file->private_data;

	pt_session_stop(sess);
	pt_session_free(sess);
	atomic_set_release(&pt_busy, 0);
	return 0;
}

/*
 * The stream's prefix: the header, then the snapshot chunks.  Returns the
 * bytes of it not yet returned that fit; under read_lock.
 */
static ssize_t pt_read_header(struct pt_session *sess, char __user *buf,
			      size_t count)
{
	size_t done = 0;

	lockdep_assert_held(&sess->read_lock);
	while (done < count &&
	       sess->read_off < sess->header_size + sess->snap_len) {
		const void *src;
		size_t n;

		if (sess->read_off < sess->header_size) {
			src = sess->header + sess->read_off;
			n = sess->header_size - sess->read_off;
		} else {
			src = sess->snap + (sess->read_off - sess->header_size);
			n = sess->header_size + sess->snap_len - sess->read_off;
		}
		n = min_t(size_t, n, count - done);
		if (copy_to_user(buf + done, src, n))
			return done ? done : -EFAULT;
		sess->read_off += n;
		done += n;
	}
	return done;
}

/* Claim the session's chunks for @who; under read_lock. */
static int pt_claim_consumer(struct pt_session *sess, enum pt_consumer who)
{
	lockdep_assert_held(&sess->read_lock);
	if (sess->consumer == PT_CONSUMER_NONE)
		WRITE_ONCE(sess->consumer, who);	/* poll reads it racily */
	return sess->consumer == who ? 0 : -EBUSY;
}

/* Whether a consumer would find a chunk, or the end; for the wait queue. */
static bool pt_readable(struct pt_session *sess)
{
	/* Acquire: pairs with the release in pt_session_stop(). */
	if (smp_load_acquire(&sess->stopped))
		return true;
	/* A running flight recorder's chunks are not for consumers. */
	return READ_ONCE(sess->mode) != PAGETRACE_MODE_FLIGHT &&
	       pt_reader_ready(sess);
}

static ssize_t pt_read(struct file *file, char __user *buf, size_t count,
		       loff_t *ppos)
{
	struct pt_session *sess = file->private_data;
	bool stopped, late_done = false;
	ssize_t done, ret;

	if (!count)
		return 0;
	if (mutex_lock_interruptible(&sess->read_lock))
		return -ERESTARTSYS;
	/* The mapping consumes: not even the header (it has its own copy). */
	if (sess->consumer == PT_CONSUMER_MMAP) {
		mutex_unlock(&sess->read_lock);
		return -EBUSY;
	}
	for (;;) {
		done = pt_read_header(sess, buf, count);
		if (done < 0 || done == count)
			break;
		ret = pt_claim_consumer(sess, PT_CONSUMER_READ);
		if (ret) {
			if (!done)
				done = ret;
			break;
		}
		/* Read before looking for chunks: see struct pt_session. */
		stopped = smp_load_acquire(&sess->stopped);
		ret = 0;
		if (stopped || sess->mode != PAGETRACE_MODE_FLIGHT)
			ret = pt_read_chunks(sess, buf + done, count - done);
		if (ret < 0) {
			if (!done)
				done = ret;
			break;
		}
		sess->read_off += ret;
		done += ret;
		if (done)
			break;
		if (stopped) {
			/* Drained: the last losses may need a buffer now. */
			if (late_done || !pt_flush_late_losses(sess))
				break;
			late_done = true;
			continue;
		}
		if (file->f_flags & O_NONBLOCK) {
			done = -EAGAIN;
			break;
		}
		mutex_unlock(&sess->read_lock);
		if (wait_event_interruptible(sess->wq, pt_readable(sess)))
			return -ERESTARTSYS;
		if (mutex_lock_interruptible(&sess->read_lock))
			return -ERESTARTSYS;
	}
	mutex_unlock(&sess->read_lock);
	return done;
}

static __poll_t pt_poll(struct file *file, poll_table *wait)
{
	struct pt_session *sess = file->private_data;

	poll_wait(file, &sess->wq, wait);
	/* A mapping reader has the header in the meta area. */
	if (READ_ONCE(sess->consumer) != PT_CONSUMER_MMAP &&
	    READ_ONCE(sess->read_off) < sess->header_size + sess->snap_len)
		return EPOLLIN | EPOLLRDNORM;
	if (pt_readable(sess))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static long pt_ioctl_info(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_info info = {
		.version = PAGETRACE_VERSION,
		.header_size = sess->header_size,
		.chunk_size = sess->chunk_size,
		.nr_bufs = sess->nr_bufs,
		.nr_cpus = sess->nr_cpus,
		.page_shift = PAGE_SHIFT,
		.flags = sess->header_flags,
		.flush_ms = sess->flush_ms,
		.backend = sess->backend,
	};

	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

/*
 * The zones' counters at start (the header's record) or at stop (once
 * stopped: the acquire pairs with the release in pt_session_stop(), after
 * which the stop counters never change).
 */
static long pt_ioctl_counters(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_counters_req req;
	const void *rec;
	u32 size = pt_counters_size(sess->counters_max);

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EINVAL;
	switch (req.which) {
	case PAGETRACE_COUNTERS_START:
		rec = sess->header + sess->counters_rec_off;
		break;
	case PAGETRACE_COUNTERS_STOP:
		/* Pairs with the release of stopped in pt_session_stop(). */
		if (!smp_load_acquire(&sess->stopped))
			return -EAGAIN;
		rec = sess->stop_counters;
		break;
	default:
		return -EINVAL;
	}
	if (req.size < size) {
		req.size = size;
		return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : -ENOSPC;
	}
	req.size = size;
	if (copy_to_user(u64_to_user_ptr(req.buf), rec, size) ||
	    copy_to_user(arg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static long pt_ioctl_stats(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_cpu_stats __user *ucpus;
	struct pagetrace_stats st;
	unsigned int cpu, n;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	if (st.reserved0 || memchr_inv(st.reserved, 0, sizeof(st.reserved)))
		return -EINVAL;
	ucpus = u64_to_user_ptr(st.cpus);
	n = min(st.nr_cpus, sess->nr_cpus);
	for (cpu = 0; cpu < n; cpu++) {
		const struct pt_cpu *c = &sess->cpus[cpu];
		/*
		 * Events NMIs dropped that the writer has not counted yet
		 * (pt_writer_fold()): the counted part first, as it never
		 * passes the total.  A fold between the reads below counts
		 * some twice in this snapshot (of a live session) only.
		 */
		u64 seen = READ_ONCE(c->nested_seen);
		u64 nmi = (u64)local_read(&c->nested) - seen;
		/* A racy snapshot: each counter is one aligned u64. */
		struct pagetrace_cpu_stats s = {
			.events = READ_ONCE(sess->cpus[cpu].stats.events),
			.lost = READ_ONCE(sess->cpus[cpu].stats.lost) + nmi,
			.chunks = READ_ONCE(sess->cpus[cpu].stats.chunks),
			.bytes = READ_ONCE(sess->cpus[cpu].stats.bytes),
			.attempts = READ_ONCE(sess->cpus[cpu].stats.attempts) +
				    nmi,
			.filtered = READ_ONCE(sess->cpus[cpu].stats.filtered),
			.samples = READ_ONCE(sess->cpus[cpu].stats.samples),
			.stacks_unknown =
				READ_ONCE(sess->cpus[cpu].stats.stacks_unknown),
		};

		if (copy_to_user(&ucpus[cpu], &s, sizeof(s)))
			return -EFAULT;
	}
	st.nr_cpus = sess->nr_cpus;
	st.probe_missed = pt_session_missed(sess);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long pt_ioctl_mmap_info(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_mmap_info mi = {
		.mmap_size = sess->mmap_size,
		.data_offset = sess->meta_size,
		.ring_size = sess->ring_size,
		.meta_size = sess->meta_size,
		.nr_cpus = sess->nr_cpus,
	};

	return copy_to_user(arg, &mi, sizeof(mi)) ? -EFAULT : 0;
}

/*
 * Check and apply new consumed positions; read_lock held, so nobody else
 * moves consumed (the caller made sure no writer overwrites either).
 */
static int pt_consume_apply(struct pt_session *sess, const u64 *pos,
			    unsigned int n)
{
	unsigned int cpu;

	lockdep_assert_held(&sess->read_lock);
	for (cpu = 0; cpu < n; cpu++) {
		struct pagetrace_meta_cpu *m = sess->cpus[cpu].meta;
		u64 produced;

		if (!cpu_possible(cpu)) {
			if (pos[cpu])
				return -EINVAL;
			continue;
		}
		/* Acquire: pairs with the release in pt_close_chunk(). */
		produced = smp_load_acquire(&m->produced);
		if (pos[cpu] < m->consumed || pos[cpu] > produced)
			return -EINVAL;
	}
	for (cpu = 0; cpu < n; cpu++) {
		struct pagetrace_meta_cpu *m = sess->cpus[cpu].meta;

		/*
		 * The caller's copies (write() from the mapping) returned
		 * before this ioctl; release orders them before the writer,
		 * which loads consumed with acquire, may reuse the buffers.
		 */
		if (!cpu_possible(cpu) || pos[cpu] == m->consumed)
			continue;
		/* Release: pairs with the acquire in pt_open_chunk(). */
		smp_store_release(&m->consumed, pos[cpu]);
	}
	return 0;
}

static long pt_ioctl_consume(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_consume req;
	u64 *pos = NULL;
	bool stopped;
	long ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags || memchr_inv(req.reserved, 0, sizeof(req.reserved)) ||
	    req.nr_cpus > sess->nr_cpus)
		return -EINVAL;
	if (req.nr_cpus) {
		pos = memdup_user(u64_to_user_ptr(req.pos),
				  array_size(req.nr_cpus, sizeof(*pos)));
		if (IS_ERR(pos))
			return PTR_ERR(pos);
	}

	if (mutex_lock_interruptible(&sess->read_lock)) {
		kfree(pos);
		return -ERESTARTSYS;
	}
	ret = pt_claim_consumer(sess, PT_CONSUMER_MMAP);
	if (ret || !req.nr_cpus)
		goto unlock;
	/*
	 * Writers move consumed themselves while a flight recorder runs.
	 * Acquire on stopped: pairs with the release in pt_session_stop().
	 */
	stopped = smp_load_acquire(&sess->stopped);
	if (sess->mode == PAGETRACE_MODE_FLIGHT && !sess->frozen && !stopped) {
		ret = -EBUSY;
		goto unlock;
	}
	ret = pt_consume_apply(sess, pos, req.nr_cpus);
	/* Drained after the stop: the last losses may need a buffer now. */
	if (!ret && stopped && pt_reader_drained(sess))
		pt_flush_late_losses(sess);
unlock:
	mutex_unlock(&sess->read_lock);
	kfree(pos);
	return ret;
}

static long pt_ioctl_set_mode(struct pt_session *sess, void __user *arg)
{
	struct pagetrace_mode req;
	long ret = 0;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (memchr_inv(req.reserved, 0, sizeof(req.reserved)) ||
	    (req.mode != PAGETRACE_MODE_STREAM &&
	     req.mode != PAGETRACE_MODE_FLIGHT))
		return -EINVAL;

	if (mutex_lock_interruptible(&sess->read_lock))
		return -ERESTARTSYS;
	mutex_lock(&sess->state_lock);
	if (req.mode == sess->mode)
		goto unlock;
	/* Only STREAM -> FLIGHT, and only before anything was read. */
	if (sess->stopped || sess->consumer != PT_CONSUMER_NONE ||
	    sess->read_off || sess->mode == PAGETRACE_MODE_FLIGHT) {
		ret = -EBUSY;
		goto unlock;
	}
	WRITE_ONCE(sess->mode, PAGETRACE_MODE_FLIGHT);
	WRITE_ONCE(sess->meta->mode, PAGETRACE_MODE_FLIGHT);
	pt_header_set_flags(sess, sess->header_flags | PAGETRACE_FLAG_OVERWRITE);
	pt_meta_set_flags(sess, PAGETRACE_META_OVERWRITE, 0);
	pt_set_overwrite(sess, true);
unlock:
	mutex_unlock(&sess->state_lock);
	mutex_unlock(&sess->read_lock);
	return ret;
}

/* PAGETRACE_IOC_FREEZE (@freeze) and _THAW; see the uapi header. */
static long pt_ioctl_freeze(struct pt_session *sess, bool freeze)
{
	long ret = 0;

	if (mutex_lock_interruptible(&sess->read_lock))
		return -ERESTARTSYS;
	mutex_lock(&sess->state_lock);
	if (sess->mode != PAGETRACE_MODE_FLIGHT) {
		ret = -EINVAL;
		goto unlock;
	}
	/* Stopped: writers are gone and overwriting is off for good. */
	if (sess->stopped)
		goto unlock;
	if (freeze) {
		/* First no writer overwrites, then the partial buffers close. */
		pt_set_overwrite(sess, false);
		pt_session_flush(sess, true);
		sess->frozen = true;
		pt_meta_set_flags(sess, PAGETRACE_META_FROZEN, 0);
	} else if (sess->frozen) {
		/* read_lock keeps consumers out until writers own consumed. */
		sess->frozen = false;
		pt_meta_set_flags(sess, 0, PAGETRACE_META_FROZEN);
		pt_set_overwrite(sess, true);
	}
unlock:
	mutex_unlock(&sess->state_lock);
	mutex_unlock(&sess->read_lock);
	return ret;
}

/*
 * Stop, then report losses no buffer could carry if the consumer has
 * drained everything already: a CONSUME that emptied the rings between
 * the stop's last flush and the store of @stopped saw a running session
 * and left them, and a consumer that finds nothing more to give back has
 * no reason to call again.
 */
static void pt_ioctl_stop(struct pt_session *sess)
{
	pt_session_stop(sess);
	mutex_lock(&sess->read_lock);
	if (pt_reader_drained(sess))
		pt_flush_late_losses(sess);
	mutex_unlock(&sess->read_lock);
}

static long pt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pt_session *sess = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case PAGETRACE_IOC_INFO:
		return pt_ioctl_info(sess, uarg);
	case PAGETRACE_IOC_FLUSH:
		pt_session_flush(sess, true);
		return 0;
	case PAGETRACE_IOC_STATS:
		return pt_ioctl_stats(sess, uarg);
	case PAGETRACE_IOC_STOP:
		pt_ioctl_stop(sess);
		return 0;
	case PAGETRACE_IOC_COUNTERS:
		return pt_ioctl_counters(sess, uarg);
	case PAGETRACE_IOC_MMAP_INFO:
		return pt_ioctl_mmap_info(sess, uarg);
	case PAGETRACE_IOC_CONSUME:
		return pt_ioctl_consume(sess, uarg);
	case PAGETRACE_IOC_SET_MODE:
		return pt_ioctl_set_mode(sess, uarg);
	case PAGETRACE_IOC_FREEZE:
		return pt_ioctl_freeze(sess, true);
	case PAGETRACE_IOC_THAW:
		return pt_ioctl_freeze(sess, false);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations pt_fops = {
	.owner		= THIS_MODULE,
	.open		= pt_open,
	.release	= pt_release,
	.read		= pt_read,
	.poll		= pt_poll,
	.mmap		= pt_mmap,
	.unlocked_ioctl	= pt_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	/* No llseek: stream_open() makes seeking fail with -ESPIPE. */
};

/*
 * A character device of its own, not a misc device: misc_open() calls
 * ->open() with misc_mtx held, the lock every misc device's open takes
 * (/dev/kvm, /dev/fuse, /dev/net/tun, device-mapper's control), and a
 * session's start attaches probes, walks all of memory and waits for
 * grace periods: from a fraction of a second to seconds on a big machine,
 * during which no other misc device could be opened.  chrdev_open() holds
 * no lock across ->open().  devtmpfs makes the node root's, mode 0600
 * (udev/60-pagetrace.rules says so again); /sys/class/pagetrace has it.
 */
static dev_t pt_devt;
static struct cdev pt_cdev;
static struct class pt_class = {
	.name	= "pagetrace",
};

int pt_device_register(void)
{
	struct device *dev;
	int ret;

	ret = alloc_chrdev_region(&pt_devt, 0, 1, "pagetrace");
	if (ret)
		return ret;
	cdev_init(&pt_cdev, &pt_fops);
	pt_cdev.owner = THIS_MODULE;
	ret = cdev_add(&pt_cdev, pt_devt, 1);
	if (ret)
		goto unregister_region;
	ret = class_register(&pt_class);
	if (ret)
		goto del_cdev;
	dev = device_create(&pt_class, NULL, pt_devt, NULL, "pagetrace");
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		goto unregister_class;
	}
	return 0;

unregister_class:
	class_unregister(&pt_class);
del_cdev:
	cdev_del(&pt_cdev);
unregister_region:
	unregister_chrdev_region(pt_devt, 1);
	return ret;
}

void pt_device_unregister(void)
{
	device_destroy(&pt_class, pt_devt);
	class_unregister(&pt_class);
	cdev_del(&pt_cdev);
	unregister_chrdev_region(pt_devt, 1);
}
