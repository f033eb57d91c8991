// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace top's terminal, with plain ANSI sequences and termios: the CLI
 * is also linked statically for a busybox initramfs, where there is no
 * terminfo database to read.
 *
 * The terminal is put back (attributes, main screen, cursor) whichever way
 * the command ends: top_term_close() on the normal path, atexit() for an
 * exit() somewhere else, and the handler of a fatal signal.  SIGINT,
 * SIGTERM and SIGHUP only set a flag, so that the loop ends and cleans up
 * in order; SIGWINCH sets another, and the next wait redraws.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "top.h"

#define ENTER	"\033[?1049h\033[?25l\033[H\033[2J"	/* alternate screen, no cursor */
#define LEAVE	"\033[?25h\033[?1049l"

static struct termios saved;
static volatile sig_atomic_t active, got_stop, got_winch;

static void put(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= w;
	}
}

/* Async-signal-safe: write() and tcsetattr() only. */
static void restore(void)
{
	if (!active)
		return;
	active = 0;
	put(LEAVE, sizeof(LEAVE) - 1);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
}

static void on_stop(int sig)
{
	(void)sig;
	got_stop = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	got_winch = 1;
}

static void on_fatal(int sig)
{
	restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

void top_term_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	/* No SA_RESTART: a wait in poll() returns at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int top_term_open(void)
{
	struct sigaction sa = { .sa_handler = on_winch };
	struct termios raw;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "pagetrace: top: not a terminal: use -b for plain text frames\n");
		return -1;
	}
	if (tcgetattr(STDIN_FILENO, &saved)) {
		fprintf(stderr, "pagetrace: top: the terminal: %s\n", strerror(errno));
		return -1;
	}
	top_term_signals();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	atexit(top_term_close);

	raw = saved;
	/* Keys one at a time, no echo; output processing stays (\n is \r\n). */
	raw.c_lflag &= ~(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	active = 1;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)) {
		active = 0;
		fprintf(stderr, "pagetrace: top: the terminal: %s\n", strerror(errno));
		return -1;
	}
	put(ENTER, sizeof(ENTER) - 1);
	return 0;
}

void top_term_close(void)
{
	restore();
}

void top_term_size(unsigned int *w, unsigned int *h)
{
	struct winsize ws;

	*w = 80;
	*h = 24;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		*w = ws.ws_col;
		*h = ws.ws_row;
	}
}

bool top_term_stopped(void)
{
	return got_stop;
}

int top_term_wait(int ms, int fd)
{
	struct pollfd p[2] = {
		{ .fd = active ? STDIN_FILENO : -1, .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	unsigned char c;
	int n;

	if (got_stop)
		return TOP_KEY_QUIT;
	if (got_winch) {
		got_winch = 0;
		return TOP_KEY_RESIZE;
	}
	n = poll(p, 2, ms < 0 ? 0 : ms);
	if (got_stop)
		return TOP_KEY_QUIT;
	if (got_winch) {
		got_winch = 0;
		return TOP_KEY_RESIZE;
	}
	if (n <= 0)
		return 0;
	if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t r = read(STDIN_FILENO, &c, 1);

		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return TOP_KEY_QUIT;	/* the terminal went away */
		if (r == 1)
			return c;
	}
	if (fd >= 0 && p[1].revents)
		return TOP_KEY_FD;
	return 0;
}

void top_term_show(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	/* Home, then each line over the old one, clearing what it leaves. */
	put("\033[H", 3);
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		put(p, n);
		put("\033[K", 3);
		if (!nl)
			break;
		/* No newline after the last line: it would scroll a full screen. */
		if (nl + 1 < end)
			put("\r\n", 2);
		p = nl + 1;
	}
	put("\033[J", 3);
}
