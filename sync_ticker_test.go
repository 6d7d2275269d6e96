package weft_test

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestTickerTicksOnTheLoopsClock(t *testing.T) {
	var at []time.Duration
	run(t, func(wt *weft.Task) {
		start := wt.Now()
		tk := wt.Ticker(time.Second)
		for range 3 {
			tick, err := tk.Recv(wt)
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, tick.Sub(start))
		}
		tk.Close()
		if n := weft.PendingTimers(wt); n != 0 {
			t.Errorf("%d timers after Close", n)
		}
		if _, err := tk.Recv(wt); err != io.EOF {
			t.Errorf("Recv after Close = %v", err)
		}
	}, vt)
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(at, want) {
		t.Fatalf("ticks at %v, want %v", at, want)
	}
}

// A slow consumer gets the tick that was waiting and then the next one,
// not a backlog of every tick it missed.
func TestSlowTickerConsumerGetsDroppedTicksNotABacklog(t *testing.T) {
	var at []time.Duration
	run(t, func(wt *weft.Task) {
		start := wt.Now()
		tk := wt.Ticker(time.Second)
		wt.Sleep(3500 * time.Millisecond) // ticks at 1, 2, 3 s: one is kept
		for range 2 {
			tick, _ := tk.Recv(wt)
			at = append(at, tick.Sub(start))
		}
		if tk.Len() != 0 {
			t.Errorf("%d ticks still buffered", tk.Len())
		}
		if got := wt.Now().Sub(start); got != 4*time.Second {
			t.Errorf("second Recv returned at %v, want 4s", got)
		}
	}, vt)
	if want := []time.Duration{time.Second, 4 * time.Second}; !slices.Equal(at, want) {
		t.Fatalf("ticks at %v, want %v", at, want)
	}
}

func TestTickerStopsWhenItsTaskFinishes(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (*weft.Chan[time.Time], error) {
			tk := wt.Ticker(time.Second)
			_, err := tk.Recv(wt)
			return tk, err
		})
		tk, err := p.Await(wt)
		if err != nil {
			t.Fatal(err)
		}
		if n := weft.PendingTimers(wt); n != 0 {
			t.Errorf("%d timers after the task finished", n)
		}
		if _, err := tk.Recv(wt); err != io.EOF {
			t.Errorf("Recv after the task finished = %v, want io.EOF", err)
		}
	}, vt)
}

func TestTickerClosedFromAGoroutineStops(t *testing.T) {
	run(t, func(wt *weft.Task) {
		tk := wt.Ticker(time.Millisecond)
		tk.Recv(wt)
		_, done := weft.NewPromiseExternal[struct{}](wt)
		go func() { tk.Close(); done(struct{}{}, nil) }()
		for _, err := range tk.All(wt) {
			if err != nil {
				t.Fatal(err)
			}
		}
		wt.Sleep(5 * time.Millisecond)
		if n := weft.PendingTimers(wt); n != 0 {
			t.Errorf("%d timers after Close from a goroutine", n)
		}
	})
}

// A running ticker does not hide a deadlock elsewhere, even in virtual
// time, where it would otherwise tick for ever.
func TestTickerDoesNotHideADeadlock(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		wt.Ticker(time.Second)
		never, _ := weft.NewPromise[int]()
		return never.Await(wt)
	}, vt)
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
}

func TestTickerWithANonPositivePeriodPanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		if msg := panicMessage(func() { wt.Ticker(0) }); msg == "" || msg[:6] != "weft: " {
			t.Fatalf("panic %q", msg)
		}
	})
}

func TestTickerAndSelectTimeoutsWithSeveralLoopsInVirtualTime(t *testing.T) {
	run(t, func(wt *weft.Task) {
		start := wt.Now()
		weft.Group(wt, func(g *weft.TaskGroup) error {
			for i := range 4 {
				g.Go(func(wt *weft.Task) error {
					weft.PinTo(wt, i%2) // tickers on both loops
					tk := wt.Ticker(time.Second)
					for range 3 {
						if _, err := tk.Recv(wt); err != nil {
							return err
						}
					}
					c := weft.NewChan[int](0)
					i, err := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(time.Second))
					if i != 1 || err != nil {
						return errors.New("the timeout did not fire")
					}
					return nil
				})
			}
			return nil
		})
		if got := wt.Now().Sub(start); got != 4*time.Second {
			t.Errorf("virtual time %v, want 4s", got)
		}
	}, vt, weft.WithLoops(2))
}
