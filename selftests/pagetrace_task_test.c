// SPDX-License-Identifier: GPL-2.0
/*
 * Task records: the allocations of a process carry its tgid, its name
 * comes with the stream (name slices, as many as its length needs, right
 * before a task record of its tgid), and an allocation in interrupt
 * context belongs to task 0, the kernel, not to the task it interrupted.
 *
 * Everything runs pinned to CPU 0, so that CPU 0's chunks, in seq order,
 * hold every event and the last name of a child is its new name.
 *
 * Environment: PAGETRACE_GT_KO (see pagetrace_gt_test.c); pagetrace.ko
 * loaded.  The test turns tasks=1 on for its session and restores the
 * parameter after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/pagetrace.h>
#include "pt_selftest.h"
#include "kselftest_harness.h"

#define NR_CHILDREN	3
#define NR_PAGES	8

/* Names of 1, 2 and 3 slices (7 bytes each, the last one 2). */
static const char *const child_names[NR_CHILDREN] = {
	"pt_t0", "pt_task_1", "pt_task_2-15chr",
};

struct child {
	pid_t		pid;
	uint64_t	pfn[NR_PAGES];
	const char	*name;
	unsigned int	named;		/* its new name in the stream */
};

/* Rename, wait for the go, fault pages in, report their PFNs, wait, exit. */
static void child_run(int idx, int up, int down)
{
	size_t page = getpagesize();
	uint64_t pfn[NR_PAGES];
	unsigned char *p;
	char c;
	int i;

	prctl(PR_SET_NAME, child_names[idx]);
	if (write(up, "r", 1) != 1 || read(down, &c, 1) != 1)
		_exit(1);
	p = mmap(NULL, NR_PAGES * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	for (i = 0; i < NR_PAGES; i++)
		p[i * page] = 1;
	for (i = 0; i < NR_PAGES; i++)
		if (pt_st_pagemap_pfn(p + i * page, &pfn[i]))
			_exit(1);
	if (write(up, pfn, sizeof(pfn)) != sizeof(pfn) || read(down, &c, 1) != 1)
		_exit(1);
	_exit(0);
}

/* Parse "<op> alloc pfn=N ..." from the ground-truth module; 0 if skipped. */
static uint64_t gt_irq_pfn(const char *report, uint64_t *t0, uint64_t *t1)
{
	const char *l = strstr(report, " alloc pfn=");
	uint64_t pfn, np;

	if (!l || sscanf(l, " alloc pfn=%" SCNu64 " npages=%" SCNu64 " t0=%" SCNu64
			 " t1=%" SCNu64, &pfn, &np, t0, t1) != 4)
		return 0;
	return pfn;
}

#define TASKS_PARAM	"/sys/module/pagetrace/parameters/tasks"

/* tasks= applies to the next session; *@old gets its value ('Y' or 'N'). */
static int set_tasks(char on, char *old)
{
	int fd = open(TASKS_PARAM, O_RDWR | O_CLOEXEC);
	int ok;

	if (fd < 0)
		return -errno;
	ok = !old || read(fd, old, 1) == 1;
	ok = ok && pwrite(fd, &on, 1, 0) == 1;
	close(fd);
	return ok ? 0 : -EIO;
}

/*
 * Walk the raw words of CPU 0's chunks: each name in the stream must take
 * exactly the slices its length needs (*@bad counts those that do not),
 * and a child named with its new name counts it.  Returns the names seen,
 * or -1 if the stream is not laid out as expected.
 */
static int count_names(const unsigned char *s, size_t len, struct child *ch,
		       int *bad)
{
	const struct pagetrace_header *h = (const void *)s;
	size_t off = h->header_size;
	uint8_t comm[PAGETRACE_COMM_LEN + 1] = { 0 };
	int names = 0;

	while (off + sizeof(struct pagetrace_chunk) <= len) {
		const struct pagetrace_chunk *c = (const void *)(s + off);
		const uint64_t *w = (const void *)(c + 1);
		unsigned int i, n = 0;

		off += sizeof(*c) + 8ULL * c->nr_words;
		if (off > len)
			return -1;
		if (c->cpu != 0)
			continue;
		for (i = 2; i < c->nr_words; i++) {
			if (pagetrace_word_is_name(w[i])) {
				if (!n)
					memset(comm, 0, sizeof(comm));
				if (pagetrace_word_name_bytes(w[i], comm))
					return -1;
				n++;
				continue;
			}
			if (n && pagetrace_word_is_task(w[i])) {
				*bad += n != pagetrace_name_slices(strlen((char *)comm));
				for (int k = 0; k < NR_CHILDREN; k++)
					if (pagetrace_word_tgid(w[i]) == (uint32_t)ch[k].pid &&
					    !strcmp((char *)comm, ch[k].name))
						ch[k].named++;
				names++;
			}
			n = 0;
		}
	}
	return names;
}

TEST(task_records)
{
	struct child ch[NR_CHILDREN];
	char report[4096], c, old_tasks = 'N';
	int up[NR_CHILDREN][2], down[NR_CHILDREN][2];
	uint64_t irq_pfn[2] = { 0 }, irq_t0[2], irq_t1[2];
	static const char *const irq_ops[2] = { "softirq", "hardirq" };
	struct pgtrace_reader *r = NULL;
	struct pgtrace_event *ev;
	size_t len, nr = 0, cap = 1 << 16;
	uint64_t err;
	void *stream;
	int dev, i, j, k, ret, bad = 0;

	ASSERT_EQ(0, pt_st_gt_load());
	ASSERT_EQ(0, pt_st_pin_cpu(0));
	ASSERT_EQ(0, set_tasks('1', &old_tasks));
	dev = open("/dev/pagetrace", O_RDONLY | O_CLOEXEC);
	set_tasks(old_tasks, NULL);
	ASSERT_LE(0, dev) TH_LOG("open /dev/pagetrace: %s", strerror(errno));

	for (i = 0; i < NR_CHILDREN; i++) {
		ASSERT_EQ(0, pipe(up[i]));
		ASSERT_EQ(0, pipe(down[i]));
		ch[i].name = child_names[i];
		ch[i].named = 0;
		ch[i].pid = fork();
		ASSERT_LE(0, ch[i].pid);
		if (!ch[i].pid)
			child_run(i, up[i][1], down[i][0]);
		ASSERT_EQ(1, read(up[i][0], &c, 1));
	}
	/* Fresh chunks: the next name of each child is its new name. */
	ASSERT_EQ(0, ioctl(dev, PAGETRACE_IOC_FLUSH));
	for (i = 0; i < NR_CHILDREN; i++) {
		ASSERT_EQ(1, write(down[i][1], "g", 1));
		ASSERT_EQ((ssize_t)sizeof(ch[i].pfn),
			  read(up[i][0], ch[i].pfn, sizeof(ch[i].pfn)));
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pt_st_gt_run(irq_ops[i], report, sizeof(report)));
		irq_pfn[i] = gt_irq_pfn(report, &irq_t0[i], &irq_t1[i]);
		if (!irq_pfn[i])
			TH_LOG("%s: no allocation (%s)", irq_ops[i], report);
	}
	for (i = 0; i < NR_CHILDREN; i++) {
		int st;

		ASSERT_EQ(1, write(down[i][1], "x", 1));
		ASSERT_EQ(ch[i].pid, waitpid(ch[i].pid, &st, 0));
		ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	}

	ASSERT_EQ(0, ioctl(dev, PAGETRACE_IOC_STOP));
	stream = pt_st_read_all(dev, &len);
	ASSERT_NE(NULL, stream);
	ASSERT_LE(0, pgtrace_reader_open_mem(&r, stream, len, 0));
	ASSERT_TRUE(pgtrace_reader_header(r)->flags & PAGETRACE_FLAG_TASKS);
	ev = malloc(cap * sizeof(*ev));
	ASSERT_NE(NULL, ev);
	for (;;) {
		if (nr + 4096 > cap) {
			cap *= 2;
			ev = realloc(ev, cap * sizeof(*ev));
			ASSERT_NE(NULL, ev);
		}
		ret = pgtrace_reader_next_batch(r, ev + nr, 4096);
		ASSERT_LE(0, ret) TH_LOG("%s", pgtrace_reader_error(r));
		if (!ret)
			break;
		nr += ret;
	}

	/* Each name takes only the slices its length needs. */
	EXPECT_LT(0, count_names(stream, len, ch, &bad));
	EXPECT_EQ(0, bad);
	for (i = 0; i < NR_CHILDREN; i++) {
		const char *name = pgtrace_reader_task_name(r, ch[i].pid);

		ASSERT_NE(NULL, name) TH_LOG("no name for child %d", ch[i].pid);
		EXPECT_STREQ(ch[i].name, name);
		EXPECT_LT(0, ch[i].named);
		for (j = 0; j < NR_PAGES; j++) {
			int found = 0, other = 0;

			for (k = 0; k < (int)nr; k++) {
				if (ev[k].type != PGTRACE_EV_ALLOC || ev[k].pfn > ch[i].pfn[j] ||
				    ev[k].pfn + ev[k].npages <= ch[i].pfn[j])
					continue;
				if (ev[k].task == ch[i].pid)
					found++;
				else
					other = (int)ev[k].task;
			}
			EXPECT_LT(0, found) TH_LOG("child %d pfn %" PRIu64
						  ": no alloc with its tgid (other: %d)",
						  ch[i].pid, ch[i].pfn[j], other);
		}
	}
	/* With the TSC clock, also its error (see pagetrace_gt_test.c). */
	err = pgtrace_reader_session(r) ? pgtrace_reader_session(r)->clock_error_ns : 0;
	for (i = 0; i < 2; i++) {
		int found = 0, wrong = 0;

		if (!irq_pfn[i])
			continue;
		for (k = 0; k < (int)nr; k++) {
			if (ev[k].type != PGTRACE_EV_ALLOC || ev[k].pfn != irq_pfn[i] ||
			    ev[k].time_ns + 256 + err < irq_t0[i] ||
			    ev[k].time_ns > irq_t1[i] + err)
				continue;
			if (ev[k].task == 0)
				found++;
			else
				wrong++;
		}
		EXPECT_EQ(1, found) TH_LOG("%s alloc pfn %" PRIu64 ": %d as task 0, %d as another",
					   irq_ops[i], irq_pfn[i], found, wrong);
		EXPECT_EQ(0, wrong);
	}
	free(ev);
	pgtrace_reader_close(r);
	free(stream);
	close(dev);
}

TEST_HARNESS_MAIN
