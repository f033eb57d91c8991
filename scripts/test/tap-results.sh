# SPDX-License-Identifier: GPL-2.0
# Sourced by the host checks that report TAP results one named check at a
# time (check-packaging.sh, check-modsig.sh): a check writes what it found
# wrong with diag(), and result() turns that into "ok" or "not ok" with the
# diagnostics above it.  Needs $TMP, a directory of the caller's; keeps
# the test number in $n and sets $failed to 1 on the first failure.
#
#   result NAME      ok if no diagnostics were written since the last result
#   skip NAME WHY    ok ... # SKIP WHY
#   diag TEXT...     one line of diagnostics for the check being run

n=0
failed=0

result() {
	n=$((n + 1))
	if [ -s "$TMP/diag" ]; then
		sed 's/^/# /' "$TMP/diag"
		echo "not ok $n $1"
		failed=1
	else
		echo "ok $n $1"
	fi
	: >"$TMP/diag"
}
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }
diag() { echo "$*" >>"$TMP/diag"; }
: >"$TMP/diag"
