package weft

// Owner checks: every loop-owned structure (the timer heap, the fd table,
// the run queue, the external-work count, the keep-alive list, a task's
// wait state) may be touched only by its loop's thread of control: the
// loop's goroutine, or the coroutine of the task it runs at that moment
// (DESIGN.md, "Several loops"). With the race detector or the weft_debug
// build tag on, each of them checks that at every change, so that the
// next access from another loop's goroutine fails a test loudly, at the
// access, instead of racing silently; and the group bookkeeping checks
// that the run lock is held. Without them, ownerChecks is false and every
// check compiles to nothing.
//
// The thread of control is tracked in loop.thread: resume sets it to the
// coroutine it switches to and restores it when the coroutine switches
// back, so it follows the nesting loop -> driver -> task exactly.

import (
	"strconv"

	"github.com/weft-go/weft/internal/coro"
)

// assertOwner panics if the caller is not l's thread of control. what
// names the structure, for the report.
func (l *loop) assertOwner(what string) {
	if !ownerChecks || !coro.HaveGetg || l == nil {
		return
	}
	var want uintptr
	if c := l.thread.Load(); c != nil {
		want = c.G()
	} else {
		want = l.loopG.Load()
	}
	if want == 0 {
		return // the loop has not started, or has ended (Run closes it)
	}
	if coro.Getg() != want {
		panic("weft: internal error: " + what + " of loop " + strconv.Itoa(l.id) + " touched from another goroutine than the loop's (a task of another loop, or a plain goroutine)")
	}
}

// assertRunLocked panics if the run lock is free while several loops
// share what the caller touches (what).
func (rs *runState) assertRunLocked(what string) {
	if !ownerChecks || !rs.multi {
		return
	}
	if rs.mu.TryLock() {
		rs.mu.Unlock()
		panic("weft: internal error: " + what + " touched without the run lock")
	}
}

// switchTo records that l's thread of control moves to c (nil: the loop's
// goroutine) and returns the previous one, for switchBack.
func (l *loop) switchTo(c *coro.Coro) *coro.Coro {
	if !ownerChecks {
		return nil
	}
	return l.thread.Swap(c)
}

// switchBack records that the thread of control is prev again.
func (l *loop) switchBack(prev *coro.Coro) {
	if ownerChecks {
		l.thread.Store(prev)
	}
}

// ownLoopGoroutine records the loop's goroutine as it starts to run, and
// forgets it (0: no more checks) as it ends.
func (l *loop) ownLoopGoroutine(start bool) {
	if !ownerChecks {
		return
	}
	l.thread.Store(nil)
	l.loopG.Store(0)
	if start {
		l.loopG.Store(coro.Getg())
	}
}
