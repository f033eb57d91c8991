#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pagetrace.service under a real systemd.  Boots a VM whose root file
# system is Debian 12 (debootstrap minbase with systemd, udev and kmod)
# with pagetrace-tools installed from its .deb, pagetrace.ko where modprobe
# finds it, and systemd as PID 1; there scripts/test/systemd-guest.sh
# drives the unit with systemctl and journalctl (its header lists the
# tests).  Root only.  Prints one KTAP document; exit status 0 if every
# test passed.
#
# usage: scripts/test/check-systemd.sh ROOTFS DEBDIR KO VMLINUZ
#   ROOTFS   the debootstrap'd root, made the first time (a minute or a few)
#            from DEB_MIRROR (default http://deb.debian.org/debian) and
#            reused after that; each run works on a copy of it
#   DEBDIR   where `make deb` left pagetrace-tools_VERSION_ARCH.deb
#   KO       pagetrace.ko built for the kernel VMLINUZ boots
#   VMLINUZ  that kernel (its release is KO's vermagic)
#
# Why this way: the root is the initramfs itself (the kernel unpacks it
# into a tmpfs and runs /sbin/init, which is systemd; SYSTEMD_IN_INITRD=0
# on the command line tells it this is the system, not an initrd), so no
# disk image, no root= and no kernel module is needed to reach it.  The
# guest writes its KTAP to a second serial port, a file here; the first is
# the console (build/systemd-vm/console.log).  pagetrace-dkms is not
# installed (it needs a compiler and the headers in the guest; make
# check-deb tests it): the module is placed where DKMS would put it,
# /lib/modules/RELEASE/updates/dkms/.
set -uo pipefail

ROOTFS=${1:?usage: check-systemd.sh ROOTFS DEBDIR KO VMLINUZ}
DEBDIR=${2:?}
KO=${3:?}
VMLINUZ=${4:?}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MIRROR=${DEB_MIRROR:-http://deb.debian.org/debian}
VER=$(cat "$ROOT/VERSION")
ARCH=$(dpkg --print-architecture)
TOOLS_DEB=$DEBDIR/pagetrace-tools_${VER}_$ARCH.deb
W=$ROOT/build/systemd-vm
STAGE=$W/root
KTAP=$W/ktap.txt
CONSOLE=$W/console.log
TIMEOUT=${PT_SYSTEMD_TIMEOUT:-1200}
BOOT_TIMEOUT=300 # to the guest's KTAP header; a boot hung under TCG is retried once
PLAN=$(sed -n 's/^NTESTS=//p' "$ROOT/scripts/test/systemd-guest.sh")

# fail_all REASON: every test not ok, with the reason; exit 1.
fail_all() {
	echo "TAP version 13"
	echo "1..$PLAN"
	echo "# $1"
	for ((i = 1; i <= PLAN; i++)); do
		echo "not ok $i systemd test $i not run: $1"
	done
	exit 1
}

[ "$(id -u)" = 0 ] || { echo "TAP version 13"; echo "1..0 # SKIP not root"; exit 0; }
[ -f "$TOOLS_DEB" ] || fail_all "no $TOOLS_DEB (make deb)"
[ -f "$KO" ] || fail_all "no $KO"
[ -f "$VMLINUZ" ] || fail_all "no $VMLINUZ"
REL=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
[ -n "$REL" ] || fail_all "$KO has no vermagic"

# A server's minimum: systemd as init, udev, kmod for modprobe, D-Bus
# (systemd-run --wait needs it), procps; and libtracecmd1 (with
# libtraceevent1 and libtracefs1), which pagetrace-tools depends on: dpkg
# -i resolves nothing.  Made again when this list changes.
PKGS=systemd,systemd-sysv,udev,kmod,dbus,procps,libtracecmd1
if [ "$(cat "$ROOTFS/.pagetrace-packages" 2>/dev/null)" != "$PKGS" ]; then
	echo "# debootstrap bookworm with $PKGS into $ROOTFS (once; log: $ROOTFS.log)" >&2
	rm -rf "$ROOTFS.new"
	# Its mounts of /proc and /sys stay in a private namespace.
	unshare -m --propagation private debootstrap --variant=minbase --include="$PKGS" \
		bookworm "$ROOTFS.new" "$MIRROR" >"$ROOTFS.log" 2>&1 ||
		fail_all "debootstrap failed (log: $ROOTFS.log)"
	rm -f "$ROOTFS.new"/var/cache/apt/archives/*.deb
	echo "$PKGS" >"$ROOTFS.new/.pagetrace-packages"
	rm -rf "$ROOTFS"
	mv "$ROOTFS.new" "$ROOTFS"
fi

# --------------------------------------------------------------- the root
rm -rf "$W"
mkdir -p "$W"
cp -a "$ROOTFS" "$STAGE" || fail_all "cannot copy $ROOTFS"
rm -f "$STAGE/.pagetrace-packages"
cp "$TOOLS_DEB" "$STAGE/tmp/"
# As a user installs it; the postinst registers the unit, not enabled.
chroot "$STAGE" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
	dpkg -i "/tmp/${TOOLS_DEB##*/}" >"$W/dpkg.log" 2>&1 ||
	fail_all "dpkg -i ${TOOLS_DEB##*/} failed in the root (log: $W/dpkg.log)"
# Off until enabled; the guest checks what this says.  Then enabled, as
# an administrator would before a reboot: the guest boots with it.
mkdir -p "$STAGE/etc/pagetrace-test"
systemctl --root="$STAGE" is-enabled pagetrace.service >"$STAGE/etc/pagetrace-test/after-install" 2>&1
systemctl --root="$STAGE" enable pagetrace.service >>"$W/dpkg.log" 2>&1 ||
	fail_all "systemctl --root enable pagetrace.service failed (log: $W/dpkg.log)"
# Again, in the guest, over the running service: an upgrade.
mv "$STAGE/tmp/${TOOLS_DEB##*/}" "$STAGE/root/pagetrace-tools.deb"
mkdir -p "$STAGE/lib/modules/$REL/updates/dkms"
cp "$KO" "$STAGE/lib/modules/$REL/updates/dkms/pagetrace.ko"
for f in modules.builtin modules.builtin.modinfo modules.order; do
	[ -f "/lib/modules/$REL/$f" ] && cp "/lib/modules/$REL/$f" "$STAGE/lib/modules/$REL/"
done
depmod -b "$STAGE" "$REL" || fail_all "depmod -b $STAGE $REL failed"

install -m 0755 "$ROOT/scripts/test/systemd-guest.sh" "$STAGE/usr/local/sbin/pagetrace-systemd-test"
cat >"$STAGE/etc/systemd/system/pagetrace-systemd-test.service" <<'EOF'
[Unit]
Description=pagetrace.service under systemd: the tests (scripts/test/check-systemd.sh)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/pagetrace-systemd-test
TimeoutStartSec=infinity
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/pagetrace-systemd-test.service \
	"$STAGE/etc/systemd/system/multi-user.target.wants/pagetrace-systemd-test.service"
echo pagetrace-vm >"$STAGE/etc/hostname"
# Nothing to wait for: no network, no disks.
ln -sf /dev/null "$STAGE/etc/systemd/system/systemd-networkd-wait-online.service"

(cd "$STAGE" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$W/initrd.gz" ||
	fail_all "cannot pack the root into $W/initrd.gz"
rm -rf "$STAGE"

# ---------------------------------------------------------------- the boot
# boot: 0 when the guest powered off; 126 when it hung before the tests.
boot() {
	local job t0=$SECONDS
	: >"$KTAP"
	: >"$CONSOLE"
	( timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-accel "${PT_QEMU_ACCEL:-tcg,thread=single}" -cpu max -m 2048 -smp 2 \
		-nographic -no-reboot -nic none \
		-kernel "$VMLINUZ" -initrd "$W/initrd.gz" \
		-append "console=ttyS0 panic=-1 rdinit=/sbin/init SYSTEMD_IN_INITRD=0 systemd.unit=multi-user.target" \
		-serial mon:stdio -serial "file:$KTAP" -pidfile "$W/qemu.pid" </dev/null 2>&1 |
		sed -u 's/\r$//; s/\x1b\[[0-9;?]*[A-Za-z]//g' >>"$CONSOLE"
	  echo "${PIPESTATUS[0]}" >"$W/qemu.rc" ) &
	job=$!
	while kill -0 "$job" 2>/dev/null; do
		grep -q '^TAP version' "$KTAP" && break
		if [ $((SECONDS - t0)) -ge "$BOOT_TIMEOUT" ]; then
			kill "$(cat "$W/qemu.pid" 2>/dev/null)" 2>/dev/null
			wait "$job"
			return 126
		fi
		sleep 2
	done
	wait "$job"
	return "$(cat "$W/qemu.rc" 2>/dev/null || echo 1)"
}

boot
rc=$?
if [ "$rc" = 126 ]; then
	cp "$CONSOLE" "$W/console-hung.log"
	echo "# the guest did not reach the tests in ${BOOT_TIMEOUT}s: booting once more" >&2
	boot
	rc=$?
fi

tr -d '\r' <"$KTAP" >"$KTAP.clean"
ran=$(grep -cE '^(not )?ok [0-9]+ ' "$KTAP.clean")
if [ "$ran" = 0 ]; then
	tail -n 20 "$CONSOLE" | sed 's/^/# console: /'
	fail_all "the guest ran no test (qemu status $rc; console: $CONSOLE)"
fi
cat "$KTAP.clean"
for ((i = ran + 1; i <= PLAN; i++)); do
	[ "$i" = $((ran + 1)) ] && tail -n 20 "$CONSOLE" | sed 's/^/# console: /'
	echo "not ok $i systemd test $i did not finish (qemu status $rc; console: $CONSOLE)"
done
! grep -q '^not ok ' "$KTAP.clean" && [ "$ran" = "$PLAN" ]
