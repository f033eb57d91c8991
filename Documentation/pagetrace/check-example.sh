#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Check that the example decoder of format.rst still decodes the stream
# exactly as `pagetrace dump` does, and that the recorder of mmap.rst
# (example-ring.c) compiles against libpagetrace.
#
# usage: check-example.sh [PAGETRACE [TRACE...]]
#
#   PAGETRACE  the pagetrace CLI (default: userspace/pagetrace)
#   TRACE      stream files to compare on; without any, a synthetic stream
#              is built with userspace/tests/synth.c (several CPUs, large
#              events, sync words, task records and names of 0 to 16
#              bytes, a snapshot chunk, losses and a seq gap under
#              PAGETRACE_FLAG_OVERWRITE)
#
# Each trace is compared twice: plain, and with -t (each event's tgid and
# name) against `pagetrace dump -t`.
#
# The decoder is compiled against uapi/linux/pagetrace.h alone.  Prints
# "ok 1 doc-example-decoder" and exits 0 when every output matches, else
# "not ok 1 doc-example-decoder" and exits 1.  CC defaults to cc.

DOC=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DOC/../.." && pwd)
CC=${CC:-cc}
NAME=doc-example-decoder
PAGETRACE=${1:-$TOP/userspace/pagetrace}
[ $# -gt 0 ] && shift

TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "# $*"
	echo "not ok 1 $NAME"
	exit 1
}

[ -x "$PAGETRACE" ] || fail "no pagetrace CLI at $PAGETRACE (make -C userspace)"

# Only the uapi directory on the include path: no libpagetrace.
$CC -Wall -Wextra -Werror -I "$TOP/uapi" -o "$TMP/decoder" \
	"$DOC/example-decoder.c" 2>"$TMP/cc.log" ||
	{ sed 's/^/# /' "$TMP/cc.log"; fail "example-decoder.c does not compile"; }

# The recorder of mmap.rst, against the library it shows.
$CC -Wall -Wextra -Werror -I "$TOP/uapi" -I "$TOP/userspace/lib" -o "$TMP/ring" \
	"$DOC/example-ring.c" "$TOP/userspace/lib/libpagetrace.a" 2>"$TMP/cc.log" ||
	{ sed 's/^/# /' "$TMP/cc.log"; fail "example-ring.c does not compile against libpagetrace.a"; }

if [ $# -eq 0 ]; then
	cat >"$TMP/gen.c" <<'EOF'
#include <stdio.h>
#include "synth.h"

#define MS 1000000ULL

int main(int argc, char **argv)
{
	static const char *const names[] = {
		"", "sh", "kworker/u4:1", "systemd-journald", "a b\\c", "exactly-16-bytes",
	};
	struct synth s;
	uint64_t t = 1000 * MS, rnd = 42;
	FILE *f;

	synth_init(&s, 4, 4096, PAGETRACE_FLAG_OVERWRITE | PAGETRACE_FLAG_SNAPSHOT |
		   PAGETRACE_FLAG_TASKS);
	/* A snapshot chunk, from before start_ns. */
	synth_snapshot(&s, 3);
	synth_event(&s, 3, 10 * MS, PAGETRACE_EV_ALLOC, 0x1000, 512);
	synth_event(&s, 3, 11 * MS, PAGETRACE_EV_ALLOC, 0x2000, 1 << 18);
	synth_flush(&s, 3, 0);
	for (int i = 0; i < 3000; i++) {
		unsigned int cpu = synth_rand(&rnd) % 4;
		uint64_t npages = 1ULL << (synth_rand(&rnd) % 12);

		/* Mostly short steps; now and then one past 2^23 ns. */
		t += synth_rand(&rnd) % 20 ? synth_rand(&rnd) % 5000 : 9 * MS + 77;
		if (i % 97 == 0)
			synth_task(&s, cpu, 1000 + i);
		else if (i % 89 == 0)	/* renamed now and then */
			synth_name(&s, cpu, 2000 + i % 7, names[i % 6]);
		if (i == 1500) {
			s.cpus[2].lost = 17;
			synth_flush(&s, 2, PAGETRACE_CHUNK_FLUSHED);
			s.cpus[2].seq += 3;	/* overwritten chunks */
		}
		synth_event(&s, cpu, t, 1 + synth_rand(&rnd) % 3,
			    synth_rand(&rnd) & PAGETRACE_PFN_MAX, npages);
	}
	synth_flush_all(&s);
	f = fopen(argc > 1 ? argv[1] : "synth.bin", "wb");
	if (!f || fwrite(s.buf, 1, s.len, f) != s.len || fclose(f))
		return 1;
	synth_free(&s);
	return 0;
}
EOF
	US=$TOP/userspace
	$CC -std=gnu11 -O1 -I "$TOP/uapi" -I "$US/lib" -I "$US/tests" \
		-o "$TMP/gen" "$TMP/gen.c" "$US/tests/synth.c" \
		"$US"/lib/*.c \
		2>"$TMP/cc.log" ||
		{ sed 's/^/# /' "$TMP/cc.log"; fail "cannot build the synthetic trace writer"; }
	"$TMP/gen" "$TMP/synth.bin" || fail "cannot write the synthetic trace"
	set -- "$TMP/synth.bin"
fi

for trace in "$@"; do
	for opt in "" -t; do
		# shellcheck disable=SC2086 # $opt is one word or none
		"$PAGETRACE" dump $opt "$trace" >"$TMP/want" 2>"$TMP/want.err" ||
			{ sed 's/^/# /' "$TMP/want.err"; fail "pagetrace dump $opt $trace failed"; }
		# shellcheck disable=SC2086
		"$TMP/decoder" $opt "$trace" >"$TMP/got" 2>"$TMP/got.err" ||
			{ sed 's/^/# /' "$TMP/got.err"; fail "example decoder $opt failed on $trace"; }
		if ! cmp -s "$TMP/want" "$TMP/got"; then
			diff "$TMP/want" "$TMP/got" | head -20 | sed 's/^/# /'
			fail "outputs differ on $trace${opt:+ with $opt}"
		fi
		echo "# $trace${opt:+ $opt}: $(wc -l <"$TMP/want") events match"
	done
done
echo "ok 1 $NAME"
exit 0
