package weft

// Network and pipe I/O on the loop.
//
// Two implementations stand behind the public types. On Linux with the epoll
// backend, sockets and pipes are non-blocking fds watched by the loop's
// poller (net_fd_linux.go): an operation tries its system call first and
// suspends on EAGAIN until the fd may be ready. Elsewhere, or with the
// portable backend forced, they are the net and os packages' objects, and a
// blocking call runs on a helper goroutine of its own while the task waits
// (net_portable.go). Both give the same API, the same errors and the same
// cancellation behaviour, and the tests run against both.
//
// Nothing is buffered behind the caller's back: a Read reads into the
// caller's slice, a Write writes from it and returns when it is all written.
// A slow peer makes the writing task wait; it cannot make weft hold memory.

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Listener accepts stream connections on the loop: TCP or Unix.
type Listener struct {
	loop    *loop
	impl    listenerImpl
	emfile  atomic.Bool // "too many open files" has been logged once
	network string
}

// Conn is a stream connection (TCP or Unix) on the loop. Its Read and Write
// take the calling task; several tasks may use one Conn, one reading and one
// writing, say.
type Conn struct {
	loop    *loop
	impl    connImpl
	network string
	closed  atomic.Bool   // Close has been called
	dl      connDeadlines // read and write deadlines (net_deadline.go)
}

// PacketConn is a datagram socket (UDP or Unix datagram) on the loop.
type PacketConn struct {
	loop *loop
	impl packetImpl
}

type listenerImpl interface {
	accept(t *Task) (connImpl, error)
	addr() net.Addr
	close() error
}

type connImpl interface {
	read(t *Task, b []byte) (int, error)
	write(t *Task, b []byte) (int, error)
	closeWrite() error
	close() error
	localAddr() net.Addr
	remoteAddr() net.Addr
}

type packetImpl interface {
	readFrom(t *Task, b []byte) (int, net.Addr, error)
	writeTo(t *Task, b []byte, addr net.Addr) (int, error)
	localAddr() net.Addr
	close() error
}

// fdIO reports whether t's loop does I/O on raw fds (Linux, epoll or
// io_uring) rather than through the net and os packages.
func (l *loop) fdIO() bool { return haveFDIO && (l.caps.Edge || l.caps.Completion) }

// openImpl makes the implementation of what Listen, Dial or ListenPacket
// opens: through the task's Network if it has one (on), else with the
// backend of t's loop: raw fds on the poller (fd), or the net and os
// packages (portable). cfg holds the socket options of a ListenConfig or
// Dialer (nil: none); a Network has none.
func openImpl[I any](t *Task, network, address string, cfg *sockConfig,
	on func(*Task, Network, string, string) (I, error),
	fd, portable func(*Task, string, string, *sockConfig) (I, error)) (I, error) {
	if n := t.network(); n != nil {
		return on(t, n, network, address)
	}
	if err := t.rs.checkIO(network + " " + address); err != nil {
		var zero I
		return zero, err
	}
	if t.loop.fdIO() {
		return fd(t, network, address, cfg)
	}
	return portable(t, network, address, cfg)
}

// sameLoop panics unless t belongs to the Run an I/O object was made on.
func sameLoop(t *Task, l *loop, what string) {
	if t.rs != l.rs {
		panic("weft: " + what + " used from a task of another Run: an I/O object belongs to the Run it was made in")
	}
}

// Listen announces on a local address: network is "tcp", "tcp4", "tcp6" or
// "unix", and address is as for net.Listen (":8080", "127.0.0.1:0",
// "/tmp/sock"). It suspends the task only while it resolves a host name,
// which it does off the loop, and is a cancellation point then: if the
// task is cancelled, Listen returns an error matching context.Canceled.
// Errors are *net.OpError values, as from net.Listen; an unknown network
// is a net.UnknownNetworkError inside one.
//
// Accepted TCP connections get the net package's defaults: keep-alive
// probes after 15 s idle, every 15 s, 9 of them (so that a server finds
// its dead peers), and TCP_NODELAY (no Nagle delay: each Write is sent
// at once). ListenConfig changes the keep-alive period or turns it off.
//
// A task with a Network (WithNetwork, GoWithNetwork) listens on it
// instead, with its address forms and errors. In a seeded Run (WithSeed)
// without one, Listen, Dial and ListenPacket return an error wrapping
// ErrRealIO unless AllowRealIO.
func Listen(t *Task, network, address string) (*Listener, error) {
	t.check("Listen")
	return listen(t, network, address, netDefaults())
}

// netDefaults is the sockConfig of Listen and Dial: the net package's
// defaults (net.Listen's and net.Dial's keep-alive; TCP_NODELAY is set
// on every TCP connection).
func netDefaults() *sockConfig { return &sockConfig{keepAlive: defaultKeepAlive} }

// listen is Listen with a ListenConfig's options.
func listen(t *Task, network, address string, cfg *sockConfig) (*Listener, error) {
	l := t.loop
	impl, err := openImpl(t, network, address, cfg, listenOn, listenFD, listenPortable)
	if err != nil {
		return nil, err
	}
	return &Listener{loop: l, impl: impl, network: network}, nil
}

// Accept waits for and returns the next connection. It suspends while none
// is pending and is a cancellation point: if the task is cancelled it
// returns the cause (matching context.Canceled) and the listener is as it
// was, still listening.
//
// When the process runs out of file descriptors (EMFILE, ENFILE), Accept
// neither spins nor fails: it logs once through log/slog and retries after
// a pause that doubles from 5 ms up to 1 s, as net/http does, until
// descriptors free up. After Close it returns an error matching
// net.ErrClosed.
func (ln *Listener) Accept(t *Task) (*Conn, error) {
	t.check("Accept")
	sameLoop(t, ln.loop, "Listener")
	var delay time.Duration
	for {
		c, err := ln.impl.accept(t)
		if err == nil {
			return newConn(homeOf(t, c), c, ln.network), nil
		}
		if !isTooManyFiles(err) {
			return nil, err
		}
		if delay == 0 {
			delay = 5 * time.Millisecond
		} else {
			delay = min(2*delay, time.Second)
		}
		if ln.emfile.CompareAndSwap(false, true) && ln.loop.rs.logger != nil {
			ln.loop.rs.logger.Warn("weft: accept: out of file descriptors; retrying with back-off",
				"addr", ln.impl.addr().String(), "err", err)
		}
		if err := t.Sleep(delay); err != nil {
			return nil, opError("accept", ln.network, ln.impl.addr(), nil, err)
		}
	}
}

// Addr returns the listener's address. It does not suspend.
func (ln *Listener) Addr() net.Addr { return ln.impl.addr() }

// Close stops listening. A task suspended in Accept wakes with an error
// matching net.ErrClosed. Close does not suspend; it may be called from
// any task or goroutine, more than once (later calls return an error
// matching net.ErrClosed). The
// descriptor itself is released by the loop at its next scheduling point
// (at once if the Run has ended); a Unix socket's file is removed.
func (ln *Listener) Close() error { return ln.impl.close() }

// Dial connects to address on network ("tcp", "tcp4", "tcp6" or "unix"),
// suspending the task until the connection is made or fails, without
// blocking the loop (the connect is non-blocking). Dial is a cancellation
// point: if the task is cancelled it returns the cause (matching
// context.Canceled) and no connection is left open.
//
// A host name is resolved off the loop with net.DefaultResolver (through
// Offload); IP literals need no resolution. If a name has several
// addresses they are tried in turn. Errors are *net.OpError values, so
// errors.Is finds syscall.ECONNREFUSED and the like.
//
// A task with a Network dials through it; in a seeded Run without one,
// Dial returns an error wrapping ErrRealIO (see Listen).
//
// A TCP connection gets the net package's defaults, as net.Dial's: keep-
// alive probes after 15 s idle, every 15 s, 9 of them, and TCP_NODELAY.
// Dialer changes the keep-alive period or turns it off.
func Dial(t *Task, network, address string) (*Conn, error) {
	t.check("Dial")
	return dial(t, network, address, netDefaults())
}

// dial is Dial with a Dialer's options.
func dial(t *Task, network, address string, cfg *sockConfig) (*Conn, error) {
	l := t.loop
	impl, err := openImpl(t, network, address, cfg, dialOn, dialFD, dialPortable)
	if err != nil {
		return nil, err
	}
	if h, ok := impl.(interface{ homeLoop() *loop }); ok {
		l = h.homeLoop()
	}
	return newConn(l, impl, network), nil
}

// homeOf returns the loop an accepted connection lives on: its fd's (for
// raw fds, spread over the loops round-robin), or, for the portable layer's
// connections, the next loop round-robin too. Its reads and writes run
// there: a task moves there first (Conn.toHome).
func homeOf(t *Task, c connImpl) *loop {
	if h, ok := c.(interface{ homeLoop() *loop }); ok {
		return h.homeLoop()
	}
	return t.loop.rs.homeFor(t.loop)
}

// toHome moves t to c's loop, where c's deadlines and descriptor live,
// unless it is there already (see handover.go).
func (c *Conn) toHome(t *Task) error {
	for t.loop != c.loop {
		if err := t.migrate(c.loop, "a Conn"); err != nil {
			return err
		}
	}
	return nil
}

// Read reads up to len(b) bytes into b, suspending until some data is
// available. It returns io.EOF at the end of the stream. It is a
// cancellation point: if the task is cancelled while it waits, Read returns
// the cause (matching context.Canceled), no data is lost (nothing was read)
// and the connection stays usable. Past the read deadline (SetReadDeadline)
// it returns an error matching os.ErrDeadlineExceeded, as net.Conn does.
func (c *Conn) Read(t *Task, b []byte) (int, error) {
	t.check("Read")
	sameLoop(t, c.loop, "Conn")
	if len(b) == 0 {
		return 0, nil
	}
	d := &c.dl.rd
	if err := c.enterIO(t, "read", d); err != nil {
		return 0, err
	}
	n, err := c.impl.read(t, b)
	c.exitIO(t, d)
	return n, err
}

// Write writes all of b, suspending while the kernel's buffer is full, and
// returns len(b); on an error it returns how much was written. Writing to a
// connection the peer reset is an error (ECONNRESET or EPIPE), never a
// SIGPIPE. Write is a cancellation point while it waits: if the task is
// cancelled, Write returns the count written so far and the cause (matching
// context.Canceled); the rest of b was not sent, so the stream is cut at
// that point and should usually be closed. Past the write deadline
// (SetWriteDeadline) it returns what was written and an error matching
// os.ErrDeadlineExceeded.
func (c *Conn) Write(t *Task, b []byte) (int, error) {
	t.check("Write")
	sameLoop(t, c.loop, "Conn")
	d := &c.dl.wr
	if err := c.enterIO(t, "write", d); err != nil {
		return 0, err
	}
	n, err := c.impl.write(t, b)
	c.exitIO(t, d)
	return n, err
}

// enterIO starts a Read or Write (op) under d, the deadline of its
// direction: t moves to c's loop and registers with d there. On an error
// (the move failed, the deadline has passed) the operation is over.
// (Not a wrapper around the operation: that would put one more frame
// between the wait and the caller's line, which reports look for among
// the eight return addresses above the wait.)
func (c *Conn) enterIO(t *Task, op string, d *ioDeadline) error {
	if err := c.toHome(t); err != nil {
		return opError(op, c.network, c.impl.localAddr(), c.impl.remoteAddr(), err)
	}
	// The deadline's waiters and timer are c.loop's: t stays there until
	// exitIO (a wake-up must not hand it to another loop in between).
	t.pin++
	if err := d.enter(c.loop, t); err != nil {
		t.pin--
		return opError(op, c.network, c.impl.localAddr(), c.impl.remoteAddr(), err)
	}
	return nil
}

// exitIO ends what enterIO started.
func (c *Conn) exitIO(t *Task, d *ioDeadline) {
	d.exit(c.loop, t)
	t.pin--
}

// ReadWriter returns an io.ReadWriter that reads and writes c on behalf of
// t, for bufio, encoders and io.Copy. Its Read and Write suspend t as
// c.Read and c.Write do, and return the same errors (the cause, matching
// context.Canceled, if t is cancelled). Like t, it may be used only by t's
// own task. ReadWriter itself does not suspend.
func (c *Conn) ReadWriter(t *Task) io.ReadWriter {
	t.check("ReadWriter")
	sameLoop(t, c.loop, "Conn")
	return &taskRW{rw: c, t: t}
}

// taskIO is what Conn and File share: reads and writes on behalf of a task.
type taskIO interface {
	Read(t *Task, b []byte) (int, error)
	Write(t *Task, b []byte) (int, error)
}

// taskRW binds a taskIO to one task, as an io.ReadWriter.
type taskRW struct {
	rw taskIO
	t  *Task
}

func (rw *taskRW) Read(b []byte) (int, error)  { return rw.rw.Read(rw.t, b) }
func (rw *taskRW) Write(b []byte) (int, error) { return rw.rw.Write(rw.t, b) }

// CloseWrite shuts down the writing side: the peer reads EOF, and reading
// from c still works (a half-close). It does not suspend.
func (c *Conn) CloseWrite() error { return c.impl.closeWrite() }

// Close closes the connection. Tasks suspended in Read or Write on it wake
// with an error matching net.ErrClosed. Close does not suspend; it may be
// called from any task or goroutine, more than once (later calls return an
// error matching net.ErrClosed). The descriptor is released by the loop at its next
// scheduling point (at once if the Run has ended).
func (c *Conn) Close() error {
	c.closed.Store(true)
	return c.impl.close()
}

// LocalAddr returns the local address. It does not suspend.
func (c *Conn) LocalAddr() net.Addr { return c.impl.localAddr() }

// RemoteAddr returns the peer's address. It does not suspend.
func (c *Conn) RemoteAddr() net.Addr { return c.impl.remoteAddr() }

// ListenPacket opens a datagram socket on a local address: network is
// "udp", "udp4", "udp6" or "unixgram". As Listen, it suspends the task
// only while it resolves a host name, and is a cancellation point then
// (an error matching context.Canceled). Errors are as for Listen, and so
// is the use of the task's Network and ErrRealIO under a seed.
func ListenPacket(t *Task, network, address string) (*PacketConn, error) {
	t.check("ListenPacket")
	return listenPacket(t, network, address, nil)
}

// listenPacket is ListenPacket with a ListenConfig's options.
func listenPacket(t *Task, network, address string, cfg *sockConfig) (*PacketConn, error) {
	l := t.loop
	impl, err := openImpl(t, network, address, cfg, listenPacketOn, listenPacketFD, listenPacketPortable)
	if err != nil {
		return nil, err
	}
	return &PacketConn{loop: l, impl: impl}, nil
}

// ReadFrom reads one datagram into b, suspending until one arrives, and
// returns its size (truncated to len(b)) and sender. It is a cancellation
// point: if the task is cancelled while it waits, it returns the cause
// (matching context.Canceled) and no datagram is consumed.
func (c *PacketConn) ReadFrom(t *Task, b []byte) (int, net.Addr, error) {
	t.check("ReadFrom")
	sameLoop(t, c.loop, "PacketConn")
	return c.impl.readFrom(t, b)
}

// WriteTo sends b as one datagram to addr, suspending while the socket's
// buffer is full. It is a cancellation point while it waits: if the task is
// cancelled, it returns the cause (matching context.Canceled) and nothing
// was sent.
func (c *PacketConn) WriteTo(t *Task, b []byte, addr net.Addr) (int, error) {
	t.check("WriteTo")
	sameLoop(t, c.loop, "PacketConn")
	if addr == nil {
		return 0, opError("write", "", c.impl.localAddr(), nil, errMissingAddress)
	}
	return c.impl.writeTo(t, b, addr)
}

// LocalAddr returns the local address. It does not suspend.
func (c *PacketConn) LocalAddr() net.Addr { return c.impl.localAddr() }

// Close closes the socket, waking a task suspended on it with an error
// matching net.ErrClosed; as Conn.Close, it does not suspend and may be
// called from any task or goroutine.
func (c *PacketConn) Close() error { return c.impl.close() }

var (
	errMissingAddress = errors.New("missing address")
	errNoHalfClose    = errors.New("half-close not supported")
)

// isTooManyFiles reports whether err says the process or system is out of
// file descriptors.
func isTooManyFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// opError builds the error the net package would: op, network, addresses,
// and the cause.
func opError(op, network string, source, addr net.Addr, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	return &net.OpError{Op: op, Net: network, Source: source, Addr: addr, Err: err}
}

// Address parsing, shared by both implementations.

type netKind struct {
	family  int // 4, 6 or 0 (either) for IP networks
	unix    bool
	stream  bool
	network string
}

func parseNetwork(network string, stream bool) (netKind, error) {
	k := netKind{stream: stream, network: network}
	switch network {
	case "tcp", "udp":
	case "tcp4", "udp4":
		k.family = 4
	case "tcp6", "udp6":
		k.family = 6
	case "unix", "unixgram":
		k.unix = true
	default:
		return k, net.UnknownNetworkError(network)
	}
	tcp := network == "tcp" || network == "tcp4" || network == "tcp6" || network == "unix"
	if tcp != stream {
		return k, net.UnknownNetworkError(network)
	}
	return k, nil
}

// resolve turns host:port into candidate addresses for k, resolving a name
// off the loop (through Offload and net.DefaultResolver). An empty host
// gives the unspecified address when listening and the local host when
// dialling, as the net package does.
func resolve(t *Task, k netKind, address string, listening bool) ([]netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := resolvePort(t, k, portStr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		if listening {
			switch k.family {
			case 4:
				return []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), port)}, nil
			default:
				return []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Unspecified(), port)}, nil
			}
		}
		if k.family == 6 {
			return []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Loopback(), port)}, nil
		}
		return []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)}, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !familyMatches(k, ip) {
			return nil, &net.AddrError{Err: "address of the wrong family for " + k.network, Addr: host}
		}
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), port)}, nil
	}
	ctx := t.Context()
	ips, err := Offload(t, func() ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	})
	if err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for _, ip := range ips {
		if familyMatches(k, ip) {
			out = append(out, netip.AddrPortFrom(ip.Unmap(), port))
		}
	}
	if len(out) == 0 {
		return nil, &net.AddrError{Err: "no suitable address found", Addr: host}
	}
	return out, nil
}

func familyMatches(k netKind, ip netip.Addr) bool {
	switch k.family {
	case 4:
		return ip.Unmap().Is4()
	case 6:
		return ip.Is6() && !ip.Is4In6()
	}
	return true
}

func resolvePort(t *Task, k netKind, s string) (uint16, error) {
	if n, err := strconv.ParseUint(s, 10, 16); err == nil {
		return uint16(n), nil
	}
	if s == "" {
		return 0, nil
	}
	proto := "tcp"
	if !k.stream {
		proto = "udp"
	}
	ctx := t.Context()
	port, err := Offload(t, func() (int, error) { return net.DefaultResolver.LookupPort(ctx, proto, s) })
	if err != nil {
		return 0, err
	}
	return uint16(port), nil
}

// netAddr converts an address to the net package's type for k.
func netAddr(k netKind, ap netip.AddrPort) net.Addr {
	if k.stream {
		return net.TCPAddrFromAddrPort(ap)
	}
	return net.UDPAddrFromAddrPort(ap)
}
