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
//
// GOMAXPROCS is the process's, and Runs may run side by side, so the
// reservations are counted process-wide against one base: the program's
// own GOMAXPROCS, read when no reservation is held and never while one
// is, so that no Run takes what another raised for its base (each Run
// used to size its pool by the GOMAXPROCS the Runs before it had raised,
// and reserve that much more: 64 Runs side by side reached thousands of
// processors and the process ran out of threads). Together they add at
// most reserveCap(base), whatever the number of Runs: a reservation gets
// what is left under it, possibly nothing, and gives back what it got.
// When the last one is given back, GOMAXPROCS is the base again, unless
// the program changed it meanwhile: then weft leaves it alone until no
// reservation is held, and takes the program's value as the next base.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// procsReserved is procs.reserved, for loopsOutnumberProcs to read
// without the lock.
var procsReserved atomic.Int32

var procs struct {
	mu       sync.Mutex
	reserved int // Ps the reservations hold, across all Runs (at most reserveCap(base))
	base     int // the program's GOMAXPROCS, read when reserved went from 0
	applied  int // the GOMAXPROCS weft set last while reserved > 0; 0 if it manages none
}

// reserveCap bounds what all reservations together add to base: 8 a
// processor, at least 32 (a single Run's pool is max(4, base)).
func reserveCap(base int) int { return max(32, 8*base) }

// procsBase returns the program's GOMAXPROCS, without what weft has
// reserved: what pools and loop counts are sized by.
func procsBase() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.reserved == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return procs.base
}

// reserveProcs raises GOMAXPROCS by up to n (for a pool that may run n
// workers, or a loop) and returns how many it reserved: fewer than n, or
// none, once the reservations of all Runs reach reserveCap. The caller
// gives back that many with releaseProcs.
func reserveProcs(n int) int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	cur := runtime.GOMAXPROCS(0)
	if procs.reserved == 0 {
		procs.base, procs.applied = cur, cur
	}
	got := max(0, min(n, reserveCap(procs.base)-procs.reserved))
	if got == 0 {
		return 0
	}
	procs.reserved += got
	procsReserved.Store(int32(procs.reserved))
	if cur == procs.applied { // else the program set GOMAXPROCS meanwhile: leave it
		procs.applied = procs.base + procs.reserved
		runtime.GOMAXPROCS(procs.applied)
	}
	return got
}

// releaseProcs gives back n processors that reserveProcs returned.
func releaseProcs(n int) {
	if n == 0 {
		return
	}
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.reserved -= n
	procsReserved.Store(int32(procs.reserved))
	if runtime.GOMAXPROCS(0) == procs.applied {
		procs.applied = procs.base + procs.reserved
		runtime.GOMAXPROCS(procs.applied)
	}
}
