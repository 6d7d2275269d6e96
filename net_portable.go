package weft

// The portable I/O layer: the net and os packages' objects, with each
// blocking call on a helper goroutine of its own (it may block for as long
// as a connection is idle, so it cannot take a place in the bounded Offload
// pool). The task waits for the call as external work. If the task is
// cancelled, the call is interrupted with a deadline in the past, and the
// task waits, cancellation held back, until the helper has returned: the
// call uses the caller's buffer, which must not be touched after we return.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

// aLongTimeAgo is a deadline that has passed: it makes a blocked call
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

func goStart(f func()) { go f() }

// blockingCall runs call on a helper goroutine and suspends t until it
// returns. If t is cancelled meanwhile, interrupt makes call return early,
// t waits for it, reset undoes interrupt, and the cause is returned.
func (t *Task) blockingCall(call, interrupt, reset func()) error {
	if err := t.cancelPoint(); err != nil {
		return err
	}
	if err := t.rs.checkIO("blocking I/O"); err != nil {
		return err
	}
	l := t.loop
	if l.aborted {
		return errAborted
	}
	op := &extOp{t: t, fin: make(chan struct{})}
	l.startExternal(op, goStart, call)
	err := t.waitExternal(op)
	if err != nil {
		t.finishExternal(op, interrupt)
		reset()
	}
	return err
}

// ioGate is one direction (reads, writes, accepts) of a net or os object
// on which several tasks may wait at once, each through a helper goroutine
// blocked in a call of its own. Interrupting one of those calls means
// setting a deadline in the past on the shared object, which ends every
// call of that direction: so the deadline is cleared only when the last
// task that set it has had its call back (n counts them), and a call that
// returned a timeout although its task was not interrupted was caught by
// another task's interrupt: its task waits until no interrupt is in
// progress (calm) and calls again. (Each task used to clear the deadline
// after its own interrupt, undoing another's that was still under way:
// that task's call then waited for ever.) weft's own deadlines
// (net_deadline.go) never reach the object: they interrupt the tasks, so
// every timeout a call returns comes from an interrupt.
type ioGate struct {
	apply func(time.Time) error // the object's SetReadDeadline, SetWriteDeadline or SetDeadline
	mu    sync.Mutex
	n     int    // guarded by mu: tasks whose interrupt is in progress
	calm  *Event // guarded by mu: set when n returns to 0; nil while n is 0
}

func newGate(set func(time.Time) error) *ioGate { return &ioGate{apply: set} }

// call runs call on a helper goroutine and suspends t until it returns
// (blockingCall), interrupting it through the gate if t is interrupted.
func (g *ioGate) call(t *Task, call func()) error {
	return t.blockingCall(call, g.interrupt, g.reset)
}

// interrupt makes every call of g's direction return now.
func (g *ioGate) interrupt() {
	g.mu.Lock()
	g.n++
	if g.n == 1 {
		g.calm = new(Event)
		g.apply(aLongTimeAgo)
	}
	g.mu.Unlock()
}

// reset ends an interrupt whose call has returned; the last one clears
// the deadline and lets the calls caught in passing go again.
func (g *ioGate) reset() {
	g.mu.Lock()
	g.n--
	if g.n > 0 {
		g.mu.Unlock()
		return
	}
	g.apply(time.Time{})
	calm := g.calm
	g.calm = nil
	g.mu.Unlock()
	calm.Set()
}

// caught reports whether err, returned by a call whose task was not
// interrupted, is another task's interrupt caught in passing: then t waits
// until no interrupt is in progress and should call again (unless the
// wait returns an error: t's cancellation). A Conn's caller checks t's
// own deadline before it calls again (portableConn.passed).
func (g *ioGate) caught(t *Task, err error) (again bool, werr error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false, nil
	}
	g.mu.Lock()
	calm := g.calm
	g.mu.Unlock()
	if calm != nil {
		if err := calm.Wait(t); err != nil {
			return false, err
		}
	}
	return true, nil
}

type portableListener struct {
	ln      net.Listener
	network string
	accepts *ioGate // nil if ln has no deadlines
	mu      sync.Mutex
	pending net.Conn // guarded by mu: accepted by a call that was cancelled; the next Accept gets it
	closed  bool     // guarded by mu
}

type deadliner interface{ SetDeadline(time.Time) error }

func listenPortable(t *Task, network, address string, cfg *sockConfig) (listenerImpl, error) {
	if _, err := parseNetwork(network, true); err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	ctx := t.Context()
	lc := cfg.netListenConfig() // a ListenConfig's options (net_config.go)
	ln, err := Offload(t, func() (net.Listener, error) {
		ln, err := lc.Listen(ctx, network, address)
		if err == nil {
			err = cfg.relisten(ln)
		}
		return ln, err
	})
	if err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	pl := &portableListener{ln: ln, network: network}
	if d, ok := ln.(deadliner); ok {
		pl.accepts = newGate(d.SetDeadline)
	}
	return pl, nil
}

func (pl *portableListener) addr() net.Addr { return pl.ln.Addr() }

// close closes the listener and a connection accepted by a cancelled
// Accept that nobody took.
func (pl *portableListener) close() error {
	pl.mu.Lock()
	pl.closed = true
	if pl.pending != nil {
		pl.pending.Close()
		pl.pending = nil
	}
	pl.mu.Unlock()
	return pl.ln.Close()
}

func (pl *portableListener) accept(t *Task) (connImpl, error) {
	pl.mu.Lock()
	c := pl.pending
	pl.pending = nil
	pl.mu.Unlock()
	if c != nil {
		return newPortableConn(c, pl.network), nil
	}
	var err error
	var werr error
	for {
		if pl.accepts == nil {
			werr = t.blockingCall(func() { c, err = pl.ln.Accept() }, func() {}, func() {})
			break
		}
		werr = pl.accepts.call(t, func() { c, err = pl.ln.Accept() })
		if werr != nil || c != nil {
			break
		}
		again, gerr := pl.accepts.caught(t, err)
		if !again {
			werr = gerr
			break
		}
	}
	if werr != nil {
		if c != nil {
			// Accepted just as we gave up: keep it for the next call, or
			// close it if the listener is closed (nobody will call).
			pl.mu.Lock()
			if pl.closed {
				c.Close()
			} else {
				pl.pending = c
			}
			pl.mu.Unlock()
		}
		return nil, opError("accept", pl.network, pl.ln.Addr(), nil, werr)
	}
	if err != nil {
		return nil, err
	}
	return newPortableConn(c, pl.network), nil
}

type portableConn struct {
	c       net.Conn
	network string
	rd, wr  *ioGate
	dl      *connDeadlines // the Conn's, for the deadline checks of calls made again
}

func newPortableConn(c net.Conn, network string) *portableConn {
	return &portableConn{c: c, network: network, rd: newGate(c.SetReadDeadline), wr: newGate(c.SetWriteDeadline)}
}

func (pc *portableConn) bindDeadlines(dl *connDeadlines) { pc.dl = dl }

// passed is t's deadline check for direction m before each call (t is on
// the Conn's loop: Conn.Read, Conn.Write and TLSConn moved it), as
// netFD.wait's before each wait. A deadline's timer interrupts only the
// tasks that are waiting when it fires: one that was runnable then (a
// TLSConn's reader just handed its lock) finds the deadline passed here,
// or its call, which no timer will interrupt any more, would wait for
// ever.
func (pc *portableConn) passed(t *Task, m poller.Mode) error {
	if pc.dl == nil {
		return nil
	}
	return pc.dl.expired(t.loop, m)
}

func dialPortable(t *Task, network, address string, cfg *sockConfig) (connImpl, error) {
	if _, err := parseNetwork(network, true); err != nil {
		return nil, opError("dial", network, nil, nil, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var c net.Conn
	var err error
	d := cfg.netDialer() // a Dialer's options (net_config.go)
	werr := t.blockingCall(func() { c, err = d.DialContext(ctx, network, address) }, cancel, func() {})
	if werr != nil {
		if c != nil {
			c.Close()
		}
		return nil, opError("dial", network, nil, nil, werr)
	}
	if err != nil {
		return nil, err
	}
	return newPortableConn(c, network), nil
}

func (pc *portableConn) read(t *Task, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if err := pc.passed(t, poller.Read); err != nil {
			return 0, opError("read", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), err)
		}
		var n int
		var err error
		werr := pc.rd.call(t, func() { n, err = pc.c.Read(b) })
		if werr != nil {
			if n > 0 {
				return n, nil // data arrived as we gave up: not lost
			}
			return 0, opError("read", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
		}
		if n == 0 {
			if again, gerr := pc.rd.caught(t, err); again {
				continue
			} else if gerr != nil {
				return 0, opError("read", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), gerr)
			}
		}
		return n, err
	}
}

func (pc *portableConn) write(t *Task, b []byte) (int, error) {
	written := 0
	for {
		if err := pc.passed(t, poller.Write); err != nil {
			return written, opError("write", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), err)
		}
		var n int
		var err error
		werr := pc.wr.call(t, func() { n, err = pc.c.Write(b[written:]) })
		written += n
		if werr != nil {
			return written, opError("write", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
		}
		if written < len(b) {
			if again, gerr := pc.wr.caught(t, err); again {
				continue
			} else if gerr != nil {
				return written, opError("write", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), gerr)
			}
		}
		return written, err
	}
}

// sendFile copies from f through the net package's own io.ReaderFrom
// (sendfile or splice where it has them), on a helper goroutine.
func (pc *portableConn) sendFile(t *Task, f *os.File, n int64) (int64, bool, error) {
	rf, ok := pc.c.(io.ReaderFrom)
	if !ok {
		return 0, false, nil
	}
	var src io.Reader = f
	if n >= 0 {
		src = io.LimitReader(f, n)
	}
	var written int64
	for {
		// The write gate (shared with Write) interrupts the call for a
		// deadline or a cancellation; a call interrupted by another
		// task's deadline is made again, going on where the file's
		// offset (and the LimitedReader's count) stopped.
		if err := pc.passed(t, poller.Write); err != nil {
			return written, true, opError("sendfile", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), err)
		}
		var m int64
		var err error
		werr := pc.wr.call(t, func() { m, err = rf.ReadFrom(src) })
		written += m
		if werr != nil {
			return written, true, opError("sendfile", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
		}
		if err != nil {
			if again, gerr := pc.wr.caught(t, err); again {
				continue
			} else if gerr != nil {
				return written, true, opError("sendfile", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), gerr)
			}
		}
		return written, true, err
	}
}

func (pc *portableConn) closeWrite() error {
	if cw, ok := pc.c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return opError("close", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), errNoHalfClose)
}

func (pc *portableConn) close() error         { return pc.c.Close() }
func (pc *portableConn) localAddr() net.Addr  { return pc.c.LocalAddr() }
func (pc *portableConn) remoteAddr() net.Addr { return pc.c.RemoteAddr() }

type portablePacketConn struct {
	c       net.PacketConn
	network string
	rd, wr  *ioGate
}

func listenPacketPortable(t *Task, network, address string, cfg *sockConfig) (packetImpl, error) {
	if _, err := parseNetwork(network, false); err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	ctx := t.Context()
	lc := cfg.netListenConfig()
	c, err := Offload(t, func() (net.PacketConn, error) {
		return lc.ListenPacket(ctx, network, address)
	})
	if err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	return &portablePacketConn{c: c, network: network, rd: newGate(c.SetReadDeadline), wr: newGate(c.SetWriteDeadline)}, nil
}

func (pp *portablePacketConn) readFrom(t *Task, b []byte) (int, net.Addr, error) {
	for {
		var n int
		var from net.Addr
		var err error
		werr := pp.rd.call(t, func() { n, from, err = pp.c.ReadFrom(b) })
		if werr != nil {
			if from != nil {
				return n, from, nil // a datagram arrived as we gave up: not lost
			}
			return 0, nil, opError("read", pp.network, pp.c.LocalAddr(), nil, werr)
		}
		if from == nil {
			if again, gerr := pp.rd.caught(t, err); again {
				continue
			} else if gerr != nil {
				return 0, nil, opError("read", pp.network, pp.c.LocalAddr(), nil, gerr)
			}
		}
		return n, from, err
	}
}

func (pp *portablePacketConn) writeTo(t *Task, b []byte, addr net.Addr) (int, error) {
	for {
		var n int
		var err error
		werr := pp.wr.call(t, func() { n, err = pp.c.WriteTo(b, addr) })
		if werr != nil {
			return n, opError("write", pp.network, pp.c.LocalAddr(), addr, werr)
		}
		if n == 0 && err != nil {
			if again, gerr := pp.wr.caught(t, err); again {
				continue
			} else if gerr != nil {
				return 0, opError("write", pp.network, pp.c.LocalAddr(), addr, gerr)
			}
		}
		return n, err
	}
}

func (pp *portablePacketConn) localAddr() net.Addr { return pp.c.LocalAddr() }
func (pp *portablePacketConn) close() error        { return pp.c.Close() }

// portableFile is a pipe end as an *os.File, which the Go runtime's own
// poller serves when the fd is non-blocking, so deadlines interrupt it.
type portableFile struct {
	f      *os.File
	rd, wr *ioGate
}

func newPortableFile(f *os.File) *portableFile {
	return &portableFile{f: f, rd: newGate(f.SetReadDeadline), wr: newGate(f.SetWriteDeadline)}
}

func (pf *portableFile) read(t *Task, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		var n int
		var err error
		werr := pf.rd.call(t, func() { n, err = pf.f.Read(b) })
		if werr != nil {
			if n > 0 {
				return n, nil
			}
			return 0, &os.PathError{Op: "read", Path: pf.f.Name(), Err: werr}
		}
		if n == 0 {
			if again, gerr := pf.rd.caught(t, err); again {
				continue
			} else if gerr != nil {
				return 0, &os.PathError{Op: "read", Path: pf.f.Name(), Err: gerr}
			}
		}
		if err == io.EOF {
			return n, io.EOF
		}
		return n, err
	}
}

func (pf *portableFile) write(t *Task, b []byte) (int, error) {
	written := 0
	for {
		var n int
		var err error
		werr := pf.wr.call(t, func() { n, err = pf.f.Write(b[written:]) })
		written += n
		if werr != nil {
			return written, &os.PathError{Op: "write", Path: pf.f.Name(), Err: werr}
		}
		if written < len(b) {
			if again, gerr := pf.wr.caught(t, err); again {
				continue
			} else if gerr != nil {
				return written, &os.PathError{Op: "write", Path: pf.f.Name(), Err: gerr}
			}
		}
		return written, err
	}
}

func (pf *portableFile) close() error { return pf.f.Close() }
