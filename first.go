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
func (deadlineError) Error() string       { return "weft: deadline exceeded: cancelled by Timeout" }
func (deadlineError) Timeout() bool       { return true }
func (deadlineError) Is(target error) bool {
	return target == context.DeadlineExceeded || target == context.Canceled
}
func (firstLostError) Error() string {
	return "weft: cancelled: another function of First finished first"
}
func (firstLostError) Is(target error) bool { return target == context.Canceled }

// deadlineError is the cause a Timeout cancels its function with: it
// matches both context.Canceled (it is a cancellation) and
// context.DeadlineExceeded (that is why).
type deadlineError struct{}

// firstLostError is the cause First cancels the losers with.
type firstLostError struct{}

var (
	errDeadline  error = deadlineError{}
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
		p := spawn(t, f, pc)
		ps = append(ps, p)
		cores = append(cores, &p.p)
		if p.p.settled() {
			break
		}
	}
	winner := -1
	err := t.waitEach(cores, "First", func(i int) bool { winner = i; return true })
	for i, p := range ps {
		if i != winner {
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

// Timeout runs f as a child task with a deadline d from now, on the loop's
// clock. If f finishes first, Timeout returns its result. Otherwise f is
// cancelled: its suspension points return an error that matches both
// context.Canceled and context.DeadlineExceeded. Timeout waits for f to
// finish and returns ErrTimeout, whatever f returned while unwinding. The
// child's Context reports the deadline, and tasks f starts inherit it.
//
// A d <= 0 deadline has already passed: f still runs until it first
// suspends (a child runs first), and if it has not finished by then, it is
// cancelled.
//
// Timeout suspends and is a cancellation point: if the calling task is
// cancelled, f is cancelled too, and Timeout returns the cause once f has
// finished.
//
//go:noinline
func Timeout[T any](t *Task, d time.Duration, f func(t *Task) (T, error)) (T, error) {
	pc := callerPC()
	t.check("Timeout")
	if f == nil {
		panic("weft: Timeout called with a nil function")
	}
	var zero T
	l := t.loop
	deadline := l.deadline(int64(max(d, 0)))
	expired := false
	var child *Task
	timer := l.addTimer(max(int64(d), 0), func() {
		if child.state != stateDone {
			expired = true
			l.cancel(child, errDeadline)
		}
	})
	p := spawnWith(t, f, pc, func(c *Task) {
		child = c
		x := c.extra()
		if x.deadline == 0 || deadline < x.deadline {
			x.deadline = deadline
		}
	})
	cores := []*promise{&p.p}
	err := t.waitEach(cores, "Timeout", func(int) bool { return true })
	if err != nil {
		l.cancel(child, err)
	}
	if jerr := t.join(cores, "Timeout"); jerr != nil && err == nil {
		err = jerr
	}
	l.timers.remove(timer)
	switch {
	case err != nil:
		return zero, err
	case expired:
		return zero, ErrTimeout
	}
	return p.result()
}

// join waits, with cancellation held back, until every promise in ps has
// settled: the end of a First or Timeout, whose children must not outlive
// it. It returns an error only if the loop is unwinding (deadlock, Goexit).
func (t *Task) join(ps []*promise, op string) error {
	x := t.extra()
	x.protect++
	defer func() { x.protect-- }()
	return t.waitEach(ps, op, func(int) bool { return false })
}

// spawn starts f as a child of t, Go's way (the child runs first).
func spawn[T any](t *Task, f func(t *Task) (T, error), pc uintptr) *Promise[T] {
	return spawnWith(t, f, pc, nil)
}

// spawnWith is spawn with a hook that adjusts the child before it runs.
func spawnWith[T any](t *Task, f func(t *Task) (T, error), pc uintptr, setup func(*Task)) *Promise[T] {
	l := t.loop
	c := newTask(l, t, f, pc)
	if setup != nil {
		setup(&c.task)
	}
	l.ready(&c.task)
	l.ready(t)
	l.suspend(t)
	return &c.promise
}
