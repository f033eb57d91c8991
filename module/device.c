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
 *           drained.
 *  poll     readable when a chunk is waiting or the session has stopped.
 *  ioctl    PAGETRACE_IOC_INFO, _FLUSH, _STATS, _STOP; others -ENOTTY.
 *  release  stops the session and frees it.
 *
 * The file holds a reference on the module (fops.owner), so rmmod while a
 * reader holds the device is refused (delete_module() fails with
 * -EWOULDBLOCK, "in use") instead of pulling the code from under it.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
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

/* Bytes of the header not yet returned; under read_lock. */
static ssize_t pt_read_header(struct pt_session *sess, char __user *buf,
			      size_t count)
{
	size_t n;

	lockdep_assert_held(&sess->read_lock);
	if (sess->read_off >= sess->header_size)
		return 0;
	n = min_t(size_t, count, sess->header_size - sess->read_off);
	if (copy_to_user(buf, sess->header + sess->read_off, n))
		return -EFAULT;
	sess->read_off += n;
	return n;
}

static bool pt_readable(struct pt_session *sess)
{
	/* Acquire: pairs with the release in pt_session_stop(). */
	return smp_load_acquire(&sess->stopped) || pt_reader_ready(sess);
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
	for (;;) {
		done = pt_read_header(sess, buf, count);
		if (done < 0)
			break;
		/* Read before looking for chunks: see struct pt_session. */
		stopped = smp_load_acquire(&sess->stopped);
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
	if (READ_ONCE(sess->read_off) < sess->header_size || pt_readable(sess))
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
		/* A racy snapshot: each counter is one aligned u64. */
		struct pagetrace_cpu_stats s = {
			.events = READ_ONCE(sess->cpus[cpu].stats.events),
			.lost = READ_ONCE(sess->cpus[cpu].stats.lost),
			.chunks = READ_ONCE(sess->cpus[cpu].stats.chunks),
			.bytes = READ_ONCE(sess->cpus[cpu].stats.bytes),
		};

		if (copy_to_user(&ucpus[cpu], &s, sizeof(s)))
			return -EFAULT;
	}
	st.nr_cpus = sess->nr_cpus;
	st.probe_missed = pt_hooks_missed();
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long pt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pt_session *sess = file->private_data;

	switch (cmd) {
	case PAGETRACE_IOC_INFO:
		return pt_ioctl_info(sess, (void __user *)arg);
	case PAGETRACE_IOC_FLUSH:
		pt_flush(sess, true);
		return 0;
	case PAGETRACE_IOC_STATS:
		return pt_ioctl_stats(sess, (void __user *)arg);
	case PAGETRACE_IOC_STOP:
		pt_session_stop(sess);
		return 0;
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
	.unlocked_ioctl	= pt_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	/* No llseek: stream_open() makes seeking fail with -ESPIPE. */
};

static struct miscdevice pt_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "pagetrace",
	.fops	= &pt_fops,
	.mode	= 0600,
};

int pt_device_register(void)
{
	return misc_register(&pt_miscdev);
}

void pt_device_unregister(void)
{
	misc_deregister(&pt_miscdev);
}
