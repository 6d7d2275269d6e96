package weft

// Select: wait on several channel operations (and timeouts) at once, and
// carry out exactly one.
//
// Go's algorithm, on wait nodes. Select locks every channel of its cases,
// each once, in a fixed order (by channel id), so that two Selects cannot
// deadlock and no other party can touch the channels while it looks. It
// then tries the cases in a random order (chooseRandom) and carries out the
// first one that is ready: the first ready case of a uniformly random
// order is uniform among the ready cases. If none is ready, it queues a
// node on every channel, still under all the locks, unlocks, arms the
// timers of its AfterCases, and parks once, on the selector. Its nodes on
// one channel in one direction are adjacent in that channel's queue; a
// party that arrives claims one of them uniformly (claimSelect), so that
// the cases it could satisfy are equally likely there too.
//
// The selector's fired word decides the race between the parties that
// may satisfy it (other tasks, goroutines, its timers, Close): each
// claims it with a compare-and-swap from selPending to its case's index,
// and only the winner satisfies its node and wakes the task. A party that
// loses unlinks the node it found and moves on. When the task resumes
// (woken, or interrupted, which first sets fired to selWithdrawn so that
// nobody can claim it any more), fired is final: it dequeues every other
// node and finishes the fired case. A received value the task cannot take
// because it was cancelled first is given back to the channel (see
// sync_chan.go), so a case that did not fire consumed nothing.

import (
	"fmt"
	"sync/atomic"
	"time"
)

const (
	selPending   int32 = -1 // no case has fired
	selWithdrawn int32 = -2 // the wait was interrupted before any case fired
)

// SelectCase is one operation of a Select, made by RecvCase, SendCase or
// AfterCase. The zero SelectCase is not a case.
type SelectCase struct {
	op   selectOp // the channel; nil for AfterCase
	kind caseKind
	dst  any           // RecvCase: the *T to store into, or nil
	val  any           // SendCase: the T to send
	d    time.Duration // AfterCase
}

type caseKind uint8

const (
	caseNone caseKind = iota
	caseRecv
	caseSend
	caseAfter
)

// selectOp is what Select needs of a channel, whatever its element type.
type selectOp interface {
	selID() uint64
	// selPrepare makes the channel usable by t's loop (a hand-over from
	// another loop, for which t may park).
	selPrepare(t *Task) error
	// selAcquire and selRelease lock the channel for loop l, if it is
	// shared (see Chan.acquire).
	selAcquire(l *loop) bool
	selRelease(locked bool)
	// selTryLocked carries out sc now if it is ready (the channel is
	// locked), and reports whether it did, with the case's error.
	selTryLocked(sc *SelectCase, ws *wakers) (bool, error)
	// selEnqueueLocked queues a node for case i of s (the channel is
	// locked) and returns it.
	selEnqueueLocked(s *selector, i int, sc *SelectCase) any
	// selDrop dequeues nd if it is still queued and frees it; l is the
	// loop the caller runs on.
	selDrop(l *loop, nd any)
	// selWithdraw is selDrop for the core's withdraw, on the parked task's
	// loop and perhaps under the run lock (see Chan.acquireHere).
	selWithdraw(nd any)
	// selFinish finishes the case that fired, given the error park
	// returned, frees its node, and reports whether the case counts as
	// done (false: the task's cancellation wins) and with which error.
	selFinish(t *Task, sc *SelectCase, nd any, err error) (bool, error)
	keepsAlive() bool
}

// RecvCase is a Select case that receives from c into *v. It fires with a
// value (stored in *v; v may be nil to drop it), or once c is closed and
// drained with io.EOF or the CloseWithError error (*v is then left
// alone). A nil c panics. RecvCase, SendCase and AfterCase only describe
// a case: they do not suspend and do nothing to c; Select carries it out.
func RecvCase[T any](c *Chan[T], v *T) SelectCase {
	if c == nil {
		panic("weft: RecvCase with a nil channel")
	}
	sc := SelectCase{op: c, kind: caseRecv}
	if v != nil {
		sc.dst = v
	}
	return sc
}

// SendCase is a Select case that sends v on c. It fires when c accepts v,
// or with an error matching ErrClosed if c is closed. A nil c panics. It
// does not suspend (see RecvCase).
func SendCase[T any](c *Chan[T], v T) SelectCase {
	if c == nil {
		panic("weft: SendCase with a nil channel")
	}
	return SelectCase{op: c, kind: caseSend, val: v}
}

// AfterCase is a Select case that fires when d has passed on the loop's
// clock since Select was called; d <= 0 is ready at once. It does not
// suspend (see RecvCase).
func AfterCase(d time.Duration) SelectCase {
	return SelectCase{kind: caseAfter, d: d}
}

// Select carries out exactly one of the cases and returns its index and
// error: the receive, send or timeout that happened first. It suspends the
// task while no case is ready. It is a cancellation point: if the task is
// cancelled, Select returns -1 and the cause (matching context.Canceled),
// and no case fired, except a send whose value was accepted before the
// cancellation reached the task, which is reported as fired.
//
// If several cases are ready at once, Select picks one uniformly at
// random, as Go's select does; and a sender or receiver that arrives while
// Select waits on several cases of its channel satisfies one of them
// chosen uniformly too, so {SendCase(c, 1), SendCase(c, 0)} sends each
// value about half of the time whichever side comes first. A receive on a
// closed channel fires with io.EOF (or the CloseWithError error) and a
// send on one with an error matching ErrClosed. A case that did not fire
// consumed nothing and sent nothing. With no cases Select waits until the
// task is cancelled. A zero SelectCase panics.
func Select(t *Task, cases ...SelectCase) (int, error) {
	t.check("Select")
	for i := range cases {
		if cases[i].kind == caseNone {
			panic(fmt.Sprintf("weft: Select: case %d is the zero SelectCase (use RecvCase, SendCase or AfterCase)", i))
		}
	}
	if err := t.cancelPoint(); err != nil {
		return -1, err
	}
	var lbuf [8]selectOp
	locks := lockOrder(cases, lbuf[:0])
	for _, op := range locks {
		if err := op.selPrepare(t); err != nil {
			return -1, err
		}
	}
	var kbuf [8]bool
	locked := kbuf[:0]
	for _, op := range locks {
		locked = append(locked, op.selAcquire(t.loop))
	}
	unlockAll := func() {
		for i, op := range locks {
			op.selRelease(locked[i])
		}
	}

	// The ready cases, in random order: the first fires.
	ws := wakers{from: t.loop, fromKnown: true}
	var obuf [8]int
	order := obuf[:0]
	for i := range cases {
		order = append(order, i)
	}
	for len(order) > 0 {
		j := 0
		if len(order) > 1 {
			j = chooseRandom(t, len(order))
		}
		i := order[j]
		order[j] = order[len(order)-1]
		order = order[:len(order)-1]
		sc := &cases[i]
		var fired bool
		var err error
		if sc.kind == caseAfter {
			fired = sc.d <= 0
		} else {
			fired, err = sc.op.selTryLocked(sc, &ws)
		}
		if fired {
			unlockAll()
			ws.wake(t.loop)
			if err == nil {
				t.spendBudget()
			}
			return i, err
		}
	}

	// None is ready: wait on all of them.
	s := &selector{cases: cases, t: t, l: t.loop, nodes: make([]any, len(cases))}
	s.fired.Store(selPending)
	s.pw.slot = s
	t.preparePark(&s.pw)
	for i := range cases {
		if sc := &cases[i]; sc.kind != caseAfter {
			s.nodes[i] = sc.op.selEnqueueLocked(s, i, sc)
		}
	}
	unlockAll()
	timers := false
	for i := range cases {
		if sc := &cases[i]; sc.kind == caseAfter {
			if !timers {
				timers = true
				t.pin++ // the timers are on this loop: stay on it until they are removed
			}
			s.nodes[i] = s.l.addTimer(int64(sc.d), func() { s.fireTimer(i) })
		}
	}
	err := t.park("Select", s, &s.pw)
	s.fired.CompareAndSwap(selPending, selWithdrawn)
	f := int(s.fired.Load()) // final: nobody can claim s any more
	for i := range cases {
		if i != f {
			s.drop(i, false)
		}
	}
	if timers {
		t.pin--
	}
	if f < 0 {
		return -1, err
	}
	sc := &cases[f]
	if sc.kind == caseAfter {
		if err != nil {
			return -1, err
		}
		return f, nil
	}
	done, cerr := sc.op.selFinish(t, sc, s.nodes[f], err)
	if !done {
		return -1, cerr
	}
	return f, cerr
}

// lockOrder returns the channels of cases, each once, in id order.
func lockOrder(cases []SelectCase, buf []selectOp) []selectOp {
	for i := range cases {
		op := cases[i].op
		if op == nil {
			continue
		}
		id := op.selID()
		j := len(buf)
		dup := false
		for k := range buf {
			if buf[k] == op {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		buf = append(buf, op)
		for j > 0 && buf[j-1].selID() > id {
			buf[j], buf[j-1] = buf[j-1], buf[j]
			j--
		}
	}
	return buf
}

// selector is a Select waiting on its cases: the parkSource of the task.
type selector struct {
	pw    parkWaiter
	fired atomic.Int32 // selPending, selWithdrawn, or the index of the case that fired
	cases []SelectCase
	nodes []any // per case: its queued node, or its *timer
	t     *Task
	l     *loop // the task's loop, where the timers are (the task is pinned to it meanwhile)
}

// fireTimer fires AfterCase i, on the loop, unless another case came first.
func (s *selector) fireTimer(i int) {
	if s.fired.CompareAndSwap(selPending, int32(i)) {
		k := waker{task: s.pw.task, gen: s.pw.gen, loop: s.l}
		k.wake(s.l)
	}
}

// drop withdraws case i: its node off its channel, its timer off the heap.
// It may be called again for the same case. withdrawing: the core's
// withdraw calls, on the parked task's loop, perhaps under the run lock.
func (s *selector) drop(i int, withdrawing bool) {
	nd := s.nodes[i]
	if nd == nil {
		return
	}
	if tm, ok := nd.(*timer); ok {
		s.l.timers.remove(tm)
		return
	}
	s.nodes[i] = nil
	if withdrawing {
		s.cases[i].op.selWithdraw(nd)
	} else {
		s.cases[i].op.selDrop(s.t.loop, nd)
	}
}

// withdraw (parkSource) stops the wait after an interruption: no case can
// fire any more, and every node is withdrawn. The fired case, if one fired
// first, is finished by Select. It runs on the task's loop, perhaps under
// the run lock (a cancellation's walk), so it takes the channels as
// Chan.withdraw does (acquireHere), never by the ownership path, which may
// take the run lock itself (a self-deadlock, seen with several loops).
func (s *selector) withdraw(*parkWaiter) {
	s.fired.CompareAndSwap(selPending, selWithdrawn)
	f := int(s.fired.Load())
	for i := range s.cases {
		if i != f {
			s.drop(i, true)
		}
	}
}

// keepsAlive (keepAliveSource) reports whether one of the channels can
// still be acted on from outside the loops.
func (s *selector) keepsAlive() bool {
	for i := range s.cases {
		if op := s.cases[i].op; op != nil && op.keepsAlive() {
			return true
		}
	}
	return false
}

// The channel side of Select.

func (c *Chan[T]) selID() uint64 {
	if id := c.id.Load(); id != 0 {
		return id
	}
	c.id.CompareAndSwap(0, chanIDs.Add(1))
	return c.id.Load()
}

func (c *Chan[T]) selPrepare(t *Task) error { return c.prepare(t, "Select") }
func (c *Chan[T]) selAcquire(l *loop) bool  { return c.acquire(l) }
func (c *Chan[T]) selRelease(locked bool)   { c.release(locked) }

func (c *Chan[T]) selTryLocked(sc *SelectCase, ws *wakers) (bool, error) {
	if sc.kind == caseSend {
		return c.trySendLocked(sc.val.(T), ws)
	}
	if v, ok := c.takeLocked(ws); ok {
		if p, _ := sc.dst.(*T); p != nil {
			*p = v
		}
		return true, nil
	}
	if c.closed {
		return true, c.recvErr
	}
	return false, nil
}

func (c *Chan[T]) selEnqueueLocked(s *selector, i int, sc *SelectCase) any {
	nd := c.pool.get(nodeSelect)
	nd.sel, nd.index = s, i
	if sc.kind == caseSend {
		nd.send = true
		nd.val = sc.val.(T)
		c.sendq.push(nd)
	} else {
		nd.send = false
		c.recvq.push(nd)
	}
	return nd
}

func (c *Chan[T]) selDrop(l *loop, x any) { c.dropNode(x.(*waitNode[T]), c.acquire(l)) }
func (c *Chan[T]) selWithdraw(x any)      { c.dropNode(x.(*waitNode[T]), c.acquireHere()) }

// dropNode dequeues nd if it is still queued and frees it; c is acquired.
func (c *Chan[T]) dropNode(nd *waitNode[T], locked bool) {
	if nd.queued {
		if nd.send {
			c.sendq.remove(nd)
		} else {
			c.recvq.remove(nd)
		}
	}
	c.pool.put(nd)
	c.release(locked)
}

func (c *Chan[T]) selFinish(t *Task, sc *SelectCase, x any, err error) (bool, error) {
	nd := x.(*waitNode[T])
	// A received value is given back if the task was cancelled meanwhile.
	// Look before taking the lock (cancelPoint may take the run lock, which
	// comes first), but at the node's state only under it: the party that
	// claimed this case may still be writing it (the task may have resumed
	// from an interruption, not from that party's wake).
	var cerr error
	if !nd.send && err == nil {
		cerr = t.cancelPoint()
	}
	l := t.loop
	ws := wakers{from: l, fromKnown: true}
	locked := c.acquire(l)
	st, send, v := nd.state, nd.send, nd.val
	if st == nodeDone && !send && err == nil {
		err = cerr
	}
	if st == nodeDone && !send && err != nil && t.rs.isDeadlockErr(err) {
		err = nil // received as the Run was found deadlocked: ours (as in recvSlow)
	}
	if st == nodeDone && !send && err != nil {
		c.giveBackLocked(v, nd.seq, &ws)
	}
	c.pool.put(nd)
	recvErr, sendErr := c.recvErr, c.sendErr
	c.release(locked)
	ws.wake(l)
	switch {
	case st == nodeDone && send:
		return true, nil // sent, even if a cancellation came meanwhile
	case err != nil:
		return false, err
	case st == nodeDone:
		if p, _ := sc.dst.(*T); p != nil {
			*p = v
		}
		return true, nil
	case send:
		return true, sendErr
	}
	return true, recvErr
}
