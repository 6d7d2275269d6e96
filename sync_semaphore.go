package weft

// Semaphore: a counted resource for tasks (Trio's CapacityLimiter,
// asyncio's and Tokio's Semaphore).
//
// Waiters queue in FIFO order, each with the number of permits it asks
// for. Release grants permits from the head of the queue while the head's
// request fits: a large request at the head holds back smaller ones
// behind it, so that it is not starved (Tokio's choice). Permits granted
// to a waiter that is cancelled before it resumes are released again,
// and so go to the next waiters.

import "fmt"

// Semaphore holds a fixed number of permits, its size, that tasks take
// with Acquire and give back with Release.
//
// Waiters are served strictly in arrival order: a task asking for many
// permits at the head of the queue holds back later tasks that ask for
// fewer, even if those would fit, so it is never starved. A task waiting
// in Acquire does not keep Run alive; if nothing can release permits, Run
// reports a deadlock naming Semaphore.Acquire.
type Semaphore struct {
	wq    taskQueue[int64] // the waiting tasks; a node's val: the permits it asks for
	avail int64            // permits not held; guarded by wq.mu
	size  int64            // immutable
}

// NewSemaphore returns a semaphore of n permits, all available. A negative
// n panics. It does not suspend.
func NewSemaphore(n int64) *Semaphore {
	if n < 0 {
		panic(fmt.Sprintf("weft: NewSemaphore with a negative size (%d)", n))
	}
	return &Semaphore{avail: n, size: n}
}

// Acquire takes n permits, suspending the task until they are available
// and every task that asked before it has been served. It returns nil
// once the task holds them. Acquire is a cancellation point: if the task
// is cancelled, Acquire returns the cause (matching context.Canceled) and
// holds no permits.
//
// Permits granted to the task as the cancellation reached it are released
// to the next waiters. n must be between 0 and the semaphore's size (more
// could never be granted): otherwise Acquire panics.
func (s *Semaphore) Acquire(t *Task, n int64) error {
	t.check("Semaphore.Acquire")
	return s.acquire(t, n, "Semaphore.Acquire")
}

// acquire is Acquire for a wait that reports show as op.
func (s *Semaphore) acquire(t *Task, n int64, op string) error {
	s.checkCount("Acquire", n)
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	s.wq.mu.lock()
	if s.wq.q.head == nil && s.avail >= n {
		s.avail -= n
		s.wq.mu.unlock()
		return nil
	}
	granted, err := s.wq.parkLocked(t, op, s, n)
	if granted && err == nil {
		err = t.cancelPoint()
	}
	if granted && err != nil {
		s.release(n, t.loop) // pass them on
	}
	return err
}

// TryAcquire takes n permits if they are available and nobody waits, and
// reports whether it did. It never suspends and is not a cancellation
// point. n must be between 0 and the size, as for Acquire.
func (s *Semaphore) TryAcquire(n int64) bool {
	s.checkCount("TryAcquire", n)
	s.wq.mu.lock()
	ok := s.wq.q.head == nil && s.avail >= n
	if ok {
		s.avail -= n
	}
	s.wq.mu.unlock()
	return ok
}

// Release gives back n permits, granting them to the waiting tasks in
// order. Any task or goroutine may call it; it never suspends. Releasing
// more permits than are held (more than the size in all) panics.
func (s *Semaphore) Release(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("weft: Semaphore.Release of a negative count (%d)", n))
	}
	s.release(n, nil)
}

// Available returns the permits not held now. Any goroutine may call it;
// it never suspends.
func (s *Semaphore) Available() int64 {
	s.wq.mu.lock()
	n := s.avail
	s.wq.mu.unlock()
	return n
}

// Size returns the semaphore's number of permits. It never suspends.
func (s *Semaphore) Size() int64 { return s.size }

func (s *Semaphore) checkCount(op string, n int64) {
	if n < 0 || n > s.size {
		panic(fmt.Sprintf("weft: Semaphore.%s(%d) on a semaphore of size %d", op, n, s.size))
	}
}

// release adds n permits and grants them; from is the caller's loop, if
// known.
func (s *Semaphore) release(n int64, from *loop) {
	var ws wakers
	s.wq.mu.lock()
	if s.avail+n > s.size {
		held := s.size - s.avail
		s.wq.mu.unlock()
		panic(fmt.Sprintf("weft: Semaphore.Release(%d) with only %d permits held", n, held))
	}
	s.avail += n
	s.grantLocked(&ws)
	s.wq.mu.unlock()
	if from != nil {
		ws.wake(from)
	} else {
		ws.wakeFromCaller()
	}
}

// grantLocked serves the head of the queue while its request fits.
func (s *Semaphore) grantLocked(ws *wakers) {
	for nd := s.wq.q.head; nd != nil && nd.val <= s.avail; nd = s.wq.q.head {
		s.avail -= nd.val
		s.wq.q.remove(nd)
		nd.state = nodeDone
		ws.add(nd.waker())
	}
}

// withdraw takes an interrupted waiter off the queue (parkSource); the
// waiters behind it may now fit.
func (s *Semaphore) withdraw(w *parkWaiter) {
	nd := w.slot.(*waitNode[int64])
	var ws wakers
	s.wq.mu.lock()
	if nd.queued {
		s.wq.q.remove(nd)
		s.grantLocked(&ws)
	}
	s.wq.mu.unlock()
	ws.wake(w.loop)
}
