// SPDX-License-Identifier: GPL-2.0
/*
 * pagetrace pprof: the sampled allocations of a trace as a gzipped pprof
 * profile (profile.proto), like a Go heap profile in pages.
 *
 * Sample types: alloc_samples/count, alloc_pages/pages, inuse_samples/count,
 * inuse_pages/pages; period_type pages, period = the sampling rate.  A
 * sampled allocation of n pages stands for max(n, rate) pages, and counts
 * as max(n, rate) / n allocations (Go scales counts and bytes by the same
 * factor).  In use: the pages of a sampled allocation that no free or
 * reclaim after it covered by the end of the trace, scaled the same way.
 *
 * The file is decoded twice: the sampled allocations first, then the frees
 * and reclaims that end them.  The protobuf encoder and the gzip wrapper
 * (deflate stored blocks, CRC-32) are written here: no zlib.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "cmd.h"

struct buf {
	unsigned char	*p;
	size_t		len;
	size_t		cap;
	bool		oom;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		unsigned char *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void pb_varint(struct buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	put(b, t, n);
}

/* Field @f, wire type 0 (varint); zero is the default and left out. */
static void pb_uint(struct buf *b, unsigned int f, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)f << 3);
	pb_varint(b, v);
}

/* Field @f, wire type 2: @n bytes (a string, a message or a packed array). */
static void pb_bytes(struct buf *b, unsigned int f, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)f << 3 | 2);
	pb_varint(b, n);
	put(b, p, n);
}

/* Field @f holds the message in @m, which is emptied. */
static void pb_msg(struct buf *b, unsigned int f, struct buf *m)
{
	b->oom |= m->oom;
	pb_bytes(b, f, m->p, m->len);
	m->len = 0;
}

/* Strings, interned: the profile's string table. */
struct strtab {
	char		**s;
	size_t		n;
	size_t		cap;
	size_t		*slot;		/* index + 1, 0 empty; open addressing */
	size_t		nslots;
};

static size_t str_hash(const char *s)
{
	size_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/* The index of @s, added if new; (size_t)-1 without memory. */
static size_t intern(struct strtab *t, const char *s)
{
	size_t i;

	if (2 * (t->n + 1) > t->nslots) {
		size_t ns = t->nslots ? 2 * t->nslots : 1024;
		size_t *slot = calloc(ns, sizeof(*slot));

		if (!slot)
			return (size_t)-1;
		for (size_t k = 0; k < t->n; k++) {
			for (i = str_hash(t->s[k]) & (ns - 1); slot[i]; i = (i + 1) & (ns - 1))
				;
			slot[i] = k + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->nslots = ns;
	}
	for (i = str_hash(s) & (t->nslots - 1); t->slot[i]; i = (i + 1) & (t->nslots - 1))
		if (!strcmp(t->s[t->slot[i] - 1], s))
			return t->slot[i] - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		char **v = realloc(t->s, cap * sizeof(*v));

		if (!v)
			return (size_t)-1;
		t->s = v;
		t->cap = cap;
	}
	t->s[t->n] = strdup(s);
	if (!t->s[t->n])
		return (size_t)-1;
	t->slot[i] = ++t->n;
	return t->n - 1;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slot);
}

struct sample {
	uint64_t	time_ns;
	uint64_t	pfn;
	uint64_t	npages;
	uint64_t	offset;
	uint64_t	freed;		/* pages freed after it */
	uint32_t	stack;
	uint32_t	cpu;
};

struct freed {
	size_t		idx;
	uint64_t	lo, hi;
};

static int cmp_sample_pfn(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

static unsigned int order_of(uint64_t n)
{
	unsigned int o = 0;

	while ((1ULL << o) < n && o < 63)
		o++;
	return o;
}

static int cmp_sample_key(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	unsigned int ox = order_of(x->npages), oy = order_of(y->npages);

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return ox < oy ? -1 : ox > oy;
}

static int cmp_freed(const void *a, const void *b)
{
	const struct freed *x = a, *y = b;

	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct prof {
	struct pgtrace_reader	*r;
	const struct pagetrace_rec_stacks *st;
	struct pgtrace_kallsyms	*k;
	struct sample		*s;
	size_t			ns, caps;
	struct freed		*f;
	size_t			nf, capf;
	uint64_t		last_ns;
	uint64_t		*addrs;		/* location i + 1 is addrs[i] */
	size_t			naddrs;
};

/* The name of @addr: from the trace's symbol chunks, kallsyms, or hex. */
static const char *frame_name(const struct prof *p, uint64_t addr, char *hex)
{
	const char *n = pgtrace_reader_symbol(p->r, addr, NULL);

	if (!n && p->k)
		n = pgtrace_kallsyms_lookup(p->k, addr, NULL);
	if (n)
		return n;
	snprintf(hex, 24, "0x%016" PRIx64, addr);
	return hex;
}

static int pass1(struct prof *p)
{
	struct pgtrace_event evs[256];
	int n;

	while ((n = pgtrace_reader_next_batch(p->r, evs, 256)) > 0) {
		for (int i = 0; i < n; i++) {
			struct sample *s;

			if (evs[i].time_ns > p->last_ns)
				p->last_ns = evs[i].time_ns;
			if (!evs[i].stack)
				continue;
			if (p->ns == p->caps) {
				size_t cap = p->caps ? 2 * p->caps : 1024;

				s = realloc(p->s, cap * sizeof(*s));
				if (!s)
					return -ENOMEM;
				p->s = s;
				p->caps = cap;
			}
			s = &p->s[p->ns++];
			s->time_ns = evs[i].time_ns;
			s->pfn = evs[i].pfn;
			s->npages = evs[i].npages;
			s->offset = evs[i].offset;
			s->freed = 0;
			s->stack = evs[i].stack;
			s->cpu = evs[i].cpu;
		}
	}
	return n;
}

/* Frees and reclaims after a sampled allocation that cover its pages. */
static int pass2(struct prof *p, struct pgtrace_reader *r)
{
	struct pgtrace_event evs[256];
	uint64_t maxnp = 0;
	int n;

	for (size_t i = 0; i < p->ns; i++)
		if (p->s[i].npages > maxnp)
			maxnp = p->s[i].npages;
	while ((n = pgtrace_reader_next_batch(r, evs, 256)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pgtrace_event *e = &evs[i];
			uint64_t a = e->pfn, b = e->pfn + e->npages;
			uint64_t from = a >= maxnp ? a - maxnp + 1 : 0;
			size_t lo = 0, hi = p->ns;

			if (e->type != PGTRACE_EV_FREE && e->type != PGTRACE_EV_RECLAIM)
				continue;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (p->s[mid].pfn < from)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < p->ns && p->s[lo].pfn < b; lo++) {
				const struct sample *s = &p->s[lo];
				struct freed *f;

				if (s->pfn + s->npages <= a)
					continue;
				if (e->time_ns < s->time_ns ||
				    (e->time_ns == s->time_ns &&
				     (e->cpu != s->cpu || e->offset < s->offset)))
					continue;
				if (p->nf == p->capf) {
					size_t cap = p->capf ? 2 * p->capf : 1024;

					f = realloc(p->f, cap * sizeof(*f));
					if (!f)
						return -ENOMEM;
					p->f = f;
					p->capf = cap;
				}
				f = &p->f[p->nf++];
				f->idx = lo;
				f->lo = a > s->pfn ? a : s->pfn;
				f->hi = b < s->pfn + s->npages ? b : s->pfn + s->npages;
			}
		}
	}
	if (n < 0)
		return n;
	/* The union of each sample's freed ranges. */
	qsort(p->f, p->nf, sizeof(*p->f), cmp_freed);
	for (size_t i = 0; i < p->nf; ) {
		size_t idx = p->f[i].idx;
		uint64_t end = 0;

		for (; i < p->nf && p->f[i].idx == idx; i++) {
			uint64_t lo = p->f[i].lo > end ? p->f[i].lo : end;

			if (p->f[i].hi > lo)
				p->s[idx].freed += p->f[i].hi - lo;
			if (p->f[i].hi > end)
				end = p->f[i].hi;
		}
	}
	return 0;
}

static size_t loc_id(const struct prof *p, uint64_t addr)
{
	const uint64_t *a = bsearch(&addr, p->addrs, p->naddrs, sizeof(*a), cmp_u64);

	return a ? (size_t)(a - p->addrs) + 1 : 0;
}

/* "name [module]" -> module "[module]"; "" for the kernel itself. */
static const char *module_of(const char *name, size_t *base_len)
{
	const char *sp = strrchr(name, ' ');

	if (sp && sp[1] == '[' && name[strlen(name) - 1] == ']') {
		*base_len = sp - name;
		return sp + 1;
	}
	*base_len = strlen(name);
	return "";
}

static void value_type(struct buf *b, unsigned int f, struct strtab *t, const char *type,
		       const char *unit)
{
	struct buf m = { 0 };

	pb_uint(&m, 1, intern(t, type));
	pb_uint(&m, 2, intern(t, unit));
	pb_msg(b, f, &m);
	free(m.p);
}

static int encode(struct prof *p, const struct pagetrace_header *h, struct buf *out)
{
	const uint64_t rate = p->st->rate;
	struct strtab t = { 0 };
	struct buf m = { 0 }, pk = { 0 }, sub = { 0 };
	size_t nmaps = 0, unknown_loc;
	struct { size_t name; uint64_t lo, hi; } maps[64];
	size_t *loc_map = NULL, *loc_fn = NULL;
	char hex[24];
	int ret = 0;

	if (intern(&t, "") == (size_t)-1)
		return -ENOMEM;
	value_type(out, 1, &t, "alloc_samples", "count");
	value_type(out, 1, &t, "alloc_pages", "pages");
	value_type(out, 1, &t, "inuse_samples", "count");
	value_type(out, 1, &t, "inuse_pages", "pages");

	/* Samples: one per stack id and order, values summed. */
	qsort(p->s, p->ns, sizeof(*p->s), cmp_sample_key);
	for (size_t i = 0; i < p->ns; ) {
		uint32_t stack = p->s[i].stack;
		unsigned int order = order_of(p->s[i].npages);
		double v[4] = { 0 };
		const uint64_t *frames;
		int depth;

		for (; i < p->ns && p->s[i].stack == stack &&
		       order_of(p->s[i].npages) == order; i++) {
			const struct sample *s = &p->s[i];
			uint64_t w = s->npages > rate ? s->npages : rate;
			double f = (double)w / s->npages;
			uint64_t inuse = s->npages - (s->freed < s->npages ? s->freed : s->npages);

			v[0] += f;
			v[1] += w;
			v[2] += inuse ? f : 0;
			v[3] += f * inuse;
		}
		depth = pgtrace_reader_stack(p->r, stack, &frames, NULL);
		if (depth > 0)
			for (int j = 0; j < depth; j++)
				pb_varint(&pk, loc_id(p, frames[j]));
		else
			pb_varint(&pk, p->naddrs + 1);
		pb_msg(&sub, 1, &pk);
		for (int j = 0; j < 4; j++)
			pb_varint(&pk, (uint64_t)llround(v[j]));
		pb_msg(&sub, 2, &pk);
		/* Label order = N */
		pb_uint(&pk, 1, intern(&t, "order"));
		pb_varint(&pk, 3 << 3);		/* num, 0 included */
		pb_varint(&pk, order);
		pb_msg(&sub, 3, &pk);
		pb_msg(out, 2, &sub);
	}

	/* Mappings: the kernel and each module, over the addresses they hold. */
	loc_map = calloc(p->naddrs + 1, sizeof(*loc_map));
	loc_fn = calloc(p->naddrs + 1, sizeof(*loc_fn));
	if (!loc_map || !loc_fn) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->naddrs; i++) {
		const char *name = frame_name(p, p->addrs[i], hex);
		size_t base, fn, mi;
		const char *mod = module_of(name, &base);
		char *fname = strndup(name, base);

		if (!fname) {
			ret = -ENOMEM;
			goto out;
		}
		fn = intern(&t, fname);
		free(fname);
		mi = intern(&t, *mod ? mod : "vmlinux");
		for (loc_map[i] = 0; loc_map[i] < nmaps && maps[loc_map[i]].name != mi;
		     loc_map[i]++)
			;
		if (loc_map[i] == nmaps) {
			/* More than 64 modules: the rest share the last mapping. */
			if (nmaps == sizeof(maps) / sizeof(maps[0])) {
				loc_map[i] = nmaps - 1;
			} else {
				maps[nmaps].name = mi;
				maps[nmaps].lo = p->addrs[i];
				maps[nmaps].hi = p->addrs[i] + 1;
				nmaps++;
			}
		}
		if (p->addrs[i] < maps[loc_map[i]].lo)
			maps[loc_map[i]].lo = p->addrs[i];
		if (p->addrs[i] >= maps[loc_map[i]].hi)
			maps[loc_map[i]].hi = p->addrs[i] + 1;
		loc_fn[i] = fn;
	}
	for (size_t i = 0; i < nmaps; i++) {
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, maps[i].lo);
		pb_uint(&m, 3, maps[i].hi);
		pb_uint(&m, 5, maps[i].name);
		pb_uint(&m, 7, 1);	/* has_functions */
		pb_msg(out, 3, &m);
	}
	/* Locations, one line each; functions numbered as their names. */
	for (size_t i = 0; i < p->naddrs; i++) {
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, loc_map[i] + 1);
		pb_uint(&m, 3, p->addrs[i]);
		pb_uint(&sub, 1, loc_fn[i]);
		pb_msg(&m, 4, &sub);
		pb_msg(out, 4, &m);
	}
	unknown_loc = p->naddrs + 1;
	pb_uint(&m, 1, unknown_loc);
	pb_uint(&sub, 1, intern(&t, "[unknown stack]"));
	pb_msg(&m, 4, &sub);
	pb_msg(out, 4, &m);
	/* Functions: id = string index of the name (unique, never 0). */
	{
		bool *done = calloc(t.n + 64, sizeof(*done));

		if (!done) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i <= p->naddrs; i++) {
			size_t fn = i < p->naddrs ? loc_fn[i] : intern(&t, "[unknown stack]");

			if (fn >= t.n + 64 || done[fn])
				continue;
			done[fn] = true;
			pb_uint(&m, 1, fn);
			pb_uint(&m, 2, fn);
			pb_uint(&m, 3, fn);
			pb_msg(out, 5, &m);
		}
		free(done);
	}
	pb_uint(out, 9, h->start_real_ns);
	pb_uint(out, 10, p->last_ns > h->start_ns ? p->last_ns - h->start_ns : 0);
	value_type(out, 11, &t, "pages", "pages");
	pb_uint(out, 12, rate);
	{
		char c[160];

		snprintf(c, sizeof(c), "pagetrace: kernel %s, 1 allocation sampled per %" PRIu64
			 " pages; values estimate all pages", pgtrace_reader_kernel_release(p->r), rate);
		pb_uint(out, 13, intern(&t, c));
	}
	pb_uint(out, 14, intern(&t, "alloc_pages"));
	/* The string table last: every string is in by now. */
	for (size_t i = 0; i < t.n; i++)
		pb_bytes(out, 6, t.s[i], strlen(t.s[i]));
	if (out->oom || m.oom || sub.oom || pk.oom)
		ret = -ENOMEM;
out:
	free(loc_map);
	free(loc_fn);
	free(m.p);
	free(sub.p);
	free(pk.p);
	strtab_free(&t);
	return ret;
}

static uint32_t crc32_le(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t table[256];

	if (!table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* gzip (RFC 1952) of @in with deflate stored blocks (RFC 1951, BTYPE 00). */
static void gzip_stored(struct buf *out, const struct buf *in)
{
	static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255 };
	size_t off = 0;
	unsigned char t[8];
	uint32_t crc = crc32_le(0, in->p, in->len);

	put(out, hdr, sizeof(hdr));
	do {
		size_t n = in->len - off > 65535 ? 65535 : in->len - off;

		t[0] = off + n == in->len;	/* BFINAL */
		t[1] = n & 0xff;
		t[2] = n >> 8;
		t[3] = ~n & 0xff;
		t[4] = (~n >> 8) & 0xff;
		put(out, t, 5);
		put(out, in->p + off, n);
		off += n;
	} while (off < in->len);
	for (int i = 0; i < 4; i++)
		t[i] = crc >> (8 * i);
	for (int i = 0; i < 4; i++)
		t[4 + i] = (uint32_t)in->len >> (8 * i);
	put(out, t, 8);
}

static void pprof_usage(FILE *f)
{
	fprintf(f, "usage: pagetrace pprof FILE -o OUT.pb.gz [--kallsyms PATH]\n"
		   "  the sampled call stacks of FILE as a pprof profile (go tool pprof)\n"
		   "  -o, --output OUT     the profile, gzipped profile.proto\n"
		   "  -k, --kallsyms PATH  name frames with this kallsyms file (checked\n"
		   "                       against the trace) when FILE has no symbols;\n"
		   "                       default /proc/kallsyms if the trace is of the\n"
		   "                       running kernel, else addresses in hex\n");
}

/* Frame names when the trace has none: --kallsyms, or this kernel's own. */
static int pick_kallsyms(struct prof *p, const char *kallsyms)
{
	struct utsname u;

	if (pgtrace_reader_counters(p->r)->symbols)
		return 0;
	if (kallsyms)
		return open_kallsyms(kallsyms, p->st, &p->k, false) ? -1 : 0;
	if (!uname(&u) && !strcmp(u.release, pgtrace_reader_kernel_release(p->r)) &&
	    !open_kallsyms("/proc/kallsyms", p->st, &p->k, true))
		return 0;
	fprintf(stderr, "pagetrace: the trace has no symbols (pagetrace symbolize): "
		"functions are named by address\n");
	return 0;
}

int cmd_pprof(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	const char *path, *outpath = NULL, *kallsyms = NULL;
	struct buf pb = { 0 }, gz = { 0 };
	struct prof p = { 0 };
	struct pgtrace_reader *r2 = NULL;
	int c, fd, fd2 = -1, ofd, ret = EXIT_TRACE, err;

	while ((c = getopt_long(argc, argv, "o:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outpath = optarg;
			break;
		case 'k':
			kallsyms = optarg;
			break;
		case 'h':
			pprof_usage(stdout);
			return 0;
		default:
			pprof_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !outpath || !strcmp(argv[optind], "-")) {
		pprof_usage(stderr);
		return EXIT_USAGE;
	}
	path = argv[optind];
	p.r = open_trace(path, 0, &fd);
	if (!p.r)
		return EXIT_TRACE;
	p.st = pgtrace_reader_stacks(p.r);
	if (!p.st) {
		fprintf(stderr, "pagetrace: %s: the trace has no call stacks "
			"(PAGETRACE_FLAG_STACKS)\n", path);
		goto out;
	}
	err = pass1(&p);
	if (err < 0) {
		trace_error(path, p.r, err);
		goto out;
	}
	qsort(p.s, p.ns, sizeof(*p.s), cmp_sample_pfn);
	r2 = open_trace(path, 0, &fd2);
	if (!r2)
		goto out;
	err = pass2(&p, r2);
	if (err < 0) {
		trace_error(path, r2, err);
		goto out;
	}
	if (pgtrace_reader_stack_addrs(p.r, &p.addrs, &p.naddrs) || pick_kallsyms(&p, kallsyms))
		goto out;
	if (encode(&p, pgtrace_reader_header(p.r), &pb) || (gzip_stored(&gz, &pb), gz.oom)) {
		fprintf(stderr, "pagetrace: %s\n", strerror(ENOMEM));
		goto out;
	}
	ofd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (ofd < 0 || write(ofd, gz.p, gz.len) != (ssize_t)gz.len || close(ofd)) {
		fprintf(stderr, "pagetrace: %s: %s\n", outpath, strerror(errno));
		goto out;
	}
	printf("%s: %zu sampled allocations, %zu frame addresses (%zu bytes)\n", outpath,
	       p.ns, p.naddrs, gz.len);
	ret = 0;
out:
	free(pb.p);
	free(gz.p);
	free(p.s);
	free(p.f);
	free(p.addrs);
	pgtrace_kallsyms_close(p.k);
	close_trace(r2, fd2);
	close_trace(p.r, fd);
	return ret;
}
