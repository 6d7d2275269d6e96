package weft_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestSelectFiresTheReadyCase(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](1), weft.NewChan[string](1)
		b.Send(wt, "hello")
		var av int
		var bv string
		i, err := weft.Select(wt, weft.RecvCase(a, &av), weft.RecvCase(b, &bv))
		if i != 1 || err != nil || bv != "hello" || av != 0 {
			t.Fatalf("Select = %d, %v; a=%d b=%q", i, err, av, bv)
		}
		if a.Len() != 0 || b.Len() != 0 {
			t.Fatalf("lens after Select: %d %d", a.Len(), b.Len())
		}
	})
}

func TestSelectWaitsForTheFirstCaseAndConsumesNothingElse(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](0), weft.NewChan[int](0)
		out := weft.NewChan[int](0)
		spawn(wt, func(wt *weft.Task) {
			wt.Sleep(10 * time.Millisecond)
			b.Send(wt, 2)
			wt.Sleep(10 * time.Millisecond)
			a.Send(wt, 1) // the Select is over: this waits for a receiver
		})
		var v int
		i, err := weft.Select(wt, weft.RecvCase(a, &v), weft.RecvCase(b, &v), weft.SendCase(out, 99))
		if i != 1 || err != nil || v != 2 {
			t.Fatalf("Select = %d, %v, v=%d", i, err, v)
		}
		if _, ok := out.TryRecv(); ok {
			t.Fatal("the send case that did not fire sent")
		}
		// a's sender is still waiting with its value: nothing was consumed.
		if got, err := a.Recv(wt); got != 1 || err != nil {
			t.Fatalf("a.Recv = %d, %v", got, err)
		}
	}, vt)
}

func TestSelectPicksUniformlyAmongReadyCases(t *testing.T) {
	const rounds = 6000
	counts := make([]int, 3)
	run(t, func(wt *weft.Task) {
		cs := []*weft.Chan[int]{weft.NewChan[int](1), weft.NewChan[int](1), weft.NewChan[int](1)}
		for range rounds {
			for _, c := range cs {
				c.TrySend(1)
			}
			i, err := weft.Select(wt, weft.RecvCase(cs[0], nil), weft.RecvCase(cs[1], nil), weft.RecvCase(cs[2], nil))
			if err != nil {
				t.Fatal(err)
			}
			counts[i]++
		}
	})
	// Each expected 2000; 5 standard deviations is about 183.
	for i, n := range counts {
		if n < 1800 || n > 2200 {
			t.Fatalf("case %d fired %d times of %d: %v", i, n, rounds, counts)
		}
	}
}

func TestSelectOnClosedChannels(t *testing.T) {
	errUpstream := errors.New("upstream failed")
	run(t, func(wt *weft.Task) {
		a := weft.NewChan[int](0)
		a.Close()
		var v int
		if i, err := weft.Select(wt, weft.RecvCase(a, &v)); i != 0 || err != io.EOF {
			t.Errorf("receive on closed = %d, %v", i, err)
		}
		b := weft.NewChan[int](0)
		b.CloseWithError(errUpstream)
		if i, err := weft.Select(wt, weft.RecvCase(b, &v)); i != 0 || err != errUpstream {
			t.Errorf("receive on CloseWithError = %d, %v", i, err)
		}
		if i, err := weft.Select(wt, weft.SendCase(a, 1)); i != 0 || !errors.Is(err, weft.ErrClosed) {
			t.Errorf("send on closed = %d, %v", i, err)
		}
		// Closed while the Select waits.
		c, d := weft.NewChan[int](0), weft.NewChan[int](0)
		spawn(wt, func(wt *weft.Task) { wt.Yield(); c.Close() })
		if i, err := weft.Select(wt, weft.SendCase(d, 1), weft.RecvCase(c, &v)); i != 1 || err != io.EOF {
			t.Errorf("receive on channel closed meanwhile = %d, %v", i, err)
		}
	})
}

func TestSelectSendHandsTheValueToAWaitingReceiver(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[string](0)
		r := weft.Go(wt, func(wt *weft.Task) (string, error) { return c.Recv(wt) })
		if i, err := weft.Select(wt, weft.SendCase(c, "x"), weft.AfterCase(time.Hour)); i != 0 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
		if v, _ := r.Await(wt); v != "x" {
			t.Fatalf("receiver got %q", v)
		}
		// And the other way: Select waits in a send, a receiver comes.
		spawn(wt, func(wt *weft.Task) {
			if v, _ := c.Recv(wt); v != "y" {
				t.Errorf("receiver got %q", v)
			}
		})
		if i, err := weft.Select(wt, weft.SendCase(c, "y")); i != 0 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
	}, vt)
}

func TestSelectTimesOutOnTheLoopsClock(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		start := wt.Now()
		i, err := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(3*time.Second), weft.AfterCase(time.Second))
		if i != 2 || err != nil || wt.Now().Sub(start) != time.Second {
			t.Fatalf("Select = %d, %v after %v", i, err, wt.Now().Sub(start))
		}
		if n := weft.PendingTimers(wt); n != 0 {
			t.Fatalf("%d timers left behind", n)
		}
		if i, _ := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(0)); i != 1 {
			t.Fatalf("AfterCase(0) is ready at once; Select = %d", i)
		}
		// A channel that wins removes the timer.
		spawn(wt, func(wt *weft.Task) { c.Send(wt, 1) })
		if i, _ := weft.Select(wt, weft.AfterCase(time.Hour), weft.RecvCase(c, nil)); i != 1 || weft.PendingTimers(wt) != 0 {
			t.Fatalf("Select = %d, timers %d", i, weft.PendingTimers(wt))
		}
	}, vt)
}

func TestCancelledSelectFiresNoCase(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Select(wt, weft.RecvCase(c, nil), weft.SendCase(c, 5), weft.AfterCase(time.Hour))
		})
		p.Cancel()
		if i, err := p.Await(wt); i != -1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Select = %d, %v", i, err)
		}
		if c.TrySend(1) || weft.PendingTimers(wt) != 0 {
			t.Fatal("the cancelled Select left a case behind")
		}
	}, vt)
}

// A value a Select received as it was cancelled goes to the next receiver.
func TestValueHandedToACancelledSelectGoesToTheNextReceiver(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		var got int
		sel := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Select(wt, weft.RecvCase(c, &got))
		})
		next := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Recv(wt) })
		c.Send(wt, 42) // handed to the Select
		sel.Cancel()
		if i, err := sel.Await(wt); i != -1 || !errors.Is(err, context.Canceled) || got != 0 {
			t.Fatalf("Select = %d, %v, stored %d", i, err, got)
		}
		if v, err := next.Await(wt); v != 42 || err != nil {
			t.Fatalf("next receiver = %d, %v", v, err)
		}
	})
}

func TestSelectWithSendAndReceiveOnOneChannelDoesNotMatchItself(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		var v int
		i, err := weft.Select(wt, weft.SendCase(c, 1), weft.RecvCase(c, &v), weft.AfterCase(time.Second))
		if i != 2 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
	}, vt)
}

func TestSelectsOnBothEndsMeet(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](0), weft.NewChan[int](0)
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			var v int
			i, err := weft.Select(wt, weft.RecvCase(a, &v), weft.RecvCase(b, &v))
			return i*100 + v, err
		})
		i, err := weft.Select(wt, weft.SendCase(b, 7), weft.AfterCase(time.Second))
		if got, _ := p.Await(wt); i != 0 || err != nil || got != 107 {
			t.Fatalf("sender Select = %d, %v; receiver %d", i, err, got)
		}
	}, vt)
}

func TestSelectMisusePanics(t *testing.T) {
	if msg := panicMessage(func() { weft.RecvCase[int](nil, nil) }); !strings.HasPrefix(msg, "weft: ") {
		t.Errorf("RecvCase(nil): %q", msg)
	}
	if msg := panicMessage(func() { weft.SendCase[int](nil, 1) }); !strings.HasPrefix(msg, "weft: ") {
		t.Errorf("SendCase(nil): %q", msg)
	}
	run(t, func(wt *weft.Task) {
		msg := panicMessage(func() { weft.Select(wt, weft.SelectCase{}) })
		if !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("zero SelectCase: %q", msg)
		}
	})
}

func TestDeadlockNamesSelect(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		c := weft.NewChan[int](0)
		return weft.Select(wt, weft.RecvCase(c, nil)) // selectWait
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Select" || site != siteOf(t, "selectWait") {
		t.Errorf("main: %s at %s", op, site)
	}
}

func TestEmptySelectWaitsUntilCancelled(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return weft.Select(wt) })
		spawn(wt, func(wt *weft.Task) { wt.Sleep(time.Second); p.Cancel() })
		if i, err := p.Await(wt); i != -1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("empty Select = %d, %v", i, err)
		}
	}, vt)
}
