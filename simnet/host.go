package simnet

// Hosts: addresses, and the three operations of a weft.Network.

import (
	"errors"
	"net"
	"strconv"
	"syscall"

	"github.com/weft-go/weft"
)

// Addr is a simulated address, "host:port".
type Addr struct {
	Net  string // "tcp" or "udp"
	Host string
	Port int
}

// Network returns "tcp" or "udp".
func (a Addr) Network() string { return a.Net }

// String returns "host:port".
func (a Addr) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Host is one host of a Net: a weft.Network.
type Host struct {
	net      *Net
	name     string
	streams  map[int]*listener   // net.mu
	packets  map[int]*packetConn // net.mu
	nextPort int                 // net.mu
}

// Name returns the host's name.
func (h *Host) Name() string { return h.name }

func streamNet(network string) bool {
	return network == "tcp" || network == "tcp4" || network == "tcp6"
}

func packetNet(network string) bool {
	return network == "udp" || network == "udp4" || network == "udp6"
}

func opErr(op, network string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: network, Addr: addr, Err: err}
}

// resolve parses address into a host name and port, as h sees them.
func (h *Host) resolve(address string) (string, int, error) {
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, errors.New("simnet: bad port " + strconv.Quote(ps))
	}
	switch host {
	case "", "localhost", "127.0.0.1", "::1", "0.0.0.0", "::":
		host = h.name
	}
	return host, port, nil
}

// bindLocked resolves a local address for Listen or ListenPacket (kind
// "tcp" or "udp"; used tells which ports of that kind are taken) and
// picks a free port for port 0 (n.mu held).
func (h *Host) bindLocked(network, address, kind string, used func(int) bool) (Addr, error) {
	host, port, err := h.resolve(address)
	if err != nil {
		return Addr{}, opErr("listen", network, nil, err)
	}
	if host != h.name {
		return Addr{}, opErr("listen", network, Addr{kind, host, port}, syscall.EADDRNOTAVAIL)
	}
	if port == 0 {
		port = h.freePortLocked(used)
	} else if used(port) {
		return Addr{}, opErr("listen", network, Addr{kind, host, port}, syscall.EADDRINUSE)
	}
	return Addr{kind, h.name, port}, nil
}

// freePortLocked returns an unused port of kind (streams or datagrams).
func (h *Host) freePortLocked(used func(int) bool) int {
	for {
		p := h.nextPort
		h.nextPort++
		if h.nextPort > 65535 {
			h.nextPort = 10000
		}
		if !used(p) {
			return p
		}
	}
}

// Listen announces on "name:port" (or ":port"; port 0 picks one) for
// streams. It does not suspend. Errors are *net.OpError values: an
// address of another host is EADDRNOTAVAIL, a port in use EADDRINUSE.
func (h *Host) Listen(t *weft.Task, network, address string) (weft.NetListener, error) {
	if !streamNet(network) {
		return nil, opErr("listen", network, nil, net.UnknownNetworkError(network))
	}
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	addr, err := h.bindLocked(network, address, "tcp", func(p int) bool { return h.streams[p] != nil })
	if err != nil {
		return nil, err
	}
	ln := &listener{host: h, addr: addr, changed: weft.NewChan[struct{}](0)}
	h.streams[addr.Port] = ln
	return ln, nil
}

// Dial connects to "host:port" over a stream. It suspends for a round
// trip and is a cancellation point: if the task is cancelled it returns
// the cause and no connection is left. Errors are *net.OpError values:
// an unknown host (a *net.DNSError), EHOSTUNREACH across a partition,
// ECONNREFUSED when nobody listens.
func (h *Host) Dial(t *weft.Task, network, address string) (weft.NetConn, error) {
	if !streamNet(network) {
		return nil, opErr("dial", network, nil, net.UnknownNetworkError(network))
	}
	host, port, err := h.resolve(address)
	if err != nil {
		return nil, opErr("dial", network, nil, err)
	}
	raddr := Addr{"tcp", host, port}
	n := h.net
	n.mu.Lock()
	peer := n.hosts[host]
	if peer == nil {
		n.mu.Unlock()
		return nil, opErr("dial", network, raddr, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true})
	}
	if n.partedLocked(h.name, host) {
		n.mu.Unlock()
		return nil, opErr("dial", network, raddr, syscall.EHOSTUNREACH)
	}
	out, back := n.linkLocked(h.name, host), n.linkLocked(host, h.name)
	rtt := n.delayLocked(t, out) + n.delayLocked(t, back)
	ln := peer.streams[port]
	if ln == nil {
		n.mu.Unlock()
		if err := t.Sleep(rtt); err != nil {
			return nil, err
		}
		return nil, opErr("dial", network, raddr, syscall.ECONNREFUSED)
	}
	laddr := Addr{"tcp", h.name, h.freePortLocked(func(p int) bool { return h.streams[p] != nil })}
	up := n.newPipe(h.name, host)
	down := n.newPipe(host, h.name)
	client := &conn{net: n, local: laddr, remote: raddr, in: down, out: up}
	server := &conn{net: n, local: raddr, remote: laddr, in: up, out: down}
	ln.pending = append(ln.pending, pendingConn{c: server, at: t.Now().Add(rtt / 2)})
	ln.changedLocked()
	n.mu.Unlock()
	if err := t.Sleep(rtt); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// ListenPacket opens a datagram endpoint on "name:port" (port 0 picks
// one). It does not suspend. Errors are as for Listen.
func (h *Host) ListenPacket(t *weft.Task, network, address string) (weft.NetPacketConn, error) {
	if !packetNet(network) {
		return nil, opErr("listen", network, nil, net.UnknownNetworkError(network))
	}
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	addr, err := h.bindLocked(network, address, "udp", func(p int) bool { return h.packets[p] != nil })
	if err != nil {
		return nil, err
	}
	pc := &packetConn{host: h, addr: addr, changed: weft.NewChan[struct{}](0)}
	h.packets[addr.Port] = pc
	return pc, nil
}
