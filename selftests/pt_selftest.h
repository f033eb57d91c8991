/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the pagetrace selftests: loading pagetrace.ko and
 * setting its parameters, running pagetrace_gt.ko's operations (pages of
 * known fate), making page traffic, reading and checking the stream
 * (collecting a whole session, the raw header and chunks, per-CPU
 * counts), and reading PFNs from /proc/self/pagemap.
 */
#ifndef PT_SELFTEST_H
#define PT_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/pagetrace.h>
#include "libpagetrace.h"

#define PT_GT_DIR	"/sys/kernel/debug/pagetrace_gt"

/*
 * How late past two flush periods an event may reach a waiting reader:
 * the flush timer delivers after about flush_ms (255-280 ms for 250 in
 * the logs), but a TCG guest on a busy host can stall for a good part of
 * a second.  A reader that is never woken still fails.
 */
#define PT_ST_LATE_MS	3000

/* A whole session, decoded. */
struct pt_st_trace {
	struct pagetrace_header	hdr;
	unsigned int		backend;	/* from the session record */
	unsigned int		clock_error_ns;	/* likewise */
	unsigned int		uncovered;	/* likewise */
	unsigned int		attach_us;	/* likewise */
	uint64_t		snap_end_ns;	/* the start's counters: the walk ends, 0 if none */
	struct pgtrace_event		*ev;
	size_t			nr;
	void			*raw;		/* the stream as read */
	size_t			raw_len;
	char			err[256];	/* why collecting failed */
};

/* Read @fd to its end into a malloc'ed buffer of *@len bytes, or NULL. */
void *pt_st_read_all(int fd, size_t *len);

/* Stop the session on @dev, read it to the end and decode it: 0 or -errno. */
int pt_st_collect(int dev, struct pt_st_trace *t);
void pt_st_trace_free(struct pt_st_trace *t);

/* Load pagetrace_gt.ko ($PAGETRACE_GT_KO, default ./pagetrace_gt.ko). */
int pt_st_gt_load(void);
/* Run one of its operations; its report goes to @report.  0 or -errno. */
int pt_st_gt_run(const char *op, char *report, size_t len);

/* Choose the backend (hook=) of the next session: 0 or -errno. */
int pt_st_set_hook(const char *hook);
/*
 * Write @value to /sys/module/pagetrace/parameters/@name: 0, or -errno of
 * the open or write (a value the module refuses is -EINVAL).
 */
int pt_st_set_param(const char *name, const char *value);

/* pt_st_write_file() - write @s to the file @path (sysfs, procfs): 0 or -errno. */
int pt_st_write_file(const char *path, const char *s);

/* pt_st_env_long() - the environment variable @name as a number, or @def. */
long pt_st_env_long(const char *name, long def);

/* pt_st_vmstat() - the counter @name of /proc/vmstat, or 0 without it. */
uint64_t pt_st_vmstat(const char *name);

/* pt_st_cpu1_set() - CPU 1 online (@on) or offline: 0 or -errno. */
#define PT_ST_CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"
int pt_st_cpu1_set(bool on);
/*
 * pt_st_cpu_unplug_hangs() - why taking a CPU down under load hangs this
 * kernel whether or not pagetrace is loaded, or NULL.  A CPU hotplug
 * test skips with it instead of hanging the machine for the tests after.
 */
const char *pt_st_cpu_unplug_hangs(void);
/* The same for a parameter of any @module (pagetrace_gt.ko's, say). */
int pt_st_set_module_param(const char *module, const char *name,
			   const char *value);

/*
 * The raw stream, for tests that check the words the module wrote:
 * pt_st_header_record() finds the first header record of @type (its
 * payload, *@size bytes) or returns NULL; pt_st_next_chunk() steps *@off
 * (0 to start) from chunk to chunk: 1 with *@c set, 0 at the end, -1 if a
 * chunk runs past @len.
 */
const void *pt_st_header_record(const void *stream, size_t len, uint32_t type,
				uint32_t *size);
int pt_st_next_chunk(const void *stream, size_t len, size_t *off,
		     const struct pagetrace_chunk **c);

/*
 * Kernel addresses, as root sees them: pt_st_ksym() gives [start, end) of
 * the function @name from /proc/kallsyms (end: the next symbol's
 * address), pt_st_module_text() the span of a loaded module from
 * /proc/modules.  0 or -ENOENT.
 */
int pt_st_ksym(const char *name, uint64_t *start, uint64_t *end);
int pt_st_module_text(const char *mod, uint64_t *start, uint64_t *end);
/*
 * Free the pages munmap() left in the CPUs' LRU batches: drain every
 * CPU's (mbind() with MPOL_MF_MOVE), then write 1 to drop_caches.
 * 0 or -errno.
 */
int pt_st_drain_lru(void);
/* Run on @cpu only: 0 or -errno. */
int pt_st_pin_cpu(int cpu);
/*
 * fork() for a child that loops until it is killed: the child gets
 * SIGKILL when the test process dies, so one that the harness kills at
 * its timeout leaves no load behind it (a memory offline loop left
 * running hangs CPU hotplug in the tests after it).  As fork().
 */
pid_t pt_st_fork_tied(void);
/* The PFN behind a virtual address of ours: 0, -ENOENT if not present. */
int pt_st_pagemap_pfn(const void *addr, uint64_t *pfn);
uint64_t pt_st_mono_ns(void);
/* A CLOCK_MONOTONIC time on the trace clock, by the header's pair. */
uint64_t pt_st_mono_to_trace(const struct pagetrace_header *h, uint64_t mono);

/*
 * Marks on the trace clock itself, for windows that must be exact: the
 * header's pair maps CLOCK_MONOTONIC to the trace clock only at the
 * session start, and where the kernel has marked the TSC unstable (TCG,
 * often) local_clock() follows CLOCK_MONOTONIC from tick to tick only,
 * straying from it by milliseconds in between.  pt_st_mark() faults in a
 * fresh anonymous page (left mapped: one page per mark, never unmapped)
 * and notes where it is: 0 or -errno.  Once the trace is collected,
 * pt_st_mark_time() is the time of that page's allocation in it, 0 if
 * the trace does not hold it.  If the page has moved since (compaction
 * migrates it: its old PFN freed, and soon reused), the allocation is the
 * old PFN's last before the move allocated the new one.  A window between
 * two marks taken on one CPU holds every event that CPU recorded between
 * them.
 */
struct pt_st_mark {
	const char	*addr;
	uint64_t	pfn;
};
int pt_st_mark(struct pt_st_mark *m);
uint64_t pt_st_mark_time(const struct pt_st_trace *t, const struct pt_st_mark *m);

/*
 * Loading and unloading pagetrace.ko ($PAGETRACE_KO, else ./pagetrace.ko
 * if present, else modprobe pagetrace): 0 or -errno; @params is the
 * module's parameters, "name=value" separated by spaces, or NULL.  pt_st_mod_reload() unloads it if loaded,
 * loads it with @params and waits for /dev/pagetrace.
 */
/* $PAGETRACE_KO, else ./pagetrace.ko if there is one, else NULL (modprobe). */
const char *pt_st_ko_path(void);
int pt_st_mod_load(const char *params);
int pt_st_mod_unload(void);
int pt_st_mod_reload(const char *params);
int pt_st_mod_loaded(void);

/*
 * The kernel log: pt_st_kmsg_open() returns an fd positioned at the end;
 * pt_st_kmsg_splats() reads what was logged since and copies the lines
 * that show a kernel problem (BUG, WARNING, KASAN, lockdep, sleeping in
 * atomic context, suspicious RCU usage, Oops, Call Trace) to @out.
 * Returns how many there were.
 */
int pt_st_kmsg_open(void);
int pt_st_kmsg_splats(int fd, char *out, size_t len);

/* PAGETRACE_IOC_STATS for @nr CPUs: 0 or -errno; @missed may be NULL. */
int pt_st_stats(int dev, struct pagetrace_cpu_stats *cpus, unsigned int nr,
		uint64_t *missed);

/* ------------------------------------------------ the module's parameters */

/* pagetrace.ko's default parameters (module/session.c). */
#define PT_ST_DEF_BUF_SIZE	65536
#define PT_ST_DEF_NR_BUFS	16
#define PT_ST_DEF_FLUSH_MS	250

/*
 * pt_st_get_param_str() - read /sys/module/pagetrace/parameters/@name into
 * @buf (@len bytes, NUL-terminated, its newline kept).
 * Returns the number of bytes read (0 for an empty file), or -errno.
 */
int pt_st_get_param_str(const char *name, char *buf, size_t len);

/*
 * pt_st_get_param() - pagetrace's parameter @name as a number (strtol(),
 * base 0).  Returns it, or -1 if the file cannot be read or is empty.
 */
long pt_st_get_param(const char *name);

/*
 * pt_st_mod_live() - whether /sys/module/pagetrace/initstate says "live"
 * (pt_st_mod_loaded() only asks whether the file exists, as it does while
 * the module is coming or going).  Returns 1 if live, else 0.
 */
int pt_st_mod_live(void);

/*
 * pt_st_wait_dev() - wait up to @ms milliseconds, polling every 10 ms, for
 * /dev/pagetrace to exist (@present) or to be gone (!@present).
 * Returns true once it is so (at once if it already is), false on timeout.
 */
bool pt_st_wait_dev(bool present, int ms);

/*
 * pt_st_wait_recording() - wait up to @ms milliseconds, polling every
 * 10 ms, for a session (another process's, e.g. a recorder's) to record:
 * pagetrace.ko's read-only parameter "recording", set once every probe is
 * attached and every CPU writes.  A probe in /sys/kernel/debug/kprobes is
 * no sign of it: the probes are attached before any CPU writes.  Returns
 * true once it records.
 */
bool pt_st_wait_recording(int ms);

/*
 * pt_st_mod_is_default() - whether pagetrace.ko is live with buf_size,
 * nr_bufs and flush_ms at PT_ST_DEF_*.  Returns true if so.
 */
bool pt_st_mod_is_default(void);

/*
 * pt_st_mod_ensure_default() - unless pt_st_mod_is_default(), unload
 * pagetrace.ko if live (once: an open session makes this fail with
 * -EWOULDBLOCK, unlike pt_st_mod_reload(), which waits a second) and load
 * it with no parameters; then wait up to 2 s for /dev/pagetrace.
 * Returns 0 if the module is then live with its defaults, -ENODEV if not,
 * or the -errno of a failed unload or load.
 */
int pt_st_mod_ensure_default(void);

/*
 * pt_st_open_dev() - open /dev/pagetrace with @flags for a session without
 * the memory map at start: writes 0 to the snapshot parameter first,
 * ignoring a failure (an unprivileged caller's).  Whoever calls it sets
 * snapshot back to 1 when done.
 * Returns the fd, or -1 with errno set by open().
 */
int pt_st_open_dev(int flags);

/* ------------------------------------------------------------ page traffic */

/*
 * pt_st_touch_and_free() - map @len bytes of fresh anonymous memory
 * (MADV_NOHUGEPAGE: single pages, so that events follow the page count),
 * write one byte per page, and unmap it.  Does nothing if mmap() fails.
 */
void pt_st_touch_and_free(size_t len);

/*
 * pt_st_on_every_cpu() - run pt_st_touch_and_free(@len) once on every CPU
 * of our affinity mask, in parallel, each in a thread pinned to its CPU.
 * @cpus (may be NULL): @cpus[id] is set to 1 for each CPU id below @nr
 * that ran it.
 * Returns how many CPUs ran it, or -1 if a thread could not be created
 * or pinned, or did not end up on its CPU.
 */
int pt_st_on_every_cpu(size_t len, unsigned char *cpus, unsigned int nr);

/*
 * pt_st_one_page_event() - map one fresh anonymous page, touch it, note
 * its PFN, unmap it: one alloc and one free of a PFN we know.
 * @mono_before (may be NULL) gets CLOCK_MONOTONIC just before the touch.
 * With @drain_lru, pt_st_drain_lru() then frees the page if munmap() left
 * it in an LRU batch, so that its free is in the trace on return; that
 * writes drop_caches too, which frees many more pages: tests that look for
 * the alloc among the newest events pass false.
 * Returns the PFN, or 0 if the page could not be mapped or found.
 */
uint64_t pt_st_one_page_event(uint64_t *mono_before, bool drain_lru);

/*
 * pt_st_pin_first_cpu() - pin the calling thread to the lowest-numbered
 * CPU of its affinity mask.  Returns that CPU, or -errno.
 */
int pt_st_pin_first_cpu(void);

/* -------------------------------------------------------- stream buffers */

/* A growable byte buffer for stream data; starts zeroed ({ 0 }). */
struct pt_st_buf {
	unsigned char	*p;
	size_t		len;
	size_t		cap;
};

/*
 * pt_st_buf_reserve() - make room for @more bytes after @b->len (doubling,
 * from 1 MiB).  Aborts the program if out of memory.
 */
void pt_st_buf_reserve(struct pt_st_buf *b, size_t more);

/* pt_st_buf_add() - append @len bytes from @p to @b (see pt_st_buf_reserve()). */
void pt_st_buf_add(struct pt_st_buf *b, const void *p, size_t len);

/* pt_st_buf_free() - free @b's memory and zero @b, ready for reuse. */
void pt_st_buf_free(struct pt_st_buf *b);

/*
 * pt_st_buf_read() - one read() of up to 1 MiB from @fd, appended to @b.
 * Returns what read() returned (-1 with errno set on error).
 */
ssize_t pt_st_buf_read(int fd, struct pt_st_buf *b);

/*
 * pt_st_buf_drain() - pt_st_buf_read() until EAGAIN or EOF.
 * Returns 1 at EAGAIN (a non-blocking fd has nothing more for now), 0 at
 * EOF (a stopped session read to its end), or -errno on another error.
 */
int pt_st_buf_drain(int fd, struct pt_st_buf *b);

/* pt_st_load_file() - the whole file @path into @b (emptied first): 0 or -errno. */
int pt_st_load_file(const char *path, struct pt_st_buf *b);

/* pt_st_rm_dir() - remove @dir's files, then @dir (no subdirectories). */
void pt_st_rm_dir(const char *dir);

/* ------------------------------------------ the raw stream, without libpagetrace */

/* The header as the kernel wrote it, parsed without the library. */
struct pt_st_hdr {
	struct pagetrace_header		h;
	char				release[256];
	bool				have_release;
	struct pagetrace_rec_session	sess;
	bool				have_session;
	struct pagetrace_rec_zone	zones[64];
	unsigned int			nr_zones;
	bool				have_end;
	char				why[160];	/* "" if well formed */
};

/*
 * pt_st_parse_header() - parse the header at @raw (@len bytes) into @hi,
 * checking it as it goes: header_size within @len, every record within
 * header_size with zero padding, release NUL-terminated, session and zone
 * records of their exact size (64 zones at most), an END record of size 0.
 * @hi->why says what was wrong, "" if nothing.
 */
void pt_st_parse_header(const unsigned char *raw, size_t len,
			struct pt_st_hdr *hi);

/*
 * pt_st_read_header() - read a fresh session's whole header off @fd with
 * plain read()s, appending it to @b, and pt_st_parse_header() it into @hi.
 * Returns 0 (then see @hi->why), -errno of a failed read(), -EIO at a
 * short read or EOF, or -EBADMSG if header_size is below the struct or
 * above 1 MiB.
 */
int pt_st_read_header(int fd, struct pt_st_buf *b, struct pt_st_hdr *hi);

/* What pt_st_walk_chunks() counts per CPU. */
struct pt_st_raw_cpu {
	uint64_t	chunks;
	uint64_t	bytes;
	uint64_t	lost;
	uint64_t	full_chunks;	/* not flushed */
	uint64_t	max_words;
};

/*
 * pt_st_walk_chunks() - walk the chunks after the header @h in @b without
 * the library, up to the last complete chunk, checking each one's framing:
 * magic, cpu below nr_cpus, reserved 0, nr_words within the chunk size,
 * no unknown flag, an unflushed chunk too full for another event, and
 * that it starts with pid(cpu) then a sync word at or after the session
 * start.  @cpus (may be NULL, else h->nr_cpus entries) gets the per-CPU
 * counts, added to what is there.  @why (@whylen bytes) says what was
 * wrong, "" if nothing.
 * Returns the bytes covered by good complete chunks, the header included.
 */
size_t pt_st_walk_chunks(const struct pt_st_buf *b,
			 const struct pagetrace_header *h,
			 struct pt_st_raw_cpu *cpus, char *why, size_t whylen);

/* ------------------------------------------- decoding with libpagetrace */

/* Per CPU, what pt_st_decode_mem() found. */
struct pt_st_dec_cpu {
	uint64_t	next_seq;
	uint64_t	last_ns;
	uint64_t	events;
	uint64_t	chunks;
	uint64_t	lost;
};

/* A whole stream decoded by pt_st_decode_mem(), with its checks. */
struct pt_st_decoded {
	int		err;
	char		errmsg[256];
	uint64_t	events;
	uint64_t	by_type[5];
	uint64_t	chunks;
	uint64_t	lost;
	uint64_t	seq_errors;
	uint64_t	time_errors;
	uint64_t	before_start;
	uint64_t	cpu_errors;
	char		first_problem[256];
	struct pgtrace_reader_counters ctr;
	unsigned int	nr_cpus;
	struct pt_st_dec_cpu *cpus;	/* nr_cpus of them */
	/* the event looked for, if any */
	uint64_t	want_pfn;
	bool		found_alloc;
	bool		found_free;
	uint64_t	found_alloc_ns;
	uint64_t	found_free_ns;
};

/*
 * pt_st_decode_mem() - decode the stream at @p (@len bytes) with
 * libpagetrace into @d, checking what the stream promises per CPU: chunk
 * seq 0, 1, 2 ... with none missing, event times that never go back and
 * are not before the session start, cpu below nr_cpus.  Counts errors of
 * each kind, @d->first_problem describes the first.  If @d->want_pfn is
 * set (the rest of @d is overwritten), also finds the first single-page
 * alloc of that PFN and the first free of it after that.  @d->err is 0 or
 * the library's -errno, @d->errmsg its message.  Free @d->cpus with
 * pt_st_decoded_free() before decoding into @d again.
 */
void pt_st_decode_mem(const unsigned char *p, size_t len,
		      struct pt_st_decoded *d);

/* pt_st_decoded_free() - free what pt_st_decode_mem() allocated in @d. */
void pt_st_decoded_free(struct pt_st_decoded *d);

/*
 * pt_st_start_session() - open a session (pt_st_open_dev(), O_RDONLY |
 * O_CLOEXEC | @flags) into *@fd, and read its header into @b and @hi.
 * Return: 0 or -errno; *@fd is -1 if the open failed.
 */
int pt_st_start_session(int *fd, int flags, struct pt_st_buf *b, struct pt_st_hdr *hi);

/*
 * pt_st_session_cleanup() - what a session fixture's teardown undoes: free
 * @b and @d, turn the snapshot back on, and reload pagetrace with its
 * defaults if a test changed them.  Return: 0, or -errno from the reload.
 */
int pt_st_session_cleanup(struct pt_st_buf *b, struct pt_st_decoded *d);

/* The CPUs pt_st_count_stream() counts. */
#define PT_ST_MAX_CPUS	512

/* Per-CPU counts of a stream, without the memory map at start. */
struct pt_st_counts {
	int		err;
	char		why[256];
	uint64_t	events[PT_ST_MAX_CPUS];
	uint64_t	chunks[PT_ST_MAX_CPUS];
	uint64_t	lost[PT_ST_MAX_CPUS];
	uint64_t	bytes[PT_ST_MAX_CPUS];
	uint64_t	missing[PT_ST_MAX_CPUS];
	uint64_t	first_seq[PT_ST_MAX_CPUS];
	uint64_t	last_seq[PT_ST_MAX_CPUS];
	bool		found_alloc;
	int		found_cpu;
	uint64_t	found_seq;
};

/*
 * pt_st_count_stream() - decode the stream in @b with libpagetrace and
 * count per CPU (below PT_ST_MAX_CPUS) the events, chunks, lost events,
 * chunk bytes, missing chunks (seq gaps), first and last chunk seq; the
 * memory map at start (snapshot chunks) is no CPU's traffic and is not
 * counted.  With @want_pfn, also finds an alloc whose block covers it:
 * @d->found_cpu and @d->found_seq are those of the last such alloc.
 * @d is overwritten; @d->err is 0 or the library's -errno, @d->why its
 * message.
 */
void pt_st_count_stream(const struct pt_st_buf *b, struct pt_st_counts *d,
			uint64_t want_pfn);

/* ------------------------------------------------------------- ioctls */

/*
 * pt_st_info() - PAGETRACE_IOC_INFO on @fd into @info, which is filled
 * with 0xa5 bytes first, so that a field the kernel leaves unwritten
 * shows.  Returns 0 or -errno.
 */
int pt_st_info(int fd, struct pagetrace_info *info);

/*
 * pt_st_stats_poisoned() - PAGETRACE_IOC_STATS as pt_st_stats(), but
 * @cpus[@nr] is filled with 0xa5 bytes first (pt_st_stats() zeroes it),
 * so that a field the kernel leaves unwritten shows, and the whole reply
 * (nr_cpus, probe_missed) goes to @st.  Returns 0 or -errno.
 */
int pt_st_stats_poisoned(int dev, struct pagetrace_cpu_stats *cpus,
			 unsigned int nr, struct pagetrace_stats *st);

/* --------------------------------------------------------- the kernel log */

/*
 * pt_st_kmsg_read() - read every /dev/kmsg record from @fd (non-blocking,
 * as pt_st_kmsg_open() gives) up to the end, and concatenate their
 * messages, without the "prio,seq,time,flags;" prefix, into @out (@len
 * bytes, NUL-terminated); stops early when @out is full.  An overrun
 * (EPIPE) skips to what is left.
 */
void pt_st_kmsg_read(int fd, char *out, size_t len);

#endif /* PT_SELFTEST_H */
