package weft_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestGroupCancelIsNotAFailure(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var taskErr, bodyErr error
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				taskErr = wt.Sleep(time.Hour)
				return taskErr
			})
			g.Go(func(wt *weft.Task) error {
				wt.Sleep(time.Second)
				g.Cancel()
				return nil
			})
			bodyErr = wt.Sleep(time.Hour)
			return bodyErr
		})
		if err != nil {
			t.Fatalf("Group after Cancel = %v", err)
		}
		if !errors.Is(taskErr, context.Canceled) || !errors.Is(bodyErr, context.Canceled) {
			t.Fatalf("task %v, body %v", taskErr, bodyErr)
		}
		if wt.Now().Sub(epoch) != time.Second {
			t.Fatalf("Group took %v", wt.Now().Sub(epoch))
		}
		// The caller is not cancelled by its group's Cancel.
		if err := wt.Yield(); err != nil {
			t.Fatalf("caller after Group: %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestGroupCancelStillReportsRealFailures(t *testing.T) {
	boom := errors.New("boom")
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				wt.Sleep(time.Hour)
				return boom // fails while cancelled: a real failure
			})
			g.Cancel()
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Group = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestGroupCancelFromAGoroutine(t *testing.T) {
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error { return wt.Sleep(time.Hour) })
			go g.Cancel()
			return nil
		})
		if err != nil {
			t.Fatalf("Group = %v", err)
		}
	})
}

func TestSetLimitBoundsRunningTasksAndMakesGoWait(t *testing.T) {
	run(t, func(wt *weft.Task) {
		running, peak := 0, 0
		var log []string
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.SetLimit(2)
			for i := range 6 {
				g.Go(func(wt *weft.Task) error {
					running++
					peak = max(peak, running)
					defer func() { running-- }()
					return wt.Sleep(time.Duration(i+1) * time.Second)
				})
				log = append(log, fmt.Sprintf("%d@%v", i, wt.Now().Sub(epoch)))
			}
			return nil
		})
		if err != nil || peak != 2 {
			t.Fatalf("Group = %v, peak %d", err, peak)
		}
		// Go returned at once for the first two, then only as slots freed.
		want := "0@0s 1@0s 2@1s 3@2s 4@4s 5@6s"
		if got := strings.Join(log, " "); got != want {
			t.Fatalf("Go returned at %s, want %s", got, want)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestSetLimitCanChangeWhileTasksRun(t *testing.T) {
	run(t, func(wt *weft.Task) {
		running, peak := 0, 0
		weft.Group(wt, func(g *weft.TaskGroup) error {
			g.SetLimit(1)
			g.Go(func(wt *weft.Task) error {
				wt.Sleep(time.Second)
				g.SetLimit(3) // lets the waiting calls through
				return wt.Sleep(time.Second)
			})
			for range 4 {
				g.Go(func(wt *weft.Task) error {
					running++
					peak = max(peak, running)
					defer func() { running-- }()
					return wt.Sleep(10 * time.Second)
				})
			}
			return nil
		})
		if peak != 3 {
			t.Fatalf("peak %d, want 3 (the raised limit)", peak)
		}
		g0 := 0
		weft.Group(wt, func(g *weft.TaskGroup) error {
			g.SetLimit(2)
			g.SetLimit(0) // no limit
			for range 5 {
				g.Go(func(wt *weft.Task) error { g0++; return wt.Sleep(time.Second) })
			}
			if g0 != 5 {
				t.Errorf("without a limit %d of 5 started at once", g0)
			}
			return nil
		})
	}, weft.WithVirtualTime(epoch), oneLoop)
}

func TestStartReturnsOnceReadyIsCalled(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var order []string
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			err := g.Start(func(wt *weft.Task, ready func()) error {
				wt.Sleep(time.Second) // getting ready
				order = append(order, "listening")
				ready()
				wt.Sleep(time.Second)
				order = append(order, "served")
				return nil
			})
			order = append(order, fmt.Sprintf("Start returned %v at %v", err, wt.Now().Sub(epoch)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(order, "; "); got != "listening; Start returned <nil> at 1s; served" {
			t.Fatalf("order: %s", got)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestStartFailureBeforeReadyGoesToTheCallerOnly(t *testing.T) {
	boom := errors.New("cannot listen")
	run(t, func(wt *weft.Task) {
		var startErr, noReady error
		var siblingErr error
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				siblingErr = wt.Sleep(time.Second)
				return siblingErr
			})
			startErr = g.Start(func(wt *weft.Task, ready func()) error { return boom })
			noReady = g.Start(func(wt *weft.Task, ready func()) error { return nil })
			return nil
		})
		if startErr != boom || noReady == nil || !strings.HasPrefix(noReady.Error(), "weft: ") {
			t.Fatalf("Start = %v; without ready: %v", startErr, noReady)
		}
		if err != nil || siblingErr != nil {
			t.Fatalf("the failure before ready counted for the group: Group %v, sibling %v", err, siblingErr)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestStartFailureAfterReadyCountsForTheGroup(t *testing.T) {
	boom := errors.New("crashed later")
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			if err := g.Start(func(wt *weft.Task, ready func()) error {
				ready()
				wt.Sleep(time.Second)
				return boom
			}); err != nil {
				t.Errorf("Start = %v", err)
			}
			return wt.Sleep(time.Hour)
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Group = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestStartReadyTwicePanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var msg string
		weft.Group(wt, func(g *weft.TaskGroup) error {
			return g.Start(func(wt *weft.Task, ready func()) error {
				ready()
				msg = panicMessage(ready)
				return nil
			})
		})
		if !strings.HasPrefix(msg, "weft: ") {
			t.Fatalf("second ready: panic %q", msg)
		}
	})
}

func TestDaemonsAreCancelledWhenTheRestIsDone(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var daemonErr error
		var stoppedAt time.Duration
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.GoDaemon(func(wt *weft.Task) error {
				for {
					if daemonErr = wt.Sleep(100 * time.Millisecond); daemonErr != nil {
						stoppedAt = wt.Now().Sub(epoch)
						return daemonErr
					}
				}
			})
			g.Go(func(wt *weft.Task) error { return wt.Sleep(time.Second) })
			return wt.Sleep(500 * time.Millisecond)
		})
		if err != nil || !errors.Is(daemonErr, context.Canceled) || stoppedAt != time.Second {
			t.Fatalf("Group = %v; daemon stopped with %v at %v", err, daemonErr, stoppedAt)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestDaemonFailureCountsLikeAnyOther(t *testing.T) {
	boom := errors.New("daemon broke")
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.GoDaemon(func(wt *weft.Task) error {
				wt.Sleep(time.Second)
				return boom
			})
			return wt.Sleep(time.Hour)
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Group = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestHandleTakesFailuresWithoutCancellingTheGroup(t *testing.T) {
	var handled []string
	var others []error
	_, runErr := weft.Run(func(wt *weft.Task) (struct{}, error) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Handle(func(err error) { handled = append(handled, err.Error()) })
			g.Go(func(wt *weft.Task) error { return errors.New("client 1 reset") })
			g.Go(func(wt *weft.Task) error { panic("client 2 sent garbage") })
			for range 2 {
				g.Go(func(wt *weft.Task) error {
					err := wt.Sleep(time.Second)
					others = append(others, err)
					return err
				})
			}
			return nil
		})
		return struct{}{}, err
	}, weft.WithVirtualTime(epoch), oneLoop)
	if runErr != nil {
		t.Fatalf("Run = %v", runErr)
	}
	if len(handled) != 2 || handled[0] != "client 1 reset" || !strings.Contains(handled[1], "client 2 sent garbage") {
		t.Fatalf("handled %q", handled)
	}
	if len(others) != 2 || others[0] != nil || others[1] != nil {
		t.Fatalf("the other tasks were disturbed: %v", others)
	}
}

func TestHandlerRunsAfterTheFailingTaskFinished(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var settledInHandler bool
		weft.Group(wt, func(g *weft.TaskGroup) error {
			var p *weft.Promise[int]
			g.Handle(func(err error) { settledInHandler = p.Settled() })
			p = weft.GoIn(g, func(wt *weft.Task) (int, error) {
				wt.Yield() // GoIn returns first
				return 0, errors.New("x")
			})
			return nil
		})
		if !settledInHandler {
			t.Fatal("the handler ran before the task's promise settled")
		}
	}, oneLoop)
}

func TestHandlerMayCancelTheGroupAndBodyFailuresStillEndIt(t *testing.T) {
	bodyErr := errors.New("body failed")
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Handle(func(error) { g.Cancel() })
			g.Go(func(wt *weft.Task) error { return errors.New("fatal for the group") })
			return wt.Sleep(time.Hour)
		})
		if err != nil {
			t.Fatalf("Group cancelled by its handler = %v", err)
		}
		err = weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Handle(func(error) {})
			g.Go(func(wt *weft.Task) error { return wt.Sleep(time.Hour) })
			return bodyErr
		})
		if !errors.Is(err, bodyErr) {
			t.Fatalf("Group with a failing body = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestGoInResultAndFailure(t *testing.T) {
	boom := errors.New("boom")
	run(t, func(wt *weft.Task) {
		var p, q *weft.Promise[string]
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			p = weft.GoIn(g, func(wt *weft.Task) (string, error) { return "value", nil })
			q = weft.GoIn(g, func(wt *weft.Task) (string, error) {
				wt.Sleep(time.Second)
				return "", boom
			})
			v, err := p.Await(wt)
			if v != "value" || err != nil {
				t.Errorf("GoIn's promise: %q, %v", v, err)
			}
			return wt.Sleep(time.Hour) // cancelled by q's failure
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Group = %v", err)
		}
		if _, err := q.Await(wt); err != boom {
			t.Fatalf("q = %v", err)
		}
	}, weft.WithVirtualTime(epoch))
}

func TestGroupOfGoInFailuresIsNotReportedTwiceByRun(t *testing.T) {
	boom := errors.New("boom")
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		gerr := weft.Group(wt, func(g *weft.TaskGroup) error {
			weft.GoIn(g, func(wt *weft.Task) (int, error) { return 0, boom })
			return nil
		})
		if !errors.Is(gerr, boom) {
			t.Errorf("Group = %v", gerr)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatalf("Run reported the group's failure again: %v", err)
	}
}

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkGroupGo(b *testing.B) { benchmarks.GroupGo(b) }

func BenchmarkWaitGroupGo(b *testing.B) { benchmarks.WaitGroupGo(b) }

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
	}, oneLoop) // the tasks append to done without a lock
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

// g0Sleep is the body waiting for a long time.
func g0Sleep(_ *weft.TaskGroup, wt *weft.Task) error { return wt.Sleep(time.Hour) }
