package weft

// A task's context.Context. It is created on first use (most tasks never
// ask for one), carries the values of Run's context, and is cancelled when
// its task is cancelled (with the same cause) or finishes. It is a standard
// cancel context underneath, so context.Cause, context.AfterFunc and
// derived contexts behave as usual and start no extra goroutine.

import (
	"context"
	"time"
)

type taskContext struct {
	context.Context
	cancel context.CancelCauseFunc
}

// deadlineContext adds a deadline to report (weft enforces it itself, on
// the loop's clock).
type deadlineContext struct {
	context.Context
	at time.Time
}

func (c deadlineContext) Deadline() (time.Time, bool) { return c.at, true }

// errTaskFinished is the cause of a context whose task finished normally.
var errTaskFinished = &finishedError{}

type finishedError struct{}

func (*finishedError) Error() string        { return "weft: task finished" }
func (*finishedError) Is(target error) bool { return target == context.Canceled }

func (t *Task) context() context.Context {
	x := t.extra()
	if x.ctx == nil {
		ctx, cancel := context.WithCancelCause(context.WithoutCancel(t.loop.ctx))
		x.ctx = &taskContext{Context: ctx, cancel: cancel}
		if x.deadline != 0 {
			at := t.loop.clock.Now().Add(time.Duration(x.deadline - t.loop.clock.Nanotime()))
			x.ctx.Context = deadlineContext{Context: ctx, at: at}
		}
		if x.cancelErr != nil {
			cancel(x.cancelErr)
		}
	}
	return x.ctx.Context
}

func (t *Task) cancelContext(cause error) {
	if t.x != nil && t.x.ctx != nil {
		t.x.ctx.cancel(cause)
	}
}

func (t *Task) closeContext() {
	if t.x != nil && t.x.ctx != nil {
		t.x.ctx.cancel(errTaskFinished)
	}
}
