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
	set  atomic.Bool
	mu   spinLock // guards q and pool
	q    waitQueue[struct{}]
	pool nodePool[struct{}]
}

// Set sets the event and wakes every waiting task. Setting a set event
// does nothing. Any task or goroutine may call it; it never suspends.
func (e *Event) Set() {
	if e.set.Load() {
		return
	}
	var ws wakers
	e.mu.lock()
	if !e.set.Load() {
		e.set.Store(true)
		for nd := e.q.head; nd != nil; nd = e.q.head {
			e.q.remove(nd)
			nd.state = nodeDone
			ws.add(nd.waker())
		}
	}
	e.mu.unlock()
	ws.wakeFromCaller()
}

// IsSet reports whether the event is set. Any goroutine may call it; it
// never suspends.
func (e *Event) IsSet() bool { return e.set.Load() }

// Wait suspends the task until the event is set, and returns nil then; if
// it is already set, Wait returns at once.
//
// Wait is a cancellation point: if the task has been cancelled, Wait
// returns the cause (matching context.Canceled) at once, even if the event
// is set; if it is cancelled while it waits, Wait returns the cause then.
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
	e.mu.lock()
	if e.set.Load() {
		e.mu.unlock()
		return nil
	}
	nd := e.pool.get(nodeTask)
	t.preparePark(&nd.pw)
	e.q.push(nd)
	e.mu.unlock()
	err := t.park("Event.Wait", e, &nd.pw)
	set := nd.state == nodeDone
	e.mu.lock()
	e.pool.put(nd)
	e.mu.unlock()
	if set {
		return nil
	}
	return err
}

// withdraw takes an interrupted waiter off the queue (parkSource).
func (e *Event) withdraw(w *parkWaiter) {
	nd := w.slot.(*waitNode[struct{}])
	e.mu.lock()
	if nd.queued {
		e.q.remove(nd)
	}
	e.mu.unlock()
}
