package weft_test

// Timeout is a cancel scope on the calling task (issue 17, item 5), as
// Trio's fail_after, asyncio's timeout, Eio's with_timeout and Go's
// context.WithTimeout are: f runs on the same task, so what is bound to
// the task works inside it.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestTimeoutRunsFOnTheCallingTask(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inner *weft.Task
		v, err := weft.Timeout(wt, time.Hour, func(ft *weft.Task) (int, error) {
			inner = ft
			return 7, ft.Yield()
		})
		if v != 7 || err != nil {
			t.Fatalf("Timeout = %d, %v", v, err)
		}
		if inner != wt {
			t.Fatal("Timeout's f got another *Task than its caller's")
		}
	})
}

// A reader bound to the task before the Timeout is used inside it: every
// read succeeds (the seeded test that read a bufio.Reader over
// ReadWriter(t) inside Timeout and saw every read fail).
func TestTimeoutUsesWhatIsBoundToTheTask(t *testing.T) {
	run(t, func(wt *weft.Task) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		spawn(wt, func(wt *weft.Task) {
			defer w.Close()
			io.WriteString(w.ReadWriter(wt), "one\ntwo\nthree\n")
		})
		br := bufio.NewReader(r.ReadWriter(wt))
		var lines []string
		for {
			line, err := weft.Timeout(wt, time.Minute, func(wt *weft.Task) (string, error) {
				return br.ReadString('\n')
			})
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read inside Timeout: %v", err)
			}
			lines = append(lines, strings.TrimSpace(line))
		}
		if got := strings.Join(lines, ","); got != "one,two,three" {
			t.Fatalf("read %q", got)
		}
		// A Mutex locked by the task is unlocked inside the Timeout.
		var mu weft.Mutex
		if err := mu.Lock(wt); err != nil {
			t.Fatal(err)
		}
		weft.Timeout(wt, time.Minute, func(wt *weft.Task) (struct{}, error) {
			mu.Unlock()
			return struct{}{}, nil
		})
		if !mu.TryLock() {
			t.Fatal("the Mutex unlocked inside Timeout is still locked")
		}
	})
}

func TestTimeoutContextsAreTheScopes(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inside context.Context
		_, err := weft.Timeout(wt, 10*time.Millisecond, func(wt *weft.Task) (int, error) {
			inside = wt.Context()
			if _, ok := inside.Deadline(); !ok {
				t.Error("the context inside Timeout has no deadline")
			}
			return 0, wt.Sleep(time.Hour)
		})
		if err != weft.ErrTimeout {
			t.Fatalf("Timeout = %v, want ErrTimeout", err)
		}
		if !errors.Is(inside.Err(), context.DeadlineExceeded) {
			t.Fatalf("the context inside Timeout: Err = %v, want DeadlineExceeded", inside.Err())
		}
		after := wt.Context()
		if after.Err() != nil {
			t.Fatalf("the task's context after Timeout returned is done: %v", after.Err())
		}
		if _, ok := after.Deadline(); ok {
			t.Fatal("the task's context after Timeout returned has a deadline")
		}
		if err := wt.Sleep(time.Millisecond); err != nil {
			t.Fatalf("the task is still cancelled after Timeout returned: %v", err)
		}
		// A context taken inside a Timeout that ends in time is cancelled
		// when it returns, as context.WithTimeout's at the end of its
		// function.
		weft.Timeout(wt, time.Hour, func(wt *weft.Task) (int, error) {
			inside = wt.Context()
			return 0, nil
		})
		if !errors.Is(inside.Err(), context.Canceled) {
			t.Fatalf("the context of a Timeout that returned: Err = %v, want Canceled", inside.Err())
		}
		if after.Err() != nil {
			t.Fatal("the task's context was cancelled by the end of a Timeout")
		}
	})
}

func TestTimeoutsNestAndComposeWithProtect(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var innerErr error
		v, err := weft.Timeout(wt, time.Hour, func(wt *weft.Task) (string, error) {
			_, innerErr = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
				return 0, wt.Sleep(time.Hour)
			})
			// The outer scope is not cancelled by the inner deadline.
			if err := wt.Sleep(time.Millisecond); err != nil {
				return "", err
			}
			return "outer", nil
		})
		if innerErr != weft.ErrTimeout || v != "outer" || err != nil {
			t.Fatalf("inner %v; outer %q, %v", innerErr, v, err)
		}
		// Protect inside a Timeout shields its body from the deadline; the
		// deadline reaches the task when the Protect returns.
		var slept error
		_, err = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
			wt.Protect(func(wt *weft.Task) error {
				slept = wt.Sleep(20 * time.Millisecond)
				return nil
			})
			return 0, wt.Yield()
		})
		if slept != nil || err != weft.ErrTimeout {
			t.Fatalf("protected sleep: %v; Timeout: %v", slept, err)
		}
		// A task started inside inherits the deadline.
		_, err = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
			child := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
			return child.Await(wt)
		})
		if err != weft.ErrTimeout {
			t.Fatalf("Timeout around a child: %v", err)
		}
	}, weft.WithVirtualTime(time.Unix(0, 0)))
}

// A panic in f propagates out of Timeout, in the calling task, and the
// deadline is gone afterwards.
func TestTimeoutPropagatesAPanicInF(t *testing.T) {
	run(t, func(wt *weft.Task) {
		msg := panicMessage(func() {
			weft.Timeout(wt, time.Millisecond, func(wt *weft.Task) (int, error) { panic("inside") })
		})
		if msg != "inside" {
			t.Fatalf("panic %q", msg)
		}
		if err := wt.Sleep(5 * time.Millisecond); err != nil {
			t.Fatalf("the deadline of a Timeout that panicked still applies: %v", err)
		}
	}, weft.WithVirtualTime(time.Unix(0, 0)))
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
