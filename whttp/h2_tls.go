package whttp

// HTTP/2 over TLS. The handshake is HTTP/1's (tls.go: crypto/tls in the
// connection's task). After it, the tls.Conn is read by the reader task
// and written by the writer task; so that neither ever holds one of its
// sync.Mutexes across a suspension (which could wedge a loop: the other
// task would block the loop's goroutine on it), the tls.Conn no longer
// reads or writes the socket itself. It reads ciphertext that the reader
// task has already read into a buffer (and gets "would block", a
// temporary error crypto/tls does not keep, when the buffer is empty), and
// writes ciphertext into a buffer that the writer task then writes to the
// socket, outside any tls.Conn call. Every tls.Conn call thus runs to its
// end without suspending.

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/weft-go/weft"
)

// serveH2TLS serves a TLS connection whose ALPN chose "h2".
func (c *conn) serveH2TLS(t *weft.Task) {
	ct := c.tls
	p := &h2TLS{tc: ct.conn, wc: c.wc, rt: t}
	p.pipe.p = p
	p.pipe.Conn = ct.raw.Conn
	ct.raw.Conn = &p.pipe
	c.serveH2(t, p, &ct.state)
}

// h2TLS is the transport of HTTP/2 over TLS.
type h2TLS struct {
	tc   *tls.Conn
	wc   *weft.Conn
	rt   *weft.Task // the reader's
	pipe h2TLSPipe
	raw  [16 << 10]byte // the reader's

	mu    sync.Mutex
	in    []byte // ciphertext read, not yet taken by tc
	out   []byte // ciphertext tc wrote, not yet sent
	spare []byte
}

// errWouldBlock tells crypto/tls that no ciphertext is buffered: it is
// temporary, so the tls.Conn does not keep it as its error.
var errWouldBlock = &wouldBlockError{}

type wouldBlockError struct{}

func (*wouldBlockError) Error() string   { return "whttp: http2: tls: no input buffered" }
func (*wouldBlockError) Timeout() bool   { return true }
func (*wouldBlockError) Temporary() bool { return true }

// h2TLSPipe is the connection beneath the tls.Conn, once it speaks
// HTTP/2: the buffers.
type h2TLSPipe struct {
	net.Conn // the socket's, for its addresses
	p        *h2TLS
}

func (q *h2TLSPipe) Read(b []byte) (int, error) {
	p := q.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.in) == 0 {
		return 0, errWouldBlock
	}
	n := copy(b, p.in)
	p.in = p.in[n:]
	return n, nil
}

func (q *h2TLSPipe) Write(b []byte) (int, error) {
	p := q.p
	p.mu.Lock()
	p.out = append(p.out, b...)
	p.mu.Unlock()
	return len(b), nil
}

// Read is the reader task's: plaintext, reading the socket when the
// tls.Conn has nothing.
func (p *h2TLS) Read(b []byte) (int, error) {
	for {
		n, err := p.tc.Read(b)
		if n > 0 {
			return n, nil
		}
		if err != nil && !errors.Is(err, errWouldBlock) {
			return 0, err
		}
		m, rerr := p.wc.Read(p.rt, p.raw[:])
		if m > 0 {
			p.mu.Lock()
			if len(p.in) == 0 {
				p.in = append(p.in[:0], p.raw[:m]...)
			} else {
				p.in = append(p.in, p.raw[:m]...)
			}
			p.mu.Unlock()
			continue
		}
		if rerr == nil {
			rerr = errH2PeerGone
		}
		return 0, rerr
	}
}

// write is the writer task's: b encrypted, then sent with what the
// tls.Conn wrote on its own (an alert, say).
func (p *h2TLS) write(t *weft.Task, b []byte) error {
	if len(b) > 0 {
		if _, err := p.tc.Write(b); err != nil {
			return err
		}
	}
	return p.flush(t)
}

func (p *h2TLS) flush(t *weft.Task) error {
	p.mu.Lock()
	out := p.out
	p.out = p.spare[:0]
	p.spare = nil
	p.mu.Unlock()
	var err error
	for b := out; len(b) > 0 && err == nil; {
		var n int
		n, err = p.wc.Write(t, b)
		b = b[n:]
	}
	p.mu.Lock()
	if cap(out) <= 256<<10 {
		p.spare = out[:0]
	}
	p.mu.Unlock()
	return err
}

func (p *h2TLS) closeWrite(t *weft.Task) {
	p.tc.CloseWrite()
	p.flush(t)
	p.wc.CloseWrite()
}

// Deadlines are the socket's, set on it directly: crypto/tls's own
// (closeNotify's) must not cut the writer's sends.
func (q *h2TLSPipe) SetDeadline(time.Time) error      { return nil }
func (q *h2TLSPipe) SetReadDeadline(time.Time) error  { return nil }
func (q *h2TLSPipe) SetWriteDeadline(time.Time) error { return nil }
