package weft

// Wait queues of the layers built on the core (channels, Select, Mutex,
// Semaphore, Event).
//
// A waiter is a task parked through park.go, one case of a Select (the
// task is parked once, on the selector), or a plain goroutine blocked in
// SendWait or RecvWait. Each object keeps its waiters in FIFO queues of
// waitNode, under the object's own spinLock, and reuses nodes from a
// small free list of its own, so that waiting allocates nothing in the
// steady state.
//
// The rules, for every object:
//
//  1. A node is queued, linked in exactly one queue of its object, from
//     the moment its waiter registers until someone unlinks it under the
//     object's lock: a party that satisfies the wait (and then sets state
//     and hands over val), a Close, or the waiter itself withdrawing.
//  2. A Select's nodes can only be satisfied by whoever claims the
//     selector first (claimSelect, a compare-and-swap); a party that fails
//     to claim a node unlinks it and moves on, since that Select has fired
//     elsewhere. A party that finds several nodes of one Select in the
//     queue it serves (cases on one channel) claims one of them chosen
//     uniformly at random.
//  3. Whoever unlinks a node to satisfy it takes its waker under the lock
//     and wakes it after unlocking. After the unlock it never touches the
//     node again: the waiter may reuse it at once. The waker names the
//     task and the wait generation, so a wake that arrives after the
//     waiter was interrupted is dropped by the core.
//  4. The waiter reads the node's state and val after it is woken or
//     after the core has withdrawn it (which takes the object's lock), and
//     then returns the node to the free list.

import "slices"

type nodeKind uint8

const (
	nodeTask      nodeKind = iota // a task parked on the object: pw
	nodeSelect                    // a case of a Select: sel, index
	nodeGoroutine                 // a goroutine in SendWait/RecvWait: done
)

type nodeState uint8

const (
	nodeWaiting nodeState = iota
	nodeDone              // satisfied: a value, a lock, permits were handed over
	nodeClosed            // woken by Close
)

// waitNode is one waiter in a queue of an object of the layers.
type waitNode[V any] struct {
	pw         parkWaiter    // nodeTask: the task's registration; pw.slot is the node
	sel        *selector     // nodeSelect: the Select this case belongs to
	done       chan struct{} // nodeGoroutine: signalled once the node is unlinked to satisfy it or by Close
	prev, next *waitNode[V]  // queue links (next also links the free list)
	queued     bool
	kind       nodeKind
	send       bool // queued among a channel's senders (else its receivers)
	state      nodeState
	index      int    // nodeSelect: the case's position
	seq        uint64 // a value handed to a receiver: its rank among handed values
	val        V      // the value handed over or waiting to be sent; a Semaphore's count
}

// claimSelect reserves a case of n's Select for a party that found n, the
// first of the Select's nodes in its queue, and returns the node of that
// case, or nil if the Select has fired elsewhere or was withdrawn. The
// party could satisfy any of the Select's nodes in this queue, so it picks
// one of them uniformly (choosePartner): a Select queues its cases on one
// channel, in one direction, one after another under the channel's lock,
// so they are adjacent here.
func (n *waitNode[V]) claimSelect() *waitNode[V] {
	s := n.sel
	if s.fired.Load() != selPending {
		return nil
	}
	k := 1
	for m := n.next; m != nil && m.sel == s; m = m.next {
		k++
	}
	pick := n
	if k > 1 {
		for j := s.choosePartner(k); j > 0; j-- {
			pick = pick.next
		}
	}
	if s.fired.CompareAndSwap(selPending, int32(pick.index)) {
		return pick
	}
	return nil
}

// waker returns what wakes n's waiter; take it under the object's lock.
func (n *waitNode[V]) waker() waker {
	switch n.kind {
	case nodeGoroutine:
		return waker{g: n.done}
	case nodeSelect:
		return waker{task: n.sel.pw.task, gen: n.sel.pw.gen, loop: n.sel.pw.loop}
	}
	return waker{task: n.pw.task, gen: n.pw.gen, loop: n.pw.loop}
}

// waker wakes one waiter: a parked task (of a given wait generation) or a
// goroutine. The zero waker does nothing.
type waker struct {
	task *Task
	gen  uint32
	loop *loop // the loop the task waits on
	g    chan struct{}
}

// wake wakes the waiter; from is the loop the caller runs on (nil from a
// plain goroutine), so that a waiter of the same loop is made runnable at
// once, in FIFO order, and any other is woken through its loop's inbox
// (parkWaiter.wake).
func (k waker) wake(from *loop) {
	if k.g != nil {
		k.g <- struct{}{} // capacity 1, signalled once per wait
		return
	}
	if k.task == nil {
		return
	}
	if from == k.loop {
		from.unpark(k.task, k.gen)
		return
	}
	w := parkWaiter{task: k.task, gen: k.gen, loop: k.loop}
	w.wake(nil)
}

// release ends the claimWake of a goroutine's wake of a task, once
// posted.
func (k waker) release() {
	if k.task != nil {
		k.loop.rs.releaseWake()
	}
}

// waitQueue is a FIFO of nodes, guarded by its object's lock.
type waitQueue[V any] struct{ head, tail *waitNode[V] }

func (q *waitQueue[V]) push(n *waitNode[V]) {
	n.prev, n.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = n
	} else {
		q.head = n
	}
	q.tail = n
	n.queued = true
}

func (q *waitQueue[V]) remove(n *waitNode[V]) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		q.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		q.tail = n.prev
	}
	n.prev, n.next, n.queued = nil, nil, false
}

// taskQueue is the waiting side of an object whose waiters are tasks only
// (Event, Mutex, Semaphore): its lock, its FIFO of nodes and their free
// list.
type taskQueue[V any] struct {
	mu   spinLock // guards q and pool
	q    waitQueue[V]
	pool nodePool[V]
}

// parkLocked queues t, asking for val, and parks it in that wait on behalf
// of src, the object, as op (for reports); tq.mu is held on entry and free
// on return. It reports whether the object handed t what it waited for
// (the node's state is nodeDone: the wait was satisfied, whatever err
// says) and park's error; the node is back in the pool.
func (tq *taskQueue[V]) parkLocked(t *Task, op string, src parkSource, val V) (handed bool, err error) {
	nd := tq.pool.get(nodeTask)
	nd.val = val
	t.preparePark(&nd.pw)
	tq.q.push(nd)
	tq.mu.unlock()
	err = t.park(op, src, &nd.pw)
	handed = nd.state == nodeDone
	tq.mu.lock()
	tq.pool.put(nd)
	tq.mu.unlock()
	return handed, err
}

// maxFreeNodes bounds the nodes an object keeps for reuse.
const maxFreeNodes = 32

// nodePool is an object's free list of nodes, guarded by its lock.
type nodePool[V any] struct {
	head *waitNode[V]
	n    int
}

// get returns a reset node of the given kind.
func (p *nodePool[V]) get(kind nodeKind) *waitNode[V] {
	nd := p.head
	if nd != nil {
		p.head = nd.next
		nd.next = nil
		p.n--
	} else {
		nd = &waitNode[V]{}
		nd.pw.slot = nd
	}
	nd.kind = kind
	return nd
}

// put takes back a node that is not queued.
func (p *nodePool[V]) put(nd *waitNode[V]) {
	var zero V
	nd.val = zero
	nd.sel = nil
	nd.state = nodeWaiting
	if p.n >= maxFreeNodes {
		return
	}
	nd.next = p.head
	p.head = nd
	p.n++
}

// wakers collects the wakes an operation owes, to be done after unlocking.
// Most operations owe one; Close and Release may owe many.
type wakers struct {
	one      waker
	more     []waker
	n        int
	rechecks []*loop // loops of parked tasks that must look again for a deadlock

	// Who owes the wakes, for a channel's claims (claimFirst): the
	// caller's loop, nil for a plain goroutine, once known (fromKnown;
	// else looked up at the first claim of a task). A goroutine's claim
	// of a parked task holds the wake in flight until it is posted
	// (runState.claimWake), or finds the task's Run deciding whether it
	// is deadlocked (busy: unlock, awaitDecision, start over).
	from      *loop
	fromKnown bool
	held      bool // some wakes are held: release them after posting
	busy      *runState
}

// caller returns ws's caller loop, nil for a plain goroutine, looking it
// up if it was not given.
func (ws *wakers) caller() *loop {
	if !ws.fromKnown {
		ws.from, ws.fromKnown = callerLoop(), true
	}
	return ws.from
}

func (ws *wakers) add(k waker) {
	if ws.n == 0 {
		ws.one = k
	} else {
		ws.more = append(ws.more, k)
	}
	ws.n++
}

// recheck notes that loop l, where a task is parked on an object that
// stopped keeping it alive (see keepAliveSource), must look again for a
// deadlock.
func (ws *wakers) recheck(l *loop) {
	if !slices.Contains(ws.rechecks, l) {
		ws.rechecks = append(ws.rechecks, l)
	}
}

// wake does the wakes; from is as for waker.wake.
func (ws *wakers) wake(from *loop) {
	if ws.n == 0 && ws.rechecks == nil {
		return
	}
	if ws.n > 0 {
		ws.one.wake(from)
		for _, k := range ws.more {
			k.wake(from)
		}
		if ws.held {
			// Posted: the Runs may look for deadlocks again (claimWake).
			ws.held = false
			ws.one.release()
			for _, k := range ws.more {
				k.release()
			}
		}
	}
	for _, l := range ws.rechecks {
		w := parkWaiter{loop: l}
		w.postRecheck()
	}
}

// wakeFromCaller is wake for the operations that are not handed a Task
// (TrySend, Close, Unlock, ...): it finds out which task calls, if any,
// only when there is someone to wake.
func (ws *wakers) wakeFromCaller() {
	if ws.n == 0 && ws.rechecks == nil {
		return
	}
	ws.wake(callerLoop())
}

// wakeFrom is wake from loop l if known (l nil: a goroutine), else
// wakeFromCaller.
func (ws *wakers) wakeFrom(l *loop, known bool) {
	if known {
		ws.wake(l)
	} else {
		ws.wakeFromCaller()
	}
}
