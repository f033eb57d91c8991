#!/bin/bash
# KTAP helpers for scripts/test/check.sh.
#
# Usage:
#   scripts/test/ktap.sh normalize PREFIX NAME [EXIT_STATUS] <raw-output
#       Print the result lines of one program's KTAP output, each prefixed
#       with PREFIX (e.g. "[6.1.0-56-amd64]").  Failures are what a crash or
#       hang looks like, so they are made explicit:
#         - a plan "1..N" with fewer than N results: each missing result is
#           printed as "not ok K NAME: result missing";
#         - no results at all: "not ok 1 NAME: no KTAP output";
#         - an exit status other than 0 (pass) or 4 (skip) while no failure
#           was reported: "not ok K NAME: exited with status S";
#         - EXIT_STATUS "-" (the program never finished): the same, as
#           "not ok K NAME: did not finish".
#       Several KTAP documents in one stream (one per "TAP version" line)
#       are checked one by one.  The "#" diagnostics leading up to a failure
#       are printed with it; those of passing tests are not.
#   scripts/test/ktap.sh count FILE
#       Count normalized result lines in FILE and print exactly one line,
#       "N passed, N failed" (", N skipped" only if there are skips).  Exit
#       1 if anything failed or nothing ran, else 0.
#   scripts/test/ktap.sh failures FILE
#       Repeat each failure of FILE with the last few diagnostics before it,
#       under a "# failures:" heading (nothing if all passed), so that the
#       end of a long run's output, the part a CI page shows, says what
#       failed and why.
#
# Classification: "ok ... # SKIP ..." = skipped (never a pass); "ok" = passed;
# "not ok" = failed (a "# SKIP" on a "not ok" line does not make it a skip).
# Only top-level lines count: indented (nested) results belong to a parent.
set -euo pipefail

cmd=${1:?usage: ktap.sh normalize PREFIX NAME [STATUS] | count FILE | failures FILE}
shift

case "$cmd" in
normalize)
	exec awk -v prefix="${1:?PREFIX}" -v name="${2:?NAME}" -v status="${3:-0}" '
	function out(s) { print prefix " " s }
	function flush_diag(   i) {
		for (i = 1; i <= ndiag; i++)
			out(diag[i])
		ndiag = 0
	}
	function start_doc() { plan = -1; nres = 0; run = "" ; ndiag = 0 }
	# End of one KTAP document: fill in results the plan promised.
	function end_doc(   i) {
		if (plan < 0 && nres == 0)
			return
		if (plan > nres) {
			flush_diag()
			for (i = nres + 1; i <= plan; i++) {
				# The test that was running when it stopped, if known.
				what = (i == nres + 1 && run != "") ? run : name
				out("not ok " i " " what ": result missing (" plan \
				    " planned, " nres " reported: crashed or timed out?)")
				fails++
			}
		}
		docs++
	}
	BEGIN { start_doc(); fails = 0; results = 0; docs = 0 }
	/^TAP version/ { end_doc(); start_doc(); next }
	/^1\.\.[0-9]+/ {
		plan = $1; sub(/^1\.\./, "", plan); plan += 0
		if (plan == 0) {	# "1..0 # SKIP reason": the whole program skipped
			reason = $0; sub(/^1\.\.0 *(# *)?(SKIP *)?/, "", reason)
			out("ok 1 " name " # SKIP " reason)
			results++; nres = 0
		}
		next
	}
	/^(not )?ok [0-9]+/ {
		line = $0
		# The kselftest harness prints a skip as "ok N # SKIP reason",
		# without the test name; take it from the "#  RUN name ..." line.
		if (line ~ /^ok [0-9]+ # / && run != "")
			sub(/ # /, " " run " # ", line)
		if (line ~ /^not ok/) {
			flush_diag(); fails++
		}
		ndiag = 0
		out(line); nres++; results++; run = ""
		next
	}
	/^#  RUN / { run = $3 }
	/^# running / { out($0); next }	# userspace/Makefile names each program
	/^#|^Bail out!/ {
		if (ndiag == 40) {	# keep the last 40 lines
			for (i = 1; i < 40; i++) diag[i] = diag[i + 1]
			ndiag--
		}
		diag[++ndiag] = $0
	}
	END {
		end_doc()
		if (results == 0 && fails == 0) {
			flush_diag()
			out("not ok 1 " name ": no KTAP output (not run, or crashed at start)")
			fails++
		}
		if (status == "-") {
			if (fails == 0) {
				flush_diag()
				out("not ok " nres + 1 " " name ": did not finish (no exit status)")
			}
			exit
		}
		st = status + 0
		what = ""
		if (st == 124 || st == 143) what = " (timed out)"
		else if (st == 137) what = " (killed: timed out?)"
		else if (st > 128) what = " (killed by signal " st - 128 ")"
		if (st != 0 && st != 4 && fails == 0) {
			flush_diag()
			out("not ok " nres + 1 " " name ": exited with status " st what)
			fails++
		} else if (st != 0 && st != 1 && st != 4) {
			out("# " name ": exited with status " st what)
		}
	}'
	;;
count)
	exec awk '
	# Strip the "[context] " prefix, then classify.
	{ sub(/^\[[^]]*\] /, "") }
	/^not ok [0-9]+/ { failed++; next }
	/^ok [0-9]+/ {
		if (toupper($0) ~ /# *SKIP/) skipped++
		else passed++
	}
	END {
		s = (passed + 0) " passed, " (failed + 0) " failed"
		if (skipped > 0) s = s ", " skipped " skipped"
		print s
		exit (failed > 0 || passed + failed + skipped == 0) ? 1 : 0
	}' "${1:?FILE}"
	;;
failures)
	exec awk '
	function keep(s) {
		if (ndiag == 6) {	# the last 6 diagnostics before a failure
			for (i = 1; i < 6; i++) diag[i] = diag[i + 1]
			ndiag--
		}
		diag[++ndiag] = s
	}
	{ line = $0; sub(/^\[[^]]*\] /, "", line) }
	# A failed check of the kselftest harness ("...:Expected a (1) <= b
	# (0)") may lie far above the result line of its test, under the
	# later log of that test: the first 3 since the last result are kept apart.
	line ~ /^#/ && line ~ /:Expected |Test terminated by/ && nchk < 3 { chk[++nchk] = $0 }
	line ~ /^#/ { keep($0); next }
	line ~ /^not ok [0-9]+/ {
		if (++failed == 1)
			print "# failures:"
		if (failed <= 20) {
			# Those the last 6 diagnostics already hold are not repeated.
			for (i = 1; i <= nchk; i++) {
				dup = 0
				for (j = 1; j <= ndiag; j++)
					if (diag[j] == chk[i]) dup = 1
				if (!dup)
					print "#   " chk[i]
			}
			for (i = 1; i <= ndiag; i++)
				print "#   " diag[i]
			print "#   " $0
		}
	}
	{ ndiag = 0; nchk = 0 }
	END {
		if (failed > 20)
			print "#   ... and " failed - 20 " more"
	}' "${1:?FILE}"
	;;
*)
	echo "ktap.sh: unknown command '$cmd'" >&2
	exit 2
	;;
esac
