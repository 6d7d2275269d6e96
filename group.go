package weft

// Groups: structured concurrency. A Group owns the tasks started with its
// Go; it does not return until all of them have finished, and the first
// failure cancels the rest. The group's children are children of the task
// that called Group, so cancelling that task cancels them too; the body
// runs in the calling task, inside a cancel scope (see cancel.go) that the
// group cancels on failure.

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-go/weft/internal/coro"
)

// TaskGroup is the handle a Group body uses to start the group's tasks.
type TaskGroup struct {
	owner   *Task
	scope   *cancelScope
	running int                // children started and not finished
	idle    *Promise[struct{}] // settled when running drops to 0 during the join
	settle  func(struct{}, error) bool
	errs    []error // failures (not cancellations), first one first
	done    bool    // Group has returned
}

// errGroupFailed is the cause a group cancels its children and body with
// after a failure.
type groupCancelError struct{ first error }

func (e groupCancelError) Error() string {
	return fmt.Sprintf("weft: cancelled: another task of the group failed: %v", e.first)
}
func (groupCancelError) Is(target error) bool { return target == context.Canceled }

// Group runs body and every task body starts with g.Go, and returns only
// after all of them have finished: no task outlives the group. This is
// Trio's nursery, asyncio's TaskGroup, Eio's Switch (known elsewhere as a
// scope or a bundle).
//
// The first failure, an error or a panic from the body or any of the
// group's tasks, cancels the group: every task still running is cancelled,
// and so is the body, whose suspension points return an error matching
// context.Canceled until Group returns. Group then returns that first
// failure, joined with any other failures that were not cancellations.
// A panic in a group task arrives as a *PanicError; a panic in the body
// itself propagates, after the group's tasks have been cancelled and have
// finished.
//
// Group suspends and is a cancellation point: if the calling task is
// cancelled, every task of the group is cancelled with it, and Group
// returns the cause once they have finished (unless a failure came first).
func Group(t *Task, body func(g *TaskGroup) error) (err error) {
	t.check("Group")
	if body == nil {
		panic("weft: Group called with a nil body")
	}
	x := t.extra()
	g := &TaskGroup{owner: t, scope: &cancelScope{parent: x.scope}}
	x.scope = g.scope
	defer func() {
		r := recover()
		if r != nil {
			g.fail(newPanicError(r))
		}
		err = g.finish(t)
		x.scope = g.scope.parent
		t.cancelled = t.cause() != nil
		if r != nil {
			panic(r)
		}
	}()
	if berr := body(g); berr != nil && !isCancellation(berr) {
		g.fail(berr)
	}
	return nil
}

// finish waits for the group's tasks, with cancellation held back (they
// are cancelled with the caller anyway), and works out Group's error.
func (g *TaskGroup) finish(t *Task) error {
	x := t.x
	x.protect++
	for g.running > 0 {
		g.idle, g.settle = NewPromise[struct{}]()
		if err := t.awaitOne(&g.idle.p); err != nil {
			// The loop is unwinding (deadlock, Goexit): stop waiting.
			g.errs = append(g.errs, err)
			break
		}
	}
	x.protect--
	g.done = true
	switch {
	case len(g.errs) == 1:
		return g.errs[0]
	case len(g.errs) > 1:
		return errors.Join(g.errs...)
	case x.cancelErr != nil:
		return x.cancelErr
	}
	// A cancellation of an enclosing group's scope is the enclosing body's
	// business; report it here too so the body stops.
	for s := g.scope.parent; s != nil; s = s.parent {
		if s.cause != nil {
			return s.cause
		}
	}
	return nil
}

// fail records a failure; the first one cancels the group.
func (g *TaskGroup) fail(err error) {
	g.errs = append(g.errs, err)
	if len(g.errs) == 1 {
		g.owner.loop.cancelScope(g.owner, g.scope, groupCancelError{first: err})
	}
}

// Go starts f as a task of the group. Like weft.Go it runs the new task
// first: the task calling Go (the body, or another task of the group)
// continues when the new one suspends. f's error, or a panic, is a failure
// of the group (see Group); a cancellation is not.
//
// Go must be called from a task of the loop the group belongs to, while
// Group has not returned; otherwise it panics with a "weft:" message. A
// task started while the group is cancelled starts cancelled.
//
//go:noinline
func (g *TaskGroup) Go(f func(t *Task) error) {
	pc := callerPC()
	if f == nil {
		panic("weft: TaskGroup.Go called with a nil function")
	}
	if g.done {
		panic("weft: TaskGroup.Go called after its Group returned")
	}
	l := g.owner.loop
	cur := l.current
	if cur == nil || (coro.HaveGetg && (cur.co == nil || cur.co.G() != coro.Getg())) {
		panic("weft: TaskGroup.Go called outside the tasks of its loop")
	}
	g.running++
	wrapped := func(t *Task) (struct{}, error) {
		err := g.run(t, f)
		return struct{}{}, err
	}
	spawnWith(cur, wrapped, pc, func(c *Task) {
		// A child of the owner, whoever started it, so that cancelling the
		// owner cancels it.
		if c.parent != g.owner {
			c.unlink()
			c.link(g.owner)
		}
		if g.scope.cause != nil || g.owner.cancelled {
			c.extra().cancelErr = g.owner.cause()
			c.cancelled = true
		}
		g.scope.tasks = append(g.scope.tasks, c)
	})
}

// run runs f as a group task and reports its end to the group.
func (g *TaskGroup) run(t *Task, f func(t *Task) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
		g.running--
		if err != nil && !isCancellation(err) {
			g.fail(err)
		}
		if g.running == 0 && g.settle != nil {
			g.settle(struct{}{}, nil)
		}
		// The group reports the failure; Run need not.
		t.job.promiseCore().markHandled()
	}()
	return f(t)
}
