// SPDX-License-Identifier: GPL-2.0
/*
 * The reader's input, below everything that parses it: the buffer that
 * pgtrace_fill() keeps filled, the first error (pgtrace_set_error()), and bytes made
 * printable for error messages (pgtrace_escape()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

int pgtrace_set_error(struct pgtrace_reader *r, int err, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* The first error is the one worth reporting; later ones are fallout. */
	if (r->err)
		return r->err;
	n = snprintf(r->errmsg, sizeof(r->errmsg), "offset %llu: ",
		     (unsigned long long)off);
	va_start(ap, fmt);
	vsnprintf(r->errmsg + n, sizeof(r->errmsg) - n, fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

/*
 * Make at least @need bytes readable at buf + pos, reading as much as fits
 * so that the decode loop runs long between syscalls.  Returns the bytes
 * available, fewer than @need only at the end of the input.
 */
ssize_t pgtrace_fill(struct pgtrace_reader *r, size_t need)
{
	size_t have = r->len - r->pos;

	if (have >= need || r->eof)
		return have;
	if (need > r->cap) {
		/*
		 * A stack definition or a symbol entry may be longer than a
		 * small buffer: grow it to the longest such piece (a few
		 * hundred bytes) rather than fail.
		 */
		size_t cap = (need + 7) & ~(size_t)7;
		unsigned char *b = realloc(r->buf, cap);

		if (!b)
			return pgtrace_set_error(r, -ENOMEM, r->buf_off + r->pos,
					    "no memory for a %zu byte buffer", cap);
		r->buf = b;
		r->cap = cap;
	}
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, have);
		r->buf_off += r->pos;
		r->pos = 0;
		r->len = have;
	}
	while (r->len < need) {
		ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return pgtrace_set_error(r, -EIO, r->buf_off + r->len,
					    "read error: %s", strerror(errno));
		}
		if (n == 0) {
			r->eof = true;
			break;
		}
		r->len += n;
	}
	return r->len - r->pos;
}

void pgtrace_escape(char *dst, const unsigned char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = src[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
			*dst++ = c;
		} else {
			*dst++ = '\\';
			*dst++ = 'x';
			*dst++ = hex[c >> 4];
			*dst++ = hex[c & 15];
		}
	}
	*dst = '\0';
}
