package weft

// Cancellation.
//
// A task is cancelled by its own cause (Promise.Cancel, a Timeout, Run's
// context, a cancelled ancestor) or by a cancel scope it is inside: the
// body of a Group runs in a scope that the group cancels when a child fails,
// without cancelling the task itself. t.cancelled caches "some cause
// applies", so that the check at every suspension point is a flag test.
//
// Cancelling a task sets its cause and that of every descendant in the
// spawn tree (see Task.link and Task.finish) that has none yet, cancels
// their contexts, and interrupts each one that is waiting, unless it is
// inside Protect. Suspension points check first (cancelPoint), so a task
// that is running when it is cancelled sees it at its next one. Inside
// Protect, cancellation is held back: it is delivered at the first
// suspension point after Protect returns.

import (
	"context"
	"errors"
)

// cancelScope is a region of a task's code (a Group body) that can be
// cancelled on its own. Scopes nest: x.scope is the innermost.
type cancelScope struct {
	cause  error        // non-nil once the scope is cancelled
	parent *cancelScope // the enclosing scope of the same task
	tasks  []*Task      // the group's children, cancelled with the scope
}

// cause returns what cancels t now, or nil.
func (t *Task) cause() error {
	x := t.x
	if x == nil {
		return nil
	}
	if x.cancelErr != nil {
		return x.cancelErr
	}
	for s := x.scope; s != nil; s = s.parent {
		if s.cause != nil {
			return s.cause
		}
	}
	return nil
}

// cancelPoint returns the cancellation cause if t has been cancelled and is
// not holding cancellation back.
func (t *Task) cancelPoint() error {
	if t.cancelled && t.x.protect == 0 {
		return t.cause()
	}
	return nil
}

// cancel cancels t and its descendants with cause. Loop-owned.
func (l *loop) cancel(t *Task, cause error) {
	if t.state == stateDone {
		return
	}
	l.walk(t, func(x *Task) {
		if xx := x.extra(); xx.cancelErr == nil {
			xx.cancelErr = cause
			x.cancelled = true
			x.cancelContext(cause)
			if xx.protect == 0 {
				l.interrupt(x, cause)
			}
		}
	})
}

// cancelScope cancels scope s of task t: the tasks started in s and in the
// scopes nested inside it, and t itself while its code is inside s.
func (l *loop) cancelScope(t *Task, s *cancelScope, cause error) {
	if s.cause != nil {
		return
	}
	s.cause = cause
	for in := t.x.scope; in != nil; in = in.parent {
		for _, c := range in.tasks {
			l.cancel(c, cause)
		}
		if in == s {
			break
		}
	}
	t.cancelled = true
	if t.x.protect == 0 {
		l.interrupt(t, cause)
	}
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

// Cancel asks the task behind p to stop, and returns at once: like a
// context.CancelFunc, it does not wait for the task to finish (Await does).
// Any goroutine may call it, any number of times.
//
// The task is woken at its current suspension point (Sleep, Await, Yield,
// All, Race, Readable, Writable and the I/O operations), which returns an
// error matching context.Canceled; a task that is running sees the same at
// its next suspension point. The request is passed on to every task the
// task started. Cancellation is a request, not a kill: the task's function
// unwinds normally, its defers run, and whatever it returns settles p. A
// task that ends because it was cancelled is not a failure for Run's
// report.
//
// Cancel on a settled promise does nothing. On a promise made by NewPromise
// it settles the promise with the zero value and context.Canceled.
func (p *Promise[T]) Cancel() {
	t := p.p.task
	if t == nil {
		var zero T
		p.settle(zero, context.Canceled, nil)
		return
	}
	if p.p.settled() {
		return
	}
	l := t.loop
	l.post(func() { l.cancel(t, context.Canceled) })
}

// Protect runs f with cancellation held back until f returns, for cleanup
// that must finish even when the task is being cancelled: a polite close, a
// final write. (Eio calls this Cancel.protect, Trio a shielded cancel
// scope.) While f runs, its suspension points are not interrupted and do
// not return a cancellation; a cancellation that arrives meanwhile is
// delivered at the first suspension point after f returns. Tasks f starts
// are not cancelled at birth by it either. Protect returns f's error.
//
// Keep protected work short and bounded: a protected wait that never ends
// holds up whoever waits for the task (First, Timeout, Group). Timeout
// inside Protect still applies to its own child.
func (t *Task) Protect(f func(t *Task) error) error {
	t.check("Protect")
	x := t.extra()
	x.protect++
	defer func() { x.protect-- }()
	return f(t)
}
