package weft

// TLSConn: TLS on a Conn that several tasks (and, through GoConn,
// goroutines) may use at once: a reader task and a writer task, as HTTP/2
// and WebSockets need.
//
// crypto/tls's Conn assumes goroutines: it holds sync.Mutexes (the
// handshake's, the input's, the output's) across its calls into the
// connection under it. Over a Conn whose calls suspend a task (LoopConn),
// a task that suspends inside such a call keeps the mutex while its loop
// runs other tasks, and the first of them that enters the same tls.Conn
// (a reader sending an alert, which takes the output's mutex that a
// writer waiting for room holds) blocks the loop's goroutine on a mutex
// whose holder can only resume on that goroutine: the loop is stuck for
// good. No check in the Conn can prevent it: crypto/tls takes its
// mutexes on its own, from data it has buffered, without calling the
// Conn.
//
// So TLSConn never lets a task suspend inside crypto/tls once the
// handshake is done (the design of asyncio's sslproto and Trio's
// SSLStream, a "memory BIO"): crypto/tls runs over tlsBIO, an in-memory
// net.Conn of our own that never blocks. Its Read hands out the
// ciphertext received so far, and when there is none returns an error
// that is a net.Error with Timeout and Temporary true, which crypto/tls
// passes up without making it sticky (readRecordOrCCS, readFromUntil);
// its Write appends to an output buffer. Every call into crypto/tls is
// made holding mu, a weft Mutex, so one task at a time is inside it, and
// that task never suspends there; so crypto/tls's mutexes are never
// contended, and no loop can block on one. Everything that waits does so
// outside mu, on weft's own locks (which suspend the task, never the
// loop) and on the socket:
//
//   - Read calls crypto/tls under mu; when it needs more ciphertext, the
//     task leaves mu, reads the socket (one reader at a time, rmu) into
//     the input buffer, and calls crypto/tls again.
//   - Write encrypts a chunk under mu into the output buffer, then writes
//     the buffer to the socket outside mu (one flusher at a time, fmu, so
//     that records keep their order), chunk after chunk: a peer that stops
//     reading holds the writer, never the loop nor the reader. wmu keeps
//     one Write's records together.
//   - What crypto/tls writes while reading (an alert for a corrupt
//     record, the answer to a KeyUpdate) lands in the output buffer and is
//     written by the reader, or by the Write already flushing.
//   - The handshake is the one time a task suspends inside crypto/tls (its
//     errors are sticky, so it cannot be fed "nothing yet"): the task runs
//     it holding mu, and tlsBIO then reads and writes the socket itself.
//     Every other task waits for mu (and so never enters crypto/tls) until
//     it is over. Close from another task does not wait for mu: it closes
//     the socket, and the handshake fails at once.
//   - Close sends close_notify only if it can without waiting for another
//     task (crypto/tls's own Close skips it while a Write is in flight),
//     and closes the socket; tasks waiting on the socket or on the locks
//     then return net.ErrClosed.
//
// Every operation runs on the Conn's loop (a task moves there, and is
// pinned while inside, as Conn's operations do), so its state is that
// loop's and needs no other lock; every wait (for the locks, for the
// socket) honours the Conn's deadlines and is a cancellation point.
//
// Not supported: TLS 1.2 renegotiation (a client refuses a server's
// request, as crypto/tls's default RenegotiateNever does; a Config that
// asks for it is an error at the handshake), and QUIC.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

// TLSConn is a TLS connection over a Conn that several tasks of the Run
// may use at once, a reader and a writer say, and that never blocks a
// loop: unlike a tls.Conn over LoopConn, whose sync.Mutexes a task can
// hold across a suspension. Make one with TLSClient or TLSServer. Its Read
// and Write take the calling task and suspend it as Conn's do; LoopConn,
// NetConn and GoConn give it as a net.Conn, GoConn for plain goroutines.
//
// The handshake runs on the first Read or Write, or on Handshake. Its
// deadlines are the Conn's (SetDeadline and friends set them). TLS 1.2
// renegotiation is not supported: a client refuses a server's request (as
// crypto/tls does by default), and a Config whose Renegotiation is not
// tls.RenegotiateNever makes the handshake fail.
type TLSConn struct {
	c      *Conn
	tc     *tls.Conn // over bio; called only by the holder of mu
	bio    tlsBIO
	mu     Mutex // whoever holds it is the only task inside crypto/tls
	rmu    Mutex // one task reads the socket at a time
	wmu    Mutex // one Write at a time: its records go out together
	fmu    Mutex // one task writes the output buffer to the socket at a time
	closed atomic.Bool
	hsDone atomic.Bool
	hsErr  error               // the handshake's error, for good (under mu)
	state  tls.ConnectionState // once hsDone: crypto/tls's, taken as the handshake ended
	werr   error               // writing failed midway: the stream is cut, for good (c's loop)
	cfgErr error               // the Config asks for what TLSConn does not do
	rbuf   []byte              // the rmu holder's buffer for the socket
}

// TLSClient returns a TLSConn for the client side of c, as tls.Client
// does: cfg must set ServerName or InsecureSkipVerify. It does not
// suspend; the handshake is run by the first Read, Write or Handshake.
func TLSClient(c *Conn, cfg *tls.Config) *TLSConn {
	tc := newTLSConn(c)
	if cfg != nil && cfg.Renegotiation != tls.RenegotiateNever {
		tc.cfgErr = errTLSRenegotiation
	}
	tc.tc = tls.Client(&tc.bio, cfg)
	return tc
}

// TLSServer returns a TLSConn for the server side of c, as tls.Server
// does: cfg must hold a certificate (Certificates, GetCertificate or
// GetConfigForClient). It does not suspend.
func TLSServer(c *Conn, cfg *tls.Config) *TLSConn {
	tc := newTLSConn(c)
	tc.tc = tls.Server(&tc.bio, cfg)
	return tc
}

var errTLSRenegotiation = errors.New("weft: TLSConn does not support TLS renegotiation: Config.Renegotiation must be tls.RenegotiateNever")

func newTLSConn(c *Conn) *TLSConn {
	tc := &TLSConn{c: c}
	tc.bio.tc = tc
	return tc
}

// Handshake runs the TLS handshake if it has not run yet, suspending the
// task while it waits for the peer, and returns its error (the same error
// every later call returns: a failed handshake leaves the connection
// unusable, as crypto/tls's does). Read and Write run it themselves. It is
// a cancellation point; a handshake interrupted by a cancellation or a
// deadline fails for good.
func (tc *TLSConn) Handshake(t *Task) error {
	t.check("TLSConn.Handshake")
	sameLoop(t, tc.c.loop, "TLSConn")
	if tc.hsDone.Load() {
		return nil
	}
	return tc.do(t, "handshake", poller.Read|poller.Write, func() error { return tc.handshake(t) })
}

// Read reads decrypted data into b, suspending the task until some is
// available; it returns io.EOF once the peer has closed the connection
// (close_notify, or the stream's end at a record's boundary). It runs the
// handshake first if needed. It is a cancellation point: if the task is
// cancelled, Read returns the cause and nothing was consumed; past the
// read deadline it returns an error matching os.ErrDeadlineExceeded, and
// the connection stays usable. After Close it returns an error matching
// net.ErrClosed. Several tasks may read at once (each Read gets whole
// pieces of the stream, in no set order between them).
func (tc *TLSConn) Read(t *Task, b []byte) (int, error) {
	t.check("TLSConn.Read")
	sameLoop(t, tc.c.loop, "TLSConn")
	var n int
	err := tc.do(t, "read", poller.Read, func() error {
		var err error
		n, err = tc.read(t, b)
		return err
	})
	return n, err
}

// Write encrypts and writes all of b, suspending the task while the
// socket's buffer is full (a peer that stops reading holds the writing
// task, and neither its loop nor a reading task), and returns len(b). It
// runs the handshake first if needed. Writes of several tasks do not
// interleave: each one's records go out together. It is a cancellation
// point, and past the write deadline it returns an error matching
// os.ErrDeadlineExceeded. Then, and on a cancellation, it returns how
// much of b it encrypted: those records stay queued and go out, whole and
// in order, with the next Write (or before a close_notify), so that the
// stream stays usable (a tls.Conn's writing side fails for good after a
// write times out; this one does not). A failure of the socket itself
// does cut the stream: every later Write returns it. After Close, Write
// returns an error matching net.ErrClosed.
func (tc *TLSConn) Write(t *Task, b []byte) (int, error) {
	t.check("TLSConn.Write")
	sameLoop(t, tc.c.loop, "TLSConn")
	var n int
	err := tc.do(t, "write", poller.Write, func() error {
		var err error
		n, err = tc.write(t, b)
		return err
	})
	return n, err
}

// CloseWrite sends close_notify, so that the peer reads io.EOF, and
// writes nothing more, as tls.Conn's CloseWrite; the Conn stays open for
// reading (its own writing side is not shut down). It suspends the task
// until close_notify is written, and fails before the handshake is done.
func (tc *TLSConn) CloseWrite(t *Task) error {
	t.check("TLSConn.CloseWrite")
	sameLoop(t, tc.c.loop, "TLSConn")
	return tc.do(t, "close", poller.Write, func() error { return tc.closeWrite(t) })
}

// Close closes the connection. From a task of the Run, when no other
// task is writing and the handshake is done, it first sends close_notify,
// suspending the task until that is written (at most 5 s, as crypto/tls
// allows it); otherwise, and from any other goroutine, it closes at once.
// close_notify is a courtesy: a peer that has gone already does not make
// Close fail, which returns the Conn's Close error only. Tasks waiting in
// Read, Write or the handshake wake with an error matching net.ErrClosed.
// Later calls return an error matching net.ErrClosed.
func (tc *TLSConn) Close() error {
	if !tc.closed.CompareAndSwap(false, true) {
		return tc.opErr("close", net.ErrClosed)
	}
	if t := currentTask(); t != nil && t.rs == tc.c.loop.rs && tc.hsDone.Load() && (t.loop == tc.c.loop || !t.local) {
		tc.closeNotify(t)
	}
	return tc.c.Close()
}

// ConnectionState returns the TLS details of the connection, as
// tls.Conn's: the zero ConnectionState until the handshake is done. Any
// goroutine may call it; it does not suspend.
func (tc *TLSConn) ConnectionState() tls.ConnectionState {
	if !tc.hsDone.Load() {
		return tls.ConnectionState{}
	}
	return tc.state
}

// SetDeadline sets the Conn's read and write deadlines, which every wait
// of the TLSConn honours; see Conn.SetDeadline.
func (tc *TLSConn) SetDeadline(t time.Time) error { return tc.c.SetDeadline(t) }

// SetReadDeadline sets the Conn's read deadline; see Conn.SetDeadline.
func (tc *TLSConn) SetReadDeadline(t time.Time) error { return tc.c.SetReadDeadline(t) }

// SetWriteDeadline sets the Conn's write deadline; see Conn.SetDeadline.
func (tc *TLSConn) SetWriteDeadline(t time.Time) error { return tc.c.SetWriteDeadline(t) }

// LocalAddr returns the local address.
func (tc *TLSConn) LocalAddr() net.Addr { return tc.c.LocalAddr() }

// RemoteAddr returns the peer's address.
func (tc *TLSConn) RemoteAddr() net.Addr { return tc.c.RemoteAddr() }

// Conn returns the connection under tc.
func (tc *TLSConn) Conn() *Conn { return tc.c }

// do runs f for t on the Conn's loop, pinned there and registered with
// the deadlines of dirs for f's length (so that they interrupt every wait
// of f's: the locks' as well as the socket's); of both directions while f
// may run the handshake, which reads and writes.
func (tc *TLSConn) do(t *Task, op string, dirs poller.Mode, f func() error) error {
	c := tc.c
	if err := c.toHome(t); err != nil {
		return tc.opErr(op, err)
	}
	if !tc.hsDone.Load() {
		dirs = poller.Read | poller.Write
	}
	l := c.loop
	t.pin++
	defer func() { t.pin-- }()
	// The deadlines entered, in a fixed array: a slice grown by append
	// was two allocations a request for a server.
	var entered [2]*ioDeadline
	ne := 0
	defer func() {
		for _, d := range entered[:ne] {
			d.exit(l, t)
		}
	}()
	for _, d := range [2]struct {
		m poller.Mode
		d *ioDeadline
	}{{poller.Read, &c.dl.rd}, {poller.Write, &c.dl.wr}} {
		if dirs&d.m == 0 {
			continue
		}
		if err := d.d.enter(l, t); err != nil {
			return tc.opErr(op, err)
		}
		entered[ne] = d.d
		ne++
	}
	return f()
}

// lock takes m for t, first checking the deadline of direction m (one
// that passed while t was runnable is found here, as netFD.wait does) and
// that tc is open.
func (tc *TLSConn) lock(t *Task, m *Mutex, dir poller.Mode) error {
	if tc.closed.Load() {
		return net.ErrClosed
	}
	if err := tc.c.dl.expired(t.loop, dir); err != nil {
		return err
	}
	if err := m.Lock(t); err != nil {
		return err
	}
	if tc.closed.Load() {
		m.Unlock()
		return net.ErrClosed
	}
	return nil
}

// handshake runs the handshake for t, holding mu, if nobody has.
func (tc *TLSConn) handshake(t *Task) error {
	if tc.hsDone.Load() {
		return nil
	}
	if err := tc.lock(t, &tc.mu, poller.Read); err != nil {
		return tc.opErr("handshake", err)
	}
	defer tc.mu.Unlock()
	if tc.hsDone.Load() {
		return nil
	}
	if tc.hsErr != nil {
		return tc.hsErr
	}
	if tc.cfgErr != nil {
		tc.hsErr = tc.cfgErr
		return tc.hsErr
	}
	// t is registered with both deadlines (do).
	tc.bio.hs = t // tlsBIO waits on the socket for t meanwhile
	// A Background context: crypto/tls would watch a cancellable one from
	// a goroutine of its own and close the BIO from there.
	err := tc.tc.HandshakeContext(context.Background())
	tc.bio.hs = nil
	if err != nil {
		tc.hsErr = err
		return err
	}
	tc.state = tc.tc.ConnectionState() // mu held: nobody is inside crypto/tls
	tc.hsDone.Store(true)
	return nil
}

// read is Read, on the Conn's loop.
func (tc *TLSConn) read(t *Task, b []byte) (int, error) {
	if err := tc.handshake(t); err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if err := tc.lock(t, &tc.mu, poller.Read); err != nil {
			return 0, tc.opErr("read", err)
		}
		gen := tc.bio.inGen
		n, err := tc.tc.Read(b)
		tc.mu.Unlock()
		if len(tc.bio.out) > 0 {
			// An alert, a KeyUpdate's answer: sent now, unless a Write is
			// sending already (it sends these too).
			tc.flushFor(t)
		}
		if _, ok := err.(tlsWouldBlock); ok {
			if n > 0 {
				return n, nil
			}
			if err := tc.fill(t, gen); err != nil {
				return 0, tc.opErr("read", err)
			}
			continue
		}
		return n, err
	}
}

// fill waits for ciphertext from the socket and appends it to the BIO's
// input, unless some came since the caller's last try (gen): one task
// reads the socket at a time, the others wait for rmu and then find what
// it read.
func (tc *TLSConn) fill(t *Task, gen uint64) error {
	if err := tc.lock(t, &tc.rmu, poller.Read); err != nil {
		return err
	}
	defer tc.rmu.Unlock()
	b := &tc.bio
	if b.inGen != gen || b.inErr != nil || b.inEOF {
		return nil // something new for crypto/tls: try it
	}
	if tc.rbuf == nil {
		tc.rbuf = make([]byte, tlsReadBuf)
	}
	n, err := tc.c.impl.read(t, tc.rbuf)
	if n > 0 {
		b.appendIn(tc.rbuf[:n])
	}
	switch {
	case err == nil:
	case err == io.EOF:
		b.inEOF = true
		b.inGen++
	case isInterruption(err):
		// This task's cancellation or deadline: the connection is as it was.
		if n > 0 {
			return nil
		}
		return err
	default:
		b.inErr = err // the socket's end: crypto/tls reports it
		b.inGen++
	}
	return nil
}

// isInterruption reports whether err ended a wait of the task's own
// (a cancellation, a deadline) rather than the socket.
func isInterruption(err error) bool {
	return isCancellation(err) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errAborted)
}

// tlsReadBuf is what fill reads at once: a TLS record at its largest
// (16 KiB of data, 256 bytes of overhead, the header) and then some.
const tlsReadBuf = 32 << 10

// tlsWriteChunk is how much plaintext Write encrypts before it writes the
// records to the socket: it bounds the output buffer.
const tlsWriteChunk = 64 << 10

// write is Write, on the Conn's loop.
func (tc *TLSConn) write(t *Task, b []byte) (int, error) {
	if err := tc.handshake(t); err != nil {
		return 0, err
	}
	if err := tc.lock(t, &tc.wmu, poller.Write); err != nil {
		return 0, tc.opErr("write", err)
	}
	defer tc.wmu.Unlock()
	written := 0
	for written < len(b) {
		if tc.werr != nil {
			return written, tc.werr
		}
		if len(tc.bio.out) > 0 {
			// Room first: records an interrupted flush left, alerts.
			if err := tc.flush(t); err != nil {
				return written, err
			}
		}
		chunk := b[written:min(len(b), written+tlsWriteChunk)]
		if err := tc.lock(t, &tc.mu, poller.Write); err != nil {
			return written, tc.opErr("write", err)
		}
		n, err := tc.tc.Write(chunk)
		tc.mu.Unlock()
		written += n // encrypted: its records go out, now or with the next flush
		if err != nil {
			tc.flush(t) // an alert crypto/tls left, if any
			return written, err
		}
		if err := tc.flush(t); err != nil {
			return written, err
		}
	}
	return written, nil
}

// flush writes the BIO's output to the socket, waiting for fmu.
func (tc *TLSConn) flush(t *Task) error {
	if err := tc.lock(t, &tc.fmu, poller.Write); err != nil {
		return tc.opErr("write", err)
	}
	err := tc.flushLocked(t)
	tc.fmu.Unlock()
	return err
}

// flushFor is a reader's flush of what crypto/tls wrote as it read (an
// alert, a KeyUpdate's answer): nothing to do if a flush is under way (it
// takes what is there), nor if records that a Write left (interrupted) are
// ahead of them: those are the next Write's to send, and a reader that
// waited for room to send them would stop reading, which may be what its
// peer waits for before it reads (each side's writer waiting for the
// other's reader). Else flush, registered with the write deadline.
func (tc *TLSConn) flushFor(t *Task) {
	if tc.bio.leftover || !tc.fmu.TryLock() {
		return
	}
	defer tc.fmu.Unlock()
	l := t.loop
	if tc.c.dl.wr.enter(l, t) != nil {
		return
	}
	tc.flushLocked(t)
	tc.c.dl.wr.exit(l, t)
}

// flushLocked writes the output buffer until it is empty (what crypto/tls
// adds meanwhile too); fmu is held. If the task's wait is interrupted (a
// cancellation, a deadline), what was not written stays at the head of
// the buffer, so that the stream stays whole and the next flush goes on
// from there; a failure of the socket cuts the stream, and every later
// write fails with it.
func (tc *TLSConn) flushLocked(t *Task) error {
	b := &tc.bio
	for len(b.out) > 0 && tc.werr == nil {
		buf := b.out
		b.out = b.spare[:0] // crypto/tls appends there meanwhile
		n, err := tc.c.impl.write(t, buf)
		b.spare = buf[:0]
		if err != nil {
			if isInterruption(err) && !tc.closed.Load() {
				rest := make([]byte, 0, len(buf)-n+len(b.out))
				b.out = append(append(rest, buf[n:]...), b.out...)
				b.leftover = true
				return err
			}
			tc.werr = err
			b.out = b.out[:0]
			return err
		}
	}
	b.leftover = false
	return tc.werr
}

// closeWrite is CloseWrite, on the Conn's loop.
func (tc *TLSConn) closeWrite(t *Task) error {
	if !tc.hsDone.Load() {
		return tc.opErr("close", errTLSEarlyCloseWrite)
	}
	if err := tc.lock(t, &tc.wmu, poller.Write); err != nil {
		return tc.opErr("close", err)
	}
	defer tc.wmu.Unlock()
	if err := tc.lock(t, &tc.mu, poller.Write); err != nil {
		return tc.opErr("close", err)
	}
	err := tc.tc.CloseWrite()
	tc.mu.Unlock()
	if ferr := tc.flush(t); ferr != nil {
		return ferr
	}
	return err
}

var errTLSEarlyCloseWrite = errors.New("tls: CloseWrite called before handshake complete")

// closeNotifyBound is how long Close waits for close_notify to be
// written (crypto/tls's own bound).
const closeNotifyBound = 5 * time.Second

// closeNotify sends close_notify for Close, if no other task is inside
// crypto/tls or writing: Close never waits for another task.
func (tc *TLSConn) closeNotify(t *Task) {
	if tc.c.toHome(t) != nil {
		return
	}
	if !tc.mu.TryLock() {
		return // a handshake (or another task's call) is under way
	}
	if !tc.fmu.TryLock() {
		tc.mu.Unlock()
		return // a Write is sending: Close cuts it short
	}
	defer tc.fmu.Unlock()
	t.pin++
	defer func() { t.pin-- }()
	err := tc.tc.CloseWrite()
	tc.mu.Unlock()
	if err != nil || len(tc.bio.out) == 0 {
		return
	}
	Timeout(t, closeNotifyBound, func(t *Task) (struct{}, error) {
		return struct{}{}, tc.flushLocked(t)
	})
}

// opErr wraps err as the Conn's errors are wrapped.
func (tc *TLSConn) opErr(op string, err error) error {
	return opError(op, tc.c.network, tc.c.LocalAddr(), tc.c.RemoteAddr(), err)
}

// tlsBIO is the in-memory connection crypto/tls runs over (see the top of
// the file). It is used only on the Conn's loop, by the task holding mu
// (crypto/tls's calls) or a lock of TLSConn's.
type tlsBIO struct {
	tc    *TLSConn
	in    []byte // ciphertext received, crypto/tls has not taken yet: in[inOff:]
	inOff int
	inGen uint64 // bumped when input comes (data, the end, an error)
	inEOF bool   // the socket's stream ended after in
	inErr error  // the socket failed after in
	out   []byte // ciphertext crypto/tls wrote, not yet sent
	spare []byte // out's other buffer, while one is being sent
	// out starts with records an interrupted flush left: the next
	// Write sends them, never a reader (flushFor).
	leftover bool
	hs       *Task // during the handshake: the task that waits on the socket itself
}

// tlsWouldBlock is what tlsBIO's Read returns when it has nothing yet: a
// net.Error with Timeout and Temporary true, which crypto/tls returns
// without making it its sticky error.
type tlsWouldBlock struct{}

func (tlsWouldBlock) Error() string   { return "weft: no TLS input yet" }
func (tlsWouldBlock) Timeout() bool   { return true }
func (tlsWouldBlock) Temporary() bool { return true }

func (b *tlsBIO) appendIn(p []byte) {
	if b.inOff > 0 && b.inOff == len(b.in) {
		b.in, b.inOff = b.in[:0], 0
	} else if b.inOff > cap(b.in)/2 {
		b.in = b.in[:copy(b.in, b.in[b.inOff:])]
		b.inOff = 0
	}
	b.in = append(b.in, p...)
	b.inGen++
}

func (b *tlsBIO) Read(p []byte) (int, error) {
	if n := copy(p, b.in[b.inOff:]); n > 0 {
		b.inOff += n
		if b.inOff == len(b.in) {
			b.in, b.inOff = b.in[:0], 0
		}
		return n, nil
	}
	switch {
	case b.inErr != nil:
		return 0, b.inErr
	case b.inEOF:
		return 0, io.EOF
	case b.hs != nil:
		// The handshake: its task waits for the socket here, holding mu.
		return b.tc.c.impl.read(b.hs, p)
	}
	return 0, tlsWouldBlock{}
}

func (b *tlsBIO) Write(p []byte) (int, error) {
	if b.hs != nil {
		// The handshake writes each flight to the socket itself (nothing
		// else is in out: nobody wrote before the handshake ended).
		n, err := b.tc.c.impl.write(b.hs, p)
		if err != nil {
			b.tc.werr = err
		}
		return n, err
	}
	b.out = append(b.out, p...)
	return len(p), nil
}

// Close, the deadlines and the addresses of the BIO are no-ops or c's:
// crypto/tls calls them (SetWriteDeadline around close_notify, Close from
// its own Close), and TLSConn does the real work itself.
func (b *tlsBIO) Close() error                     { return nil }
func (b *tlsBIO) LocalAddr() net.Addr              { return b.tc.c.LocalAddr() }
func (b *tlsBIO) RemoteAddr() net.Addr             { return b.tc.c.RemoteAddr() }
func (b *tlsBIO) SetDeadline(time.Time) error      { return nil }
func (b *tlsBIO) SetReadDeadline(time.Time) error  { return nil }
func (b *tlsBIO) SetWriteDeadline(time.Time) error { return nil }

// The TLSConn as a net.Conn, for code written against the interface.

// NetConn returns a net.Conn that reads and writes tc on behalf of t, as
// Conn.NetConn does for a Conn: its Read and Write suspend t and may be
// used only by t's own task (else they panic with a "weft:" message). Its
// Close, deadlines and addresses are tc's; its CloseWrite is tc's for t.
func (tc *TLSConn) NetConn(t *Task) net.Conn {
	t.check("TLSConn.NetConn")
	sameLoop(t, tc.c.loop, "TLSConn")
	return &tlsTaskConn{tlsNetConn{tc}, t}
}

// LoopConn returns a net.Conn that reads and writes tc on behalf of
// whichever task of tc's Run calls it, suspending that task: unlike a
// tls.Conn over Conn.LoopConn, several tasks may use it at once. Called
// from outside the tasks of the Run, Read and Write panic with a "weft:"
// message (GoConn is for goroutines). LoopConn itself does not suspend.
func (tc *TLSConn) LoopConn() net.Conn { return &tlsLoopConn{tlsNetConn{tc}} }

// GoConn returns a net.Conn for tc whose every method may be called from
// any goroutine, as Conn.GoConn's: from a plain goroutine a call blocks
// that goroutine while a task of tc's loop does the work (Close too, so
// that it sends close_notify), and a call made once the Run has ended
// returns an error matching net.ErrClosed (Close then closes the Conn at
// once); from a task of the Run the methods act for that task. GoConn
// itself does not suspend.
func (tc *TLSConn) GoConn() net.Conn { return &tlsGoConn{tlsNetConn{tc}} }

// tlsNetConn holds what the three adapters share.
type tlsNetConn struct{ tc *TLSConn }

func (a tlsNetConn) LocalAddr() net.Addr                { return a.tc.LocalAddr() }
func (a tlsNetConn) RemoteAddr() net.Addr               { return a.tc.RemoteAddr() }
func (a tlsNetConn) SetDeadline(t time.Time) error      { return a.tc.SetDeadline(t) }
func (a tlsNetConn) SetReadDeadline(t time.Time) error  { return a.tc.SetReadDeadline(t) }
func (a tlsNetConn) SetWriteDeadline(t time.Time) error { return a.tc.SetWriteDeadline(t) }
func (a tlsNetConn) ConnectionState() tls.ConnectionState {
	return a.tc.ConnectionState()
}

type tlsTaskConn struct {
	tlsNetConn
	t *Task
}

func (a *tlsTaskConn) Read(b []byte) (int, error)  { return a.tc.Read(a.t, b) }
func (a *tlsTaskConn) Write(b []byte) (int, error) { return a.tc.Write(a.t, b) }
func (a *tlsTaskConn) Close() error                { return a.tc.Close() }
func (a *tlsTaskConn) CloseWrite() error           { return a.tc.CloseWrite(a.t) }

type tlsLoopConn struct{ tlsNetConn }

func (a *tlsLoopConn) Read(b []byte) (int, error) { return a.tc.Read(a.current("Read"), b) }
func (a *tlsLoopConn) Write(b []byte) (int, error) {
	return a.tc.Write(a.current("Write"), b)
}
func (a *tlsLoopConn) Close() error      { return a.tc.Close() }
func (a *tlsLoopConn) CloseWrite() error { return a.tc.CloseWrite(a.current("CloseWrite")) }

// current returns the task of tc's Run that is running the caller.
func (a *tlsLoopConn) current(op string) *Task {
	t := currentTask()
	if t == nil || t.rs != a.tc.c.loop.rs {
		panic("weft: " + op + " on a TLSConn's LoopConn called outside the tasks of its Run (GoConn is for goroutines)")
	}
	return t
}

type tlsGoConn struct{ tlsNetConn }

func (a *tlsGoConn) Read(b []byte) (int, error) {
	tc := a.tc
	if t := taskOfRun(tc.c.loop, "Read"); t != nil {
		return tc.Read(t, b)
	}
	var n int
	var err error
	if !forGoroutine(tc.c.loop, goReadPC, func(t *Task) { n, err = tc.Read(t, b) }) {
		return 0, tc.opErr("read", net.ErrClosed)
	}
	return n, err
}

func (a *tlsGoConn) Write(b []byte) (int, error) {
	tc := a.tc
	if t := taskOfRun(tc.c.loop, "Write"); t != nil {
		return tc.Write(t, b)
	}
	var n int
	var err error
	if !forGoroutine(tc.c.loop, goWritePC, func(t *Task) { n, err = tc.Write(t, b) }) {
		return 0, tc.opErr("write", net.ErrClosed)
	}
	return n, err
}

func (a *tlsGoConn) CloseWrite() error {
	tc := a.tc
	if t := taskOfRun(tc.c.loop, "CloseWrite"); t != nil {
		return tc.CloseWrite(t)
	}
	var err error
	if !forGoroutine(tc.c.loop, goCloseWritePC, func(t *Task) { err = tc.CloseWrite(t) }) {
		return tc.opErr("close", net.ErrClosed)
	}
	return err
}

func (a *tlsGoConn) Close() error {
	tc := a.tc
	if t := taskOfRun(tc.c.loop, "Close"); t != nil {
		return tc.Close()
	}
	var err error
	if !forGoroutine(tc.c.loop, goClosePC, func(t *Task) { err = tc.Close() }) {
		return tc.Close() // the Run has ended: at once
	}
	return err
}

func goConnClose() {}

var goClosePC = funcPC(goConnClose)
