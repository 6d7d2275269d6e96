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

func TestSettleOnTheSameLoopRunsTheWaiterBeforeTheSettlerGoesOn(t *testing.T) {
	var order []string
	run(t, func(wt *weft.Task) {
		p, settle := weft.NewPromise[string]()
		waiter := spawn(wt, func(wt *weft.Task) {
			v, _ := p.Await(wt)
			order = append(order, "waiter got "+v)
		})
		settle("v", nil)
		wt.Yield()
		order = append(order, "settler went on")
		waiter.Await(wt)
	}, oneLoop)
	if got := strings.Join(order, ", "); got != "waiter got v, settler went on" {
		t.Fatalf("order: %s", got)
	}
}

func TestWaiterWokenWithAValueKeepsItWhenCancelledBeforeItRuns(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p, settle := weft.NewPromise[string]()
		var v string
		var err error
		waiter := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			v, err = p.Await(wt)
			return struct{}{}, nil
		})
		settle("given", nil)
		waiter.Cancel() // before the waiter runs
		waiter.Await(wt)
		if v != "given" || err != nil {
			t.Fatalf("Await = %q, %v", v, err)
		}
	})
}

func TestNilArgumentsPanicWithWeftMessages(t *testing.T) {
	var nilPromise *weft.Promise[int]
	run(t, func(wt *weft.Task) {
		checks := map[string]func(){
			"Await":           func() { nilPromise.Await(wt) },
			"All":             func() { weft.All(wt, nilPromise) },
			"Race":            func() { weft.Race(wt, nilPromise) },
			"Cancel":          func() { nilPromise.Cancel() },
			"CancelWithCause": func() { nilPromise.CancelWithCause(nil) },
			"Go":              func() { weft.Go(nil, func(*weft.Task) (int, error) { return 0, nil }) },
		}
		for op, f := range checks {
			msg := panicMessage(f)
			if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "nil") {
				t.Errorf("%s with nil: panic %q", op, msg)
			}
		}
	})
}

// NewPromise keeps its semantics: a goroutine that will settle it later
// does not keep Run alive.
func TestPlainPromiseSettledByAGoroutineLaterIsStillADeadlock(t *testing.T) {
	release := make(chan struct{})
	done := make(chan struct{})
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		p, settle := weft.NewPromise[int]()
		go func() {
			defer close(done)
			<-release
			settle(1, nil)
		}()
		return p.Await(wt)
	})
	close(release)
	<-done
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
}
