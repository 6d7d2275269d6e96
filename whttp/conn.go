package whttp

// One connection's task. It loops: wait for the first bytes of a request
// (idle), read and answer the request (request.go), and again. While idle
// it holds no reqState (reuse.go): its buffers, request and response go
// back to a pool, and the wait reads into a small landing buffer, taken
// from a pool of its own for the read (a small request arrives whole in
// it, so waiting costs no extra read). Between the requests of a plain HTTP/1.1 keep-alive
// connection idle for longer than parkAfter it holds no task either: once
// no pipelined request is buffered and none came within parkAfter, the
// task ends and the connection waits in the server group's GoWhenReadable
// (park), a record on its fd, until the next request's bytes start a new
// task (resume), which goes on with the same conn. Responses are flushed before the task waits for input,
// so pipelined requests get their responses in order and in as few writes
// as can be. The task also keeps the connection's deadlines (the header's,
// the idle wait's) and closes it, gently after a response and at once
// after a failure or the drain timeout.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
)

// parkAfter is how long an idle keep-alive connection waits for its next
// request in its task before it parks (waits with no task: see run).
const parkAfter = 5 * time.Millisecond

// closeLinger bounds how long a connection that is closed after a response
// reads and discards what the client still sends, after it has shut down
// its writing side: closing a socket with unread input makes the kernel
// send a reset, which can destroy the response before the client reads it.
const closeLinger = 500 * time.Millisecond

// landSize is the size of a landing buffer (see landPool): a small
// request arrives whole in it.
const landSize = 432

// landPool holds the landing buffers that receive the first bytes of a
// request while a connection is idle and holds no reqState. A connection
// takes one for the read only (an HTTP/2 connection for its life), so a
// keep-alive connection parked with no task (GoWhenReadable) holds none:
// the buffer is most of what such a connection would otherwise weigh.
var landPool = sync.Pool{New: func() any { return new([landSize]byte) }}

func getLand() *[landSize]byte  { return landPool.Get().(*[landSize]byte) }
func putLand(b *[landSize]byte) { landPool.Put(b) }

// conn is one connection being served. Its task owns it; what Serve's
// task touches while draining (stopIt, idle, and cut, cur and group
// under mu) is atomic or guarded, and so is what a request's context reads
// from other goroutines (gen, active, cur under mu).
type conn struct {
	sv     *serving
	wc     *weft.Conn
	t      *weft.Task // the connection's task
	nc     net.Conn   // wc.NetConn(t), or tls.conn.NetConn(t)
	tls    *connTLS   // nil: plain TCP (or a failed handshake)
	remote string
	st     *reqState // nil while idle
	// idle and stopIt follow a Dekker order: the connection sets idle,
	// then reads stopIt before it waits; the stop sets stopIt, then reads
	// idle and closes an idle connection. One of them sees the other.
	idle     atomic.Bool // waiting for a request: the stop closes it
	stopIt   atomic.Bool // close after this response (the server stops, or an error)
	state    uint8       // an http.ConnState
	handling bool        // mu (written by the task): the handler of the request in flight runs
	watching bool        // mu: the watch reads (watch.go)
	hijacked bool        // mu (written by the task): a handler took the connection over (hijack.go)
	active   bool        // mu (written by the task): request gen is in flight
	cut      bool        // mu: cut off (the drain timeout, Close): its I/O fails

	// ctx is the context of the connection's requests (ConnContext's),
	// nil for sv.base; set by the task before its first request.
	ctx context.Context

	mu    sync.Mutex
	gen   uint64          // mu (written by the task): the requests begun
	cause error           // mu: why the request's context ended early (cut off, the client gone); nil: it did not
	cur   *reqHandle      // mu: its handle
	group *weft.TaskGroup // mu: the connection's requests run in it

	// h2 is the connection's HTTP/2 state while it speaks HTTP/2
	// (h2_conn.go): the stop reaches it there.
	h2 atomic.Pointer[h2Conn]

	// watch is the task that watches the connection while the handler
	// runs (watch.go); nil when none, watchArmed until it starts.
	watch *weft.Promise[int]

	// reqStart is when the request being read began (its first byte; for
	// the first request, the accept), on the loop's clock.
	reqStart time.Time
	// rdl, wdl are the read and write deadlines last set (deadlineKey), to
	// skip setting them again.
	rdl, wdl int64
}

func (sv *serving) newConn(wc *weft.Conn) *conn {
	c := &conn{sv: sv, wc: wc}
	// RemoteAddr is never nil for an accepted connection, but a nil one
	// must not take the server down.
	if a := wc.RemoteAddr(); a != nil {
		c.remote = a.String()
	}
	sv.mu.Lock()
	sv.conns[c] = struct{}{}
	sv.mu.Unlock()
	return c
}

// stop asks c to end: at once if idle, after its response if busy.
func (c *conn) stop() {
	c.stopIt.Store(true)
	if h := c.h2.Load(); h != nil {
		h.shutdown()
		return
	}
	if c.idle.Load() {
		c.wc.Close()
	}
}

// cutOff ends c now: its request context (with the cause given) and its
// handler's task are cancelled, and its I/O fails. Any goroutine may call
// it.
func (c *conn) cutOff(cause error) {
	c.mu.Lock()
	c.cut = true
	if c.cause == nil {
		c.cause = cause
	}
	group := c.group
	var cancel context.CancelCauseFunc
	if h := c.cur; h != nil {
		if h.real == nil {
			// Made now, so that context.Cause finds the cause.
			h.real, h.cancel = context.WithCancelCause(c.base())
		}
		cancel = h.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	if group != nil {
		group.Cancel()
	}
	c.wc.Close()
}

// isCut reports whether the drain timeout cut c off.
func (c *conn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// base returns the context of c's requests: ConnContext's, or the
// serving's.
func (c *conn) base() context.Context {
	if c.ctx != nil {
		return c.ctx
	}
	return c.sv.base
}

func (c *conn) setState(s http.ConnState) {
	c.state = uint8(s)
	if hook := c.sv.s.ConnState; hook != nil && c.nc != nil {
		hook(c.nc, s)
	}
}

// serve is the connection's task. A panic anywhere in it (the handler's
// are answered in runHandler) ends this connection only: it is logged
// with its stack, the connection is closed, and Serve goes on.
func (c *conn) serve(t *weft.Task) error {
	sv := c.sv
	parked := false
	defer func() {
		if parked {
			return // c is the task's that resumes it
		}
		if r := recover(); r != nil {
			sv.log.Error("whttp: panic serving a connection; closing it", "remote", c.remote,
				"panic", r, "stack", string(debug.Stack()))
			c.stopIt.Store(true)
			c.abortClose()
		}
		c.finalize(t)
	}()
	c.t = t
	c.nc = c.wc.NetConn(t)
	if sv.tls != nil {
		c.startTLS(t) // ConnContext and ConnState see the TLS connection, as net/http's do
	}
	if cc := sv.s.ConnContext; cc != nil {
		ctx := cc(sv.base, c.nc)
		if ctx == nil {
			panic("whttp: Server.ConnContext returned nil")
		}
		c.ctx = ctx
	}
	c.setState(http.StateNew)
	if c.stopIt.Load() {
		return nil
	}
	// The connection's requests run in a group of their own, inside the
	// shield of serve's caller: the drain timeout cancels it (cut).
	return c.serveGroup(t, false, &parked)
}

// serveGroup serves c's requests in a group of their own (the requests'
// group: inside the shield of the task's Protect, so that only the drain
// timeout cancels it, through cut) until the connection should end, or
// until it waits for its next request with no task (parked). resumed: the
// task continues a parked connection whose first bytes have come.
func (c *conn) serveGroup(t *weft.Task, resumed bool, parked *bool) error {
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		c.mu.Lock()
		c.group = g
		c.mu.Unlock()
		*parked = c.run(t, resumed)
		return nil
	})
	if *parked {
		// Nothing of this task stays reachable from c while it waits (its
		// cell, its records, the requests' group): the resume sets them
		// anew.
		c.mu.Lock()
		c.group = nil
		c.mu.Unlock()
		c.t, c.nc = nil, nil
		// The last thing this task does with c: from here on a new task
		// (resume), perhaps already running, owns it.
		c.sv.group.GoWhenReadable(c.wc, func(t *weft.Task) error { return t.Protect(c.resume) })
	}
	return err
}

// resume is the task that continues a parked connection: its wait ended
// (the next request's bytes, the idle timeout, a close, the server's
// stop). It reads what came into the landing buffer and serves on, as
// serve does, with the same recovery and the same end.
func (c *conn) resume(t *weft.Task) error {
	parked := false
	defer func() {
		if parked {
			return
		}
		if r := recover(); r != nil {
			c.sv.log.Error("whttp: panic serving a connection; closing it", "remote", c.remote,
				"panic", r, "stack", string(debug.Stack()))
			c.stopIt.Store(true)
			c.abortClose()
		}
		c.finalize(t)
	}()
	c.t = t
	c.nc = c.wc.NetConn(t)
	if !c.readRequestStart(t, false) {
		return nil
	}
	return c.serveGroup(t, true, &parked)
}

// finalize closes the connection (if a panic has not already) and takes
// it off the server's list.
func (c *conn) finalize(t *weft.Task) {
	sv := c.sv
	defer func() {
		sv.mu.Lock()
		delete(sv.conns, c)
		delete(sv.hijacked, c)
		var idle func(struct{}, error) bool
		if len(sv.conns) == 0 {
			idle = sv.idle
		}
		sv.mu.Unlock()
		if idle != nil {
			idle(struct{}{}, nil)
		}
	}()
	defer func() {
		if r := recover(); r != nil { // in a ConnState hook, say
			sv.log.Error("whttp: panic closing a connection", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
			c.wc.Close()
		}
	}()
	c.close(t)
}

// run serves requests until the connection should end, or until it is
// idle and may wait with no task (it reports parked: the caller hands c to
// GoWhenReadable). resumed: c was parked, and its next request's first
// bytes are in (resume).
func (c *conn) run(t *weft.Task, resumed bool) (parked bool) {
	sv := c.sv
	s := sv.s
	if !resumed {
		c.reqStart = t.Now()
		if c.tls != nil {
			if err := c.handshake(t, c.headerDeadline()); err != nil {
				return false
			}
			if c.tls.state.NegotiatedProtocol == "h2" {
				c.serveH2TLS(t)
				return false
			}
		}
	}
	for n := 0; ; n++ {
		if !resumed || n > 0 {
			switch c.waitRequest(t, n == 0 && !resumed) {
			case waitEnd:
				return false
			case waitPark:
				return true
			}
		}
		if n == 0 && !resumed && c.h2cPreface(t) {
			return false
		}
		ok := c.serveRequest(t)
		if !ok || c.stopIt.Load() || s.DisableKeepAlives {
			return false
		}
	}
}

// What waitRequest found.
const (
	waitEnd  = iota // the connection should end
	waitGo          // a request has begun: serve it
	waitPark        // idle: wait for the next request with no task
)

// headerDeadline is when the header of the request begun at c.reqStart
// must be in: ReadHeaderTimeout or ReadTimeout, the sooner.
func (c *conn) headerDeadline() time.Time {
	s := c.sv.s
	d := s.ReadHeaderTimeout
	if d <= 0 || (s.ReadTimeout > 0 && s.ReadTimeout < d) {
		d = s.ReadTimeout
	}
	if d <= 0 {
		return time.Time{}
	}
	return c.reqStart.Add(d)
}

// setReadDeadline sets the read deadline unless it is set already.
func (c *conn) setReadDeadline(d time.Time) {
	if k := deadlineKey(d); k != c.rdl {
		c.rdl = k
		c.wc.SetReadDeadline(d)
	}
}

// setWriteDeadline sets the write deadline unless it is set already.
func (c *conn) setWriteDeadline(d time.Time) {
	if k := deadlineKey(d); k != c.wdl {
		c.wdl = k
		c.wc.SetWriteDeadline(d)
	}
}

// deadlineKey is d in nanoseconds, 0 for none.
func deadlineKey(d time.Time) int64 {
	if d.IsZero() {
		return 0
	}
	return d.UnixNano()
}

// waitRequest waits for the next request to begin, holding no reqState
// while it waits, and sets the deadline of its header. A keep-alive
// connection of plain HTTP/1.1 with no pipelined request buffered does
// not wait in its task: waitRequest readies it to wait with none (idle,
// its state and deadline set) and reports waitPark.
func (c *conn) waitRequest(t *weft.Task, first bool) int {
	if c.st != nil && c.st.in.buffered() > 0 {
		// A pipelined request is already here.
		c.markStart(t)
		c.setReadDeadline(c.headerDeadline())
		return waitGo
	}
	if c.stopIt.Load() {
		return waitEnd
	}
	if c.release() != nil {
		return waitEnd
	}
	var deadline, now time.Time
	if first {
		deadline = c.headerDeadline() // from the accept
	} else if d := c.sv.s.idleTimeout(); d > 0 {
		now = t.Now()
		deadline = now.Add(d)
	}
	c.setState(http.StateIdle)
	c.setReadDeadline(deadline)
	c.idle.Store(true)
	if c.stopIt.Load() {
		c.idle.Store(false)
		return waitEnd
	}
	if !first && c.tls == nil && c.sv.group != nil {
		// A busy keep-alive connection's next request comes within
		// moments: the connection waits for it in its task for up to
		// parkAfter, and only one idle for longer parks (a task per
		// request would cost a busy connection more than it saves).
		if now.IsZero() {
			now = t.Now()
		}
		if linger := now.Add(parkAfter); deadline.IsZero() || linger.Before(deadline) {
			c.setReadDeadline(linger)
			land := getLand()
			n, err := c.nc.Read(land[:])
			if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
				if !c.startRequest(t, land, n, err, false) {
					return waitEnd
				}
				return waitGo
			}
			putLand(land)
			c.setReadDeadline(deadline)
		}
		return waitPark // idle stays set: the stop closes c, which ends the wait
	}
	if !c.readRequestStart(t, first) {
		return waitEnd
	}
	return waitGo
}

// readRequestStart reads the first bytes of a request into a landing
// buffer, c being idle, and readies c to serve it. It reports false if the
// connection should end (the client closed it, an error, the idle
// timeout, the server's stop).
func (c *conn) readRequestStart(t *weft.Task, first bool) bool {
	land := getLand()
	n, err := c.nc.Read(land[:])
	return c.startRequest(t, land, n, err, first)
}

// startRequest readies c to serve the request whose first n bytes a read
// into land returned (with err), as readRequestStart says, and gives land
// back.
func (c *conn) startRequest(t *weft.Task, land *[landSize]byte, n int, err error, first bool) bool {
	c.idle.Store(false)
	if n == 0 || err != nil || c.stopIt.Load() {
		putLand(land)
		return false
	}
	c.setState(http.StateActive)
	c.acquire()
	in := &c.st.in
	in.w = copy(in.buf, land[:n])
	putLand(land)
	if !first {
		c.markStart(t)
		c.setReadDeadline(c.headerDeadline())
	}
	return true
}

// markStart notes that a request begins now, when a timeout needs to know.
func (c *conn) markStart(t *weft.Task) {
	if s := c.sv.s; s.ReadHeaderTimeout > 0 || s.ReadTimeout > 0 {
		c.reqStart = t.Now()
	}
}

// acquire gives c a reqState.
func (c *conn) acquire() {
	if c.st == nil {
		c.st = getState(c.nc)
	}
}

// release sends what is written and gives c's reqState back, unless it
// holds input not yet read.
func (c *conn) release() error {
	st := c.st
	if st == nil {
		return nil
	}
	err := st.bw.Flush()
	if st.in.buffered() == 0 {
		c.st = nil
		putState(st)
	}
	return err
}

// close ends the connection. Unless it was cut off or closed while idle,
// it flushes, shuts the writing side down and reads out what the client
// still sends for a moment: closing a socket with unread input makes the
// kernel reset the connection, which can destroy a response the client has
// not read yet.
func (c *conn) close(t *weft.Task) {
	if c.state == uint8(http.StateClosed) {
		return // closed at once already (abortClose)
	}
	if c.hijacked {
		c.abortClose() // the connection is the hijacker's: the state only
		return
	}
	if !c.isCut() && !(c.stopIt.Load() && c.state == uint8(http.StateIdle)) && c.nc != nil {
		if c.st != nil {
			c.st.bw.Flush()
		}
		c.wc.SetWriteDeadline(t.Now().Add(closeLinger))
		if c.tls != nil {
			c.tls.conn.CloseWrite(t)
		} else {
			c.wc.CloseWrite()
		}
		c.wc.SetReadDeadline(t.Now().Add(closeLinger))
		scratch := getLand()
		for range 512 {
			if _, err := c.nc.Read(scratch[:]); err != nil {
				break
			}
		}
		putLand(scratch)
	}
	c.abortClose()
}

// abortClose closes the connection at once, sending what is written, and
// gives its state back.
func (c *conn) abortClose() {
	if c.hijacked {
		if st := c.st; st != nil {
			c.st = nil
			putState(st)
		}
		return
	}
	if st := c.st; st != nil {
		c.st = nil
		if c.nc != nil && !c.isCut() {
			st.bw.Flush()
		}
		putState(st)
	}
	c.wc.Close()
	if c.state != uint8(http.StateClosed) {
		c.setState(http.StateClosed)
	}
}
