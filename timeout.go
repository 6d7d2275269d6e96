package weft

// Timeout: a cancel scope with a deadline (Trio's fail_after). The
// deadline hangs on the Timeout's scope in the cancellation tree
// (cancel.go); when its timer fires, or a suspension point finds it has
// passed, the scope is cancelled with the deadline's own cause, which is
// how Timeout tells its own expiry from any other cancellation.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrTimeout is returned by Timeout when the deadline passed before the
// function finished. errors.Is(ErrTimeout, context.DeadlineExceeded) is
// true, and it has a Timeout method that returns true, like the net
// package's timeout errors.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "weft: timeout" }

func (timeoutError) Timeout() bool { return true }

func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// deadlineError is the cause a Timeout cancels its function with: it
// matches both context.Canceled (it is a cancellation) and
// context.DeadlineExceeded (that is why). Each Timeout's is its own value,
// so that a Timeout can tell its own deadline's cancellation from another.
type deadlineError struct{ d *deadline }

func (deadlineError) Error() string { return "weft: deadline exceeded: cancelled by Timeout" }

func (deadlineError) Timeout() bool { return true }

func (deadlineError) Is(target error) bool {
	return target == context.DeadlineExceeded || target == context.Canceled
}

// Timeout runs f on the calling task with a deadline d from now, on the
// loop's clock, and returns f's result, or ErrTimeout if the deadline
// passed and f's error is the deadline's cancellation. Timeout itself does
// not suspend: f's suspension points are where the deadline, or a
// cancellation of the task, is seen. If the calling task is cancelled,
// before or while f runs, f sees it at its next suspension point and
// Timeout returns what f returned (the cause, matching context.Canceled,
// if f let it through).
//
// Timeout is a cancel scope (Trio's fail_after, asyncio's timeout, Eio's
// with_timeout, Go's context.WithTimeout): f receives t itself, so
// everything bound to the task (a ResponseWriter, a ReadWriter, a Mutex
// held, t.Context()) works inside it, and Timeouts, Groups and Protects
// nest inside f as anywhere else. ErrTimeout replaces f's result only when
// f let the deadline's cancellation propagate, as Trio's fail_after
// requires. If f finished otherwise, with a value or another error, even
// after the deadline (it caught the cancellation, or a read completed just
// as the deadline passed), its result is returned as it is: nothing f
// produced is thrown away.
//
// What the deadline reaches: when it passes, f's code and every task it
// started (at any depth, except inside a Protect) are cancelled: their
// suspension points return an error that matches both context.Canceled
// and context.DeadlineExceeded. It is seen at the next suspension point
// even if the loop has not looked at its timers (tasks that only Yield to
// each other, await settled promises or call Checkpoint see it there).
// Tasks f starts inherit the deadline, and their Contexts report it; the
// Context taken inside f reports it too, and its Err is
// context.DeadlineExceeded once it passed. When Timeout returns, the
// deadline no longer applies to anything: the task goes on uncancelled
// (unless a cancellation from outside reached it meanwhile), the context
// taken inside f is cancelled (as a context.WithTimeout's at the end of
// its function), and a task f started with Go that outlives f no longer
// runs under the deadline. An earlier deadline around the Timeout still
// applies inside it; a Protect inside f shields its body from the
// deadline.
//
// A d <= 0 deadline has already passed: f runs until it first reaches a
// suspension point, where it is cancelled.
//
// A panic in f propagates, after the deadline is removed. The task may move to another
// loop inside f (to reach a Conn's loop, say); the deadline's timer stays
// on the loop that set it and reaches the task wherever it runs.
func Timeout[T any](t *Task, d time.Duration, f func(t *Task) (T, error)) (v T, err error) {
	t.check("Timeout")
	if f == nil {
		panic("weft: Timeout called with a nil function")
	}
	l := t.loop
	d = max(d, 0)
	dl := &deadline{when: l.deadline(int64(d)), tloop: l}
	s := &scope{st: &scopeState{dl: dl}}
	dl.scope = s
	dl.timer = l.addTimer(int64(d), func() { l.expire(dl) })
	t.pushScope(s)
	func() {
		defer func() {
			dl.off.Store(true)
			t.popScope(s)
			t.loop.disarm(dl) // t may be on another loop by now
		}()
		v, err = f(t)
	}()
	if dl.fired.Load() && err != nil && errors.Is(err, deadlineError{dl}) {
		var zero T
		return zero, ErrTimeout
	}
	return v, err
}

// deadline is a Timeout's: when it passes, its scope is cancelled with err.
type deadline struct {
	when  int64  // on the Run's clock; immutable
	scope *scope // immutable once the child is made
	timer *timer // on tloop's heap
	tloop *loop
	fired atomic.Bool // the scope has been cancelled by it
	off   atomic.Bool // the Timeout returned: it no longer applies
}

// checkDeadline expires t's deadline d if it has passed: the cancellation
// is then seen at this suspension point, not only when the loop next looks
// at its timers.
func (t *Task) checkDeadline(d *deadline) error {
	if d.fired.Load() || d.off.Load() || t.loop.clock.Nanotime() < d.when {
		return nil
	}
	t.loop.expire(d)
	if t.cancelled.Load() && (t.extra == nil || t.extra.hold == 0) {
		return t.causeNow()
	}
	return nil
}

// expire cancels the scope of a deadline that has passed (once).
func (l *loop) expire(d *deadline) {
	if d.off.Load() || !d.fired.CompareAndSwap(false, true) {
		return
	}
	l.disarm(d)
	l.cancelScope(d.scope, deadlineError{d})
}

// disarm removes d's timer, from the loop that holds it.
func (l *loop) disarm(d *deadline) {
	if to := d.tloop; to == l {
		l.timers.remove(d.timer)
	} else {
		to.post(func() { to.timers.remove(d.timer) })
	}
}
