package weft

// GoConn: a Conn as a net.Conn for plain goroutines (libraries that run
// goroutines of their own over a net.Conn: HTTP/2 and gRPC transports,
// WebSocket ping and close handling, database drivers given a dialer).
//
// A goroutine cannot run a Conn's operations itself: they suspend a
// task, and the Conn's descriptor, deadlines and registrations are its
// loop's. So a goroutine's call is a request to that loop (external.go:
// postForGoroutine): the loop starts a task for it, the task does the
// operation as any task would (suspending while it waits, at the
// deadlines and under the Close of the Conn), and answers the goroutine,
// which blocks on a channel meanwhile: no busy wait, nothing else
// blocked. The task keeps the Run alive while the goroutine waits. A call
// that comes after the Run has ended (or as it ends) is answered with
// net.ErrClosed: it never hangs. Called from a task of the Conn's Run,
// the methods act for that task, as LoopConn's do.

import (
	"net"
	"sync"
	"time"
)

// GoConn returns a net.Conn for c whose every method may be called from
// any goroutine. From a plain goroutine, Read and Write block that
// goroutine (and nothing else) while c's loop does the operation on a task
// of its own, and return what c.Read and c.Write return: an error matching
// os.ErrDeadlineExceeded past a deadline, one matching net.ErrClosed after
// Close (which wakes them), io.EOF at the end of the stream. Deadlines set
// from any goroutine apply to operations already waiting, as net.Conn's
// do. While a goroutine waits in one of them, the Run stays alive; a call
// made once the Run has ended returns an error matching net.ErrClosed.
// From a task of c's Run, the methods act for that task, suspending it as
// c.Read and c.Write do (they are then cancellation points, returning the
// cause); from a task of another Run they panic with a "weft:" message,
// since they would block that task's loop. GoConn itself does not
// suspend. The net.Conn also has c's CloseWrite.
//
// Use it for code that calls the net.Conn from goroutines of its own;
// code that runs in tasks should use NetConn (one task) or LoopConn
// (several tasks of the Run), which do not start a task per call. Each
// call from a goroutine costs a request through c's loop's inbox, the
// start of a task and a channel hand-off back, a few microseconds more
// than a net.Conn's (see the README's figures).
//
// Several goroutines may use it at once, as a net.Conn. As with c itself,
// concurrent Writes are not ordered against each other: a Write that
// waits for room may be interleaved with another's bytes.
func (c *Conn) GoConn() net.Conn { return &goConn{c: c} }

type goConn struct{ c *Conn }

// directIO is a Conn's implementation that a plain goroutine may try
// first itself (net_fd_linux.go: the epoll backend).
type directIO interface {
	readNow(b []byte) (n int, err error, done bool)
	writeNow(b []byte) int
}

// passed reports whether the deadline d has passed, on c's loop's clock.
func (c *Conn) passed(d *ioDeadline) bool {
	w := d.when.Load()
	return w != noDeadline && w <= c.loop.clock.Nanotime()
}

func (g *goConn) Read(b []byte) (int, error) {
	c := g.c
	if t := taskOfRun(c.loop, "Read"); t != nil {
		return c.Read(t, b)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if d, ok := c.impl.(directIO); ok && !c.passed(&c.dl.rd) {
		if n, err, done := d.readNow(b); done {
			return n, err
		}
	}
	var n int
	var err error
	if !forGoroutine(c.loop, goReadPC, func(t *Task) { n, err = c.Read(t, b) }) {
		return 0, opError("read", c.network, c.LocalAddr(), c.RemoteAddr(), net.ErrClosed)
	}
	return n, err
}

func (g *goConn) Write(b []byte) (int, error) {
	c := g.c
	if t := taskOfRun(c.loop, "Write"); t != nil {
		return c.Write(t, b)
	}
	done := 0
	if d, ok := c.impl.(directIO); ok && len(b) > 0 && !c.passed(&c.dl.wr) {
		if done = d.writeNow(b); done == len(b) {
			return done, nil
		}
	}
	var n int
	var err error
	if !forGoroutine(c.loop, goWritePC, func(t *Task) { n, err = c.Write(t, b[done:]) }) {
		return done, opError("write", c.network, c.LocalAddr(), c.RemoteAddr(), net.ErrClosed)
	}
	return done + n, err
}

// CloseWrite shuts down the writing side, as c.CloseWrite does, on c's
// loop (so that it never meets the descriptor's release).
func (g *goConn) CloseWrite() error {
	c := g.c
	if t := taskOfRun(c.loop, "CloseWrite"); t != nil {
		return c.CloseWrite()
	}
	var err error
	if !forGoroutine(c.loop, goCloseWritePC, func(t *Task) { err = c.CloseWrite() }) {
		return opError("close", c.network, c.LocalAddr(), c.RemoteAddr(), net.ErrClosed)
	}
	return err
}

func (g *goConn) Close() error                       { return g.c.Close() }
func (g *goConn) LocalAddr() net.Addr                { return g.c.LocalAddr() }
func (g *goConn) RemoteAddr() net.Addr               { return g.c.RemoteAddr() }
func (g *goConn) SetDeadline(t time.Time) error      { return g.c.SetDeadline(t) }
func (g *goConn) SetReadDeadline(t time.Time) error  { return g.c.SetReadDeadline(t) }
func (g *goConn) SetWriteDeadline(t time.Time) error { return g.c.SetWriteDeadline(t) }

// Names for the tasks that serve a goroutine's calls, in reports.
func goConnRead()       {}
func goConnWrite()      {}
func goConnCloseWrite() {}

var (
	goReadPC       = funcPC(goConnRead)
	goWritePC      = funcPC(goConnWrite)
	goCloseWritePC = funcPC(goConnCloseWrite)
)

// taskOfRun returns the task of l's Run that calls, or nil from a plain
// goroutine; from a task of another Run it panics (a goroutine's wait
// there would block that task's loop).
func taskOfRun(l *loop, op string) *Task {
	t := currentTask()
	if t != nil && t.rs != l.rs {
		panic("weft: " + op + " on a GoConn called from a task of another Run: it would block that task's loop; use the Conn from its own Run, or call it from a plain goroutine")
	}
	return t
}

// goCall is a plain goroutine's request to a loop (forGoroutine), reused.
type goCall struct {
	f     func(t *Task)
	ok    bool          // f returned
	panic any           // f panicked with this: raised again on the goroutine
	done  chan struct{} // capacity 1: the answer
}

var goCalls = sync.Pool{New: func() any { return &goCall{done: make(chan struct{}, 1)} }}

// forGoroutine runs f on a task of l's Run for the calling goroutine,
// which blocks until f has returned, and reports true; or false, without
// running f, if the Run has ended (or ends before l gets the request). A
// panic in f (a misuse) is raised again on the goroutine. user names the
// work in reports.
func forGoroutine(l *loop, user uintptr, f func(t *Task)) bool {
	call := goCalls.Get().(*goCall)
	call.f, call.ok, call.panic = f, false, nil
	l.postForGoroutine(func() {
		l.startForGoroutine(call.run, user)
	}, call.answer)
	<-call.done
	ok, p := call.ok, call.panic
	call.f, call.panic = nil, nil
	goCalls.Put(call)
	if p != nil {
		panic(p)
	}
	return ok
}

// run is the task's side of a call.
func (call *goCall) run(t *Task) {
	defer func() {
		if r := recover(); r != nil {
			call.panic = r
		}
		call.answer()
	}()
	call.f(t)
	call.ok = true
}

func (call *goCall) answer() { call.done <- struct{}{} }
