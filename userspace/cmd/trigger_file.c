// SPDX-License-Identifier: GPL-2.0
/*
 * The files a flight recorder trigger writes: their names, the JSON
 * sidecar that says which trigger fired, when, and what span the trace
 * covers, and the pruning of old ones (--max-files).
 *
 * Why a sidecar and not a chunk in the trace: readers decode every chunk
 * whose flags they do not single out as events, so a new kind of chunk
 * would be read as garbage events by every decoder built before it.  The
 * trace file stays an ordinary trace that any pagetrace opens.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "libpagetrace.h"
#include "trigger.h"

int trigger_file_path(char *buf, size_t len, const char *dir, const struct trigger *t,
		      unsigned int n, int64_t when)
{
	time_t w = when;
	struct tm tm;
	char stamp[32];
	int ret;

	gmtime_r(&w, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	ret = snprintf(buf, len, "%s/pagetrace-%s-%s-%u.bin", dir, stamp,
		       trigger_name(t), n);
	return ret < 0 || (size_t)ret >= len ? -ENAMETOOLONG : 0;
}

int trigger_file_span(const char *path, struct trigger_span *s, char *err, size_t len)
{
	struct pgtrace_reader *r = NULL;
	const struct pgtrace_reader_counters *c;
	const struct pagetrace_header *h;
	struct pgtrace_event ev[256];
	int fd, n, ret;

	memset(s, 0, sizeof(*s));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, len, "%s", strerror(-ret));
		return ret;
	}
	ret = pgtrace_reader_open_fd(&r, fd, 0);
	if (ret)
		goto out;
	while ((n = pgtrace_reader_next_batch(r, ev, 256)) > 0) {
		for (int i = 0; i < n; i++) {
			/* The memory map at start is the session's, not this span's. */
			if (ev[i].chunk_flags & PAGETRACE_CHUNK_SNAPSHOT)
				continue;
			s->events++;
			if (!s->first_ns || ev[i].time_ns < s->first_ns)
				s->first_ns = ev[i].time_ns;
			if (ev[i].time_ns > s->last_ns)
				s->last_ns = ev[i].time_ns;
		}
	}
	ret = n;
	h = pgtrace_reader_header(r);
	s->start_ns = h->start_ns;
	s->start_mono_ns = h->start_mono_ns;
	c = pgtrace_reader_counters(r);
	s->lost = c->lost;
	s->missing_chunks = c->missing_chunks;
out:
	if (ret)
		snprintf(err, len, "%s", r && pgtrace_reader_error(r) ?
			 pgtrace_reader_error(r) : strerror(-ret));
	pgtrace_reader_close(r);
	close(fd);
	return ret;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* "2026-11-26T15:04:05.123456789Z" for CLOCK_MONOTONIC @mono. */
static void json_time(FILE *f, const char *key, uint64_t mono, int64_t mono_to_real)
{
	int64_t real = (int64_t)mono + mono_to_real;
	time_t sec = real / 1000000000;
	struct tm tm;
	char stamp[32];

	gmtime_r(&sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "  \"%s\": \"%s.%09" PRId64 "Z\",\n  \"%s_mono_ns\": %" PRIu64 ",\n",
		key, stamp, real % 1000000000, key, mono);
}

int trigger_write_json(const struct trigger_record *rec)
{
	const struct trigger_span *s = rec->span;
	const char *base = strrchr(rec->bin, '/');
	char path[TRIGGER_PATH_MAX + 16], tmp[TRIGGER_PATH_MAX + 24];
	size_t blen = strlen(rec->bin);
	FILE *f;
	int ret = 0;

	if (blen < 4 || blen - 4 + 6 >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%.*s.json", (int)(blen - 4), rec->bin);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "{\n  \"file\": ");
	json_string(f, base ? base + 1 : rec->bin);
	fprintf(f, ",\n  \"trigger\": \"%s\",\n  \"expr\": ", trigger_name(rec->t));
	json_string(f, rec->t->expr);
	fprintf(f, ",\n  \"detail\": ");
	json_string(f, rec->detail ? rec->detail : "");
	if (rec->t->kind == TRIGGER_INUSE)
		fprintf(f, ",\n  \"inuse_pages\": %" PRId64 ",\n  \"inuse_limit\": %" PRIu64,
			rec->inuse_pages, rec->t->inuse_limit);
	fprintf(f, ",\n  \"number\": %u,\n  \"coalesced\": %u,\n  \"post_s\": %.3f,\n",
		rec->n, rec->coalesced, rec->post_s);
	json_time(f, "fired", rec->fired_mono_ns, rec->mono_to_real_ns);
	json_time(f, "frozen", rec->frozen_mono_ns, rec->mono_to_real_ns);
	if (s->first_ns) {
		/* Trace clock -> CLOCK_MONOTONIC through the header's pair. */
		json_time(f, "span_start", s->start_mono_ns + (s->first_ns - s->start_ns),
			  rec->mono_to_real_ns);
		json_time(f, "span_end", s->start_mono_ns + (s->last_ns - s->start_ns),
			  rec->mono_to_real_ns);
	}
	fprintf(f, "  \"span_s\": %.6f,\n  \"first_event_ns\": %" PRIu64 ",\n"
		"  \"last_event_ns\": %" PRIu64 ",\n  \"events\": %" PRIu64 ",\n"
		"  \"lost\": %" PRIu64 ",\n  \"missing_chunks\": %" PRIu64 ",\n"
		"  \"bytes\": %" PRIu64 "\n}\n",
		(s->last_ns - s->first_ns) / 1e9, s->first_ns, s->last_ns, s->events,
		s->lost, s->missing_chunks, rec->bytes);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

struct dump_file {
	char		*name;
	struct timespec	mtime;
};

static int older_first(const void *a, const void *b)
{
	const struct dump_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int trigger_prune(const char *dir, unsigned int max)
{
	struct dump_file *files = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	int removed = 0, dfd;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct stat st;

		if (strncmp(de->d_name, "pagetrace-", 10) || l < 14 ||
		    strcmp(de->d_name + l - 4, ".bin") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (nr == cap) {
			struct dump_file *n = realloc(files, (cap = cap ? 2 * cap : 64) *
						      sizeof(*files));

			if (!n)
				goto nomem;
			files = n;
		}
		files[nr].name = strdup(de->d_name);
		if (!files[nr].name)
			goto nomem;
		files[nr++].mtime = st.st_mtim;
	}
	qsort(files, nr, sizeof(*files), older_first);
	for (size_t i = 0; nr > max && i < nr - max; i++) {
		char json[NAME_MAX + 8];

		if (unlinkat(dfd, files[i].name, 0) && errno != ENOENT)
			continue;
		removed++;
		snprintf(json, sizeof(json), "%.*s.json",
			 (int)strlen(files[i].name) - 4, files[i].name);
		unlinkat(dfd, json, 0);
	}
out:
	for (size_t i = 0; i < nr; i++)
		free(files[i].name);
	free(files);
	closedir(d);
	return removed;
nomem:
	removed = -ENOMEM;
	goto out;
}
