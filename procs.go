package weft

// The Go runtime's processors (GOMAXPROCS) that weft reserves beside the
// program's own: one per Offload worker (offload.go), and one per loop
// that sleeps in a blocking system call (an io_uring loop locked to its
// thread, loop.run). Go's sysmon takes the processor of a thread that
// has been in a system call for 20 µs when no other processor is idle,
// and then polls every 20 µs (and wakes another thread to spin) as long
// as it keeps taking them: with one processor, a loop that sleeps in
// io_uring_enter between requests made sysmon a fifth of the server's
// CPU. With a spare processor, sysmon leaves a thread in a system call
// alone for 10 ms and sleeps.

import (
	"runtime"
	"sync"
)

var procs struct {
	mu       sync.Mutex
	reserved int // workers holding a reservation, across all Runs
	base     int // GOMAXPROCS before the first reservation
}

// reserveProcs raises GOMAXPROCS by n for a pool that may run n workers.
func reserveProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.reserved == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.reserved += n
	runtime.GOMAXPROCS(procs.base + procs.reserved)
}

// releaseProcs gives back a pool's n Ps, unless someone else has changed
// GOMAXPROCS meanwhile.
func releaseProcs(n int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.reserved -= n
	if runtime.GOMAXPROCS(0) == procs.base+procs.reserved+n {
		runtime.GOMAXPROCS(procs.base + procs.reserved)
	}
}
