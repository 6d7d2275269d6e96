//go:build unix && !(linux || freebsd || netbsd || openbsd || dragonfly || solaris || illumos)

package fdutil

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func pipe(p []int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p); err != nil {
		return err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return nil
}
