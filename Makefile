# SPDX-License-Identifier: GPL-2.0
#
# make              pagetrace.ko for KVER (built here, like any out-of-tree
#                   module) and the userspace library + pagetrace CLI
# make check        every test: scripts/check.sh (root; installs what it needs)
# make lint         checkpatch --strict and sparse, for KVER
# make clean
#
# Used by scripts/check.sh (and handy by hand):
# make ksrc         extract kselftest_harness.h and checkpatch.pl into build/ksrc
# make kbuild       pagetrace.ko and pagetrace_gt.ko for KVER, in build/KVER/
# make static       the static pagetrace CLI, in build/static/userspace/
# make selftests    the static selftests/*_test binaries
#
# KVER defaults to the installed Debian 6.1 kernel, else the running one.

KVER		?= $(shell scripts/kernels.sh 6.1 2>/dev/null || uname -r)
KDIR		?= /lib/modules/$(KVER)/build
KERNELS		?= 6.1 6.12 rt
export KERNELS

KSRC		:= $(CURDIR)/build/ksrc
KSELFTEST_DIR	:= $(KSRC)/tools/testing/selftests
KSRC_TAR	?= /usr/src/linux-source-6.1.tar.xz
KSRC_FILES	:= tools/testing/selftests/kselftest_harness.h \
		   tools/testing/selftests/kselftest.h \
		   scripts/checkpatch.pl scripts/spelling.txt \
		   scripts/const_structs.checkpatch
BDIR		:= $(CURDIR)/build/$(KVER)
STATIC_DIR	:= $(CURDIR)/build/static/userspace

all: module userspace

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

userspace:
	$(MAKE) -C userspace pagetrace lib/libpagetrace.a

check:
	@scripts/check.sh

lint: ksrc
	@rc=0; scripts/lint.sh checkpatch || rc=1; \
	$(MAKE) --no-print-directory kbuild >/dev/null || rc=1; \
	scripts/lint.sh sparse $(BDIR) $(KDIR) || rc=1; \
	exit $$rc

ksrc: $(addprefix $(KSRC)/,$(KSRC_FILES))

$(addprefix $(KSRC)/,$(KSRC_FILES)) &: $(KSRC_TAR)
	mkdir -p $(KSRC)
	tar -xJf $(KSRC_TAR) -C $(KSRC) --strip-components=1 \
		$(addprefix linux-source-6.1/,$(KSRC_FILES))
	touch $(addprefix $(KSRC)/,$(KSRC_FILES))

# Kbuild writes objects next to the sources, so each kernel gets its own copy
# of the module tree (same layout, so relative includes keep working).  Only
# changed files are copied, keeping rebuilds incremental.
STAGE_FILES	= Kbuild $(wildcard module/*.[ch] uapi/linux/*.h \
		  selftests/gt_module/Kbuild selftests/gt_module/*.[ch])

kbuild:
	@set -e; for f in $(STAGE_FILES); do \
		mkdir -p $(BDIR)/$$(dirname $$f); \
		cmp -s $$f $(BDIR)/$$f || cp -p $$f $(BDIR)/$$f; \
	done
	$(MAKE) -C $(KDIR) M=$(BDIR) modules
	$(if $(wildcard selftests/gt_module/Kbuild),\
		$(MAKE) -C $(KDIR) M=$(BDIR)/selftests/gt_module modules)

# A copy of userspace/, so the static build does not fight the host one.
static:
	@set -e; mkdir -p $(STATIC_DIR); cd userspace; \
	for f in Makefile $$(find . -name '*.[ch]'); do \
		mkdir -p $(STATIC_DIR)/$$(dirname $$f); \
		cmp -s $$f $(STATIC_DIR)/$$f || cp -p $$f $(STATIC_DIR)/$$f; \
	done
	$(MAKE) -C $(STATIC_DIR) STATIC=1 TOP=$(CURDIR) KSELFTEST_DIR=$(KSELFTEST_DIR) pagetrace

selftests: ksrc
	$(MAKE) -C selftests all KSELFTEST_DIR=$(KSELFTEST_DIR)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C userspace clean
	-$(MAKE) -C selftests clean KDIR=$(KDIR)
	rm -rf build/ksrc build/lint build/static build/check
	rm -rf $(filter-out $(CURDIR)/build/vm,$(wildcard $(CURDIR)/build/*))

.PHONY: all module userspace check lint ksrc kbuild static selftests clean
