// Package clock is the time source of a weft loop. Every reading of time in
// the runtime goes through a Clock, so that a virtual clock can stand in for
// the real one: the loop then jumps to its next deadline instead of
// sleeping, and a program that waits for minutes runs in microseconds.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is a loop's time source.
type Clock interface {
	// Now is the time tasks see.
	Now() time.Time
	// Nanotime is monotonic nanoseconds since the clock's epoch; timer
	// deadlines are on this scale.
	Nanotime() int64
	// NowNano returns Now and Nanotime from one reading of the clock.
	NowNano() (time.Time, int64)
	// Virtual reports whether the clock only moves when advanced.
	Virtual() bool
	// AdvanceTo moves a virtual clock forward to ns (never back). A real
	// clock ignores it.
	AdvanceTo(ns int64)
}

// Real is the wall clock, read through Go's monotonic time.
type Real struct{ epoch time.Time }

// NewReal returns a real clock whose epoch is now.
func NewReal() *Real { return &Real{epoch: time.Now()} }

// Now returns the wall time.
func (c *Real) Now() time.Time { return time.Now() }

// Nanotime returns the monotonic time since the clock was made.
func (c *Real) Nanotime() int64 { return int64(time.Since(c.epoch)) }

// NowNano returns Now and Nanotime from one time.Now (two vDSO reads of
// the clock, where Now and Nanotime take three).
func (c *Real) NowNano() (time.Time, int64) {
	n := time.Now()
	return n, int64(n.Sub(c.epoch))
}

// Virtual reports false: a real clock moves by itself.
func (c *Real) Virtual() bool { return false }

// AdvanceTo does nothing: a real clock cannot be moved.
func (c *Real) AdvanceTo(ns int64) {}

// Virtual is a clock that stands still until advanced. Now starts at the
// given time. It may be read from any goroutine.
type Virtual struct {
	start time.Time
	ns    atomic.Int64
}

// NewVirtual returns a virtual clock reading start.
func NewVirtual(start time.Time) *Virtual { return &Virtual{start: start} }

// Now returns the start time plus the time advanced so far.
func (c *Virtual) Now() time.Time { return c.start.Add(time.Duration(c.ns.Load())) }

// Nanotime returns the time advanced so far.
func (c *Virtual) Nanotime() int64 { return c.ns.Load() }

// NowNano returns Now and Nanotime at the same instant.
func (c *Virtual) NowNano() (time.Time, int64) {
	ns := c.ns.Load()
	return c.start.Add(time.Duration(ns)), ns
}

// Virtual reports true.
func (c *Virtual) Virtual() bool { return true }

// AdvanceTo moves the clock forward to ns; it never moves it back.
func (c *Virtual) AdvanceTo(ns int64) {
	for {
		cur := c.ns.Load()
		if ns <= cur || c.ns.CompareAndSwap(cur, ns) {
			return
		}
	}
}
