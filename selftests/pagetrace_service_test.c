// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace_service_test: systemd/pagetrace.service, run without systemd
 * (the selftest VMs do not boot it; scripts/test/check-systemd.sh runs
 * the unit under a real systemd on one kernel, this runs its command lines
 * on every kernel).  The unit and its settings file are read
 * as systemd reads them: EnvironmentFile='s NAME=VALUE lines, the unit's
 * continued lines, "%%", quotes, "$$", ${NAME} (one word) and a word that
 * is just $NAME (split at whitespace); ExecStart= runs with the unit's
 * CapabilityBoundingSet=, NoNewPrivileges= and UMask=.  The other sandbox
 * settings (namespaces, ProtectSystem=...) are systemd's alone and are
 * not tried here.
 *
 *  - pre_loaded: ExecStartPre= with the module loaded sets the settings'
 *    PAGETRACE_MODULE_OPTIONS on it; an unknown option fails, saying so;
 *  - record: ExecStart= with the settings (but for the directory and
 *    --max-files 2) starts the flight recorder; three SIGUSR1 (the signal
 *    trigger) write three files; a SIGTERM while a fourth waits out its
 *    --post writes it and ends the recorder with status 0; the oldest two
 *    files are gone, and the two left decode and open in `pagetrace
 *    report` and `pagetrace pprof`;
 *  - pre_unloaded: with the module unloaded, ExecStartPre= (its modprobe
 *    finding no module) and ExecStart= fail and say that the module is not
 *    loaded and what to install; with pagetrace.ko where modprobe looks,
 *    ExecStartPre= loads it with PAGETRACE_MODULE_OPTIONS.  The modules
 *    directory is a tmpfs in a mount namespace of the command's own, with
 *    nothing or $PAGETRACE_KO in it: the system's modules are not touched.
 *
 * The files: $PAGETRACE_SYSTEMD/pagetrace.service and pagetrace.default
 * (the project's systemd/), else the installed
 * /lib/systemd/system/pagetrace.service and /etc/default/pagetrace; the
 * CLI: $PAGETRACE_BIN, in place of the unit's /usr/bin/pagetrace.  Skips
 * without them.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "libpagetrace.h"
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DIR_OUT		"/tmp/pt-svc"
#define MAX_ARGS	128
#define MAX_VARS	64
/* systemd's PATH for services */
#define SVC_PATH	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* NAME=VALUE pairs: the settings, then the test's overrides. */
struct env {
	char	*name[MAX_VARS], *value[MAX_VARS];
	int	n;
};

/* An Exec line of the unit, expanded. */
struct cmd {
	char	*argv[MAX_ARGS + 1];
	int	argc;
	bool	privileged;	/* "+": without the sandbox */
};

FIXTURE(svc) {
	char		unit[512], settings[512];
	char		*text;		/* the unit, continued lines joined */
	struct env	env;
	const char	*bin;
	char		out[16384];	/* a command's stdout + stderr: the journal */
	char		old_stack_rate[32];
	char		skip[600];	/* why the tests skip, or "" */
	pid_t		pid;
	int		rfd;
};

static void env_set(struct env *e, const char *name, const char *value)
{
	for (int i = 0; i < e->n; i++) {
		if (!strcmp(e->name[i], name)) {
			free(e->value[i]);
			e->value[i] = strdup(value);
			return;
		}
	}
	if (e->n == MAX_VARS)
		return;
	e->name[e->n] = strdup(name);
	e->value[e->n++] = strdup(value);
}

static const char *env_get(const struct env *e, const char *name, size_t len)
{
	for (int i = 0; i < e->n; i++)
		if (strlen(e->name[i]) == len && !strncmp(e->name[i], name, len))
			return e->value[i];
	return NULL;
}

static char *read_text(const char *path)
{
	struct pt_st_buf b = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (pt_st_buf_drain(fd, &b)) {
		close(fd);
		pt_st_buf_free(&b);
		return NULL;
	}
	close(fd);
	pt_st_buf_add(&b, "", 1);
	return (char *)b.p;
}

/*
 * EnvironmentFile=: NAME=VALUE lines, # and ; comments; a VALUE in quotes
 * loses them, else its outer blanks.  0, or -1 with why in @why.
 */
static int load_settings(const char *path, struct env *e, char *why, size_t len)
{
	char *text = read_text(path), *line, *save = NULL;

	if (!text) {
		snprintf(why, len, "%.300s: %s", path, strerror(errno));
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq, *v, *end;

		while (isspace((unsigned char)*line))
			line++;
		if (!*line || *line == '#' || *line == ';')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(why, len, "%.200s: not NAME=VALUE: %.200s", path, line);
			free(text);
			return -1;
		}
		*eq = '\0';
		for (end = eq; end > line && isspace((unsigned char)end[-1]); )
			*--end = '\0';
		v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		end = v + strlen(v);
		while (end > v && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if ((*v == '"' || *v == '\'') && end > v + 1 && end[-1] == *v) {
			end[-1] = '\0';
			v++;
		}
		env_set(e, line, v);
	}
	free(text);
	return 0;
}

/* The unit with its continued lines joined (the backslash becomes a blank). */
static char *load_unit(const char *path)
{
	char *t = read_text(path);

	if (!t)
		return NULL;
	for (char *p = t; (p = strstr(p, "\\\n")); )
		p[0] = p[1] = ' ';
	return t;
}

/* The value of the @n-th (0: first) KEY= line of [Service], into @buf. */
static bool unit_value(const char *text, const char *key, int n, char *buf, size_t len)
{
	const char *line = text;
	bool service = false;
	size_t kl = strlen(key);

	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		size_t ll = strcspn(line, "\n");

		if (*line == '[')
			service = !strncmp(line, "[Service]", 9);
		if (!service || ll <= kl || strncmp(line, key, kl) || line[kl] != '=')
			continue;
		if (n-- > 0)
			continue;
		ll -= kl + 1;
		if (ll >= len)
			return false;
		memcpy(buf, line + kl + 1, ll);
		buf[ll] = '\0';
		return true;
	}
	return false;
}

/*
 * An Exec line as systemd runs it: prefixes, "%%", words (quotes, \
 * escapes), then the environment: a word that is just $NAME becomes the
 * words of NAME's value, ${NAME} its value in the word, $$ a $.  0, or -1
 * with why.
 */
static int expand_exec(const char *line, const struct env *e, struct cmd *c,
		       char *why, size_t len)
{
	char word[8192];

	memset(c, 0, sizeof(*c));
	for (; strchr("@-:+!", *line); line++)
		if (*line == '+')
			c->privileged = true;
	while (*line) {
		size_t w = 0;
		char q = 0;

		while (isspace((unsigned char)*line))
			line++;
		if (!*line)
			break;
		for (; *line && (q || !isspace((unsigned char)*line)); line++) {
			char ch = *line;

			if (ch == '%') {
				if (line[1] != '%') {
					snprintf(why, len, "specifier %%%c: unknown to this test",
						 line[1]);
					return -1;
				}
				line++;
			} else if (!q && (ch == '"' || ch == '\'')) {
				q = ch;
				continue;
			} else if (q && ch == q) {
				q = 0;
				continue;
			} else if (ch == '\\' && line[1]) {
				ch = *++line;
			}
			if (w + 1 >= sizeof(word))
				return -1;
			word[w++] = ch;
		}
		word[w] = '\0';
		if (q) {
			snprintf(why, len, "unterminated quote in: %.100s", word);
			return -1;
		}
		if (word[0] == '$' && word[1] != '{' && word[1] != '$' && word[1]) {
			const char *v = env_get(e, word + 1, strlen(word + 1));
			char *copy = strdup(v ? v : ""), *tok, *save = NULL;

			for (tok = strtok_r(copy, " \t\n", &save); tok;
			     tok = strtok_r(NULL, " \t\n", &save)) {
				if (c->argc == MAX_ARGS)
					return -1;
				c->argv[c->argc++] = strdup(tok);
			}
			free(copy);
			continue;
		}
		{
			char out[16384];
			size_t o = 0;

			for (const char *p = word; *p; p++) {
				char one[2] = { *p, 0 };
				const char *v = NULL;

				if (p[0] == '$' && p[1] == '$') {
					v = "$";
					p++;
				} else if (p[0] == '$' && p[1] == '{') {
					size_t nl = strcspn(p + 2, "}");

					v = env_get(e, p + 2, nl);
					if (!v)
						v = "";
					p += 2 + nl;
				} else if (p[0] == '$') {
					snprintf(why, len, "$ inside a word, not ${NAME}: %.100s", word);
					return -1;
				}
				if (!v)
					v = one;
				if (o + strlen(v) + 1 >= sizeof(out))
					return -1;
				memcpy(out + o, v, strlen(v));
				o += strlen(v);
			}
			out[o] = '\0';
			if (c->argc == MAX_ARGS)
				return -1;
			c->argv[c->argc++] = strdup(out);
		}
	}
	return c->argc ? 0 : -1;
}

static void cmd_free(struct cmd *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->argv[i]);
	c->argc = 0;
}

static const struct { const char *name; int cap; } caps[] = {
#define CAP(x) { #x, x }
	CAP(CAP_CHOWN), CAP(CAP_DAC_OVERRIDE), CAP(CAP_DAC_READ_SEARCH), CAP(CAP_FOWNER),
	CAP(CAP_FSETID), CAP(CAP_KILL), CAP(CAP_SETGID), CAP(CAP_SETUID),
	CAP(CAP_SETPCAP), CAP(CAP_NET_ADMIN), CAP(CAP_IPC_LOCK), CAP(CAP_SYS_MODULE),
	CAP(CAP_SYS_RAWIO), CAP(CAP_SYS_PTRACE), CAP(CAP_SYS_ADMIN), CAP(CAP_SYS_NICE),
	CAP(CAP_SYS_RESOURCE), CAP(CAP_SYS_TIME), CAP(CAP_SYSLOG), CAP(CAP_PERFMON),
	CAP(CAP_BPF),
#undef CAP
};

/*
 * In the child, before exec: the unit's sandbox as far as a process can
 * put it on itself.  Returns 0, or -1 (the child then exits 126).
 */
static int apply_sandbox(const char *unit)
{
	char v[1024], *tok, *save = NULL;
	uint64_t keep = 0;
	int last = 40;
	FILE *f;

	if (unit_value(unit, "UMask", 0, v, sizeof(v)))
		umask(strtoul(v, NULL, 8));
	if (unit_value(unit, "NoNewPrivileges", 0, v, sizeof(v)) && !strcmp(v, "yes") &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (!unit_value(unit, "CapabilityBoundingSet", 0, v, sizeof(v)))
		return 0;
	for (tok = strtok_r(v, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		size_t i;

		for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
			if (!strcmp(caps[i].name, tok))
				break;
		if (i == sizeof(caps) / sizeof(caps[0])) {
			fprintf(stderr, "test: capability %s unknown to this test\n", tok);
			return -1;
		}
		keep |= 1ULL << caps[i].cap;
	}
	/* What systemd.exec(5) says these settings take from the bounding set. */
	if (unit_value(unit, "ProtectKernelLogs", 0, v, sizeof(v)) && !strcmp(v, "yes"))
		keep &= ~(1ULL << CAP_SYSLOG);
	if (unit_value(unit, "ProtectKernelModules", 0, v, sizeof(v)) && !strcmp(v, "yes"))
		keep &= ~(1ULL << CAP_SYS_MODULE);
	if (unit_value(unit, "ProtectClock", 0, v, sizeof(v)) && !strcmp(v, "yes"))
		keep &= ~(1ULL << CAP_SYS_TIME | 1ULL << CAP_WAKE_ALARM);
	f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = 40;
		fclose(f);
	}
	for (int cap = 0; cap <= last; cap++)
		if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return -1;
	return 0;
}

/* Copy the file @from to @to: 0 or -1. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, ret = 0;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			ret = -1;
	if (n < 0 || close(out))
		ret = -1;
	close(in);
	return ret;
}

/*
 * In the child, before exec: a mount namespace of its own where
 * /lib/modules/RELEASE, what modprobe searches, is an empty tmpfs, or
 * holds just @ko (then depmod).  So the unit's real modprobe runs, fails
 * or loads @ko, and the system's modules are left alone.  0 or -1.
 */
static int modules_dir(const char *ko)
{
	char dir[400], path[600];
	struct utsname u;

	if (uname(&u) || unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	mkdir("/lib/modules", 0755);
	if (mount("pt-svc-test", "/lib/modules", "tmpfs", 0, "mode=0755"))
		return -1;
	snprintf(dir, sizeof(dir), "/lib/modules/%s", u.release);
	if (mkdir(dir, 0755) || !ko)
		return 0;
	snprintf(path, sizeof(path), "%s/extra", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/extra/pagetrace.ko", dir);
	if (copy_file(ko, path))
		return -1;
	snprintf(path, sizeof(path), "depmod %s >&2", u.release);
	return system(path) ? -1 : 0;
}

#define MODULES_AS_THEY_ARE	((const char *)1)

/*
 * Start @c (its stdout and stderr into a pipe).  @ko: MODULES_AS_THEY_ARE,
 * or see modules_dir().
 */
static int cmd_start(FIXTURE_DATA(svc) *self, const struct cmd *c, const char *ko)
{
	int p[2];

	if (pipe(p))
		return -1;
	self->pid = fork();
	if (self->pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		clearenv();
		putenv(SVC_PATH);
		if (ko != MODULES_AS_THEY_ARE && modules_dir(ko)) {
			fprintf(stderr, "test: a /lib/modules of its own: %s\n", strerror(errno));
			_exit(125);
		}
		if (!c->privileged && apply_sandbox(self->text))
			_exit(126);
		execv(c->argv[0], c->argv);
		fprintf(stderr, "test: %s: %s\n", c->argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	self->rfd = p[0];
	return self->pid > 0 ? 0 : -1;
}

/* Optionally signal it, then its output into self->out and its status. */
static int cmd_wait(FIXTURE_DATA(svc) *self, int sig)
{
	size_t len = 0;
	ssize_t n;
	int st;

	if (sig)
		kill(self->pid, sig);
	while ((n = read(self->rfd, self->out + len, sizeof(self->out) - 1 - len)) > 0)
		len += n;
	self->out[len] = '\0';
	close(self->rfd);
	self->rfd = -1;
	if (waitpid(self->pid, &st, 0) != self->pid)
		return -1;
	self->pid = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmd_run(FIXTURE_DATA(svc) *self, const struct cmd *c, const char *ko)
{
	return cmd_start(self, c, ko) ? -1 : cmd_wait(self, 0);
}

FIXTURE_SETUP(svc)
{
	const char *dir = getenv("PAGETRACE_SYSTEMD");
	char why[1024];

	self->pid = -1;
	self->rfd = -1;
	self->bin = getenv("PAGETRACE_BIN");
	if (dir) {
		snprintf(self->unit, sizeof(self->unit), "%s/pagetrace.service", dir);
		snprintf(self->settings, sizeof(self->settings), "%s/pagetrace.default", dir);
	} else {
		snprintf(self->unit, sizeof(self->unit), "/lib/systemd/system/pagetrace.service");
		snprintf(self->settings, sizeof(self->settings), "/etc/default/pagetrace");
	}
	/*
	 * A SKIP here does not stop the test with every version of the
	 * harness (6.1's runs it): SVC_READY() in each test skips.
	 */
	if (access(self->unit, R_OK) || access(self->settings, R_OK)) {
		snprintf(self->skip, sizeof(self->skip), "no %.200s or %.200s: set "
			 "PAGETRACE_SYSTEMD to the project's systemd/", self->unit,
			 self->settings);
		return;
	}
	if (!self->bin || access(self->bin, X_OK)) {
		snprintf(self->skip, sizeof(self->skip), "no pagetrace CLI: set PAGETRACE_BIN");
		return;
	}
	self->text = load_unit(self->unit);
	ASSERT_NE(NULL, self->text);
	{
		char ef[512];

		ASSERT_TRUE(unit_value(self->text, "EnvironmentFile", 0, ef, sizeof(ef)));
		ASSERT_STREQ("/etc/default/pagetrace", ef);
	}
	ASSERT_EQ(0, load_settings(self->settings, &self->env, why, sizeof(why)))
		TH_LOG("%s", why);
	pt_st_get_param_str("stack_rate", self->old_stack_rate, sizeof(self->old_stack_rate));
	self->old_stack_rate[strcspn(self->old_stack_rate, "\n")] = '\0';
}

FIXTURE_TEARDOWN(svc)
{
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	if (self->rfd >= 0)
		close(self->rfd);
	if (!pt_st_mod_loaded())
		pt_st_mod_load(NULL);
	pt_st_wait_dev(true, 2000);
	if (self->old_stack_rate[0])
		pt_st_set_param("stack_rate", self->old_stack_rate);
	pt_st_rm_dir(DIR_OUT);
	for (int i = 0; i < self->env.n; i++) {
		free(self->env.name[i]);
		free(self->env.value[i]);
	}
	free(self->text);
}

#define SVC_READY() do {						\
	if (self->skip[0])						\
		SKIP(return, "%s", self->skip);				\
} while (0)

/* The unit's @key (ExecStartPre, ExecStart) expanded with self->env. */
#define EXPAND(key, c) do {						\
	char _line[8192], _why[256] = "";				\
									\
	ASSERT_TRUE(unit_value(self->text, key, 0, _line, sizeof(_line)))	\
		TH_LOG("no %s= under [Service] in %s", key, self->unit);	\
	ASSERT_EQ(0, expand_exec(_line, &self->env, c, _why, sizeof(_why)))	\
		TH_LOG("%s=%s: %s", key, _line, _why);			\
} while (0)

/* The value of NAME in the settings' PAGETRACE_MODULE_OPTIONS, or NULL. */
static const char *module_option(const struct env *e, const char *name, char *buf, size_t len)
{
	const char *o = env_get(e, "PAGETRACE_MODULE_OPTIONS", 24);
	const char *p = o ? strstr(o, name) : NULL;

	if (!p || p[strlen(name)] != '=')
		return NULL;
	p += strlen(name) + 1;
	snprintf(buf, len, "%.*s", (int)strcspn(p, " \t"), p);
	return buf;
}

/* ExecStartPre= on the loaded module: its options are set; a bad one fails. */
TEST_F(svc, pre_loaded)
{
	char want[32], got[32] = "";
	struct cmd c;

	SVC_READY();
	if (!pt_st_mod_loaded())
		SKIP(return, "pagetrace is not loaded");
	EXPAND("ExecStartPre", &c);
	EXPECT_TRUE(c.privileged) TH_LOG("ExecStartPre= loads a module: it needs \"+\"");
	pt_st_set_param("stack_rate", "0");
	EXPECT_EQ(0, cmd_run(self, &c, MODULES_AS_THEY_ARE)) TH_LOG("%s", self->out);
	cmd_free(&c);
	if (module_option(&self->env, "stack_rate", want, sizeof(want))) {
		pt_st_get_param_str("stack_rate", got, sizeof(got));
		got[strcspn(got, "\n")] = '\0';
		EXPECT_STREQ(want, got);
	}

	env_set(&self->env, "PAGETRACE_MODULE_OPTIONS", "no_such_parameter=1");
	EXPAND("ExecStartPre", &c);
	EXPECT_EQ(1, cmd_run(self, &c, MODULES_AS_THEY_ARE));
	cmd_free(&c);
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "PAGETRACE_MODULE_OPTIONS"));
	EXPECT_NE(NULL, strstr(self->out, "no_such_parameter"));
}

/* Whether DIR_OUT has a file ending in @suffix; its path into @path. */
static bool find_file(const char *suffix, char *path, size_t len)
{
	DIR *d = opendir(DIR_OUT);
	struct dirent *de;
	bool found = false;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = strlen(suffix);

		if (!strncmp(de->d_name, "pagetrace-", 10) && l > sl &&
		    !strcmp(de->d_name + l - sl, suffix)) {
			if (path)
				snprintf(path, len, DIR_OUT "/%s", de->d_name);
			found = true;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static int count_files(const char *ext)
{
	DIR *d = opendir(DIR_OUT);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		n += !strncmp(de->d_name, "pagetrace-", 10) && l > 4 &&
		     !strcmp(de->d_name + l - strlen(ext), ext);
	}
	if (d)
		closedir(d);
	return n;
}

/* Decode @path to its end: the events, or -1 with why. */
static long decode_file(const char *path, char *why, size_t len)
{
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event ev;
	struct pt_st_buf b = { 0 };
	long n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = pt_st_buf_drain(fd, &b);
	close(fd);
	if (!ret)
		ret = pgtrace_reader_open_mem(&r, b.p, b.len, 0);
	while (!ret && (ret = pgtrace_reader_next(r, &ev)) == 1) {
		n++;
		ret = 0;
	}
	if (ret)
		snprintf(why, len, "%s after %ld events", r ? pgtrace_reader_error(r) :
			 strerror(-ret), n);
	pgtrace_reader_close(r);
	pt_st_buf_free(&b);
	return ret ? -1 : n;
}

/* `pagetrace ARGS...` (the CLI), its status. */
static int run_cli(FIXTURE_DATA(svc) *self, const char *a1, const char *a2,
		   const char *a3, const char *a4)
{
	struct cmd c = { .argv = { (char *)self->bin, (char *)a1, (char *)a2, (char *)a3,
				   (char *)a4 }, .argc = 5, .privileged = true };

	return cmd_run(self, &c, MODULES_AS_THEY_ARE);
}

/*
 * Why the settings' triggers cannot run on this kernel, or NULL: psi needs
 * /proc/pressure/memory, oom the oom_kill counter of /proc/vmstat (the
 * debug kernel of the test matrix has neither).
 */
static const char *triggers_unsupported(const char *trig)
{
	static char vmstat[16384];
	ssize_t n = 0;
	int fd;

	if (!trig)
		return NULL;
	if (strstr(trig, "psi") && access("/proc/pressure/memory", F_OK))
		return "the settings' psi trigger needs /proc/pressure/memory (no PSI)";
	if (!strstr(trig, "oom"))
		return NULL;
	fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, vmstat, sizeof(vmstat) - 1);
		close(fd);
	}
	vmstat[n > 0 ? n : 0] = '\0';
	if (!strstr(vmstat, "\noom_kill "))
		return "the settings' oom trigger needs oom_kill in /proc/vmstat";
	return NULL;
}

/*
 * ExecStart= with the settings' triggers and module options: SIGUSR1 thrice
 * gives three files, of which --max-files 2 keeps the newest two; they
 * open as any trace; SIGTERM ends it with status 0.
 */
TEST_F_TIMEOUT(svc, record, 600)
{
	const char *trig = env_get(&self->env, "PAGETRACE_TRIGGERS", 18);
	char path[600], suffix[32], cmdline[2048] = "";
	struct cmd pre, c;
	int st;

	SVC_READY();
	if (access("/dev/pagetrace", F_OK))
		SKIP(return, "/dev/pagetrace missing: load pagetrace.ko first");
	ASSERT_NE(NULL, trig);
	ASSERT_NE(NULL, strstr(trig, "--trigger signal"))
		TH_LOG("PAGETRACE_TRIGGERS has no --trigger signal (this test sends SIGUSR1): %s",
		       trig);
	if (triggers_unsupported(trig))
		SKIP(return, "%s", triggers_unsupported(trig));
	/* What a drop-in's Environment= would change: a directory of its own. */
	env_set(&self->env, "PAGETRACE_DIR", DIR_OUT);
	env_set(&self->env, "PAGETRACE_MAX_FILES", "2");
	pt_st_rm_dir(DIR_OUT);

	EXPAND("ExecStartPre", &pre);
	EXPECT_EQ(0, cmd_run(self, &pre, MODULES_AS_THEY_ARE)) TH_LOG("ExecStartPre: %s", self->out);
	cmd_free(&pre);
	EXPAND("ExecStart", &c);
	for (int i = 0; i < c.argc; i++)
		snprintf(cmdline + strlen(cmdline), sizeof(cmdline) - strlen(cmdline),
			 "%s%s", i ? " " : "", c.argv[i]);
	TH_LOG("ExecStart: %s", cmdline);
	ASSERT_FALSE(c.privileged);
	ASSERT_EQ(0, strcmp(c.argv[0] + strlen(c.argv[0]) - 10, "/pagetrace"));
	free(c.argv[0]);
	c.argv[0] = strdup(self->bin);
	ASSERT_EQ(0, cmd_start(self, &c, MODULES_AS_THEY_ARE));
	cmd_free(&c);
	if (!pt_st_wait_recording(20000)) {
		st = cmd_wait(self, SIGTERM);
		ASSERT_TRUE(false) TH_LOG("no session after 20 s; the recorder (status %d): %s",
					  st, self->out);
	}

	for (int n = 1; n <= 3; n++) {
		int i;

		pt_st_touch_and_free(1 << 20);
		ASSERT_EQ(0, kill(self->pid, SIGUSR1));
		snprintf(suffix, sizeof(suffix), "-signal-%d.json", n);
		for (i = 0; i < 1200 && !find_file(suffix, NULL, 0); i++)
			usleep(100000);
		ASSERT_TRUE(find_file(suffix, NULL, 0)) TH_LOG("no %s after 120 s", suffix);
	}
	/*
	 * systemctl stop while a fourth trigger waits out its --post (the
	 * settings' 2 s): SIGTERM writes that file at once, then exits 0.
	 */
	pt_st_touch_and_free(1 << 20);
	ASSERT_EQ(0, kill(self->pid, SIGUSR1));
	usleep(1000000);
	st = cmd_wait(self, SIGTERM);
	TH_LOG("the recorder's output (the journal's):\n%s", self->out);
	EXPECT_EQ(0, st);
	EXPECT_NE(NULL, strstr(self->out, "4 trigger file(s)"));
	EXPECT_TRUE(find_file("-signal-4.json", NULL, 0)) TH_LOG("SIGTERM lost the pending file");
	/* --max-files 2: the newest two are left. */
	EXPECT_EQ(2, count_files(".bin"));
	EXPECT_EQ(2, count_files(".json"));
	for (int n = 1; n <= 2; n++) {
		snprintf(suffix, sizeof(suffix), "-signal-%d.bin", n);
		EXPECT_FALSE(find_file(suffix, NULL, 0)) TH_LOG("%s was kept", suffix);
	}

	for (int n = 3; n <= 4; n++) {
		char html[640], pb[640], why[256] = "";
		struct stat st;

		snprintf(suffix, sizeof(suffix), "-signal-%d.bin", n);
		ASSERT_TRUE(find_file(suffix, path, sizeof(path)));
		EXPECT_LT(0, decode_file(path, why, sizeof(why)))
			TH_LOG("%s does not decode: %s", path, why);
		snprintf(html, sizeof(html), "%s.html", path);
		snprintf(pb, sizeof(pb), "%s.pb.gz", path);
		EXPECT_EQ(0, run_cli(self, "report", path, "-o", html)) TH_LOG("%s", self->out);
		EXPECT_EQ(0, run_cli(self, "pprof", path, "-o", pb)) TH_LOG("%s", self->out);
		EXPECT_EQ(0, access(html, F_OK));
		EXPECT_EQ(0, access(pb, F_OK));
		/*
		 * The stacks' frames were named when the file was written,
		 * inside the sandbox: /proc/kallsyms reads 0 for every address
		 * without CAP_SYSLOG (ProtectKernelLogs= takes it away).
		 */
		if (strstr(env_get(&self->env, "PAGETRACE_MODULE_OPTIONS", 24) ?: "", "stack_rate=")) {
			const char *sym;

			/* Text, not --json: the JSON's rate bins overflow out[]. */
			EXPECT_EQ(0, run_cli(self, "stats", "--quick", path, NULL));
			sym = strstr(self->out, " distinct stacks, ");
			EXPECT_NE(NULL, sym) TH_LOG("no stacks in %s: %s", path, self->out);
			if (sym)
				EXPECT_LT(0, strtol(sym + 18, NULL, 10))
					TH_LOG("%s: no frame named: %.200s", path, sym);
		}
		/* UMask=: the page numbers are not for everyone. */
		EXPECT_EQ(0, stat(path, &st));
		EXPECT_EQ(0, st.st_mode & 07) TH_LOG("%s: mode %o", path, st.st_mode & 0777);
	}
}

/*
 * The module not loaded: ExecStartPre= (modprobe finds no module) and
 * ExecStart= fail and say so; with the module where modprobe finds it,
 * ExecStartPre= loads it with PAGETRACE_MODULE_OPTIONS.
 */
TEST_F(svc, pre_unloaded)
{
	const char *ko = pt_st_ko_path(), *why;
	char want[32], got[32] = "";
	struct cmd c;
	int ret;

	SVC_READY();
	if (!ko)
		SKIP(return, "no pagetrace.ko file for modprobe to find ($PAGETRACE_KO)");
	/* ExecStart= arms its triggers before it opens the device. */
	why = triggers_unsupported(env_get(&self->env, "PAGETRACE_TRIGGERS", 18));
	if (why)
		SKIP(return, "%s", why);
	env_set(&self->env, "PAGETRACE_DIR", DIR_OUT);
	ret = pt_st_mod_unload();
	for (int i = 0; i < 50 && ret == -EAGAIN; i++) {
		usleep(100000);
		ret = pt_st_mod_unload();
	}
	ASSERT_EQ(0, ret) TH_LOG("rmmod pagetrace: %s", strerror(-ret));
	ASSERT_TRUE(pt_st_wait_dev(false, 2000));

	EXPAND("ExecStartPre", &c);
	EXPECT_EQ(1, cmd_run(self, &c, NULL));
	cmd_free(&c);
	TH_LOG("ExecStartPre: %s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "pagetrace module is not loaded"));
	EXPECT_NE(NULL, strstr(self->out, "pagetrace-dkms"));
	EXPECT_NE(NULL, strstr(self->out, "linux-headers-"));
	EXPECT_FALSE(pt_st_mod_loaded());

	EXPAND("ExecStart", &c);
	free(c.argv[0]);
	c.argv[0] = strdup(self->bin);
	EXPECT_NE(0, cmd_run(self, &c, MODULES_AS_THEY_ARE));
	cmd_free(&c);
	TH_LOG("ExecStart: %s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "module is not loaded"));

	EXPAND("ExecStartPre", &c);
	EXPECT_EQ(0, cmd_run(self, &c, ko)) TH_LOG("%s", self->out);
	cmd_free(&c);
	EXPECT_TRUE(pt_st_mod_loaded());
	if (module_option(&self->env, "stack_rate", want, sizeof(want))) {
		pt_st_get_param_str("stack_rate", got, sizeof(got));
		got[strcspn(got, "\n")] = '\0';
		EXPECT_STREQ(want, got);
	}
}

TEST_HARNESS_MAIN
