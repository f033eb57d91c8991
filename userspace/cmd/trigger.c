// SPDX-License-Identifier: GPL-2.0
/*
 * Flight recorder triggers: parse, arm, check (see trigger.h).
 *
 * oom reads the oom_kill counter of /proc/vmstat every TRIGGER_OOM_POLL_MS:
 * it counts every OOM kill, global or in a memory cgroup, on every kernel
 * since 4.13, needs no tracing and nothing mounted, and one read is a few
 * microseconds.  (The oom:mark_victim tracepoint would fire sooner but
 * needs tracefs and a perf or ftrace consumer of its own; 100 ms is well
 * inside what the buffers keep.)
 *
 * psi uses the kernel's own PSI trigger interface: "some|full STALL WINDOW"
 * written to a memory pressure file, then poll() says POLLPRI when the
 * tasks stalled STALL us in any WINDOW us; POLLERR when the cgroup is gone.
 *
 * inuse reads the session's own count of pages in use every
 * TRIGGER_INUSE_POLL_MS: the snapshot's pages plus the pages of every
 * alloc event recorded minus those of every free and reclaim, which the
 * module adds up per CPU and publishes in the meta area at each chunk
 * close (pgtrace_ring_pages()).  Nothing is decoded: the flight recorder
 * does not read its events until a trigger fires.  A flight recorder has
 * no timed flush, so the count lags by the events in each CPU's open
 * buffer (at most one buffer's worth per CPU).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libpagetrace.h"
#include "trigger.h"

#define PSI_SYSTEM	"/proc/pressure/memory"

const char *trigger_name(const struct trigger *t)
{
	switch (t->kind) {
	case TRIGGER_SIGNAL:	return "signal";
	case TRIGGER_OOM:	return "oom";
	case TRIGGER_PSI:	return "psi";
	case TRIGGER_INUSE:	return "inuse";
	}
	return "?";
}

/* A decimal number of microseconds, all of @s; -EINVAL otherwise. */
static int parse_us(const char *s, size_t n, uint64_t *v)
{
	char buf[32], *end;

	if (!n || n >= sizeof(buf) || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* "some:150000/1000000[@PATH]" */
static int parse_psi(const char *s, struct trigger *t, char *err, size_t len)
{
	const char *colon, *slash, *at;
	size_t plen;

	if (!strncmp(s, "some:", 5)) {
		t->full = false;
	} else if (!strncmp(s, "full:", 5)) {
		t->full = true;
	} else {
		snprintf(err, len, "psi=%s: expected psi=some:STALL_US/WINDOW_US or "
			 "psi=full:STALL_US/WINDOW_US", s);
		return -EINVAL;
	}
	colon = s + 5;
	slash = strchr(colon, '/');
	at = strchr(colon, '@');
	if (!slash || (at && at < slash)) {
		snprintf(err, len, "psi=%s: expected STALL_US/WINDOW_US after '%.5s'", s, s);
		return -EINVAL;
	}
	if (parse_us(colon, slash - colon, &t->stall_us) ||
	    parse_us(slash + 1, at ? (size_t)(at - slash - 1) : strlen(slash + 1),
		     &t->window_us)) {
		snprintf(err, len, "psi=%s: STALL_US and WINDOW_US must be whole numbers of "
			 "microseconds", s);
		return -EINVAL;
	}
	if (t->window_us < TRIGGER_PSI_WIN_MIN_US || t->window_us > TRIGGER_PSI_WIN_MAX_US) {
		snprintf(err, len, "psi=%s: window %" PRIu64 " us is out of the kernel's range "
			 "(%llu .. %llu us)", s, t->window_us, TRIGGER_PSI_WIN_MIN_US,
			 TRIGGER_PSI_WIN_MAX_US);
		return -EINVAL;
	}
	if (!t->stall_us || t->stall_us > t->window_us) {
		snprintf(err, len, "psi=%s: stall %" PRIu64 " us must be more than 0 and at "
			 "most the window (%" PRIu64 " us)", s, t->stall_us, t->window_us);
		return -EINVAL;
	}
	if (!at) {
		snprintf(t->path, sizeof(t->path), PSI_SYSTEM);
		return 0;
	}
	/* A cgroup directory, or its memory.pressure file itself. */
	plen = strlen(at + 1);
	while (plen > 1 && at[plen] == '/')
		plen--;
	if (!plen || at[1] != '/') {
		snprintf(err, len, "psi=%s: expected an absolute path after '@' (a cgroup "
			 "directory, e.g. @/sys/fs/cgroup/app)", s);
		return -EINVAL;
	}
	if ((plen >= 16 && !strncmp(at + 1 + plen - 16, "/memory.pressure", 16)) ||
	    (plen == strlen(PSI_SYSTEM) && !strncmp(at + 1, PSI_SYSTEM, plen))) {
		if (plen >= sizeof(t->path))
			goto too_long;
		snprintf(t->path, sizeof(t->path), "%.*s", (int)plen, at + 1);
	} else {
		if (plen + 16 >= sizeof(t->path))
			goto too_long;
		snprintf(t->path, sizeof(t->path), "%.*s/memory.pressure", (int)plen, at + 1);
	}
	return 0;
too_long:
	snprintf(err, len, "psi: the path after '@' is too long");
	return -EINVAL;
}

/*
 * "inuse>PAGES" or "inuse>SIZE": PAGES a whole number of pages, SIZE
 * bytes with a K, M, G or T suffix (powers of 1024; "Gi", "GB", "GiB"
 * too), in whole pages of this machine's size, rounded down.
 */
static int parse_inuse(const char *expr, struct trigger *t, char *err, size_t len)
{
	const char *s = expr + 5, *unit;
	uint64_t v, page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned int shift = 0;
	char *end;

	if (*s != '>') {
		snprintf(err, len, "'%s': expected inuse>PAGES or inuse>SIZE (pages in use "
			 "by the trace's count, e.g. inuse>500000 or inuse>2G)", expr);
		return -EINVAL;
	}
	s++;
	if (*s < '0' || *s > '9')
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		goto too_large;
	unit = end;
	switch (*unit) {
	case '\0': break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: goto bad;
	}
	if (shift) {
		unit++;
		if (*unit == 'i')
			unit++;
		if (*unit == 'B')
			unit++;
		if (*unit)
			goto bad;
		if (v > UINT64_MAX >> shift)
			goto too_large;
		v = (v << shift) / page;
	}
	if (v > INT64_MAX)
		goto too_large;
	if (!v) {
		snprintf(err, len, "'%s': the limit must be at least one page (%" PRIu64
			 " bytes)", expr, page);
		return -EINVAL;
	}
	t->inuse_limit = v;
	return 0;
bad:
	snprintf(err, len, "'%s': PAGES must be a whole number of pages, or a size "
		 "with a K, M, G or T suffix (e.g. inuse>500000 or inuse>2G)", expr);
	return -EINVAL;
too_large:
	snprintf(err, len, "'%s': the limit is too large", expr);
	return -EINVAL;
}

int trigger_parse(const char *expr, struct trigger *t, char *err, size_t len)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (strlen(expr) >= sizeof(t->expr)) {
		snprintf(err, len, "trigger '%.20s...' is too long", expr);
		return -EINVAL;
	}
	snprintf(t->expr, sizeof(t->expr), "%s", expr);
	if (!strcmp(expr, "signal") || !strcmp(expr, "sigusr1")) {
		t->kind = TRIGGER_SIGNAL;
		return 0;
	}
	if (!strcmp(expr, "oom")) {
		t->kind = TRIGGER_OOM;
		return 0;
	}
	if (!strncmp(expr, "psi=", 4)) {
		t->kind = TRIGGER_PSI;
		return parse_psi(expr + 4, t, err, len);
	}
	if (!strncmp(expr, "inuse", 5)) {
		t->kind = TRIGGER_INUSE;
		return parse_inuse(expr, t, err, len);
	}
	snprintf(err, len, "unknown trigger '%s' (oom, psi=some|full:STALL_US/WINDOW_US"
		 "[@CGROUP], inuse>PAGES, signal)", expr);
	return -EINVAL;
}

int trigger_read_oom_kills(uint64_t *n)
{
	static char buf[16384];
	ssize_t got, used = 0;
	const char *p;
	int fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (used < (ssize_t)sizeof(buf) - 1 &&
	       (got = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += got;
	close(fd);
	buf[used] = '\0';
	for (p = buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, "oom_kill ", 9)) {
			*n = strtoull(p + 9, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

int trigger_arm(struct trigger *t, char *err, size_t len)
{
	struct pgtrace_ring_pages p;
	char cmd[64];
	int n, ret;

	switch (t->kind) {
	case TRIGGER_SIGNAL:
		return 0;
	case TRIGGER_OOM:
		ret = trigger_read_oom_kills(&t->oom_kills);
		if (ret)
			snprintf(err, len, "oom: cannot read oom_kill from /proc/vmstat: %s%s",
				 strerror(-ret), ret == -ENOENT ? " (kernel older than 4.13)" : "");
		return ret;
	case TRIGGER_PSI:
		t->fd = open(t->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (t->fd < 0) {
			ret = -errno;
			snprintf(err, len, "%s: %s: %s%s", t->expr, t->path, strerror(-ret),
				 ret == -ENOENT ? " (no PSI: a kernel without CONFIG_PSI, "
				 "psi=0 or PSI off by default (boot with psi=1), or not a "
				 "cgroup v2 directory)" : "");
			return ret;
		}
		/* The kernel wants the NUL too (it parses a string). */
		n = snprintf(cmd, sizeof(cmd), "%s %" PRIu64 " %" PRIu64,
			     t->full ? "full" : "some", t->stall_us, t->window_us) + 1;
		if (write(t->fd, cmd, n) != n) {
			ret = -errno;
			snprintf(err, len, "%s: writing '%s' to %s: %s%s", t->expr, cmd, t->path,
				 strerror(-ret), ret == -EPERM ? " (a window that is not a "
				 "multiple of 2 s needs CAP_SYS_RESOURCE)" : "");
			trigger_disarm(t);
			return ret;
		}
		return 0;
	case TRIGGER_INUSE:
		if (!t->ring) {
			snprintf(err, len, "%s: no session to count pages in", t->expr);
			return -EINVAL;
		}
		ret = pgtrace_ring_pages(t->ring, &p);
		if (ret) {
			snprintf(err, len, "%s: the module does not count the pages of its "
				 "events (older than this tool?)", t->expr);
			return ret;
		}
		if (!p.has_snapshot) {
			snprintf(err, len, "%s: the session has no memory map at start (the "
				 "module's snapshot parameter is off, or the map failed), so "
				 "the pages in use before it are unknown", t->expr);
			return -ENODATA;
		}
		t->above = false;
		t->inuse_seen = p.in_use;
		return 0;
	}
	return -EINVAL;
}

void trigger_disarm(struct trigger *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

int trigger_check(struct trigger *t, short revents, char *detail, size_t len)
{
	struct pgtrace_ring_pages p;
	uint64_t n;

	switch (t->kind) {
	case TRIGGER_SIGNAL:
		return 0;
	case TRIGGER_OOM:
		if (trigger_read_oom_kills(&n))
			return 0;	/* it was readable when armed: try again */
		if (n <= t->oom_kills)
			return 0;
		snprintf(detail, len, "oom_kill %" PRIu64 " -> %" PRIu64, t->oom_kills, n);
		t->oom_kills = n;
		return 1;
	case TRIGGER_PSI:
		if (revents & (POLLERR | POLLNVAL | POLLHUP))
			return -ENODEV;
		if (!(revents & POLLPRI))
			return 0;
		snprintf(detail, len, "%s %" PRIu64 " %" PRIu64 " on %s",
			 t->full ? "full" : "some", t->stall_us, t->window_us, t->path);
		return 1;
	case TRIGGER_INUSE:
		if (!t->ring || pgtrace_ring_pages(t->ring, &p))
			return 0;
		t->inuse_seen = p.in_use;
		if (p.in_use <= (int64_t)t->inuse_limit) {
			t->above = false;	/* re-armed */
			return 0;
		}
		if (t->above)
			return 0;
		t->above = true;
		snprintf(detail, len, "inuse %" PRId64 " pages > %" PRIu64 " (snapshot %"
			 PRIu64 " + allocated %" PRIu64 " - freed %" PRIu64 ")", p.in_use,
			 t->inuse_limit, p.snapshot, p.alloc, p.free);
		return 1;
	}
	return 0;
}
