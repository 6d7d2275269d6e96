package weft_test

// Issue 17, item 6: a misuse is a bug, so it is loud. A "weft:" panic
// raised in a task (its Task used from elsewhere, say) never comes back as
// an ordinary error value: whoever waits for the task panics in turn, with
// the original message and where the misuse happened.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// misuser returns a task function that uses another task's Task: a
// misuse, which panics with "weft:".
func misuser(other *weft.Task) func(*weft.Task) (int, error) {
	return func(*weft.Task) (int, error) {
		other.Yield() // errors_test.go: the line the report must name
		return 0, nil
	}
}

func wantLoud(t *testing.T, what string, msg string) {
	t.Helper()
	if !strings.HasPrefix(msg, "weft: ") {
		t.Fatalf("%s: panic %q, want the weft: misuse panic", what, msg)
	}
	if !strings.Contains(msg, "another task or goroutine") || !strings.Contains(msg, "errors_test.go") {
		t.Fatalf("%s: panic %q lacks the original message or the place of the misuse", what, msg)
	}
}

func TestAMisuseIsReRaisedByAwaitAllRaceAndFirst(t *testing.T) {
	run(t, func(wt *weft.Task) {
		wantLoud(t, "Await", panicMessage(func() { weft.Go(wt, misuser(wt)).Await(wt) }))
		wantLoud(t, "All", panicMessage(func() { weft.All(wt, weft.Go(wt, misuser(wt))) }))
		wantLoud(t, "Race", panicMessage(func() { weft.Race(wt, weft.Go(wt, misuser(wt))) }))
		wantLoud(t, "First", panicMessage(func() { weft.First(wt, misuser(wt)) }))
		// A retry loop cannot swallow it.
		tries := 0
		msg := panicMessage(func() {
			for tries < 3 {
				tries++
				if _, err := weft.Go(wt, misuser(wt)).Await(wt); err != nil {
					continue
				}
			}
		})
		wantLoud(t, "Await in a retry loop", msg)
		if tries != 1 {
			t.Fatalf("the retry loop went round %d times", tries)
		}
	})
}

func TestAMisuseInAGroupIsReRaisedByGroup(t *testing.T) {
	for _, handled := range []bool{false, true} {
		run(t, func(wt *weft.Task) {
			otherFinished := false
			msg := panicMessage(func() {
				weft.Group(wt, func(g *weft.TaskGroup) error {
					if handled {
						g.Handle(func(err error) { t.Errorf("the handler got the misuse as an error: %v", err) })
					}
					g.Go(func(wt *weft.Task) error {
						defer func() { otherFinished = true }()
						return wt.Sleep(time.Hour) // cancelled by the misuse
					})
					g.Go(func(gt *weft.Task) error {
						_, err := misuser(wt)(gt)
						return err
					})
					return nil
				})
			})
			wantLoud(t, "Group", msg)
			if !otherFinished {
				t.Fatal("Group re-raised the misuse before its other tasks finished")
			}
		}, weft.WithVirtualTime(epoch))
	}
}

func TestAMisuseInsideTimeoutOrOffloadPanicsInTheCaller(t *testing.T) {
	run(t, func(wt *weft.Task) {
		other := weft.Go(wt, func(ot *weft.Task) (*weft.Task, error) { return ot, nil })
		finished, _ := other.Await(wt)
		msg := panicMessage(func() {
			weft.Timeout(wt, time.Second, func(*weft.Task) (int, error) {
				finished.Yield()
				return 0, nil
			})
		})
		if !strings.HasPrefix(msg, "weft: ") {
			t.Fatalf("Timeout: panic %q", msg)
		}
		msg = panicMessage(func() {
			weft.Offload(wt, func() (int, error) {
				wt.Yield() // the Task, from the Offload goroutine
				return 0, nil
			})
		})
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "errors_test.go") {
			t.Fatalf("Offload: panic %q", msg)
		}
	})
}

// A misuse in a task nobody waits for makes Run panic, in its caller.
func TestAMisuseNobodyAwaitedMakesRunPanic(t *testing.T) {
	msg := panicMessage(func() {
		weft.Run(func(wt *weft.Task) (int, error) {
			weft.Go(wt, misuser(wt))
			return 0, nil
		})
	})
	wantLoud(t, "Run", msg)
	// An ordinary panic is still an error value.
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		return weft.Go(wt, func(*weft.Task) (int, error) { panic("boom") }).Await(wt)
	})
	var pe *weft.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("an ordinary panic: %v", err)
	}
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
