// SPDX-License-Identifier: GPL-2.0
/*
 * pgtrace_ring_* without the module: what a descriptor that is not
 * /dev/pagetrace gets.  The mapped session itself is tested in the VM
 * (selftests/pagetrace_mmap_test.c, pagetrace record).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "libpagetrace.h"
#include "kselftest_harness.h"

TEST(map_not_the_device)
{
	struct pgtrace_ring *r = (void *)1;
	int fd = open("/dev/null", O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, pgtrace_ring_map(fd, &r));
	EXPECT_EQ(NULL, r);
	close(fd);
}

TEST(map_closed_fd)
{
	struct pgtrace_ring *r = (void *)1;

	EXPECT_EQ(-EBADF, pgtrace_ring_map(-1, &r));
	EXPECT_EQ(NULL, r);
}

TEST(unmap_null)
{
	pgtrace_ring_unmap(NULL);
}

TEST_HARNESS_MAIN
