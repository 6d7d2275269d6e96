package weft

// Waiting for a connection's next bytes without a task.
//
// A task suspended in Conn.Read holds a coroutine: a goroutine of at
// least 2 KiB of stack, and more for a deep one. A server whose
// connections are mostly idle between requests pays that for every one.
// GoWhenReadable lets the connection wait with no task at all: a task of
// a group that has not started (its cell, about 240 B, and the record
// of its wait, 160 B, without the rest of what a started task's wait
// has: prepareUnstarted) is registered as a reader of the connection's
// fd on the fd's home loop, exactly as a task suspended in Read would be,
// and when the fd becomes readable (or hangs up, or fails, or is closed,
// or the read deadline passes, or the group is cancelled) it is made
// runnable and starts there: only then does it take a coroutine.
//
// The invariant: the record lives on the home loop of the Conn, the loop
// whose poller watches the fd; it is written and read only there (the
// registration is posted there when another loop asks for it, behind the
// fd's own watch), and the task it makes runnable starts there, since a
// task that has not started is never handed over (handover.go). While it
// waits the task is an ordinary waiting task of its group: the group (and
// so Run) waits for it, cancellation reaches it (interrupt withdraws it
// from the fd table), deadlock detection counts it as a wait on I/O, Dump
// and Stats list it as waiting on its fd (op "GoWhenReadable").

// readableImpl is a connImpl whose readability can be waited for by a
// task that has not started (the fd implementation: epoll and io_uring).
type readableImpl interface {
	// armReadable runs on the fd's home loop l. It reports true when a
	// Read may not wait (bytes are there, the end, an error, a close);
	// otherwise it has started a wait of t (newWait) and registered t as
	// a reader of the fd, and the caller must make t wait (waitUnstarted).
	armReadable(l *loop, t *Task) bool
}

// GoWhenReadable starts f as a task of the group once c can be read: when
// bytes have arrived, or the peer closed or reset the connection, or c was
// closed, or c's read deadline passed, or the group (or anything above it)
// was cancelled. Until then there is no task and no coroutine, only a
// small record on c's fd in the loop that polls it (c's home): what an
// idle connection of a server costs is that record, not a task's stack.
// f runs on c's home loop, and its first c.Read returns without waiting
// for the network: the bytes, io.EOF, the error, net.ErrClosed or an
// error matching os.ErrDeadlineExceeded. (A read that finds the bytes
// taken by another reader waits as usual.)
//
// GoWhenReadable does not suspend the calling task, except under the
// group's limit (SetLimit), where it first waits for a slot as Go does: a
// registered wait counts as a task of the group. It is not a cancellation
// point. The wait belongs to the group: Group does not return while it
// is registered, and cancelling the group ends it. f then still runs,
// once, as the group's task, and sees the cancellation at its first
// suspension point (a first Read that finds nothing to read returns the
// cause, matching context.Canceled), so that f is always the one that
// releases c: f runs exactly once, whatever ends the wait. The one
// exception is a Run torn down by runtime.Goexit before f could start:
// then c is closed for it.
//
// A typical server hands a connection to a new wait after each burst of
// requests, when its last read returned less than its buffer:
//
//	g.GoWhenReadable(c, func(t *weft.Task) error { return serveBurst(t, g, c) })
//
// Only one task may wait for c's readability at a time, in Read or in
// GoWhenReadable (this is not checked). A nil c or f, a Conn of another
// Run, or a call after Group returned or from outside the group's Run
// panics with a "weft:" message. On the epoll and io_uring backends the wait
// holds no goroutine. On the portable backend (WEFT_BACKEND=portable, and
// systems other than Linux) and for a connection of a Network
// (WithNetwork, simnet), which wait for readability only inside a Read,
// f starts at once instead, and its first Read waits as any Read does: the
// same behaviour, at the cost of a task while the connection is idle.
//
//go:noinline
func (g *TaskGroup) GoWhenReadable(c *Conn, f func(t *Task) error) {
	pc := callerPC()
	if g == nil {
		panic("weft: GoWhenReadable called on a nil *TaskGroup")
	}
	if c == nil {
		panic("weft: TaskGroup.GoWhenReadable called with a nil *Conn")
	}
	if f == nil {
		panic("weft: TaskGroup.GoWhenReadable called with a nil function")
	}
	cur := g.caller(spawnGoWhenReadable.String())
	sameLoop(cur, c.loop, "Conn")
	ri, ok := c.impl.(readableImpl)
	if !ok {
		// No wait without a task here: f starts now, its Read waits.
		t := newGroupTask(g, cur, spawnGoWhenReadable, pc, funcPC(f), f)
		cur.loop.ready(t)
		return
	}
	t := newGroupTaskOf(g, cur, spawnGoWhenReadable, pc, funcPC(f), func(t *Task) (struct{}, error) {
		c.readableStarted(t)
		return struct{}{}, f(t)
	})
	home := c.loop
	if home == cur.loop {
		c.awaitReadable(ri, t, pc)
		return
	}
	// The record is the home loop's: the task goes there before it waits,
	// and the registration runs there, behind the fd's own watch (posted
	// when the connection was accepted).
	rs := cur.rs
	rs.lock()
	t.loop = home
	rs.unlock()
	home.post(func() { c.awaitReadable(ri, t, pc) })
}

// awaitReadable makes t, a task that has not started, wait for c's
// readability, or readies it at once. It runs on c's home loop.
func (c *Conn) awaitReadable(ri readableImpl, t *Task, pc uintptr) {
	l := c.loop
	// t counts as inside a read for the deadline (ioDeadline.enter, without
	// its refusal: a deadline already passed readies t, whose first Read
	// then reports it), so that a deadline set or moved while it waits
	// reaches it; readableStarted ends that.
	d := &c.dl.rd
	d.busy.Add(1)
	if d.waiters == nil {
		d.waiters = d.one[:0]
	}
	d.waiters = append(d.waiters, t)
	w := d.when.Load()
	ready := false
	if w != noDeadline {
		if now := l.clock.Nanotime(); w <= now {
			ready = true
		} else {
			d.arm(l, w, now)
		}
	}
	if l.aborted {
		c.Close() // the Run is torn down: t will never start (see GoWhenReadable)
		return
	}
	if !ready {
		t.prepareUnstarted() // its wait's record, with no taskExtra
		ready = t.cancelled.Load() || c.closed.Load() || ri.armReadable(l, t)
	}
	if ready {
		l.ready(t)
		return
	}
	t.waitUnstarted(waitFD, "GoWhenReadable", pc, func() { c.Close() })
}

// readableStarted runs first in the task GoWhenReadable started, on c's
// home loop: its read-deadline registration ends, and whatever ended its
// wait shows in its first operation (a cancellation at its first
// suspension point, a deadline or a close in its first Read), not as a
// stale wake error.
func (c *Conn) readableStarted(t *Task) {
	if r := t.obs.rec.Load(); r != nil {
		r.wakeErr = nil
		r.dropped = nil
	}
	c.dl.rd.exit(c.loop, t)
}
