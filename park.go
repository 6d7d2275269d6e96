package weft

// Parking: the one way a wait source outside the core (a channel, a lock,
// an event: the layers built on the core) suspends a task and wakes it.
//
// The source keeps its waiters in a queue of its own, under its own lock,
// as parkWaiter records. The protocol:
//
//  1. The waiting task calls t.preparePark(w), which gives w the generation
//     of the wait about to start, then links w into the source's queue
//     (under the source's lock), then calls t.park(op, src), which suspends
//     it.
//  2. Whoever satisfies the wait (another task of any loop, or a plain
//     goroutine) unlinks w under the source's lock, hands it what it waits
//     for (through the source's own fields), and calls w.wake(from). A wake
//     between steps 1 and 2's suspension is safe: a wake from another
//     goroutine goes through the task's loop inbox, which the loop reads only
//     once the task has suspended, and a wake from the same loop cannot run
//     while the task does.
//  3. If the wait is interrupted (cancellation, a deadlock report, Run
//     unwinding), the core calls src.withdraw(w) on the task's loop before
//     the task resumes, and bumps the task's wait generation, so that a wake
//     already on its way is dropped. withdraw must unlink w if it is still
//     queued; if the source had already handed w something (the wake lost
//     the race), the task finds that out from the source when it resumes
//     and must pass it on (see the channel and lock layers).
//
// A parked task, like one waiting on a promise, does not keep Run alive:
// if nothing else can happen, it is reported in a deadlock with op and the
// line it waits at. A source whose waiters can be satisfied from outside
// the loops (a goroutine blocked in a channel's SendWait, say) says so
// through keepsAlive.

import "github.com/weft-go/weft/internal/coro"

// parkSource is a wait source outside the core.
type parkSource interface {
	// withdraw takes w off the source's queue after its wait was
	// interrupted. It runs on the parked task's loop.
	withdraw(w *parkWaiter)
}

// keepAliveSource is a parkSource that may be satisfied from outside the
// loops: while keepsAlive reports true for the source of a parked task,
// the loop sleeps instead of reporting a deadlock. A source whose answer
// turns false must wake the loops of its parked tasks (postRecheck) so
// that they look again.
type keepAliveSource interface {
	parkSource
	keepsAlive() bool
}

// parkWaiter is a task's registration with a source's queue: the core
// reads task, gen and loop; slot is the source's (the sync layer keeps
// its queue node there, with the links, the state and the value handed
// over: sync_waitq.go).
type parkWaiter struct {
	task *Task
	gen  uint32 // the wait generation this registration wakes
	loop *loop  // the loop the task waits on (it cannot move while it does)
	slot any    // the source's use: its queue node
}

// preparePark readies w for a new wait of t; call it before linking w.
func (t *Task) preparePark(w *parkWaiter) {
	w.task = t
	w.loop = t.loop
	w.gen = t.newWait()
}

// park suspends t in the wait w was prepared for, on behalf of src; op
// names the operation for reports ("Chan.Recv", "Mutex.Lock"). It returns
// nil when woken by w.wake, or the error of the interruption (a
// cancellation cause, the loop's DeadlockError, errAborted). It is a
// cancellation point only in that an interruption ends it: the caller
// checks t.cancelPoint before preparing the wait.
func (t *Task) park(op string, src parkSource, w *parkWaiter) error {
	l := t.loop
	if d := l.rs.deadlock.Load(); d != nil {
		src.withdraw(w)
		return d
	}
	if l.aborted {
		src.withdraw(w)
		return errAborted
	}
	x := t.ensureExtra()
	x.park, x.parkW = src, w
	r := t.obsRec() // noteWaitSite, inline so that the stack starts at the caller
	r.mu.Lock()
	t.publishWaitLocked(r, waitPark, op)
	fpCallers(r.w.pcs[:])
	r.mu.Unlock()
	if _, ka := src.(keepAliveSource); ka {
		l.linkKeepAlive(t)
	}
	err := t.block(waitPark)
	if r := x.rare.Load(); r != nil && r.kaLinked {
		// The wait ended before it began (block returned at once): t is
		// still on l, which unlinks it here. Otherwise ready did, on the
		// loop that owns the list, before t could be handed elsewhere.
		l.unlinkKeepAlive(t)
	}
	x.park, x.parkW = nil, nil
	return err
}

// linkKeepAlive adds t, about to park on a keepAliveSource, to l's list of
// such tasks, so that the idle check looks at them only, not at every task
// of the Run. The list is loop-owned: l links, l reads it as it goes idle,
// and l unlinks the task as it readies it (ready), before the task can be
// handed to another loop.
func (l *loop) linkKeepAlive(t *Task) {
	r := t.ensureRare()
	r.kaLinked = true
	r.kaPrev, r.kaNext = nil, l.kaParked
	if l.kaParked != nil {
		l.kaParked.extra.rare.Load().kaPrev = t
	}
	l.kaParked = t
}

// unlinkKeepAlive takes t off l's list again, as its park ends.
func (l *loop) unlinkKeepAlive(t *Task) {
	r := t.extra.rare.Load()
	r.kaLinked = false
	if r.kaPrev != nil {
		r.kaPrev.extra.rare.Load().kaNext = r.kaNext
	} else {
		l.kaParked = r.kaNext
	}
	if r.kaNext != nil {
		r.kaNext.extra.rare.Load().kaPrev = r.kaPrev
	}
	r.kaPrev, r.kaNext = nil, nil
}

// wake makes the task behind w runnable, if it is still in the wait w was
// registered for. from is the task calling (nil from a plain goroutine or
// when unknown): a wake from a task of the same loop makes the waiter
// runnable at once, in FIFO order; any other goes through the loop's
// inbox. Call it after unlinking w, outside the source's lock if the
// source can be used from several loops.
func (w *parkWaiter) wake(from *Task) {
	t, gen, l := w.task, w.gen, w.loop
	if from != nil && from.loop == l {
		l.unpark(t, gen)
		return
	}
	l.post(func() { l.unpark(t, gen) })
}

// unpark readies t if it still waits in the parked wait of generation gen.
func (l *loop) unpark(t *Task, gen uint32) {
	// A stale wake may come after the task moved to another loop: waitTok
	// is all it may read then.
	if t.waitTok.Load() == gen && t.waitKind == waitPark {
		l.ready(t)
	}
}

// postRecheck asks the loop of the parked task behind w to look again at
// whether it is deadlocked (a keepAliveSource's answer turned false).
func (w *parkWaiter) postRecheck() {
	w.loop.post(func() {})
}

// parkedKeepAliveLocked reports whether some task of the loop is parked on
// a source that can still be satisfied from outside the loops. Only l
// calls it (with several loops, holding the run lock, as it goes idle).
func (l *loop) parkedKeepAliveLocked() bool {
	for t := l.kaParked; t != nil; t = t.extra.rare.Load().kaNext {
		if t.state == stateWaiting && t.waitKind == waitPark {
			if k, ok := t.extra.park.(keepAliveSource); ok && k.keepsAlive() {
				return true
			}
		}
	}
	return false
}

// currentTask returns the task whose code is running on the calling
// goroutine, or nil: for the paths that are not handed a *Task (a promise's
// settle function, say) and must know whether they run on a loop.
func currentTask() *Task {
	c := coro.Current()
	if c == nil {
		return nil
	}
	if j, ok := c.Job().(taskJob); ok {
		return j.taskOf()
	}
	return nil
}

// callerLoop returns the loop whose task calls, or nil from a plain
// goroutine (or where currentTask cannot tell).
func callerLoop() *loop {
	if t := currentTask(); t != nil {
		return t.loop
	}
	return nil
}
