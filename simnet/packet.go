package simnet

// Datagrams: an endpoint's queue, ordered by arrival time, so that
// jitter reorders them.

import (
	"errors"
	"net"
	"time"

	"github.com/weft-go/weft"
)

type datagram struct {
	data []byte
	from Addr
	at   time.Time
}

type packetConn struct {
	host    *Host
	addr    Addr
	queue   []datagram           // net.mu: by arrival
	changed *weft.Chan[struct{}] // net.mu
	closed  bool                 // net.mu
}

func (pc *packetConn) changedLocked() {
	pc.changed.Close()
	pc.changed = weft.NewChan[struct{}](0)
}

// ReadFrom waits for the next datagram to arrive and reads it into b
// (truncated to len(b)). It is a cancellation point.
func (pc *packetConn) ReadFrom(t *weft.Task, b []byte) (int, net.Addr, error) {
	n := pc.host.net
	for {
		n.mu.Lock()
		if pc.closed {
			n.mu.Unlock()
			return 0, nil, opErr("read", "udp", pc.addr, net.ErrClosed)
		}
		d := time.Duration(-1)
		if len(pc.queue) > 0 {
			g := pc.queue[0]
			now := t.Now()
			if !g.at.After(now) {
				pc.queue = pc.queue[1:]
				n.mu.Unlock()
				return copy(b, g.data), g.from, nil
			}
			d = g.at.Sub(now)
		}
		ch := pc.changed
		n.mu.Unlock()
		if err := n.wait(t, ch, d); err != nil {
			return 0, nil, err
		}
	}
}

// WriteTo sends b to addr ("host:port"). It does not suspend: a datagram
// that is lost, sent across a partition or to a port nobody listens on
// is dropped silently, as UDP does.
func (pc *packetConn) WriteTo(t *weft.Task, b []byte, addr net.Addr) (int, error) {
	if addr == nil {
		return 0, opErr("write", "udp", nil, errors.New("simnet: WriteTo a nil address"))
	}
	host, port, err := pc.host.resolve(addr.String())
	if err != nil {
		return 0, opErr("write", "udp", addr, err)
	}
	n := pc.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if pc.closed {
		return 0, opErr("write", "udp", addr, net.ErrClosed)
	}
	from := pc.host.name
	l := n.linkLocked(from, host)
	if l.Loss > 0 && float64(n.drawLocked(t)>>11)/(1<<53) < l.Loss {
		return len(b), nil
	}
	peer := n.hosts[host]
	if peer == nil || n.partedLocked(from, host) {
		return len(b), nil
	}
	dst := peer.packets[port]
	now := t.Now()
	at := n.sendLocked(from, host, l, now, len(b)).Add(n.delayLocked(t, l))
	if dst == nil {
		return len(b), nil
	}
	g := datagram{data: append([]byte(nil), b...), from: pc.addr, at: at}
	i := len(dst.queue)
	for i > 0 && dst.queue[i-1].at.After(at) {
		i--
	}
	dst.queue = append(dst.queue, datagram{})
	copy(dst.queue[i+1:], dst.queue[i:])
	dst.queue[i] = g
	dst.changedLocked()
	return len(b), nil
}

func (pc *packetConn) LocalAddr() net.Addr { return pc.addr }

// Close closes the endpoint: a task in ReadFrom wakes with an error
// matching net.ErrClosed.
func (pc *packetConn) Close() error {
	n := pc.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if pc.closed {
		return opErr("close", "udp", pc.addr, net.ErrClosed)
	}
	pc.closed = true
	if pc.host.packets[pc.addr.Port] == pc {
		delete(pc.host.packets, pc.addr.Port)
	}
	pc.queue = nil
	pc.changedLocked()
	return nil
}
