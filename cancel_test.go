package weft_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

type ctxKey string

func TestContextCarriesRunsValuesToEveryTask(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey("user"), "ada")
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (any, error) {
			q := weft.Go(wt, func(wt *weft.Task) (any, error) {
				return wt.Context().Value(ctxKey("user")), nil
			})
			return q.Await(wt)
		})
		if v, _ := p.Await(wt); v != "ada" {
			t.Errorf("grandchild sees %v", v)
		}
	}, weft.WithContext(ctx))
}

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

func TestChildContextOutlivesItsParent(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var childCtx context.Context
		parent := weft.Go(wt, func(wt *weft.Task) (*weft.Promise[int], error) {
			return weft.Go(wt, func(wt *weft.Task) (int, error) {
				childCtx = wt.Context()
				return 0, wt.Sleep(10 * time.Millisecond)
			}), nil
		})
		child, _ := parent.Await(wt) // the parent has returned
		if childCtx.Err() != nil {
			t.Fatal("child's context done because its parent returned")
		}
		child.Await(wt)
		if childCtx.Err() == nil {
			t.Fatal("child's context not done after the child finished")
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

func TestRunContextCancelsMain(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	errStop := errors.New("stop")
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		child := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		go cancel(errStop)
		if _, err := child.Await(wt); !errors.Is(err, errStop) {
			t.Errorf("child = %v", err)
		}
		return 0, wt.Sleep(time.Hour)
	}, weft.WithContext(ctx))
	if !errors.Is(err, errStop) {
		t.Fatalf("Run = %v", err)
	}
}

func TestFirstReturnsTheWinnerAndCancelsTheRest(t *testing.T) {
	var finished []string
	run(t, func(wt *weft.Task) {
		racer := func(name string, d time.Duration) func(*weft.Task) (string, error) {
			return func(wt *weft.Task) (string, error) {
				defer func() { finished = append(finished, name) }()
				if err := wt.Sleep(d); err != nil {
					return "", err
				}
				return name, nil
			}
		}
		start := time.Now()
		v, err := weft.First(wt, racer("tortoise", time.Hour), racer("hare", 10*time.Millisecond), racer("snail", time.Hour))
		if v != "hare" || err != nil {
			t.Fatalf("First = %q, %v", v, err)
		}
		if len(finished) != 3 {
			t.Fatalf("First returned before every child finished: %v", finished)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("losers were not cancelled: %v", el)
		}
	}, oneLoop)
}

func TestFirstErrorWinsToo(t *testing.T) {
	errFast := errors.New("fast failure")
	run(t, func(wt *weft.Task) {
		_, err := weft.First(wt,
			func(wt *weft.Task) (int, error) { return 1, wt.Sleep(time.Hour) },
			func(wt *weft.Task) (int, error) { wt.Sleep(time.Millisecond); return 0, errFast })
		if err != errFast {
			t.Fatalf("First = %v", err)
		}
		if _, err := weft.First[int](wt); err == nil {
			t.Fatal("First() returned no error")
		}
	})
}

func TestFirstDoesNotStartFunctionsAfterAnImmediateWinner(t *testing.T) {
	started := 0
	run(t, func(wt *weft.Task) {
		v, _ := weft.First(wt,
			func(*weft.Task) (int, error) { started++; return 1, nil },
			func(wt *weft.Task) (int, error) { started++; return 2, wt.Sleep(time.Hour) })
		if v != 1 || started != 1 {
			t.Fatalf("First = %d with %d started", v, started)
		}
	})
}

func TestCancellingTheCallerOfFirstCancelsItsChildren(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.First(wt,
				func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) },
				func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		})
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("First in a cancelled task = %v", err)
		}
	})
}

func TestTimeoutReturnsTheResultWhenFFinishesFirst(t *testing.T) {
	run(t, func(wt *weft.Task) {
		v, err := weft.Timeout(wt, time.Hour, func(wt *weft.Task) (string, error) {
			wt.Sleep(time.Millisecond)
			return "in time", nil
		})
		if v != "in time" || err != nil {
			t.Fatalf("Timeout = %q, %v", v, err)
		}
	})
}

func TestTimeoutCancelsFWithADeadlineCause(t *testing.T) {
	var inner error
	var deadline time.Time
	var hasDeadline bool
	start := time.Unix(0, 0)
	run(t, func(wt *weft.Task) {
		v, err := weft.Timeout(wt, 200*time.Millisecond, func(wt *weft.Task) (string, error) {
			deadline, hasDeadline = wt.Context().Deadline()
			inner = wt.Sleep(time.Hour)
			return "", inner
		})
		if v != "" || err != weft.ErrTimeout {
			t.Fatalf("Timeout = %q, %v", v, err)
		}
		if got := wt.Now().Sub(start); got != 200*time.Millisecond {
			t.Fatalf("timed out after %v of virtual time", got)
		}
	}, weft.WithVirtualTime(start))
	if !errors.Is(inner, context.Canceled) || !errors.Is(inner, context.DeadlineExceeded) {
		t.Fatalf("f's sleep returned %v", inner)
	}
	if !hasDeadline || !deadline.Equal(start.Add(200*time.Millisecond)) {
		t.Fatalf("f's context deadline = %v, %v", deadline, hasDeadline)
	}
}

func TestTimeoutWaitsForFToFinish(t *testing.T) {
	var order []string
	run(t, func(wt *weft.Task) {
		weft.Timeout(wt, 10*time.Millisecond, func(wt *weft.Task) (int, error) {
			wt.Sleep(time.Hour)
			wt.Protect(func(wt *weft.Task) error {
				wt.Sleep(20 * time.Millisecond) // a polite close takes a while
				order = append(order, "f cleaned up")
				return nil
			})
			return 0, nil
		})
		order = append(order, "Timeout returned")
	})
	if strings.Join(order, ",") != "f cleaned up,Timeout returned" {
		t.Fatalf("order = %v", order)
	}
}

func TestErrTimeoutIsADeadlineError(t *testing.T) {
	if !errors.Is(weft.ErrTimeout, context.DeadlineExceeded) {
		t.Fatal("ErrTimeout does not match context.DeadlineExceeded")
	}
	var te interface{ Timeout() bool }
	if !errors.As(weft.ErrTimeout, &te) || !te.Timeout() {
		t.Fatal("ErrTimeout has no Timeout() true")
	}
	if errors.Is(weft.ErrTimeout, context.Canceled) {
		t.Fatal("ErrTimeout is not a cancellation")
	}
}

func TestGroupWaitsForAllItsTasks(t *testing.T) {
	var done []int
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			for i := 1; i <= 3; i++ {
				g.Go(func(wt *weft.Task) error {
					wt.Sleep(time.Duration(i) * 5 * time.Millisecond)
					done = append(done, i)
					return nil
				})
			}
			return nil
		})
		if err != nil || len(done) != 3 {
			t.Fatalf("Group = %v with %v done", err, done)
		}
	})
}

func TestGroupFailureCancelsTheOthersAndTheBody(t *testing.T) {
	errBoom := errors.New("boom")
	var siblingErr, bodyErr error
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				siblingErr = wt.Sleep(time.Hour)
				return siblingErr
			})
			g.Go(func(wt *weft.Task) error {
				wt.Sleep(5 * time.Millisecond)
				return errBoom
			})
			bodyErr = g0Sleep(g, wt)
			// The body keeps being cancelled until Group returns.
			if err := wt.Yield(); !errors.Is(err, context.Canceled) {
				t.Errorf("body's next suspension point = %v", err)
			}
			return bodyErr
		})
		if err != errBoom {
			t.Fatalf("Group = %v", err)
		}
		// After Group, the caller is not cancelled.
		if err := wt.Sleep(time.Millisecond); err != nil {
			t.Fatalf("caller still cancelled after Group: %v", err)
		}
	})
	if !errors.Is(siblingErr, context.Canceled) || !errors.Is(bodyErr, context.Canceled) {
		t.Fatalf("sibling %v, body %v", siblingErr, bodyErr)
	}
}

// g0Sleep is the body waiting for a long time.
func g0Sleep(_ *weft.TaskGroup, wt *weft.Task) error { return wt.Sleep(time.Hour) }

func TestGroupJoinsFailuresThatAreNotCancellations(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				wt.Protect(func(wt *weft.Task) error { return wt.Sleep(20 * time.Millisecond) })
				return errB // fails while being cancelled: still a failure
			})
			g.Go(func(wt *weft.Task) error { wt.Sleep(5 * time.Millisecond); return errA })
			g.Go(func(wt *weft.Task) error { return wt.Sleep(time.Hour) }) // just cancelled
			return nil
		})
		if !errors.Is(err, errA) || !errors.Is(err, errB) || !strings.HasPrefix(err.Error(), "a\n") {
			t.Fatalf("Group = %q", err)
		}
	}, weft.WithVirtualTime(epoch)) // the order is the clock's, whatever the machine's load
}

func TestGroupTaskPanicIsAFailure(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		return 0, weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error { panic("in group") })
			return nil
		})
	})
	var pe *weft.PanicError
	if !errors.As(err, &pe) || pe.Value != "in group" {
		t.Fatalf("Run = %v", err)
	}
	if strings.Count(err.Error(), "in group") != 1 {
		t.Fatalf("failure reported more than once:\n%v", err)
	}
}

func TestCancellingTheCallerCancelsTheGroup(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var childErr error
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return 0, weft.Group(wt, func(g *weft.TaskGroup) error {
				g.Go(func(wt *weft.Task) error { childErr = wt.Sleep(time.Hour); return childErr })
				return wt.Sleep(time.Hour)
			})
		})
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("Group in a cancelled task = %v", err)
		}
		if !errors.Is(childErr, context.Canceled) {
			t.Fatalf("group task = %v", childErr)
		}
	})
}

func TestGroupGoAfterTheGroupReturnedPanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var saved *weft.TaskGroup
		weft.Group(wt, func(g *weft.TaskGroup) error { saved = g; return nil })
		msg := panicMessage(func() { saved.Go(func(*weft.Task) error { return nil }) })
		if !strings.HasPrefix(msg, "weft: ") {
			t.Fatalf("late g.Go: %q", msg)
		}
	})
}

func TestGroupTasksCanStartMoreGroupTasks(t *testing.T) {
	n := 0
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				g.Go(func(wt *weft.Task) error { wt.Sleep(time.Millisecond); n++; return nil })
				n++
				return nil
			})
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("Group = %v, n = %d", err, n)
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

func TestHundredThousandCancelledSleepsLeaveNothing(t *testing.T) {
	const n = 100_000
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[int], n)
		for i := range ps {
			ps[i] = weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		}
		for _, p := range ps {
			p.Cancel()
		}
		for _, p := range ps {
			if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		}
		if pending := weft.PendingTimers(wt); pending != 0 {
			t.Fatalf("%d timers left after cancelling every sleep", pending)
		}
	})
}
