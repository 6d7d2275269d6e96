package weft

// Cancellation.
//
// Each task has a cancellation cause, nil until it is cancelled. Cancelling
// a task sets the cause on it and on every descendant that has none yet
// (the spawn tree; see Task.link and Task.finish), closes their contexts,
// and interrupts each one that is waiting, unless it is inside Protect.
// Suspension points check the cause first (cancelPoint), so a task that is
// running when it is cancelled sees it at its next one. A task that is
// inside Protect has its cancellation held back: it is delivered at the
// first suspension point after Protect returns.

import (
	"context"
	"errors"
)

// cancelPoint returns the cancellation cause if t has been cancelled and is
// not holding cancellation back.
func (t *Task) cancelPoint() error {
	if t.cancelled && t.x.protect == 0 {
		return t.x.cancelErr
	}
	return nil
}

// cancel cancels t and its descendants with cause. Loop-owned.
func (l *loop) cancel(t *Task, cause error) {
	if t.state == stateDone {
		return
	}
	l.walk(t, func(x *Task) {
		if x.cancelled {
			return
		}
		x.cancelled = true
		x.extra().cancelErr = cause
		x.cancelContext(cause)
		if x.x.protect == 0 {
			l.interrupt(x, cause)
		}
	})
}

// walk calls fn for t and each of its descendants, parents first, without
// recursion (spawn trees can be deep).
func (l *loop) walk(t *Task, fn func(*Task)) {
	x := t
	for {
		fn(x)
		if x.child != nil {
			x = x.child
			continue
		}
		for x != t && x.nextSib == nil {
			x = x.parent
		}
		if x == t {
			return
		}
		x = x.nextSib
	}
}

// isCancellation reports whether err says a task was cancelled rather
// than that it failed.
func isCancellation(err error) bool {
	return errors.Is(err, context.Canceled)
}
