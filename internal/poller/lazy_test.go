//go:build unix

package poller

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lazyBackends are the backends Open hands out lazily.
func lazyBackends(t *testing.T) map[string]Poller {
	t.Helper()
	out := map[string]Poller{}
	for _, k := range []Kind{Epoll, Portable} {
		p, err := Open(k, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(*lazy); !ok {
			p.Close()
			continue // not a readiness backend here (epoll off Linux is Default)
		}
		out[p.Caps().Name] = p
	}
	return out
}

func TestLazyBackendOpensNothingUntilUsed(t *testing.T) {
	for name, p := range lazyBackends(t) {
		if Opened(p) {
			t.Errorf("%s: opened before any use", name)
		}
		if err := p.Disarm(0, Read); err != nil {
			t.Errorf("%s: Disarm before use = %v", name, err)
		}
		if err := p.Wake(); err != nil {
			t.Errorf("%s: Wake before use = %v", name, err)
		}
		if Opened(p) {
			t.Errorf("%s: opened by a Wake", name)
		}
		if err := p.Close(); err != nil {
			t.Errorf("%s: Close before use = %v", name, err)
		}
	}
}

func TestLazyBackendOpensOnFirstArm(t *testing.T) {
	for name, p := range lazyBackends(t) {
		var fds [2]int
		if err := unix.Pipe(fds[:]); err != nil {
			t.Fatal(err)
		}
		if err := p.Arm(fds[0], Read); err != nil {
			t.Fatalf("%s: Arm = %v", name, err)
		}
		if !Opened(p) {
			t.Errorf("%s: not opened by Arm", name)
		}
		unix.Write(fds[1], []byte{1})
		evs, err := p.Wait(time.Second, nil)
		if err != nil || len(evs) != 1 || int(evs[0].Fd) != fds[0] {
			t.Errorf("%s: Wait after Arm = %v, %v", name, evs, err)
		}
		p.Close()
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
}

// A Wake before the backend exists must end the first Wait, which would
// otherwise sleep for ever: the flag it leaves is taken after the open.
func TestLazyBackendKeepsAWakeFromBeforeItOpened(t *testing.T) {
	for name, p := range lazyBackends(t) {
		p.Wake()
		done := make(chan error, 1)
		go func() {
			_, err := p.Wait(-1, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Wait = %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a Wake made before the first Wait was lost", name)
		}
		p.Close()
	}
}

// Wakes from other goroutines racing with the open: none is lost.
func TestLazyBackendWakeRacingTheOpenIsNeverLost(t *testing.T) {
	for round := 0; round < 2000; round++ {
		for name, p := range lazyBackends(t) {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.Gosched()
				p.Wake()
			}()
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.Wait(-1, nil)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s, round %d: a Wake racing the open was lost", name, round)
			}
			wg.Wait()
			p.Close()
		}
	}
}
