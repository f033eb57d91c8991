// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal zero-copy recorder: map the session, write its header and
 * snapshot, then every chunk as it closes, until Ctrl-C; then stop the
 * session and write the rest.  The output is a v1 stream, as `cat
 * /dev/pagetrace` gives, but for the order in which the CPUs' chunks
 * interleave.
 *
 *   cc -I uapi -I userspace/lib -o example-ring \
 *      Documentation/pagetrace/example-ring.c userspace/lib/libpagetrace.a
 *   ./example-ring > trace.bin
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <libpagetrace.h>

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	stop = sig;
}

static int write_all(const void *p, size_t len)
{
	while (len) {
		ssize_t w = write(STDOUT_FILENO, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		len -= w;
	}
	return 0;
}

/* Write every closed chunk of every CPU, give them back: chunks, or -1. */
static int64_t drain(struct pgtrace_ring *r)
{
	int64_t taken = 0;

	for (unsigned int cpu = 0; cpu < pgtrace_ring_meta(r)->nr_cpus; cpu++) {
		uint64_t pos;
		int64_t n = pgtrace_ring_peek(r, cpu, &pos);

		for (int64_t i = 0; i < n; i++) {
			const struct pagetrace_chunk *ch;
			size_t len;

			if (pgtrace_ring_chunk(r, cpu, pos + i, &ch, &len) ||
			    write_all(ch, len))
				return -1;
		}
		if (n > 0 && pgtrace_ring_advance(r, cpu, n))
			return -1;
		taken += n > 0 ? n : 0;
	}
	/* Only now, with write() returned, may the writer reuse the buffers. */
	return pgtrace_ring_consume(r) < 0 ? -1 : taken;
}

int main(void)
{
	const struct pagetrace_header *h;
	struct pollfd pfd = { .events = POLLIN };
	const void *snap;
	size_t snap_len;
	struct pgtrace_ring *r;
	int64_t n;
	int ret;

	pfd.fd = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	if (pfd.fd < 0) {
		perror("/dev/pagetrace");
		return 1;
	}
	ret = pgtrace_ring_map(pfd.fd, &r);
	if (!ret)
		ret = pgtrace_ring_claim(r);
	if (ret) {
		fprintf(stderr, "mapping the session: %s\n", strerror(-ret));
		return 1;
	}
	signal(SIGINT, on_sigint);
	h = pgtrace_ring_header(r, &snap, &snap_len);
	if (write_all(h, pgtrace_ring_meta(r)->header_size) || write_all(snap, snap_len))
		return 1;
	while (!stop) {
		if (drain(r) < 0)
			return 1;
		poll(&pfd, 1, 1000);	/* a chunk closed, or a second passed */
	}
	/* Stop: every buffer is closed; drain until a pass finds nothing. */
	if (ioctl(pfd.fd, PAGETRACE_IOC_STOP) ||
	    !(pgtrace_ring_flags(r) & PAGETRACE_META_STOPPED))
		return 1;
	do {
		n = drain(r);
	} while (n > 0);
	pgtrace_ring_unmap(r);
	close(pfd.fd);
	return n < 0;
}
