package simnet

// Streams: a listener's queue of connections, and a connection as two
// pipes, one per direction, each a queue of segments with the time each
// arrives. Every field is guarded by the Net's lock; a waiter waits on the
// pipe's (or listener's) changed channel, which is closed and replaced at
// each change, so that every waiter looks again.

import (
	"io"
	"net"
	"syscall"
	"time"

	"github.com/weft-go/weft"
)

// A listener's pending connections, each acceptable from its time on.
type pendingConn struct {
	c  *conn
	at time.Time
}

type listener struct {
	host    *Host
	addr    Addr
	pending []pendingConn        // net.mu
	changed *weft.Chan[struct{}] // net.mu: closed and replaced at each change
	closed  bool                 // net.mu
}

func (ln *listener) changedLocked() {
	ln.changed.Close()
	ln.changed = weft.NewChan[struct{}](0)
}

// Accept waits for the next connection. It suspends while none has
// arrived and is a cancellation point. After Close it returns an error
// matching net.ErrClosed.
func (ln *listener) Accept(t *weft.Task) (weft.NetConn, error) {
	n := ln.host.net
	for {
		n.mu.Lock()
		if ln.closed {
			n.mu.Unlock()
			return nil, opErr("accept", "tcp", ln.addr, net.ErrClosed)
		}
		d := time.Duration(-1)
		if len(ln.pending) > 0 {
			p := ln.pending[0]
			now := t.Now()
			if !p.at.After(now) {
				ln.pending = ln.pending[1:]
				n.mu.Unlock()
				return p.c, nil
			}
			d = p.at.Sub(now)
		}
		ch := ln.changed
		n.mu.Unlock()
		if err := n.wait(t, ch, d); err != nil {
			return nil, err
		}
	}
}

func (ln *listener) Addr() net.Addr { return ln.addr }

// Close stops listening; connections not yet accepted are reset.
func (ln *listener) Close() error {
	n := ln.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if ln.closed {
		return opErr("close", "tcp", ln.addr, net.ErrClosed)
	}
	ln.closed = true
	if ln.host.streams[ln.addr.Port] == ln {
		delete(ln.host.streams, ln.addr.Port)
	}
	for _, p := range ln.pending {
		p.c.resetLocked()
	}
	ln.pending = nil
	ln.changedLocked()
	return nil
}

// A pipe is one direction of a stream, from host from to host to.
type pipe struct {
	from, to   string
	segs       []segment            // net.mu: written, not yet read, in order
	last       time.Time            // net.mu: the arrival of the last segment
	stallSince time.Time            // net.mu: when an end first found it stalled by a partition
	reset      bool                 // net.mu
	readerGone bool                 // net.mu: the reading end is closed
	gone       bool                 // net.mu: both ends are closed
	changed    *weft.Chan[struct{}] // net.mu: closed and replaced at each change
}

type segment struct {
	data []byte
	at   time.Time
	eof  bool
}

func (n *Net) newPipe(from, to string) *pipe {
	p := &pipe{from: from, to: to, changed: weft.NewChan[struct{}](0)}
	n.pipes = append(n.pipes, p)
	if len(n.pipes) >= 64 && len(n.pipes)&(len(n.pipes)-1) == 0 {
		n.compactPipesLocked()
	}
	return p
}

func (p *pipe) changedLocked() {
	p.changed.Close()
	p.changed = weft.NewChan[struct{}](0)
}

type conn struct {
	net           *Net
	local, remote Addr
	in, out       *pipe
	closed        bool // net.mu
	wrClosed      bool // net.mu
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// resetLocked resets both directions of c.
func (c *conn) resetLocked() {
	for _, p := range []*pipe{c.in, c.out} {
		if !p.reset {
			p.reset = true
			p.segs = nil
			p.changedLocked()
		}
	}
}

// stalledLocked updates p's stall for an end looking at now, resetting c
// when it has lasted resetAfter. It returns how long the stall may still
// last, or -1 if p is not stalled.
func (c *conn) stalledLocked(p *pipe, now time.Time) time.Duration {
	n := c.net
	if !n.partedLocked(p.from, p.to) {
		return -1
	}
	if p.stallSince.IsZero() {
		p.stallSince = now
	}
	left := p.stallSince.Add(n.resetAfter).Sub(now)
	if left <= 0 {
		c.resetLocked()
		return 0
	}
	return left
}

// Read reads what has arrived, suspending until something has (or the end
// of the stream, io.EOF). It is a cancellation point.
func (c *conn) Read(t *weft.Task, b []byte) (int, error) {
	n := c.net
	p := c.in
	for {
		n.mu.Lock()
		if c.closed {
			n.mu.Unlock()
			return 0, c.opErr("read", net.ErrClosed)
		}
		if p.reset {
			n.mu.Unlock()
			return 0, c.opErr("read", syscall.ECONNRESET)
		}
		now := t.Now()
		d := time.Duration(-1)
		if len(p.segs) > 0 {
			if left := c.stalledLocked(p, now); left >= 0 {
				if left == 0 {
					n.mu.Unlock()
					return 0, c.opErr("read", syscall.ECONNRESET)
				}
				d = left
			} else if s := &p.segs[0]; !s.at.After(now) {
				p.stallSince = time.Time{}
				if s.eof {
					n.mu.Unlock()
					return 0, io.EOF
				}
				k := copy(b, s.data)
				if s.data = s.data[k:]; len(s.data) == 0 {
					p.segs = p.segs[1:]
				}
				n.mu.Unlock()
				return k, nil
			} else {
				d = s.at.Sub(now)
			}
		}
		ch := p.changed
		n.mu.Unlock()
		if err := n.wait(t, ch, d); err != nil {
			return 0, err
		}
	}
}

// Write queues b for the peer and waits until it has left at the link's
// bandwidth. It is a cancellation point while it waits: the data was
// queued, so it returns len(b) and the cause.
func (c *conn) Write(t *weft.Task, b []byte) (int, error) {
	n := c.net
	p := c.out
	n.mu.Lock()
	switch {
	case c.closed:
		n.mu.Unlock()
		return 0, c.opErr("write", net.ErrClosed)
	case p.reset:
		n.mu.Unlock()
		return 0, c.opErr("write", syscall.ECONNRESET)
	case c.wrClosed || p.readerGone:
		n.mu.Unlock()
		return 0, c.opErr("write", syscall.EPIPE)
	}
	if len(b) == 0 {
		n.mu.Unlock()
		return 0, nil
	}
	now := t.Now()
	if c.stalledLocked(p, now) == 0 {
		n.mu.Unlock()
		return 0, c.opErr("write", syscall.ECONNRESET)
	}
	l := n.linkLocked(p.from, p.to)
	left := n.sendLocked(p.from, p.to, l, now, len(b))
	at := left.Add(n.delayLocked(t, l))
	if at.Before(p.last) {
		at = p.last // a stream never reorders
	}
	p.last = at
	p.segs = append(p.segs, segment{data: append([]byte(nil), b...), at: at})
	p.changedLocked()
	n.mu.Unlock()
	if d := left.Sub(now); d > 0 {
		if err := t.Sleep(d); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

// finLocked ends the stream c writes, once.
func (c *conn) finLocked(now time.Time) {
	p := c.out
	if c.wrClosed || p.reset {
		return
	}
	c.wrClosed = true
	at := now.Add(c.net.linkLocked(p.from, p.to).Latency)
	if at.Before(p.last) {
		at = p.last
	}
	p.last = at
	p.segs = append(p.segs, segment{at: at, eof: true})
	p.changedLocked()
}

// CloseWrite ends the stream this end writes: the peer reads io.EOF after
// the data before it.
func (c *conn) CloseWrite() error {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return c.opErr("close", net.ErrClosed)
	}
	c.finLocked(c.lastTime())
	return nil
}

// lastTime is the time a FIN sent without a task leaves: after the last
// segment, which is as late as anything this end wrote.
func (c *conn) lastTime() time.Time { return c.out.last }

// Close closes this end: its reads and writes fail with net.ErrClosed, the
// peer reads io.EOF after what was written and its writes fail with EPIPE.
func (c *conn) Close() error {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return c.opErr("close", net.ErrClosed)
	}
	c.finLocked(c.lastTime())
	c.closed = true
	c.in.readerGone = true
	c.in.segs = nil
	c.in.changedLocked()
	c.in.gone = c.in.gone || c.out.readerGone
	c.out.gone = c.in.gone
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }
