package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestCancelReachesGrandchildrenAndTheirContexts(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var grandCtx context.Context
		var grandErr error
		var grand *weft.Promise[int]
		child := weft.Go(wt, func(wt *weft.Task) (int, error) {
			grand = weft.Go(wt, func(wt *weft.Task) (int, error) {
				grandCtx = wt.Context()
				grandErr = wt.Sleep(time.Hour)
				return 0, grandErr
			})
			return grand.Await(wt)
		})
		child.Cancel()
		child.Await(wt)
		grand.Await(wt) // the child's Await returns the cancellation without waiting for it
		if !errors.Is(grandErr, context.Canceled) {
			t.Errorf("grandchild's sleep returned %v", grandErr)
		}
		select {
		case <-grandCtx.Done():
		default:
			t.Error("grandchild's context not done")
		}
		if !errors.Is(context.Cause(grandCtx), context.Canceled) {
			t.Errorf("cause = %v", context.Cause(grandCtx))
		}
	})
}

func TestCancelWakesEverySuspensionPoint(t *testing.T) {
	never, _ := weft.NewPromise[int]()
	points := map[string]func(wt *weft.Task) error{
		"Sleep": func(wt *weft.Task) error { return wt.Sleep(time.Hour) },
		"Await": func(wt *weft.Task) error { _, err := never.Await(wt); return err },
		"All":   func(wt *weft.Task) error { _, err := weft.All(wt, never); return err },
		"Race":  func(wt *weft.Task) error { _, err := weft.Race(wt, never); return err },
		"Yield": func(wt *weft.Task) error {
			for {
				if err := wt.Yield(); err != nil {
					return err
				}
			}
		},
	}
	for name, wait := range points {
		t.Run(name, func(t *testing.T) {
			run(t, func(wt *weft.Task) {
				p := weft.Go(wt, func(wt *weft.Task) (string, error) {
					return "unwound", wait(wt)
				})
				p.Cancel()
				v, err := p.Await(wt)
				if !errors.Is(err, context.Canceled) || v != "unwound" {
					t.Errorf("%s: %q, %v", name, v, err)
				}
			})
		})
	}
}

func TestCancelFromAnotherGoroutineWakesTheLoop(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		go p.Cancel()
		start := time.Now()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Errorf("Await = %v", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("cancel took %v", el)
		}
	})
}

func TestRunningTaskSeesCancelAtItsNextSuspensionPoint(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var p *weft.Promise[int]
		ran := 0
		p = weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Yield() // let Go return, so that p is set
			p.Cancel() // cancel ourselves while running
			for i := 0; i < 1000; i++ {
				ran++ // no suspension point: keeps running
			}
			return ran, wt.Yield()
		})
		v, err := p.Await(wt)
		if v != 1000 || !errors.Is(err, context.Canceled) {
			t.Errorf("Await = %d, %v", v, err)
		}
	}, oneLoop)
}

func TestCancelledTaskRunsItsDefersAndKeepsItsValue(t *testing.T) {
	var cleaned bool
	v, err := weft.Run(func(wt *weft.Task) (string, error) {
		p := weft.Go(wt, func(wt *weft.Task) (string, error) {
			defer func() { cleaned = true }()
			if err := wt.Sleep(time.Hour); err != nil {
				return "partial", nil // a cancelled task may still return a value
			}
			return "full", nil
		})
		p.Cancel()
		return p.Await(wt)
	})
	if v != "partial" || err != nil || !cleaned {
		t.Fatalf("Run = %q, %v; defers ran: %v", v, err, cleaned)
	}
}

func TestCancellationIsNotAFailure(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		p.Cancel() // nobody awaits p
		return 0, nil
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestCancelOnSettledPromisesChangesNothing(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return 7, nil })
		p.Cancel()
		if v, err := p.Await(wt); v != 7 || err != nil {
			t.Errorf("after Cancel: %d, %v", v, err)
		}
	})
	q, settle := weft.NewPromise[int]()
	q.Cancel()
	if !q.Settled() || settle(1, nil) {
		t.Fatal("Cancel did not settle a NewPromise")
	}
	run(t, func(wt *weft.Task) {
		if _, err := q.Await(wt); !errors.Is(err, context.Canceled) {
			t.Errorf("Await = %v", err)
		}
	})
}

func TestProtectHoldsCancellationBack(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inside, after error
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Protect(func(wt *weft.Task) error {
				inside = wt.Sleep(20 * time.Millisecond) // cancelled meanwhile
				return nil
			})
			after = wt.Yield()
			return 0, after
		})
		p.Cancel()
		p.Await(wt)
		if inside != nil {
			t.Errorf("protected sleep returned %v", inside)
		}
		if !errors.Is(after, context.Canceled) {
			t.Errorf("first suspension point after Protect returned %v", after)
		}
	})
}

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkCancel(b *testing.B) { benchmarks.Cancel(b) }

func BenchmarkContextCancel(b *testing.B) { benchmarks.ContextCancel(b) }

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
