// SPDX-License-Identifier: GPL-2.0
/*
 * Memory beyond the stream's PFN field (35 bits: 128 TiB of 4 KiB pages)
 * would alias to wrong PFNs, so a session on it is refused.  No machine
 * here has memory that high, so the test lowers the limit with pfn_limit=
 * (a parameter for tests): to a PFN we hold, which lies inside a zone, the
 * open must fail with ERANGE and the kernel log must name the zone and the
 * limit; to the end of the highest zone (from /proc/zoneinfo) it must
 * open, and one PFN lower it must not; the default (0: the format's own)
 * must let a session open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pt_selftest.h"
#include "kselftest_harness.h"

#define DEV	"/dev/pagetrace"

/* The end (exclusive) of the highest populated zone, or 0. */
static uint64_t zones_end(void)
{
	uint64_t spanned = 0, present = 0, start, end = 0;
	char line[256];
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " spanned %" SCNu64, &spanned) == 1 ||
		    sscanf(line, " present %" SCNu64, &present) == 1)
			continue;
		/* start_pfn comes last in a zone's block. */
		if (sscanf(line, " start_pfn: %" SCNu64, &start) == 1) {
			if (present && start + spanned > end)
				end = start + spanned;
			spanned = present = 0;
		}
	}
	fclose(f);
	return end;
}

FIXTURE(pfn)
{
	void *page;
	uint64_t pfn;
	int kmsg;
};

FIXTURE_SETUP(pfn)
{
	self->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
	memset(self->page, 1, 4096);
	ASSERT_EQ(0, pt_st_pagemap_pfn(self->page, &self->pfn));
	ASSERT_LT(0, self->pfn) TH_LOG("pagemap shows no PFNs to this task");
	self->kmsg = pt_st_kmsg_open();
	ASSERT_LE(0, self->kmsg);
}

FIXTURE_TEARDOWN(pfn)
{
	pt_st_set_param("pfn_limit", "0");
	if (self->kmsg >= 0)
		close(self->kmsg);
	munmap(self->page, 4096);
}

TEST_F(pfn, refused_beyond_the_limit)
{
	static char log[1 << 16];
	char limit[32], want[64];
	int fd;

	/* Our page's zone reaches at least to our page: beyond the limit. */
	snprintf(limit, sizeof(limit), "%" PRIu64, self->pfn);
	ASSERT_EQ(0, pt_st_set_param("pfn_limit", limit));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(-1, fd) TH_LOG("a session opened on memory beyond pfn_limit=%s", limit);
	ASSERT_EQ(ERANGE, errno) TH_LOG("open: %s", strerror(errno));

	pt_st_kmsg_read(self->kmsg, log, sizeof(log));
	snprintf(want, sizeof(want), "at or above pfn_limit=%#" PRIx64 ": refusing",
		 self->pfn);
	ASSERT_NE(NULL, strstr(log, want)) TH_LOG("kernel log:\n%s", log);
	ASSERT_NE(NULL, strstr(log, " zone ")) TH_LOG("kernel log:\n%s", log);
}

TEST_F(pfn, the_highest_zone_is_the_boundary)
{
	uint64_t end = zones_end();
	char limit[32];
	int fd;

	ASSERT_LT(self->pfn, end) TH_LOG("no populated zone in /proc/zoneinfo holds our page");
	snprintf(limit, sizeof(limit), "%" PRIu64, end);
	ASSERT_EQ(0, pt_st_set_param("pfn_limit", limit));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("pfn_limit=%s, the end of the highest zone: %s", limit,
				strerror(errno));
	close(fd);
	snprintf(limit, sizeof(limit), "%" PRIu64, end - 1);
	ASSERT_EQ(0, pt_st_set_param("pfn_limit", limit));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(-1, fd) TH_LOG("pfn_limit=%s, its last PFN excluded, opened", limit);
	ASSERT_EQ(ERANGE, errno);
}

TEST_F(pfn, opens_within_the_limit)
{
	int fd;

	/* The format's own limit, written out, and the default. */
	ASSERT_EQ(0, pt_st_set_param("pfn_limit", "34359738368"));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	close(fd);
	ASSERT_EQ(0, pt_st_set_param("pfn_limit", "0"));
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	close(fd);
}

TEST_HARNESS_MAIN
