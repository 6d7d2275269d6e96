package weft

// Cancellation and cancel scopes.
//
// The model (Trio's cancel scopes, Eio's cancellation contexts). A task's
// code always runs inside a chain of scopes. Each task has a root scope,
// whose parent is the scope its spawner's code was in when it called Go (or
// the group's scope, for a group task). Inside a task, Group pushes a scope
// for its body, Timeout a scope with a deadline, and Protect a shield; each
// pops when the call returns.
// So the scopes of a Run form one tree, rooted at the root scope of the
// Run's sentinel task (runState.root), and every live task's root scope
// is in it. The tree spans the Run's loops: the run lock guards it (with
// one loop the lock is not taken, and the loop's thread is the only one
// that touches it).
//
// Cancelling a scope gives it a cause and reaches down the tree: every
// scope below it gets the cause too, and every task whose code is in one of
// them is cancelled, except below a shield, where cancellation stops. A
// task is cancelled when the nearest scope on its chain, from its innermost
// scope up to the first shield, that has a cause has one; that cause is
// what its suspension points return. t.cancelled caches the answer, so the
// check at every suspension point is a flag test.
//
// Invariants:
//
//  1. A scope's cause, once set, never changes (the first cancellation
//     wins) and is never cleared.
//  2. Sticky causes: every scope reached by a cancellation holds the cause
//     itself, and so does the root scope of a task started into a cancelled
//     chain. So when a scope closes and its children move to its parent (a
//     Group body that started plain Go tasks returns; a task finishes with
//     children still running), nothing that was cancelled stops being so.
//  3. t.cancelled == (chainCause(innermost scope of t) != nil), and t.dl is
//     the earliest deadline on the same chain, up to the first shield. Both
//     are refreshed whenever the chain or a scope on it changes.
//  4. A shield's own cause stays nil while it is open. When Protect
//     returns, the shield opens: a cancellation that reached the scopes
//     above it meanwhile is then delivered below it, to the task and to
//     every task started inside the Protect that still runs.
//  5. A task that waits while cancelled is interrupted, unless it holds
//     cancellation back (t.extra.hold > 0: the join at the end of First
//     and Group); it then sees the cause at its first suspension point
//     after the hold ends.
//
// Deadlines. Timeout pushes a scope with a deadline on its task. A timer
// on the loop cancels the scope when the deadline passes; and since the
// loop may not look at its timers for a while (tasks that keep yielding to
// each other), every suspension point of a task under a deadline also
// compares the clock with t.dl and expires it at once. Deadlines above a
// shield do not apply below it.

import (
	"context"
	"errors"
)

// scope is a node of the cancellation tree. Guarded by the run lock.
type scope struct {
	parent            *scope
	child, prev, next *scope      // the scopes directly inside: nested ones, and root scopes of tasks started here
	task              *Task       // the task whose code the scope is in; for a root scope, that task
	st                *scopeState // made on first need: most scopes are never cancelled
}

type scopeState struct {
	cause  error        // non-nil once cancelled (invariant 1)
	shield bool         // an open Protect: cancellation from above stops here
	dl     *deadline    // a Timeout's deadline, on the Timeout's scope
	ctx    *taskContext // the context of code in this scope, once asked for (context.go)
}

func (s *scope) state() *scopeState {
	if s.st == nil {
		s.st = &scopeState{}
	}
	return s.st
}

func (s *scope) shielded() bool { return s.st != nil && s.st.shield }

// link makes s the youngest child of p.
func (s *scope) link(p *scope) {
	s.parent = p
	s.next = p.child
	if p.child != nil {
		p.child.prev = s
	}
	p.child = s
}

// unlink takes s out of its parent's children.
func (s *scope) unlink() {
	if s.prev != nil {
		s.prev.next = s.next
	} else if s.parent != nil && s.parent.child == s {
		s.parent.child = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	}
	s.prev, s.next = nil, nil
}

// close takes s out of the tree; its children move to its parent.
func (s *scope) close() {
	p := s.parent
	for c := s.child; c != nil; {
		next := c.next
		c.prev, c.next = nil, nil
		c.link(p)
		c = next
	}
	s.child = nil
	s.unlink()
}

// chainCause returns the cancellation that applies to code in s: the
// cause of the nearest scope from s up that has one, stopping at a shield.
func chainCause(s *scope) error {
	for ; s != nil; s = s.parent {
		if st := s.st; st != nil {
			if st.cause != nil {
				return st.cause
			}
			if st.shield {
				return nil
			}
		}
	}
	return nil
}

// chainDeadline returns the earliest deadline that applies to code in s,
// up to the first shield.
func chainDeadline(s *scope) *deadline {
	var best *deadline
	for ; s != nil; s = s.parent {
		if st := s.st; st != nil {
			if d := st.dl; d != nil && !d.off.Load() && (best == nil || d.when < best.when) {
				best = d
			}
			if st.shield {
				break
			}
		}
	}
	return best
}

// innermost returns the scope t's code is in now.
func (t *Task) innermost() *scope {
	if x := t.extra; x != nil && x.cur != nil {
		return x.cur
	}
	return &t.root
}

// cause returns what cancels t now, or nil (run lock held, or t's own
// code; see causeNow).
func (t *Task) cause() error { return chainCause(t.innermost()) }

// causeNow is cause for t's own code, taking the run lock: other loops
// may be cancelling scopes of its chain.
func (t *Task) causeNow() error {
	rs := t.rs
	rs.lock()
	c := t.cause()
	rs.unlock()
	return c
}

// cancelPoint returns the cancellation cause if t has been cancelled (or
// its deadline has passed) and it is not holding cancellation back.
func (t *Task) cancelPoint() error {
	if t.cancelled.Load() {
		if x := t.extra; x == nil || x.hold == 0 {
			return t.causeNow()
		}
		return nil
	}
	if d := t.dl.Load(); d != nil {
		return t.checkDeadline(d)
	}
	return nil
}

// cancelScope cancels s with cause (see the model above), from a task or
// the scheduler of loop l.
func (l *loop) cancelScope(s *scope, cause error) {
	rs := l.rs
	rs.lock()
	if s.st == nil || s.st.cause == nil {
		l.refreshSubtree(s, cause)
	}
	rs.unlock()
}

// refreshSubtree walks the subtree of top, not entering shields: with a
// cause, it gives every scope it reaches the cause (invariant 2); either
// way it refreshes every task it reaches (invariant 3), cancelling and
// interrupting those that become cancelled. It does not recurse: spawn
// trees can be deep. Run lock held.
func (l *loop) refreshSubtree(top *scope, cause error) {
	s := top
	for {
		if cause != nil {
			if st := s.state(); st.cause == nil {
				st.cause = cause
			}
		}
		l.refresh(s.task)
		if c := unshielded(s.child); c != nil {
			s = c
			continue
		}
		for {
			if s == top {
				return
			}
			if n := unshielded(s.next); n != nil {
				s = n
				break
			}
			s = s.parent
		}
	}
}

// unshielded returns s or the first of its later siblings that is not an
// open shield.
func unshielded(s *scope) *scope {
	for s != nil && s.shielded() {
		s = s.next
	}
	return s
}

// refresh recomputes what applies to t (invariant 3) and delivers a
// cancellation that now applies: its context is cancelled and, if it
// waits and holds nothing back, it is interrupted. l is the loop whose
// thread runs this; a task it does not own gets the delivery through its
// own loop's inbox (deliver). Run lock held. (A task reachable in the
// tree has not finished: finish takes it out under the run lock.)
func (l *loop) refresh(t *Task) {
	in := t.innermost()
	cause := chainCause(in)
	if dl := chainDeadline(in); dl != t.dl.Load() {
		t.dl.Store(dl)
	}
	if r := t.rareOf(); r != nil && len(r.ctxs) > 0 {
		t.cancelContexts() // those of scopes the cancellation reached, shielded code or not
	}
	if cause == nil {
		if t.cancelled.Load() {
			t.cancelled.Store(false)
		}
		return
	}
	if t.cancelled.Load() {
		return
	}
	t.cancelled.Store(true)
	if t.loop != l {
		to := t.loop
		to.post(func() { to.deliver(t) })
		return
	}
	l.deliverLocked(t, cause)
}

// deliverLocked cancels the context of t, a task of l, and interrupts its
// wait unless it holds cancellation back. Run lock held.
func (l *loop) deliverLocked(t *Task, cause error) {
	if t.state == stateDone {
		return
	}
	if x := t.extra; x == nil || x.hold == 0 {
		l.interrupt(t, cause)
	}
}

// deliver is refresh's delivery, on the loop that owned t when it was
// posted: if t has moved since, it is passed on.
func (l *loop) deliver(t *Task) {
	rs := l.rs
	rs.lock()
	if to := t.loop; to != l {
		rs.unlock()
		to.post(func() { to.deliver(t) })
		return
	}
	if cause := t.cause(); cause != nil {
		l.deliverLocked(t, cause)
	}
	rs.unlock()
}

// cancel cancels task t (its root scope, and so everything it started).
func (l *loop) cancel(t *Task, cause error) {
	l.cancelScope(&t.root, cause)
}

// pushScope makes s, a new scope of t's code, t's innermost. A scope
// opened in a cancelled chain holds the cause itself (invariant 2), unless
// it is a shield.
func (t *Task) pushScope(s *scope) {
	x := t.ensureExtra()
	rs := t.rs
	rs.lock()
	s.task = t
	s.link(t.innermost())
	if !s.shielded() {
		if c := chainCause(s.parent); c != nil {
			s.state().cause = c
		}
	}
	x.cur = s
	t.loop.refresh(t)
	rs.unlock()
}

// popScope closes s, t's innermost scope, and makes its parent t's
// innermost again. Tasks started in s and still running move to the
// parent; if s was a shield, a cancellation that reached the scopes above
// it meanwhile is delivered now (invariant 4), to t and to them.
func (t *Task) popScope(s *scope) {
	l := t.loop
	x := t.extra
	rs := t.rs
	rs.lock()
	defer rs.unlock()
	if s.shielded() {
		s.st.shield = false
		cause := chainCause(s.parent)
		// The shield's subtree may now see causes and deadlines from above.
		l.refreshSubtree(s, cause)
	}
	t.endContext(s, errScopeEnded)
	parent := s.parent
	var moved []*scope
	if s.st != nil && s.st.dl != nil {
		for c := s.child; c != nil; c = c.next {
			moved = append(moved, c)
		}
	}
	s.close()
	for _, c := range moved {
		l.refreshSubtree(c, nil) // tasks started in a Timeout no longer run under its deadline
	}
	if parent == &t.root {
		x.cur = nil
	} else {
		x.cur = parent
	}
	l.refresh(t)
}

// holdCancel holds t's cancellation back until the returned function is
// called: t's waits are not interrupted and its suspension points return
// no cancellation meanwhile. Unlike Protect, it shields nothing else: it
// is for the joins of First and Group, whose children are cancelled
// anyway.
func (t *Task) holdCancel() (release func()) {
	x := t.ensureExtra()
	x.hold++
	return func() { x.hold-- }
}

// walkTasks calls fn for every live task of the Run, spawners before the
// tasks they started. Run lock held (or one loop).
func (rs *runState) walkTasks(fn func(*Task)) {
	top := &rs.root.root
	s := top
	for {
		if t := s.task; t != nil && s == &t.root && t != &rs.root {
			fn(t)
		}
		if s.child != nil {
			s = s.child
			continue
		}
		for {
			if s == top {
				return
			}
			if s.next != nil {
				s = s.next
				break
			}
			s = s.parent
		}
	}
}

// Cancellation errors.

// isCancellation reports whether err says a task was cancelled rather
// than that it failed.
func isCancellation(err error) bool {
	return errors.Is(err, context.Canceled)
}

// cancelError is the cancellation a custom cause brings (CancelWithCause,
// a Run context cancelled with a cause): it matches context.Canceled and,
// through Unwrap, the cause.
type cancelError struct{ cause error }

func (e cancelError) Error() string           { return "weft: cancelled: " + e.cause.Error() }
func (e cancelError) Unwrap() error           { return e.cause }
func (cancelError) Is(target error) bool      { return target == context.Canceled }
func (e groupCancelError) Unwrap() error      { return e.first }
func (groupCancelError) Is(target error) bool { return target == context.Canceled }

// groupCancelError is the cause a group cancels its tasks and body with
// after a failure; it matches context.Canceled and the failure.
type groupCancelError struct{ first error }

func (e groupCancelError) Error() string {
	return "weft: cancelled: another task of the group failed: " + e.first.Error()
}

// asCancellation turns a cause given from outside (CancelWithCause, a Run
// context's cause) into a cancellation: nil and errors that already match
// context.Canceled stay as they are (nil becomes context.Canceled).
func asCancellation(cause error) error {
	switch {
	case cause == nil:
		return context.Canceled
	case isCancellation(cause):
		return cause
	}
	return cancelError{cause}
}

// causeValue returns the cause behind a cancellation, for context.Cause:
// the failure that cancelled a group, the cause given to CancelWithCause.
func causeValue(err error) error {
	switch e := err.(type) {
	case cancelError:
		return e.cause
	case groupCancelError:
		return e.first
	}
	return err
}

// Cancel asks the task behind p to stop, and returns at once, without
// suspending: like a context.CancelFunc, it does not wait for the task to
// finish (Await does). Any goroutine may call it, any number of times. It
// is CancelWithCause with context.Canceled.
//
// The task is woken at its current suspension point (Sleep, Await, Yield,
// All, Race, Readable, Writable and the I/O operations), which returns an
// error matching context.Canceled; a task that is running sees the same at
// its next suspension point. The request is passed on to every task the
// task started, at any depth, except those inside a Protect (they see it
// when the Protect returns). Cancellation is a request, not a kill: the
// task's function unwinds normally, its defers run, and whatever it
// returns settles p. A task that ends because it was cancelled is not a
// failure for Run's report.
//
// Cancel on a settled promise does nothing. On a promise made by NewPromise
// it settles the promise with the zero value and context.Canceled.
func (p *Promise[T]) Cancel() {
	if p == nil {
		panic("weft: Cancel called on a nil *Promise")
	}
	p.cancelWith(context.Canceled)
}

// CancelWithCause is Cancel with a cause: the task's suspension points
// return an error that matches both context.Canceled and cause (errors.Is),
// and context.Cause of its Context returns cause. A nil cause is
// context.Canceled. On a promise made by NewPromise it settles the promise
// with the zero value and that error. As Cancel, it does not suspend.
func (p *Promise[T]) CancelWithCause(cause error) {
	if p == nil {
		panic("weft: CancelWithCause called on a nil *Promise")
	}
	p.cancelWith(asCancellation(cause))
}

func (p *Promise[T]) cancelWith(cause error) {
	t := p.p.task
	if t == nil {
		var zero T
		p.settle(zero, cause, nil)
		return
	}
	if p.p.settled() {
		return
	}
	if cur := currentTask(); cur != nil && cur.rs == t.rs {
		cur.loop.cancel(t, cause) // from a task of the Run: at once
		return
	}
	rs := t.rs
	rs.lock()
	l := t.loop
	rs.unlock()
	l.post(func() { l.cancel(t, cause) })
}

// Protect runs f shielded from cancellation, for cleanup that must finish
// even when the task is being cancelled: a polite close, a final write. It
// returns f's error. Protect itself does not suspend (f's suspension
// points do), and while f runs no cancellation from outside reaches it:
// its suspension points return none; one that arrived meanwhile is
// delivered when f returns. (Trio calls this a shielded cancel scope, Eio
// Cancel.protect.)
//
// Exactly what the shield covers: while f runs, a cancellation arriving
// from outside (Promise.Cancel of this task or an ancestor, a Timeout or
// Group around the call, Run's context) reaches neither the task nor any
// task started inside f, at any depth: their suspension points are not
// interrupted and return no cancellation. Deadlines set inside f (a Timeout
// in f) still apply; a Timeout around the Protect does not. When f returns,
// a cancellation that arrived meanwhile is delivered at once to the task
// (its next suspension point returns it) and to every task started inside
// f that is still running.
//
// Keep protected work short and bounded: a protected wait that never ends
// holds up whoever waits for the task (First, Group).
//
// f runs on the calling task, with the same *Task: Protect is a scope, not
// a task, so what is bound to the task works inside it, and t.Context()
// inside f is a context that the outside cancellation does not reach
// while f runs.
func (t *Task) Protect(f func(t *Task) error) error {
	t.check("Protect")
	if f == nil {
		panic("weft: Protect called with a nil function")
	}
	s := &scope{st: &scopeState{shield: true}}
	t.pushScope(s)
	defer t.popScope(s)
	return f(t)
}
