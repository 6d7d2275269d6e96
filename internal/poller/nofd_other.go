//go:build !unix

package poller

// The channel backend, for systems without a Unix readiness call: it can
// wait for a deadline or a Wake, and has no fd support.

import "time"

type chanBackend struct {
	wake  chan struct{}
	timer *time.Timer
}

func newChan() *chanBackend {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &chanBackend{wake: make(chan struct{}, 1), timer: t}
}

func (p *chanBackend) Caps() Caps             { return portableCaps }
func (p *chanBackend) Arm(int, Mode) error    { return ErrUnsupported }
func (p *chanBackend) Disarm(int, Mode) error { return nil }
func (p *chanBackend) Watch(int) error        { return ErrUnsupported }
func (p *chanBackend) Unwatch(int) error      { return nil }
func (p *chanBackend) Close() error           { p.timer.Stop(); return nil }

func (p *chanBackend) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
	switch {
	case timeout == 0:
		select {
		case <-p.wake:
		default:
		}
	case timeout < 0:
		<-p.wake
	default:
		p.timer.Reset(timeout)
		select {
		case <-p.wake:
		case <-p.timer.C:
		}
		p.timer.Stop()
	}
	return evs, nil
}

func (p *chanBackend) Wake() error {
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// portableCaps are the channel backend's capabilities.
var portableCaps = Caps{Name: "none"}

func newDefault() (Poller, error)  { return newChan(), nil }
func newPortable() (Poller, error) { return newChan(), nil }

func newKind(Kind, Options) (Poller, error) { return newDefault() }

// Op is an operation of the completion side, which no backend here has.
type Op struct {
	Res   int32
	Flags uint32
	Owner any
}

// Provided is the completion side's ring of buffers, which no backend
// here has.
type Provided struct{}
