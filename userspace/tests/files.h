/* SPDX-License-Identifier: GPL-2.0 */
/* Running a test's commands, and reading the files they wrote. */
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

/*
 * Run "@bin @args" by the shell in @dir, its stdout to @dir/out and its
 * stderr to @dir/err: its exit code, 128 + the signal if one killed it.
 */
int run_in(const char *dir, const char *bin, const char *args);
/* Run the shell command @fmt makes: its exit code as run_in()'s. */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
