#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the .debs of `make deb` in a clean Debian 12 chroot; what
# `make check-deb` runs after `make deb`.  Root only; needs debootstrap and
# the Debian mirror.  Prints one KTAP document.
#
# usage: scripts/test/check-deb.sh CHROOT MIRROR DEBDIR
#   MIRROR is the Debian mirror; security updates come from
#   SECURITY_MIRROR (default MIRROR-security).
#
# CHROOT is created with debootstrap --variant=minbase bookworm the first
# time and reused after that (the packages are purged again at the end);
# remove it to start from scratch.  Each run starts from the bare chroot.  In the chroot: apt installs both
# packages and the headers of one kernel (CHROOT_KVER, default the
# installed 6.1 kernel's release, else the newest bookworm one), the DKMS
# postinst builds pagetrace.ko for it, then `pagetrace --version`, the man
# pages and the completion are checked, pagetrace.service is installed but
# not enabled, and a purge removes it all again.
set -uo pipefail

CHROOT=${1:?usage: check-deb.sh CHROOT MIRROR DEBDIR}
MIRROR=${2:?}
DEBDIR=${3:?}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VER=$(cat "$ROOT/VERSION")
KVER=${CHROOT_KVER:-$("$ROOT/scripts/vm/kernels.sh" 6.1 2>/dev/null)}
ARCH=$(dpkg --print-architecture)

echo "TAP version 13"
echo "1..7"
n=0
rc=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
notok() { n=$((n + 1)); echo "not ok $n $*"; rc=1; }
# run NAME CMD...: a result, with the command's output as diagnostics.
run() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
		notok "$name"
	fi
}
in_chroot() { chroot "$CHROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 0; }

if [ ! -x "$CHROOT/usr/bin/apt-get" ]; then
	echo "# debootstrap bookworm into $CHROOT (a few minutes, once)"
	rm -rf "$CHROOT.new"
	if ! debootstrap --variant=minbase bookworm "$CHROOT.new" "$MIRROR" \
		>"$CHROOT.log" 2>&1; then
		tail -n 20 "$CHROOT.log" | sed 's/^/# /'
		notok "debootstrap bookworm (log: $CHROOT.log)"
		exit 1
	fi
	mv "$CHROOT.new" "$CHROOT"
fi
ok "chroot $CHROOT"

mounted= headers=
cleanup() {
	# Back to the bare chroot (the downloaded .debs stay in apt's cache).
	in_chroot apt-get purge -y -q pagetrace-dkms pagetrace-tools "$headers" >/dev/null 2>&1
	in_chroot apt-get autoremove --purge -y -q >/dev/null 2>&1
	rm -rf "$CHROOT/tmp/debs" "$CHROOT/var/lib/dkms/mok.key" "$CHROOT/var/lib/dkms/mok.pub"
	[ -z "$mounted" ] || umount "$CHROOT/proc"
}
trap cleanup EXIT
mount -t proc proc "$CHROOT/proc" && mounted=1

rm -rf "$CHROOT/tmp/debs"
mkdir -p "$CHROOT/tmp/debs"
cp "$DEBDIR"/pagetrace-dkms_"$VER"_all.deb "$DEBDIR"/pagetrace-tools_"$VER"_"$ARCH".deb \
	"$CHROOT/tmp/debs/" || { notok "no .debs of version $VER in $DEBDIR (make deb)"; exit 1; }
# The host's kernels come from bookworm's point releases or security updates.
cat >"$CHROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${SECURITY_MIRROR:-$MIRROR-security} bookworm-security main
EOF
headers=linux-headers-${KVER:-amd64}
in_chroot apt-cache show "$headers" >/dev/null 2>&1 || in_chroot apt-get update -q >/dev/null 2>&1
run "apt install pagetrace-dkms pagetrace-tools $headers" \
	in_chroot apt-get install -y -q --no-install-recommends \
	"$headers" /tmp/debs/pagetrace-dkms_"$VER"_all.deb /tmp/debs/pagetrace-tools_"$VER"_"$ARCH".deb

run "pagetrace --version in the chroot" sh -c "
	chroot '$CHROOT' pagetrace --version | tee /dev/stderr | grep -q '^pagetrace $VER '"

# The DKMS postinst builds for the kernels whose headers are installed.
rel=$(basename "$(ls -d "$CHROOT"/lib/modules/*/build 2>/dev/null | head -1 | xargs -r dirname)")
run "dkms built and installed pagetrace.ko for ${rel:-no kernel}" sh -c "
	chroot '$CHROOT' dkms status pagetrace/$VER | tee /dev/stderr | grep -q 'installed' &&
	ls '$CHROOT'/lib/modules/$rel/updates/dkms/pagetrace.ko*"

# Signed as Debian 12's dkms signs every module it builds for a kernel
# with CONFIG_MODULE_SIG: with /var/lib/dkms/mok.key, made on the first
# build with openssl, and its certificate mok.pub (README.md, Secure Boot).
run "pagetrace.ko signed with the DKMS key, /var/lib/dkms/mok.pub" sh -c "
	set -e
	ko=\$(ls '$CHROOT'/lib/modules/$rel/updates/dkms/pagetrace.ko* | head -n 1)
	case \$ko in
	*.xz)  xz -dc \$ko ;;
	*.zst) zstd -dcq \$ko ;;
	*)     cat \$ko ;;
	esac >'$CHROOT/tmp/pagetrace.ko'
	signer=\$(modinfo -F signer '$CHROOT/tmp/pagetrace.ko')
	[ -f '$CHROOT/var/lib/dkms/mok.pub' ] || { echo dkms made no /var/lib/dkms/mok.pub; exit 1; }
	cn=\$(openssl x509 -inform DER -in '$CHROOT/var/lib/dkms/mok.pub' -noout -subject \
		-nameopt multiline | sed -n 's/^ *commonName *= *//p')
	echo \"\$ko: signer '\$signer', mok.pub's CN '\$cn'\"
	rm -f '$CHROOT/tmp/pagetrace.ko'
	[ -n \"\$signer\" ] && [ \"\$signer\" = \"\$cn\" ]"

run "man pages, completion, headers and udev rule installed" sh -c "
	for f in /usr/share/man/man1/pagetrace.1.gz /usr/share/man/man4/pagetrace.4.gz \
		/usr/share/man/man5/pagetrace-format.5.gz /usr/share/man/man3/libpagetrace.3.gz \
		/usr/share/bash-completion/completions/pagetrace /usr/include/libpagetrace.h \
		/usr/include/linux/pagetrace.h /lib/udev/rules.d/60-pagetrace.rules \
		/usr/src/pagetrace-$VER/dkms.conf; do
		[ -e '$CHROOT'\$f ] || { echo missing \$f; exit 1; }
	done"

# Installed, its settings a conffile, and off until enabled: no symlink
# under /etc/systemd/system, and deb-systemd-helper knows it as disabled
# (it wants DPKG_MAINTSCRIPT_PACKAGE, as from a maintainer script, even
# to answer a question).
run "pagetrace.service installed, not enabled; /etc/default/pagetrace a conffile" sh -c "
	set -e
	[ -f '$CHROOT'/lib/systemd/system/pagetrace.service ] || { echo no pagetrace.service; exit 1; }
	chroot '$CHROOT' dpkg-query -W -f='\${Conffiles}\n' pagetrace-tools |
		grep -q '^ /etc/default/pagetrace ' || { echo /etc/default/pagetrace: not a conffile; exit 1; }
	if ls '$CHROOT'/etc/systemd/system/*/pagetrace.service 2>/dev/null; then
		echo enabled on install; exit 1
	fi
	chroot '$CHROOT' env DPKG_MAINTSCRIPT_PACKAGE=pagetrace-tools \
		deb-systemd-helper debian-installed pagetrace.service ||
		{ echo the postinst did not register pagetrace.service; exit 1; }
	if chroot '$CHROOT' env DPKG_MAINTSCRIPT_PACKAGE=pagetrace-tools \
		deb-systemd-helper is-enabled pagetrace.service; then
		echo deb-systemd-helper says it is enabled; exit 1
	fi"
exit $rc
