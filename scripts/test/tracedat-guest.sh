#!/bin/sh
# Runs in the VM (from check.sh's run.sh): records kmem page events with the
# real trace-cmd, as a user on a kernel without the module would, into
# RESULTS/tracedat/: kmem.dat without stacks, kmem-stacks.dat with -T,
# kmem-lossy.dat with buffers small enough to drop events.
# scripts/test/tracedat-check.sh reads them on the host.  Nothing is
# recorded (and the host check skips) when the guest has no trace-cmd.
#   tracedat-guest.sh RESULTS
# Page allocations and frees of every order on every CPU: file writes and
# unlinks (page cache), anonymous memory of short-lived processes, pipes.
workload() {
	for i in 1 2 3 4; do
		dd if=/dev/zero of=/tmp/tracedat-w$i bs=64k count=64 2>/dev/null &
	done
	wait
	rm -f /tmp/tracedat-w*
	for i in 1 2 3 4 5 6 7 8; do
		head -c 2000000 /dev/urandom | gzip -1 >/dev/null &
	done
	wait
}
if [ "$1" = --workload ]; then
	workload
	exit 0
fi
R=$1/tracedat
command -v trace-cmd >/dev/null 2>&1 || exit 0
mkdir -p "$R"
# Recorded in the guest's tmpfs, then copied: trace-cmd's per-CPU temporary
# files stay off the 9p share.
rec() { # NAME TRACE-CMD-OPTIONS...
	name=$1
	shift
	trace-cmd record -q -o /tmp/$name.dat "$@" -e kmem:mm_page_alloc \
		-e kmem:mm_page_free -e kmem:mm_page_free_batched \
		sh "$0" --workload >$R/$name.log 2>&1
	rc=$?
	cp /tmp/$name.dat $R/$name.dat 2>>$R/$name.log || rc=1
	rm -f /tmp/$name.dat
	echo $rc >$R/$name.rc
}
rec kmem
rec kmem-stacks -T
# 4 KiB per CPU: the ring buffer drops events, which must show as losses.
rec kmem-lossy -b 4
sync
