// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol chunks and kallsyms: chunks read anywhere after the header (not
 * counted as chunks, no seq), every broken entry rejected at its offset,
 * kallsyms lookups, the anchor check, chunks built from kallsyms read
 * back, and pagetrace symbolize.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "synth.h"

#define SEC	1000000000ULL

static const char kallsyms[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t helper\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 T __alloc_pages\n"
	"ffffffff81004000 W weak_fn\n"
	"ffffffffc0001000 t mod_fn\t[mymod]\n"
	"ffffffffc0000000 t mod_first\t[mymod]\n"
	"not a line\n";

static struct pgtrace_kallsyms *load(const char *text, int *err)
{
	struct pgtrace_kallsyms *k;
	FILE *f = tmpfile();

	fputs(text, f);
	fflush(f);
	lseek(fileno(f), 0, SEEK_SET);
	*err = pgtrace_kallsyms_open(&k, fileno(f));
	fclose(f);
	return k;
}

TEST(kallsyms_lookup)
{
	struct pagetrace_rec_stacks st = { .anchor_addr = SYNTH_ANCHOR_ADDR,
					   .anchor_name = SYNTH_ANCHOR_NAME };
	struct pgtrace_kallsyms *k;
	uint64_t off = 7;
	int err;

	k = load(kallsyms, &err);
	ASSERT_EQ(0, err);
	EXPECT_STREQ("_stext", pgtrace_kallsyms_lookup(k, 0xffffffff81000010ULL, &off));
	EXPECT_EQ(0x10, off);
	EXPECT_STREQ("helper", pgtrace_kallsyms_lookup(k, 0xffffffff81002abcULL, &off));
	EXPECT_EQ(0x1abc, off);
	EXPECT_STREQ("__alloc_pages", pgtrace_kallsyms_lookup(k, 0xffffffff81003000ULL, &off));
	EXPECT_EQ(0, off);
	EXPECT_STREQ("weak_fn", pgtrace_kallsyms_lookup(k, 0xffffffff81004001ULL, NULL));
	EXPECT_STREQ("mod_first [mymod]", pgtrace_kallsyms_lookup(k, 0xffffffffc0000040ULL, NULL));
	EXPECT_STREQ("mod_fn [mymod]", pgtrace_kallsyms_lookup(k, 0xffffffffc0001040ULL, NULL));
	EXPECT_EQ(NULL, pgtrace_kallsyms_lookup(k, 0xffffffff80000000ULL, NULL));
	EXPECT_EQ(0, pgtrace_kallsyms_check(k, &st));
	st.anchor_addr += 0x200000;
	EXPECT_EQ(-ESTALE, pgtrace_kallsyms_check(k, &st));
	memcpy(st.anchor_name, "no_such_fn", 11);
	EXPECT_EQ(-ENOENT, pgtrace_kallsyms_check(k, &st));
	pgtrace_kallsyms_close(k);

	/* Read without the right to see addresses: all zero. */
	k = load("0000000000000000 T _stext\n0000000000000000 t helper\n", &err);
	EXPECT_EQ(-EPERM, err);
	EXPECT_EQ(NULL, k);
	k = load("hello\n", &err);
	EXPECT_EQ(-ENODATA, err);
}

/* A stacks trace with @nsym symbol chunks after (or between) its chunks. */
static void sym_trace(struct synth *s, bool middle)
{
	static const uint64_t fr[] = { 0xffffffff81003010ULL, 0xffffffffc0001008ULL };
	static const uint64_t addrs[] = { 0xffffffff81003010ULL, 0xffffffffc0001008ULL };
	static const char *const names[] = { "__alloc_pages", "mod_fn [mymod]" };
	static const uint64_t offs[] = { 0x10, 8 };

	synth_init(s, 2, 1024, PAGETRACE_FLAG_STACKS);
	synth_stack_def(s, 0, 5, 2, false, fr);
	synth_sample(s, 0, SEC, 5, 0x100, 1);
	synth_flush_all(s);
	if (middle)
		synth_symbols(s, 1, addrs, names, offs);
	synth_event(s, 0, SEC + 10, PAGETRACE_EV_FREE, 0x100, 1);
	synth_event(s, 1, SEC + 10, PAGETRACE_EV_FREE, 0x200, 1);
	synth_flush_all(s);
	if (middle)
		synth_symbols(s, 1, addrs + 1, names + 1, offs + 1);
	else
		synth_symbols(s, 2, addrs, names, offs);
}

TEST(symbol_chunks)
{
	for (int middle = 0; middle < 2; middle++) {
		struct pgtrace_event *evs;
		struct pgtrace_reader *r;
		struct synth s;
		uint64_t off;
		char why[256];
		size_t n;

		sym_trace(&s, middle);
		ASSERT_EQ(0, pgtrace_reader_open_mem(&r, s.buf, s.len, 0));
		ASSERT_EQ(0, synth_read_all(r, 4, &evs, &n)) TH_LOG("%s", pgtrace_reader_error(r));
		EXPECT_EQ(-1, synth_compare(&s, evs, n, true, why, sizeof(why))) TH_LOG("%s", why);
		EXPECT_STREQ("__alloc_pages", pgtrace_reader_symbol(r, 0xffffffff81003010ULL, &off));
		EXPECT_EQ(0x10, off);
		EXPECT_STREQ("mod_fn [mymod]", pgtrace_reader_symbol(r, 0xffffffffc0001008ULL, &off));
		EXPECT_EQ(8, off);
		EXPECT_EQ(NULL, pgtrace_reader_symbol(r, 0xffffffff81003011ULL, &off));
		EXPECT_EQ(3, pgtrace_reader_counters(r)->chunks);
		EXPECT_EQ(middle ? 2 : 1, pgtrace_reader_counters(r)->symbol_chunks);
		EXPECT_EQ(2, pgtrace_reader_counters(r)->symbols);
		EXPECT_EQ(s.len, pgtrace_reader_counters(r)->bytes);
		free(evs);
		pgtrace_reader_close(r);
		synth_free(&s);
	}
}

static int drain(const struct synth *s, char *msg, size_t len)
{
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	int ret = pgtrace_reader_open_mem(&r, s->buf, s->len, 0);

	if (!ret)
		while ((ret = pgtrace_reader_next(r, &ev)) > 0)
			;
	snprintf(msg, len, "%s", r ? pgtrace_reader_error(r) : "");
	pgtrace_reader_close(r);
	return ret;
}

TEST(bad_symbol_chunks)
{
	static const struct {
		unsigned int hdr_field;	/* offset in the chunk header, or 0 */
		uint64_t hdr_value;
		unsigned int word;	/* else: word index to set */
		uint64_t value;
		unsigned int at;	/* error offset from the chunk, bytes */
		const char *why;
	} cases[] = {
		{ 4, 0x1, 0, 0, 0, "cpu 1" },
		{ 6, PAGETRACE_CHUNK_SYMBOLS | PAGETRACE_CHUNK_FLUSHED, 0, 0, 0, "flags 0x5" },
		{ 16, 3, 0, 0, 0, "seq 3" },
		{ 24, 1, 0, 0, 0, "lost 1" },
		{ 8, 2, 0, 0, 0, "need at least 3" },
		{ 8, 4, 0, 0, 32 + 24, "cut off by the end" },
		{ 8, 2 + 2 + 1, 0, 0, 32 + 24, "cut off by the end" },
		{ 0, 0, 1, 0, 32 + 8, "length 0" },
		{ 0, 0, 1, 513, 32 + 8, "length 513" },
		{ 0, 0, 1, 4 | 1ULL << 50, 32 + 8, "reserved bits" },
		{ 0, 0, 1, 5, 32 + 16 + 4, "NUL byte inside" },
		{ 0, 0, 1, 3, 32 + 16 + 3, "not NUL-padded" },
		{ 0, 0, 2, 0x41410041, 32 + 16 + 1, "NUL byte inside" },
		{ 0, 0, 3, 0xffffffff81000000ULL, 32 + 24, "named a second time" },
		{ 0, 0, 1, 40, 32, "overruns its chunk" },
	};
	char msg[256], want[64];

	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		/* Two entries: "AAAA" at _stext, "BB" at _stext + 1. */
		uint64_t w[] = { SYNTH_ANCHOR_ADDR, 4, 0x41414141, SYNTH_ANCHOR_ADDR + 1, 2,
				 0x4242 };
		struct synth s;
		size_t c;

		synth_init(&s, 1, 1024, PAGETRACE_FLAG_STACKS);
		c = s.len;
		if (!cases[i].hdr_field)
			w[cases[i].word] = cases[i].value;
		synth_put_chunk(&s, 0, PAGETRACE_CHUNK_SYMBOLS, 0, 0, w, ARRAY_SIZE(w));
		if (cases[i].hdr_field) {
			uint64_t v = htole64(cases[i].hdr_value);

			memcpy(s.buf + c + cases[i].hdr_field, &v,
			       cases[i].hdr_field == 6 || cases[i].hdr_field == 4 ? 2 :
			       cases[i].hdr_field == 8 ? 4 : 8);
		}
		EXPECT_EQ(-EBADMSG, drain(&s, msg, sizeof(msg))) TH_LOG("case %u: %s", i, msg);
		snprintf(want, sizeof(want), "offset %zu: ", c + cases[i].at);
		EXPECT_EQ(0, strncmp(msg, want, strlen(want))) TH_LOG("case %u: %s", i, msg);
		EXPECT_NE(NULL, strstr(msg, cases[i].why)) TH_LOG("case %u: %s", i, msg);
		synth_free(&s);
	}
}

/*
 * A trace of one event with the symbol chunks @buf appended, opened in *@r
 * and read to its end (the reader takes the symbols in as it goes): "", or
 * what went wrong.
 */
static const char *read_with_symbols(struct synth *s, const void *buf, size_t len,
				     struct pgtrace_reader **r)
{
	struct pgtrace_event ev;

	synth_init(s, 1, 1024, PAGETRACE_FLAG_STACKS);
	synth_event(s, 0, SEC, PAGETRACE_EV_ALLOC, 1, 1);
	synth_flush_all(s);
	synth_put(s, buf, len);
	if (pgtrace_reader_open_mem(r, s->buf, s->len, 0))
		return "the reader refused the trace";
	if (pgtrace_reader_next(*r, &ev) != 1)
		return "no first event";
	if (pgtrace_reader_next(*r, &ev) != 0)
		return pgtrace_reader_error(*r);
	return "";
}

/* pgtrace_symbol_chunks() from kallsyms, read back by the reader. */
TEST(build_chunks)
{
	const uint64_t addrs[] = { 0xffffffffc0001008ULL, 0xffffffff81003010ULL,
				   0xffffffff81003010ULL, 0x1000 };
	struct pgtrace_kallsyms *k;
	struct pgtrace_reader *r;
	struct synth s;
	uint64_t off;
	size_t len;
	void *buf;
	int err;

	k = load(kallsyms, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(2, pgtrace_symbol_chunks(k, addrs, ARRAY_SIZE(addrs), &buf, &len));
	EXPECT_EQ(32 + 8 * (2 + 2 + 2 + 2), len);
	ASSERT_STREQ("", read_with_symbols(&s, buf, len, &r));
	EXPECT_STREQ("__alloc_pages", pgtrace_reader_symbol(r, 0xffffffff81003010ULL, &off));
	EXPECT_EQ(0x10, off);
	EXPECT_STREQ("mod_fn [mymod]", pgtrace_reader_symbol(r, 0xffffffffc0001008ULL, &off));
	EXPECT_EQ(8, off);
	pgtrace_reader_close(r);
	synth_free(&s);
	free(buf);
	pgtrace_kallsyms_close(k);
}

TEST(cli_symbolize)
{
	static const uint64_t fr[] = { 0xffffffff81003010ULL, 0xffffffffc0001008ULL };
	char dir[] = "/tmp/pt-symXXXXXX", cmd[1024], out[4096], trace[64], ks[64], bad[64];
	struct pgtrace_reader *r;
	struct pgtrace_event ev;
	struct synth s;
	int fd;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(trace, sizeof(trace), "%s/t.bin", dir);
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	snprintf(bad, sizeof(bad), "%s/other", dir);
	synth_init(&s, 1, 1024, PAGETRACE_FLAG_STACKS);
	synth_stack_def(&s, 0, 5, 2, false, fr);
	synth_sample(&s, 0, SEC, 5, 0x100, 1);
	synth_flush_all(&s);
	synth_write_file(trace, s.buf, s.len);
	synth_write_file(ks, kallsyms, strlen(kallsyms));
	/* Another boot: everything 2 MiB further. */
	synth_write_file(bad, "ffffffff81200000 T _stext\nffffffff81203000 T __alloc_pages\n", 59);

	snprintf(cmd, sizeof(cmd), "%s symbolize --kallsyms %s %s 2>&1", PAGETRACE_BIN, bad,
		 trace);
	EXPECT_EQ(1, WEXITSTATUS(synth_run(cmd, out, sizeof(out)))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "does not match the traced kernel")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s symbolize --kallsyms %s %s 2>&1", PAGETRACE_BIN, ks,
		 trace);
	EXPECT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "named 2 of 2")) TH_LOG("%s", out);
	/* Twice is refused. */
	EXPECT_EQ(1, WEXITSTATUS(synth_run(cmd, out, sizeof(out)))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "has symbols already")) TH_LOG("%s", out);

	fd = open(trace, O_RDONLY);
	ASSERT_EQ(0, pgtrace_reader_open_fd(&r, fd, 0));
	EXPECT_EQ(1, pgtrace_reader_next(r, &ev));
	EXPECT_EQ(5, ev.stack);
	EXPECT_EQ(0, pgtrace_reader_next(r, &ev)) TH_LOG("%s", pgtrace_reader_error(r));
	EXPECT_STREQ("__alloc_pages", pgtrace_reader_symbol(r, fr[0], NULL));
	EXPECT_STREQ("mod_fn [mymod]", pgtrace_reader_symbol(r, fr[1], NULL));
	pgtrace_reader_close(r);
	close(fd);

	/* dump -S shows the frames with their names. */
	snprintf(cmd, sizeof(cmd), "%s dump -S %s 2>&1", PAGETRACE_BIN, trace);
	EXPECT_EQ(0, synth_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "stack=5")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "__alloc_pages+0x10")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "mod_fn [mymod]+0x8")) TH_LOG("%s", out);

	/* No stacks: refused. */
	synth_free(&s);
	synth_init(&s, 1, 1024, 0);
	synth_event(&s, 0, SEC, PAGETRACE_EV_ALLOC, 1, 1);
	synth_flush_all(&s);
	synth_write_file(trace, s.buf, s.len);
	snprintf(cmd, sizeof(cmd), "%s symbolize --kallsyms %s %s 2>&1", PAGETRACE_BIN, ks,
		 trace);
	EXPECT_EQ(1, WEXITSTATUS(synth_run(cmd, out, sizeof(out)))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "no call stacks")) TH_LOG("%s", out);
	synth_free(&s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* A lookup of the test's: one function at 0x1000, its name 600 bytes long. */
static const char *long_name_lookup(void *arg, uint64_t addr, uint64_t *offset)
{
	static char name[600];

	(void)arg;
	memset(name, 'f', sizeof(name) - 1);
	*offset = addr - 0x1000;
	return addr >= 0x1000 ? name : NULL;
}

/*
 * pgtrace_symbol_chunks_by(): the caller's lookup names the addresses; a
 * name is cut to PAGETRACE_SYM_NAME_MAX, an offset past the field's 32
 * bits leaves the address out, one the lookup does not know too.
 */
TEST(build_chunks_by)
{
	const uint64_t addrs[] = { 0x1010, 0x1000 + (1ULL << 32), 0x10 };
	struct pgtrace_reader *r;
	struct synth s;
	uint64_t off;
	size_t len;
	void *buf;

	ASSERT_EQ(1, pgtrace_symbol_chunks_by(long_name_lookup, NULL, addrs, ARRAY_SIZE(addrs),
					 &buf, &len));
	EXPECT_EQ(32 + 8 * (2 + PAGETRACE_SYM_NAME_MAX / 8), len);
	ASSERT_STREQ("", read_with_symbols(&s, buf, len, &r));
	ASSERT_NE(NULL, pgtrace_reader_symbol(r, 0x1010, &off));
	EXPECT_EQ(PAGETRACE_SYM_NAME_MAX, strlen(pgtrace_reader_symbol(r, 0x1010, &off)));
	EXPECT_EQ(0x10, off);
	pgtrace_reader_close(r);
	synth_free(&s);
	free(buf);
}

TEST_HARNESS_MAIN
