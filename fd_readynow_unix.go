//go:build unix

package weft

import (
	"github.com/weft-go/weft/internal/poller"
	"golang.org/x/sys/unix"
)

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
