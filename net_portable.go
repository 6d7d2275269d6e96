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
	"io"
	"net"
	"os"
	"sync"
	"time"
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

// deadlineCall is blockingCall for a call that a deadline interrupts:
// setDeadline is the object's SetDeadline, SetReadDeadline or
// SetWriteDeadline.
func (t *Task) deadlineCall(call func(), setDeadline func(time.Time) error) error {
	return t.blockingCall(call,
		func() { setDeadline(aLongTimeAgo) },
		func() { setDeadline(time.Time{}) })
}

type portableListener struct {
	ln      net.Listener
	network string
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
	return &portableListener{ln: ln, network: network}, nil
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
		return &portableConn{c: c, network: pl.network}, nil
	}
	var err error
	setDeadline := func(time.Time) error { return nil }
	if d, ok := pl.ln.(deadliner); ok {
		setDeadline = d.SetDeadline
	}
	werr := t.deadlineCall(func() { c, err = pl.ln.Accept() }, setDeadline)
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
	return &portableConn{c: c, network: pl.network}, nil
}

type portableConn struct {
	c       net.Conn
	network string
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
	return &portableConn{c: c, network: network}, nil
}

func (pc *portableConn) read(t *Task, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var err error
	werr := t.deadlineCall(func() { n, err = pc.c.Read(b) }, pc.c.SetReadDeadline)
	if werr != nil {
		if n > 0 {
			return n, nil // data arrived as we gave up: not lost
		}
		return 0, opError("read", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
	}
	return n, err
}

func (pc *portableConn) write(t *Task, b []byte) (int, error) {
	var n int
	var err error
	werr := t.deadlineCall(func() { n, err = pc.c.Write(b) }, pc.c.SetWriteDeadline)
	if werr != nil {
		return n, opError("write", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
	}
	return n, err
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
	var err error
	werr := t.deadlineCall(func() { written, err = rf.ReadFrom(src) }, pc.c.SetWriteDeadline)
	if werr != nil {
		return written, true, opError("sendfile", pc.network, pc.c.LocalAddr(), pc.c.RemoteAddr(), werr)
	}
	return written, true, err
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
	return &portablePacketConn{c: c, network: network}, nil
}

func (pp *portablePacketConn) readFrom(t *Task, b []byte) (int, net.Addr, error) {
	var n int
	var from net.Addr
	var err error
	werr := t.deadlineCall(func() { n, from, err = pp.c.ReadFrom(b) }, pp.c.SetReadDeadline)
	if werr != nil {
		if from != nil {
			return n, from, nil // a datagram arrived as we gave up: not lost
		}
		return 0, nil, opError("read", pp.network, pp.c.LocalAddr(), nil, werr)
	}
	return n, from, err
}

func (pp *portablePacketConn) writeTo(t *Task, b []byte, addr net.Addr) (int, error) {
	var n int
	var err error
	werr := t.deadlineCall(func() { n, err = pp.c.WriteTo(b, addr) }, pp.c.SetWriteDeadline)
	if werr != nil {
		return n, opError("write", pp.network, pp.c.LocalAddr(), addr, werr)
	}
	return n, err
}

func (pp *portablePacketConn) localAddr() net.Addr { return pp.c.LocalAddr() }
func (pp *portablePacketConn) close() error        { return pp.c.Close() }

// portableFile is a pipe end as an *os.File, which the Go runtime's own
// poller serves when the fd is non-blocking, so deadlines interrupt it.
type portableFile struct{ f *os.File }

func (pf *portableFile) read(t *Task, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var err error
	werr := t.deadlineCall(func() { n, err = pf.f.Read(b) }, pf.f.SetReadDeadline)
	if werr != nil {
		if n > 0 {
			return n, nil
		}
		return 0, &os.PathError{Op: "read", Path: pf.f.Name(), Err: werr}
	}
	if err == io.EOF {
		return n, io.EOF
	}
	return n, err
}

func (pf *portableFile) write(t *Task, b []byte) (int, error) {
	var n int
	var err error
	werr := t.deadlineCall(func() { n, err = pf.f.Write(b) }, pf.f.SetWriteDeadline)
	if werr != nil {
		return n, &os.PathError{Op: "write", Path: pf.f.Name(), Err: werr}
	}
	return n, err
}

func (pf *portableFile) close() error { return pf.f.Close() }
