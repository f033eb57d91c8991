# SPDX-License-Identifier: GPL-2.0
#
# make              pagetrace.ko for KVER (built here, like any out-of-tree
#                   module) and the userspace library + pagetrace CLI
# make test         the host tests, no root and no VM, in about a minute:
#                   libpagetrace and CLI unit tests, the documentation's
#                   examples, checkpatch and kernel-doc, the packaging checks
#                   without the .deb (needs what scripts/deps.sh installs)
# make check        every test: scripts/test/check.sh (root; installs what it needs),
#                   make test's included, and the debug kernel's run below
# make check-debug  only the selftests on a 6.1 debug kernel (KASAN, lockdep,
#                   PROVE_RCU, DEBUG_ATOMIC_SLEEP, DEBUG_LIST) built once by
#                   scripts/vm/debug-kernel.sh into PT_DEBUG_KERNEL_CACHE
# make stress       make check with the long stress tests: 60 s storms,
#                   10000 open/close cycles, 100 reloads (hours under TCG)
# make soak         SOAK_SECONDS (default 3600) of flight and streaming sessions
#                   under a mixed load on SOAK_KERNEL (default 6.1; debug: the
#                   debug kernel) in one VM: scripts/test/soak.sh (not in CI)
# make bench        overhead against ftrace, perf and bpftrace in a VM:
#                   scripts/bench/bench.sh (root; BENCH_KERNELS, default 6.1)
# make lint         checkpatch --strict, kernel-doc and sparse, for KVER
# make clean
#
# Used by scripts/test/check.sh (and handy by hand):
# make ksrc         extract kselftest_harness.h, checkpatch.pl and kernel-doc into build/ksrc
# make kbuild       pagetrace.ko, pagetrace_gt.ko and pt_bench.ko (BENCH=0:
#                   not that one) for KVER, in build/KVER/; all three are
#                   attempted even if one fails
# make static       the static pagetrace CLI, in build/static/userspace/
# make selftests    the static selftests/*_test binaries
# make selftests-export DEST=DIR  the selftests as a self-contained kernel-tree
#                   tools/testing/selftests/pagetrace (selftests/Makefile)
# make kselftest-install  them built by linux-source's own selftests make,
#                   as kernel CI does, into build/ksft/install
#
# Installing (scripts/test/check-packaging.sh tests these):
# make install      pagetrace.ko for KVER to /lib/modules/KVER/extra (then
#                   depmod), the udev rule, and under PREFIX (/usr/local) the
#                   CLI, libpagetrace.a, the headers, man pages, bash
#                   completion and pagetrace.service (not enabled), with its
#                   settings in /etc/default/pagetrace (kept if there).
#                   DESTDIR is respected (depmod is then skipped).
#                   SIGN_KEY=KEY.priv SIGN_CERT=CERT.der signs the installed
#                   module with the headers' scripts/sign-file (a kernel
#                   that enforces signatures, as Secure Boot does, refuses
#                   an unsigned one: README.md, "Secure Boot").
#                   install-module and install-tools do either half.
# make uninstall    removes exactly those files (uninstall-module/-tools)
# make dkms-install the DKMS source to /usr/src/pagetrace-VERSION, then
#                   dkms add, build and install for KVER (dkms-remove undoes)
# make dkms-build   dkms add + build for KVER in a private DKMS tree under
#                   build/dkms/; the module lands in build/dkms/KVER/pagetrace.ko
# make deb          the pagetrace-dkms and pagetrace-tools .debs in build/deb/
#                   (dpkg-buildpackage -b in a copy), then lintian if
#                   installed (make check needs it)
# make check-deb    make deb, then install both .debs in a debootstrap'd
#                   bookworm chroot (build/chroot) and run pagetrace --version
#
# make check-matrix make check on every kernel flavour (MATRIX_KERNELS): the
#                   host's and those of scripts/deps.sh's chroots (other
#                   Debian suites, scripts/vm/kernels.sh --list)
#
# KVER defaults to the release of KDIR if that is given, else to the
# installed Debian 6.1 kernel, else the running one.  A KVER whose headers are
# not on the host but in a chroot of scripts/deps.sh (bullseye, trixie, sid)
# is built there, with that suite's compiler (KCHROOT, below).

ifeq ($(origin KVER),undefined)
ifdef KDIR
# The build directory is named after the kernel it builds for: the release
# modules get in their vermagic (Debian's include/config/kernel.release says
# "6.1.192" for 6.1.0-56-amd64).
KDIR_RELEASE	:= $(shell sed -n 's/.*UTS_RELEASE "\(.*\)".*/\1/p' \
		     $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
ifneq ($(KDIR_RELEASE),)
KVER		:= $(KDIR_RELEASE)
endif
endif
endif
KVER		?= $(shell scripts/vm/kernels.sh 6.1 2>/dev/null || uname -r)
KDIR		?= /lib/modules/$(KVER)/build
KERNELS		?= 5.10 6.1 7.3 7.3-rt debug
export KERNELS
MATRIX_KERNELS	?= 5.10 5.10-rt 6.1 rt cloud debug 6.12 trixie trixie-rt 7.3 7.3-rt 7.3-cloud sid
BENCH_KERNELS	?= 6.1

# A kernel of another Debian suite must be built by that suite's compiler
# (the one the kernel was built with; the headers' tools are built for that
# suite's libc too), so when KDIR is not on the host but in one
# of scripts/deps.sh's chroots, the kernel's make, dkms and sparse run in
# that chroot: KRUN prefixes them.  scripts/vm/chroot-run.sh mounts this
# checkout at the same path there, so M= and KDIR need no translation.
ifeq ($(origin KCHROOT),undefined)
KCHROOT		:= $(if $(wildcard $(KDIR)/Makefile),,$(shell scripts/vm/kernels.sh --chroot-of $(KVER) 2>/dev/null))
endif
KRUN		= $(if $(KCHROOT),$(CURDIR)/scripts/vm/chroot-run.sh $(KCHROOT))
# BENCH=0: no pt_bench.ko (check.sh's choice for chroot kernels: `make
# bench` runs on host kernels only, and pt_bench.c is not kept building on
# others; on 5.10 it needs kthread_create_on_cpu, not exported there).
BENCH		?= 1

KSRC		:= $(CURDIR)/build/ksrc
KSELFTEST_DIR	:= $(KSRC)/tools/testing/selftests
KSRC_TAR	?= /usr/src/linux-source-6.1.tar.xz
KSRC_FILES	:= tools/testing/selftests/kselftest_harness.h \
		   tools/testing/selftests/kselftest.h \
		   scripts/checkpatch.pl scripts/spelling.txt scripts/kernel-doc \
		   scripts/const_structs.checkpatch
BDIR		:= $(CURDIR)/build/$(KVER)
STATIC_DIR	:= $(CURDIR)/build/static/userspace

# Packaging.  VERSION is the one source of the version: dkms.conf, the
# Debian changelog and PT_VERSION_STRING must agree with it (checked).
VERSION		:= $(shell cat $(CURDIR)/VERSION)
PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
MANDIR		?= $(PREFIX)/share/man
BASHCOMPDIR	?= $(PREFIX)/share/bash-completion/completions
UDEVRULESDIR	?= /etc/udev/rules.d
# pagetrace.service and its settings (systemd/), installed disabled.
# Debian 12 puts units in /lib/systemd/system (debian/rules says so).
SYSTEMDUNITDIR	?= $(PREFIX)/lib/systemd/system
DEFAULTDIR	?= /etc/default
MODDIR		?= /lib/modules/$(KVER)/extra
# make install's signing (install-module): the key and its certificate
# (DER or PEM; one PEM file may hold both, as the kernel's own
# certs/signing_key.pem does), the headers' sign-file and the kernel's hash.
SIGN_KEY	?=
SIGN_CERT	?= $(SIGN_KEY)
SIGN_FILE	?= $(KDIR)/scripts/sign-file
SIGN_HASH	?= $(or $(shell sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' $(KDIR)/.config 2>/dev/null),sha256)
DKMS_SRCDIR	?= /usr/src/pagetrace-$(VERSION)
DKMS_FILES	= Kbuild $(wildcard module/*.[ch]) uapi/linux/pagetrace.h
DKMS_DIR	:= $(CURDIR)/build/dkms
MAN_PAGES	= $(wildcard man/man[1-8]/*.[1-8])
MODULE_FILES	= $(MODDIR)/pagetrace.ko $(UDEVRULESDIR)/60-pagetrace.rules
TOOLS_FILES	= $(BINDIR)/pagetrace $(LIBDIR)/libpagetrace.a \
		  $(INCLUDEDIR)/libpagetrace.h $(INCLUDEDIR)/linux/pagetrace.h \
		  $(BASHCOMPDIR)/pagetrace $(patsubst man/%,$(MANDIR)/%,$(MAN_PAGES)) \
		  $(SYSTEMDUNITDIR)/pagetrace.service $(DEFAULTDIR)/pagetrace
DEB_DIR		:= $(CURDIR)/build/deb
CHROOT		?= $(CURDIR)/build/chroot
DEB_MIRROR	?= http://deb.debian.org/debian

all: module userspace

module:
	$(KRUN) $(MAKE) -C $(KDIR) M=$(CURDIR) modules

userspace:
	$(MAKE) -C userspace pagetrace lib/libpagetrace.a

test: ksrc
	@rc=0; $(MAKE) -s -C userspace check || rc=1; \
	sh Documentation/pagetrace/check-example.sh || rc=1; \
	scripts/test/lint.sh checkpatch || rc=1; \
	scripts/test/lint.sh kernel-doc || rc=1; \
	PKG_DEB=0 scripts/test/check-packaging.sh || rc=1; \
	exit $$rc

check:
	@scripts/test/check.sh

check-matrix:
	@KERNELS="$(MATRIX_KERNELS)" scripts/test/check.sh

check-debug:
	@KERNELS=debug HOST_CHECKS=0 scripts/test/check.sh

stress:
	@PT_STRESS_SECONDS=$${PT_STRESS_SECONDS:-60} PT_STRESS_BUDGET=0 \
	 PT_HOSTILE_ITERS=$${PT_HOSTILE_ITERS:-200000} \
	 TEST_TIMEOUT=$${TEST_TIMEOUT:-14400} VM_TIMEOUT=$${VM_TIMEOUT:-21600} \
	 scripts/test/check.sh

soak:
	@SOAK_SECONDS=$(or $(SOAK_SECONDS),3600) SOAK_KERNEL=$(or $(SOAK_KERNEL),6.1) \
	 scripts/test/soak.sh

bench:
	@BENCH_KERNELS="$(BENCH_KERNELS)" scripts/bench/bench.sh

lint: ksrc
	@rc=0; scripts/test/lint.sh checkpatch || rc=1; \
	scripts/test/lint.sh kernel-doc || rc=1; \
	$(MAKE) --no-print-directory kbuild >/dev/null || rc=1; \
	$(KRUN) scripts/test/lint.sh sparse $(BDIR) $(KDIR) || rc=1; \
	exit $$rc

ksrc: $(addprefix $(KSRC)/,$(KSRC_FILES))

$(addprefix $(KSRC)/,$(KSRC_FILES)) &: $(KSRC_TAR)
	mkdir -p $(KSRC)
	tar -xJf $(KSRC_TAR) -C $(KSRC) --strip-components=1 \
		$(addprefix linux-source-6.1/,$(KSRC_FILES))
	touch $(addprefix $(KSRC)/,$(KSRC_FILES))

# Kbuild writes objects next to the sources, so each kernel gets its own copy
# of the module tree (same layout, so relative includes keep working).  Only
# changed files are copied, keeping rebuilds incremental.  Each module is
# built even if an earlier one failed, so that one run shows all the errors
# (porting to a new kernel); the target fails if any did.  With BENCH=0 a
# bench/ staged before is removed, as lint.sh's sparse would check it.
BENCH_FILES	= $(if $(filter 0,$(BENCH)),,$(wildcard bench/Kbuild))
STAGE_FILES	= Kbuild $(wildcard module/*.[ch] uapi/linux/*.h \
		  selftests/gt_module/Kbuild selftests/gt_module/*.[ch]) \
		  $(if $(BENCH_FILES),$(wildcard bench/Kbuild bench/pt_bench.c))
KBUILD_DIRS	= $(BDIR) $(if $(wildcard selftests/gt_module/Kbuild),\
		  $(BDIR)/selftests/gt_module) $(if $(BENCH_FILES),$(BDIR)/bench)

kbuild:
	@set -e; for f in $(STAGE_FILES); do \
		mkdir -p $(BDIR)/$$(dirname $$f); \
		cmp -s $$f $(BDIR)/$$f || cp -p $$f $(BDIR)/$$f; \
	done
	$(if $(BENCH_FILES),,rm -rf $(BDIR)/bench)
	@rc=0; for m in $(KBUILD_DIRS); do \
		$(if $(findstring s,$(firstword -$(MAKEFLAGS))),:,echo) \
			"$(KRUN) $(MAKE) -C $(KDIR) M=$$m modules"; \
		$(KRUN) $(MAKE) -C $(KDIR) M=$$m modules || rc=1; \
	done; exit $$rc

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

# The selftests as a kernel tree's tools/testing/selftests/pagetrace, built
# there by the kernel's own `make -C tools/testing/selftests
# TARGETS=pagetrace` (selftests/Makefile says how): the tests, their
# helpers, config and settings, with the library and the uapi header
# copied beside them, so that the directory needs nothing outside it.
SELFTESTS_EXPORT := Makefile config settings README $(notdir $(wildcard selftests/pt_*.[ch])) \
		    $(notdir $(wildcard selftests/*_test.c))
# Kernel CI's build of them (scripts/test/check.sh runs the result): a
# linux-source tree with just what `make -C tools/testing/selftests` needs,
# the export in it, and the kernel's own make installing it into
# build/ksft/install (run_kselftest.sh, kselftest-list.txt, pagetrace/).
KSFT		:= $(CURDIR)/build/ksft
KSFT_TREE_FILES	:= tools/testing/selftests/Makefile tools/testing/selftests/lib.mk \
		   tools/testing/selftests/run_kselftest.sh tools/testing/selftests/kselftest \
		   tools/testing/selftests/kselftest.h tools/testing/selftests/kselftest_harness.h \
		   scripts/subarch.include
kselftest-install: $(KSRC_TAR)
	rm -rf $(KSFT)
	mkdir -p $(KSFT)
	tar -xJf $(KSRC_TAR) -C $(KSFT) $(addprefix linux-source-6.1/,$(KSFT_TREE_FILES))
	$(MAKE) selftests-export DEST=$(KSFT)/linux-source-6.1/tools/testing/selftests/pagetrace
	$(MAKE) -C $(KSFT)/linux-source-6.1/tools/testing/selftests TARGETS=pagetrace \
		install KSFT_INSTALL_PATH=$(KSFT)/install \
		USERCFLAGS=-Werror USERLDFLAGS=-static

selftests-export:
	@case "$(DEST)" in */pagetrace|*/pagetrace/) ;; \
	*) echo "usage: make selftests-export DEST=<linux>/tools/testing/selftests/pagetrace" \
		"(DEST is removed first, so it must end in /pagetrace)" >&2; exit 1 ;; esac
	rm -rf $(DEST)
	mkdir -p $(DEST)/libpagetrace $(DEST)/include/linux
	cp $(addprefix selftests/,$(SELFTESTS_EXPORT)) $(DEST)/
	cp userspace/lib/*.c userspace/lib/*.h $(DEST)/libpagetrace/
	cp uapi/linux/pagetrace.h $(DEST)/include/linux/

# ------------------------------------------------------------- packaging

install: install-module install-tools

install-module: module
	install -D -m 0644 pagetrace.ko $(DESTDIR)$(MODDIR)/pagetrace.ko
ifneq ($(SIGN_KEY),)
	$(KRUN) $(SIGN_FILE) $(SIGN_HASH) $(SIGN_KEY) $(SIGN_CERT) $(DESTDIR)$(MODDIR)/pagetrace.ko
	@echo "pagetrace.ko signed by '$$(modinfo -F signer $(DESTDIR)$(MODDIR)/pagetrace.ko)'"
else
	@echo "pagetrace.ko is not signed: a kernel that enforces module signatures" \
		"(Secure Boot) refuses it with 'Key was rejected by service';" \
		"make install SIGN_KEY=... SIGN_CERT=... signs it (README.md, Secure Boot)"
endif
	install -D -m 0644 udev/60-pagetrace.rules $(DESTDIR)$(UDEVRULESDIR)/60-pagetrace.rules
	$(if $(DESTDIR),@echo "DESTDIR is set: not running depmod",depmod -a $(KVER))

install-tools: userspace
	install -D -m 0755 userspace/pagetrace $(DESTDIR)$(BINDIR)/pagetrace
	install -D -m 0644 userspace/lib/libpagetrace.a $(DESTDIR)$(LIBDIR)/libpagetrace.a
	install -D -m 0644 userspace/lib/libpagetrace.h $(DESTDIR)$(INCLUDEDIR)/libpagetrace.h
	install -D -m 0644 uapi/linux/pagetrace.h $(DESTDIR)$(INCLUDEDIR)/linux/pagetrace.h
	install -D -m 0644 completion/pagetrace $(DESTDIR)$(BASHCOMPDIR)/pagetrace
	@set -e; for f in $(MAN_PAGES); do \
		echo "install -D -m 0644 $$f $(DESTDIR)$(MANDIR)/$${f#man/}"; \
		install -D -m 0644 $$f $(DESTDIR)$(MANDIR)/$${f#man/}; \
	done
	@# The unit runs BINDIR's pagetrace; an edited settings file is kept.
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|/usr/bin/pagetrace|$(BINDIR)/pagetrace|' systemd/pagetrace.service \
		>$(DESTDIR)$(SYSTEMDUNITDIR)/pagetrace.service
	@if [ -e $(DESTDIR)$(DEFAULTDIR)/pagetrace ]; then \
		echo "keeping $(DESTDIR)$(DEFAULTDIR)/pagetrace (the new one: systemd/pagetrace.default)"; \
	else \
		echo "install -D -m 0644 systemd/pagetrace.default $(DESTDIR)$(DEFAULTDIR)/pagetrace"; \
		install -D -m 0644 systemd/pagetrace.default $(DESTDIR)$(DEFAULTDIR)/pagetrace; \
	fi

uninstall: uninstall-module uninstall-tools

uninstall-module:
	rm -f $(addprefix $(DESTDIR),$(MODULE_FILES))
	$(if $(DESTDIR),,depmod -a $(KVER))

uninstall-tools:
	rm -f $(addprefix $(DESTDIR),$(TOOLS_FILES))

# The DKMS source tree: what /usr/src/pagetrace-VERSION holds.
install-dkms-src:
	@set -e; for f in $(DKMS_FILES); do \
		install -D -m 0644 $$f $(DESTDIR)$(DKMS_SRCDIR)/$$f; \
	done
	sed 's/#MODULE_VERSION#/$(VERSION)/' dkms.conf >$(DESTDIR)$(DKMS_SRCDIR)/dkms.conf

dkms-install: install-dkms-src
	dkms status -m pagetrace -v $(VERSION) | grep -q . || dkms add -m pagetrace -v $(VERSION)
	dkms install -m pagetrace -v $(VERSION) -k $(KVER)

dkms-remove:
	-dkms remove -m pagetrace -v $(VERSION) --all
	rm -rf $(DKMS_SRCDIR)

# dkms add + build in build/dkms/ (source, tree and signing key), leaving
# the host's /usr/src and /var/lib/dkms alone; the module, decompressed,
# is copied to build/dkms/KVER/pagetrace.ko.  For a kernel in a chroot
# (KCHROOT), the chroot's dkms builds it.  dkms 3.2 (trixie, sid) looks
# for the headers in --installtree/KVER/build, older ones in /lib/modules:
# a link there finds KDIR for all (--kernelsourcedir would make bullseye's
# dkms 2.8 "prepare" the headers: make mrproper, which breaks them).
DKMS_PRIV	= dkms --sourcetree $(DKMS_DIR)/src --dkmstree $(DKMS_DIR)/tree \
		  --installtree $(DKMS_DIR)/modules
dkms-build:
	@# Also the module built last time: bullseye's dkms 2.8 keeps it despite
	@# --force ("already built").
	rm -rf $(DKMS_DIR)/src/pagetrace-$(VERSION) $(DKMS_DIR)/$(KVER) \
		$(DKMS_DIR)/tree/pagetrace/$(VERSION)/$(KVER)
	mkdir -p $(DKMS_DIR)/tree $(DKMS_DIR)/modules/$(KVER)
	ln -sfn $(KDIR) $(DKMS_DIR)/modules/$(KVER)/build
	$(MAKE) --no-print-directory install-dkms-src DESTDIR= \
		DKMS_SRCDIR=$(DKMS_DIR)/src/pagetrace-$(VERSION)
	$(KRUN) $(DKMS_PRIV) status -m pagetrace -v $(VERSION) | grep -q . || \
		$(KRUN) $(DKMS_PRIV) add -m pagetrace -v $(VERSION)
	$(KRUN) env mok_signing_key=$(DKMS_DIR)/mok.key mok_certificate=$(DKMS_DIR)/mok.pub \
		$(DKMS_PRIV) build -m pagetrace -v $(VERSION) -k $(KVER) --force
	@set -e; ko=$$(ls $(DKMS_DIR)/tree/pagetrace/$(VERSION)/$(KVER)/*/module/pagetrace.ko*); \
	mkdir -p $(DKMS_DIR)/$(KVER); \
	case $$ko in \
	*.xz)  xz -dc $$ko ;; \
	*.gz)  gzip -dc $$ko ;; \
	*.zst) zstd -dcq $$ko ;; \
	*)     cat $$ko ;; \
	esac >$(DKMS_DIR)/$(KVER)/pagetrace.ko; \
	echo "dkms built $$ko -> build/dkms/$(KVER)/pagetrace.ko"

deb:
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/pagetrace-$(VERSION)
	tar -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.cmd' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='*.order' \
		--exclude='*.symvers' VERSION Kbuild Makefile dkms.conf README.md \
		module uapi userspace man completion udev systemd debian | \
		tar -xf - -C $(DEB_DIR)/pagetrace-$(VERSION)
	$(MAKE) -C $(DEB_DIR)/pagetrace-$(VERSION)/userspace clean >/dev/null
	cd $(DEB_DIR)/pagetrace-$(VERSION) && dpkg-buildpackage -us -uc -b
	@if command -v lintian >/dev/null; then \
		echo "lintian --fail-on error build/deb/pagetrace_$(VERSION)_*.changes"; \
		lintian --fail-on error $(DEB_DIR)/pagetrace_$(VERSION)_*.changes; \
	else \
		echo "lintian is not installed: not checking the packages"; \
	fi

check-deb: deb
	scripts/test/check-deb.sh $(CHROOT) $(DEB_MIRROR) $(DEB_DIR)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C userspace clean
	-$(MAKE) -C selftests clean KDIR=$(KDIR)
	rm -rf build/ksrc build/lint build/static build/check
	rm -rf $(filter-out $(CURDIR)/build/vm,$(wildcard $(CURDIR)/build/*))

.PHONY: all module userspace test check check-matrix check-debug stress soak bench lint ksrc kbuild static selftests selftests-export kselftest-install clean \
	install install-module install-tools uninstall uninstall-module \
	uninstall-tools install-dkms-src dkms-install dkms-remove dkms-build \
	deb check-deb
