//go:build unix

package weft

import (
	"github.com/weft-go/weft/internal/poller"
	"golang.org/x/sys/unix"
)

// Readable suspends the task until fd is ready for reading (or at end of
// file, or in error), like poll(2) with POLLIN: it does not read. It is a
// cancellation point: if the task is cancelled, it returns the cause
// (matching context.Canceled) and the fd is left as it was.
//
// A bad fd returns an error matching syscall.EBADF. Regular files are
// always ready. The fd must stay open while a task waits on it: closing it then is a bug
// that the kernel does not report, and the task would wait for ever.
func Readable(t *Task, fd int) error {
	t.check("Readable")
	return t.waitFD(fd, poller.Read)
}

// Writable suspends the task until fd is ready for writing (or in error),
// like poll(2) with POLLOUT. It is a cancellation point: if the task is
// cancelled, it returns the cause (matching context.Canceled). It is
// otherwise like Readable.
func Writable(t *Task, fd int) error {
	t.check("Writable")
	return t.waitFD(fd, poller.Write)
}

// readyNow asks the kernel, without waiting, whether fd is ready for m.
func readyNow(fd int, m poller.Mode) bool {
	ev := int16(unix.POLLIN)
	if m == poller.Write {
		ev = unix.POLLOUT
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: ev}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n > 0
}
