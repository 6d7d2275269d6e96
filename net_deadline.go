package weft

// I/O deadlines on a Conn, as net.Conn has them.
//
// Each direction (read, write) has a deadline, a point on the loop's clock
// in nanoseconds (noDeadline when none), which any goroutine may set. The
// loop keeps, per direction, the tasks inside an operation (waiters) and
// one timer, armed at the deadline while there are waiters. When the timer
// fires it reads the deadline again: a later one re-arms it (the deadline
// was extended), none does nothing (it was cleared), and a passed one
// interrupts every waiter that is waiting, with os.ErrDeadlineExceeded. A
// waiter that is runnable at that moment finds the deadline passed at its
// next wait (netFD.wait), or its operation completed.
//
// Setting a deadline stores it, then re-arms on the loop (at once from a
// task of the loop, through the inbox from elsewhere) if some task is
// inside an operation in that direction. The setter stores the
// deadline before it reads the busy count, and an operation raises the
// busy count before it reads the deadline (both sequentially consistent),
// so either the setter sees the operation and posts, or the operation sees
// the new deadline: a change is never lost.
//
// The timer is not taken out of the heap and put back for every operation
// when it is due soon: on a real clock, a timer due within lazyDisarm of
// when it was armed stays in the heap when the last operation under it
// ends (it fires, finds no waiter, and does nothing), and stays when a
// later deadline comes (it fires early, and the re-arm moves it to the
// deadline). A server that sets a short deadline before each read
// (whttp's keep-alive linger) so pays for a timer every few milliseconds
// instead of two heap operations per request. A stale timer keeps the
// Conn's memory until it fires, and delays a deadlock report by as much:
// lazyDisarm at most.
//
// With virtual time, the clock normally stands still while a task waits on
// an fd or off-loop work. While an I/O deadline is armed, it does not: when
// every task waits, the loop waits a short real grace for I/O (10 ms; 100
// ms while off-loop work is pending) and, if none comes, moves the clock to
// the next timer (blockVirtualIO). So a deadline set on the loop's clock
// passes in virtual time too, and the sleeps of the tasks that move
// deadlines do as well.

import (
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

// noDeadline is the stored deadline of a direction without one.
const noDeadline = 1<<63 - 1

// lazyDisarm bounds how far ahead a deadline's timer may be due and still
// stay in the heap once no operation waits under it (see exit).
const lazyDisarm = int64(10 * time.Millisecond)

// ioDeadline is the deadline of one direction of a Conn.
type ioDeadline struct {
	when    atomic.Int64 // shared: the deadline, loop-clock ns; noDeadline if none
	busy    atomic.Int32 // shared (written on the loop): tasks inside an operation
	armed   bool         // loop-owned
	lazy    bool         // loop-owned: on a real clock, the armed timer was due within lazyDisarm when armed: it may fire early (arm) or with no waiter (exit)
	waiters []*Task      // loop-owned: those tasks; backed by one while there is one
	one     [1]*Task     // loop-owned: the usual single task, without an allocation deep in its Read or Write
	tm      timer        // loop-owned: armed (in the heap) while armed is true
}

// connDeadlines are a Conn's two deadlines.
type connDeadlines struct {
	rd, wr ioDeadline
}

func newConn(l *loop, impl connImpl, network string) *Conn {
	c := &Conn{loop: l, impl: impl, network: network}
	c.dl.rd.when.Store(noDeadline)
	c.dl.wr.when.Store(noDeadline)
	if b, ok := impl.(interface{ bindDeadlines(*connDeadlines) }); ok {
		b.bindDeadlines(&c.dl)
	}
	return c
}

// enter registers the running task t as inside an operation. It returns
// os.ErrDeadlineExceeded, and registers nothing, if the deadline has
// passed.
func (d *ioDeadline) enter(l *loop, t *Task) error {
	d.busy.Add(1)
	w := d.when.Load()
	var now int64
	if w != noDeadline {
		if now = l.clock.Nanotime(); w <= now {
			d.busy.Add(-1)
			return os.ErrDeadlineExceeded
		}
	}
	if d.waiters == nil {
		d.waiters = d.one[:0]
	}
	d.waiters = append(d.waiters, t)
	if w != noDeadline {
		d.arm(l, w, now)
	}
	return nil
}

// exit ends t's operation.
func (d *ioDeadline) exit(l *loop, t *Task) {
	for i, x := range d.waiters {
		if x == t {
			last := len(d.waiters) - 1
			d.waiters[i] = d.waiters[last]
			d.waiters[last] = nil
			d.waiters = d.waiters[:last]
			break
		}
	}
	d.busy.Add(-1)
	if len(d.waiters) == 0 && !d.lazy {
		d.disarm(l) // a lazy one stays: see the top of the file
	}
}

// arm makes the timer fire at w, or before it (then the re-arm moves it
// on); now is the loop's clock, read by the caller.
func (d *ioDeadline) arm(l *loop, w, now int64) {
	if d.armed {
		if d.tm.when == w || d.tm.when < w && d.lazy {
			return // it fires first, and rearm moves it to w
		}
		l.timers.remove(&d.tm)
	} else {
		l.ioTimers++
	}
	if d.tm.fn == nil {
		d.tm.fn = func() { d.fire(l) }
	}
	d.tm.when = w
	d.lazy = w-now <= lazyDisarm && !l.clock.Virtual()
	l.timers.push(&d.tm)
	d.armed = true
}

func (d *ioDeadline) disarm(l *loop) {
	if d.armed {
		l.timers.remove(&d.tm)
		d.armed = false
		l.ioTimers--
	}
}

// fire runs on the loop when the timer is due (it is out of the heap).
func (d *ioDeadline) fire(l *loop) {
	d.armed = false
	l.ioTimers--
	d.rearm(l)
}

// rearm brings the timer and the waiters in line with the stored deadline.
func (d *ioDeadline) rearm(l *loop) {
	w := d.when.Load()
	if len(d.waiters) == 0 || w == noDeadline {
		d.disarm(l)
		return
	}
	if now := l.clock.Nanotime(); w > now {
		d.arm(l, w, now)
		return
	}
	d.disarm(l)
	for _, t := range d.waiters {
		l.interrupt(t, os.ErrDeadlineExceeded) // only those waiting
	}
}

// expired reports os.ErrDeadlineExceeded if the deadline for m has passed.
// Loop-owned.
func (dl *connDeadlines) expired(l *loop, m poller.Mode) error {
	d := &dl.rd
	if m == poller.Write {
		d = &dl.wr
	}
	if w := d.when.Load(); w != noDeadline && w <= l.clock.Nanotime() {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// loopTime converts t to the loop's clock; the zero time is noDeadline.
func (l *loop) loopTime(t time.Time) int64 {
	if t.IsZero() {
		return noDeadline
	}
	wall, now := l.clock.NowNano()
	d := t.Sub(wall)
	if d > 0 && int64(d) > noDeadline-1-now {
		return noDeadline - 1
	}
	return now + int64(d)
}

// SetDeadline sets the read and write deadlines, as net.Conn's
// SetDeadline: an absolute time after which Read and Write fail, instead of
// waiting, with an error matching os.ErrDeadlineExceeded (a *net.OpError
// whose Timeout method reports true). It does not suspend, and may be
// called from any task or goroutine. After Close it returns an error
// matching net.ErrClosed.
//
// A deadline in the past makes Read and Write fail at once; the zero time
// clears it. A new deadline also applies to an operation already waiting:
// extending it lets the wait go on, shortening it ends the wait sooner.
// The time is read on the loop's clock, so with WithVirtualTime a deadline
// passes in virtual time.
func (c *Conn) SetDeadline(t time.Time) error { return c.setDeadline("set", t, true, true) }

// SetReadDeadline sets the deadline of Read (and of reads already
// waiting); see SetDeadline. It does not suspend.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.setDeadline("set", t, true, false) }

// SetWriteDeadline sets the deadline of Write (and of writes already
// waiting); see SetDeadline. It does not suspend. A Write that times out
// may have written part of its data.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setDeadline("set", t, false, true) }

func (c *Conn) setDeadline(op string, t time.Time, rd, wr bool) error {
	if c.closed.Load() {
		return opError(op, c.network, c.impl.localAddr(), c.impl.remoteAddr(), net.ErrClosed)
	}
	l := c.loop
	w := l.loopTime(t)
	post := false
	if rd {
		c.dl.rd.when.Store(w)
		post = c.dl.rd.busy.Load() > 0
	}
	if wr {
		c.dl.wr.when.Store(w)
		post = post || c.dl.wr.busy.Load() > 0
	}
	if post {
		rearm := func() {
			c.dl.rd.rearm(l)
			c.dl.wr.rearm(l)
		}
		if cur := currentTask(); cur != nil && cur.loop == l {
			rearm() // on the loop: at once
		} else {
			l.post(rearm)
		}
	}
	return nil
}
