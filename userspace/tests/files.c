// SPDX-License-Identifier: GPL-2.0
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"

ssize_t slurp_into(const char *dir, const char *name, char *out, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, out, len - 1);
	close(fd);
	out[n < 0 ? 0 : n] = '\0';
	return n;
}

const char *slurp(const char *dir, const char *name)
{
	static char buf[2][1 << 18];
	static int which;
	char *b = buf[which ^= 1];

	slurp_into(dir, name, b, sizeof(buf[0]));
	return b;
}

static int exit_code(int st)
{
	if (st < 0)
		return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_in(const char *dir, const char *bin, const char *args)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "cd %s && %s %s >out 2>err", dir, bin, args);
	return exit_code(system(cmd));
}

int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return exit_code(system(cmd));
}
