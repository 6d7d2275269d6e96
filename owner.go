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
// back, so it follows the nesting loop -> driver -> task exactly. It is
// kept in every build, since coro.Current answers from it which task
// calls; loopG only for the checks.

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
	if c := l.thread.Running(); c != nil {
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

// switchTo records that l's thread of control moves to c, which the
// caller is about to start, resume or close, and returns the previous one
// (nil: the loop's goroutine), for switchBack. It costs an atomic swap, as
// switchBack an atomic store.
func (l *loop) switchTo(c *coro.Coro) *coro.Coro {
	return l.thread.Switch(c)
}

// switchBack records that the thread of control is prev again.
func (l *loop) switchBack(prev *coro.Coro) {
	l.thread.Back(prev)
}

// ownLoopGoroutine records the loop's goroutine as it starts to run, and
// forgets it (0: no more checks) as it ends. Either way the thread of
// control is the loop's goroutine: a Goexit that passed through a task's
// switch skipped its switchBack.
func (l *loop) ownLoopGoroutine(start bool) {
	l.thread.Back(nil)
	if !ownerChecks {
		return
	}
	l.loopG.Store(0)
	if start {
		l.loopG.Store(coro.Getg())
	}
}
