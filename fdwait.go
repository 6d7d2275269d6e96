package weft

// The fd table: tasks waiting for fd readiness, by fd. A wait arms a
// one-shot interest with the poller; the event wakes every task waiting on
// that fd in that direction. Loop-owned.

import (
	"os"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

type fdWaiters struct {
	readers, writers []*Task
}

type fdTable struct {
	byFD    map[int]*fdWaiters
	waiting int // tasks waiting on any fd
}

func (ft *fdTable) add(fd int, m poller.Mode, t *Task) {
	if ft.byFD == nil {
		ft.byFD = make(map[int]*fdWaiters)
	}
	w := ft.byFD[fd]
	if w == nil {
		w = &fdWaiters{}
		ft.byFD[fd] = w
	}
	if m == poller.Read {
		w.readers = append(w.readers, t)
	} else {
		w.writers = append(w.writers, t)
	}
	t.x.fd, t.x.fdMode = fd, m
	ft.waiting++
}

// remove withdraws the waiting task t (cancelled or unwound).
func (ft *fdTable) remove(l *loop, t *Task) {
	fd, mode := t.x.fd, t.x.fdMode
	w := ft.byFD[fd]
	if w == nil {
		return
	}
	list := &w.readers
	if mode == poller.Write {
		list = &w.writers
	}
	for i, x := range *list {
		if x == t {
			*list = append((*list)[:i], (*list)[i+1:]...)
			ft.waiting--
			break
		}
	}
	if len(*list) == 0 {
		l.poller.Disarm(fd, mode)
	}
	if len(w.readers) == 0 && len(w.writers) == 0 {
		delete(ft.byFD, fd)
	}
}

// wake makes runnable the tasks waiting on fd for the ready directions.
func (ft *fdTable) wake(l *loop, fd int, ready poller.Mode) {
	w := ft.byFD[fd]
	if w == nil {
		return
	}
	if ready&poller.Read != 0 {
		for _, t := range w.readers {
			l.ready(t)
		}
		ft.waiting -= len(w.readers)
		w.readers = w.readers[:0]
	}
	if ready&poller.Write != 0 {
		for _, t := range w.writers {
			l.ready(t)
		}
		ft.waiting -= len(w.writers)
		w.writers = w.writers[:0]
	}
	if len(w.readers) == 0 && len(w.writers) == 0 {
		delete(ft.byFD, fd)
	}
}

// pollKernel asks the poller for events, waiting up to timeout ns (negative:
// no limit), and wakes the tasks they concern.
func (l *loop) pollKernel(timeout int64) {
	evs, err := l.poller.Wait(time.Duration(timeout), l.events[:0])
	if err != nil {
		// The poller itself failed (not an fd): nothing sensible can go on.
		panic(os.NewSyscallError("weft: poller", err))
	}
	for _, ev := range evs {
		l.fds.wake(l, int(ev.Fd), ev.Ready)
	}
	l.events = evs[:0]
}

// waitFD suspends t until fd is ready in direction m.
func (t *Task) waitFD(fd int, m poller.Mode) error {
	if err := t.cancelPoint(); err != nil {
		return err
	}
	l := t.loop
	if l.aborted {
		return errAborted
	}
	if !l.caps.FDs {
		return poller.ErrUnsupported
	}
	if err := l.poller.Arm(fd, m); err != nil {
		return os.NewSyscallError("weft: wait for fd", err)
	}
	t.extra()
	l.fds.add(fd, m, t)
	return t.block(waitFD)
}
