#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Packaging checks, run by scripts/test/check.sh; prints one KTAP document.
#
# usage: scripts/test/check-packaging.sh [PAGETRACE]
#   PAGETRACE  the built CLI (default userspace/pagetrace)
#
#   version     VERSION, PGTRACE_VERSION_STRING, debian/changelog and dkms.conf
#               agree
#   man-lint    every man page formats with zero groff/man warnings
#   man-cli     the commands of `pagetrace --help`, and each command's long
#               options, are documented in man/man1/pagetrace.1
#   man-dev     every PAGETRACE_IOC_* of the uapi header, and mmap if the
#               module has it, is described in man/man4/pagetrace.4
#   man-lib     every pgtrace_* function libpagetrace.h declares has a
#               man/man3/NAME.3 page that lists it under NAME, and no page
#               names a function the header does not declare
#   completion  completion/pagetrace completes the commands, options and
#               file names (bash, COMP_WORDS/COMP_CWORD/COMPREPLY)
#   service     systemd/pagetrace.service loads the module and runs the flight
#               recorder with the settings of systemd/pagetrace.default
#               (every variable it uses is set there, every one set is
#               used), and systemd-analyze verify finds nothing to say
#   install     make install DESTDIR=tmp installs exactly the expected files,
#               the installed CLI runs and the installed library links;
#               make uninstall leaves no file behind; make install-module
#               SIGN_KEY=PEM (key and certificate in one file) installs a
#               module whose signer is that certificate's CN
#   namespace   the installed headers build in one translation unit with
#               libipt's <intel-pt.h>, which also claims pt_
#   deb         make deb (dpkg-buildpackage -b and lintian --fail-on error);
#               pagetrace-tools has the unit and /etc/default/pagetrace as a
#               conffile, and its postinst enables the unit only if it was
#               enabled before (an upgrade); skipped with PKG_DEB=0; the
#               chroot test is `make check-deb`
#
# Each failure says what is missing and where, e.g. for a new CLI command
# "man/man1/pagetrace.1 has no '.SS record' section under .SH COMMANDS".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
CLI=${1:-$ROOT/userspace/pagetrace}
HDR=userspace/lib/libpagetrace.h
MAN1=man/man1/pagetrace.1
PKG_DEB=${PKG_DEB:-1}
TMP=$(mktemp -d) || exit 2
trap 'rm -rf "$TMP"' EXIT

echo "TAP version 13"
echo "1..10"
# shellcheck source=scripts/test/tap-results.sh
. "$ROOT/scripts/test/tap-results.sh"

# ---------------------------------------------------------------- version
ver=$(cat VERSION 2>/dev/null)
[ -n "$ver" ] || diag "VERSION is missing or empty"
pt=$(sed -n 's/^#define[[:space:]]*PGTRACE_VERSION_STRING[[:space:]]*"\(.*\)"/\1/p' "$HDR")
[ "$pt" = "$ver" ] || diag "PGTRACE_VERSION_STRING in $HDR is '$pt', VERSION says '$ver'"
deb=$(sed -n '1s/^pagetrace (\([^)-]*\).*/\1/p' debian/changelog)
[ "$deb" = "$ver" ] || diag "debian/changelog's version is '$deb', VERSION says '$ver' (dch -v $ver)"
grep -q '^PACKAGE_VERSION="#MODULE_VERSION#"$' dkms.conf ||
	diag "dkms.conf: PACKAGE_VERSION must be \"#MODULE_VERSION#\" (filled in from VERSION)"
if [ -x "$CLI" ]; then
	"$CLI" --version | grep -q "^pagetrace $ver " ||
		diag "pagetrace --version says '$("$CLI" --version)', VERSION says '$ver'"
fi
result version

# --------------------------------------------------------------- man-lint
pages=$(cd man && ls man[1-8]/*.[1-8])
[ -n "$pages" ] || diag "no man pages under man/"
for p in $pages; do
	# From man/, so that .so links resolve.
	out=$(cd man && { groff -t -ww -man -z "$p" 2>&1; man --warnings -l "$p" 2>&1 >/dev/null; })
	[ -z "$out" ] || diag "man/$p: $out"
done
result man-lint

# ---------------------------------------------------------------- man-cli
if [ ! -x "$CLI" ]; then
	diag "no pagetrace CLI at $CLI (make userspace)"
else
	# Commands: the first word of each line under "commands:" in --help.
	"$CLI" --help | awk '/^commands:/ { on = 1; next }
		on && /^[^ ]/ { on = 0 } on && /^  [a-z]/ { print $1 }' | sort -u >"$TMP/cli"
	[ -s "$TMP/cli" ] || diag "pagetrace --help lists no commands"
	# Documented: ".SS name" under ".SH COMMANDS".
	awk '/^\.SH/ { on = ($2 == "COMMANDS") } on && /^\.SS/ { print $2 }' "$MAN1" |
		tr -d '"' | sort -u >"$TMP/man"
	comm -23 "$TMP/cli" "$TMP/man" | while read -r c; do
		diag "$MAN1 has no '.SS $c' section under .SH COMMANDS for the command '$c'" \
			"(and add it to the SYNOPSIS)"
	done
	comm -13 "$TMP/cli" "$TMP/man" | while read -r c; do
		diag "$MAN1 documents '$c', which pagetrace --help does not list"
	done
	# Long options of each command, in its section.
	while read -r c; do
		sect=$(awk -v c="$c" '/^\.S[SH]/ { on = ($1 == ".SS" && $2 == c) } on' "$MAN1" |
			sed 's/\\-/-/g')
		"$CLI" "$c" --help 2>/dev/null | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u |
		while read -r o; do
			[ "$o" = --help ] && continue
			grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" <<<"$sect" ||
				diag "$MAN1: section '.SS $c' does not document $o (from pagetrace $c --help)"
		done
	done <"$TMP/cli"
fi
result man-cli

# ---------------------------------------------------------------- man-lib
# Public functions: what the preprocessed header declares with a pgtrace_ name.
if ! ${CC:-cc} -E -P -I uapi "$HDR" >"$TMP/hdr.i" 2>"$TMP/cc.log"; then
	diag "$HDR does not preprocess: $(head -3 "$TMP/cc.log")"
fi
grep -oE '\bpgtrace_[a-z0-9_]+[[:space:]]*\(' "$TMP/hdr.i" | tr -d ' (' | sort -u >"$TMP/funcs"
[ -s "$TMP/funcs" ] || diag "found no pgtrace_* functions in $HDR"
# A page's NAME section, following a .so link.
page_names() {
	local f=man/man3/$1.3 so
	so=$(sed -n 's/^\.so[[:space:]]*//p' "$f" | head -1)
	[ -n "$so" ] && f=man/$so
	[ -f "$f" ] || return
	awk '/^\.SH/ { on = ($2 == "NAME"); next } on' "$f" | sed 's/\\-.*//' | tr ', ' '\n\n'
}
while read -r f; do
	if [ ! -f "man/man3/$f.3" ]; then
		diag "$f() is declared in $HDR but has no man page: add man/man3/$f.3" \
			"(a page, or '.so man3/OTHER.3' if OTHER.3 documents it and lists $f under NAME)," \
			"and list it in man/man3/libpagetrace.3"
	elif ! page_names "$f" | grep -qx "$f"; then
		diag "man/man3/$f.3 (or the page it .so-links to) does not list $f under .SH NAME"
	fi
	grep -qF "$f" man/man3/libpagetrace.3 || diag "man/man3/libpagetrace.3 does not list $f"
done <"$TMP/funcs"
for p in man/man3/pgtrace_*.3; do
	[ -e "$p" ] || continue
	f=$(basename "$p" .3)
	grep -qx "$f" "$TMP/funcs" || diag "$p documents $f(), which $HDR does not declare"
done
result man-lib

# ---------------------------------------------------------------- man-dev
MAN4=man/man4/pagetrace.4
for ioc in $(sed -n 's/^#define[[:space:]]*\(PAGETRACE_IOC_[A-Z0-9_]*\)[[:space:]]*_IO.*/\1/p' \
		uapi/linux/pagetrace.h); do
	grep -q "^\.B $ioc\$" "$MAN4" ||
		diag "$MAN4 does not describe $ioc (a '.TP' / '.B $ioc' entry under .SS ioctl)"
done
if grep -qE '^[[:space:]]*\.mmap[[:space:]]*=' module/*.c; then
	grep -q 'has no$' "$MAN4" &&
		diag "$MAN4 says the device has no mmap(2), but the module has one: document it under .SS mmap"
fi
result man-dev

# ------------------------------------------------------------- completion
if [ ! -x "$CLI" ]; then
	diag "no pagetrace CLI at $CLI"
else
	mkdir -p "$TMP/bin" "$TMP/files"
	ln -sf "$CLI" "$TMP/bin/pagetrace"
	: >"$TMP/files/trace-a.bin"
	: >"$TMP/files/trace-b.bin"
	cmds=$(tr '\n' ' ' <"$TMP/cli")
	first=$(head -1 "$TMP/cli")
	PATH=$TMP/bin:$PATH bash --norc --noprofile -c '
		. completion/pagetrace || exit 1
		cd "$1/files" || exit 1
		# t EXPECTED WORD...: complete the last word, compare sorted COMPREPLY.
		t() {
			local want=$1 got; shift
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
			_pagetrace
			got=$(printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " ")
			want=$(printf "%s\n" $want | sort | tr "\n" " ")
			[ "$got" = "$want" ] || echo "completing \"$*\": got \"$got\", want \"$want\""
		}
		t "$2" pagetrace ""
		t "--help --version" pagetrace --
		t "trace-a.bin trace-b.bin" pagetrace "$3" tr
		t "" pagetrace "$3" nothing-matches
		t "--verbose" pagetrace dump --verb
		t "--json" pagetrace stats --j
		t "trace-a.bin trace-b.bin" pagetrace "$3" -- tr
		complete -p pagetrace | grep -q _pagetrace || echo "no complete -F _pagetrace pagetrace"
	' - "$TMP" "$cmds" "$first" >>"$TMP/diag" 2>&1
fi
result completion

# ---------------------------------------------------------------- service
UNIT=systemd/pagetrace.service
SETTINGS=systemd/pagetrace.default
if [ ! -f "$UNIT" ] || [ ! -f "$SETTINGS" ]; then
	diag "$UNIT or $SETTINGS is missing"
else
	# The unit's lines with continuations joined, as systemd reads them.
	sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$UNIT" >"$TMP/unit"
	grep -qx 'EnvironmentFile=/etc/default/pagetrace' "$TMP/unit" ||
		diag "$UNIT: no EnvironmentFile=/etc/default/pagetrace"
	grep -q '^ExecStartPre=.*modprobe pagetrace' "$TMP/unit" ||
		diag "$UNIT: no ExecStartPre= that loads the module (modprobe pagetrace)"
	start=$(sed -n 's/^ExecStart=//p' "$TMP/unit")
	for o in /usr/bin/pagetrace record --flight-recorder -o --max-files; do
		grep -qE -- "(^| )$o( |\$)" <<<"$start" ||
			diag "$UNIT: ExecStart= has no '$o': '$start'"
	done
	grep -qx 'WantedBy=multi-user.target' "$TMP/unit" ||
		diag "$UNIT: no WantedBy=multi-user.target under [Install] (systemctl enable)"
	# The variables of the Exec lines ("$$" is the shell's "$") and the settings.
	grep '^Exec' "$TMP/unit" | sed 's/\$\$//g' | grep -oE '\$\{?[A-Za-z_][A-Za-z0-9_]*' |
		tr -d '${' | sort -u >"$TMP/used"
	sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' "$SETTINGS" | sort -u >"$TMP/set"
	comm -23 "$TMP/used" "$TMP/set" | while read -r v; do
		diag "$UNIT uses \$$v, which $SETTINGS does not set"
	done
	comm -13 "$TMP/used" "$TMP/set" | while read -r v; do
		diag "$SETTINGS sets $v, which $UNIT does not use"
	done
	# systemd's own check.  It wants the programs there: the built CLI
	# stands in for /usr/bin/pagetrace (the man page is man-lint's).
	if ! command -v systemd-analyze >/dev/null; then
		echo "# systemd-analyze missing (apt install systemd): the unit is not verified"
	elif [ -x "$CLI" ]; then
		mkdir -p "$TMP/unitdir"
		sed "s|/usr/bin/pagetrace|$CLI|" "$UNIT" >"$TMP/unitdir/pagetrace.service"
		if ! systemd-analyze verify --man=no "$TMP/unitdir/pagetrace.service" \
			>"$TMP/verify.log" 2>&1 || [ -s "$TMP/verify.log" ]; then
			diag "systemd-analyze verify $UNIT:"
			sed "s|$TMP/unitdir/||" "$TMP/verify.log" >>"$TMP/diag"
		fi
	fi
fi
result service

# ---------------------------------------------------------------- install
D=$TMP/destdir
mkdir -p "$D"
kver=$(make -s --no-print-directory -f Makefile -f - print-kver <<<'print-kver: ; @echo $(KVER)' 2>/dev/null)
NS_SKIP="make install failed, so there is no installed header"
if ! make install DESTDIR="$D" >"$TMP/install.log" 2>&1; then
	diag "make install DESTDIR=... failed:"
	tail -n 15 "$TMP/install.log" >>"$TMP/diag"
else
	{
		echo "lib/modules/$kver/extra/pagetrace.ko"
		echo "etc/udev/rules.d/60-pagetrace.rules"
		for f in bin/pagetrace lib/libpagetrace.a include/libpagetrace.h \
			include/linux/pagetrace.h share/bash-completion/completions/pagetrace; do
			echo "usr/local/$f"
		done
		for p in $pages; do echo "usr/local/share/man/$p"; done
		echo "usr/local/lib/systemd/system/pagetrace.service"
		echo "etc/default/pagetrace"
	} | sort >"$TMP/want"
	(cd "$D" && find . -type f -o -type l) | sed 's|^\./||' | sort >"$TMP/got"
	if ! cmp -s "$TMP/want" "$TMP/got"; then
		diag "make install installed (+) / missed (-):"
		diff "$TMP/want" "$TMP/got" | grep '^[<>]' | sed 's/^</-/; s/^>/+/' >>"$TMP/diag"
	fi
	"$D/usr/local/bin/pagetrace" --version >/dev/null ||
		diag "the installed pagetrace --version failed"
	grep -q '^ExecStart=/usr/local/bin/pagetrace record ' \
		"$D/usr/local/lib/systemd/system/pagetrace.service" 2>/dev/null ||
		diag "the installed pagetrace.service does not run /usr/local/bin/pagetrace"
	cat >"$TMP/prog.c" <<-'EOF'
	#include <libpagetrace.h>
	int main(void) { return pgtrace_event_type_name(PGTRACE_EV_ALLOC)[0] != 'a'; }
	EOF
	${CC:-cc} -I"$D/usr/local/include" -o "$TMP/prog" "$TMP/prog.c" \
		-L"$D/usr/local/lib" -lpagetrace >"$TMP/cc.log" 2>&1 && "$TMP/prog" ||
		{ diag "a program using the installed libpagetrace does not build or run:"
		  head -n 5 "$TMP/cc.log" >>"$TMP/diag"; }
	# The installed headers beside libipt's, which claims pt_ (struct
	# pt_event, pt_config): one translation unit must build with both.
	NS_SKIP=
	if [ -f /usr/include/intel-pt.h ]; then
		cat >"$TMP/ns.c" <<-'EOF'
		#include <intel-pt.h>
		#include <libpagetrace.h>
		#include <linux/pagetrace.h>
		int main(void)
		{
			struct pt_config ipt;
			struct pgtrace_event ev = { 0 };

			pt_config_init(&ipt);
			return (int)ev.npages + pgtrace_event_type_name(PGTRACE_EV_FREE)[0] - 'f';
		}
		EOF
		${CC:-cc} -Wall -Wextra -Werror -I"$D/usr/local/include" -o "$TMP/ns" \
			"$TMP/ns.c" -L"$D/usr/local/lib" -lpagetrace >"$TMP/ns.log" 2>&1 ||
			{ echo "the installed libpagetrace.h does not build beside <intel-pt.h>:"
			  head -n 5 "$TMP/ns.log"; } >"$TMP/ns.diag"
	else
		NS_SKIP="no /usr/include/intel-pt.h (libipt-dev; scripts/deps.sh installs it)"
	fi
	if ! make uninstall DESTDIR="$D" >"$TMP/uninstall.log" 2>&1; then
		diag "make uninstall DESTDIR=... failed:"
		tail -n 15 "$TMP/uninstall.log" >>"$TMP/diag"
	fi
	left=$(cd "$D" && find . -type f -o -type l)
	[ -z "$left" ] || diag "make uninstall left: $(echo $left)"
	# Signing, with a throwaway key whose CN is this run's own.
	cn="pagetrace check-packaging $$"
	if ! openssl req -new -x509 -nodes -days 1 -subj "/CN=$cn" -newkey rsa:2048 \
		-keyout "$TMP/sign.pem" -out "$TMP/sign.crt" >"$TMP/sign.log" 2>&1; then
		diag "openssl could not make a signing key: $(head -n 3 "$TMP/sign.log")"
	else
		cat "$TMP/sign.crt" >>"$TMP/sign.pem"
		if ! make install-module DESTDIR="$TMP/signed" SIGN_KEY="$TMP/sign.pem" \
			>"$TMP/sign.log" 2>&1; then
			diag "make install-module SIGN_KEY=... failed:"
			tail -n 5 "$TMP/sign.log" >>"$TMP/diag"
		else
			s=$(modinfo -F signer "$TMP/signed/lib/modules/$kver/extra/pagetrace.ko")
			[ "$s" = "$cn" ] ||
				diag "make install-module SIGN_KEY=... installed a module signed by '$s', not '$cn'"
		fi
	fi
fi
result install
if [ -n "${NS_SKIP:-}" ]; then
	skip namespace "$NS_SKIP"
else
	[ -s "$TMP/ns.diag" ] && cat "$TMP/ns.diag" >>"$TMP/diag"
	result namespace
fi

# -------------------------------------------------------------------- deb
if [ "$PKG_DEB" = 0 ]; then
	skip deb "PKG_DEB=0"
elif ! command -v dpkg-buildpackage >/dev/null || ! command -v lintian >/dev/null ||
	! dpkg-query -W -f='${Status}' dh-dkms 2>/dev/null | grep -q 'ok installed'; then
	skip deb "dpkg-buildpackage, lintian or dh-dkms missing (scripts/deps.sh installs them)"
else
	if ! make deb >"$TMP/deb.log" 2>&1; then
		diag "make deb failed (lintian errors are failures):"
		grep -E '^E: |error' "$TMP/deb.log" | head -n 20 >>"$TMP/diag"
		tail -n 10 "$TMP/deb.log" >>"$TMP/diag"
	else
		tools=build/deb/pagetrace-tools_"$ver"_"$(dpkg --print-architecture)".deb
		for p in build/deb/pagetrace-dkms_"$ver"_all.deb "$tools"; do
			[ -f "$p" ] || diag "make deb did not produce $p"
		done
		# The service: installed, its settings a conffile, not enabled.
		if [ -f "$tools" ]; then
			dpkg-deb -c "$tools" | awk '{ print $NF }' >"$TMP/deb.files"
			for f in /usr/bin/pagetrace /lib/systemd/system/pagetrace.service \
				/etc/default/pagetrace; do
				grep -qx "\\.$f" "$TMP/deb.files" || diag "$tools does not install $f"
			done
			dpkg-deb -e "$tools" "$TMP/ctl"
			grep -qx /etc/default/pagetrace "$TMP/ctl/conffiles" 2>/dev/null ||
				diag "$tools: /etc/default/pagetrace is not a conffile"
			# dh_installsystemd --no-enable: "enable" only for a unit installed
			# before (an upgrade keeps it as the administrator left it):
			# inside "if deb-systemd-helper debian-installed ...; then".
			for s in preinst postinst; do
				[ -f "$TMP/ctl/$s" ] || continue
				awk -v f="$tools $s" '
					/^[ \t]*if / { depth++
						if (!guard && /debian-installed/) guard = depth }
					/(systemctl|deb-systemd-helper).* enable/ && !guard {
						print f " enables the service: " $0 }
					/^[ \t]*fi([ \t;]|$)/ { if (guard == depth) guard = 0; depth-- }
				' "$TMP/ctl/$s" >>"$TMP/diag"
			done
		fi
		# Lintian warnings are not failures, but show them.
		grep -E '^[WI]: ' "$TMP/deb.log" | sed 's/^/lintian: /' | head -n 20 |
			while read -r l; do echo "# $l"; done
	fi
fi
[ "$PKG_DEB" = 0 ] || result deb

exit $failed
