/* SPDX-License-Identifier: GPL-2.0 */
#ifndef PAGETRACE_CMD_TRACEDAT_IN_H
#define PAGETRACE_CMD_TRACEDAT_IN_H

#include <stdbool.h>

/* @fd (a seekable file) starts with trace-cmd's magic. */
bool tracedat_in_is(int fd);
/*
 * Read the trace-cmd data file at @path (kmem page events) with
 * libtracecmd into an anonymous memory file holding the same events as a
 * v1 stream: *@fd, at offset 0, for pgtrace_reader_open_fd().  Tells on
 * stderr what such a file lacks (snapshot, reclaims, stacks).  0, or
 * -errno after a one-line error on stderr (also without libtracecmd).
 */
int tracedat_in_open(const char *path, int *fd);
/*
 * What the last file tracedat_in_open() read lacks, as its notes said
 * them ("; " between), for outputs other than stderr; NULL if none was read.
 */
const char *tracedat_in_notes(void);

#endif
