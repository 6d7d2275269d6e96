package weft

import (
	"context"
	"errors"
	"time"
)

// ErrTimeout is returned by Timeout when the deadline passed before the
// function finished. errors.Is(ErrTimeout, context.DeadlineExceeded) is
// true, and it has a Timeout method that returns true, like the net
// package's timeout errors.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string        { return "weft: timeout" }
func (timeoutError) Timeout() bool        { return true }
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

// firstLostError is the cause First cancels the losers with.
type firstLostError struct{}

func (firstLostError) Error() string {
	return "weft: cancelled: another function of First finished first"
}
func (firstLostError) Is(target error) bool { return target == context.Canceled }

var (
	errFirstLost error = firstLostError{}
	errNoFuncs         = errors.New("weft: First of no functions would never finish")
)

// First runs each function as a child task and returns the result, value
// and error, of the first to finish; the others are then cancelled (their
// suspension points return an error matching context.Canceled). First
// returns only after every child has finished, so no task outlives the
// call. (This is Eio's Fiber.first, generalised to n functions.)
//
// The children start in order, each running until it first suspends; if
// one finishes before the later ones have started, those are never
// started. A loser's failure other than the cancellation is not lost: Run
// reports it, as for any failure nobody awaited.
//
// First suspends and is a cancellation point: if the calling task is
// cancelled, the children are cancelled with it, and First returns the
// cause once they have finished. First of no functions returns an error.
//
//go:noinline
func First[T any](t *Task, fs ...func(t *Task) (T, error)) (T, error) {
	pc := callerPC()
	t.check("First")
	var zero T
	if len(fs) == 0 {
		return zero, errNoFuncs
	}
	for _, f := range fs {
		if f == nil {
			panic("weft: First called with a nil function")
		}
	}
	ps := make([]*Promise[T], 0, len(fs))
	cores := make([]*promise, 0, len(fs))
	for _, f := range fs {
		p := spawnIn(t, t.innermost(), f, pc, spawnFirst, 0, nil)
		ps = append(ps, p)
		cores = append(cores, &p.p)
		if anySettled(cores) {
			break // one finished while the others ran: start no more
		}
	}
	winner := -1
	err := t.waitEach(cores, "First", func(i int) bool { winner = i; return true })
	for i, p := range ps {
		switch {
		case err != nil:
			t.loop.cancel(p.p.task, err)
		case i != winner:
			t.loop.cancel(p.p.task, errFirstLost)
		}
	}
	if jerr := t.join(cores, "First"); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil {
		return zero, err
	}
	return ps[winner].result()
}

// Timeout runs f on the calling task with a deadline d from now, on the
// loop's clock, as a cancel scope (Trio's fail_after, asyncio's timeout,
// Eio's with_timeout, Go's context.WithTimeout): f receives t itself, so
// everything bound to the task (a ResponseWriter, a ReadWriter, a Mutex
// held, t.Context()) works inside it, and Timeouts, Groups and Protects
// nest inside f as anywhere else. Timeout returns f's result, with one
// exception: if the deadline passed and f's error is the deadline's
// cancellation (f let the cancellation propagate, as Trio's fail_after
// requires), Timeout returns ErrTimeout. If f finished otherwise, with a
// value or another error, even after the deadline (it caught the
// cancellation, or a read completed just as the deadline passed), its
// result is returned as it is: nothing f produced is thrown away.
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
// Timeout itself does not suspend: f's suspension points are the
// cancellation points. If the calling task is cancelled, or is cancelled
// while f runs, f sees it at its next suspension point and Timeout returns
// what f returned (the cause, if f let it through). A panic in f
// propagates, after the deadline is removed. The task may move to another
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

// join waits, with cancellation held back, until every promise in ps has
// settled: the end of a First or Timeout, whose children must not outlive
// it. It returns an error only if the loop is unwinding (deadlock, Goexit).
func (t *Task) join(ps []*promise, op string) error {
	release := t.holdCancel()
	defer release()
	return t.waitEach(ps, op, func(int) bool { return false })
}

func anySettled(ps []*promise) bool {
	for _, p := range ps {
		if p.settled() {
			return true
		}
	}
	return false
}
