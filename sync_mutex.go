package weft

// Mutex: a lock for tasks that suspends the task, never its loop.
//
// The state word has two bits: locked, and queued (the wait queue is not
// empty, so the lock is handed over rather than released). Lock and
// Unlock without contention are one compare-and-swap each. With waiters,
// Unlock hands the lock to the first one in the queue, which is guarded
// by the Mutex's spinLock: the lock stays locked, so no task that comes
// later can take it first (strict FIFO, no barging). A waiter handed the
// lock that is cancelled before it resumes passes it on (unlocks on its
// behalf), so a cancelled Lock never holds the lock.

import "sync/atomic"

const (
	mutexLocked uint32 = 1 << iota
	mutexQueued
)

// Mutex is a mutual-exclusion lock for tasks of any loop: Lock suspends
// the task while another holds the lock, and never blocks the loop's
// goroutine. Waiters get the lock in the order they asked for it; a task
// that asks later never overtakes one that waits.
//
// A task waiting in Lock does not keep Run alive: a task that waits for a
// lock held by a task that waits for it is reported in the DeadlockError
// (Mutex.Lock, with the line). The zero Mutex is unlocked. A Mutex must
// not be copied after first use.
//
// Tasks of one loop need no lock to share memory (they switch only at
// suspension points); use a Mutex to hold something across suspension
// points, or between loops.
type Mutex struct {
	state atomic.Uint32       // mutexLocked | mutexQueued
	wq    taskQueue[struct{}] // the waiting tasks
}

// Lock takes the lock, suspending the task while another holds it. It
// returns nil once the task holds the lock. Lock is a cancellation point:
// if the task is cancelled, Lock returns the cause (matching
// context.Canceled) and the task does not hold the lock.
//
// A lock handed to the task as the cancellation reached it goes to the
// next waiter.
func (m *Mutex) Lock(t *Task) error {
	t.check("Mutex.Lock")
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if m.state.CompareAndSwap(0, mutexLocked) {
		return nil
	}
	return m.lockSlow(t)
}

func (m *Mutex) lockSlow(t *Task) error {
	m.wq.mu.lock()
	for {
		s := m.state.Load()
		if s == 0 {
			if m.state.CompareAndSwap(0, mutexLocked) {
				m.wq.mu.unlock()
				return nil
			}
			continue
		}
		if s&mutexQueued != 0 || m.state.CompareAndSwap(s, s|mutexQueued) {
			break
		}
	}
	handed, err := m.wq.parkLocked(t, "Mutex.Lock", m, struct{}{})
	if handed && err == nil {
		err = t.cancelPoint()
	}
	if handed && err != nil {
		m.unlock(t.loop) // pass it on
	}
	return err
}

// TryLock takes the lock if it is free and nobody waits for it, and
// reports whether it did. It never suspends and is not a cancellation
// point.
func (m *Mutex) TryLock() bool {
	return m.state.CompareAndSwap(0, mutexLocked)
}

// Unlock releases the lock, handing it to the first waiting task if there
// is one. Any task or goroutine may call it (the lock is not tied to the
// task that took it); it never suspends. Unlock of an unlocked Mutex
// panics.
func (m *Mutex) Unlock() {
	if m.state.CompareAndSwap(mutexLocked, 0) {
		return
	}
	m.unlock(nil)
}

// unlock is Unlock's slow path; from is the caller's loop, if known.
func (m *Mutex) unlock(from *loop) {
	m.wq.mu.lock()
	s := m.state.Load()
	if s&mutexLocked == 0 {
		m.wq.mu.unlock()
		panic("weft: Mutex.Unlock of an unlocked Mutex")
	}
	nd := m.wq.q.head
	if nd == nil {
		m.state.Store(0)
		m.wq.mu.unlock()
		return
	}
	m.wq.q.remove(nd)
	nd.state = nodeDone
	k := nd.waker()
	if m.wq.q.head == nil {
		m.state.Store(mutexLocked) // held by the waiter now
	}
	m.wq.mu.unlock()
	if from == nil {
		from = callerLoop()
	}
	k.wake(from)
}

// withdraw takes an interrupted waiter off the queue (parkSource).
func (m *Mutex) withdraw(w *parkWaiter) {
	nd := w.slot.(*waitNode[struct{}])
	m.wq.mu.lock()
	if nd.queued {
		m.wq.q.remove(nd)
		if m.wq.q.head == nil {
			m.state.And(^mutexQueued)
		}
	}
	m.wq.mu.unlock()
}
