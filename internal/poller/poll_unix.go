//go:build unix

package poller

// The poll(2) backend: portable to every Unix, O(armed fds) per Wait.
// Interest lives in a slice rebuilt lazily; a self-pipe carries Wake.
// It has no edge-triggered mode: weft's portable I/O layer does not need one.

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

type pollBackend struct {
	armed map[int]Mode
	pfds  []unix.PollFd
	rpipe int
	wpipe int
	woken atomic.Bool
}

func newPoll() (*pollBackend, error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return nil, os.NewSyscallError("pipe", err)
	}
	for _, fd := range p {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return nil, os.NewSyscallError("fcntl", err)
		}
	}
	return &pollBackend{armed: make(map[int]Mode), rpipe: p[0], wpipe: p[1]}, nil
}

// portableCaps are the poll(2) backend's capabilities.
var portableCaps = Caps{Name: "poll", FDs: true}

func (p *pollBackend) Caps() Caps { return portableCaps }

func (p *pollBackend) Arm(fd int, m Mode) error {
	if fd < 0 {
		return unix.EBADF
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		return err
	}
	p.armed[fd] |= m
	return nil
}

func (p *pollBackend) Disarm(fd int, m Mode) error {
	if cur, ok := p.armed[fd]; ok {
		if cur &^= m; cur == 0 {
			delete(p.armed, fd)
		} else {
			p.armed[fd] = cur
		}
	}
	return nil
}

func (p *pollBackend) Watch(int) error   { return ErrUnsupported }
func (p *pollBackend) Unwatch(int) error { return nil }

func (p *pollBackend) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
	p.pfds = append(p.pfds[:0], unix.PollFd{Fd: int32(p.rpipe), Events: unix.POLLIN})
	for fd, m := range p.armed {
		var ev int16
		if m&Read != 0 {
			ev |= unix.POLLIN
		}
		if m&Write != 0 {
			ev |= unix.POLLOUT
		}
		p.pfds = append(p.pfds, unix.PollFd{Fd: int32(fd), Events: ev})
	}
	_, err := unix.Poll(p.pfds, roundUpMillis(timeout))
	if err == unix.EINTR {
		return evs, nil
	}
	if err != nil {
		return evs, os.NewSyscallError("poll", err)
	}
	if p.pfds[0].Revents != 0 {
		var buf [64]byte
		for {
			if n, _ := unix.Read(p.rpipe, buf[:]); n <= 0 {
				break
			}
		}
		p.woken.Store(false)
	}
	for _, pfd := range p.pfds[1:] {
		if pfd.Revents == 0 {
			continue
		}
		var ready Mode
		if pfd.Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			ready |= Read
		}
		if pfd.Revents&(unix.POLLOUT|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			ready |= Write
		}
		fd := int(pfd.Fd)
		ready &= p.armed[fd]
		if ready == 0 {
			continue
		}
		p.Disarm(fd, ready)
		evs = append(evs, Event{Fd: pfd.Fd, Ready: ready})
	}
	return evs, nil
}

func (p *pollBackend) Wake() error {
	if p.woken.Swap(true) {
		return nil
	}
	_, err := unix.Write(p.wpipe, []byte{1})
	if err == unix.EAGAIN {
		err = nil
	}
	return err
}

func (p *pollBackend) Close() error {
	unix.Close(p.wpipe)
	return unix.Close(p.rpipe)
}

func newPortable() (Poller, error) { return newPoll() }

// roundUpMillis converts a timeout to whole milliseconds for system calls
// that take them (poll here, epoll_wait on kernels without epoll_pwait2),
// rounding up so that a deadline is never reported early.
func roundUpMillis(d time.Duration) int {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<30 {
		ms = 1 << 30
	}
	return int(ms)
}
