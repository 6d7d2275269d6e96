//go:build linux

package weft

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// ConnSockopt reads an integer socket option of c's socket, on either
// backend (tests of ListenConfig's and Dialer's options).
func ConnSockopt(c *Conn, level, opt int) (int, error) {
	switch impl := c.impl.(type) {
	case *netFD:
		return unix.GetsockoptInt(impl.fd, level, opt)
	case *portableConn:
		sc, ok := impl.c.(syscall.Conn)
		if !ok {
			return 0, errors.New("no SyscallConn")
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return 0, err
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
			return 0, err
		}
		return v, gerr
	}
	return 0, errors.New("not a socket")
}
