/* SPDX-License-Identifier: GPL-2.0 */
/* Reading the files a test's commands wrote. */
#ifndef PAGETRACE_TEST_FILES_H
#define PAGETRACE_TEST_FILES_H

#include <sys/types.h>

/*
 * Read @dir/@name into @out, NUL-terminated, at most @len - 1 bytes: the
 * length read, or -1 if it cannot be opened or read.
 */
ssize_t slurp_into(const char *dir, const char *name, char *out, size_t len);
/*
 * The same into one of two static 256 KiB buffers, used in turn, so that
 * two results can be compared; "" if the file cannot be read.
 */
const char *slurp(const char *dir, const char *name);

#endif
