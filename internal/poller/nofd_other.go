//go:build !unix

package poller

// The backend for systems without a Unix readiness call: it can wait for
// a deadline or a Wake, with a timer and a channel, and has no fd support.

import "time"

type nofdBackend struct {
	wake  chan struct{}
	timer *time.Timer
}

func newNoFD() *nofdBackend {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &nofdBackend{wake: make(chan struct{}, 1), timer: t}
}

func (p *nofdBackend) Caps() Caps             { return portableCaps }
func (p *nofdBackend) Arm(int, Mode) error    { return ErrUnsupported }
func (p *nofdBackend) Disarm(int, Mode) error { return nil }
func (p *nofdBackend) Watch(int) error        { return ErrUnsupported }
func (p *nofdBackend) Unwatch(int) error      { return nil }
func (p *nofdBackend) Close() error           { p.timer.Stop(); return nil }

func (p *nofdBackend) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
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

func (p *nofdBackend) Wake() error {
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// portableCaps are the backend's capabilities: it is the portable one
// here.
var portableCaps = Caps{Name: "none"}

func newPortable() (Poller, error) { return newNoFD(), nil }
