#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pagetrace.service under a real systemd: the guest half of
# scripts/test/check-systemd.sh.  It runs as the oneshot unit
# pagetrace-systemd-test.service in a VM that boots Debian 12 with systemd
# as PID 1, pagetrace-tools installed from its .deb and pagetrace.ko where
# modprobe finds it.  It drives the unit as an administrator would
# (systemctl, journalctl, the settings file), writes one KTAP document to
# PT_KTAP_OUT (default /dev/ttyS1, a file on the host) and powers the VM
# off.
#
# The tests, in order (each leaves the unit as the next expects it):
#   installed     the package's unit is there, and was disabled after the
#                 install (check-systemd.sh then enabled it)
#   at_boot       enabled, it started at boot: ExecStartPre= loaded the
#                 module with PAGETRACE_MODULE_OPTIONS, the recorder records
#   journal       the recorder's messages are in the journal of the unit
#   state_dir     StateDirectory= made /var/lib/pagetrace root:adm 0750
#   signal_file   SIGUSR1 to the main process: one trace file, root:adm
#                 0640 (Group=, UMask=), that decodes, names its trigger
#                 and its stack frames, and opens in report and pprof for
#                 a member of adm who is not root (for no one else)
#   oom_file      a memory-limited unit (systemd-run -p MemoryMax=) is
#                 OOM-killed: a file for trigger oom, whose trace holds the
#                 victim's allocations under its name
#   restart       the recorder SIGKILLed: restarted after RestartSec=,
#                 NRestarts=1, the new recorder records and writes files
#   upgrade       the .deb installed again over the running service: the
#                 postinst restarts it, still enabled
#   max_files     PAGETRACE_MAX_FILES=2 and three signals: the newest two
#                 files and their sidecars are kept, no temporary file
#   stop          systemctl stop while a trigger waits out --post: the
#                 file is written, SIGTERM ends the recorder with status 0,
#                 the session stops, the module stays
#   bad_setting   a bad PAGETRACE_KEEP: exit status 2, not restarted
#                 (RestartPreventExitStatus=), the error in the journal
#   no_module     no module to load: ExecStartPre= says what to install,
#                 the restarts end at the start limit (StartLimitBurst=)
#   disable       systemctl disable --now: stopped, no longer enabled
#   enable_now    systemctl enable --now with the module loaded: the
#                 options written to its parameters, recording again
set -u

OUT=${PT_KTAP_OUT:-/dev/ttyS1}
DIR=/var/lib/pagetrace
SETTINGS=/etc/default/pagetrace
PARAMS=/sys/module/pagetrace/parameters
KO=/lib/modules/$(uname -r)/updates/dkms/pagetrace.ko
DROPIN=/run/systemd/system/pagetrace.service.d
NTESTS=14

exec 3>"$OUT"
stty -F "$OUT" raw -echo 2>/dev/null
n=0
failed=0
DIAG=$(mktemp)
T0=$SECONDS

# diag MSG...: a diagnostic line for the test running now.
diag() { echo "$*" >>"$DIAG"; }
# result NAME: ok if no diagnostics were written since the last result.
result() {
	n=$((n + 1))
	if [ -s "$DIAG" ]; then
		sed 's/^/# /' "$DIAG" >&3
		echo "not ok $n $1" >&3
		failed=$((failed + 1))
	else
		echo "ok $n $1" >&3
	fi
	echo "# $1 took $((SECONDS - T0)) s" >&3
	T0=$SECONDS
	: >"$DIAG"
}
# wait_for SECONDS CMD...: poll CMD every 0.5 s until it succeeds.
wait_for() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
prop() { systemctl show -p "$1" --value pagetrace.service; }
recording() { [ "$(cat $PARAMS/recording 2>/dev/null)" = Y ]; }
not_recording() { [ "$(cat $PARAMS/recording 2>/dev/null)" = N ]; }
# journal_has REGEX: the unit's journal of this boot matches.
journal_has() { journalctl -q -b -u pagetrace.service -o cat | grep -Eq -e "$1"; }
# The recorder's line for each file written: "pagetrace: trigger EXPR
# (DETAIL): SIZE, SECS s of trace to FILE".
written() { journalctl -q -b -u pagetrace.service -o cat |
	sed -En "s/^pagetrace: trigger $1( \([^)]*\))?: .* of trace to //p"; }
# more: more files written for trigger signal than $w, counted before.
more() { [ "$(written signal | wc -l)" -gt "$w" ]; }
files() { ls "$DIR"/pagetrace-*.bin 2>/dev/null; }
nfiles() { files | wc -l; }
# set_setting NAME VALUE: in the settings file, as an administrator would.
set_setting() { sed -i "s|^$1=.*|$1=$2|" "$SETTINGS"; }
unit_state() { echo "ActiveState=$(prop ActiveState) SubState=$(prop SubState)" \
	"Result=$(prop Result) ExecMainStatus=$(prop ExecMainStatus)" \
	"NRestarts=$(prop NRestarts)"; }
journal_tail() { journalctl -q -b -u pagetrace.service -o cat | tail -n "${1:-10}" |
	sed 's/^/journal: /' >>"$DIAG"; }

cp "$SETTINGS" /run/pagetrace.default.orig
# Users who are not root: nobody in the adm group, and nobody alone.
mkdir -p /run/pt-user
chmod 1777 /run/pt-user
as_adm() { setpriv --reuid=nobody --regid=nogroup --groups=adm -- "$@"; }
as_other() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

echo "TAP version 13" >&3
echo "1..$NTESTS" >&3
echo "# systemd $(systemctl --version | head -n1 | cut -d' ' -f2), kernel $(uname -r)," \
	"pagetrace $(pagetrace --version | cut -d' ' -f2)" >&3

# ------------------------------------------------------------------ installed
# check-systemd.sh wrote down what the package left (before it enabled the
# unit for the next test): installed, and disabled.
[ "$(readlink /proc/1/exe)" = /usr/lib/systemd/systemd ] ||
	[ "$(readlink /proc/1/exe)" = /lib/systemd/systemd ] ||
	diag "PID 1 is $(readlink /proc/1/exe), not systemd"
[ -f /lib/systemd/system/pagetrace.service ] || diag "no /lib/systemd/system/pagetrace.service"
st=$(cat /etc/pagetrace-test/after-install 2>&1)
[ "$st" = disabled ] || diag "is-enabled said '$st' after the install, not disabled"
result installed

# -------------------------------------------------------------------- at_boot
# Enabled, it started at boot (before this test), and its ExecStartPre=
# loaded the module with PAGETRACE_MODULE_OPTIONS ("stack_rate=64", the
# settings' default; the module's own default is 0).
st=$(systemctl is-enabled pagetrace.service 2>&1)
[ "$st" = enabled ] || diag "is-enabled says '$st'"
[ -e /etc/systemd/system/multi-user.target.wants/pagetrace.service ] ||
	diag "no multi-user.target.wants/pagetrace.service"
wait_for 60 recording || { diag "not recording 60 s into the test: $(unit_state)"; journal_tail; }
[ "$(prop ActiveState)" = active ] || diag "not active: $(unit_state)"
t_svc=$(prop ExecMainStartTimestampMonotonic)
t_test=$(systemctl show -p ExecMainStartTimestampMonotonic --value pagetrace-systemd-test.service)
if [ "${t_svc:-0}" = 0 ] || [ "$t_svc" -ge "${t_test:-0}" ]; then
	diag "not started at boot: at $t_svc us, this test at $t_test us"
fi
opt=$(sed -n 's/^PAGETRACE_MODULE_OPTIONS="\?\([^"]*\)"\?$/\1/p' "$SETTINGS")
case $opt in
stack_rate=*)
	v=$(cat $PARAMS/stack_rate 2>/dev/null)
	[ "$v" = "${opt#stack_rate=}" ] ||
		diag "stack_rate is '$v': modprobe did not pass PAGETRACE_MODULE_OPTIONS='$opt'" ;;
*)	diag "the settings' PAGETRACE_MODULE_OPTIONS is '$opt', expected stack_rate=N" ;;
esac
result at_boot

# -------------------------------------------------------------------- journal
wait_for 10 journal_has '^pagetrace: flight recorder keeping .* a file in /var/lib/pagetrace for each trigger: oom psi=some:150000/1000000 signal' ||
	{ diag "no 'flight recorder keeping' line of the recorder in journalctl -u pagetrace"; journal_tail; }
result journal

# ------------------------------------------------------------------ state_dir
s=$(stat -c '%U:%G %a' "$DIR" 2>&1)
[ "$s" = "root:adm 750" ] || diag "$DIR is '$s', expected root:adm 750 (StateDirectory=, Group=)"
result state_dir

# ---------------------------------------------------------------- signal_file
# check_file BIN TRIGGER: the file and its sidecar as the unit makes them:
# owned root:adm, readable by a member of adm who is not root (report and
# pprof open it) and by nobody else; its stack frames named (by the
# recorder in the sandbox, which needs CAP_SYSLOG for /proc/kallsyms).
check_file() {
	local bin=$1 s named

	s=$(stat -c '%U:%G %a' "$bin" 2>&1)
	[ "$s" = "root:adm 640" ] || diag "$bin is '$s', expected root:adm 640 (Group=, UMask=0027)"
	s=$(stat -c '%U:%G %a' "${bin%.bin}.json" 2>&1)
	[ "$s" = "root:adm 640" ] || diag "${bin%.bin}.json is '$s', expected root:adm 640"
	grep -q "\"trigger\": *\"$2\"" "${bin%.bin}.json" 2>/dev/null ||
		diag "${bin%.bin}.json does not name trigger $2: $(head -c 300 "${bin%.bin}.json" 2>&1)"
	pagetrace stats "$bin" >/run/pt-stats.txt 2>&1 ||
		{ diag "pagetrace stats $bin failed:"; tail -n 5 /run/pt-stats.txt >>"$DIAG"; }
	named=$(sed -n 's/.* distinct stacks, \([0-9]*\) named addresses$/\1/p' /run/pt-stats.txt)
	[ "${named:-0}" -gt 0 ] ||
		diag "$bin: no stack frame named ($(grep 'stack samples' /run/pt-stats.txt))"
	rm -f /run/pt-user/*
	if ! as_adm pagetrace report "$bin" -o /run/pt-user/r.html >/run/pt-adm.txt 2>&1 ||
		[ ! -s /run/pt-user/r.html ]; then
		diag "pagetrace report as a member of adm:"
		tail -n 3 /run/pt-adm.txt >>"$DIAG"
	fi
	if ! as_adm pagetrace pprof "$bin" -o /run/pt-user/p.pb.gz >/run/pt-adm.txt 2>&1 ||
		[ ! -s /run/pt-user/p.pb.gz ]; then
		diag "pagetrace pprof as a member of adm:"
		tail -n 3 /run/pt-adm.txt >>"$DIAG"
	fi
	if as_other pagetrace stats "$bin" >/dev/null 2>&1; then
		diag "$bin: a user outside adm can read it"
	fi
}
before=$(nfiles)
systemctl kill -s SIGUSR1 --kill-whom=main pagetrace.service
signal_written() { written signal | grep -q .; }
if ! wait_for 60 signal_written; then
	diag "no 'trigger signal ... of trace to' line in the journal 60 s after SIGUSR1"
	journal_tail
else
	[ "$(nfiles)" = $((before + 1)) ] || diag "$(nfiles) files in $DIR, expected $((before + 1))"
	check_file "$(written signal | tail -n 1)" signal
fi
result signal_file

# ------------------------------------------------------------------- oom_file
# The victim: tail keeps all of a line with no newline in memory, in a
# transient unit limited to 64 MiB without swap.
oom0=$(awk '$1 == "oom_kill" { print $2 }' /proc/vmstat)
out=$(systemd-run --wait -p MemoryMax=64M -p MemorySwapMax=0 --unit=pt-oom-victim \
	/bin/sh -c 'head -c 1G /dev/zero | tail -n 1 >/dev/null' 2>&1)
oom1=$(awk '$1 == "oom_kill" { print $2 }' /proc/vmstat)
oom_written() { written oom | grep -q .; }
if [ "$oom1" = "$oom0" ]; then
	diag "the 64 MiB unit was not OOM-killed (oom_kill $oom0 -> $oom1):"
	diag "$out"
	diag "cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
	diag "system.slice's subtree_control: $(cat /sys/fs/cgroup/system.slice/cgroup.subtree_control 2>&1)"
elif ! wait_for 60 oom_written; then
	diag "no 'trigger oom ... of trace to' line in the journal 60 s after the OOM kill"
	journal_tail
else
	bin=$(written oom | tail -n 1)
	check_file "$bin" oom
	# The victim allocated about 64 MiB: 16384 pages.  Its name is
	# "tail"; the pages it holds are among its allocations.
	pagetrace stats --by task "$bin" >/run/pt-bytask.txt 2>&1 ||
		diag "pagetrace stats --by task $bin failed: $(tail -n 3 /run/pt-bytask.txt)"
	if grep -Eq '(^|[[:space:]])tail([[:space:]]|$)' /run/pt-bytask.txt; then
		echo "# oom_file: $bin:" >&3
		grep -E '(^|[[:space:]])tail([[:space:]]|$)' /run/pt-bytask.txt | head -n 2 | sed 's/^/#   /' >&3
	else
		diag "the OOM file has no allocations by the victim 'tail':"
		head -n 15 /run/pt-bytask.txt >>"$DIAG"
	fi
fi
systemctl reset-failed pt-oom-victim.service >/dev/null 2>&1
result oom_file

# -------------------------------------------------------------------- restart
pid=$(prop MainPID)
r0=$(prop NRestarts)
systemctl kill -s SIGKILL --kill-whom=main pagetrace.service
# Restarted, and the new recorder (not a session the old one left) is
# the one recording: it says so in the journal and writes on SIGUSR1.
restarted() { [ "$(prop NRestarts)" = $((r0 + 1)) ] && [ "$(prop ActiveState)" = active ] &&
	[ "$(prop MainPID)" != "$pid" ] && [ "$(prop MainPID)" != 0 ] && recording &&
	journalctl -q -b _PID="$(prop MainPID)" -o cat | grep -q '^pagetrace: flight recorder keeping'; }
if ! wait_for 60 restarted; then
	diag "not restarted and recording 60 s after SIGKILL: $(unit_state)"
	journal_tail
else
	w=$(written signal | wc -l)
	systemctl kill -s SIGUSR1 --kill-whom=main pagetrace.service
	wait_for 60 more || diag "the restarted recorder wrote no file on SIGUSR1"
fi
result restart

# -------------------------------------------------------------------- upgrade
# The package installed again over the running service (what an upgrade
# does): its postinst restarts the enabled unit, and the new recorder
# records.
pid=$(prop MainPID)
if ! out=$(DEBIAN_FRONTEND=noninteractive dpkg -i /root/pagetrace-tools.deb 2>&1); then
	diag "dpkg -i over the running service failed:"
	echo "$out" | tail -n 5 >>"$DIAG"
fi
upgraded() { [ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" != "$pid" ] &&
	[ "$(prop MainPID)" != 0 ] && recording &&
	journalctl -q -b _PID="$(prop MainPID)" -o cat | grep -q '^pagetrace: flight recorder keeping'; }
wait_for 60 upgraded || { diag "not restarted and recording after the upgrade: $(unit_state)"; journal_tail 5; }
st=$(systemctl is-enabled pagetrace.service 2>&1)
[ "$st" = enabled ] || diag "is-enabled says '$st' after the upgrade"
result upgrade

# ------------------------------------------------------------------ max_files
set_setting PAGETRACE_MAX_FILES 2
systemctl restart pagetrace.service
wait_for 60 recording || diag "not recording after the restart: $(unit_state)"
for i in 1 2 3; do
	w=$(written signal | wc -l)
	systemctl kill -s SIGUSR1 --kill-whom=main pagetrace.service
	wait_for 60 more || { diag "signal $i wrote no file"; break; }
done
newest=$(written signal | tail -n 2 | sort)
kept=$(files | sort)
[ "$kept" = "$newest" ] || diag "kept '${kept//$'\n'/ }', expected the newest two: '${newest//$'\n'/ }'"
# Their sidecars go with them; no temporary file is left.
s=$(find "$DIR" -name '*.json' | wc -l)
[ "$s" = 2 ] || diag "$s .json files in $DIR, expected 2: $(ls -a "$DIR")"
[ ! -e "$DIR/.pagetrace-writing.bin" ] || diag "a temporary file is left in $DIR"
cp /run/pagetrace.default.orig "$SETTINGS"
result max_files

# ----------------------------------------------------------------------- stop
# The stop comes while a trigger waits out --post (2 s): the file is
# written before the recorder exits.
w=$(written signal | wc -l)
nfired() { journalctl -q -b -u pagetrace.service -o cat | grep -c '^pagetrace: trigger signal fired'; }
f=$(nfired)
systemctl kill -s SIGUSR1 --kill-whom=main pagetrace.service
fired() { [ "$(nfired)" -gt "$f" ]; }
wait_for 10 fired || diag "no 'trigger signal fired' 10 s after SIGUSR1"
systemctl stop pagetrace.service
wait_for 10 more || diag "the stop during --post wrote no file"
[ "$(prop ActiveState)" = inactive ] || diag "not inactive after stop: $(unit_state)"
[ "$(prop Result)" = success ] || diag "stop did not end it cleanly: $(unit_state)"
[ "$(prop ExecMainStatus)" = 0 ] || diag "the recorder's status at stop: $(unit_state)"
wait_for 10 not_recording || diag "the session still records after the stop"
[ -d /sys/module/pagetrace ] || diag "the stop unloaded the module"
result stop

# ---------------------------------------------------------------- bad_setting
set_setting PAGETRACE_KEEP lots
r0=$(prop NRestarts)
systemctl start pagetrace.service
is_failed() { [ "$(prop ActiveState)" = failed ]; }
if ! wait_for 30 is_failed; then
	diag "not failed 30 s after a start with PAGETRACE_KEEP=lots: $(unit_state)"
else
	[ "$(prop ExecMainStatus)" = 2 ] || diag "the recorder's status is not 2 (usage): $(unit_state)"
	sleep 15 # past RestartSec=10s
	if [ "$(prop ActiveState)" != failed ] || [ "$(prop NRestarts)" != "$r0" ]; then
		diag "restarted after a usage error: $(unit_state)"
	fi
	journal_has '--keep.*lots|lots.*--keep' ||
		{ diag "the journal does not say what is wrong with --keep lots"; journal_tail 5; }
fi
cp /run/pagetrace.default.orig "$SETTINGS"
systemctl reset-failed pagetrace.service
result bad_setting

# ------------------------------------------------------------------ no_module
# RestartSec= shortened for the test by a drop-in; the limit is the unit's.
rmmod pagetrace || diag "rmmod pagetrace failed"
mv "$KO" /run/pagetrace.ko.away
mkdir -p "$DROPIN"
printf '[Service]\nRestartSec=1s\n' >"$DROPIN/test.conf"
systemctl daemon-reload
systemctl start pagetrace.service >/dev/null 2>&1
# systemd says "Start request repeated too quickly" when it refuses a
# start for the limit.
limit_hit() { journal_has 'Start request repeated too quickly'; }
if ! wait_for 90 limit_hit; then
	diag "no 'Start request repeated too quickly' 90 s after a start without a module: $(unit_state)"
	journal_tail 15
else
	r=$(prop NRestarts)
	sleep 5 # past RestartSec=1s: no restart any more
	if [ "$(prop ActiveState)" != failed ] || [ "$(prop NRestarts)" != "$r" ]; then
		diag "still restarting after the start limit: $(unit_state)"
	fi
	[ "$r" -le 5 ] || diag "NRestarts=$r, more than StartLimitBurst=5 allows"
	echo "# no_module: $(unit_state)" >&3
fi
journal_has "could not load it for kernel $(uname -r): install pagetrace-dkms and linux-headers-$(uname -r)" ||
	{ diag "the journal does not say what to install"; journal_tail 5; }
[ ! -d /sys/module/pagetrace ] || diag "a module was loaded from nowhere"
mv /run/pagetrace.ko.away "$KO"
rm -rf "$DROPIN"
systemctl daemon-reload
systemctl reset-failed pagetrace.service
result no_module

# -------------------------------------------------------------------- disable
# Back to recording first (the module where it belongs again), then off.
systemctl start pagetrace.service
wait_for 60 recording || diag "not recording after the module came back: $(unit_state)"
systemctl disable --now pagetrace.service >/dev/null 2>&1
[ "$(prop ActiveState)" = inactive ] || diag "not inactive after disable --now: $(unit_state)"
st=$(systemctl is-enabled pagetrace.service 2>&1)
[ "$st" = disabled ] || diag "is-enabled says '$st' after disable"
[ ! -e /etc/systemd/system/multi-user.target.wants/pagetrace.service ] ||
	diag "multi-user.target.wants/pagetrace.service is left"
result disable

# ----------------------------------------------------------------- enable_now
# With the module loaded already, ExecStartPre= writes the options to its
# parameters instead.
echo 0 >$PARAMS/stack_rate
if ! out=$(systemctl enable --now pagetrace.service 2>&1); then
	diag "systemctl enable --now failed: $out"
elif ! wait_for 60 recording; then
	diag "not recording 60 s after the start: $(unit_state)"
	journal_tail
fi
[ "$(prop ActiveState)" = active ] || diag "not active: $(unit_state)"
[ -e /etc/systemd/system/multi-user.target.wants/pagetrace.service ] ||
	diag "enable made no multi-user.target.wants/pagetrace.service"
v=$(cat $PARAMS/stack_rate 2>/dev/null)
[ "$v" = "${opt#stack_rate=}" ] ||
	diag "stack_rate is '$v': ExecStartPre= did not write PAGETRACE_MODULE_OPTIONS='$opt'"
result enable_now

echo "# $((n - failed)) passed, $failed failed" >&3
exec 3>&-
rm -f "$DIAG"
systemctl poweroff --no-block
