//go:build unix

package poller

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/weft-go/weft/internal/fdutil"
	"golang.org/x/sys/unix"
)

func backends(t *testing.T) map[string]Poller {
	t.Helper()
	out := map[string]Poller{}
	d, err := newDefault()
	if err != nil {
		t.Fatal(err)
	}
	out[d.Caps().Name] = d
	p, err := newPortable()
	if err != nil {
		t.Fatal(err)
	}
	out[p.Caps().Name] = p
	for name, p := range extraBackends() {
		out[name] = p
	}
	t.Cleanup(func() {
		for _, p := range out {
			p.Close()
		}
	})
	return out
}

func pipe(t *testing.T) (r, w int) {
	t.Helper()
	r, w, err := fdutil.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(r); unix.Close(w) })
	return r, w
}

func readyFor(evs []Event, fd int, m Mode) bool {
	for _, e := range evs {
		if int(e.Fd) == fd && e.Ready&m != 0 {
			return true
		}
	}
	return false
}

func TestArmReportsReadinessOnce(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			r, w := pipe(t)
			if err := p.Arm(r, Read); err != nil {
				t.Fatal(err)
			}
			evs, err := p.Wait(0, nil)
			if err != nil || readyFor(evs, r, Read) {
				t.Fatalf("empty pipe reported readable: %v %v", evs, err)
			}
			unix.Write(w, []byte("x"))
			evs, err = p.Wait(time.Second, nil)
			if err != nil || !readyFor(evs, r, Read) {
				t.Fatalf("written pipe not reported: %v %v", evs, err)
			}
			// One-shot: still readable, but no longer armed.
			evs, _ = p.Wait(0, nil)
			if readyFor(evs, r, Read) {
				t.Fatal("one-shot interest reported twice")
			}
			// Level: arming an fd that is already ready reports it.
			p.Arm(r, Read)
			evs, _ = p.Wait(time.Second, nil)
			if !readyFor(evs, r, Read) {
				t.Fatal("already-readable fd not reported after Arm")
			}
		})
	}
}

func TestDisarmWithdrawsInterest(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			r, w := pipe(t)
			p.Arm(r, Read)
			p.Disarm(r, Read)
			unix.Write(w, []byte("x"))
			evs, _ := p.Wait(20*time.Millisecond, nil)
			if readyFor(evs, r, Read) {
				t.Fatal("disarmed fd reported")
			}
			if err := p.Disarm(12345, Read); err != nil {
				t.Fatalf("Disarm of unknown fd: %v", err)
			}
		})
	}
}

func TestArmBadFDFails(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, fd := range []int{-1, 1 << 20} {
				if err := p.Arm(fd, Read); !errors.Is(err, unix.EBADF) {
					t.Fatalf("Arm(%d) = %v, want EBADF", fd, err)
				}
			}
		})
	}
}

func TestRegularFileIsAlwaysReady(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			f, err := os.CreateTemp(t.TempDir(), "f")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fd := int(f.Fd())
			if err := p.Arm(fd, Read|Write); err != nil {
				t.Fatal(err)
			}
			evs, err := p.Wait(time.Second, nil)
			if err != nil || !readyFor(evs, fd, Read) || !readyFor(evs, fd, Write) {
				t.Fatalf("regular file not ready: %v %v", evs, err)
			}
		})
	}
}

func TestWakeFromAnotherGoroutineEndsWait(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(20 * time.Millisecond)
				p.Wake()
			}()
			start := time.Now()
			if _, err := p.Wait(-1, nil); err != nil {
				t.Fatal(err)
			}
			<-done
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("Wake took %v", el)
			}
			// A Wake before the Wait makes the next Wait return at once.
			p.Wake()
			start = time.Now()
			p.Wait(10*time.Second, nil)
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("earlier Wake not seen: %v", el)
			}
		})
	}
}

// A Wait with nothing to report lasts its whole timeout. The contract
// (rule 5) lets a signal end it early with nothing: Go's runtime sends its
// threads SIGURG to preempt goroutines, more often on a loaded machine. So
// an early return must bring no event, and of a few tries one must last
// the whole timeout: a backend that rounds the timeout down (or reads it
// in the wrong unit) returns early every time.
func TestWaitTimeoutIsNeverEarly(t *testing.T) {
	for name, p := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, d := range []time.Duration{300 * time.Microsecond, 3 * time.Millisecond} {
				var early []time.Duration
				for range 5 {
					start := time.Now()
					evs, err := p.Wait(d, nil)
					el := time.Since(start)
					if err != nil {
						t.Fatal(err)
					}
					if len(evs) != 0 {
						t.Fatalf("Wait(%v) with nothing registered returned %v", d, evs)
					}
					if el >= d {
						early = nil
						break
					}
					early = append(early, el)
				}
				if early != nil {
					t.Fatalf("Wait(%v) returned early in 5 of 5 tries: after %v", d, early)
				}
			}
		})
	}
}

func TestWatchIsEdgeTriggered(t *testing.T) {
	p, err := newDefault()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Caps().Edge {
		t.Skip("backend has no edge mode")
	}
	r, w := pipe(t)
	if err := p.Watch(r); err != nil {
		t.Fatal(err)
	}
	if err := p.Arm(r, Read); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Arm on a watched fd: %v", err)
	}
	unix.Write(w, []byte("x"))
	evs, _ := p.Wait(time.Second, nil)
	if !readyFor(evs, r, Read) {
		t.Fatal("edge not reported")
	}
	evs, _ = p.Wait(0, nil)
	if readyFor(evs, r, Read) {
		t.Fatal("edge reported twice without new data")
	}
	unix.Write(w, []byte("y"))
	evs, _ = p.Wait(time.Second, nil)
	if !readyFor(evs, r, Read) {
		t.Fatal("second edge not reported")
	}
	if err := p.Unwatch(r); err != nil {
		t.Fatal(err)
	}
	unix.Write(w, []byte("z"))
	evs, _ = p.Wait(0, nil)
	if readyFor(evs, r, Read) {
		t.Fatal("unwatched fd reported")
	}
}
