package poller

import (
	"sync/atomic"
	"time"
)

// lazy is a readiness backend opened on first use. Many Runs never touch
// a descriptor (a computation, a test, a Run that only sleeps parks its
// goroutine in Go), and opening and closing a backend's kernel objects is
// most of an empty Run's cost: epoll_create1, an eventfd, its registration
// and the registration of the epoll fd with Go's own poller, then as many
// closes. So Open hands out a lazy backend for epoll and poll(2): its
// Caps are known at once, and the kernel objects come with the first
// Watch, Arm or Wait.
//
// Wake may come from any goroutine before the backend exists. It then
// leaves a flag that the first Wait looks at after opening, so that a
// wake is never lost: Wake stores the flag and looks again for the
// backend; Wait publishes the backend and then takes the flag. One of
// the two sees the other (the atomics are sequentially consistent).
type lazy struct {
	caps   Caps
	open   func() (Poller, error)
	p      Poller      // the backend, once open; only the loop's goroutine writes it
	opened atomic.Bool // p is set: other goroutines (Wake) may read it
	woken  atomic.Bool // a Wake came before the backend existed
}

func newLazy(caps Caps, open func() (Poller, error)) *lazy {
	return &lazy{caps: caps, open: open}
}

func (z *lazy) Caps() Caps { return z.caps }

// get opens the backend if it is not yet open.
func (z *lazy) get() (Poller, error) {
	if z.p != nil {
		return z.p, nil
	}
	p, err := z.open()
	if err != nil {
		return nil, err
	}
	z.p = p
	z.opened.Store(true)
	return p, nil
}

func (z *lazy) Arm(fd int, m Mode) error {
	p, err := z.get()
	if err != nil {
		return err
	}
	return p.Arm(fd, m)
}

func (z *lazy) Disarm(fd int, m Mode) error {
	if z.p == nil {
		return nil // nothing was armed
	}
	return z.p.Disarm(fd, m)
}

func (z *lazy) Watch(fd int) error {
	p, err := z.get()
	if err != nil {
		return err
	}
	return p.Watch(fd)
}

func (z *lazy) Unwatch(fd int) error {
	if z.p == nil {
		return nil // nothing was watched
	}
	return z.p.Unwatch(fd)
}

// lazyOpenFailedSleep bounds a Wait that could not open the backend: it
// then sleeps in Go for its timeout, at most this long, and returns
// nothing, so that a loop with no descriptor still keeps its short timers
// (the descriptors' own calls report the error).
const lazyOpenFailedSleep = time.Millisecond

func (z *lazy) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
	if z.p != nil {
		return z.p.Wait(timeout, evs)
	}
	p, err := z.get()
	if err != nil {
		if timeout < 0 || timeout > lazyOpenFailedSleep {
			timeout = lazyOpenFailedSleep
		}
		if !z.woken.Swap(false) && timeout > 0 {
			time.Sleep(timeout)
		}
		return evs, nil
	}
	if z.woken.Swap(false) {
		timeout = 0 // a Wake came while the backend did not exist
	}
	return p.Wait(timeout, evs)
}

func (z *lazy) Wake() error {
	if z.opened.Load() {
		return z.p.Wake()
	}
	z.woken.Store(true)
	if z.opened.Load() {
		return z.p.Wake() // it opened meanwhile and may not have seen the flag
	}
	return nil
}

func (z *lazy) Close() error {
	if z.p == nil {
		return nil
	}
	return z.p.Close()
}

// Opened reports whether b's kernel objects exist: false for a lazy
// backend not used yet (for tests).
func Opened(b Poller) bool {
	if z, ok := b.(*lazy); ok {
		return z.p != nil
	}
	return true
}
