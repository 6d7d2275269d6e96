package weft_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
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
