package weft

// Channels: bounded FIFO queues between tasks of any loop and plain
// goroutines, which suspend the task and never its loop.
//
// A Chan holds a ring buffer of its capacity, a FIFO of waiting receivers
// and one of waiting senders (wait nodes, see sync_waitq.go), all under one
// spinLock. Invariants, whenever the lock is free:
//
//  1. Receivers wait only when nothing is there to take: if recvq holds a
//     live receiver, the buffer, back and sendq are empty.
//  2. Senders wait only when the buffer is full and no receiver waits.
//  3. A sender that finds a waiting receiver hands its value straight into
//     the receiver's node (rendezvous); otherwise it buffers it. A receiver
//     that takes from a full buffer refills it from the first waiting
//     sender, so values keep their send order.
//  4. A value handed to a receiver that is cancelled before it resumes is
//     given back: to the next waiting receiver, or to back, the values
//     delivered before the buffer, kept in the order they were first
//     handed (seq). Such values are older than everything buffered, since
//     they were handed while the buffer was empty. back may push the
//     channel past its capacity by the number of such receivers.
//  5. Once closed, nothing waits in sendq; receivers drain back and the
//     buffer, then get recvErr.
//
// Cancellation is atomic: a Send that returns an error sent nothing; a
// Recv that returns an error received nothing. A sender whose value was
// accepted before its cancellation reached it has sent, and returns nil.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/weft-go/weft/internal/coro"
)

// ErrClosed is what Send (and SendCase, TrySend's false, SendWait) report
// for a channel that was closed: errors.Is(err, ErrClosed) holds. After
// CloseWithError the error also wraps the error the channel was closed
// with.
var ErrClosed error = errors.New("weft: channel closed")

// closedError is what senders get after CloseWithError: ErrClosed, and the
// cause.
type closedError struct{ cause error }

func (e *closedError) Error() string        { return "weft: channel closed: " + e.cause.Error() }
func (e *closedError) Is(target error) bool { return target == ErrClosed }
func (e *closedError) Unwrap() error        { return e.cause }

// errConsumerStopped is what a Generate producer's yield returns once its
// consumer stopped receiving (left All early, or was cancelled).
var errConsumerStopped error = &closedError{cause: errors.New("the consumer stopped receiving")}

// chanIDs numbers channels for Select's lock order.
var chanIDs atomic.Uint64

// Chan is a channel: a FIFO queue of values of type T with a fixed
// capacity, between tasks of any loop and plain goroutines. Send suspends
// the task while the channel is full, Recv while it is empty; both are
// cancellation points, and a Send or Recv that returns a cancellation
// (the cause, matching context.Canceled) sent or received nothing. With
// capacity 0 every value passes directly from a sender to a receiver.
// Values arrive in the order they were sent, and waiting senders and
// receivers are served in the order they came.
//
// Unlike a Go channel, a Chan never panics: Send on a closed channel
// returns ErrClosed, Close twice does nothing, and receivers get io.EOF
// (or the CloseWithError error) once the channel is closed and drained.
//
// Cancellation is atomic: a Send cancelled while it waits sent nothing,
// and a Recv cancelled while it waits received nothing; a value handed to
// a receiver that is cancelled before it resumes goes to the next
// receiver instead. A value is never lost and never delivered twice.
//
// A task waiting on a channel does not by itself keep Run alive, as a
// task waiting on a promise does not: if nothing else can happen, Run
// reports a deadlock that names the wait (Chan.Send, Chan.Recv) and its
// line. A goroutine blocked in SendWait or RecvWait keeps the loops whose
// tasks wait on the channel alive; a goroutine that will use the channel
// only later must keep Run alive itself, with NewPromiseExternal or
// Offload.
//
// Costs: a channel used only by the tasks of one loop becomes that loop's
// after a run of operations and is then used without any atomic
// operation; the first use from another loop or a goroutine shares it for
// good (under a spinlock), and a goroutine's first use of such an owned
// channel waits until the owning loop reaches a scheduling point.
//
// The zero Chan is a usable channel of capacity 0. A Chan must not be
// copied after first use.
type Chan[T any] struct {
	own         atomic.Pointer[loop] // nil, the owning loop, or sharedOwner (sync_chan_owner.go)
	mu          spinLock             // guards the rest unless a loop owns the channel
	run         int                  // unowned: operations in a row from runLoop's tasks (mu)
	runLoop     *loop
	closed      bool
	keep        bool  // a subscription (Signal) keeps the waiters' loops alive until Close
	stopOnBreak bool  // made by Generate: All closes it when its consumer stops; immutable once shared
	recvErr     error // once closed: what receivers get after draining (io.EOF or CloseWithError's)
	sendErr     error // once closed: what senders get (matches ErrClosed)
	buf         []T   // the ring buffer; len(buf) is the capacity; immutable slice header
	head, n     int
	back        []backValue[T] // values given back by cancelled receivers, delivered before buf
	seq         uint64         // rank of the next value handed to a waiting receiver
	recvq       waitQueue[T]
	sendq       waitQueue[T]
	pool        nodePool[T]
	goWaits     int    // goroutines in SendWait or RecvWait
	onClose     func() // run once after Close, outside the lock (Ticker, Signal)
	id          atomic.Uint64
	plain       coro.PlainCache // the last goroutine whose SendWait or RecvWait was checked not to be a task's
}

type backValue[T any] struct {
	v   T
	seq uint64
}

// NewChan returns a channel that buffers up to capacity values; capacity
// 0 makes every Send wait for a receiver (a rendezvous). A negative
// capacity panics. NewChan does not suspend; the channel may be used by
// tasks of any loop and by plain goroutines (SendWait, RecvWait, TrySend,
// TryRecv, Close).
func NewChan[T any](capacity int) *Chan[T] {
	if capacity < 0 {
		panic(fmt.Sprintf("weft: NewChan with a negative capacity (%d)", capacity))
	}
	return &Chan[T]{buf: make([]T, capacity)}
}

// Cap returns the channel's capacity. Any goroutine may call it; it never
// suspends.
func (c *Chan[T]) Cap() int { return len(c.buf) }

// Len returns how many values the channel holds, ready to be received.
// Any goroutine may call it; it never suspends.
func (c *Chan[T]) Len() int {
	l, _ := c.caller()
	locked := c.acquire(l)
	n := c.n + len(c.back)
	c.release(locked)
	return n
}

// caller returns the loop of the calling task when it matters, that is
// when c is not shared (its owner uses it without the lock), and whether
// it looked.
func (c *Chan[T]) caller() (*loop, bool) {
	if c.own.Load() == sharedOwner {
		return nil, false
	}
	return callerLoop(), true
}

// Send sends v, suspending the task while the channel is full (for
// capacity 0: until a receiver takes v). It returns nil once the channel
// has accepted v, and an error matching ErrClosed if the channel is or
// becomes closed before that; v was then not sent. Send is a cancellation
// point: if the task is cancelled before v is accepted, Send returns the
// cause (matching context.Canceled) and v was not sent.
//
// If v was accepted before the cancellation reached the task, Send returns
// nil, and the next suspension point reports the cancellation.
func (c *Chan[T]) Send(t *Task, v T) error {
	t.check("Chan.Send")
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if c.own.Load() == t.loop && c.recvq.head == nil && c.n < len(c.buf) && !c.closed {
		// The fast path: owned by this loop (no lock), room, nobody to wake.
		c.pushLocked(v)
		t.spendBudget()
		return nil
	}
	return c.send(t, v)
}

// send is Send past the fast path.
func (c *Chan[T]) send(t *Task, v T) error {
	if err := c.prepare(t, "Chan.Send"); err != nil {
		return err
	}
	l := t.loop
	ws := wakers{from: l, fromKnown: true}
	locked := c.acquire(l)
	if ok, err := c.trySendLocked(v, &ws); ok {
		c.release(locked)
		ws.wake(l)
		if err == nil {
			t.spendBudget()
		}
		return err
	}
	return c.sendSlow(t, v, locked)
}

// sendSlow parks t as a sender of v; c is acquired.
func (c *Chan[T]) sendSlow(t *Task, v T, locked bool) error {
	nd := c.pool.get(nodeTask)
	nd.send = true
	nd.val = v
	t.preparePark(&nd.pw)
	c.sendq.push(nd)
	c.release(locked)
	err := t.park("Chan.Send", c, &nd.pw)
	locked = c.acquire(t.loop) // t may have moved to another loop since it was woken
	st := nd.state
	c.pool.put(nd)
	sendErr := c.sendErr
	c.release(locked)
	switch st {
	case nodeDone:
		return nil // sent; a cancellation shows at the next suspension point
	case nodeClosed:
		if err == nil {
			err = sendErr
		}
	}
	return err
}

// Recv receives the next value, suspending the task while the channel is
// empty. Once the channel is closed and drained it returns io.EOF, or the
// error given to CloseWithError. Recv is a cancellation point: if the task
// is cancelled, Recv returns the cause (matching context.Canceled) and
// received nothing.
//
// A value that was handed to the task as the cancellation reached it goes
// to the next receiver.
func (c *Chan[T]) Recv(t *Task) (T, error) {
	t.check("Chan.Recv")
	if err := t.cancelPoint(); err != nil {
		var zero T
		return zero, err
	}
	if c.own.Load() == t.loop && c.n > 0 && c.sendq.head == nil && c.back == nil {
		// The fast path: owned by this loop (no lock), a value, nobody to wake.
		v := c.popLocked()
		t.spendBudget()
		return v, nil
	}
	v, park, locked, err := c.recv(t)
	if park {
		// Parked from here, not from recv: recv's frame is gone by then, so
		// the stack at the switch out of the wait is shallower (a task's
		// stack doubles for good past about 1,120 B: DESIGN.md).
		return c.recvSlow(t, locked)
	}
	return v, err
}

// recv is Recv past the fast path: it returns the value or error, or
// (park, locked) when the task must park as a receiver: c is then
// acquired, and locked is recvSlow's.
func (c *Chan[T]) recv(t *Task) (T, bool, bool, error) {
	var zero T
	if err := c.prepare(t, "Chan.Recv"); err != nil {
		return zero, false, false, err
	}
	l := t.loop
	ws := wakers{from: l, fromKnown: true}
	locked := c.acquire(l)
	for look := 0; ; look++ {
		if v, ok := c.takeLocked(&ws); ok {
			c.release(locked)
			ws.wake(l)
			t.spendBudget()
			return v, false, false, nil
		}
		if c.closed {
			err := c.recvErr
			c.release(locked)
			return zero, false, false, reraiseMisuse(err)
		}
		// Park, unless the channel is shared and nothing else is runnable
		// here: the value may then be on its way from another goroutine,
		// and Recv looks again recvSpins times first, since parking would
		// make that goroutine wake the loop.
		if look == recvSpins || look == 0 && !(locked && c.own.Load() == sharedOwner && l.runq.len()+l.batchq.len() == 0) {
			return zero, true, locked, nil
		}
		c.release(locked)
		runtime.Gosched()
		// Never while holding the channel: cancelPoint may take the run
		// lock, which is taken before a wait source's (DESIGN.md).
		if err := t.cancelPoint(); err != nil {
			return zero, false, false, err
		}
		locked = c.acquire(l)
	}
}

// recvSpins is how many times Recv looks again at an empty shared
// channel before it parks (see recv).
const recvSpins = 8

// recvSlow parks t as a receiver; c is acquired.
func (c *Chan[T]) recvSlow(t *Task, locked bool) (T, error) {
	nd := c.pool.get(nodeTask)
	nd.send = false
	t.preparePark(&nd.pw)
	c.recvq.push(nd)
	c.release(locked)
	err := t.park("Chan.Recv", c, &nd.pw)
	return c.recvWoken(t, nd, err)
}

// recvWoken is recvSlow once the park has ended (err: its
// interruption), in a frame of its own so that recvSlow's is small while
// the task waits.
func (c *Chan[T]) recvWoken(t *Task, nd *waitNode[T], err error) (T, error) {
	var zero T
	if nd.state == nodeDone && err == nil {
		err = t.cancelPoint()
	}
	l := t.loop // t may have moved to another loop since it was woken
	ws := wakers{from: l, fromKnown: true}
	locked := c.acquire(l)
	st, v := nd.state, nd.val
	if st == nodeDone && err != nil && t.rs.isDeadlockErr(err) {
		// Handed a value as the Run was found deadlocked (by a task of
		// another Run: a goroutine's claims wait for the decision, see
		// claimFirst): nobody would receive it after us, so it is ours;
		// the next suspension point reports the deadlock.
		err = nil
	}
	if st == nodeDone && err != nil {
		c.giveBackLocked(v, nd.seq, &ws)
	}
	c.pool.put(nd)
	recvErr := c.recvErr
	c.release(locked)
	ws.wake(l)
	switch {
	case err != nil:
		return zero, err
	case st == nodeDone:
		return v, nil
	}
	return zero, reraiseMisuse(recvErr) // st == nodeClosed; a Generate producer's misuse is re-raised
}

// TrySend sends v if that needs no wait: a receiver is waiting, or the
// buffer has room. It reports whether v was sent; false also when the
// channel is closed. It never suspends and is not a cancellation point.
// Any goroutine may call it.
func (c *Chan[T]) TrySend(v T) bool {
	l, known := c.caller()
	return c.trySend(v, l, known)
}

// trySend is TrySend from loop l (nil: a goroutine), if known.
func (c *Chan[T]) trySend(v T, l *loop, known bool) bool {
	for {
		ws := wakers{from: l, fromKnown: known}
		locked := c.acquire(l)
		ok, err := c.trySendLocked(v, &ws)
		c.release(locked)
		if ws.busy != nil {
			ws.busy.awaitDecision()
			continue
		}
		ws.wakeFrom(ws.from, ws.fromKnown)
		return ok && err == nil
	}
}

// TryRecv receives a value if one is ready. It reports false when the
// channel is empty, or closed and drained. It never suspends and is not a
// cancellation point. Any goroutine may call it.
func (c *Chan[T]) TryRecv() (T, bool) {
	l, known := c.caller()
	for {
		ws := wakers{from: l, fromKnown: known}
		locked := c.acquire(l)
		v, ok := c.takeLocked(&ws)
		c.release(locked)
		if ws.busy != nil {
			ws.busy.awaitDecision()
			continue
		}
		ws.wakeFrom(ws.from, ws.fromKnown)
		return v, ok
	}
}

// Close closes the channel: later Sends, and Sends waiting now, return
// ErrClosed; receivers get the values already buffered, then io.EOF.
// Every waiting task and goroutine is woken. Closing a closed channel
// does nothing. Close never suspends; any goroutine may call it.
func (c *Chan[T]) Close() { c.close(io.EOF, ErrClosed) }

// CloseWithError closes the channel as Close does, except that receivers
// get err instead of io.EOF once they have drained it, and senders get an
// error that matches both ErrClosed and err. A nil err (or io.EOF) is
// Close. If the channel is already closed, it does nothing. It never
// suspends; any goroutine may call it.
func (c *Chan[T]) CloseWithError(err error) {
	if err == nil || err == io.EOF {
		c.Close()
		return
	}
	c.close(err, &closedError{cause: err})
}

// close closes c with the errors its receivers and senders get; it reports
// whether this call closed it.
func (c *Chan[T]) close(recvErr, sendErr error) bool {
	var ws wakers
	l, known := c.caller()
	locked := c.acquire(l)
	if c.closed {
		c.release(locked)
		return false
	}
	c.closed, c.keep = true, false
	c.recvErr, c.sendErr = recvErr, sendErr
	for _, q := range []*waitQueue[T]{&c.recvq, &c.sendq} {
		for nd := q.head; nd != nil; {
			next := nd.next
			r := nd
			if nd.kind == nodeSelect {
				r = nd.claimSelect() // before the unlink: it looks at the nodes behind nd
			}
			if r != nil {
				r.state = nodeClosed
				ws.add(r.waker())
			}
			q.remove(nd)
			if nd.kind == nodeGoroutine {
				c.goWaits--
			}
			nd = next
		}
	}
	onClose := c.onClose
	c.onClose = nil
	c.release(locked)
	ws.wakeFrom(l, known)
	if onClose != nil {
		onClose()
	}
	return true
}

// Closed reports whether the channel has been closed (its buffer may still
// hold values). Any goroutine may call it; it never suspends.
func (c *Chan[T]) Closed() bool {
	l, _ := c.caller()
	locked := c.acquire(l)
	closed := c.closed
	c.release(locked)
	return closed
}

// All returns an iterator over the values received from the channel by
// task t. All itself does not suspend; each step of the iteration
// suspends as Recv does. The iteration ends after the last value when the
// channel was closed with Close; after CloseWithError it yields that error
// last, and if the task is cancelled it yields the cause (matching
// context.Canceled) last:
//
//	for v, err := range c.All(t) {
//		if err != nil {
//			return err // CloseWithError's error, or t's cancellation
//		}
//		use(v)
//	}
//
// Leaving the loop early (break, return) or a cancellation stops the
// producer of a channel made by Generate (its yield returns an error); on
// any other channel it changes nothing.
//
//go:noinline
func (c *Chan[T]) All(t *Task) iter.Seq2[T, error] {
	return (&chanRange[T]{c: c, t: t}).iterate
}

// chanRange is the iterator of All: a method rather than a closure, and
// neither inlined (nor All), so that the caller's loop never holds weft's
// code, which a deadlock report would take for the user's.
type chanRange[T any] struct {
	c *Chan[T]
	t *Task
}

//go:noinline
func (r *chanRange[T]) iterate(yield func(T, error) bool) {
	c := r.c
	for {
		v, err := c.Recv(r.t)
		if err == io.EOF {
			return
		}
		if err != nil {
			c.consumerStopped()
			yield(v, err)
			return
		}
		if !yield(v, nil) {
			c.consumerStopped()
			return
		}
	}
}

// consumerStopped stops the producer of a Generate channel.
func (c *Chan[T]) consumerStopped() {
	if c.stopOnBreak {
		c.close(io.EOF, errConsumerStopped)
	}
}

// SendWait sends v from a plain goroutine, blocking that goroutine (and
// nothing else) while the channel is full. It returns nil once v was
// accepted, an error matching ErrClosed if the channel is closed first,
// or ctx.Err() if ctx is done first (v was then not sent). It suspends no
// task: called from a task, whose whole loop it would block, it panics
// (use Send).
//
// While it blocks, the loops of tasks waiting on the channel stay alive.
func (c *Chan[T]) SendWait(ctx context.Context, v T) error {
	if !c.plain.Plain() {
		mustNotBeTask("Chan.SendWait", "Send")
	}
	if ctx == nil {
		panic("weft: Chan.SendWait with a nil context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ws := wakers{fromKnown: true} // a goroutine
	for {
		c.acquire(nil) // a goroutine: the channel is shared from now on, and locked
		if ok, err := c.trySendLocked(v, &ws); ok {
			c.mu.unlock()
			ws.wake(nil)
			return err
		}
		if ws.busy == nil {
			break
		}
		c.mu.unlock()
		ws.busy.awaitDecision()
		ws.busy = nil
	}
	nd := c.goNodeLocked()
	nd.send = true
	nd.val = v
	c.sendq.push(nd)
	c.mu.unlock()
	if err := c.goWait(ctx, nd); err != nil {
		return err
	}
	c.mu.lock()
	st := nd.state
	c.pool.put(nd)
	sendErr := c.sendErr
	c.mu.unlock()
	if st == nodeDone {
		return nil
	}
	return sendErr
}

// RecvWait receives a value from a plain goroutine, blocking that
// goroutine (and nothing else) while the channel is empty. It returns
// io.EOF (or the CloseWithError error) once the channel is closed and
// drained, or ctx.Err() if ctx is done first (nothing was then received).
// It suspends no task: called from a task, whose whole loop it would
// block, it panics (use Recv).
//
// While it blocks, the loops of tasks waiting on the channel stay alive.
func (c *Chan[T]) RecvWait(ctx context.Context) (T, error) {
	if !c.plain.Plain() {
		mustNotBeTask("Chan.RecvWait", "Recv")
	}
	if ctx == nil {
		panic("weft: Chan.RecvWait with a nil context")
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	ws := wakers{fromKnown: true} // a goroutine
	for {
		c.acquire(nil) // a goroutine: the channel is shared from now on, and locked
		if v, ok := c.takeLocked(&ws); ok {
			c.mu.unlock()
			ws.wake(nil)
			return v, nil
		}
		if ws.busy == nil {
			break
		}
		c.mu.unlock()
		ws.busy.awaitDecision()
		ws.busy = nil
	}
	if c.closed {
		err := c.recvErr
		c.mu.unlock()
		return zero, err
	}
	nd := c.goNodeLocked()
	nd.send = false
	c.recvq.push(nd)
	c.mu.unlock()
	if err := c.goWait(ctx, nd); err != nil {
		return zero, err
	}
	c.mu.lock()
	st, v := nd.state, nd.val
	c.pool.put(nd)
	recvErr := c.recvErr
	c.mu.unlock()
	if st == nodeDone {
		return v, nil
	}
	return zero, recvErr
}

// mustNotBeTask panics if the caller is a task's code.
func mustNotBeTask(op, instead string) {
	if currentTask() != nil {
		panic(fmt.Sprintf("weft: %s called from a task: it would block the task's loop; use %s", op, instead))
	}
}

// goNodeLocked returns a node for a goroutine waiter and counts the wait.
func (c *Chan[T]) goNodeLocked() *waitNode[T] {
	nd := c.pool.get(nodeGoroutine)
	if nd.done == nil {
		nd.done = make(chan struct{}, 1)
	}
	c.goWaits++
	return nd
}

// goWait blocks the goroutine until nd is satisfied or closed (nil), or
// ctx is done first (ctx.Err(), with nd withdrawn and returned to the pool).
func (c *Chan[T]) goWait(ctx context.Context, nd *waitNode[T]) error {
	select {
	case <-nd.done:
		return nil
	case <-ctx.Done():
	}
	var ws wakers
	c.mu.lock()
	if nd.queued {
		if nd.send {
			c.sendq.remove(nd)
		} else {
			c.recvq.remove(nd)
		}
		c.goWaitEndedLocked(&ws)
		c.pool.put(nd)
		c.mu.unlock()
		ws.wake(nil)
		return ctx.Err()
	}
	c.mu.unlock()
	<-nd.done // satisfied meanwhile: the signal is on its way
	return nil
}

// goWaitEndedLocked counts the end of a goroutine's wait; when none is
// left, the loops of the tasks parked on c must look again for a deadlock.
func (c *Chan[T]) goWaitEndedLocked(ws *wakers) {
	c.goWaits--
	if c.goWaits == 0 && !c.keep {
		c.recheckLocked(ws)
	}
}

// recheckLocked asks the loops of the tasks parked on c to look again for
// a deadlock.
func (c *Chan[T]) recheckLocked(ws *wakers) {
	for _, q := range []*waitQueue[T]{&c.recvq, &c.sendq} {
		for nd := q.head; nd != nil; nd = nd.next {
			switch nd.kind {
			case nodeTask:
				ws.recheck(nd.pw.loop)
			case nodeSelect:
				ws.recheck(nd.sel.pw.loop)
			}
		}
	}
}

// trySendLocked sends v if that needs no wait, and reports whether it is
// done: with nil (sent) or the closed error.
func (c *Chan[T]) trySendLocked(v T, ws *wakers) (bool, error) {
	if c.closed {
		return true, c.sendErr
	}
	if c.recvq.head != nil {
		if r := c.receiverLocked(ws); r != nil {
			c.handLocked(r, v, c.seq, ws)
			c.seq++
			return true, nil
		}
		if ws.busy != nil {
			return false, nil // the caller starts over (claimFirst)
		}
	}
	if c.n < len(c.buf) {
		c.pushLocked(v)
		return true, nil
	}
	return false, nil
}

// takeLocked takes the next value for a receiver that is running, if
// there is one: a value given back, the head of the buffer (refilled from
// the first waiting sender), or the first waiting sender's value.
func (c *Chan[T]) takeLocked(ws *wakers) (T, bool) {
	if len(c.back) > 0 {
		v := c.back[0].v
		c.back[0] = backValue[T]{}
		c.back = c.back[1:]
		if len(c.back) == 0 {
			c.back = nil
		}
		return v, true
	}
	if c.n > 0 {
		if c.sendq.head != nil {
			// The refill first: if a waiting sender's Run is deciding
			// whether it is deadlocked, the caller starts over (claimFirst)
			// and nothing may have moved.
			s := c.senderLocked(ws)
			if ws.busy != nil {
				var zero T
				return zero, false
			}
			v := c.popLocked()
			if s != nil {
				c.pushLocked(s.val)
				c.acceptLocked(s, ws)
			}
			return v, true
		}
		return c.popLocked(), true
	}
	if c.sendq.head != nil {
		if s := c.senderLocked(ws); s != nil {
			v := s.val
			c.acceptLocked(s, ws)
			return v, true
		}
	}
	var zero T
	return zero, false
}

// receiverLocked claims the first waiting receiver that can still be
// satisfied, unlinking dead Select cases on the way; nil if none.
func (c *Chan[T]) receiverLocked(ws *wakers) *waitNode[T] { return claimFirst(&c.recvq, ws) }

// senderLocked is receiverLocked for the waiting senders.
func (c *Chan[T]) senderLocked(ws *wakers) *waitNode[T] { return claimFirst(&c.sendq, ws) }

// claimFirst claims the first waiter of q that can still be satisfied (for
// a Select, one of its cases queued there: claimSelect), unlinking dead
// Select cases on the way; nil if none. A plain goroutine (ws's caller)
// that claims a parked task holds its wake in flight until it is posted
// (runState.claimWake, deadlock.go); if the task's Run is deciding whether
// it is deadlocked, it claims nothing and sets ws.busy (the caller
// unlocks, waits for the decision and starts over), and if that Run is
// deadlocked it passes the task by (it is being unwound).
func claimFirst[T any](q *waitQueue[T], ws *wakers) *waitNode[T] {
	for nd := q.head; nd != nil; {
		var rs *runState
		if nd.kind != nodeGoroutine && ws.caller() == nil {
			if nd.kind == nodeSelect {
				rs = nd.sel.pw.loop.rs
			} else {
				rs = nd.pw.loop.rs
			}
			switch rs.claimWake() {
			case wakeBusy:
				ws.busy = rs
				return nil
			case wakeDead:
				nd = nd.next
				continue
			}
			ws.held = true
		}
		if nd.kind != nodeSelect {
			return nd
		}
		if r := nd.claimSelect(); r != nil {
			return r
		}
		if rs != nil {
			rs.releaseWake()
		}
		next := nd.next
		q.remove(nd)
		nd = next
	}
	return nil
}

// handLocked gives v (of rank seq) to the claimed receiver r.
func (c *Chan[T]) handLocked(r *waitNode[T], v T, seq uint64, ws *wakers) {
	c.recvq.remove(r)
	r.val, r.seq = v, seq
	r.state = nodeDone
	ws.add(r.waker())
	if r.kind == nodeGoroutine {
		c.goWaitEndedLocked(ws)
	}
}

// acceptLocked completes the claimed sender s, whose value was taken.
func (c *Chan[T]) acceptLocked(s *waitNode[T], ws *wakers) {
	c.sendq.remove(s)
	s.state = nodeDone
	ws.add(s.waker())
	if s.kind == nodeGoroutine {
		c.goWaitEndedLocked(ws)
	}
}

// giveBackLocked returns the value v of rank seq, handed to a receiver
// that was cancelled before it resumed: to the next waiting receiver, or
// ahead of the buffer, in rank order among the values given back.
func (c *Chan[T]) giveBackLocked(v T, seq uint64, ws *wakers) {
	if c.recvq.head != nil {
		if r := c.receiverLocked(ws); r != nil {
			c.handLocked(r, v, seq, ws)
			return
		}
	}
	i := len(c.back)
	for i > 0 && c.back[i-1].seq > seq {
		i--
	}
	c.back = slices.Insert(c.back, i, backValue[T]{v: v, seq: seq})
}

func (c *Chan[T]) pushLocked(v T) {
	i := c.head + c.n
	if i >= len(c.buf) {
		i -= len(c.buf)
	}
	c.buf[i] = v
	c.n++
}

func (c *Chan[T]) popLocked() T {
	var zero T
	v := c.buf[c.head]
	c.buf[c.head] = zero
	if c.head++; c.head == len(c.buf) {
		c.head = 0
	}
	c.n--
	return v
}

// withdraw takes an interrupted task's node off the channel (parkSource).
// A node that is no longer queued was satisfied or closed first; its
// waiter sees that in the node.
func (c *Chan[T]) withdraw(w *parkWaiter) {
	nd := w.slot.(*waitNode[T])
	locked := c.acquireHere()
	if nd.queued {
		if nd.send {
			c.sendq.remove(nd)
		} else {
			c.recvq.remove(nd)
		}
	}
	c.release(locked)
}

// keepsAlive reports whether something outside the loops may still act on
// the channel (keepAliveSource): a goroutine in SendWait or RecvWait, or
// a Signal subscription.
func (c *Chan[T]) keepsAlive() bool {
	locked := c.acquireHere()
	k := c.goWaits > 0 || c.keep
	c.release(locked)
	return k
}
