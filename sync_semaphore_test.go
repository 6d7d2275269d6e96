package weft_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestSemaphoreBoundsConcurrency(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	running, most := 0, 0
	run(t, func(wt *weft.Task) {
		s := weft.NewSemaphore(3)
		weft.Group(wt, func(g *weft.TaskGroup) error {
			for range 10 {
				g.Go(func(wt *weft.Task) error {
					if err := s.Acquire(wt, 1); err != nil {
						return err
					}
					defer s.Release(1)
					running++
					most = max(most, running)
					wt.Sleep(time.Millisecond)
					running--
					return nil
				})
			}
			return nil
		})
		if s.Available() != 3 {
			t.Errorf("available after all released: %d", s.Available())
		}
	}, vt)
	if most != 3 {
		t.Fatalf("at most %d ran at once, want 3", most)
	}
}

// A large request at the head holds back smaller ones behind it.
func TestSemaphoreIsStrictlyFIFO(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	var order []string
	run(t, func(wt *weft.Task) {
		s := weft.NewSemaphore(5)
		s.Acquire(wt, 4) // 1 left
		big := spawn(wt, func(wt *weft.Task) { s.Acquire(wt, 3); order = append(order, "big") })
		small := spawn(wt, func(wt *weft.Task) { s.Acquire(wt, 1); order = append(order, "small") })
		wt.Yield()
		if len(order) != 0 {
			t.Fatalf("%v ran though the head of the queue waits", order)
		}
		if s.TryAcquire(1) {
			t.Fatal("TryAcquire overtook the waiters")
		}
		s.Release(4)
		big.Await(wt)
		small.Await(wt)
		if s.Available() != 1 {
			t.Errorf("available = %d, want 1", s.Available())
		}
	})
	if want := []string{"big", "small"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestWithdrawnHeadLetsTheWaitersBehindIt(t *testing.T) {
	run(t, func(wt *weft.Task) {
		s := weft.NewSemaphore(4)
		s.Acquire(wt, 3) // 1 left
		big := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, s.Acquire(wt, 4) })
		small := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, s.Acquire(wt, 1) })
		big.Cancel()
		if _, err := big.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("big = %v", err)
		}
		if _, err := small.Await(wt); err != nil || s.Available() != 0 {
			t.Fatalf("small = %v, available %d", err, s.Available())
		}
	})
}

func TestPermitsGrantedToACancelledWaiterGoToTheNext(t *testing.T) {
	run(t, func(wt *weft.Task) {
		s := weft.NewSemaphore(2)
		s.Acquire(wt, 2)
		first := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, s.Acquire(wt, 2) })
		second := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, s.Acquire(wt, 2) })
		s.Release(2) // granted to first
		first.Cancel()
		if _, err := first.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("first = %v", err)
		}
		if _, err := second.Await(wt); err != nil {
			t.Fatalf("second = %v", err)
		}
		s.Release(2)
		if s.Available() != 2 {
			t.Fatalf("available = %d: permits leaked", s.Available())
		}
	})
}

func TestSemaphoreMisusePanics(t *testing.T) {
	s := weft.NewSemaphore(2)
	for name, f := range map[string]func(){
		"Release beyond the size": func() { s.Release(1) },
		"negative size":           func() { weft.NewSemaphore(-1) },
		"negative Release":        func() { s.Release(-1) },
		"TryAcquire beyond size":  func() { s.TryAcquire(3) },
	} {
		if msg := panicMessage(f); !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("%s: panic %q", name, msg)
		}
	}
	run(t, func(wt *weft.Task) {
		if msg := panicMessage(func() { s.Acquire(wt, 3) }); !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("Acquire beyond the size: %q", msg)
		}
	})
}

func TestDeadlockNamesSemaphoreAcquire(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		s := weft.NewSemaphore(1)
		s.Acquire(wt, 1)
		return struct{}{}, s.Acquire(wt, 1) // acquireWait
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Semaphore.Acquire" || site != siteOf(t, "acquireWait") {
		t.Errorf("main: %s at %s", op, site)
	}
}
