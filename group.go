package weft

// Groups: structured concurrency. A Group owns the tasks started with its
// Go, GoIn, GoDaemon and Start; it does not return until all of them have
// finished, and the first failure cancels the rest (unless a handler takes
// the failures: Handle). The body runs in the calling task, in a scope of
// its own (cancel.go): the group's tasks start in that scope, whoever
// starts them, so cancelling the group's scope reaches them and the body,
// and cancelling the calling task reaches all of it.

import (
	"context"
	"errors"
	"sync/atomic"
)

// TaskGroup is the handle a Group body uses to start the group's tasks.
//
// Which tasks a cancellation reaches: cancelling the task that called
// Group (or anything above it) cancels the body and every task of the
// group; the group's own cancellation (a failure, Cancel) cancels the body
// and every task of the group, and nothing outside it. A task of the
// group belongs to the group wherever it was started from (Eio's rule: a
// fiber forked into a switch takes the switch's cancellation context): one
// started with g.Go from inside a Protect is not shielded by it, unless the
// group itself was opened inside that Protect, which then shields the whole
// group.
type TaskGroup struct {
	owner *Task // immutable
	scope scope // the body's scope; the group's tasks start in it (run lock)

	// The bookkeeping, under the run lock: the group's tasks may run on
	// any loop of the Run.
	running int // tasks started and not finished, daemons excepted
	daemons []*Task
	limit   int                       // SetLimit; 0: none
	counted int                       // tasks counted against the limit: started, not finished
	slots   queue[*Promise[struct{}]] // Go calls waiting for a slot, FIFO
	joining bool                      // Group is waiting for its tasks
	idle    *Promise[struct{}]        // settled when a task ends during the join
	errs    []error                   // failures (not cancellations), first one first
	handler func(error)

	done atomic.Bool // Group has returned
}

// Group runs body and every task body starts with the group's methods, and
// returns only after all of them have finished: it suspends the task until
// then, so no task outlives the group. It returns the group's first
// failure, or nil. It is a cancellation point: if the calling task is
// cancelled, every task of the group is cancelled with it, and Group
// returns the cause (matching context.Canceled) once they have finished,
// unless a failure came first. This is Trio's nursery, asyncio's
// TaskGroup, Eio's Switch (known elsewhere as a scope or a bundle).
//
// The first failure, an error or a panic from the body or any of the
// group's tasks, cancels the group: every task still running is cancelled,
// and so is the body, whose suspension points return an error matching
// context.Canceled and the failure (errors.Is) until Group returns. Group
// then returns that first failure, joined with any other failures that
// were not cancellations. With Handle, failures of the group's tasks go to
// the handler instead. A panic in a group task arrives as a *PanicError; a
// panic in the body itself propagates, after the group's tasks have been
// cancelled and have finished.
//
// Cancel cancels the group without failing it: Group then returns nil,
// unless something failed.
func Group(t *Task, body func(g *TaskGroup) error) (err error) {
	t.check("Group")
	if body == nil {
		panic("weft: Group called with a nil body")
	}
	g := &TaskGroup{owner: t}
	t.pushScope(&g.scope)
	defer func() {
		r := recover()
		if r != nil {
			g.fail(t, newPanicError(r))
		}
		g.join(t)
		t.popScope(&g.scope)
		g.done.Store(true)
		err = g.result(t)
		if r != nil {
			panic(r)
		}
		err = reraiseMisuse(err) // a group task's misuse is re-raised, not returned
	}()
	if berr := body(g); berr != nil && !isCancellation(berr) {
		g.fail(t, berr)
	}
	return nil
}

// join waits, with cancellation held back, for the group's tasks: first
// the others, then the daemons, which it cancels once the rest is done.
func (g *TaskGroup) join(t *Task) {
	release := t.holdCancel()
	defer release()
	rs := t.rs
	rs.lock()
	g.joining = true
	rs.unlock()
	for daemonsCancelled := false; ; {
		rs.lock()
		var stop []*Task
		if g.running == 0 && !daemonsCancelled {
			daemonsCancelled = true
			stop = append(stop, g.daemons...)
		}
		if g.running == 0 && len(g.daemons) == 0 {
			rs.unlock()
			return
		}
		idle := &Promise[struct{}]{}
		g.idle = idle
		rs.unlock()
		for _, d := range stop {
			t.loop.cancel(d, errDaemonStopped)
		}
		if err := t.awaitOne(&idle.p, "Group"); err != nil {
			// The loop is unwinding (deadlock, Goexit): stop waiting.
			rs.lock()
			g.errs = append(g.errs, err)
			rs.unlock()
			return
		}
	}
}

// result is Group's error once everything has finished.
func (g *TaskGroup) result(t *Task) error {
	rs := t.rs
	rs.lock()
	errs := g.errs
	rs.unlock()
	switch {
	case len(errs) == 1:
		return errs[0]
	case len(errs) > 1:
		return errors.Join(errs...)
	}
	// A cancellation from outside the group is the caller's business:
	// report it so that the caller's code stops.
	if t.cancelled.Load() {
		return t.causeNow()
	}
	return nil
}

// fail records a failure; the first one cancels the group. cur is the
// task calling (its loop runs the cancellation).
func (g *TaskGroup) fail(cur *Task, err error) {
	rs := cur.rs
	rs.lock()
	g.errs = append(g.errs, err)
	first := len(g.errs) == 1
	rs.unlock()
	if first {
		cur.loop.cancelScope(&g.scope, groupCancelError{first: err})
	}
}

// errDaemonStopped is the cause daemons are cancelled with when the rest
// of their group has finished.
var errDaemonStopped error = daemonStopError{}

type daemonStopError struct{}

func (daemonStopError) Error() string {
	return "weft: cancelled: the group's other tasks have finished (daemon stopped)"
}
func (daemonStopError) Is(target error) bool { return target == context.Canceled }

type groupTaskKind uint8

const (
	groupTask groupTaskKind = iota
	groupDaemon
)

// Go starts f as a task of the group. Like weft.Go it suspends the calling
// task (the body, or another task of the group) while the new task runs
// first, until that one suspends; under a limit (SetLimit) it first
// suspends the caller until fewer than the limit of the group's tasks are
// running. Go is not a cancellation point: that wait holds cancellation
// back, since every task it waits for finishes in any case. f's error, or
// a panic, is a failure of the group (see Group and Handle); a
// cancellation is not.
//
// Go must be called from a task of the loop the group belongs to, while
// Group has not returned; otherwise it panics with a "weft:" message. A
// task started while the group is cancelled starts cancelled, even from
// inside a Protect opened within the group (see TaskGroup).
//
//go:noinline
func (g *TaskGroup) Go(f func(t *Task) error) {
	pc := callerPC()
	if f == nil {
		panic("weft: TaskGroup.Go called with a nil function")
	}
	startIn(g, spawnGroupGo, pc, funcPC(f), groupTask, func(t *Task) (struct{}, error) { return struct{}{}, f(t) })
}

// GoIn starts f as a task of g, as g.Go does, and returns the promise of
// its result. It suspends the caller as g.Go does (the new task runs
// first; under SetLimit, the caller first waits for a slot) and is not a
// cancellation point. f's failure counts for the group too: it cancels
// the group, or goes to the handler (Handle), and Run does not report it
// again.
//
//go:noinline
func GoIn[T any](g *TaskGroup, f func(t *Task) (T, error)) *Promise[T] {
	pc := callerPC()
	if g == nil {
		panic("weft: GoIn called with a nil *TaskGroup")
	}
	if f == nil {
		panic("weft: GoIn called with a nil function")
	}
	return startIn(g, spawnGoIn, pc, funcPC(f), groupTask, f)
}

// GoDaemon starts f as a daemon of the group (Eio's fork_daemon): a task
// that does not keep the group open. Once the body and every other task of
// the group have finished, the daemons still running are cancelled (their
// suspension points return an error matching context.Canceled) and
// awaited. A daemon's failure counts like any other's. Daemons do not
// count against SetLimit's limit, so GoDaemon never waits for a slot; it
// suspends the caller while the daemon runs first, as Go does, and is not
// a cancellation point. Otherwise as Go.
//
//go:noinline
func (g *TaskGroup) GoDaemon(f func(t *Task) error) {
	pc := callerPC()
	if f == nil {
		panic("weft: TaskGroup.GoDaemon called with a nil function")
	}
	startIn(g, spawnGoDaemon, pc, funcPC(f), groupDaemon, func(t *Task) (struct{}, error) { return struct{}{}, f(t) })
}

// errNotReady is what Start returns when its function finished without
// calling ready.
var errNotReady = errors.New("weft: TaskGroup.Start: the function returned without calling ready")

// Start starts f as a task of the group and suspends the calling task
// until f calls ready (Trio's nursery.start), then returns nil: the
// classic use starts a server task and continues once it is listening.
// Start is a cancellation point while it waits: if the calling task is
// cancelled, Start returns the cause (matching context.Canceled) and f
// runs on in the group (a later failure before ready then counts for the
// group).
//
// Once f has called ready, f runs on as a task of the group, and its later
// failure counts for the group like any other. If f returns before calling
// ready, Start returns f's error (a *PanicError if it panicked), or an
// error saying it finished without calling ready; that failure goes to
// Start's caller only and does not otherwise count for the group. ready
// may be called once, from f's task or any goroutine; a second call panics
// with "weft:".
//
//go:noinline
func (g *TaskGroup) Start(f func(t *Task, ready func()) error) error {
	pc := callerPC()
	if f == nil {
		panic("weft: TaskGroup.Start called with a nil function")
	}
	cur := g.caller("TaskGroup.Start")
	started, settle := NewPromise[struct{}]()
	var called, gaveUp atomic.Bool // ready was called; Start's caller stopped waiting
	ready := func() {
		if !called.CompareAndSwap(false, true) {
			panic("weft: TaskGroup.Start: ready called twice")
		}
		settle(struct{}{}, nil)
	}
	startIn(g, spawnStart, pc, funcPC(f), groupTask, func(t *Task) (v struct{}, err error) {
		defer func() {
			if called.Load() || gaveUp.Load() {
				return
			}
			// Finished before ready: the caller of Start gets the failure.
			if r := recover(); r != nil {
				err = newPanicError(r)
			}
			if err == nil {
				err = errNotReady
			}
			settle(struct{}{}, err)
			err = nil
		}()
		return struct{}{}, f(t, ready)
	})
	// Await, but reported as waiting in TaskGroup.Start.
	err := cur.cancelPoint()
	if err == nil && !started.p.settled() {
		err = cur.awaitOne(&started.p, "TaskGroup.Start")
	}
	if err == nil {
		_, err = started.result()
	}
	if err != nil && !called.Load() && isCancellation(err) && !started.Settled() {
		gaveUp.Store(true) // the caller gave up: failures now count for the group
	}
	return err
}

// Cancel cancels the group: every task of the group and the body (their
// suspension points return an error matching context.Canceled). It is not
// a failure: Group waits for them and returns nil, or the failures that
// were not cancellations. Any task or goroutine may call it, any number of
// times; it does not suspend, and after Group returned it does nothing.
func (g *TaskGroup) Cancel() {
	if g.done.Load() {
		return
	}
	if cur := currentTask(); cur != nil && cur.rs == g.owner.rs {
		cur.loop.cancelScope(&g.scope, context.Canceled)
		return
	}
	rs := g.owner.rs
	rs.lock()
	l := g.owner.loop
	rs.unlock()
	l.post(func() {
		if !g.done.Load() {
			l.cancelScope(&g.scope, context.Canceled)
		}
	})
}

// SetLimit limits the group to n tasks running at once (started with Go,
// GoIn or Start and not finished; daemons are not counted): beyond it, Go
// suspends the task that called it until one finishes, so a producer
// cannot outrun its workers (errgroup's SetLimit). n <= 0 removes the
// limit. The limit may change while tasks run: a higher one lets waiting
// calls through at once; a lower one stops nothing that runs and holds
// back new calls until the count is below it. Call it from a task of the
// group's loop; it does not suspend.
func (g *TaskGroup) SetLimit(n int) {
	cur := g.caller("TaskGroup.SetLimit")
	cur.rs.lock()
	g.limit = max(n, 0)
	granted := g.grantSlots()
	cur.rs.unlock()
	settleAll(cur, granted)
}

// Handle makes h the group's failure handler: from then on, the failure of
// a group task (its error, or a *PanicError) is passed to h, on the loop,
// after the failing task has finished, and does not cancel the group, nor
// appear in Group's or Run's error: it was handled. h may call g.Cancel. A
// failure of the body itself still ends the group; so does a panic in h
// (it is a failure of the body). Handle(nil) restores the default. Call it
// from a task of the group's loop; it does not suspend.
//
// A server puts each connection in such a group, so that one client's
// failure (a reset, a bad request) cannot stop it.
func (g *TaskGroup) Handle(h func(err error)) {
	cur := g.caller("TaskGroup.Handle")
	cur.rs.lock()
	g.handler = h
	cur.rs.unlock()
}

// caller returns the calling task, checking first that it is a task of the
// group's loop and that the group is still open: a misuse panics.
func (g *TaskGroup) caller(op string) *Task {
	cur := currentTask()
	if cur == nil || cur.rs != g.owner.rs {
		panic("weft: " + op + " called outside the tasks of its group's Run")
	}
	if g.done.Load() {
		panic("weft: " + op + " called after its Group returned")
	}
	return cur
}

// startIn starts f as a task of g on behalf of the calling task, for the
// operation how called at pc; user is the user's function, which f may
// wrap.
func startIn[T any](g *TaskGroup, how spawnOp, pc, user uintptr, kind groupTaskKind, f func(t *Task) (T, error)) *Promise[T] {
	cur := g.caller(how.String())
	rs := cur.rs
	if kind == groupTask {
		g.admit(cur, how)
	}
	wrapped := groupWrap(g, kind, f)
	// The task starts in the group's scope, wherever cur's code is (see
	// TaskGroup).
	return spawnIn(cur, &g.scope, wrapped, pc, how, user, func(c *Task) {
		if kind == groupDaemon {
			rs.lock()
			g.daemons = append(g.daemons, c)
			rs.unlock()
		}
	})
}

// admit counts a new task of g (not a daemon) on behalf of cur; under a
// limit, cur first waits for a slot (SetLimit).
func (g *TaskGroup) admit(cur *Task, how spawnOp) {
	rs := cur.rs
	rs.lock()
	var slot *Promise[struct{}]
	if g.limit > 0 && (g.counted >= g.limit || g.slots.len() > 0) {
		slot = &Promise[struct{}]{}
		g.slots.push(slot) // grantSlots reserves its place in counted
	} else {
		g.counted++
	}
	g.running++
	rs.unlock()
	if slot != nil {
		g.waitSlot(cur, slot, how)
	}
}

// groupWrap wraps f, a task of g, so that a panic becomes its failure
// and its end is reported to g.
func groupWrap[T any](g *TaskGroup, kind groupTaskKind, f func(t *Task) (T, error)) func(t *Task) (T, error) {
	return func(t *Task) (v T, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = newPanicError(r)
			}
			g.taskDone(t, kind, err)
		}()
		return f(t)
	}
}

// newGroupTask makes f a task of g on behalf of cur, as Go does (counted,
// under SetLimit after cur waited for a slot, its root scope in the
// group's scope), on cur's loop, but does not run it: it stays new and
// queued nowhere, and the caller must make it wait (on its loop) or ready
// it, before cur next suspends. cur does not suspend otherwise.
func newGroupTask(g *TaskGroup, cur *Task, how spawnOp, pc, user uintptr, f func(t *Task) error) *Task {
	return newGroupTaskOf(g, cur, how, pc, user, func(t *Task) (struct{}, error) { return struct{}{}, f(t) })
}

// newGroupTaskOf is newGroupTask for a caller that has f in the shape of
// a task's function already: one closure fewer for a task that may wait
// long before it starts (GoWhenReadable's).
func newGroupTaskOf(g *TaskGroup, cur *Task, how spawnOp, pc, user uintptr, f func(t *Task) (struct{}, error)) *Task {
	g.admit(cur, how)
	wrapped := groupWrap(g, groupTask, f)
	c := newTask(cur.loop, &g.scope, wrapped, pc, how, user)
	c.task.simLoop = cur.simLoop
	return &c.task
}

// taskDone reports the end of a group task to the group: it runs in the
// task's own code, as its last act. A failure is recorded in the same
// critical section that counts the task out, so that the group's owner,
// perhaps on another loop, can never see the count say "done" before the
// failure is there to report. A failure for the handler keeps the task
// counted until the handler has run (on the task's loop, after the task
// finished), so Group cannot return before its handler has seen it.
func (g *TaskGroup) taskDone(t *Task, kind groupTaskKind, err error) {
	failed := err != nil && !isCancellation(err)
	// The group reports the failure (or its handler takes it); Run need not.
	t.job.promiseCore().markHandled()
	rs := t.rs
	rs.lock()
	h := g.handler
	if misuseIn(err) != nil {
		h = nil // a misuse is not a failure for the handler: the group re-raises it
	}
	first := false
	if failed && h == nil {
		g.errs = append(g.errs, err)
		first = len(g.errs) == 1
	}
	if failed && h != nil {
		rs.unlock()
		t.atExit(func() {
			g.handle(t, h, err)
			g.countOut(t, kind)
		})
		return
	}
	granted, idle := g.countOutLocked(t, kind)
	rs.unlock()
	if testHookCountedOut != nil {
		testHookCountedOut()
	}
	if first {
		t.loop.cancelScope(&g.scope, groupCancelError{first: err})
	}
	g.wake(t, granted, idle)
}

// testHookCountedOut, if set (by tests, before the Run), runs in taskDone
// once the task is counted out: a window in which the group's owner may
// join, which tests widen.
var testHookCountedOut func()

// countOut counts the finished task t out of the group.
func (g *TaskGroup) countOut(t *Task, kind groupTaskKind) {
	t.rs.lock()
	granted, idle := g.countOutLocked(t, kind)
	t.rs.unlock()
	g.wake(t, granted, idle)
}

// countOutLocked counts t out (run lock held) and returns the slots it
// lets through and the join's promise to settle, if the join waits.
func (g *TaskGroup) countOutLocked(t *Task, kind groupTaskKind) (granted []*Promise[struct{}], idle *Promise[struct{}]) {
	t.rs.assertRunLocked("a group's bookkeeping")
	if kind == groupTask {
		g.running--
		g.counted--
		granted = g.grantSlots()
	} else {
		for i, d := range g.daemons {
			if d == t {
				g.daemons = append(g.daemons[:i], g.daemons[i+1:]...)
				break
			}
		}
	}
	if g.joining {
		idle = g.idle
	}
	return granted, idle
}

// wake settles, outside the run lock, what countOutLocked returned.
func (g *TaskGroup) wake(t *Task, granted []*Promise[struct{}], idle *Promise[struct{}]) {
	settleAll(t, granted)
	if idle != nil {
		idle.settle(struct{}{}, nil, t.loop)
	}
}

// handle passes a failure to the handler; a panic in it fails the group.
func (g *TaskGroup) handle(t *Task, h func(error), err error) {
	defer func() {
		if r := recover(); r != nil {
			g.fail(t, newPanicError(r))
		}
	}()
	h(err)
}

// waitSlot suspends cur, in the operation how, until the group grants
// slot, its place under the limit (grantSlots reserves it: counted already
// includes it).
func (g *TaskGroup) waitSlot(cur *Task, slot *Promise[struct{}], how spawnOp) {
	release := cur.holdCancel()
	defer release()
	if err := cur.awaitOne(&slot.p, how.String()+" (limit)"); err != nil {
		// The loop is unwinding (deadlock, Goexit): start the task and let
		// it fail; the slot it takes is its own.
		cur.rs.lock()
		g.counted++
		cur.rs.unlock()
	}
}

// grantSlots lets through as many Go calls waiting for a slot as the
// limit now allows, first come first served, reserving their slots, and
// returns their promises for the caller to settle outside the run lock.
// Run lock held.
func (g *TaskGroup) grantSlots() []*Promise[struct{}] {
	var granted []*Promise[struct{}]
	for g.slots.len() > 0 && (g.limit == 0 || g.counted < g.limit) {
		p, _ := g.slots.pop()
		g.counted++
		granted = append(granted, p)
	}
	return granted
}

func settleAll(cur *Task, ps []*Promise[struct{}]) {
	for _, p := range ps {
		p.settle(struct{}{}, nil, cur.loop)
	}
}
