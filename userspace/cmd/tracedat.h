/* SPDX-License-Identifier: GPL-2.0 */
#ifndef PAGETRACE_CMD_TRACEDAT_H
#define PAGETRACE_CMD_TRACEDAT_H

#include <stdio.h>
#include "libpagetrace.h"

/*
 * Write the events of @r (a v1 stream, not a Go trace) to @out as a
 * trace-cmd data file, version 6 (trace-cmd.dat.v6(5)).  Reads @r to its
 * end.  Returns 0, -ENOMEM, or the reader's error (the file then holds the
 * events before it).  Write errors are left in @out's error flag.  Notes
 * for the user (losses it could not place) go to stderr.
 */
int tracedat_write(struct pgtrace_reader *r, FILE *out);

#endif
