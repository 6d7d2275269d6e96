package weft_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestAwaitSuspendsUntilThePromiseSettles(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			log = append(log, "child sleeps")
			wt.Sleep(10 * time.Millisecond)
			log = append(log, "child returns")
			return 7, nil
		})
		log = append(log, "parent awaits")
		v, err := p.Await(wt)
		log = append(log, "parent got "+string(rune('0'+v)))
		if err != nil {
			t.Error(err)
		}
	})
	want := "child sleeps,parent awaits,child returns,parent got 7"
	if got := strings.Join(log, ","); got != want {
		t.Fatalf("log = %s", got)
	}
}

func TestAwaitOnASettledPromiseDoesNotSwitch(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(*weft.Task) (int, error) { return 1, nil })
		ran := false
		spawn(wt, func(wt *weft.Task) {
			wt.Yield() // back in the queue behind main
			ran = true
		})
		if !p.Settled() {
			t.Fatal("child did not finish first")
		}
		for i := 0; i < 10; i++ {
			p.Await(wt)
		}
		if ran {
			t.Fatal("Await on a settled promise let another task run")
		}
		wt.Yield()
		if !ran {
			t.Fatal("Yield did not let the queued task run")
		}
	}, oneLoop)
}

func TestAwaitReturnsTheTasksErrorItself(t *testing.T) {
	errNotFound := errors.New("not found")
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(time.Millisecond)
			return 0, errNotFound
		})
		if _, err := p.Await(wt); !errors.Is(err, errNotFound) {
			t.Errorf("Await = %v", err)
		}
		// Awaiting again gives the same result.
		if _, err := p.Await(wt); err != errNotFound {
			t.Errorf("second Await = %v", err)
		}
	})
}

func TestPanicBecomesPanicErrorAndTheLoopGoesOn(t *testing.T) {
	errInside := errors.New("inside")
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { panicking(); return 0, nil })
		_, err := p.Await(wt)
		var pe *weft.PanicError
		if !errors.As(err, &pe) || pe.Value != "kaboom" {
			t.Fatalf("Await = %v", err)
		}
		if !strings.Contains(string(pe.Stack), "panicking") {
			t.Errorf("stack does not show the panicking function:\n%s", pe.Stack)
		}
		q := weft.Go(wt, func(wt *weft.Task) (int, error) { panic(errInside) })
		if _, err := q.Await(wt); !errors.Is(err, errInside) {
			t.Errorf("panic(err) not unwrapped: %v", err)
		}
		// The loop still runs tasks.
		r := weft.Go(wt, func(wt *weft.Task) (int, error) { wt.Sleep(time.Millisecond); return 5, nil })
		if v, _ := r.Await(wt); v != 5 {
			t.Errorf("after panics, task returned %d", v)
		}
	})
}

func panicking() { panic("kaboom") }

func TestNewPromiseSettlesOnceFirstResultStays(t *testing.T) {
	p, settle := weft.NewPromise[string]()
	if p.Settled() {
		t.Fatal("new promise already settled")
	}
	if !settle("first", nil) {
		t.Fatal("first settle returned false")
	}
	if settle("second", errors.New("late")) {
		t.Fatal("second settle returned true")
	}
	run(t, func(wt *weft.Task) {
		v, err := p.Await(wt)
		if v != "first" || err != nil {
			t.Errorf("Await = %q, %v", v, err)
		}
	})
}

func TestSettleFromAGoroutineWakesTheLoopAtOnce(t *testing.T) {
	// The loop sleeps in the kernel until the 1 s timer; the settle from
	// another goroutine must wake it right away.
	var waited time.Duration
	run(t, func(wt *weft.Task) {
		spawn(wt, func(wt *weft.Task) { wt.Sleep(time.Second) })
		p, settle := weft.NewPromise[int]()
		go func() {
			time.Sleep(20 * time.Millisecond)
			settle(1, nil)
		}()
		start := time.Now()
		p.Await(wt)
		waited = time.Since(start)
	})
	if waited > 500*time.Millisecond {
		t.Fatalf("main woke after %v: the settle did not wake the loop", waited)
	}
}

func TestSettleRacingFromManyGoroutines(t *testing.T) {
	run(t, func(wt *weft.Task) {
		spawn(wt, func(wt *weft.Task) { wt.Sleep(2 * time.Second) })
		const n = 64
		ps := make([]*weft.Promise[int], n)
		for i := range ps {
			p, settle := weft.NewPromise[int]()
			ps[i] = p
			for g := 0; g < 2; g++ {
				go settle(i, nil)
			}
		}
		vals, err := weft.All(wt, ps...)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != i {
				t.Fatalf("value %d = %d", i, v)
			}
		}
	})
}

func TestAllReturnsValuesInPromiseOrder(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[string]
		for _, x := range []struct {
			s string
			d time.Duration
		}{{"a", 20}, {"b", 5}, {"c", 10}} {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
				wt.Sleep(x.d * time.Millisecond)
				return x.s, nil
			}))
		}
		vals, err := weft.All(wt, ps...)
		if err != nil || strings.Join(vals, "") != "abc" {
			t.Fatalf("All = %v, %v", vals, err)
		}
		if vals, err := weft.All[string](wt); err != nil || len(vals) != 0 {
			t.Fatalf("All() = %v, %v", vals, err)
		}
	})
}

func TestAllReturnsTheFirstFailureInCompletionOrder(t *testing.T) {
	errSlow, errFast := errors.New("slow"), errors.New("fast")
	run(t, func(wt *weft.Task) {
		slow := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(40 * time.Millisecond)
			return 0, errSlow
		})
		fast := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(10 * time.Millisecond)
			return 0, errFast
		})
		ok := weft.Go(wt, func(wt *weft.Task) (int, error) { return 1, nil })
		_, err := weft.All(wt, slow, fast, ok)
		if err != errFast {
			t.Fatalf("All = %v, want the fast failure", err)
		}
		if slow.Settled() {
			t.Fatal("All waited for the slower failure")
		}
		slow.Await(wt) // observe it, so Run reports nothing
	})
}

func TestRaceReturnsTheFirstAndLeavesTheOthersRunning(t *testing.T) {
	finished := 0
	run(t, func(wt *weft.Task) {
		mk := func(name string, d time.Duration) *weft.Promise[string] {
			return weft.Go(wt, func(wt *weft.Task) (string, error) {
				wt.Sleep(d)
				finished++
				return name, nil
			})
		}
		v, err := weft.Race(wt, mk("tortoise", 30*time.Millisecond), mk("hare", 5*time.Millisecond))
		if v != "hare" || err != nil {
			t.Fatalf("Race = %q, %v", v, err)
		}
		if finished != 1 {
			t.Fatalf("%d finished when the race was decided", finished)
		}
	})
	if finished != 2 {
		t.Fatalf("the loser did not run on: %d finished", finished)
	}
}

func TestRaceOfSettledPromisesPicksTheFirstArgument(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, settleA := weft.NewPromise[int]()
		b, settleB := weft.NewPromise[int]()
		settleB(2, nil)
		settleA(1, nil)
		if v, _ := weft.Race(wt, a, b); v != 1 {
			t.Fatalf("Race = %d", v)
		}
		if _, err := weft.Race[int](wt); err == nil {
			t.Fatal("Race() returned no error")
		}
	})
}

func TestNilPromiseIsAProgrammingError(t *testing.T) {
	run(t, func(wt *weft.Task) {
		defer func() {
			if r := recover(); r == nil || !strings.HasPrefix(r.(string), "weft:") {
				t.Errorf("recover() = %v", r)
			}
		}()
		weft.All[int](wt, nil)
	})
}
