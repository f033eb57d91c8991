// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols from a kallsyms file, and the symbol chunks that name the
 * frame addresses of a trace with them.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"

/* Words of one symbol chunk at most. */
#define SYM_CHUNK_WORDS	65536U
/* A text symbol further than this below an address does not name it. */
#define SYM_MAX_OFFSET	PAGETRACE_SYM_OFFSET_MASK

struct pgtrace_ksym {
	uint64_t	addr;
	const char	*name;		/* "function" or "function [module]" */
	size_t		order;		/* line number, to keep the first alias */
};

struct pgtrace_kallsyms {
	struct pgtrace_ksym	*text;		/* text symbols, by address, one per address */
	size_t		nr_text;
	/* Every core kernel symbol's name and address, for the anchor. */
	struct pgtrace_ksym	*all;
	size_t		nr_all;
	struct pgtrace_arena	*arena;
};

static int read_all(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			char *b = realloc(buf, 2 * cap + 1);

			if (!b) {
				free(buf);
				return -ENOMEM;
			}
			buf = b;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			got = -errno;
			free(buf);
			return (int)got;
		}
		if (!got)
			break;
		n += got;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int push(struct pgtrace_ksym **v, size_t *n, size_t *cap, const struct pgtrace_ksym *s)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 4096;
		struct pgtrace_ksym *t = realloc(*v, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*v = t;
		*cap = c;
	}
	(*v)[(*n)++] = *s;
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct pgtrace_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * One line: "ADDRESS TYPE NAME" and maybe "\t[MODULE]".  Returns 1 with
 * *@s filled (name in the arena), 0 for a line that is not a symbol, or
 * -ENOMEM.  *@text says whether it is a text symbol.
 */
static int parse_line(struct pgtrace_kallsyms *k, char *line, struct pgtrace_ksym *s, bool *text,
		      bool *module)
{
	char *end, *name, *mod = NULL, *p;
	size_t nlen, mlen = 0;
	char type;
	char *dst;

	s->addr = strtoull(line, &end, 16);
	if (end == line || *end != ' ')
		return 0;
	type = end[1];
	if (!type || end[2] != ' ')
		return 0;
	name = end + 3;
	p = strchr(name, '\t');
	if (p) {
		*p = '\0';
		mod = p + 1;
		mlen = strlen(mod);
		if (mlen < 3 || mod[0] != '[' || mod[mlen - 1] != ']')
			return 0;
	}
	nlen = strlen(name);
	if (!nlen || nlen + (mod ? 1 + mlen : 0) > PAGETRACE_SYM_NAME_MAX)
		return 0;
	*text = type == 't' || type == 'T' || type == 'w' || type == 'W';
	*module = mod != NULL;
	dst = pgtrace_arena_alloc(&k->arena, nlen + (mod ? 1 + mlen : 0) + 1);
	if (!dst)
		return -ENOMEM;
	memcpy(dst, name, nlen);
	if (mod) {
		dst[nlen] = ' ';
		memcpy(dst + nlen + 1, mod, mlen);
		nlen += 1 + mlen;
	}
	dst[nlen] = '\0';
	s->name = dst;
	return 1;
}

int pgtrace_kallsyms_open(struct pgtrace_kallsyms **out, int fd)
{
	struct pgtrace_kallsyms *k;
	size_t len = 0, cap_text = 0, cap_all = 0, order = 0, j;
	bool nonzero = false;
	char *buf = NULL, *line;
	int ret;

	*out = NULL;
	ret = read_all(fd, &buf, &len);
	if (ret)
		return ret;
	k = calloc(1, sizeof(*k));
	if (!k) {
		free(buf);
		return -ENOMEM;
	}
	for (line = buf; line < buf + len; ) {
		char *nl = strchr(line, '\n');
		struct pgtrace_ksym s;
		bool text, module;

		if (nl)
			*nl = '\0';
		ret = parse_line(k, line, &s, &text, &module);
		line = nl ? nl + 1 : buf + len;
		if (ret < 0)
			goto fail;
		if (!ret)
			continue;
		s.order = order++;
		nonzero |= s.addr != 0;
		if (text && push(&k->text, &k->nr_text, &cap_text, &s))
			goto nomem;
		if (!module && push(&k->all, &k->nr_all, &cap_all, &s))
			goto nomem;
	}
	free(buf);
	if (order && !nonzero) {
		pgtrace_kallsyms_close(k);
		return -EPERM;
	}
	if (!k->nr_text) {
		pgtrace_kallsyms_close(k);
		return -ENODATA;
	}
	qsort(k->text, k->nr_text, sizeof(*k->text), cmp_ksym);
	/* Aliases: the first name given to an address names it. */
	for (size_t i = j = 0; i < k->nr_text; i++)
		if (!j || k->text[j - 1].addr != k->text[i].addr)
			k->text[j++] = k->text[i];
	k->nr_text = j;
	*out = k;
	return 0;
nomem:
	ret = -ENOMEM;
fail:
	free(buf);
	pgtrace_kallsyms_close(k);
	return ret;
}

void pgtrace_kallsyms_close(struct pgtrace_kallsyms *k)
{
	if (!k)
		return;
	free(k->text);
	free(k->all);
	pgtrace_arena_free(&k->arena);
	free(k);
}

int pgtrace_kallsyms_check(const struct pgtrace_kallsyms *k, const struct pagetrace_rec_stacks *st)
{
	char name[sizeof(st->anchor_name) + 1];
	bool found = false;

	memcpy(name, st->anchor_name, sizeof(st->anchor_name));
	name[sizeof(st->anchor_name)] = '\0';
	if (!name[0])
		return -EINVAL;
	for (size_t i = 0; i < k->nr_all; i++) {
		if (strcmp(k->all[i].name, name))
			continue;
		if (k->all[i].addr == st->anchor_addr)
			return 0;
		found = true;
	}
	return found ? -ESTALE : -ENOENT;
}

const char *pgtrace_kallsyms_lookup(const struct pgtrace_kallsyms *k, uint64_t addr,
			       uint64_t *offset)
{
	size_t lo = 0, hi = k->nr_text;

	/* The last symbol at or below addr: lo ends as one past it. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->text[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - k->text[lo - 1].addr > SYM_MAX_OFFSET)
		return NULL;
	if (offset)
		*offset = addr - k->text[lo - 1].addr;
	return k->text[lo - 1].name;
}

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void put_le64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* Close the chunk whose header is at @buf + @start and has @words words. */
static void close_chunk(unsigned char *buf, size_t start, uint32_t words)
{
	unsigned char *h = buf + start;
	uint16_t flags = htole16(PAGETRACE_CHUNK_SYMBOLS);
	uint32_t nw = htole32(words);

	memset(h, 0, sizeof(struct pagetrace_chunk));
	memcpy(h, PAGETRACE_CHUNK_MAGIC, PAGETRACE_CHUNK_MAGIC_LEN);
	memcpy(h + offsetof(struct pagetrace_chunk, flags), &flags, 2);
	memcpy(h + offsetof(struct pagetrace_chunk, nr_words), &nw, 4);
}

static const char *kallsyms_lookup_fn(void *arg, uint64_t addr, uint64_t *offset)
{
	return pgtrace_kallsyms_lookup(arg, addr, offset);
}

int pgtrace_symbol_chunks(const struct pgtrace_kallsyms *k, const uint64_t *addrs, size_t n,
		     void **out, size_t *outlen)
{
	return pgtrace_symbol_chunks_by(kallsyms_lookup_fn, (void *)k, addrs, n, out, outlen);
}

int pgtrace_symbol_chunks_by(pgtrace_symbol_lookup_fn lookup, void *arg, const uint64_t *addrs,
			size_t n, void **out, size_t *outlen)
{
	const size_t hdr = sizeof(struct pagetrace_chunk);
	size_t cap = 0, len = 0, start = 0, named = 0;
	uint32_t words = 0;
	unsigned char *buf = NULL;
	uint64_t *a;

	*out = NULL;
	*outlen = 0;
	if (!n)
		return 0;
	a = malloc(n * sizeof(*a));
	if (!a)
		return -ENOMEM;
	memcpy(a, addrs, n * sizeof(*a));
	qsort(a, n, sizeof(*a), cmp_addr);
	for (size_t i = 0; i < n; i++) {
		uint64_t offset;
		const char *name;
		size_t nlen, nw;

		if (i && a[i] == a[i - 1])
			continue;
		name = lookup(arg, a[i], &offset);
		if (!name || offset > PAGETRACE_SYM_OFFSET_MASK)
			continue;
		nlen = strnlen(name, PAGETRACE_SYM_NAME_MAX);
		nw = 2 + (nlen + 7) / 8;
		if (words && words + nw > SYM_CHUNK_WORDS) {
			close_chunk(buf, start, words);
			words = 0;
		}
		if (len + hdr + 8 * nw > cap) {
			size_t c = cap ? 2 * cap : 4096;
			unsigned char *b;

			while (c < len + hdr + 8 * nw)
				c *= 2;
			b = realloc(buf, c);
			if (!b) {
				free(buf);
				free(a);
				return -ENOMEM;
			}
			buf = b;
			cap = c;
		}
		if (!words) {
			start = len;
			len += hdr;
		}
		put_le64(buf + len, a[i]);
		put_le64(buf + len + 8, (uint64_t)nlen |
			 offset << PAGETRACE_SYM_OFFSET_SHIFT);
		memset(buf + len + 16, 0, 8 * (nw - 2));
		memcpy(buf + len + 16, name, nlen);
		len += 8 * nw;
		words += nw;
		named++;
	}
	free(a);
	if (words)
		close_chunk(buf, start, words);
	*out = buf;
	*outlen = len;
	return (int)named;
}
