package weft

// Promises.
//
// A promise is pending until it is settled, once, with a value and an error.
// Its waiters are tasks suspended in Await, All or Race. Settling hands each
// waiter to its loop: directly when the settler runs on that loop, through
// the loop's inbox otherwise (the settle function of NewPromise may be
// called from any goroutine). A promise is not tied to a loop; tasks of two
// Runs may wait on the same one.
//
// Locking: the state word holds the promise's phase, a lock bit that
// guards the waiter list (and each waiter's links and generation), and two
// flags. Settling a promise that nobody waits on is one CAS and takes no
// lock. The value and error are written between claiming the promise and
// publishing its final phase, and never change after.
//
// State word:
//
//	bits 0-1  phase: pending, claimed (a settler is writing the result),
//	          fulfilled, rejected. Only pending -> claimed -> final.
//	bit  2    waiters: a waiter has registered at some point; settlers must
//	          take the lock and wake the list. Never cleared.
//	bit  3    locked: the waiter list is being changed.
//	bit  4    handled: a failure was returned to someone (Await, All, Race).

import (
	"runtime"
	"sync/atomic"
)

const (
	pending   uint32 = 0
	claimed   uint32 = 1
	fulfilled uint32 = 2
	rejected  uint32 = 3
	phaseMask uint32 = 3

	hasWaiters  uint32 = 1 << 2
	lockedBit   uint32 = 1 << 3
	handledFlag uint32 = 1 << 4
)

// Promise is the eventual result of a task (see Go) or of an operation
// settled by hand (see NewPromise): a value of type T and an error.
type Promise[T any] struct {
	// val comes first: a zero-size last field would be padded, and the
	// cell of a group task (a Promise[struct{}] and the user's function)
	// would take the next size class.
	val T
	p   promise
}

type promise struct {
	state      atomic.Uint32
	err        error
	head, tail *waiter // guarded by lockedBit
	task       *Task   // the task whose result this is; nil for NewPromise
}

func (p *promise) phase() uint32 { return p.state.Load() & phaseMask }
func (p *promise) settled() bool { return p.phase() >= fulfilled }
func (p *promise) handled() bool { return p.state.Load()&handledFlag != 0 }

// markHandled records that the promise's failure was given to someone.
func (p *promise) markHandled() {
	if p.state.Or(handledFlag)&handledFlag == 0 {
		p.observed()
	}
}

// lock takes the waiter-list lock. It is held for a few instructions, so
// contention (a settle racing a registration from another goroutine) is
// rare and brief; it spins, yielding the processor.
func (p *promise) lock() uint32 {
	for {
		s := p.state.Load()
		if s&lockedBit == 0 && p.state.CompareAndSwap(s, s|lockedBit) {
			return s | lockedBit
		}
		runtime.Gosched()
	}
}

func (p *promise) unlock() { p.state.And(^lockedBit) }

// waiter is one registration of a waiting task on a promise.
type waiter struct {
	task       *Task
	loop       *loop    // the loop the task waits on (it cannot move while it does)
	on         *promise // the promise registered with, if any (loop-owned)
	prev, next *waiter  // guarded by on.mu
	linked     bool     // guarded by on.mu
	multi      bool     // one of a multi-wait's registrations (fresh for each call)
	gen        uint32   // registration generation; written under on.mu
	tgen       uint32   // the task's wait generation when it registered (single waits)
	index      int      // multi-waits: the promise's position in the call
}

// waitState is what a task needs only when it waits on promises. The
// operation and the stack of the wait, which reports show, are in the
// task's observers' record (noteWaitSite).
type waitState struct {
	single    waiter
	multi     []*waiter // a multi-wait's registrations
	firedList []*waiter // ... and those whose promise settled, in that order
}

// fire records that the promise of the multi-wait registration w settled.
func (ws *waitState) fire(w *waiter) {
	ws.firedList = append(ws.firedList, w)
}

func (t *Task) waitState() *waitState {
	x := t.ensureExtra()
	if x.w == nil {
		x.w = &waitState{}
		x.w.single.task = t
	}
	return x.w
}

// register links w to p unless p has settled; it reports whether it did.
func (p *promise) register(w *waiter) bool {
	s := p.lock()
	switch s & phaseMask {
	case pending:
		if s&hasWaiters == 0 {
			p.state.Or(hasWaiters)
		}
	case claimed:
		// A settler that saw no waiter is writing the result; it takes a few
		// nanoseconds. Wait for it rather than register on a list it will
		// not look at.
		p.unlock()
		for p.phase() == claimed {
			runtime.Gosched()
		}
		return false
	default:
		p.unlock()
		return false
	}
	w.gen++
	w.on = p
	w.linked = true
	w.prev, w.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
	p.unlock()
	return true
}

// retire withdraws w from its promise, and invalidates any wake already on
// its way (from a settle that took w off the list first).
func (w *waiter) retire() {
	p := w.on
	if p == nil {
		return
	}
	p.lock()
	if w.linked {
		p.unlink(w)
	}
	w.gen++
	p.unlock()
	w.on = nil
}

func (p *promise) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next, w.linked = nil, nil, false
}

type wake struct {
	w         *waiter
	gen, tgen uint32
	loop      *loop
}

// settle resolves p once; from is the loop the caller runs on (nil when
// unknown). It reports whether this call settled p.
func (p *Promise[T]) settle(v T, err error, from *loop) bool {
	c := &p.p
	final := fulfilled
	if err != nil {
		final = rejected
	}
	var s uint32
	for {
		s = c.state.Load()
		if s&phaseMask != pending {
			return false
		}
		if s&(hasWaiters|lockedBit) != 0 {
			return p.settleWaiters(v, err, final, from)
		}
		if c.state.CompareAndSwap(s, s|claimed) {
			break
		}
	}
	// Claimed with no waiter: a registration now waits for the final phase,
	// and only settlers change the word, so a store keeps the flags in s.
	p.val, c.err = v, err
	c.state.Store(s | final)
	return true
}

// settleWaiters settles a promise that has (or had) waiters, and wakes them.
func (p *Promise[T]) settleWaiters(v T, err error, final uint32, from *loop) bool {
	c := &p.p
	s := c.lock()
	if s&phaseMask != pending {
		c.unlock()
		return false
	}
	p.val, c.err = v, err
	var buf [4]wake
	wakes := buf[:0]
	for w := c.head; w != nil; {
		next := w.next
		wakes = append(wakes, wake{w, w.gen, w.tgen, w.loop})
		w.prev, w.next, w.linked = nil, nil, false
		w = next
	}
	c.head, c.tail = nil, nil
	// Publish the result and release the lock in one store.
	c.state.Store(s&^(phaseMask|lockedBit) | final)
	for _, wk := range wakes {
		l := wk.loop
		if l == from {
			l.notify(wk.w, wk.gen, wk.tgen)
		} else {
			w, gen, tgen := wk.w, wk.gen, wk.tgen
			l.post(func() { l.notify(w, gen, tgen) })
		}
	}
	return true
}

// notify tells the task behind w, on its loop, that w's promise settled.
func (l *loop) notify(w *waiter, gen, tgen uint32) {
	t := w.task
	if !w.multi && t.waitTok.Load() != tgen {
		// The wait ended another way (cancelled) and the task may have moved
		// to another loop and reused w since: waitTok is all we may read.
		return
	}
	if w.gen != gen {
		return // the wait was withdrawn; this wake is stale
	}
	w.on = nil
	if ws := t.extra.w; w.multi {
		// One of several promises a multi-wait registered with: record the
		// completion order even if the task is already awake.
		ws.fire(w)
		if t.state == stateWaiting && t.waitKind == waitMulti {
			l.ready(t)
		}
		return
	}
	if t.state == stateWaiting && t.waitKind == waitPromise {
		l.ready(t)
	}
}

// NewPromise returns a pending promise and the function that settles it.
// Neither NewPromise nor the settle function suspends. The settle function
// may be called from any goroutine, any number of times: the first call
// settles the promise and returns true, later calls change nothing and
// return false.
//
// Called by a task, the settle function makes a waiter on the same loop
// runnable at once, in FIFO order, as a task's completion does: after
// settle(v, nil), a Yield lets the waiter run before the settler goes on,
// and the waiter returns v even if it is cancelled before it runs. From
// another loop or a plain goroutine, the waiter is woken through its
// loop's inbox.
//
// A pending promise does not keep Run alive: if every task waits on
// promises that nothing on the loop can settle, Run reports a deadlock.
// Work that will settle a promise from outside the loop should run in
// Offload, which keeps Run alive while it runs.
func NewPromise[T any]() (*Promise[T], func(v T, err error) bool) {
	p := &Promise[T]{}
	return p, func(v T, err error) bool {
		var from *loop
		if cur := currentTask(); cur != nil {
			from = cur.loop
		}
		return p.settle(v, err, from)
	}
}

// Settled reports whether the promise has settled. It does not suspend,
// and may be called from any goroutine.
func (p *Promise[T]) Settled() bool { return p.p.settled() }

// Await returns the promise's value and error, suspending the task until
// the promise settles. Await is a cancellation point, as every suspension
// point is (Trio's rule): if the task has been cancelled, or its deadline
// has passed, Await returns the cause (an error matching
// context.Canceled), even when the promise has settled, and the promise is
// left as it is.
//
// Awaiting a promise that has already settled returns at once and does not
// give up the loop: unlike JavaScript's await, it is not a scheduling point.
// (A task that keeps finding results ready is still made to yield after a
// while; see the package documentation on fairness.) A task that was
// waiting and has been woken by the settle returns the result, even if it
// is cancelled before it gets to run.
func (p *Promise[T]) Await(t *Task) (T, error) {
	t.check("Await")
	if p == nil {
		panic("weft: Await called on a nil *Promise")
	}
	if err := t.cancelPoint(); err != nil {
		var zero T
		return zero, err
	}
	if !p.p.settled() {
		if err := t.awaitOne(&p.p, "Await"); err != nil {
			var zero T
			return zero, err
		}
	} else {
		t.spendBudget()
	}
	return p.result()
}

// result returns the settled value and error, marking a failure handled.
func (p *Promise[T]) result() (T, error) {
	err := p.p.err
	if err != nil {
		p.p.markHandled()
		reraiseMisuse(err) // a misuse is re-raised, not returned
	}
	return p.val, err
}

func (t *Task) awaitOne(p *promise, op string) error {
	if err := t.promiseWaitAllowed(); err != nil {
		return err
	}
	ws := t.waitState()
	ws.single.tgen = t.newWait()
	ws.single.loop = t.loop
	if !p.register(&ws.single) {
		return nil
	}
	t.noteWaitSite(waitPromise, op)
	return t.block(waitPromise)
}

// promiseWaitAllowed is the cancellation point of a promise wait. After a
// deadlock, promise waits fail at once so that unwinding tasks cannot block
// again.
func (t *Task) promiseWaitAllowed() error {
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if d := t.rs.deadlock.Load(); d != nil {
		return d
	} else if t.loop.aborted {
		return errAborted
	}
	return nil
}

// noteWaitSite publishes the wait of kind the task is about to block in
// (its generation begun), with the operation and where its code waits
// (its caller's callers), for Dump, the watchdog and deadlock reports, in
// one critical section of its observers' record: block then finds it
// published (obsWait). The kinds whose callers note their site: promise,
// multi, park and external waits.
func (t *Task) noteWaitSite(kind waitKind, op string) {
	r := t.obsRec()
	r.mu.Lock()
	t.publishWaitLocked(r, kind, op)
	fpCallers(r.w.pcs[:])
	r.mu.Unlock()
}
