//go:build linux

package weft

// Sockets and pipes as non-blocking fds on the epoll loop.
//
// Each fd is watched (registered edge-triggered) for its whole life. An
// operation tries its system call first and suspends on EAGAIN until the
// loop reports an edge, then tries again. The fd is closed on the loop,
// never by another goroutine: Close marks it closing (so every operation
// from then on fails with net.ErrClosed), shuts a socket down at once so the
// kernel stops accepting and the peer sees the end, and posts the rest
// (unregister, wake the waiters, close) to the loop. So no system call of
// the loop can ever hit a descriptor number reused by someone else.

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/poller"
	"golang.org/x/sys/unix"
)

const haveFDIO = true

type fdKind uint8

const (
	fdStream fdKind = iota // a connected stream socket
	fdListen               // a listening socket
	fdPacket               // a datagram socket
	fdPipe                 // a pipe end
)

// netFD's flags sit together after kind, so that an accepted connection's
// record is 168 bytes (the 176-byte size class) rather than 200.
type netFD struct {
	loop *loop
	fd   int
	kind fdKind
	// drained: the last receive on the ring returned less than its
	// buffer, so the next one polls first (home-loop-owned).
	drained bool
	rEOF    bool // the multishot receive's end came (see ms)
	noBufs  bool // the ring ran out of buffers: the next read is single-shot
	closing atomic.Bool
	network string
	laddr   net.Addr
	raddr   net.Addr
	unlink  string         // a Unix socket file to remove when a listener closes
	dl      *connDeadlines // a stream's deadlines; set once, before any I/O
	// w is fd's entry in its home loop's fd table, set there by the watch
	// (home-loop-owned: read only by a task running on fd.loop).
	w *fdWaiters
	// The multishot receive on the ring (net_fd_uring_linux.go), all
	// home-loop-owned: the operation while armed, the buffers it filled
	// that no Read has taken yet, and what came after them (rEOF, rErr).
	ms   *poller.Op
	rq   []recvd
	rErr error
	ops  *freeOps // when the home loop has a ring: its free operations (net_fd_uring_linux.go)
	// direct counts the plain goroutines inside a system call on fd
	// (readNow, writeNow), and holds directOwed once the release is due:
	// the last of them to leave releases the descriptor then (see
	// enterDirect).
	direct atomic.Int64
}

// directOwed is the bit of netFD.direct that says the release is due.
const directOwed = 1 << 40

// newNetFD wraps fd, already non-blocking, and watches it on t's loop,
// its home.
func newNetFD(t *Task, fd int, kind fdKind, network string) (*netFD, error) {
	return newNetFDOn(t, t.loop, fd, kind, network)
}

// newNetFDOn is newNetFD with another loop of the Run as the fd's home:
// the watch is then posted to that loop, ahead of anything the fd's
// users will post there, and if it fails the fd is closed (its operations
// fail with net.ErrClosed).
func newNetFDOn(t *Task, home *loop, fd int, kind fdKind, network string) (*netFD, error) {
	nfd := &netFD{loop: home, fd: fd, kind: kind, network: network}
	if home.ring != nil {
		nfd.ops = freeOpsOf(home)
	}
	if home == t.loop {
		w, err := home.fds.watch(home, fd)
		if err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("epoll_ctl", err)
		}
		nfd.w = w
		return nfd, nil
	}
	home.post(func() {
		w, err := home.fds.watch(home, fd)
		if err != nil {
			nfd.close()
			return
		}
		nfd.w = w
	})
	return nfd, nil
}

// opErr wraps err as the net package would for a socket, and as the os
// package would for a pipe.
func (fd *netFD) opErr(op string, err error) error {
	if fd.kind == fdPipe {
		if err == io.EOF {
			return err
		}
		if err == net.ErrClosed {
			err = os.ErrClosed
		}
		return &os.PathError{Op: op, Path: "pipe", Err: err}
	}
	return opError(op, fd.network, fd.laddr, fd.raddr, err)
}

// wait suspends t until fd may be ready for m (or is closing). A task on
// another loop than the fd's home moves there first and returns nil: the
// caller tries its system call again, on the fd's loop, where it waits
// (handover.go).
func (fd *netFD) wait(t *Task, m poller.Mode) error {
	if err, stop := fd.prepareWait(t, m); stop {
		return err
	}
	// waitWatched, written out, and the rarer paths in prepareWait: the
	// frames under the switch out of a connection's wait stay small, so
	// that a shallow connection task lives in its first 2 KiB of stack
	// (see coro.Coro.body).
	t.ensureExtra()
	t.newWait()
	if w := fd.w; w != nil && w.watched { // prepareWait: t is on fd's loop
		t.loop.fds.addTo(w, fd.fd, m, t)
	} else {
		t.loop.fds.add(fd.fd, m, t)
	}
	return t.block(waitFD)
}

// prepareWait readies t's wait for fd in direction m. stop says the wait
// must not happen: it returns err, or nil when t moved to the fd's loop
// (the caller tries its system call again there).
func (fd *netFD) prepareWait(t *Task, m poller.Mode) (err error, stop bool) {
	if err := t.cancelPoint(); err != nil {
		return err, true
	}
	if t.loop.aborted {
		return errAborted, true
	}
	if fd.loop != t.loop {
		return t.migrate(fd.loop, "a Conn, Listener or File"), true
	}
	if fd.dl != nil {
		// A deadline that passed while the task was runnable (its timer
		// found it not waiting) ends the operation here.
		if err := fd.dl.expired(t.loop, m); err != nil {
			return err, true
		}
	}
	if !t.loop.caps.Edge {
		// io_uring: no edges; a one-shot poll for this wait.
		if err := t.loop.poller.Arm(fd.fd, m); err != nil {
			return os.NewSyscallError("io_uring poll", err), true
		}
	}
	return nil, false
}

// armReadable is readableImpl's: on epoll, the fd is ready when an edge
// came since its reader last drained it (the kernel is asked with a
// poll(2) then, since the edge may be old) or it hung up; on io_uring,
// when its multishot receive has queued bytes, the end or an error (the
// receive is armed if it is not), or, without multishot receives, a
// one-shot poll is armed.
func (fd *netFD) armReadable(l *loop, t *Task) bool {
	if fd.closing.Load() || fd.kind != fdStream || fd.w == nil {
		return true // the Read finds out at once
	}
	if fd.useRing() {
		if p := l.ring.Provided(); p != nil && multishotRecv {
			if len(fd.rq) > 0 || fd.rEOF || fd.rErr != nil || fd.noBufs {
				return true
			}
			if fd.ms == nil {
				op := fd.ops.get()
				op.RecvMultishot(fd.fd, p)
				op.Owner = fd
				fd.ms = op
				l.ring.Submit(op)
			}
		} else if err := l.poller.Arm(fd.fd, poller.Read); err != nil {
			return true
		}
	} else if fd.w.hungUp || (!fd.w.drained && readyNow(fd.fd, poller.Read)) {
		return true
	}
	t.newWait() // t has its wait's record (prepareUnstarted)
	l.fds.add(fd.fd, poller.Read, t)
	return false
}

func (fd *netFD) bindDeadlines(dl *connDeadlines) { fd.dl = dl }

// homeLoop is the loop fd is registered on.
func (fd *netFD) homeLoop() *loop { return fd.loop }

// read reads a stream (a connected socket or a pipe). A read that
// returned less than b drained the fd, so the next one waits for an edge
// before it asks the kernel (see fdTable): on a request/response
// connection that saves the read that would find nothing.
func (fd *netFD) read(t *Task, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if fd.useRing() {
		return fd.recvOp(t, b)
	}
	waited := false
	for {
		if fd.closing.Load() {
			return 0, fd.opErr("read", net.ErrClosed)
		}
		// A pipe's reader may run on another loop than the fd's home (it
		// moves there only to wait), and a woken one may be handed over.
		var w *fdWaiters
		if t.loop == fd.loop {
			w = fd.w // nil until the watch ran on the home loop
		}
		if w != nil && w.drained && !waited {
			if err := fd.wait(t, poller.Read); err != nil {
				return 0, fd.opErr("read", err)
			}
			waited = true // one try whatever woke the wait
			continue
		}
		waited = false
		n, err := unix.Read(fd.fd, b)
		switch err {
		case nil:
			// The drained bit first: spend may give the loop away, and a
			// Read report collected meanwhile must clear the bit this
			// read sets, not be overwritten by it (a lost edge).
			if w != nil && n > 0 && n < len(b) {
				w.drain()
			}
			t.spendBudget()
			if n == 0 {
				if fd.closing.Load() {
					// Closed from another goroutine between the check
					// above and the call: its shutdown reads as an end.
					return 0, fd.opErr("read", net.ErrClosed)
				}
				return 0, io.EOF
			}
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if w != nil {
				w.drain()
			}
			if err := fd.wait(t, poller.Read); err != nil {
				return 0, fd.opErr("read", err)
			}
			continue
		}
		if fd.closing.Load() {
			return 0, fd.opErr("read", net.ErrClosed)
		}
		return 0, fd.opErr("read", os.NewSyscallError("read", err))
	}
}

func (fd *netFD) write(t *Task, b []byte) (int, error) {
	if fd.useRing() {
		return fd.sendOp(t, b)
	}
	written := 0
	for written < len(b) {
		if fd.closing.Load() {
			return written, fd.opErr("write", net.ErrClosed)
		}
		// write(2), as the net package does: the Go runtime ignores
		// SIGPIPE on descriptors other than 1 and 2, so a reset peer is an
		// EPIPE error, never a signal that kills the process.
		n, err := unix.Write(fd.fd, b[written:])
		if n > 0 {
			written += n
		}
		switch err {
		case nil, unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := fd.wait(t, poller.Write); err != nil {
				return written, fd.opErr("write", err)
			}
			continue
		}
		if fd.closing.Load() {
			// Closed from another goroutine meanwhile: its shutdown made
			// the write fail (EPIPE).
			return written, fd.opErr("write", net.ErrClosed)
		}
		return written, fd.opErr("write", os.NewSyscallError("write", err))
	}
	t.spendBudget()
	return written, nil
}

func (fd *netFD) closeWrite() error {
	if fd.closing.Load() {
		return fd.opErr("close", net.ErrClosed)
	}
	if err := unix.Shutdown(fd.fd, unix.SHUT_WR); err != nil {
		return fd.opErr("close", os.NewSyscallError("shutdown", err))
	}
	return nil
}

func (fd *netFD) close() error {
	if !fd.closing.CompareAndSwap(false, true) {
		return fd.opErr("close", net.ErrClosed)
	}
	if fd.kind == fdStream || fd.kind == fdListen {
		// Visible to the kernel now: a listener stops accepting, the peer
		// of a connection sees the end. The fd number stays ours.
		unix.Shutdown(fd.fd, unix.SHUT_RDWR)
	}
	l := fd.loop
	l.postRelease(func(onLoop bool) {
		if onLoop {
			l.fds.unwatch(l, fd.fd)
			fd.dropReceived(l)
		}
		if fd.direct.Add(directOwed) == directOwed {
			fd.release() // no goroutine is inside a system call on it
		}
	})
	return nil
}

// A GoConn's plain goroutine tries its system call on the descriptor
// itself first (readNow, writeNow), without the loop: on the epoll
// backend, a read of data already there or a write that fits costs the
// goroutine what net's would. The descriptor may be closed meanwhile, and
// its number reused, only once no goroutine is inside such a call: each
// one counts itself in fd.direct before it looks at closing, Close sets
// closing before it posts the release, and the release adds directOwed;
// whoever brings the count to exactly directOwed (the release with no
// goroutine inside, or the last goroutine out) closes the descriptor.
// What the loop owns of the fd (its registration, the drained bit) is
// left alone: a read that takes what an edge announced costs a task that
// waits for it one wake-up that finds nothing, never a lost one.

// enterDirect counts a goroutine in, unless fd is closing or is not a
// stream of the epoll backend (io_uring's receives queue data on the fd,
// which a system call of the goroutine's would overtake).
func (fd *netFD) enterDirect() bool {
	if fd.kind != fdStream || fd.loop.ring != nil || !fd.loop.caps.Edge {
		return false
	}
	for {
		s := fd.direct.Load()
		if s&directOwed != 0 {
			return false
		}
		if fd.direct.CompareAndSwap(s, s+1) {
			break
		}
	}
	if fd.closing.Load() {
		fd.exitDirect()
		return false
	}
	return true
}

func (fd *netFD) exitDirect() {
	if fd.direct.Add(-1) == directOwed {
		fd.release() // the release came while we were inside
	}
}

// readNow reads what is there, from a plain goroutine: done is false when
// nothing is (the caller asks the loop) or the fd is closing (the loop
// says so).
func (fd *netFD) readNow(b []byte) (n int, err error, done bool) {
	if !fd.enterDirect() {
		return 0, nil, false
	}
	defer fd.exitDirect()
	for {
		n, err := unix.Read(fd.fd, b)
		switch err {
		case nil:
			if n == 0 {
				return 0, io.EOF, true
			}
			return n, nil, true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil, false
		}
		return 0, fd.opErr("read", os.NewSyscallError("read", err)), true
	}
}

// writeNow writes what fits of b, from a plain goroutine, and reports how
// much; the caller asks the loop for the rest (and for every error, so
// that it comes as a task's would).
func (fd *netFD) writeNow(b []byte) int {
	if !fd.enterDirect() {
		return 0
	}
	defer fd.exitDirect()
	written := 0
	for written < len(b) {
		n, err := unix.Write(fd.fd, b[written:])
		if n > 0 {
			written += n
		}
		if err != nil && err != unix.EINTR {
			break
		}
	}
	return written
}

func (fd *netFD) release() {
	unix.Close(fd.fd)
	if fd.unlink != "" {
		os.Remove(fd.unlink)
	}
}

func (fd *netFD) localAddr() net.Addr  { return fd.laddr }
func (fd *netFD) remoteAddr() net.Addr { return fd.raddr }

func bindPipeFD(t *Task, pfd int) (fileImpl, error) {
	fd, err := newNetFD(t, pfd, fdPipe, "pipe")
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: "pipe", Err: err}
	}
	return fd, nil
}

// Sockets.

func socket(family, sotype int) (int, error) {
	s, err := unix.Socket(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	return s, nil
}

func sockaddrOf(ap netip.AddrPort) (unix.Sockaddr, int) {
	ip := ap.Addr()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
	if z := ip.Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		} else if n, err := strconv.Atoi(z); err == nil {
			sa.ZoneId = uint32(n)
		}
	}
	return sa, unix.AF_INET6
}

// addrOf converts a socket address to the net package's type for k.
func addrOf(k netKind, sa unix.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netAddr(k, netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)))
	case *unix.SockaddrInet6:
		return netAddr(k, netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)))
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: sa.Name, Net: k.network}
	}
	if k.unix {
		return &net.UnixAddr{Net: k.network}
	}
	return netAddr(k, netip.AddrPort{}) // unknown, but never a nil interface
}

func (fd *netFD) fillAddrs(k netKind) {
	if sa, err := unix.Getsockname(fd.fd); err == nil {
		fd.laddr = addrOf(k, sa)
	}
	if fd.kind == fdStream && fd.raddr == nil {
		if sa, err := unix.Getpeername(fd.fd); err == nil {
			fd.raddr = addrOf(k, sa)
		}
	}
	if fd.kind == fdStream && fd.raddr == nil {
		// The peer reset before we asked: an address of the right type,
		// unknown, rather than nil (net.Conn's users call its methods).
		fd.raddr = addrOf(k, nil)
	}
	if fd.laddr == nil {
		fd.laddr = addrOf(k, nil)
	}
}

func listenFD(t *Task, network, address string, cfg *sockConfig) (listenerImpl, error) {
	k, err := parseNetwork(network, true)
	if err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	opErr := func(err error) error {
		return opError("listen", network, nil, &net.UnixAddr{Name: address, Net: network}, err)
	}
	var sa unix.Sockaddr
	family := unix.AF_UNIX
	if k.unix {
		sa = &unix.SockaddrUnix{Name: address}
	} else {
		aps, err := resolve(t, k, address, true)
		if err != nil {
			return nil, opError("listen", network, nil, nil, err)
		}
		opErr = func(err error) error { return opError("listen", network, nil, netAddr(k, aps[0]), err) }
		sa, family = sockaddrOf(aps[0])
	}
	s, err := socketOrIPv4(&sa, &family, unix.SOCK_STREAM)
	if err != nil {
		return nil, opErr(err)
	}
	if !k.unix {
		unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		if family == unix.AF_INET6 && k.family == 0 {
			unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
		}
	}
	if err := cfg.beforeBind(s, k, sa); err != nil { // a ListenConfig's (net_sockopt_linux.go)
		unix.Close(s)
		return nil, opErr(err)
	}
	if err := unix.Bind(s, sa); err != nil {
		unix.Close(s)
		return nil, opErr(os.NewSyscallError("bind", err))
	}
	if err := unix.Listen(s, cfg.backlogOr(listenBacklog)); err != nil {
		unix.Close(s)
		return nil, opErr(os.NewSyscallError("listen", err))
	}
	fd, err := newNetFD(t, s, fdListen, network)
	if err != nil {
		return nil, opErr(err)
	}
	fd.fillAddrs(k)
	if k.unix {
		fd.unlink = address
	}
	return &fdListener{fd: fd, k: k, keepAlive: cfg.keepAliveOrNone()}, nil
}

// socketOrIPv4 makes a socket for *sa; a wildcard IPv6 address on a system
// without IPv6 falls back to the IPv4 wildcard, as the net package does.
func socketOrIPv4(sa *unix.Sockaddr, family *int, sotype int) (int, error) {
	s, err := socket(*family, sotype)
	if err != nil && *family == unix.AF_INET6 && errors.Is(err, unix.EAFNOSUPPORT) {
		if in6, ok := (*sa).(*unix.SockaddrInet6); ok && in6.Addr == [16]byte{} {
			*sa, *family = &unix.SockaddrInet4{Port: in6.Port}, unix.AF_INET
			return socket(*family, sotype)
		}
	}
	return s, err
}

// listenBacklog is the kernel's limit, as the net package uses.
func listenBacklog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err == nil {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		if n > 0 {
			return min(n, 1<<16-1)
		}
	}
	return unix.SOMAXCONN
}

type fdListener struct {
	fd        *netFD
	k         netKind
	keepAlive time.Duration // > 0: accepted TCP connections send keep-alive probes (ListenConfig)
}

func (ln *fdListener) addr() net.Addr { return ln.fd.laddr }
func (ln *fdListener) close() error   { return ln.fd.close() }

func (ln *fdListener) accept(t *Task) (connImpl, error) {
	fd := ln.fd
	if fd.loop.ring != nil {
		return ln.acceptOp(t)
	}
	for {
		if fd.closing.Load() {
			return nil, fd.opErr("accept", net.ErrClosed)
		}
		s, peer, err := unix.Accept4(fd.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
			t.spendBudget()
			if ln.keepAlive > 0 {
				setKeepAlive(s, ln.keepAlive)
			}
			return newStreamConn(t, s, ln.k, peer)
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EAGAIN:
			if err := fd.wait(t, poller.Read); err != nil {
				return nil, fd.opErr("accept", err)
			}
			continue
		}
		if fd.closing.Load() {
			// Closed from another goroutine between the check above and
			// the call: its shutdown makes accept4 fail (EINVAL).
			return nil, fd.opErr("accept", net.ErrClosed)
		}
		return nil, fd.opErr("accept", os.NewSyscallError("accept4", err))
	}
}

// newStreamConn binds the accepted socket s; peer is the address accept4
// returned. It is kept as the remote address rather than asked again with
// getpeername, which fails (ENOTCONN) once a client that connected has
// reset: an accepted connection always has its peer's address.
func newStreamConn(t *Task, s int, k netKind, peer unix.Sockaddr) (*netFD, error) {
	if !k.unix {
		unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	// Connections are spread over the Run's loops (handover.go).
	fd, err := newNetFDOn(t, t.loop.rs.homeFor(t.loop), s, fdStream, k.network)
	if err != nil {
		return nil, opError("accept", k.network, nil, nil, err)
	}
	if peer != nil {
		fd.raddr = addrOf(k, peer)
	}
	fd.fillAddrs(k)
	return fd, nil
}

func dialFD(t *Task, network, address string, cfg *sockConfig) (connImpl, error) {
	k, err := parseNetwork(network, true)
	if err != nil {
		return nil, opError("dial", network, nil, nil, err)
	}
	if k.unix {
		raddr := &net.UnixAddr{Name: address, Net: network}
		c, err := connectFD(t, k, &unix.SockaddrUnix{Name: address}, unix.AF_UNIX, cfg)
		if err != nil {
			return nil, opError("dial", network, nil, raddr, err)
		}
		return c, nil
	}
	aps, err := resolve(t, k, address, false)
	if err == nil {
		aps, err = cfg.suitable(k, aps) // a Dialer's LocalAddr
	}
	if err != nil {
		return nil, opError("dial", network, nil, nil, err)
	}
	var first error
	for _, ap := range aps {
		sa, family := sockaddrOf(ap)
		c, err := connectFD(t, k, sa, family, cfg)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = opError("dial", network, nil, netAddr(k, ap), err)
		}
		if isCancellation(err) {
			break
		}
	}
	return nil, first
}

// connectFD makes a socket and connects it without blocking the loop: a
// connect in progress is waited for as writability, then SO_ERROR tells how
// it ended.
func connectFD(t *Task, k netKind, sa unix.Sockaddr, family int, cfg *sockConfig) (*netFD, error) {
	if err := t.cancelPoint(); err != nil {
		return nil, err
	}
	s, err := socket(family, unix.SOCK_STREAM)
	if err != nil {
		return nil, err
	}
	if err := cfg.beforeConnect(s, k, sa); err != nil { // a Dialer's (net_sockopt_linux.go)
		unix.Close(s)
		return nil, err
	}
	fd, err := newNetFD(t, s, fdStream, k.network)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*netFD, error) {
		fd.closing.Store(true)
		t.loop.fds.unwatch(t.loop, s)
		unix.Close(s)
		return nil, err
	}
	if fd.loop.ring != nil {
		if err := fd.connectOp(t, sa); err != nil {
			return fail(err)
		}
		goto connected
	}
	switch err := unix.Connect(s, sa); err {
	case nil, unix.EISCONN:
	case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
		for {
			if err := fd.wait(t, poller.Write); err != nil {
				return fail(err)
			}
			soerr, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return fail(os.NewSyscallError("getsockopt", err))
			}
			switch e := unix.Errno(soerr); e {
			case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
				continue
			case 0, unix.EISCONN:
				if _, err := unix.Getpeername(s); err == nil {
					goto connected
				}
				continue // spurious wakeup before the connect finished
			default:
				return fail(os.NewSyscallError("connect", e))
			}
		}
	default:
		return fail(os.NewSyscallError("connect", err))
	}
connected:
	if !k.unix {
		unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	fd.fillAddrs(k)
	return fd, nil
}

// Datagram sockets.

type fdPacketConn struct {
	fd     *netFD
	k      netKind
	family int // AF_INET, AF_INET6 or AF_UNIX
}

func listenPacketFD(t *Task, network, address string, cfg *sockConfig) (packetImpl, error) {
	k, err := parseNetwork(network, false)
	if err != nil {
		return nil, opError("listen", network, nil, nil, err)
	}
	var sa unix.Sockaddr
	family := unix.AF_UNIX
	var laddr net.Addr = &net.UnixAddr{Name: address, Net: network}
	if !k.unix {
		aps, err := resolve(t, k, address, true)
		if err != nil {
			return nil, opError("listen", network, nil, nil, err)
		}
		sa, family = sockaddrOf(aps[0])
		laddr = netAddr(k, aps[0])
	} else {
		sa = &unix.SockaddrUnix{Name: address}
	}
	s, err := socketOrIPv4(&sa, &family, unix.SOCK_DGRAM)
	if err != nil {
		return nil, opError("listen", network, nil, laddr, err)
	}
	if family == unix.AF_INET6 && k.family == 0 {
		unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	if err := cfg.beforeBind(s, k, sa); err != nil { // a ListenConfig's (net_sockopt_linux.go)
		unix.Close(s)
		return nil, opError("listen", network, nil, laddr, err)
	}
	if err := unix.Bind(s, sa); err != nil {
		unix.Close(s)
		return nil, opError("listen", network, nil, laddr, os.NewSyscallError("bind", err))
	}
	fd, err := newNetFD(t, s, fdPacket, network)
	if err != nil {
		return nil, opError("listen", network, nil, laddr, err)
	}
	fd.fillAddrs(k)
	if k.unix {
		fd.unlink = address
	}
	return &fdPacketConn{fd: fd, k: k, family: family}, nil
}

func (c *fdPacketConn) localAddr() net.Addr { return c.fd.laddr }
func (c *fdPacketConn) close() error        { return c.fd.close() }

func (c *fdPacketConn) readFrom(t *Task, b []byte) (int, net.Addr, error) {
	fd := c.fd
	for {
		if fd.closing.Load() {
			return 0, nil, fd.opErr("read", net.ErrClosed)
		}
		n, from, err := unix.Recvfrom(fd.fd, b, 0)
		switch err {
		case nil:
			t.spendBudget()
			return n, addrOf(c.k, from), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := fd.wait(t, poller.Read); err != nil {
				return 0, nil, fd.opErr("read", err)
			}
			continue
		}
		return 0, nil, fd.opErr("read", os.NewSyscallError("recvfrom", err))
	}
}

func (c *fdPacketConn) writeTo(t *Task, b []byte, addr net.Addr) (int, error) {
	fd := c.fd
	sa, err := c.sockaddr(addr)
	if err != nil {
		return 0, opError("write", fd.network, fd.laddr, addr, err)
	}
	for {
		if fd.closing.Load() {
			return 0, opError("write", fd.network, fd.laddr, addr, net.ErrClosed)
		}
		err := unix.Sendto(fd.fd, b, unix.MSG_NOSIGNAL, sa)
		switch err {
		case nil:
			t.spendBudget()
			return len(b), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := fd.wait(t, poller.Write); err != nil {
				return 0, opError("write", fd.network, fd.laddr, addr, err)
			}
			continue
		}
		return 0, opError("write", fd.network, fd.laddr, addr, os.NewSyscallError("sendto", err))
	}
}

// sockaddr converts a destination to a socket address of c's family.
func (c *fdPacketConn) sockaddr(addr net.Addr) (unix.Sockaddr, error) {
	if c.k.unix {
		ua, ok := addr.(*net.UnixAddr)
		if !ok {
			return nil, &net.AddrError{Err: "not a Unix address", Addr: addr.String()}
		}
		return &unix.SockaddrUnix{Name: ua.Name}, nil
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return nil, &net.AddrError{Err: "not a UDP address", Addr: addr.String()}
	}
	ap := ua.AddrPort()
	ip := ap.Addr().Unmap()
	if !familyMatches(c.k, ip) || (c.family == unix.AF_INET && !ip.Is4()) {
		return nil, &net.AddrError{Err: "address of the wrong family", Addr: addr.String()}
	}
	if c.family == unix.AF_INET6 && ip.Is4() {
		// A dual-stack socket reaches IPv4 peers through mapped addresses.
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}, nil
	}
	sa, _ := sockaddrOf(netip.AddrPortFrom(ip, ap.Port()))
	return sa, nil
}
