//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package weft

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setReusePort sets SO_REUSEPORT on the socket behind rc (the portable
// layer's ListenConfig.ReusePort).
func setReusePort(network string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt", serr)
}

// listenAgain changes a listening socket's backlog.
func listenAgain(fd uintptr, backlog int) error {
	return os.NewSyscallError("listen", unix.Listen(int(fd), backlog))
}
