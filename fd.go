package weft

// The fd table: tasks waiting for fd readiness, by fd. Loop-owned.
//
// Two kinds of entry. A foreign fd (Readable, Writable) is armed with a
// one-shot interest per wait, and its entry goes when nobody waits. An fd
// weft owns (a socket or pipe of the I/O layer) is watched: registered
// edge-triggered once, for its whole life, so that waiting costs no system
// call. Its I/O tries the system call first and waits only after EAGAIN;
// an edge then means "try again". Because the loop runs one task at a time,
// an edge that comes after the EAGAIN is always collected by a later poll,
// after the waiter is registered: no wakeup is lost.
//
// A watched fd also remembers whether an edge for reading came since its
// reader last drained it (readable): a stream read that returned less
// than its buffer, or EAGAIN, drained the socket, and the next read then
// waits for an edge first instead of asking the kernel for nothing (one
// system call saved per request on a request/response connection). The
// bit is set by every Read report the poller gives, and cleared only by a
// read that ran after every report collected so far: data that arrives
// after that read brings an edge of its own, which a later poll collects,
// so "wait first" never sleeps on data already signalled. A hang-up or
// error (poller.Hangup) sets it for good, since no edge follows one.

import (
	"os"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

type fdWaiters struct {
	readers, writers []*Task
	watched          bool // registered edge-triggered for its life (see above)
	// drained: the reader found nothing more to read and no Read edge has
	// come since (see above); hungUp: a hang-up or error was reported, so
	// drained is never set again. Watched fds only; loop-owned.
	drained, hungUp bool
}

type fdTable struct {
	owner   *loop // for the owner checks (owner.go)
	byFD    map[int]*fdWaiters
	waiting int // tasks waiting on any fd
}

func (ft *fdTable) add(fd int, m poller.Mode, t *Task) {
	if ownerChecks {
		ft.owner.assertOwner("the fd table")
	}
	if ft.byFD == nil {
		ft.byFD = make(map[int]*fdWaiters)
	}
	w := ft.byFD[fd]
	if w == nil {
		w = &fdWaiters{}
		ft.byFD[fd] = w
	}
	ft.addTo(w, fd, m, t)
}

// addTo is add for fd's entry w, known to the caller (a watched fd's,
// which stays the same until unwatch): no lookup.
func (ft *fdTable) addTo(w *fdWaiters, fd int, m poller.Mode, t *Task) {
	if ownerChecks {
		ft.owner.assertOwner("the fd table")
	}
	if m == poller.Read {
		w.readers = append(w.readers, t)
	} else {
		w.writers = append(w.writers, t)
	}
	r := t.waitRec()
	r.fd, r.fdMode = int32(fd), m
	ft.waiting++
}

// remove withdraws the waiting task t (cancelled or unwound).
func (ft *fdTable) remove(l *loop, t *Task) {
	if ownerChecks {
		l.assertOwner("the fd table")
	}
	r := t.obs.rec.Load() // published by add
	fd, mode := int(r.fd), r.fdMode
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
	if w.watched {
		return
	}
	if len(*list) == 0 {
		l.poller.Disarm(fd, mode)
	}
	if len(w.readers) == 0 && len(w.writers) == 0 {
		delete(ft.byFD, fd)
	}
}

// watch registers fd, which the I/O layer owns, edge-triggered, and
// returns its entry, which stays the same until unwatch.
func (ft *fdTable) watch(l *loop, fd int) (*fdWaiters, error) {
	if ownerChecks {
		l.assertOwner("the fd table")
	}
	if err := l.poller.Watch(fd); err != nil {
		return nil, err
	}
	if ft.byFD == nil {
		ft.byFD = make(map[int]*fdWaiters)
	}
	w := &fdWaiters{watched: true}
	ft.byFD[fd] = w
	return w, nil
}

// drain records that a read of the watched fd of w found it empty: the
// next read waits for an edge first, unless the fd has hung up.
func (w *fdWaiters) drain() {
	if !w.hungUp {
		w.drained = true
	}
}

// unwatch withdraws a watched fd before it is closed, waking its waiters
// (they find it closing and return net.ErrClosed).
func (ft *fdTable) unwatch(l *loop, fd int) {
	if ownerChecks {
		l.assertOwner("the fd table")
	}
	w := ft.byFD[fd]
	if w == nil || !w.watched {
		return
	}
	l.poller.Unwatch(fd)
	delete(ft.byFD, fd)
	w.watched = false // an owner's netFD.w: no more addTo
	for _, t := range w.readers {
		l.ready(t)
	}
	for _, t := range w.writers {
		l.ready(t)
	}
	ft.waiting -= len(w.readers) + len(w.writers)
}

// isWatched reports whether fd is a watched fd.
func (ft *fdTable) isWatched(fd int) bool {
	w := ft.byFD[fd]
	return w != nil && w.watched
}

// wake makes runnable the tasks waiting on fd for the ready directions.
func (ft *fdTable) wake(l *loop, fd int, ready poller.Mode) {
	w := ft.byFD[fd]
	if w == nil {
		return
	}
	if ready&poller.Read != 0 {
		w.drained = false
		if ready&poller.Hangup != 0 {
			w.hungUp = true
		}
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
	if !w.watched && len(w.readers) == 0 && len(w.writers) == 0 {
		delete(ft.byFD, fd)
	}
}

// pollKernel asks the poller for events, waiting up to timeout ns (negative:
// no limit), and wakes the tasks they concern.
func (l *loop) pollKernel(timeout int64) (end int64) {
	start := l.tracePollStart()
	evs, err := l.poller.Wait(time.Duration(timeout), l.events[:0])
	end = l.tracePoll(start, len(evs))
	if err != nil {
		// The poller itself failed (not an fd): nothing sensible can go on.
		panic(os.NewSyscallError("weft: poller", err))
	}
	for _, ev := range evs {
		l.fds.wake(l, int(ev.Fd), ev.Ready)
	}
	l.events = evs[:0]
	if l.ring != nil {
		for _, c := range l.ring.Completed() {
			l.opDone(c)
		}
	}
	return end
}

// awaitOp submits op, prepared for fd in direction m, to t's loop's ring
// and suspends t until it completes (the poller contract's completion
// side). If t is interrupted meanwhile (cancelled, a deadline), the
// operation is cancelled and t still waits for its completion, then
// returns the interruption's error: op.Res then says whether the
// operation completed anyway, and the caller delivers what it did
// (nothing is lost).
func (t *Task) awaitOp(op *poller.Op, fd int, m poller.Mode) error {
	l := t.loop
	op.Owner = t
	l.ring.Submit(op)
	r := t.waitRec()
	t.newWait()
	r.op = op
	r.fd, r.fdMode = int32(fd), m
	l.fds.waiting++
	err := t.block(waitFD)
	r.op = nil
	return err
}

// opHandler owns operations no task waits on (a multishot receive): it
// is given each of their completions.
type opHandler interface {
	complete(l *loop, c poller.Completion)
}

// opDone wakes the task that waits for c's operation, or gives c to the
// operation's handler.
func (l *loop) opDone(c poller.Completion) {
	op := c.Op
	if h, ok := op.Owner.(opHandler); ok {
		h.complete(l, c)
		return
	}
	t, _ := op.Owner.(*Task)
	if t == nil || t.loop != l || t.state != stateWaiting || t.waitKind != waitFD || t.obs.rec.Load().op != op {
		return // its task was unwound (Run is aborting)
	}
	l.fds.waiting--
	l.ready(t)
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
	if l.fds.isWatched(fd) && l.caps.Edge {
		// One of weft's own fds (File.Fd, say): its registration reports
		// edges only, so first ask whether it is ready now.
		if readyNow(fd, m) {
			return nil
		}
	} else if err := l.poller.Arm(fd, m); err != nil {
		return os.NewSyscallError("weft: wait for fd", err)
	}
	return t.waitWatched(fd, m)
}

// waitWatched suspends t until fd's entry is woken for direction m: by an
// event, or because the fd is being closed.
func (t *Task) waitWatched(fd int, m poller.Mode) error {
	t.ensureExtra()
	t.newWait()
	t.loop.fds.add(fd, m, t)
	return t.block(waitFD)
}
