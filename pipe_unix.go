//go:build unix

package weft

import (
	"os"

	"github.com/weft-go/weft/internal/fdutil"
	"golang.org/x/sys/unix"
)

// Pipe returns a connected pair of Files: what is written to w can be read
// from r. Both ends are non-blocking and close-on-exec; they bind to the
// loop of the first task that uses them. Pipe takes no task and does not
// suspend.
func Pipe() (r, w *File, err error) {
	rfd, wfd, err := fdutil.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &File{fd: rfd}, &File{fd: wfd}, nil
}

func bindFile(t *Task, f *File) (fileImpl, error) {
	if t.loop.fdIO() {
		return bindPipeFD(t, f.fd)
	}
	f.os = os.NewFile(uintptr(f.fd), "pipe")
	return newPortableFile(f.os), nil
}

func closeFD(fd int) error {
	if err := unix.Close(fd); err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}
