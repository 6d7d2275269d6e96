//go:build linux

package weft

import (
	"io"
	"net"
	"os"

	"github.com/weft-go/weft/internal/poller"
	"golang.org/x/sys/unix"
)

// maxSendfile bounds one sendfile(2) call, as the net package does, so
// that a task sending a large file gives way between calls.
const maxSendfile = 4 << 20

// sendFile sends up to n bytes (n < 0: to the end) of the regular file f
// from its offset with sendfile(2), waiting for the socket as write does
// (on io_uring too: a one-shot poll for the wait), and leaves f's offset
// after what was sent. Not a stream socket, or not a regular file: not
// handled.
func (fd *netFD) sendFile(t *Task, f *os.File, n int64) (int64, bool, error) {
	if fd.kind != fdStream {
		return 0, false, nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false, nil
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false, nil
	}
	if n < 0 || pos+n > fi.Size() {
		n = max(fi.Size()-pos, 0)
	}
	var written int64
	var werr error
	for written < n && werr == nil {
		if fd.closing.Load() {
			werr = fd.opErr("sendfile", net.ErrClosed)
			break
		}
		var m int
		var serr error
		if cerr := sc.Read(func(ffd uintptr) bool {
			m, serr = unix.Sendfile(fd.fd, int(ffd), &pos, int(min(n-written, maxSendfile)))
			return true
		}); cerr != nil {
			werr = cerr
			break
		}
		if m > 0 {
			written += int64(m)
		}
		switch serr {
		case nil:
			if m == 0 {
				n = written // the file ended sooner than its size said
			}
			t.spendBudget()
		case unix.EINTR:
		case unix.EAGAIN:
			if err := fd.wait(t, poller.Write); err != nil {
				werr = fd.opErr("sendfile", err)
			}
		default:
			werr = fd.opErr("sendfile", os.NewSyscallError("sendfile", serr))
		}
	}
	if _, err := f.Seek(pos, io.SeekStart); err != nil && werr == nil {
		werr = err
	}
	return written, true, werr
}
