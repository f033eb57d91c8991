#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module signatures, as a Secure Boot machine checks them; run by
# scripts/test/check.sh after its kernels, prints one KTAP document.
#
# usage: scripts/test/check-modsig.sh RELEASE [DEBUG-KDIR]
#   RELEASE     the Debian kernel whose DKMS build (make dkms-build) is in
#               build/dkms/RELEASE/pagetrace.ko, signed with build/dkms/mok.key
#   DEBUG-KDIR  the build tree of scripts/vm/debug-kernel.sh, whose module
#               build/DEBUG-RELEASE/pagetrace.ko (make kbuild) is unsigned;
#               without it the acceptance tests are skipped
#
#   dkms-signer     the DKMS module's signer is the subject (CN) of the DKMS
#                   certificate, its hash the kernel's CONFIG_MODULE_SIG_HASH,
#                   and its PKCS#7 signature verifies (openssl) over the
#                   module's contents with that certificate
#   unsigned-copy   objcopy of it drops the signature (modinfo: no signer)
#   RELEASE in a VM booted with module.sig_enforce=1 (Debian's kernel
#   trusts only Debian's own key, not the DKMS one, unless enrolled):
#     sig-enforce   /sys/module/module/parameters/sig_enforce is Y
#     dkms-refused  insmod of the DKMS-signed module fails with "Key was
#                   rejected by service" (EKEYREJECTED), dmesg says "Loading
#                   of module with unavailable key is rejected", not loaded
#     unsigned-refused  the same for the unsigned copy ("unsigned module")
#     modprobe-refused  modprobe of the DKMS-signed one, installed where
#                   DKMS puts it, fails the same way
#   the debug kernel, booted the same way (it trusts its build key,
#   certs/signing_key.pem):
#     sig-enforce, build-key-loads (its module signed with that key with
#     the tree's scripts/sign-file: insmod and rmmod succeed), dkms-refused
#     (the same module signed with the DKMS key instead)
#
# The messages checked are the ones README.md quotes.  Each VM boots only
# to run insmod (about 10 s each, Debian's kernel and the KASAN one, once
# their initramfs is cached in build/vm/modsig-*; building it takes up to
# half a minute more); VMs boot under /tmp/pt-vm.lock if PT_VM_LOCK=1.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
REL=${1:?usage: check-modsig.sh RELEASE [DEBUG-KDIR]}
DKD=${2:-}
DKMS_KO=$ROOT/build/dkms/$REL/pagetrace.ko
DKMS_KEY=$ROOT/build/dkms/mok.key
DKMS_CERT=$ROOT/build/dkms/mok.pub
OUT=$ROOT/build/modsig
VM_TIMEOUT=${MODSIG_VM_TIMEOUT:-300}
rm -rf "$OUT"
mkdir -p "$OUT"
TMP=$OUT/tmp
mkdir -p "$TMP"

echo "TAP version 13"
echo "1..9"
# shellcheck source=scripts/test/tap-results.sh
. "$ROOT/scripts/test/tap-results.sh"

# ------------------------------------------------------------ dkms-signer
# The layout sign-file appends (include/linux/module_signature.h): the
# PKCS#7 blob, a 12-byte struct module_signature whose last 4 bytes are
# the blob's length (big-endian), and the 28-byte magic string.
MAGIC='~Module signature appended~'
# split_sig KO BODY SIG: the module without its signature, and the blob.
has_magic() { [ "$(tail -c 28 "$1" | tr -d '\0\n')" = "$MAGIC" ]; }
split_sig() {
	local size len
	size=$(stat -c %s "$1")
	has_magic "$1" || return 1
	len=$(tail -c 32 "$1" | head -c 4 | od -An -tu1 |
		awk '{ print (($1 * 256 + $2) * 256 + $3) * 256 + $4 }')
	head -c $((size - 40 - len)) "$1" >"$2"
	tail -c $((40 + len)) "$1" | head -c "$len" >"$3"
}
if [ ! -f "$DKMS_KO" ] || [ ! -f "$DKMS_CERT" ]; then
	diag "no $DKMS_KO or $DKMS_CERT: run make dkms-build KVER=$REL first"
else
	cn=$(openssl x509 -inform DER -in "$DKMS_CERT" -noout -subject -nameopt multiline |
		sed -n 's/^ *commonName *= *//p')
	signer=$(modinfo -F signer "$DKMS_KO")
	algo=$(modinfo -F sig_hashalgo "$DKMS_KO")
	want_algo=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' "/lib/modules/$REL/build/.config" \
		"/boot/config-$REL" 2>/dev/null | head -n 1)
	echo "# $DKMS_KO: signer '$signer', sig_hashalgo '$algo'; DKMS certificate CN '$cn'"
	[ -n "$signer" ] || diag "the DKMS-built module has no signature (modinfo -F signer is empty)"
	[ "$signer" = "$cn" ] || diag "signer '$signer' is not the DKMS certificate's CN '$cn'"
	[ "$algo" = "${want_algo:-?}" ] ||
		diag "sig_hashalgo '$algo', the kernel's CONFIG_MODULE_SIG_HASH is '${want_algo:-unknown}'"
	if ! split_sig "$DKMS_KO" "$TMP/body" "$TMP/sig.p7"; then
		diag "no '$MAGIC' at the end of $DKMS_KO"
	elif ! openssl cms -verify -binary -inform DER -in "$TMP/sig.p7" -content "$TMP/body" \
		-certfile "$DKMS_CERT" -nointern -noverify -out /dev/null >"$TMP/cms.log" 2>&1; then
		diag "the module's PKCS#7 signature does not verify with $DKMS_CERT:"
		head -n 5 "$TMP/cms.log" >>"$TMP/diag"
	fi
fi
result dkms-signer

# ---------------------------------------------------------- unsigned-copy
# objcopy rewrites the ELF file from its sections: what sign-file
# appended after them is not copied.
if [ -f "$DKMS_KO" ] && objcopy "$DKMS_KO" "$TMP/unsigned.ko"; then
	s=$(modinfo -F signer "$TMP/unsigned.ko")
	[ -z "$s" ] || diag "objcopy's copy still has a signer: '$s'"
	! has_magic "$TMP/unsigned.ko" || diag "objcopy's copy still ends in '$MAGIC'"
else
	diag "no unsigned copy of $DKMS_KO (objcopy failed or no module)"
fi
result unsigned-copy

# ------------------------------------------------------------------ VMs
# The guest's script: load each NAME.ko of the share in turn, record
# insmod's status and words, the kernel log, whether it got loaded (then
# unload it), and the sig_enforce setting.
write_run_sh() {
	cat <<'EOF'
#!/bin/sh
# Generated by scripts/test/check-modsig.sh; runs as root in the VM.
R=/mnt/host/results
mkdir -p $R
# kmod's insmod, what users run (its words differ from busybox's), when
# the host's kmod came along (--bin); kmod picks the command by its name.
INSMOD=insmod
if [ -x /usr/local/bin/kmod ]; then
	ln -sf /usr/local/bin/kmod /tmp/insmod
	INSMOD=/tmp/insmod
fi
cat /sys/module/module/parameters/sig_enforce >$R/sig_enforce 2>&1
dmesg -c >$R/boot.dmesg
for ko in /mnt/host/*.ko; do
	m=$(basename $ko .ko)
	$INSMOD $ko >$R/$m.out 2>&1
	echo $? >$R/$m.rc
	dmesg -c >$R/$m.dmesg
	if grep -q '^pagetrace ' /proc/modules; then
		echo loaded >$R/$m.loaded
		rmmod pagetrace >>$R/$m.out 2>&1 && echo ok >$R/$m.rmmod
	fi
done
# modprobe, as users load the package's module: the first module
# installed where depmod finds it (kmod's depmod and modprobe).
if [ -x /usr/local/bin/kmod ] && [ -f /mnt/host/dkms.ko ]; then
	K=/lib/modules/$(uname -r)
	mkdir -p $K/updates/dkms
	cp /mnt/host/dkms.ko $K/updates/dkms/pagetrace.ko
	ln -sf /usr/local/bin/kmod /tmp/depmod
	ln -sf /usr/local/bin/kmod /tmp/modprobe
	/tmp/depmod -a
	/tmp/modprobe pagetrace >$R/modprobe.out 2>&1
	echo $? >$R/modprobe.rc
	dmesg -c >$R/modprobe.dmesg
	grep -q '^pagetrace ' /proc/modules && echo loaded >$R/modprobe.loaded
fi
sync
EOF
}

# boot SHARE VM-RUN-ARGS...: the share holds the modules; run them.
boot() {
	local S=$1 rc=0 t0=$SECONDS
	shift
	write_run_sh >"$S/run.sh"
	mkdir -p "$S/results"
	local cmd=(scripts/vm/vm-run.sh --share "$S" --timeout "$VM_TIMEOUT"
		--append "module.sig_enforce=1" "$@") kmod
	kmod=$(command -v kmod || true)
	[ -n "$kmod" ] && cmd+=(--bin "$kmod")
	[ "${PT_VM_LOCK:-0}" = 1 ] && cmd=(flock /tmp/pt-vm.lock "${cmd[@]}")
	"${cmd[@]}" >"$S/vm-run.log" 2>&1 || rc=$?
	echo "# VM ($*) finished in $((SECONDS - t0)) s, status $rc"
	[ "$rc" = 0 ] || { tail -n 15 "$S/vm-run.log" | sed 's/^/# /'; return 1; }
}

# enforced S: the guest had module.sig_enforce on.
enforced() {
	local v
	v=$(cat "$1/results/sig_enforce" 2>/dev/null)
	[ "$v" = Y ] || diag "sig_enforce in the guest is '${v:-missing}', not Y (module.sig_enforce=1 on the command line)"
}

# refused S NAME DMESG-WORDS: NAME.ko was refused for its signature.
refused() {
	local R=$1/results/$2 rc out
	rc=$(cat "$R.rc" 2>/dev/null)
	out=$(cat "$R.out" 2>/dev/null)
	echo "# $2: status ${rc:-none}: $out"
	sed -n '/[Ll]oading of\|signature\|rejected/s/^/# dmesg: /p' "$R.dmesg" 2>/dev/null | head -n 3
	if [ -z "$rc" ]; then
		diag "no result for $2: the guest script did not get to it"
		return
	fi
	[ "$rc" != 0 ] || diag "loading $2 succeeded under sig_enforce"
	[ ! -f "$R.loaded" ] || diag "$2 is in /proc/modules"
	grep -q 'Key was rejected by service' "$R.out" ||
		diag "loading $2 did not fail with 'Key was rejected by service' (EKEYREJECTED): $out"
	grep -q "Loading of $3 is rejected" "$R.dmesg" ||
		diag "dmesg has no 'Loading of $3 is rejected' for $2"
}

# loaded S NAME: NAME.ko loaded and unloaded.
loaded() {
	local R=$1/results/$2 rc
	rc=$(cat "$R.rc" 2>/dev/null)
	echo "# $2.ko: insmod status ${rc:-none}: $(cat "$R.out" 2>/dev/null)"
	[ "$rc" = 0 ] || diag "insmod $2.ko failed (status ${rc:-none}): $(cat "$R.out" 2>/dev/null)"
	[ -f "$R.loaded" ] || diag "$2.ko is not in /proc/modules after insmod"
	[ -f "$R.rmmod" ] || diag "rmmod pagetrace failed after loading $2.ko"
	! grep -q 'Loading of\|verification failed' "$R.dmesg" ||
		diag "dmesg complains about $2.ko's signature: $(grep 'Loading of\|verification failed' "$R.dmesg")"
}

# Debian's kernel: DKMS-signed (untrusted key) and unsigned, both refused.
S=$OUT/debian
mkdir -p "$S"
if [ -f "$DKMS_KO" ] && [ -f "$TMP/unsigned.ko" ]; then
	# Loaded in this order (the glob's): dkms, then unsigned.
	cp "$DKMS_KO" "$S/dkms.ko"
	cp "$TMP/unsigned.ko" "$S/unsigned.ko"
	# A failed boot fails the first result; the others fail on their
	# missing results.
	# Its own initramfs cache (--kernel names it): this one has kmod,
	# check.sh's runs of the same kernel other programs.
	boot "$S" --kernel "modsig-$REL" --kernel-image "/boot/vmlinuz-$REL" \
		--modules-dir "/lib/modules/$REL" || diag "the VM of $REL failed: ${S#"$ROOT"/}/console.log"
	enforced "$S"
	result "$REL sig-enforce"
	refused "$S" dkms "module with unavailable key"
	result "$REL dkms-refused"
	refused "$S" unsigned "unsigned module"
	result "$REL unsigned-refused"
	if [ -f "$S/results/modprobe.rc" ]; then
		refused "$S" modprobe "module with unavailable key"
		result "$REL modprobe-refused"
	else
		skip "$REL modprobe-refused" "no kmod on the host to run in the guest"
	fi
else
	for t in sig-enforce dkms-refused unsigned-refused modprobe-refused; do
		skip "$REL $t" "no DKMS-built module for $REL"
	done
fi

# The debug kernel: its own key accepted, the DKMS one refused.
why=""
if [ -z "$DKD" ]; then
	why="no debug kernel given (KERNELS without debug)"
elif ! grep -qx 'CONFIG_MODULE_SIG=y' "$DKD/.config" 2>/dev/null; then
	why="the debug kernel in $DKD has no CONFIG_MODULE_SIG"
elif [ ! -f "$DKD/certs/signing_key.pem" ] || [ ! -x "$DKD/scripts/sign-file" ]; then
	why="no certs/signing_key.pem or scripts/sign-file in $DKD"
else
	drel=$(make -s -C "$DKD" kernelrelease)
	dko=$ROOT/build/$drel/pagetrace.ko
	[ -f "$dko" ] || why="no $dko (make kbuild KVER=$drel KDIR=$DKD)"
fi
if [ -n "$why" ]; then
	for t in sig-enforce build-key-loads dkms-refused; do skip "debug $t" "$why"; done
else
	S=$OUT/debug
	mkdir -p "$S"
	dalgo=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' "$DKD/.config")
	# Named so that the glob loads the accepted one first (a refused load
	# leaves nothing behind anyway).
	objcopy "$dko" "$S/a-buildkey.ko"
	cp "$S/a-buildkey.ko" "$S/b-dkms.ko"
	if ! "$DKD/scripts/sign-file" "$dalgo" "$DKD/certs/signing_key.pem" \
		"$DKD/certs/signing_key.pem" "$S/a-buildkey.ko" >"$TMP/sign.log" 2>&1 ||
	   ! "$DKD/scripts/sign-file" "$dalgo" "$DKMS_KEY" "$DKMS_CERT" "$S/b-dkms.ko" \
		>>"$TMP/sign.log" 2>&1; then
		diag "sign-file failed: $(head -n 3 "$TMP/sign.log")"
	fi
	echo "# debug kernel $drel: signers '$(modinfo -F signer "$S/a-buildkey.ko")'" \
		"and '$(modinfo -F signer "$S/b-dkms.ko")'"
	PT_QEMU_ARGS="-machine q35 ${PT_QEMU_ARGS:-}" \
		boot "$S" --kernel-image "$DKD/arch/x86/boot/bzImage" --modules-dir none \
		--kernel modsig-debug || diag "the VM of $drel failed: ${S#"$ROOT"/}/console.log"
	enforced "$S"
	result "debug sig-enforce"
	loaded "$S" a-buildkey
	result "debug build-key-loads"
	refused "$S" b-dkms "module with unavailable key"
	result "debug dkms-refused"
fi
exit $failed
