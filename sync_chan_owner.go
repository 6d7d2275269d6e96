package weft

// Channel ownership: a channel used by the tasks of one loop only needs no
// lock, since that loop runs one task at a time and no channel operation
// suspends halfway. So a channel that has served ownThreshold operations
// in a row from tasks of one loop, and nothing else, becomes owned by that
// loop, which then uses it without the lock. It is shared, guarded by its
// spinLock for good, from the moment another party (a task of another
// loop, a plain goroutine) uses it, owned or not yet.
//
// c.own holds the state: nil (unowned: everyone takes the lock, and the
// lock counts the run of operations), a *loop (owned: only code running on
// that loop touches the channel, without the lock), or sharedOwner.
// Transitions: nil -> L under the lock, by a task of L that completes the
// run (whoever takes the lock next sees it and goes the owned-elsewhere
// way); nil -> shared by anyone else; L -> shared only on L itself, at a
// point where no task of L is inside an operation on the channel (the
// "hand-over").
//
// A party that finds the channel owned by another loop L asks L for it: it
// queues a flip in L's hand-over queue and posts L a call to serve the
// queue. L runs posted calls only between tasks or in a task's Checkpoint,
// never inside a channel operation, so the flip is safe there. The party
// then waits for the flip:
//
//   - A task in an operation that may suspend (Send, Recv, Select) parks
//     until L has flipped (a keepAliveSource meanwhile, so its loop does not
//     take the wait for a deadlock).
//   - Anyone else (a goroutine, or a task in TrySend, Close, Len...) blocks
//     its goroutine. A loop's goroutine blocked so serves its own loop's
//     hand-over queue while it waits, so that two loops asking each other
//     for channels at once cannot deadlock.
//
// If L has ended (its inbox refuses the post), nobody uses its channels
// any more, and the party flips the channel itself. The price of the
// scheme: a goroutine's first use of an owned channel waits until the
// owning loop reaches a scheduling point (at once if it is idle). Waiting
// so long for ownership (a run of ownThreshold) keeps that to the hot
// channels of one loop, not to a channel that a task filled a little and
// handed to a goroutine.

import (
	"sync"
	"sync/atomic"
)

// sharedOwner marks a shared channel (Chan.own).
var sharedOwner = new(loop)

// ownThreshold is how many operations in a row from the tasks of one loop
// make an unowned channel that loop's.
const ownThreshold = 1024

// acquire readies c for an operation by code that runs on loop l (nil: a
// plain goroutine) and reports whether it took the lock: not if l owns c.
// It never parks; if another loop owns c, it blocks until that loop has
// handed c over.
func (c *Chan[T]) acquire(l *loop) bool {
	if l != nil && c.own.Load() == l {
		return false
	}
	return c.acquireSlow(l)
}

func (c *Chan[T]) acquireSlow(l *loop) bool {
	for {
		switch o := c.own.Load(); {
		case o == sharedOwner:
			c.mu.lock()
			return true
		case o == nil:
			if l == nil {
				c.own.CompareAndSwap(nil, sharedOwner) // a goroutine: shared for good
				continue
			}
			c.mu.lock()
			if c.own.Load() != nil {
				c.mu.unlock() // it changed meanwhile: look again
				continue
			}
			switch {
			case c.runLoop != l && c.runLoop != nil:
				c.own.Store(sharedOwner) // a second loop: shared for good
			case c.run < ownThreshold:
				c.runLoop = l
				c.run++
			default:
				// The run is complete: l takes the channel. The hand-over
				// queues must exist before anyone can find c owned by l.
				// The caller may hold other channels' locks (Select takes
				// all of its channels'), and a loop that holds the run lock
				// may be waiting for one of them (parkedKeepAliveLocked):
				// opening the queues must not wait for the run lock here.
				// If it is busy, l takes the channel at a later operation.
				c.mu.unlock()
				if !tryOpenHandOvers(l) {
					c.mu.lock()
					if c.own.Load() != nil {
						c.mu.unlock()
						continue
					}
					return true
				}
				c.mu.lock()
				if c.own.Load() != nil {
					c.mu.unlock()
					continue
				}
				c.own.Store(l)
				c.mu.unlock()
				return false
			}
			return true
		case o == l:
			return false
		default:
			c.handOver(o, l, nil, "")
		}
	}
}

// release ends what acquire began.
func (c *Chan[T]) release(locked bool) {
	if locked {
		c.mu.unlock()
	}
}

// acquireHere is acquire for the core's calls about a task parked on c
// (withdraw, keepsAlive), which run on that task's loop: c is then owned
// by that loop (and no task of it is inside an operation), or it takes the
// lock.
func (c *Chan[T]) acquireHere() bool {
	if o := c.own.Load(); o == nil || o == sharedOwner {
		c.mu.lock()
		return true
	}
	return false
}

// prepare readies c for an operation of task t that may suspend: if
// another loop owns c, t parks until that loop has handed it over. It
// returns the error of an interruption of that wait (op names it for
// reports).
func (c *Chan[T]) prepare(t *Task, op string) error {
	if o := c.own.Load(); o != nil && o != sharedOwner && o != t.loop {
		return c.handOver(o, t.loop, t, op)
	}
	return nil
}

// handOver asks loop o, which owns c, to share c, and waits until it has:
// t parks (if not nil), or the goroutine blocks, serving the hand-overs
// asked of self meanwhile (if it is a loop's). It returns the error of an
// interruption of t's wait; the hand-over happens anyway.
func (c *Chan[T]) handOver(o, self *loop, t *Task, op string) error {
	h := &handover{done: make(chan struct{})}
	if t != nil {
		t.preparePark(&h.pw)
	}
	flip := func() {
		c.own.CompareAndSwap(o, sharedOwner)
		h.flipped.Store(true)
		close(h.done)
		if t != nil {
			waker{task: h.pw.task, gen: h.pw.gen, loop: h.pw.loop}.wake(o)
		}
	}
	askHandOver(o, flip)
	if t != nil {
		return t.park(op, h, &h.pw)
	}
	waitHandOver(h.done, self)
	return nil
}

// handover is a wait for a hand-over; a task parks on it.
type handover struct {
	pw      parkWaiter
	flipped atomic.Bool
	done    chan struct{} // closed once the channel is shared
}

func (h *handover) withdraw(*parkWaiter) {}

// keepsAlive: the owning loop will answer.
func (h *handover) keepsAlive() bool { return !h.flipped.Load() }

// handOvers is a loop's queue of hand-overs asked of it.
type handOvers struct {
	mu    sync.Mutex
	flips []func()      // guarded by mu
	kick  chan struct{} // capacity 1: a flip is queued (for the loop's goroutine blocked in waitHandOver)
}

// handOverQueues maps each loop that may own channels to its queue. The
// entries of a Run's loops are made the first time one of them takes a
// channel, and deleted when the Run ends (layerState's close).
var handOverQueues sync.Map // *loop -> *handOvers

// handOversKey keys the per-Run record of the queues (layerState).
type handOversKey struct{}

// openHandOvers makes sure the loops of l's Run have hand-over queues. It
// runs on l.
func openHandOvers(l *loop) {
	layerState(l, handOversKey{}, makeHandOvers(l))
}

// tryOpenHandOvers is openHandOvers for a caller that may hold channel
// locks: it reports false, having done nothing, when the queues are not
// there yet and the run lock is busy.
func tryOpenHandOvers(l *loop) bool {
	if _, ok := handOverQueues.Load(l); ok {
		return true
	}
	_, ok := tryLayerState(l, handOversKey{}, makeHandOvers(l))
	return ok
}

// makeHandOvers makes the hand-over queues of l's Run's loops, and what
// serves what is left in them when the Run ends.
func makeHandOvers(l *loop) func() (*struct{}, func()) {
	return func() (*struct{}, func()) {
		loops := l.rs.loops
		for _, x := range loops {
			handOverQueues.Store(x, &handOvers{kick: make(chan struct{}, 1)})
		}
		return &struct{}{}, func() {
			// The loops' inboxes are closed: a flip posted before that
			// but not yet served would be lost (and its asker blocked for
			// good), so serve what is left. One asked from now on finds
			// the inbox closed, or no queue, and flips itself.
			for _, x := range loops {
				if q, ok := handOverQueues.LoadAndDelete(x); ok {
					q.(*handOvers).serve()
				}
			}
		}
	}
}

// askHandOver queues flip for loop o and makes o serve it soon.
func askHandOver(o *loop, flip func()) {
	x, ok := handOverQueues.Load(o)
	if !ok {
		flip() // o's Run has ended: nobody uses its channels any more
		return
	}
	q := x.(*handOvers)
	q.mu.Lock()
	q.flips = append(q.flips, flip)
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	if !o.post(q.serve) {
		q.serve() // o has ended: nobody uses its channels any more
	}
}

// serve runs the queued flips, on the loop (or once it has ended).
func (q *handOvers) serve() {
	q.mu.Lock()
	flips := q.flips
	q.flips = nil
	q.mu.Unlock()
	for _, f := range flips {
		f()
	}
}

// waitHandOver blocks until done is closed. A loop's goroutine (self not
// nil) serves its own loop's hand-over queue meanwhile.
func waitHandOver(done chan struct{}, self *loop) {
	x, ok := handOverQueues.Load(self)
	if self == nil || !ok {
		<-done // nobody can ask a hand-over of self
		return
	}
	q := x.(*handOvers)
	for {
		select {
		case <-done:
			return
		case <-q.kick:
			q.serve()
		}
	}
}
