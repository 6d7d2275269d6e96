package weft_test

// Regression tests for the cancel-scope rules: deadlines seen at every
// suspension point, Protect as a shield over everything it starts,
// settles on the same loop, causes as values, and the contract fixes.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

var epoch = time.Unix(1_000_000, 0)

func TestPassedDeadlineIsSeenAtEverySuspensionPoint(t *testing.T) {
	settled := func(wt *weft.Task) *weft.Promise[int] {
		p, settle := weft.NewPromise[int]()
		settle(1, nil)
		return p
	}
	cases := map[string]func(wt *weft.Task) error{
		"Yield":      func(wt *weft.Task) error { return wt.Yield() },
		"Checkpoint": func(wt *weft.Task) error { return wt.Checkpoint() },
		"Await of a settled promise": func(wt *weft.Task) error {
			_, err := settled(wt).Await(wt)
			return err
		},
		"All of settled promises": func(wt *weft.Task) error {
			_, err := weft.All(wt, settled(wt), settled(wt))
			return err
		},
		"Race of settled promises": func(wt *weft.Task) error {
			_, err := weft.Race(wt, settled(wt))
			return err
		},
	}
	for name, point := range cases {
		t.Run(name, func(t *testing.T) {
			run(t, func(wt *weft.Task) {
				calls := 0
				v, err := weft.Timeout(wt, 0, func(wt *weft.Task) (string, error) {
					for calls < 1_000_000 {
						calls++
						if err := point(wt); err != nil {
							return "", err
						}
					}
					return "never cancelled", nil
				})
				if err != weft.ErrTimeout {
					t.Fatalf("Timeout(0) = %q, %v after %d calls", v, err, calls)
				}
				if name != "Checkpoint" && calls != 1 {
					t.Fatalf("the passed deadline was seen at call %d, not the first", calls)
				}
			})
		})
	}
}

func TestDeadlinePassingWhileTasksYieldIsSeenAtTheNextYield(t *testing.T) {
	// Two tasks hand the loop to each other with Yield and never let it
	// poll its timers by itself for 60 resumptions: the deadline must still
	// be seen at the first Yield after it passes.
	run(t, func(wt *weft.Task) {
		var stop bool
		spawn(wt, func(wt *weft.Task) {
			for !stop {
				wt.Yield()
			}
		})
		late := 0
		_, err := weft.Timeout(wt, 2*time.Millisecond, func(wt *weft.Task) (int, error) {
			deadline := wt.Now().Add(2 * time.Millisecond)
			for {
				if err := wt.Yield(); err != nil {
					return 0, err
				}
				if !wt.Now().Before(deadline) {
					late++ // this Yield returned nil although the deadline had passed
				}
			}
		})
		stop = true
		if err != weft.ErrTimeout {
			t.Fatalf("Timeout = %v", err)
		}
		if late > 1 {
			t.Fatalf("%d Yields returned nil after the deadline had passed", late)
		}
	}, oneLoop)
}

func TestProtectGivesATimeoutInsideItsFullTime(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var v string
		var err error
		var took time.Duration
		worker := spawn(wt, func(wt *weft.Task) {
			start := wt.Now()
			err = wt.Protect(func(wt *weft.Task) error { // cancelled while inside
				v, err = weft.Timeout(wt, time.Second, func(wt *weft.Task) (string, error) {
					if err := wt.Sleep(500 * time.Millisecond); err != nil { // the polite close
						return "", err
					}
					return "closed politely", nil
				})
				return err
			})
			took = wt.Now().Sub(start)
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		if v != "closed politely" || err != nil || took != 500*time.Millisecond {
			t.Fatalf("Protect(Timeout(1s, close)) = %q, %v after %v", v, err, took)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestTimeoutInsideProtectStillApplies(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var err error
		worker := spawn(wt, func(wt *weft.Task) {
			err = wt.Protect(func(wt *weft.Task) error {
				_, err := weft.Timeout(wt, 10*time.Millisecond, func(wt *weft.Task) (int, error) {
					return 0, wt.Sleep(time.Hour)
				})
				return err
			})
		})
		worker.Cancel()
		worker.Await(wt)
		if err != weft.ErrTimeout {
			t.Fatalf("Protect(Timeout(10ms, sleep an hour)) = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestGroupInsideProtectIsNotCutShort(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var finished []string
		var err error
		worker := spawn(wt, func(wt *weft.Task) {
			err = wt.Protect(func(wt *weft.Task) error {
				return weft.Group(wt, func(g *weft.TaskGroup) error {
					for i := 1; i <= 3; i++ {
						g.Go(func(wt *weft.Task) error {
							if err := wt.Sleep(time.Duration(i) * time.Second); err != nil {
								return err
							}
							finished = append(finished, fmt.Sprint(i))
							return nil
						})
					}
					return wt.Sleep(2 * time.Second)
				})
			})
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		if err != nil || strings.Join(finished, ",") != "1,2,3" {
			t.Fatalf("Group inside Protect = %v, finished %v", err, finished)
		}
	}, weft.WithVirtualTime(epoch))
}

// A task started with g.Go from inside a Protect opened within the group
// belongs to the group (Eio's rule): the group's cancellation reaches it
// at once, shield or not. (It was once shielded until the Protect
// returned.)
func TestGroupGoInsideProtectBelongsToTheGroup(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var startedCancelled bool
		var lateErr error
		var after time.Duration
		worker := spawn(wt, func(wt *weft.Task) {
			weft.Group(wt, func(g *weft.TaskGroup) error {
				wt.Sleep(time.Hour) // cancelled here: the group is cancelled too
				wt.Protect(func(wt *weft.Task) error {
					g.Go(func(wt *weft.Task) error {
						startedCancelled = wt.Context().Err() != nil
						start := wt.Now()
						lateErr = wt.Sleep(time.Hour)
						after = wt.Now().Sub(start)
						return nil
					})
					return wt.Sleep(time.Second)
				})
				return nil
			})
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		if !startedCancelled {
			t.Fatal("a task of a cancelled group started inside Protect did not start cancelled")
		}
		if !errors.Is(lateErr, context.Canceled) || after != 0 {
			t.Fatalf("the task's sleep = %v after %v, want cancelled at once", lateErr, after)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestChildStartedInsideProtectIsCancelledWhenItReturns(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var childErr error
		var childSlept time.Duration
		var child *weft.Promise[struct{}]
		worker := spawn(wt, func(wt *weft.Task) {
			wt.Protect(func(wt *weft.Task) error {
				child = spawn(wt, func(wt *weft.Task) {
					start := wt.Now()
					childErr = wt.Sleep(time.Hour)
					childSlept = wt.Now().Sub(start)
				})
				return wt.Sleep(time.Second) // the cancellation arrives meanwhile
			})
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		child.Await(wt)
		if !errors.Is(childErr, context.Canceled) || childSlept != time.Second {
			t.Fatalf("child started inside Protect: %v after %v", childErr, childSlept)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestProtectDeliversTheCancellationToTheTaskAfterward(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inside, after error
		worker := spawn(wt, func(wt *weft.Task) {
			wt.Protect(func(wt *weft.Task) error {
				inside = wt.Sleep(time.Second)
				return nil
			})
			after = wt.Yield()
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		if inside != nil || !errors.Is(after, context.Canceled) {
			t.Fatalf("inside Protect: %v; after it: %v", inside, after)
		}
	}, weft.WithVirtualTime(epoch))
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

func TestGroupFailureDoesNotOvertakeAnEarlierSettle(t *testing.T) {
	boom := errors.New("boom")
	run(t, func(wt *weft.Task) {
		p, settle := weft.NewPromise[string]()
		var v string
		var err error
		gerr := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				v, err = p.Await(wt)
				return nil
			})
			g.Go(func(wt *weft.Task) error {
				settle("settled first", nil)
				return boom // fails the group in the same step
			})
			return nil
		})
		if v != "settled first" || err != nil || !errors.Is(gerr, boom) {
			t.Fatalf("waiter got %q, %v; Group = %v", v, err, gerr)
		}
	})
}

func TestCancelledSiblingSeesTheFailureAsItsCause(t *testing.T) {
	boom := errors.New("boom")
	run(t, func(wt *weft.Task) {
		var waitErr, cause error
		weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				waitErr = wt.Sleep(time.Hour)
				cause = context.Cause(wt.Context())
				return waitErr
			})
			g.Go(func(wt *weft.Task) error { return boom })
			return nil
		})
		if !errors.Is(waitErr, context.Canceled) || !errors.Is(waitErr, boom) {
			t.Fatalf("sibling's wait returned %v", waitErr)
		}
		if cause != boom {
			t.Fatalf("context.Cause = %v", cause)
		}
	})
}

func TestCancelWithCauseIsACancellationCarryingTheCause(t *testing.T) {
	why := errors.New("shutting down")
	run(t, func(wt *weft.Task) {
		var waitErr, cause error
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			waitErr = wt.Sleep(time.Hour)
			cause = context.Cause(wt.Context())
			return 0, waitErr
		})
		p.CancelWithCause(why)
		_, err := p.Await(wt)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, why) || cause != why {
			t.Fatalf("wait %v, task %v, cause %v", waitErr, err, cause)
		}
	})
	// On a NewPromise promise it settles the promise with that error.
	p, _ := weft.NewPromise[int]()
	p.CancelWithCause(why)
	run(t, func(wt *weft.Task) {
		if _, err := p.Await(wt); !errors.Is(err, why) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Await = %v", err)
		}
	})
}

func TestRunContextCancelledWithACauseIsACancellationNotAFailure(t *testing.T) {
	why := errors.New("operator said stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	var waitErrs []error
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		for range 3 {
			weft.Go(wt, func(wt *weft.Task) (int, error) {
				err := wt.Sleep(time.Hour)
				waitErrs = append(waitErrs, err)
				return 0, err
			})
		}
		cancel(why)
		err := wt.Sleep(time.Hour)
		waitErrs = append(waitErrs, err)
		return 0, err
	}, weft.WithContext(ctx))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
		t.Fatalf("Run = %v", err)
	}
	if strings.Contains(err.Error(), "nothing awaited") {
		t.Fatalf("cancelled tasks were reported as failures: %v", err)
	}
	for _, e := range waitErrs {
		if !errors.Is(e, context.Canceled) || !errors.Is(e, why) {
			t.Fatalf("a wait returned %v", e)
		}
	}
	if len(waitErrs) != 4 {
		t.Fatalf("%d waits ended", len(waitErrs))
	}
}

func TestFirstStartsNothingAfterAnEarlierFunctionFinished(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	run(t, func(wt *weft.Task) {
		started := 0
		v, err := weft.First(wt,
			func(wt *weft.Task) (string, error) {
				started++
				wt.Yield() // suspends; finishes while the second one runs
				return "first", nil
			},
			func(wt *weft.Task) (string, error) {
				started++
				wt.Yield() // lets the first finish
				wt.Yield()
				return "second", nil
			},
			func(wt *weft.Task) (string, error) {
				started++
				return "third", nil
			})
		if v != "first" || err != nil || started != 2 {
			t.Fatalf("First = %q, %v with %d started", v, err, started)
		}
	})
}

func TestContextErrIsDeadlineExceededAfterTimeout(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ctx context.Context
		weft.Timeout(wt, time.Second, func(wt *weft.Task) (int, error) {
			ctx = wt.Context()
			return 0, wt.Sleep(time.Hour)
		})
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatalf("Context().Err() = %v", ctx.Err())
		}
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("context.Cause = %v", context.Cause(ctx))
		}
	}, weft.WithVirtualTime(epoch))
}

func TestTimeoutReturnsWhatFProducedAfterTheDeadline(t *testing.T) {
	run(t, func(wt *weft.Task) {
		// f catches the cancellation and returns what it has: it is kept.
		v, err := weft.Timeout(wt, time.Second, func(wt *weft.Task) (string, error) {
			wt.Sleep(time.Hour)
			return "partial", nil
		})
		if v != "partial" || err != nil {
			t.Fatalf("Timeout = %q, %v", v, err)
		}
		// Another error is returned as it is.
		other := errors.New("other")
		_, err = weft.Timeout(wt, time.Second, func(wt *weft.Task) (string, error) {
			wt.Sleep(time.Hour)
			return "", other
		})
		if err != other {
			t.Fatalf("Timeout = %v", err)
		}
		// The cancellation of another Timeout is not this one's timeout.
		_, err = weft.Timeout(wt, time.Second, func(wt *weft.Task) (string, error) {
			return weft.Timeout(wt, time.Hour, func(wt *weft.Task) (string, error) {
				return "", wt.Sleep(2 * time.Hour)
			})
		})
		if err != weft.ErrTimeout {
			t.Fatalf("nested: outer Timeout = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
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

func TestGroupGoFromAForeignGoroutinePanicsBeforeTouchingTheLoop(t *testing.T) {
	run(t, func(wt *weft.Task) {
		weft.Group(wt, func(g *weft.TaskGroup) error {
			msg := make(chan string)
			go func() { msg <- panicMessage(func() { g.Go(func(*weft.Task) error { return nil }) }) }()
			m, _ := weft.Offload(wt, func() (string, error) { return <-msg, nil })
			if !strings.HasPrefix(m, "weft: ") {
				t.Errorf("g.Go from a goroutine: panic %q", m)
			}
			return nil
		})
	})
}

// Issue 17, item 7: a task started with sw.Go from inside a Protect, where
// sw is a group opened outside it, belongs to sw: sw's failure and its
// cancellation reach it while the Protect still runs, and the group
// finishes (it used to be shielded: the Run ended in a deadlock report).
func TestProtectDoesNotReachIntoAGroupOpenedOutsideIt(t *testing.T) {
	errBoom := errors.New("boom")
	for _, how := range []string{"failure", "Cancel"} {
		run(t, func(wt *weft.Task) {
			var childErr error
			never := weft.NewChan[int](0)
			err := weft.Group(wt, func(sw *weft.TaskGroup) error {
				sw.Go(func(wt *weft.Task) error {
					wt.Sleep(time.Millisecond)
					if how == "Cancel" {
						sw.Cancel()
						return nil
					}
					return errBoom
				})
				return wt.Protect(func(wt *weft.Task) error {
					p := weft.GoIn(sw, func(wt *weft.Task) (int, error) {
						_, childErr = never.Recv(wt) // nothing ever sends
						return 0, childErr
					})
					_, err := p.Await(wt) // the Protect waits for it
					return err
				})
			})
			if how == "failure" && !errors.Is(err, errBoom) {
				t.Fatalf("%s: Group = %v", how, err)
			}
			if how == "Cancel" && err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: Group = %v", how, err)
			}
			if !errors.Is(childErr, context.Canceled) {
				t.Fatalf("%s: the task started inside Protect: %v", how, childErr)
			}
		}, weft.WithVirtualTime(epoch))
	}
	// A group opened inside the Protect is shielded with everything in it.
	run(t, func(wt *weft.Task) {
		var slept error
		worker := spawn(wt, func(wt *weft.Task) {
			wt.Protect(func(wt *weft.Task) error {
				return weft.Group(wt, func(g *weft.TaskGroup) error {
					g.Go(func(wt *weft.Task) error {
						slept = wt.Sleep(time.Second)
						return nil
					})
					return nil
				})
			})
		})
		wt.Sleep(time.Millisecond)
		worker.Cancel()
		worker.Await(wt)
		if slept != nil {
			t.Fatalf("a task of a group opened inside Protect was cancelled: %v", slept)
		}
	}, weft.WithVirtualTime(epoch))
}
