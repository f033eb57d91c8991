// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "tracedat_in.h"

void trace_error(const char *path, struct pgtrace_reader *r, int err)
{
	const char *msg = r ? pgtrace_reader_error(r) : "";

	if (!*msg)
		msg = strerror(-err);
	fprintf(stderr, "pagetrace: %s: %s\n", path, msg);
}

struct pgtrace_reader *open_trace(const char *path, unsigned int flags, int *fd)
{
	struct pgtrace_reader *r;
	int ret;

	if (!strcmp(path, "-")) {
		*fd = STDIN_FILENO;
	} else {
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0) {
			fprintf(stderr, "pagetrace: %s: %s\n", path, strerror(errno));
			return NULL;
		}
		/* A trace-cmd recording of kmem events is read as if it were a stream. */
		if (tracedat_in_is(*fd)) {
			close(*fd);
			if (tracedat_in_open(path, fd))
				return NULL;
		}
	}
	ret = pgtrace_reader_open_fd(&r, *fd, flags);
	if (ret) {
		trace_error(path, r, ret);
		close_trace(r, *fd);
		return NULL;
	}
	return r;
}

void close_trace(struct pgtrace_reader *r, int fd)
{
	pgtrace_reader_close(r);
	if (fd > STDIN_FILENO)
		close(fd);
}

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

void fmt_rel_time(char *buf, uint64_t ns, uint64_t start)
{
	/* Snapshot chunks may predate start_ns, so the sign matters. */
	const char *sign = ns < start ? "-" : "";
	uint64_t d = ns < start ? start - ns : ns - start;

	snprintf(buf, 32, "%s%llu.%09llu", sign, (unsigned long long)(d / 1000000000),
		 (unsigned long long)(d % 1000000000));
}
