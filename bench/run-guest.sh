#!/bin/sh
# The guest half of `make bench` (scripts/bench/bench.sh): run every workload under
# every contender, RUNS rounds, in this one boot.  Writes one line per run
# to $H/results.txt ("key=value ..."); scripts/bench/bench-report.py makes the
# tables.  Expects in $H: pagetrace.ko pt_bench.ko pagetrace pt_work and
# bench.conf (RUNS, WORKLOADS, CONTENDERS and the workload sizes).
H=/mnt/host
. $H/bench.conf
OUT=$H/results.txt
T=/sys/kernel/tracing
PARAMS=/sys/module/pagetrace/parameters
: >$OUT
log() { echo "bench: $*"; }

insmod $H/pt_bench.ko || { log "cannot load pt_bench.ko"; exit 1; }
NCPU=$(nproc)
log "kernel $(uname -r), $NCPU CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"

# ------------------------------------------------------------ workloads

# The read workload's files live on ext2-formatted ext4 over a loop device:
# a filesystem whose page cache fadvise(DONTNEED) really drops.
setup_read() {
	mkdir -p /fs
	truncate -s $((READ_MIB * NCPU + 16))M /tmp/fs.img
	d=$(losetup -f) && losetup $d /tmp/fs.img && mke2fs -q $d >/dev/null 2>&1 &&
		mount -t ext4 $d /fs || { log "no loop/ext4: skipping read"; return 1; }
	i=0
	while [ $i -lt $NCPU ]; do
		dd if=/dev/zero of=/fs/f.$i bs=1M count=$READ_MIB 2>/dev/null
		i=$((i + 1))
	done
	sync
}

# workload NAME: run it once, print "ops=.. ns_per_op=.. [batch_ns_per_op=..]"
workload() {
	case $1 in
	k0|k3)
		# Timed in batches of some 15-20 ms of the guest's clock (1,000
		# pairs of order 0, 125 of order 3: the same pages), of which
		# batch_ns_per_op is the median.  The recorder wakes every
		# flush_ms (250), so few batches hold a wakeup and the median is
		# one without (k0 fills a 64 KiB chunk, whose close wakes it too,
		# every ~90 ms: about one batch in four holds a wakeup).  k3's
		# batches of 1,000 (140 ms) held one every other batch, and the
		# median flipped between the two kinds from run to run: ratios
		# to it moved by about 0.03.
		batch=1000
		[ "$1" = k3 ] && batch=125
		echo "${1#k} $KITERS $batch" >/sys/kernel/debug/pt_bench/run || return 1
		grep '^total' /sys/kernel/debug/pt_bench/run | sed 's/^total //'
		;;
	mmap) $H/pt_work mmap $MMAP_MIB $MMAP_ITERS ;;
	fork) $H/pt_work fork $FORK_ITERS ;;
	read) $H/pt_work read /fs/f $READ_ITERS ;;
	esac
}

# ------------------------------------------------------------ contenders

has() { command -v "$1" >/dev/null 2>&1; }

# Sum "key: N" lines of the ring buffer's per-CPU stats.
rb_sum() {
	cat $T/per_cpu/cpu*/stats | awk -v k="$1" -F': *' '$1 == k { s += $2 } END { print s + 0 }'
}

# The recorders run this as their command ("record ... -- CMD"): they start
# it once tracing is on, and stop when it exits.  It says it started, and
# waits (without polling, so it adds no events) until stop() writes the fifo.
cat >/tmp/wait.sh <<'WAIT'
: >/tmp/rec.ready
read x </tmp/fifo
WAIT

# ready SECONDS: until the recorder's command has started.
ready() {
	n=0
	while [ ! -e /tmp/rec.ready ]; do
		n=$((n + 1))
		kill -0 $REC 2>/dev/null && [ $n -le $(($1 * 10)) ] || return 1
		sleep 0.1
	done
}

# start CONTENDER: set it up and start its recorder in the background (REC
# is its pid), under pt_work rusage so that its CPU time is known (the
# command's share is nil).  Prints nothing on success, else why the
# contender cannot run.
start() {
	rm -f /tmp/rec.* /tmp/ru /tmp/fifo
	mkfifo /tmp/fifo
	REC=
	case $1 in
	none)
		grep -q '^pagetrace ' /proc/modules && rmmod pagetrace
		;;
	kprobe-empty)
		# The kprobe core alone: pt_bench's empty kprobes on the
		# functions the kprobe backend hooks, no recorder.
		grep -q '^pagetrace ' /proc/modules && rmmod pagetrace
		echo 1 >/sys/kernel/debug/pt_bench/empty_kprobes ||
			echo "pt_bench cannot place its kprobes"
		;;
	tp-empty)
		# The tracepoints alone: pt_bench's empty probes on the
		# tracepoints the default backend hooks, no recorder.
		grep -q '^pagetrace ' /proc/modules && rmmod pagetrace
		echo 1 >/sys/kernel/debug/pt_bench/empty_tracepoints ||
			echo "pt_bench cannot attach its tracepoint probes"
		;;
	loaded|pt-kprobe|pt-tracepoint|pt-local|pt-notasks|pt-stacks|pt-filter*)
		grep -q '^pagetrace ' /proc/modules || insmod $H/pagetrace.ko ||
			{ echo "insmod pagetrace.ko failed"; return; }
		[ $1 = loaded ] && return
		# All on the default backend (tracepoints).  pt-stacks: a call
		# stack every 128 pages (512 KiB, Go's default MemProfileRate);
		# pt-filter: a node filter that keeps every event, so each one
		# pays for the test; pt-filter-orders and pt-filter-cgroup the
		# same with an order filter (0-10) and the root cgroup (which
		# leaves out only events in interrupts); pt-filter-drop keeps
		# reclaims only, so it shows what a dropped event costs;
		# pt-local: local_clock() instead of the TSC; pt-notasks: no task
		# records and names (tasks=0).
		echo 0 >$PARAMS/stack_rate
		echo 1 >$PARAMS/tasks
		for f in nodes orders cgroup types; do echo >$PARAMS/filter_$f; done
		echo auto >$PARAMS/clock
		case $1 in
		pt-local) echo auto >$PARAMS/hook; echo local >$PARAMS/clock ;;
		pt-notasks) echo auto >$PARAMS/hook; echo 0 >$PARAMS/tasks ;;
		pt-stacks) echo auto >$PARAMS/hook; echo 128 >$PARAMS/stack_rate ;;
		pt-filter) echo auto >$PARAMS/hook; echo 0 >$PARAMS/filter_nodes ;;
		pt-filter-orders) echo auto >$PARAMS/hook; echo 0-10 >$PARAMS/filter_orders ;;
		pt-filter-cgroup) echo auto >$PARAMS/hook; echo / >$PARAMS/filter_cgroup ;;
		pt-filter-drop) echo auto >$PARAMS/hook; echo reclaim >$PARAMS/filter_types ;;
		*) echo ${1#pt-} >$PARAMS/hook ;;
		esac
		$H/pt_work rusage /tmp/ru -- $H/pagetrace record --json \
			-o /tmp/rec.bin -- sh /tmp/wait.sh >/tmp/rec.json 2>/tmp/rec.log &
		REC=$!
		ready 60 || echo "pagetrace record failed: $(tail -n 2 /tmp/rec.log)"
		;;
	trace-cmd)
		has trace-cmd || { echo "trace-cmd is not in the VM"; return; }
		$H/pt_work rusage /tmp/ru -- trace-cmd record -e kmem:mm_page_alloc \
			-e kmem:mm_page_free -o /tmp/rec.dat sh /tmp/wait.sh >/tmp/rec.log 2>&1 &
		REC=$!
		ready 60 || echo "trace-cmd record failed: $(tail -n 2 /tmp/rec.log)"
		;;
	ftrace-raw)
		[ -d $T/events/kmem ] || { echo "no tracefs"; return; }
		echo >$T/trace
		RB_READ0=$(rb_sum 'read events')
		RB_LOST0=$(( $(rb_sum overrun) + $(rb_sum 'dropped events') ))
		$H/pt_work rusage /tmp/ru -- $H/pt_work ftrace-raw $T /tmp/rec.raw &
		REC=$!
		sleep 0.5
		echo 1 >$T/events/kmem/mm_page_alloc/enable
		echo 1 >$T/events/kmem/mm_page_free/enable
		;;
	perf)
		has perf || { echo "perf is not in the VM"; return; }
		$H/pt_work rusage /tmp/ru -- perf record -q -a -e kmem:mm_page_alloc \
			-e kmem:mm_page_free -o /tmp/rec.perf -- sh /tmp/wait.sh >/tmp/rec.log 2>&1 &
		REC=$!
		ready 60 || echo "perf record failed: $(tail -n 2 /tmp/rec.log)"
		;;
	bpftrace)
		has bpftrace || { echo "bpftrace is not in the VM"; return; }
		$H/pt_work rusage /tmp/ru -- bpftrace -c "/bin/sh /tmp/wait.sh" -e '
			tracepoint:kmem:mm_page_alloc { @alloc = count(); }
			tracepoint:kmem:mm_page_free { @free = count(); }' >/tmp/rec.log 2>&1 &
		REC=$!
		ready 300 || echo "bpftrace failed: $(grep -v '^$' /tmp/rec.log | head -n 3 | tr '\n' ' ')"
		;;
	esac
}

# session_bytes FILE: the bytes of a pagetrace file that do not grow with
# its events: all but the events' chunks (chunk flags bits 1-3 clear; a
# 32-byte head each), which pagetrace dump -v lists.  The rest is the
# header, the memory map at the start (which grows with the guest's memory
# and its fragmentation: over a short workload it weighs on B/event), the
# kernel's counters and the symbols, whatever the reader shows of them.
# "nan" if the file does not decode.
session_bytes() {
	$H/pagetrace dump -v "$1" 2>/dev/null | awk -v size="$(stat -c %s "$1")" '
	function hex(s,  i, n) {
		s = tolower(substr(s, 3))
		for (i = 1; i <= length(s); i++)
			n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return n
	}
	/^# pagetrace v/ { ok = 1 }
	/^# chunk / {
		f = 0; w = 0
		for (i = 3; i <= NF; i++) {
			split($i, a, "=")
			if (a[1] == "flags") f = hex(a[2])
			if (a[1] == "nr_words") w = a[2]
		}
		if (int(f / 2) % 8 == 0) ev += 32 + 8 * w
	}
	END { if (ok) print size - ev; else print "nan" }'
}

# stop CONTENDER: stop the recorder; print "events=.. lost=.. bytes=..
# rec_user=.. rec_sys=.." (what is known).
stop() {
	[ $1 = kprobe-empty ] && echo 0 >/sys/kernel/debug/pt_bench/empty_kprobes
	[ $1 = tp-empty ] && echo 0 >/sys/kernel/debug/pt_bench/empty_tracepoints
	[ -z "$REC" ] && return
	case $1 in
	ftrace-raw)
		echo 0 >$T/events/kmem/mm_page_alloc/enable
		echo 0 >$T/events/kmem/mm_page_free/enable
		sleep 0.5
		kill -TERM $REC
		;;
	*)
		echo >/tmp/fifo
		;;
	esac
	wait $REC
	# shellcheck disable=SC2046 # "user sys status", split on purpose
	set -- "$1" $(cat /tmp/ru 2>/dev/null)
	ru="rec_user=${2:-nan} rec_sys=${3:-nan} rec_status=${4:-nan}"
	case $1 in
	pt-*)
		# pagetrace record's JSON summary: events and lost from the
		# module, and its own CPU time.
		sed 's/[{}",]//g; s/: /=/g' /tmp/rec.json | tr ' ' '\n' |
			grep -E '^(events|lost|cpu_user_s|cpu_sys_s)=' | tr '\n' ' '
		# The header's clock (flags bits 3..0, at offset 60): 0
		# local_clock(), 2 the TSC (clock.c chooses).
		clk=$(od -An -tu4 -j60 -N4 /tmp/rec.bin 2>/dev/null | awk '{ print $1 % 16 }')
		echo "bytes=$(stat -c %s /tmp/rec.bin) session_bytes=$(session_bytes /tmp/rec.bin)" \
			"clock=${clk:-nan} $ru"
		;;
	trace-cmd)
		# Events: the records in the file.  Lost: the kernel buffer
		# statistics trace-cmd saved in it (overrun, dropped events).
		ev=$(trace-cmd report -i /tmp/rec.dat 2>/dev/null | grep -c ' mm_page_')
		lost=$(trace-cmd report --stat -i /tmp/rec.dat 2>/dev/null |
			awk -F': *' '$1 == "overrun" || $1 == "dropped events" { s += $2 } END { print s + 0 }')
		# The file format: 6, or 7 (its sections may be compressed).
		ver=$(dd if=/tmp/rec.dat bs=1 skip=10 count=1 2>/dev/null)
		echo "events=$ev lost=$lost bytes=$(stat -c %s /tmp/rec.dat) file_version=$ver $ru"
		;;
	ftrace-raw)
		ev=$(( $(rb_sum 'read events') - RB_READ0 ))
		lost=$(( $(rb_sum overrun) + $(rb_sum 'dropped events') - RB_LOST0 ))
		bytes=$(cat /tmp/rec.raw.* | wc -c)
		echo >$T/trace
		echo "events=$ev lost=$lost bytes=$bytes $ru"
		;;
	perf)
		perf report -i /tmp/rec.perf --stats >/tmp/rec.stats 2>/dev/null
		ev=$(awk '/^ *SAMPLE events:/ { print $3; exit }' /tmp/rec.stats)
		lost=$(awk '/^ *LOST_SAMPLES events:/ { s += $3 } END { print s + 0 }' /tmp/rec.stats)
		lostrec=$(awk '/^ *LOST events:/ { print $3; exit }' /tmp/rec.stats)
		echo "events=${ev:-nan} lost=$lost lost_records=${lostrec:-0} bytes=$(stat -c %s /tmp/rec.perf) $ru"
		;;
	bpftrace)
		ev=$(awk '/^@(alloc|free):/ { s += $2 } END { print s + 0 }' /tmp/rec.log)
		echo "events=$ev lost=0 bytes=0 $ru"
		;;
	esac
	rm -f /tmp/rec.*
}

# ------------------------------------------------------------ the runs

case " $WORKLOADS " in *" read "*) setup_read || WORKLOADS=$(echo $WORKLOADS | sed 's/read//') ;; esac
UNAVAILABLE=
round=1
while [ $round -le $RUNS ]; do
	for w in $WORKLOADS; do
		for c in $CONTENDERS; do
			case " $UNAVAILABLE " in *" $c "*) continue ;; esac
			# Not in $(...): REC must be set in this shell, to wait for it.
			start $c >/tmp/why 2>&1
			why=$(cat /tmp/why)
			if [ -n "$why" ]; then
				log "$c unavailable: $why"
				echo "contender=$c unavailable=\"$why\"" >>$OUT
				UNAVAILABLE="$UNAVAILABLE $c"
				[ -n "$REC" ] && kill $REC 2>/dev/null
				continue
			fi
			res=$(workload $w) || res="error=1"
			stop $c >/tmp/stop 2>/dev/null
			rec=$(cat /tmp/stop)
			line="run=$round workload=$w contender=$c $res $rec"
			log "$line"
			echo "$line" >>$OUT
		done
	done
	round=$((round + 1))
done
# Session start and stop per backend: SESSIONS open()/close() cycles of
# /dev/pagetrace with the default options (snapshot on), idle machine.
# With -icount the times are the guest's clock, grace periods included.
grep -q '^pagetrace ' /proc/modules || insmod $H/pagetrace.ko
if grep -q '^pagetrace ' /proc/modules; then
	echo 0 >$PARAMS/stack_rate
	for f in nodes orders cgroup types; do echo >$PARAMS/filter_$f; done
	for b in tracepoint kprobe; do
		if echo $b >$PARAMS/hook 2>/dev/null; then
			res=$($H/pt_work sessions /dev/pagetrace ${SESSIONS:-10}) || res="error=1"
		else
			res="unavailable=1"
		fi
		log "sessions hook=$b $res"
		echo "sessions=1 hook=$b $res" >>$OUT
	done
	echo auto >$PARAMS/hook
	rmmod pagetrace
fi
rmmod pt_bench
dmesg | grep -iE 'BUG|WARNING|Oops|lost' | head -n 20
exit 0
