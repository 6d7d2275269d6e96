package weft

// A task's context.Context. Each scope a task's code runs in (its root
// scope, a Timeout's, a Group body's, a Protect's shield: cancel.go) may
// have a context, created the first time the task's code asks for one
// there (Task.Context): most tasks never ask. It carries the values of
// Run's context, and it is cancelled, with the cause, exactly when a
// cancellation applies to code in its scope (chainCause of the scope is
// set), or when the scope ends: a Timeout, Group or Protect returns (as
// a context.WithTimeout's cancel function is called when its function
// returns), or the task finishes. It is a standard cancel context
// underneath, so context.Cause, context.AfterFunc and derived contexts
// behave as usual and start no extra goroutine.
//
// So a context taken inside a Timeout is done when that Timeout's
// deadline passes, while the context the task takes after the Timeout
// returned is not; a context taken inside Protect is not cancelled by a
// cancellation from outside while the Protect runs.
//
// Ownership: the contexts hang off their scopes (scopeState.ctx) and the
// task lists the scopes that have one (taskExtra.ctxs), both under the
// run lock, since a cancellation walk from another loop cancels them
// (refresh). A context's own cancel is safe from any goroutine.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

type taskContext struct {
	context.Context // a cancel-cause context: Done, Value and context.Cause come from it
	cancel          context.CancelCauseFunc
	deadline        time.Time // reported by Deadline, if hasDeadline
	hasDeadline     bool
	expired         atomic.Bool // cancelled by a Timeout's deadline: Err is DeadlineExceeded
	cancelled       bool        // run lock: cancel was called
}

// Deadline reports the earliest deadline of the Timeouts the scope runs
// under.
func (c *taskContext) Deadline() (time.Time, bool) { return c.deadline, c.hasDeadline }

// Err is context.DeadlineExceeded after a Timeout's deadline cancelled the
// scope, as for a context.WithDeadline; otherwise the cancel context's.
func (c *taskContext) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

// cancelWith cancels c with the value behind cause (causeValue), so that
// context.Cause finds it. Run lock held.
func (c *taskContext) cancelWith(cause error) {
	if c.cancelled {
		return
	}
	c.cancelled = true
	if errors.Is(cause, context.DeadlineExceeded) {
		c.expired.Store(true)
	}
	c.cancel(causeValue(cause))
}

// errTaskFinished is the cause of a context whose task finished normally.
var errTaskFinished = &finishedError{}

type finishedError struct{}

func (*finishedError) Error() string        { return "weft: task finished" }
func (*finishedError) Is(target error) bool { return target == context.Canceled }

// errScopeEnded is the cause of a context whose scope ended (its Timeout,
// Group or Protect returned) while the task goes on.
var errScopeEnded = &scopeEndedError{}

type scopeEndedError struct{}

func (*scopeEndedError) Error() string {
	return "weft: the Timeout, Group or Protect this context was made in has returned"
}
func (*scopeEndedError) Is(target error) bool { return target == context.Canceled }

// context returns the context of the scope t's code is in now, making it
// on first use. t's own code calls it.
func (t *Task) context() context.Context {
	x := t.extra()
	s := t.innermost()
	rs := t.rs
	rs.lock()
	defer rs.unlock()
	st := s.state()
	if st.ctx == nil {
		ctx, cancel := context.WithCancelCause(context.WithoutCancel(rs.ctx))
		c := &taskContext{Context: ctx, cancel: cancel}
		if d := chainDeadline(s); d != nil {
			l := t.loop
			c.deadline = l.clock.Now().Add(time.Duration(d.when - l.clock.Nanotime()))
			c.hasDeadline = true
		}
		st.ctx = c
		x.ctxs = append(x.ctxs, s)
		if cause := chainCause(s); cause != nil {
			c.cancelWith(cause)
		}
	}
	return st.ctx
}

// cancelContexts cancels the contexts of t's scopes that a cancellation
// now applies to. Run lock held; any loop may call it.
func (t *Task) cancelContexts() {
	x := t.x
	if x == nil {
		return
	}
	for _, s := range x.ctxs {
		if c := s.st.ctx; !c.cancelled {
			if cause := chainCause(s); cause != nil {
				c.cancelWith(cause)
			}
		}
	}
}

// endContext cancels the context of s, a scope of t that ends, if it has
// one, with cause (errScopeEnded, errTaskFinished), and forgets it. Run
// lock held.
func (t *Task) endContext(s *scope, cause error) {
	if s.st == nil || s.st.ctx == nil {
		return
	}
	s.st.ctx.cancelWith(cause)
	x := t.x
	for i, c := range x.ctxs {
		if c == s {
			x.ctxs = append(x.ctxs[:i], x.ctxs[i+1:]...)
			break
		}
	}
}

// closeContexts ends every context t made, as t finishes.
func (t *Task) closeContexts() {
	x := t.x
	if x == nil || len(x.ctxs) == 0 {
		return
	}
	rs := t.rs
	rs.lock()
	for _, s := range x.ctxs {
		s.st.ctx.cancelWith(errTaskFinished)
	}
	x.ctxs = nil
	rs.unlock()
}
