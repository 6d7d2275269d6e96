package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestEventSetWakesEveryWaiter(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	woken := 0
	run(t, func(wt *weft.Task) {
		var e weft.Event
		var ps []*weft.Promise[struct{}]
		for range 3 {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				if err := e.Wait(wt); err == nil && e.IsSet() {
					woken++
				}
			}))
		}
		wt.Yield()
		if woken != 0 || e.IsSet() {
			t.Fatal("waiters ran before Set")
		}
		e.Set()
		e.Set() // twice: nothing more
		for _, p := range ps {
			p.Await(wt)
		}
		if err := e.Wait(wt); err != nil {
			t.Errorf("Wait on a set event = %v", err)
		}
	})
	if woken != 3 {
		t.Fatalf("%d of 3 waiters woken", woken)
	}
}

func TestEventSetFromAGoroutine(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var e weft.Event
		_, done := weft.NewPromiseExternal[struct{}](wt)
		go func() {
			time.Sleep(5 * time.Millisecond)
			e.Set()
			done(struct{}{}, nil)
		}()
		if err := e.Wait(wt); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCancelledEventWaitReturnsTheCause(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var e weft.Event
		p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, e.Wait(wt) })
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Wait = %v", err)
		}
		e.Set() // the withdrawn waiter is gone: nothing to wake
	})
}

func TestDeadlockNamesEventWait(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		var e weft.Event
		return struct{}{}, e.Wait(wt) // eventWait
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Event.Wait" || site != siteOf(t, "eventWait") {
		t.Errorf("main: %s at %s", op, site)
	}
}

// Being woken by Set is not exclusive: a waiter cancelled after the Set,
// before it resumes, still sees the event.
func TestEventWaiterCancelledAfterSetReturnsNil(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var e weft.Event
		p := weft.Go(wt, func(wt *weft.Task) (bool, error) {
			err := e.Wait(wt)
			return wt.Yield() != nil, err // the cancellation shows at the next point
		})
		e.Set()
		p.Cancel()
		if later, err := p.Await(wt); err != nil || !later {
			t.Fatalf("Wait = %v; cancellation seen after: %v", err, later)
		}
	})
}
