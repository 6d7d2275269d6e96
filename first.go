package weft

import (
	"context"
	"errors"
)

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
// and error, of the first to finish; the others are then cancelled. It
// suspends the task until every child has finished, so no task outlives
// the call. It is a cancellation point: if the calling task is cancelled,
// the children are cancelled with it, and First returns the cause
// (matching context.Canceled) once they have finished. (This is Eio's
// Fiber.first, generalised to n functions.)
//
// The losers' suspension points return an error matching
// context.Canceled. The children start in order, each running until it
// first suspends; if one finishes before the later ones have started,
// those are never started. A loser's failure other than the cancellation
// is not lost: Run reports it, as for any failure nobody awaited. First of
// no functions returns an error.
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
