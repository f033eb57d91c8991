#!/bin/sh
# Rebuild the committed Go page trace (needs Go 1.22 with GOEXPERIMENT
# support, e.g. Debian's golang-1.22-go from bookworm-backports):
#   userspace/tests/data/goalloc/make-trace.sh OUT.bin
# The trace differs on every run (addresses, timing, scheduling), so the
# exact counts in tests/test_go.c belong to the committed file only.
set -eu
GO=${GO:-/usr/lib/go-1.22/bin/go}
out=${1:?usage: make-trace.sh OUT.bin}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/main.go" "$tmp/"
cd "$tmp"
printf 'module goalloc\n\ngo 1.22\n' >go.mod
GOEXPERIMENT=pagetrace GOFLAGS=-mod=mod GOCACHE="$tmp/cache" CGO_ENABLED=0 \
	"$GO" build -o goalloc .
rm -f "$out"
GOMAXPROCS=4 GODEBUG=pagetrace="$out" ./goalloc
