//go:build linux

package poller

// Some facts about epoll that this backend relies on:
//
//   - EPOLL_CTL_ADD on an fd that is already ready queues it at once, so a
//     level interest armed on a ready fd is reported by the next wait.
//   - With EPOLLONESHOT the registration stays but is disabled after one
//     report; EPOLL_CTL_MOD re-enables it. Closing the last descriptor of a
//     file removes its registration silently, so a later MOD on a reused fd
//     number fails with ENOENT and we ADD instead.
//   - Regular files cannot be registered (EPERM); they are always ready, so
//     Arm reports them ready at the next Wait without asking the kernel.
//   - The eventfd used for Wake is registered level-triggered and read empty
//     whenever it is reported.
//   - epoll_pwait2 (Linux 5.11) takes a nanosecond timeout; older kernels
//     get epoll_wait with the timeout rounded up to whole milliseconds.
//   - A wait blocks the loop's thread in epoll_pwait2 (or epoll_wait), as
//     gnet's loops do. It used to park the loop's goroutine in the Go
//     runtime's own netpoller instead (the epoll fd is itself pollable),
//     so that a wakeup landed on a thread holding a processor; measured
//     again (issue 27), the park cost more than it saved: each round trip
//     of a lightly loaded server went through the runtime's scheduler (its
//     own epoll_wait, a second thread woken, the monitor thread polled at
//     its fastest), and a one-connection echo server served 1.5 to 1.9
//     times fewer requests per CPU-second and answered slower (p99 beside
//     a CPU task 670 µs against 184 µs). A blocking wait is also precise
//     to the nanosecond, where the runtime's deadlines are not.

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

type fdEntry struct {
	armed   Mode // one-shot level interest not yet reported
	added   bool // registered with the kernel (possibly disabled by ONESHOT)
	watched bool // edge-triggered registration
}

type epoll struct {
	epfd    int
	wakefd  int
	fds     map[int]*fdEntry
	always  []Event // armed regular files: ready without asking the kernel
	kbuf    []unix.EpollEvent
	noPwait bool        // epoll_pwait2 missing: use epoll_wait
	woken   atomic.Bool // an eventfd write is outstanding
}

func newEpoll() (*epoll, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	p := &epoll{epfd: epfd, wakefd: wfd, fds: make(map[int]*fdEntry), kbuf: make([]unix.EpollEvent, 256)}
	return p, nil
}

// epollCaps are the epoll backend's capabilities.
var epollCaps = Caps{Name: "epoll", FDs: true, Edge: true}

func (p *epoll) Caps() Caps { return epollCaps }

func modeBits(m Mode) uint32 {
	var b uint32
	if m&Read != 0 {
		b |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if m&Write != 0 {
		b |= unix.EPOLLOUT
	}
	return b
}

func (p *epoll) ctl(fd int, e *fdEntry, bits uint32) error {
	ev := unix.EpollEvent{Events: bits, Fd: int32(fd)}
	op := unix.EPOLL_CTL_MOD
	if !e.added {
		op = unix.EPOLL_CTL_ADD
	}
	err := unix.EpollCtl(p.epfd, op, fd, &ev)
	switch {
	case err == unix.ENOENT && op == unix.EPOLL_CTL_MOD:
		err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	case err == unix.EEXIST && op == unix.EPOLL_CTL_ADD:
		err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	}
	if err != nil {
		return err
	}
	e.added = true
	return nil
}

func (p *epoll) entry(fd int) *fdEntry {
	e := p.fds[fd]
	if e == nil {
		e = &fdEntry{}
		p.fds[fd] = e
	}
	return e
}

func (p *epoll) Arm(fd int, m Mode) error {
	if fd < 0 {
		return unix.EBADF
	}
	e := p.entry(fd)
	if e.watched {
		return ErrUnsupported
	}
	if e.armed&m == m {
		return nil
	}
	err := p.ctl(fd, e, modeBits(e.armed|m)|unix.EPOLLONESHOT)
	if err == unix.EPERM {
		// A regular file (or another fd epoll refuses): always ready.
		p.always = append(p.always, Event{Fd: int32(fd), Ready: m})
		if e.armed == 0 && !e.added {
			delete(p.fds, fd)
		}
		return nil
	}
	if err != nil {
		if e.armed == 0 && !e.added {
			delete(p.fds, fd)
		}
		return err
	}
	e.armed |= m
	return nil
}

func (p *epoll) Disarm(fd int, m Mode) error {
	for i := 0; i < len(p.always); i++ {
		if int(p.always[i].Fd) == fd {
			p.always[i].Ready &^= m
		}
	}
	e := p.fds[fd]
	if e == nil || e.armed&m == 0 {
		return nil
	}
	e.armed &^= m
	if e.armed == 0 {
		// Leave the registration disabled rather than deleting it: a later
		// Arm re-enables it with one MOD.
		return p.ctl(fd, e, unix.EPOLLONESHOT)
	}
	return p.ctl(fd, e, modeBits(e.armed)|unix.EPOLLONESHOT)
}

func (p *epoll) Watch(fd int) error {
	if fd < 0 {
		return unix.EBADF
	}
	e := p.entry(fd)
	if e.armed != 0 {
		return ErrUnsupported
	}
	if err := p.ctl(fd, e, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET); err != nil {
		if !e.added {
			delete(p.fds, fd)
		}
		return err
	}
	e.watched = true
	return nil
}

func (p *epoll) Unwatch(fd int) error {
	e := p.fds[fd]
	if e == nil {
		return nil
	}
	delete(p.fds, fd)
	if !e.added {
		return nil
	}
	err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	if err == unix.ENOENT || err == unix.EBADF {
		err = nil
	}
	return err
}

func (p *epoll) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
	if len(p.always) > 0 {
		for _, ev := range p.always {
			if ev.Ready != 0 {
				evs = append(evs, ev)
			}
		}
		p.always = p.always[:0]
		timeout = 0
	}
	n, err := p.wait(timeout)
	if err == unix.EINTR {
		return evs, nil
	}
	if err != nil {
		return evs, os.NewSyscallError("epoll_wait", err)
	}
	for _, kev := range p.kbuf[:n] {
		fd := int(kev.Fd)
		if fd == p.wakefd {
			var buf [8]byte
			unix.Read(p.wakefd, buf[:])
			p.woken.Store(false)
			continue
		}
		var ready Mode
		if kev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			ready |= Read
		}
		if kev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			ready |= Write
		}
		e := p.fds[fd]
		if e != nil && e.watched && kev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			ready |= Hangup
		}
		if e != nil && !e.watched {
			// One-shot: the kernel disabled the registration. Report only
			// what was armed; re-arm whatever is still wanted.
			ready &= e.armed
			e.armed &^= ready
			if e.armed != 0 {
				p.ctl(fd, e, modeBits(e.armed)|unix.EPOLLONESHOT)
			}
		}
		if ready != 0 {
			evs = append(evs, Event{Fd: kev.Fd, Ready: ready})
		}
	}
	return evs, nil
}

func (p *epoll) wait(timeout time.Duration) (int, error) {
	if timeout > 0 && !p.noPwait {
		ts := unix.NsecToTimespec(int64(timeout))
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&p.kbuf[0])), uintptr(len(p.kbuf)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != unix.ENOSYS {
			return 0, e
		}
		p.noPwait = true
	}
	return unix.EpollWait(p.epfd, p.kbuf, roundUpMillis(timeout))
}

func (p *epoll) Wake() error {
	if p.woken.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	_, err := unix.Write(p.wakefd, one[:])
	if err == unix.EAGAIN {
		err = nil
	}
	return err
}

func (p *epoll) Close() error {
	unix.Close(p.wakefd)
	return unix.Close(p.epfd)
}

// openEpoll opens an epoll backend (for lazy).
func openEpoll() (Poller, error) {
	p, err := newEpoll()
	if err != nil {
		return nil, err
	}
	return p, nil
}
