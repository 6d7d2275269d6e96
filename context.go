package weft

// A task's context.Context. It is created on first use (most tasks never
// ask for one), carries the values of Run's context, and is cancelled when
// its task is cancelled (with the same cause) or finishes. It is a standard
// cancel context underneath, so context.Cause, context.AfterFunc and
// derived contexts behave as usual and start no extra goroutine.
//
// Besides the task's own code, a goroutine that runs work on its behalf (an
// Offload job: beginHelp, endHelp) may ask for the context, since that work
// is what the context is for. Such a goroutine may create it while the task
// runs, is cancelled or finishes on its loop, so the context is published
// with a compare-and-swap, and the loop records the first cause it delivers
// (cancelContext, closeContext) before it looks for a context to cancel: a
// context made afterwards applies that cause itself. (Seen from either side
// with sequentially consistent atomics, one of the two finds the other.)

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/coro"
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

// taskCtx is what taskExtra holds of the context: the context once made,
// and the first cause the loop delivered (see the file's comment).
type taskCtx struct {
	ctx   atomic.Pointer[taskContext]
	cause atomic.Pointer[error]
}

// context returns t's context, making it on first use; t's own code only.
func (t *Task) context() context.Context {
	x := t.extra()
	if c := x.ctx.ctx.Load(); c != nil {
		return c
	}
	c, made := t.newContext(x)
	if made && t.cancelled.Load() {
		c.cancelWith(t.causeNow())
	}
	return c
}

// newContext makes t's context and publishes it, or returns the one
// published first (made false). Any goroutine may call it: it reads only
// what is immutable or atomic.
func (t *Task) newContext(x *taskExtra) (c *taskContext, made bool) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(t.rs.ctx))
	c = &taskContext{Context: ctx, cancel: cancel}
	if d := t.dl.Load(); d != nil && !d.off.Load() {
		clk := t.rs.clock
		c.deadline = clk.Now().Add(time.Duration(d.when - clk.Nanotime()))
		c.hasDeadline = true
	}
	if !x.ctx.ctx.CompareAndSwap(nil, c) {
		cancel(nil)
		return x.ctx.ctx.Load(), false
	}
	return c, true
}

// cancelWith cancels c with the value behind the cancellation cause
// (causeValue), so that context.Cause finds it.
func (c *taskContext) cancelWith(cause error) {
	if errors.Is(cause, context.DeadlineExceeded) {
		c.expired.Store(true)
	}
	c.cancel(causeValue(cause))
}

// cancelContext cancels t's context, if it has one, with cause; the first
// cause is recorded for a context a helper makes later. t's loop calls it.
func (t *Task) cancelContext(cause error) {
	if x := t.x; x != nil {
		x.ctx.cause.CompareAndSwap(nil, &cause)
		if c := x.ctx.ctx.Load(); c != nil {
			c.cancelWith(cause)
		}
	}
}

func (t *Task) closeContext() {
	if x := t.x; x != nil {
		x.ctx.cause.CompareAndSwap(nil, &errTaskFinishedCause)
		if c := x.ctx.ctx.Load(); c != nil {
			c.cancel(errTaskFinished)
		}
	}
}

var errTaskFinishedCause error = errTaskFinished

// helpers records the goroutines that run work on behalf of a task (its
// Offload jobs), so that they may call its Context. With a goroutine
// identifier (coro.HaveGetg) a helper is known by its goroutine; without
// one, any goroutine may call Context while the task has a helper running.
var helpers struct {
	running atomic.Int32 // helpers running, in all Runs: Context looks no further while 0
	mu      sync.Mutex
	byG     map[uintptr]*Task // guarded by mu: with Getg, each helper's task
	byT     map[*Task]int32   // guarded by mu: without Getg, each task's helpers
}

// beginHelp readies t, on its own code, for work that another goroutine
// will run on its behalf: that goroutine calls helping first and
// doneHelping last, and may call t.Context() in between.
func (t *Task) beginHelp() {
	t.extra() // the helper reads t.x: it exists before the helper starts
}

// helping marks the calling goroutine as a helper of t until doneHelping,
// which it must call with what helping returned.
func (t *Task) helping() uintptr {
	g := coro.Getg()
	helpers.mu.Lock()
	if coro.HaveGetg {
		if helpers.byG == nil {
			helpers.byG = map[uintptr]*Task{}
		}
		helpers.byG[g] = t
	} else {
		if helpers.byT == nil {
			helpers.byT = map[*Task]int32{}
		}
		helpers.byT[t]++
	}
	helpers.running.Add(1)
	helpers.mu.Unlock()
	return g
}

// doneHelping ends what helping began.
func (t *Task) doneHelping(g uintptr) {
	helpers.mu.Lock()
	if coro.HaveGetg {
		delete(helpers.byG, g)
	} else if helpers.byT[t]--; helpers.byT[t] == 0 {
		delete(helpers.byT, t)
	}
	helpers.running.Add(-1)
	helpers.mu.Unlock()
}

// helpedHere reports whether the caller is a helper of t (see helping).
func (t *Task) helpedHere() bool {
	if helpers.running.Load() == 0 {
		return false
	}
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	if coro.HaveGetg {
		return helpers.byG[coro.Getg()] == t
	}
	return helpers.byT[t] > 0
}

// helperContext is Context for a helper of t: t.x exists (beginHelp), and
// everything else it reads is immutable or atomic.
func (t *Task) helperContext() context.Context {
	x := t.x
	if c := x.ctx.ctx.Load(); c != nil {
		return c
	}
	c, made := t.newContext(x)
	if made {
		if cause := x.ctx.cause.Load(); cause != nil {
			c.cancelWith(*cause) // delivered before the context existed
		}
	}
	return c
}
