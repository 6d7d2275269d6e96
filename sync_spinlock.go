package weft

import (
	"runtime"
	"sync/atomic"
)

// spinLock guards one object of the layers built on the core (a channel, a
// lock, an event). It is held for a few dozen instructions at a time and
// never across a suspension, so contention (tasks of two loops, or a plain
// goroutine, on the same object) is rare and brief: a waiter spins,
// yielding the processor, as promise.lock does. Uncontended, a lock and an
// unlock cost one compare-and-swap and one store. The zero value is
// unlocked.
type spinLock struct{ v atomic.Uint32 }

func (l *spinLock) lock() {
	for !l.v.CompareAndSwap(0, 1) {
		runtime.Gosched()
	}
}

func (l *spinLock) unlock() { l.v.Store(0) }
