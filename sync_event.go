package weft

// Event: a flag that tasks wait for (asyncio's and Trio's Event). It is
// set once and never cleared; Set wakes every waiter. Unlike a lock's
// handoff, being woken by Set is not exclusive: a waiter cancelled after
// the Set still sees the event set.

import "sync/atomic"

// Event is a one-shot flag: tasks Wait until some task or goroutine calls
// Set. Once set, it stays set. A task waiting on an Event does not keep
// Run alive: if nothing can set it, Run reports a deadlock naming
// Event.Wait. The zero Event is unset. An Event must not be copied after
// first use.
type Event struct {
	set atomic.Bool
	wq  taskQueue[struct{}] // the waiting tasks
}

// Set sets the event and wakes every waiting task. Setting a set event
// does nothing. Any task or goroutine may call it; it never suspends.
func (e *Event) Set() {
	if e.set.Load() {
		return
	}
	var ws wakers
	e.wq.mu.lock()
	if !e.set.Load() {
		e.set.Store(true)
		for nd := e.wq.q.head; nd != nil; nd = e.wq.q.head {
			e.wq.q.remove(nd)
			nd.state = nodeDone
			ws.add(nd.waker())
		}
	}
	e.wq.mu.unlock()
	ws.wakeFromCaller()
}

// IsSet reports whether the event is set. Any goroutine may call it; it
// never suspends.
func (e *Event) IsSet() bool { return e.set.Load() }

// Wait suspends the task until the event is set, and returns nil then; if
// it is already set, Wait returns at once. Wait is a cancellation point:
// if the task has been cancelled, Wait returns the cause (matching
// context.Canceled) at once, even if the event is set; if it is cancelled
// while it waits, Wait returns the cause then.
//
// A task woken by Set returns nil even if a cancellation reaches it before
// it resumes (the event happened; the next suspension point reports it).
func (e *Event) Wait(t *Task) error {
	t.check("Event.Wait")
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if e.set.Load() {
		return nil
	}
	e.wq.mu.lock()
	if e.set.Load() {
		e.wq.mu.unlock()
		return nil
	}
	if set, err := e.wq.parkLocked(t, "Event.Wait", e, struct{}{}); !set {
		return err
	}
	return nil
}

// withdraw takes an interrupted waiter off the queue (parkSource).
func (e *Event) withdraw(w *parkWaiter) {
	nd := w.slot.(*waitNode[struct{}])
	e.wq.mu.lock()
	if nd.queued {
		e.wq.q.remove(nd)
	}
	e.wq.mu.unlock()
}
