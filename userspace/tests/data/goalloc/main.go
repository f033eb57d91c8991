// SPDX-License-Identifier: GPL-2.0
//
// goalloc: a small program whose Go runtime page trace is the test input
// userspace/tests/data/go-pagetrace.bin.  It allocates heap spans of many
// sizes (one above 1024 pages, so the trace has a large event) from a few
// goroutines, drops them, and forces GC and scavenging, so the trace holds
// alloc, free and scavenge events from several Ps.
//
// Built and run by userspace/tests/data/goalloc/make-trace.sh.
package main

import (
	"runtime"
	"runtime/debug"
	"sync"
)

var sink [][]byte

func work(id int, wg *sync.WaitGroup, mu *sync.Mutex) {
	defer wg.Done()
	for i := 0; i < 40; i++ {
		// 8 KiB .. 2 MiB: spans of 1 .. 256 pages.
		b := make([]byte, (8<<10)<<(uint(i+id)%9))
		b[0] = byte(i)
		mu.Lock()
		sink = append(sink, b)
		if len(sink) > 16 {
			sink = sink[8:]
		}
		mu.Unlock()
	}
}

func main() {
	var wg sync.WaitGroup
	var mu sync.Mutex

	for round := 0; round < 3; round++ {
		for id := 0; id < 4; id++ {
			wg.Add(1)
			go work(id, &wg, &mu)
		}
		wg.Wait()
		// 9 MiB: 1152 pages, a large event.
		big := make([]byte, 9<<20)
		big[0] = 1
		sink = append(sink, big)
		sink = nil
		runtime.GC()
	}
	debug.FreeOSMemory()
}
