package weft

// Socket options: ListenConfig and Dialer, weft's net.ListenConfig and
// net.Dialer. They take the same inputs as their net counterparts and
// fail the same way; their options reach the socket through sockConfig,
// which the fd layer applies before bind and connect
// (net_sockopt_linux.go) and the portable layer hands to the net package
// (netListenConfig, netDialer).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// defaultKeepAlive is the keep-alive period of a ListenConfig's accepted
// connections and a Dialer's connections when KeepAlive is 0: the net
// package's.
const defaultKeepAlive = 15 * time.Second

// ListenConfig holds options for listening, as net.ListenConfig does. The
// zero value listens as Listen does (accepted TCP connections send
// keep-alive probes, as net.Listen's do).
type ListenConfig struct {
	// Control, if not nil, is called with the socket after it is made and
	// before it is bound, as net.ListenConfig's: network is "tcp4",
	// "tcp6", "udp4", "udp6", "unix" or "unixgram" (the socket's family),
	// address the local address. An error from it fails Listen (the socket
	// is closed). It runs on the loop: it must not block.
	Control func(network, address string, c syscall.RawConn) error

	// KeepAlive is the keep-alive period of accepted TCP connections: 0
	// means the default (15 s, as net's), a negative value turns
	// keep-alive probes off.
	KeepAlive time.Duration

	// ReusePort sets SO_REUSEPORT (Linux, BSDs, macOS), so that several
	// Runs or processes can listen on one address and port, each accepting
	// a share of the connections (the kernel spreads them by their
	// addresses, on Linux). Every listener on the port must set it.
	ReusePort bool

	// Backlog is the length of the queue of connections not yet accepted:
	// 0 means the system's default (net.core.somaxconn on Linux). A
	// negative Backlog panics with "weft:".
	Backlog int
}

// Listen announces on a local address, as the package's Listen does (the
// same networks, address forms, errors and use of the task's Network),
// with lc's options. It suspends the task only while it resolves a host
// name, which it does off the loop, and is a cancellation point then (an
// error matching context.Canceled).
func (lc *ListenConfig) Listen(t *Task, network, address string) (*Listener, error) {
	t.check("ListenConfig.Listen")
	cfg, err := lc.sockConfig(t, network)
	if err != nil {
		return nil, err
	}
	return listen(t, network, address, cfg)
}

// ListenPacket opens a datagram socket on a local address, as the
// package's ListenPacket does, with lc's options (KeepAlive and Backlog
// do not apply to datagrams). It suspends the task only while it resolves
// a host name, and is a cancellation point then (an error matching
// context.Canceled).
func (lc *ListenConfig) ListenPacket(t *Task, network, address string) (*PacketConn, error) {
	t.check("ListenConfig.ListenPacket")
	cfg, err := lc.sockConfig(t, network)
	if err != nil {
		return nil, err
	}
	return listenPacket(t, network, address, cfg)
}

func (lc *ListenConfig) sockConfig(t *Task, network string) (*sockConfig, error) {
	if lc == nil {
		lc = &ListenConfig{}
	}
	if lc.Backlog < 0 {
		panic(fmt.Sprintf("weft: ListenConfig with a negative Backlog (%d)", lc.Backlog))
	}
	cfg := &sockConfig{control: lc.Control, reusePort: lc.ReusePort, backlog: lc.Backlog, keepAlive: keepAlivePeriod(lc.KeepAlive)}
	if t.network() != nil && lc.Control != nil {
		return nil, opError("listen", network, nil, nil, errControlSimulated)
	}
	return cfg, nil
}

// Dialer holds options for connecting, as net.Dialer does. The zero value
// dials as Dial does (TCP connections send keep-alive probes, as
// net.Dial's do).
type Dialer struct {
	// Timeout bounds the whole dial, name resolution included: 0 means no
	// bound (as Dial), a negative Timeout fails at once. Past it, Dial
	// returns a *net.OpError whose error is a timeout (net.Error's
	// Timeout() is true, errors.Is(err, os.ErrDeadlineExceeded)), as
	// net.Dialer's. It runs on the loop's clock.
	Timeout time.Duration

	// LocalAddr is the local address to dial from: a *net.TCPAddr for TCP
	// (its IP picks the family of the remote addresses tried; a zero port
	// picks one), a *net.UnixAddr for Unix sockets. nil: the system picks.
	LocalAddr net.Addr

	// KeepAlive is the keep-alive period of the TCP connection: 0 means
	// the default (15 s, as net's), negative turns probes off.
	KeepAlive time.Duration

	// Control, if not nil, is called with the socket after it is made and
	// before it connects, as net.Dialer's: network is "tcp4", "tcp6" or
	// "unix", address the remote address. An error from it fails that
	// address. It runs on the loop: it must not block.
	Control func(network, address string, c syscall.RawConn) error
}

// Dial connects to address on network, as the package's Dial does (the
// same networks, address forms, errors, cancellation and use of the
// task's Network), with d's options. It suspends the task until the
// connection is made or fails; if the task is cancelled it returns the
// cause (matching context.Canceled) and no connection is left open.
func (d *Dialer) Dial(t *Task, network, address string) (*Conn, error) {
	t.check("Dialer.Dial")
	if d == nil {
		d = &Dialer{}
	}
	cfg := &sockConfig{control: d.Control, keepAlive: keepAlivePeriod(d.KeepAlive), localAddr: d.LocalAddr}
	if t.network() != nil && d.Control != nil {
		return nil, opError("dial", network, nil, nil, errControlSimulated)
	}
	if err := cfg.checkLocal(network); err != nil {
		return nil, opError("dial", network, nil, nil, err)
	}
	switch {
	case d.Timeout == 0:
		return dial(t, network, address, cfg)
	case d.Timeout < 0:
		if err := t.cancelPoint(); err != nil {
			return nil, opError("dial", network, nil, nil, err)
		}
		return nil, opError("dial", network, nil, nil, errDialTimeout)
	}
	c, err := Timeout(t, d.Timeout, func(t *Task) (*Conn, error) { return dial(t, network, address, cfg) })
	if errors.Is(err, ErrTimeout) {
		return nil, opError("dial", network, nil, nil, errDialTimeout)
	}
	return c, err
}

// errDialTimeout is a Dialer's error past its Timeout: "i/o timeout", a
// net.Error whose Timeout() is true, as the net package's.
var errDialTimeout error = dialTimeoutError{}

type dialTimeoutError struct{}

func (dialTimeoutError) Error() string   { return "i/o timeout" }
func (dialTimeoutError) Timeout() bool   { return true }
func (dialTimeoutError) Temporary() bool { return true }
func (dialTimeoutError) Is(err error) bool {
	return err == context.DeadlineExceeded || err == os.ErrDeadlineExceeded
}

var errControlSimulated = errors.New("weft: a Control function needs a real socket: the task's Network is simulated")

// keepAlivePeriod turns a KeepAlive field into sockConfig's: 0 the
// default, negative none (0).
func keepAlivePeriod(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return defaultKeepAlive
	case d < 0:
		return 0
	}
	return d
}

// sockConfig is what a ListenConfig or Dialer asks of its sockets (Listen
// and Dial: netDefaults). A nil *sockConfig (ListenPacket) asks nothing.
type sockConfig struct {
	control   func(network, address string, c syscall.RawConn) error
	keepAlive time.Duration // > 0: TCP keep-alive probes with this period; 0: as the system leaves it
	reusePort bool
	backlog   int      // 0: the system's default
	localAddr net.Addr // a Dialer's LocalAddr
}

// backlogOr returns the backlog to listen with.
func (c *sockConfig) backlogOr(def func() int) int {
	if c == nil || c.backlog == 0 {
		return def()
	}
	return c.backlog
}

// keepAliveOrNone is the keep-alive period for accepted connections.
func (c *sockConfig) keepAliveOrNone() time.Duration {
	if c == nil {
		return 0
	}
	return c.keepAlive
}

// checkLocal fails as the net package does when a Dialer's LocalAddr is
// not of the network's kind.
func (c *sockConfig) checkLocal(network string) error {
	if c == nil || c.localAddr == nil {
		return nil
	}
	k, err := parseNetwork(network, true)
	if err != nil {
		return nil // Dial reports the network
	}
	var ok bool
	if k.unix {
		_, ok = c.localAddr.(*net.UnixAddr)
	} else {
		_, ok = c.localAddr.(*net.TCPAddr)
	}
	if !ok {
		return &net.AddrError{Err: "mismatched local address type", Addr: c.localAddr.String()}
	}
	return nil
}

// suitable keeps the remote addresses a Dialer's LocalAddr can reach: of
// its family, unless one of the two is a wildcard (as the net package).
func (c *sockConfig) suitable(k netKind, aps []netip.AddrPort) ([]netip.AddrPort, error) {
	if c == nil || c.localAddr == nil || k.unix {
		return aps, nil
	}
	la := c.localAddr.(*net.TCPAddr) // checkLocal
	lip, _ := netip.AddrFromSlice(la.IP)
	lip = lip.Unmap()
	if !lip.IsValid() || lip.IsUnspecified() {
		return aps, nil
	}
	var out []netip.AddrPort
	for _, ap := range aps {
		if ap.Addr().IsUnspecified() || ap.Addr().Unmap().Is4() == lip.Is4() {
			out = append(out, ap)
		}
	}
	if len(out) == 0 {
		return nil, &net.AddrError{Err: "no suitable address found", Addr: la.String()}
	}
	return out, nil
}

// netListenConfig is c as a net.ListenConfig, for the portable layer.
func (c *sockConfig) netListenConfig() *net.ListenConfig {
	if c == nil {
		return &net.ListenConfig{}
	}
	lc := &net.ListenConfig{KeepAlive: c.keepAlive, Control: c.control}
	if c.keepAlive == 0 {
		lc.KeepAlive = -1
	}
	if c.reusePort {
		user := c.control
		lc.Control = func(network, address string, rc syscall.RawConn) error {
			if err := setReusePort(network, rc); err != nil {
				return err
			}
			if user != nil {
				return user(network, address, rc)
			}
			return nil
		}
	}
	return lc
}

// netDialer is c as a net.Dialer, for the portable layer (the timeout is
// Dialer.Dial's).
func (c *sockConfig) netDialer() *net.Dialer {
	if c == nil {
		return &net.Dialer{}
	}
	d := &net.Dialer{KeepAlive: c.keepAlive, Control: c.control, LocalAddr: c.localAddr}
	if c.keepAlive == 0 {
		d.KeepAlive = -1
	}
	return d
}

// relisten applies a Backlog to a listener the net package made.
func (c *sockConfig) relisten(ln net.Listener) error {
	if c == nil || c.backlog == 0 {
		return nil
	}
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = listenAgain(fd, c.backlog) }); err != nil {
		return err
	}
	if lerr != nil {
		ln.Close()
	}
	return lerr
}
