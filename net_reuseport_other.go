//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package weft

import (
	"errors"
	"runtime"
	"syscall"
)

// setReusePort fails: SO_REUSEPORT is not available here.
func setReusePort(network string, rc syscall.RawConn) error {
	return errors.New("weft: ListenConfig.ReusePort is not supported on " + runtime.GOOS)
}

// listenAgain leaves the backlog as the net package set it: it cannot be
// changed here.
func listenAgain(fd uintptr, backlog int) error { return nil }
