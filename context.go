package weft

// A task's context.Context. It is created on first use (most tasks never
// ask for one), carries the values of Run's context, and is cancelled when
// its task is cancelled (with the same cause) or finishes. It is a standard
// cancel context underneath, so context.Cause, context.AfterFunc and
// derived contexts behave as usual and start no extra goroutine.

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
}

// Deadline reports the deadline of the Timeout the task runs under.
func (c *taskContext) Deadline() (time.Time, bool) { return c.deadline, c.hasDeadline }

// Err is context.DeadlineExceeded after a Timeout's deadline cancelled the
// task, as for a context.WithDeadline; otherwise the cancel context's.
func (c *taskContext) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

// errTaskFinished is the cause of a context whose task finished normally.
var errTaskFinished = &finishedError{}

type finishedError struct{}

func (*finishedError) Error() string        { return "weft: task finished" }
func (*finishedError) Is(target error) bool { return target == context.Canceled }

func (t *Task) context() context.Context {
	x := t.extra()
	if x.ctx == nil {
		ctx, cancel := context.WithCancelCause(context.WithoutCancel(t.rs.ctx))
		x.ctx = &taskContext{Context: ctx, cancel: cancel}
		if d := t.dl.Load(); d != nil && !d.off.Load() {
			l := t.loop
			x.ctx.deadline = l.clock.Now().Add(time.Duration(d.when - l.clock.Nanotime()))
			x.ctx.hasDeadline = true
		}
		if t.cancelled.Load() {
			t.cancelContext(t.causeNow())
		}
	}
	return x.ctx
}

// cancelContext cancels t's context, if it has one, with the value behind
// the cancellation (causeValue), so that context.Cause finds it.
func (t *Task) cancelContext(cause error) {
	if t.x != nil && t.x.ctx != nil {
		if errors.Is(cause, context.DeadlineExceeded) {
			t.x.ctx.expired.Store(true)
		}
		t.x.ctx.cancel(causeValue(cause))
	}
}

func (t *Task) closeContext() {
	if t.x != nil && t.x.ctx != nil {
		t.x.ctx.cancel(errTaskFinished)
	}
}
