//go:build unix

// Package fdutil holds small file-descriptor helpers shared by weft, its
// tests and its programs.
package fdutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// Pipe returns a pipe whose ends are non-blocking and close-on-exec. It uses
// pipe2 where the system has it and pipe plus fcntl elsewhere (the race with
// a concurrent fork is harmless: the fds are marked close-on-exec at once).
func Pipe() (r, w int, err error) {
	var p [2]int
	if err := pipe(p[:]); err != nil {
		return -1, -1, os.NewSyscallError("pipe", err)
	}
	for _, fd := range p {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, os.NewSyscallError("fcntl", err)
		}
	}
	return p[0], p[1], nil
}
