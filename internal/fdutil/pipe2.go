//go:build linux || freebsd || netbsd || openbsd || dragonfly || solaris || illumos

package fdutil

import "golang.org/x/sys/unix"

func pipe(p []int) error { return unix.Pipe2(p, unix.O_CLOEXEC|unix.O_NONBLOCK) }
