package whttp

// The connection watched while a handler runs, as net/http's background
// read does: once the request has been read whole (it had no body, or the
// handler read its body to the end), a task of its own reads the
// connection, so that a client that closes or resets it while the handler
// runs is noticed at once, whatever the handler waits on. Then the
// request's context is cancelled with ErrClientGone as its cause, and so
// are the handler's task and the tasks it started (the connection's
// group). Bytes that arrive instead (a pipelined request) are kept for the
// next request, and the watch ends there. When the handler returns, the
// watch is cancelled and joined before the connection reads again, so two
// tasks never read it at once.
//
// The watch's task starts only when the handler's task first suspends
// after the request was read whole, or reaches a Checkpoint's slow path
// (the core's suspend hook, internal/loophook): most handlers answer
// without suspending, and pay for no task. It starts in the connection's
// group, whatever scope the handler's code is in then (a Timeout's would
// end the watch at its deadline).
//
// Over TLS the watch reads the weft.TLSConn (tls.go) as the handler's
// task writes it: that is what TLSConn is for. Its Read returns io.EOF
// for the client's close_notify, as for a closed socket; decrypted bytes
// (a pipelined request) land in the input buffer as on plain TCP; a
// cancelled Read consumes nothing.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/loophook"
)

// ErrClientGone is the cause (context.Cause) of a request's context when
// the client closed or reset its connection while the handler ran; the
// cause wraps the read's error too. See Handler.
var ErrClientGone = errors.New("whttp: the client closed the connection")

// errWatchStopped is how the connection's task ends a watch.
var errWatchStopped = errors.New("whttp: watch stopped")

// watchArmed is c.watch while the watch is armed but not started: the
// handler has not suspended since the request was read whole.
var watchArmed = new(weft.Promise[int])

// startWatch arms the watch of the connection, if the request in flight
// has been read whole and its handler runs; t is the connection's task.
// The input buffer holds nothing unread (else a pipelined request is
// already here: no watch), so the watch reads into it from the start. It
// does not suspend.
//
// The watch's task starts only when t first suspends from here on, or
// reaches a Checkpoint's slow path (BeforeSuspend, the suspend hook of
// internal/loophook): a handler that answers without suspending (the
// common case) costs the arming and the disarming (stopWatch), no spawn.
func (c *conn) startWatch(t *weft.Task) {
	if c.watch != nil || !c.handling || c.st == nil || c.st.in.buffered() > 0 {
		return
	}
	in := &c.st.in
	in.r, in.w = 0, 0
	// The request is read: ReadTimeout no longer applies, and must not
	// end the watch (net/http clears the deadline too).
	c.setReadDeadline(time.Time{})
	c.watch = watchArmed
	loophook.OnSuspend(t, c)
}

// BeforeSuspend is the connection's task's suspend hook (loophook), armed
// by startWatch: the handler is about to suspend (or runs long), so the
// watch starts, in the connection's group, whatever scope the handler's
// code is in (a Timeout's or a Group's would cancel the watch or wait for
// it as it ends). The watch's task is only queued: it runs once the
// handler's task has given way. It does not suspend.
//
// The watch's task first gives way (Yield): it reads only if the handler
// is still running when its turn comes back; a handler that suspended
// only briefly (a Yield, a spawn) costs the spawn and no read.
func (c *conn) BeforeSuspend() {
	if c.watch != watchArmed {
		return
	}
	gen := c.gen
	c.watch = weft.GoIn(c.group, func(t *weft.Task) (int, error) { return c.watchConn(t, gen) })
}

// watchConn is the watch's task, for request gen: it returns how many
// bytes it put in the input buffer.
func (c *conn) watchConn(t *weft.Task, gen uint64) (int, error) {
	if t.Yield() != nil {
		return 0, nil
	}
	// With several loops this task may now run beside the connection's:
	// it reads only if the request's handler still runs, and says so
	// (watching) under the lock the end of the handler takes.
	c.mu.Lock()
	if !c.handling || c.gen != gen || c.cut {
		c.mu.Unlock()
		return 0, nil
	}
	c.watching = true
	c.mu.Unlock()
	var n int
	var err error
	if c.tls != nil {
		n, err = c.tls.conn.Read(t, c.st.in.buf)
	} else {
		n, err = c.wc.Read(t, c.st.in.buf)
	}
	if n > 0 {
		return n, nil
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, errWatchStopped) {
		return 0, nil // stopped: the handler returned, or the connection is cut off
	}
	c.clientGone(err)
	return 0, nil
}

// stopWatch marks the handler ended and ends the watch, if any: if it
// reads, it is cancelled and joined (the connection's task reads the
// connection again only after that), and the bytes it read are added to
// the input; if it has not begun to, it never will; if it is only armed,
// it is disarmed. t is the connection's task.
func (c *conn) stopWatch(t *weft.Task) {
	p := c.watch
	c.mu.Lock()
	c.handling = false
	watching := c.watching
	c.watching = false
	c.mu.Unlock()
	if p == nil {
		return
	}
	c.watch = nil
	if p == watchArmed {
		loophook.OnSuspend(t, nil) // never started: the handler did not suspend
		return
	}
	if !watching {
		return // it will find the handler gone, and end
	}
	p.CancelWithCause(errWatchStopped)
	n, err := p.Await(t)
	if err != nil && !p.Settled() {
		// t is being cancelled: join all the same, since the watch reads
		// into the connection's buffers.
		t.Protect(func(t *weft.Task) error {
			n, _ = p.Await(t)
			return nil
		})
	}
	if n > 0 {
		c.st.in.w += n
	}
}

// clientGone ends the request in flight because the client went away (err
// says how): its context is cancelled with ErrClientGone, and its
// handler's task with it (the connection's group); the connection closes
// after the response, which is still sent in case the client only shut
// down its writing side.
func (c *conn) clientGone(err error) {
	cause := fmt.Errorf("%w: %w", ErrClientGone, err)
	c.stopIt.Store(true)
	c.mu.Lock()
	if c.cause == nil {
		c.cause = cause
	}
	group := c.group
	var cancel context.CancelCauseFunc
	var notify chan bool
	if h := c.cur; h != nil {
		if h.real == nil {
			// Made now, so that context.Cause finds the cause.
			h.real, h.cancel = context.WithCancelCause(c.base())
		}
		cancel = h.cancel
		notify = h.notify
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	if notify != nil {
		select {
		case notify <- true:
		default:
		}
	}
	if group != nil {
		group.Cancel()
	}
}
