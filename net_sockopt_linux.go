//go:build linux

package weft

// A ListenConfig's and a Dialer's options on the fd layer's sockets
// (net_config.go): applied between the socket's making and its bind or
// connect, so that net_fd_linux.go only calls beforeBind and
// beforeConnect.

import (
	"errors"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// beforeBind applies a ListenConfig's options to the listening or
// datagram socket s, about to be bound to sa.
func (c *sockConfig) beforeBind(s int, k netKind, sa unix.Sockaddr) error {
	if c == nil {
		return nil
	}
	if c.reusePort && !k.unix {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
	}
	if c.control != nil {
		return c.control(ctrlNetwork(k, sa), addrOf(k, sa).String(), rawConn(s))
	}
	return nil
}

// beforeConnect applies a Dialer's options to the stream socket s, about
// to connect to sa: its Control, its local address, keep-alive.
func (c *sockConfig) beforeConnect(s int, k netKind, sa unix.Sockaddr) error {
	if c == nil {
		return nil
	}
	if c.control != nil {
		if err := c.control(ctrlNetwork(k, sa), addrOf(k, sa).String(), rawConn(s)); err != nil {
			return err
		}
	}
	if c.localAddr != nil {
		if err := unix.Bind(s, localSockaddr(c.localAddr, sa)); err != nil {
			return os.NewSyscallError("bind", err)
		}
	}
	if c.keepAlive > 0 && !k.unix {
		setKeepAlive(s, c.keepAlive)
	}
	return nil
}

// localSockaddr is a Dialer's LocalAddr for a socket of remote's family.
func localSockaddr(la net.Addr, remote unix.Sockaddr) unix.Sockaddr {
	switch la := la.(type) {
	case *net.UnixAddr:
		return &unix.SockaddrUnix{Name: la.Name}
	case *net.TCPAddr:
		ip := la.IP
		if _, v6 := remote.(*unix.SockaddrInet6); v6 {
			sa := &unix.SockaddrInet6{Port: la.Port}
			if len(ip) > 0 {
				copy(sa.Addr[:], ip.To16())
			}
			return sa
		}
		sa := &unix.SockaddrInet4{Port: la.Port}
		if ip4 := ip.To4(); ip4 != nil {
			copy(sa.Addr[:], ip4)
		}
		return sa
	}
	return remote // checkLocal allows nothing else
}

// ctrlNetwork names the socket's network for a Control function: the
// family's ("tcp4", "udp6"), as the net package does.
func ctrlNetwork(k netKind, sa unix.Sockaddr) string {
	if k.unix {
		return k.network
	}
	base := "udp"
	if k.stream {
		base = "tcp"
	}
	if _, v6 := sa.(*unix.SockaddrInet6); v6 {
		return base + "6"
	}
	return base + "4"
}

// setKeepAlive turns on TCP keep-alive probes every d (at least a second)
// after d idle, 9 of them, as the net package's default does.
func setKeepAlive(s int, d time.Duration) {
	secs := max(int((d+time.Second-1)/time.Second), 1)
	unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, secs)
	unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs)
	unix.SetsockoptInt(s, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 9)
}

// rawConn is a socket not yet handed to the loop, as a syscall.RawConn for
// a Control function.
type rawConn int

var errRawNotReady = errors.New("weft: the socket is not ready, and a Control function must not wait for it")

func (c rawConn) Control(f func(fd uintptr)) error {
	f(uintptr(c))
	return nil
}

func (c rawConn) Read(f func(fd uintptr) bool) error {
	if !f(uintptr(c)) {
		return errRawNotReady
	}
	return nil
}

func (c rawConn) Write(f func(fd uintptr) bool) error {
	if !f(uintptr(c)) {
		return errRawNotReady
	}
	return nil
}
