// Package simnet is an in-memory network for weft programs: hosts by name,
// links with latency, jitter, loss and bandwidth, partitions, all in the
// loop's time. A program written against weft.Listen, weft.Dial and
// weft.ListenPacket runs on it unchanged:
//
//	n := simnet.New(1)
//	weft.Run(func(t *weft.Task) (int, error) {
//		weft.GoWithNetwork(t, n.Host("a"), serverA) // listens on "a:80"
//		weft.GoWithNetwork(t, n.Host("b"), clientB) // dials "a:80"
//		...
//	}, weft.WithSeed(seed))
//
// # Model
//
// Addresses are "name:port". A host sees itself as its name, "",
// "localhost", "127.0.0.1" or "::1"; Listen on port 0 picks a free port
// from 10000 up. Each ordered pair of hosts has a Link (SetLink sets both
// directions; DefaultLink applies where none was set).
//
// Streams ("tcp", "tcp4", "tcp6") are ordered and reliable while the link
// is up: a Write is delivered Latency (plus a draw in [0, Jitter), never
// overtaking an earlier write) after it leaves, and it leaves once the
// link has sent what was written before, at BytesPerSecond (a Write waits
// until its bytes are on the wire). Loss does not apply to streams. Dial
// takes one round trip; dialing a port nobody listens on fails with
// ECONNREFUSED after the round trip; dialing across a partition fails at
// once with EHOSTUNREACH. A partition stalls open streams: what was written
// stays queued and is delivered when the link heals, unless the stream has
// been stalled for ResetAfter (default DefaultResetAfter, 30 s, measured
// from when one of its ends first found it stalled), after which both ends
// fail with ECONNRESET. A stream with nothing in flight is not reset by a
// partition, as TCP without keep-alives is not. Close of one end makes the other read io.EOF once
// the data before it is delivered, and its writes fail with EPIPE.
//
// Datagrams ("udp", "udp4", "udp6") are dropped with probability Loss,
// and always across a partition or to a port nobody listens on; each is
// delayed by Latency plus a draw in [0, Jitter), so datagrams are
// reordered when Jitter exceeds the gap between them.
//
// # Determinism
//
// simnet waits only on weft's primitives (channels and timers), so its
// waits are waits for virtual time's auto-advance and for deadlock
// detection: when every task waits on simulated I/O with nothing in
// flight, Run reports a deadlock. Its random draws mix New's seed with
// Task.Rand: under weft.WithSeed the pair (seed, run seed) reproduces a
// run. Without a seed the draws differ from run to run.
//
// A Net may be shared by several Runs (a Run per host, say, on the real
// clock). So in a Run without WithSeed its waits look again every
// HeartbeatPeriod: a Run whose tasks wait on another Run's hosts must not
// be reported as deadlocked. The price: such a Run that waits on simulated
// I/O nobody will answer waits forever, as it would on a real network.
// Under WithSeed a Net serves one Run, and its waits are exact.
package simnet

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/weft-go/weft"
)

// Link describes one direction between two hosts.
type Link struct {
	Latency        time.Duration // one-way delay
	Jitter         time.Duration // extra delay, drawn uniformly in [0, Jitter)
	Loss           float64       // datagrams only: the probability that one is dropped, 0 to 1
	BytesPerSecond int64         // bandwidth; 0 is unlimited
}

// DefaultLink is the link between hosts for which SetLink was not called.
var DefaultLink = Link{Latency: time.Millisecond}

// DefaultResetAfter is how long a partition may stall a stream before it
// is reset (Net.SetResetAfter).
const DefaultResetAfter = 30 * time.Second

// HeartbeatPeriod is how often a wait in a Run without WithSeed looks
// again (see the package doc).
const HeartbeatPeriod = time.Second

// Net is a simulated network. Its methods may be called from any task or
// goroutine; none of them suspends.
type Net struct {
	mu         sync.Mutex
	rng        uint64 // mixed with Task.Rand at each draw
	hosts      map[string]*Host
	links      map[[2]string]Link
	parts      map[[2]string]bool // unordered pairs, sorted
	busy       map[[2]string]time.Time
	pipes      []*pipe // stream directions, to wake on partitions and heals, in order of creation (a map's order would make wakes random)
	resetAfter time.Duration
}

// New returns an empty network whose random draws start from seed.
func New(seed uint64) *Net {
	return &Net{
		rng:        seed,
		hosts:      map[string]*Host{},
		links:      map[[2]string]Link{},
		parts:      map[[2]string]bool{},
		busy:       map[[2]string]time.Time{},
		resetAfter: DefaultResetAfter,
	}
}

// Host returns the host called name, making it on first use: the Network
// its tasks use (weft.GoWithNetwork, weft.WithNetwork). An empty name or
// one with a colon panics with "simnet:".
func (n *Net) Host(name string) weft.Network {
	return n.host(name)
}

func (n *Net) host(name string) *Host {
	if name == "" || containsColon(name) {
		panic("simnet: bad host name " + strconv.Quote(name))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[name]
	if h == nil {
		h = &Host{net: n, name: name, streams: map[int]*listener{}, packets: map[int]*packetConn{}, nextPort: 10000}
		n.hosts[name] = h
	}
	return h
}

// SetLink sets the link between hosts a and b, both directions. A negative
// duration or bandwidth, or a Loss outside [0, 1], panics with "simnet:".
func (n *Net) SetLink(a, b string, l Link) {
	if l.Latency < 0 || l.Jitter < 0 || l.BytesPerSecond < 0 || !(l.Loss >= 0 && l.Loss <= 1) {
		panic("simnet: SetLink with a negative delay or bandwidth, or a loss outside [0, 1]")
	}
	n.mu.Lock()
	n.links[[2]string{a, b}] = l
	n.links[[2]string{b, a}] = l
	n.mu.Unlock()
}

// SetResetAfter sets how long a partition may stall a stream before it is
// reset (default DefaultResetAfter). d must be positive.
func (n *Net) SetResetAfter(d time.Duration) {
	if d <= 0 {
		panic("simnet: SetResetAfter with a non-positive duration")
	}
	n.mu.Lock()
	n.resetAfter = d
	n.mu.Unlock()
}

// Partition cuts hosts a and b apart, both directions, until Heal: dials
// between them fail, datagrams are dropped and streams stall (see the
// package doc).
func (n *Net) Partition(a, b string) {
	n.mu.Lock()
	n.parts[pairOf(a, b)] = true
	n.wakePipesLocked(a, b, false)
	n.mu.Unlock()
}

// Heal undoes Partition(a, b): the stalled streams between them deliver
// what they hold.
func (n *Net) Heal(a, b string) {
	n.mu.Lock()
	delete(n.parts, pairOf(a, b))
	n.wakePipesLocked(a, b, true)
	n.mu.Unlock()
}

// HealAll undoes every partition.
func (n *Net) HealAll() {
	n.mu.Lock()
	for p := range n.parts {
		delete(n.parts, p)
	}
	n.compactPipesLocked()
	for _, p := range n.pipes {
		p.stallSince = time.Time{}
		p.changedLocked()
	}
	n.mu.Unlock()
}

// Partitioned reports whether a and b are cut apart.
func (n *Net) Partitioned(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partedLocked(a, b)
}

// compactPipesLocked drops the pipes both of whose ends are closed.
func (n *Net) compactPipesLocked() {
	k := 0
	for _, p := range n.pipes {
		if !p.gone {
			n.pipes[k] = p
			k++
		}
	}
	clear(n.pipes[k:])
	n.pipes = n.pipes[:k]
}

func (n *Net) wakePipesLocked(a, b string, heal bool) {
	n.compactPipesLocked()
	for _, p := range n.pipes {
		if pairOf(p.from, p.to) == pairOf(a, b) {
			if heal {
				p.stallSince = time.Time{}
			}
			p.changedLocked()
		}
	}
}

func (n *Net) partedLocked(a, b string) bool {
	return a != b && n.parts[pairOf(a, b)]
}

func (n *Net) linkLocked(a, b string) Link {
	if a == b {
		return Link{}
	}
	if l, ok := n.links[[2]string{a, b}]; ok {
		return l
	}
	return DefaultLink
}

// drawLocked returns a random number for a choice of t's.
func (n *Net) drawLocked(t *weft.Task) uint64 {
	n.rng = mix(n.rng ^ t.Rand())
	return n.rng
}

// delayLocked returns the latency plus jitter of a message from a to b.
func (n *Net) delayLocked(t *weft.Task, l Link) time.Duration {
	d := l.Latency
	if l.Jitter > 0 {
		d += time.Duration(n.drawLocked(t) % uint64(l.Jitter))
	}
	return d
}

// sendLocked books the link a→b for size bytes from now on and returns
// when they have left.
func (n *Net) sendLocked(a, b string, l Link, now time.Time, size int) time.Time {
	if l.BytesPerSecond <= 0 {
		return now
	}
	k := [2]string{a, b}
	start := n.busy[k]
	if start.Before(now) {
		start = now
	}
	end := start.Add(time.Duration(float64(size) / float64(l.BytesPerSecond) * float64(time.Second)))
	n.busy[k] = end
	return end
}

// wait suspends t until ch is closed (something changed) or d passes (d <
// 0: no limit). It returns the error that ended the wait early:
// cancellation, a deadline.
func (n *Net) wait(t *weft.Task, ch *weft.Chan[struct{}], d time.Duration) error {
	if !t.Seeded() && (d < 0 || d > HeartbeatPeriod) {
		d = HeartbeatPeriod
	}
	var cases [2]weft.SelectCase
	cases[0] = weft.RecvCase(ch, nil)
	cs := cases[:1]
	if d >= 0 {
		cases[1] = weft.AfterCase(d)
		cs = cases[:2]
	}
	i, err := weft.Select(t, cs...)
	if i < 0 {
		return err
	}
	return nil
}

func pairOf(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

func containsColon(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return true
		}
	}
	return false
}

// mix is splitmix64's output function.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

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
	host, port, err := h.resolve(address)
	if err != nil {
		return nil, opErr("listen", network, nil, err)
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if host != h.name {
		return nil, opErr("listen", network, Addr{"tcp", host, port}, syscall.EADDRNOTAVAIL)
	}
	if port == 0 {
		port = h.freePortLocked(func(p int) bool { return h.streams[p] != nil })
	} else if h.streams[port] != nil {
		return nil, opErr("listen", network, Addr{"tcp", host, port}, syscall.EADDRINUSE)
	}
	ln := &listener{host: h, addr: Addr{"tcp", h.name, port}, changed: weft.NewChan[struct{}](0)}
	h.streams[port] = ln
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
	host, port, err := h.resolve(address)
	if err != nil {
		return nil, opErr("listen", network, nil, err)
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if host != h.name {
		return nil, opErr("listen", network, Addr{"udp", host, port}, syscall.EADDRNOTAVAIL)
	}
	if port == 0 {
		port = h.freePortLocked(func(p int) bool { return h.packets[p] != nil })
	} else if h.packets[port] != nil {
		return nil, opErr("listen", network, Addr{"udp", host, port}, syscall.EADDRINUSE)
	}
	pc := &packetConn{host: h, addr: Addr{"udp", h.name, port}, changed: weft.NewChan[struct{}](0)}
	h.packets[port] = pc
	return pc, nil
}

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
