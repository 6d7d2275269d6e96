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
//
// Besides the task's own code, a goroutine that runs work on its behalf
// (an Offload job: a helper, see beginHelp) may ask for the context: that
// of the scope the task's code was in when the work began, since that is
// what the work runs under. Such a goroutine must not touch the scopes
// (with one loop the run lock is no lock), so it asks the task's loop to
// make the context and waits for the answer: one loop round trip, the
// first time only. If the scope has ended meanwhile, or the task has
// finished, it gets a context that is already done, with errScopeEnded or
// errTaskFinished.

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
	x := t.ensureExtra()
	s := t.innermost()
	rs := t.rs
	rs.lock()
	defer rs.unlock()
	return t.scopeContext(x, s)
}

// scopeContext returns the context of s, a scope of t's code, making it on
// first use. Run lock held, on t's loop.
func (t *Task) scopeContext(x *taskExtra, s *scope) *taskContext {
	st := s.state()
	if st.ctx == nil {
		c := newTaskContext(t.rs)
		if d := chainDeadline(s); d != nil {
			l := t.loop
			c.deadline = l.clock.Now().Add(time.Duration(d.when - l.clock.Nanotime()))
			c.hasDeadline = true
		}
		st.ctx = c
		r := t.ensureRare()
		r.ctxs = append(r.ctxs, s)
		if cause := chainCause(s); cause != nil {
			c.cancelWith(cause)
		}
	}
	return st.ctx
}

// newTaskContext makes a context that carries the values of rs's context.
func newTaskContext(rs *runState) *taskContext {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(rs.ctx))
	return &taskContext{Context: ctx, cancel: cancel}
}

// cancelContexts cancels the contexts of t's scopes that a cancellation
// now applies to. Run lock held; any loop may call it.
func (t *Task) cancelContexts() {
	r := t.rareOf()
	if r == nil {
		return
	}
	for _, s := range r.ctxs {
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
	r := t.extra.rare.Load()
	for i, c := range r.ctxs {
		if c == s {
			r.ctxs = append(r.ctxs[:i], r.ctxs[i+1:]...)
			break
		}
	}
}

// closeContexts ends every context t made, as t finishes.
func (t *Task) closeContexts() {
	r := t.rareOf()
	if r == nil || len(r.ctxs) == 0 {
		return
	}
	rs := t.rs
	rs.lock()
	for _, s := range r.ctxs {
		s.st.ctx.cancelWith(errTaskFinished)
	}
	r.ctxs = nil
	rs.unlock()
}

// helper is a goroutine that runs work on behalf of a task (an Offload
// job), between beginHelp and the end of the work: it may call t.Context().
type helper struct {
	t   *Task
	s   *scope       // the scope t's code was in when the work began
	ctx *taskContext // helpers.mu: the context, once the loop has answered
}

// helpers records the helpers at work, for Context. With a goroutine
// identifier (coro.HaveGetg) a helper is known by its goroutine; without
// one, any goroutine may call Context while the task has a helper at work.
var helpers struct {
	running atomic.Int32 // helpers at work, in all Runs: Context looks no further while 0
	mu      sync.Mutex
	byG     map[uintptr]*helper // guarded by mu: with Getg, each helper goroutine's
	byT     map[*Task][]*helper // guarded by mu: without Getg, each task's
}

// beginHelp readies, on t's own code, work that another goroutine will run
// on t's behalf: that goroutine calls enter first and leave last, and may
// call t.Context() in between.
func (t *Task) beginHelp() helper {
	t.ensureExtra() // made now: the loop's answer to the helper must not make it under the run lock
	return helper{t: t, s: t.innermost()}
}

// enter marks the calling goroutine as h's until leave, which it must call
// with what enter returned.
func (h *helper) enter() uintptr {
	g := coro.Getg()
	helpers.mu.Lock()
	if coro.HaveGetg {
		if helpers.byG == nil {
			helpers.byG = map[uintptr]*helper{}
		}
		helpers.byG[g] = h
	} else {
		if helpers.byT == nil {
			helpers.byT = map[*Task][]*helper{}
		}
		helpers.byT[h.t] = append(helpers.byT[h.t], h)
	}
	helpers.running.Add(1)
	helpers.mu.Unlock()
	return g
}

// leave ends what enter began.
func (h *helper) leave(g uintptr) {
	helpers.mu.Lock()
	if coro.HaveGetg {
		delete(helpers.byG, g)
	} else {
		hs := helpers.byT[h.t]
		for i, x := range hs {
			if x == h {
				hs = append(hs[:i], hs[i+1:]...)
				break
			}
		}
		if len(hs) == 0 {
			delete(helpers.byT, h.t)
		} else {
			helpers.byT[h.t] = hs
		}
	}
	helpers.running.Add(-1)
	helpers.mu.Unlock()
}

// helperOf returns the helper of t that calls, or nil.
func helperOf(t *Task) *helper {
	if helpers.running.Load() == 0 {
		return nil
	}
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	if coro.HaveGetg {
		if h := helpers.byG[coro.Getg()]; h != nil && h.t == t {
			return h
		}
		return nil
	}
	if hs := helpers.byT[t]; len(hs) > 0 {
		return hs[len(hs)-1]
	}
	return nil
}

// context is Context for the helper: the context of the scope its work
// began in, made by the task's loop.
func (h *helper) context() context.Context {
	helpers.mu.Lock()
	c := h.ctx
	helpers.mu.Unlock()
	if c != nil {
		return c
	}
	reply := make(chan *taskContext, 1)
	rs := h.t.rs
	rs.lock()
	l := h.t.loop
	rs.unlock()
	h.ask(l, reply)
	c = <-reply
	helpers.mu.Lock()
	h.ctx = c
	helpers.mu.Unlock()
	return c
}

// ask has loop l answer the helper's request for the context, passing it
// on to the task's loop if the task has moved.
func (h *helper) ask(l *loop, reply chan<- *taskContext) {
	t := h.t
	rs := t.rs
	if !l.post(func() {
		rs.lock()
		if to := t.loop; to != l {
			rs.unlock()
			h.ask(to, reply)
			return
		}
		c := h.contextOnLoop()
		rs.unlock()
		reply <- c
	}) {
		// The loop has ended (the Run unwinds): t has finished.
		c := newTaskContext(rs)
		c.cancelWith(errTaskFinished)
		reply <- c
	}
}

// contextOnLoop is the context of the scope h's work began in, if t's
// code is still in it; otherwise a context already done. Run lock held,
// on t's loop, between tasks.
func (h *helper) contextOnLoop() *taskContext {
	t := h.t
	cause := error(errTaskFinished)
	if t.state == stateDone {
		if st := t.root.st; st != nil && st.cause != nil {
			cause = st.cause // it was cancelled before it finished: so would its context have been
		}
	} else {
		cause = errScopeEnded
		for s := t.innermost(); s != nil; s = s.parent {
			if s == h.s {
				return t.scopeContext(t.extra, s)
			}
			if s == &t.root {
				break
			}
		}
	}
	c := newTaskContext(t.rs)
	c.cancelWith(cause)
	return c
}
