package weft_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestBlockingRunsOffTheLoopWhileTasksGoOn(t *testing.T) {
	ticks := 0
	run(t, func(wt *weft.Task) {
		ticker := spawn(wt, func(wt *weft.Task) {
			for range 10 {
				wt.Sleep(5 * time.Millisecond)
				ticks++
			}
		})
		v, err := weft.Blocking(wt, func(ctx context.Context) (int, error) {
			time.Sleep(100 * time.Millisecond) // blocks its goroutine, not the loop
			return 42, nil
		})
		if v != 42 || err != nil {
			t.Fatalf("Blocking = %d, %v", v, err)
		}
		if ticks < 5 {
			t.Fatalf("the loop was blocked: %d ticks during the blocking call", ticks)
		}
		ticker.Await(wt)
	}, oneLoop)
}

// TestBlockingIsNotBoundedByTheCPUs: many calls wait at once, far more than
// the Offload pool's workers (here 1, and that one busy), which is what
// waiting on a database from many tasks needs.
func TestBlockingIsNotBoundedByTheCPUs(t *testing.T) {
	const n = 64
	var in atomic.Int32
	all := make(chan struct{})
	run(t, func(wt *weft.Task) {
		release := make(chan struct{})
		busy := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Offload(wt, func() (int, error) { <-release; return 0, nil })
		})
		var ps []*weft.Promise[int]
		for range n {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Blocking(wt, func(ctx context.Context) (int, error) {
					if in.Add(1) == n {
						close(all)
					}
					select { // every call must be in flight at once to get past this
					case <-all:
						return 1, nil
					case <-time.After(10 * time.Second):
						return 0, errors.New("not all calls ran at once")
					}
				})
			}))
		}
		vals, err := weft.All(wt, ps...)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != n {
			t.Fatalf("%d results", len(vals))
		}
		close(release)
		busy.Await(wt)
	}, weft.WithOffloadWorkers(1))
}

func TestBlockingKeepsRunAliveAndRunWaitsForIt(t *testing.T) {
	var done atomic.Bool
	run(t, func(wt *weft.Task) {
		weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Blocking(wt, func(ctx context.Context) (int, error) {
				time.Sleep(30 * time.Millisecond)
				done.Store(true)
				return 0, nil
			})
		})
		// main returns while the call runs: not a deadlock, and Run waits.
	})
	if !done.Load() {
		t.Fatal("Run returned before the blocking call finished")
	}
}

// TestBlockingWaitIsNotADeadlock: the only other task waits on a promise
// that the blocking call's goroutine settles, so the Run would be a
// deadlock if the waiting call did not count.
func TestBlockingWaitIsNotADeadlock(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p, settle := weft.NewPromise[int]()
		waiter := weft.Go(wt, func(wt *weft.Task) (int, error) { return p.Await(wt) })
		_, err := weft.Blocking(wt, func(ctx context.Context) (int, error) {
			time.Sleep(20 * time.Millisecond)
			settle(7, nil)
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := waiter.Await(wt); v != 7 || err != nil {
			t.Fatalf("waiter = %d, %v", v, err)
		}
	})
}

// TestBlockingCancelledCancelsContextWithCauseAndStillWaits: the task's
// cancellation reaches f through ctx with its cause; Blocking returns only
// when f has, with f's result; the next suspension point is cancelled.
func TestBlockingCancelledCancelsContextWithCauseAndStillWaits(t *testing.T) {
	cause := errors.New("shutting down")
	var fEnded atomic.Bool
	run(t, func(wt *weft.Task) {
		started := make(chan struct{})
		p := weft.Go(wt, func(wt *weft.Task) (string, error) {
			v, err := weft.Blocking(wt, func(ctx context.Context) (string, error) {
				close(started)
				<-ctx.Done()
				time.Sleep(20 * time.Millisecond) // cleanup after the cancellation
				fEnded.Store(true)
				return fmt.Sprintf("cause=%v err=%v", context.Cause(ctx), ctx.Err()), nil
			})
			if !fEnded.Load() {
				t.Error("Blocking returned before f did")
			}
			if err := wt.Yield(); !errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
				t.Errorf("the next suspension point = %v, want the cancellation", err)
			}
			return v, err
		})
		_, err := weft.Blocking(wt, func(ctx context.Context) (int, error) { <-started; return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		p.CancelWithCause(cause)
		v, err := p.Await(wt)
		if err != nil || v != "cause=shutting down err=context canceled" {
			t.Fatalf("Blocking = %q, %v", v, err)
		}
	})
}

// TestBlockingCancelledBeforeItStartsDoesNotRunF: a cancelled task gets
// the cause at once.
func TestBlockingCancelledBeforeItStartsDoesNotRunF(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ran atomic.Bool
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(time.Hour)
			return weft.Blocking(wt, func(ctx context.Context) (int, error) { ran.Store(true); return 1, nil })
		})
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("Blocking in a cancelled task = %v", err)
		}
		if ran.Load() {
			t.Fatal("f ran in a cancelled task")
		}
	})
}

// TestBlockingUnderTimeout: ctx has the Timeout's deadline, and when it
// passes, ctx.Err() is DeadlineExceeded.
func TestBlockingUnderTimeout(t *testing.T) {
	run(t, func(wt *weft.Task) {
		start := time.Now()
		_, err := weft.Timeout(wt, 50*time.Millisecond, func(wt *weft.Task) (int, error) {
			return weft.Blocking(wt, func(ctx context.Context) (int, error) {
				dl, ok := ctx.Deadline()
				if !ok || dl.Before(start) || dl.After(start.Add(time.Second)) {
					return 0, fmt.Errorf("ctx.Deadline() = %v, %v", dl, ok)
				}
				<-ctx.Done()
				return 0, ctx.Err()
			})
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Timeout(Blocking) = %v, want DeadlineExceeded", err)
		}
	})
}

func TestBlockingPanicBecomesPanicError(t *testing.T) {
	run(t, func(wt *weft.Task) {
		_, err := weft.Blocking(wt, func(ctx context.Context) (int, error) { panic("in a driver") })
		var pe *weft.PanicError
		if !errors.As(err, &pe) || pe.Value != "in a driver" {
			t.Fatalf("Blocking = %v", err)
		}
		if !strings.Contains(string(pe.Stack), "blocking_test.go") {
			t.Fatalf("the panic's stack does not show where f panicked:\n%s", pe.Stack)
		}
		// The goroutine that panicked is not needed any more; another call works.
		if v, err := weft.Blocking(wt, func(ctx context.Context) (int, error) { return 3, nil }); v != 3 || err != nil {
			t.Fatalf("Blocking after a panic = %d, %v", v, err)
		}
	})
}

func TestBlockingGoexitIsAnError(t *testing.T) {
	run(t, func(wt *weft.Task) {
		_, err := weft.Blocking(wt, func(ctx context.Context) (int, error) { runtime.Goexit(); return 0, nil })
		if err == nil || !strings.Contains(err.Error(), "Goexit") {
			t.Fatalf("Blocking = %v", err)
		}
	})
}

// TestBlockingFunctionUsingTheTaskPanicsLoudly: f may not use the Task;
// the misuse panics with a "weft:" message, raised again in the task (it is
// a bug, not an error value for f's caller to handle).
func TestBlockingFunctionUsingTheTaskPanicsLoudly(t *testing.T) {
	for _, use := range []struct {
		name string
		f    func(wt *weft.Task)
	}{
		{"Yield", func(wt *weft.Task) { wt.Yield() }},
		{"Sleep", func(wt *weft.Task) { wt.Sleep(time.Millisecond) }},
		{"Context", func(wt *weft.Task) { wt.Context() }},
		{"Go", func(wt *weft.Task) { weft.Go(wt, func(*weft.Task) (int, error) { return 0, nil }) }},
		{"Blocking", func(wt *weft.Task) {
			weft.Blocking(wt, func(context.Context) (int, error) { return 0, nil })
		}},
	} {
		t.Run(use.name, func(t *testing.T) {
			var recovered any
			run(t, func(wt *weft.Task) {
				func() {
					defer func() { recovered = recover() }()
					weft.Blocking(wt, func(ctx context.Context) (int, error) {
						use.f(wt)
						return 0, nil
					})
				}()
			})
			msg := fmt.Sprint(recovered)
			if !strings.HasPrefix(msg, "weft: "+use.name+" called outside the task") {
				t.Fatalf("using the Task in f: recovered %q", msg)
			}
			if !strings.Contains(msg, "blocking_test.go") {
				t.Fatalf("the panic does not show where f used the Task:\n%s", msg)
			}
		})
	}
}

func TestBlockingBadInput(t *testing.T) {
	run(t, func(wt *weft.Task) {
		mustPanicWeft(t, "nil function", func() { weft.Blocking[int](wt, nil) })
	})
	mustPanicWeft(t, "negative limit", func() { weft.WithBlockingLimit(-1) })
	mustPanicWeft(t, "nil task", func() {
		weft.Blocking(nil, func(context.Context) (int, error) { return 0, nil })
	})
	var stale *weft.Task
	run(t, func(wt *weft.Task) { stale = wt })
	mustPanicWeft(t, "after Run ended", func() {
		weft.Blocking(stale, func(context.Context) (int, error) { return 0, nil })
	})
}

// TestBlockingInSeededRunNeedsRealIO: a seeded Run replays only what goes
// through weft, so Blocking refuses, as Offload does.
func TestBlockingInSeededRunNeedsRealIO(t *testing.T) {
	run(t, func(wt *weft.Task) {
		_, err := weft.Blocking(wt, func(context.Context) (int, error) { return 1, nil })
		if !errors.Is(err, weft.ErrRealIO) {
			t.Fatalf("Blocking under a seed = %v, want ErrRealIO", err)
		}
	}, weft.WithSeed(1))
	run(t, func(wt *weft.Task) {
		if v, err := weft.Blocking(wt, func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
			t.Fatalf("Blocking under a seed with AllowRealIO = %d, %v", v, err)
		}
	}, weft.WithSeed(1), weft.AllowRealIO())
}

// TestBlockingLimitQueuesInOrder: with a limit of 3, never more than 3
// calls run at once, queued calls start in the order they were made as
// slots free, and a queued task shows in Dump.
func TestBlockingLimitQueuesInOrder(t *testing.T) {
	const n, limit = 10, 3
	var running, peak atomic.Int32
	var mu sync.Mutex
	var started []int
	startedLen := func() int { mu.Lock(); defer mu.Unlock(); return len(started) }
	var release [n]chan struct{}
	for i := range release {
		release[i] = make(chan struct{})
	}
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[int]
		for i := range n {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Blocking(wt, func(ctx context.Context) (int, error) {
					r := running.Add(1)
					for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
					}
					mu.Lock()
					started = append(started, i)
					mu.Unlock()
					<-release[i]
					running.Add(-1)
					return i, nil
				})
			}))
			wt.Yield() // each task makes its call before the next starts
		}
		waitStarted := func(k int) {
			deadline := time.Now().Add(10 * time.Second)
			for startedLen() < k && time.Now().Before(deadline) {
				wt.Sleep(time.Millisecond)
			}
			wt.Sleep(5 * time.Millisecond) // and no more than k
		}
		waitStarted(limit)
		var b bytes.Buffer
		weft.Dump(&b)
		if !strings.Contains(b.String(), "Blocking (queued: WithBlockingLimit)") {
			t.Errorf("the dump does not show the queued calls:\n%s", b.String())
		}
		// Free one slot at a time: the next call in line takes it.
		for k := 0; k < n-limit; k++ {
			mu.Lock()
			first := started[k]
			mu.Unlock()
			close(release[first])
			waitStarted(limit + k + 1)
			mu.Lock()
			if len(started) != limit+k+1 || started[limit+k] != limit+k {
				t.Errorf("after freeing a slot, the calls started are %v: want call %d next", started, limit+k)
			}
			mu.Unlock()
		}
		for k := n - limit; k < n; k++ {
			close(release[started[k]])
		}
		if _, err := weft.All(wt, ps...); err != nil {
			t.Fatal(err)
		}
	}, weft.WithBlockingLimit(limit), oneLoop)
	if p := peak.Load(); p != limit {
		t.Fatalf("%d calls ran at once with a limit of %d", p, limit)
	}
}

// TestBlockingQueuedCallIsCancellable: a task waiting for a slot can be
// cancelled, and its f never runs.
func TestBlockingQueuedCallIsCancellable(t *testing.T) {
	run(t, func(wt *weft.Task) {
		release := make(chan struct{})
		first := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Blocking(wt, func(context.Context) (int, error) { <-release; return 1, nil })
		})
		var ran atomic.Bool
		second := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Blocking(wt, func(context.Context) (int, error) { ran.Store(true); return 2, nil })
		})
		wt.Yield()
		second.Cancel()
		if _, err := second.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("queued Blocking cancelled = %v", err)
		}
		close(release)
		if v, err := first.Await(wt); v != 1 || err != nil {
			t.Fatalf("first = %d, %v", v, err)
		}
		if ran.Load() {
			t.Fatal("the cancelled call ran")
		}
	}, weft.WithBlockingLimit(1))
}

// TestBlockingShowsInDump: a task waiting in Blocking shows as such, with
// the line of the call.
func TestBlockingShowsInDump(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	run(tt, func(t *weft.Task) {
		dumped := make(chan string, 1)
		want := `(?m)"db-call" .*: waiting on off-loop work \(Blocking\) for \S+ at .*blocking_test\.go:\d+;`
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("db-call")
			return weft.Blocking(t, func(ctx context.Context) (int, error) { // the line to show
				// f may start before the task has published its wait:
				// look again until it has (or give the last look).
				var s string
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
					var b bytes.Buffer
					weft.Dump(&b)
					if s = b.String(); regexp.MustCompile(want).MatchString(s) {
						break
					}
				}
				dumped <- s
				return 0, nil
			})
		})
		p.Await(t)
		s := <-dumped
		if !regexp.MustCompile(want).MatchString(s) {
			tt.Errorf("the dump has no line matching %s:\n%s", want, s)
		}
	})
}

// TestBlockingLeavesNoGoroutine: when Run returns, every goroutine that
// served a Blocking call has ended, idle ones included, on one loop and on
// several (where the calls are made from more than one loop).
func TestBlockingLeavesNoGoroutine(t *testing.T) {
	for _, loops := range []int{1, 4} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			before := runtime.NumGoroutine()
			var mu sync.Mutex
			seen := map[int]bool{}
			var peak atomic.Int32
			_, err := weft.Run(func(wt *weft.Task) (int, error) {
				var ps []*weft.Promise[int]
				for i := range 200 {
					ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) {
						sum := 0
						for j := range 20 {
							v, err := weft.Blocking(wt, func(context.Context) (int, error) {
								if j%5 == 0 {
									time.Sleep(time.Millisecond) // some overlap: several goroutines
								}
								if n := int32(runtime.NumGoroutine()); n > peak.Load() {
									peak.Store(n)
								}
								return i, nil
							})
							if err != nil {
								return 0, err
							}
							sum += v
							mu.Lock()
							seen[wt.Loop()] = true
							mu.Unlock()
							if err := wt.Checkpoint(); err != nil {
								return 0, err
							}
						}
						return sum, nil
					}))
				}
				_, err := weft.All(wt, ps...)
				return 0, err
			}, weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			if loops > 1 && len(seen) < 2 {
				t.Errorf("every call was made from one loop (%v): the test does not test several", seen)
			}
			if int(peak.Load()) <= before+1 {
				t.Errorf("at most %d goroutines during the run: the calls never overlapped", peak.Load())
			}
			// The workers are ended and waited for by Run: the count is back
			// (a goroutine that has called Done may still be on its way out,
			// which goleak's retries allow for).
			deadline := time.Now().Add(time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after Run, %d before", n, before)
			}
		})
	}
}

// TestBlockingIdleGoroutinesEnd: goroutines kept for reuse end on their
// own after a while, before Run ends.
func TestBlockingIdleGoroutinesEnd(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[int]
		for range 20 {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Blocking(wt, func(context.Context) (int, error) { time.Sleep(10 * time.Millisecond); return 0, nil })
			}))
		}
		weft.All(wt, ps...)
		if n := blockingWorkers(); n < 10 {
			t.Fatalf("%d goroutines after 20 overlapping calls: none kept for reuse", n)
		}
		deadline := time.Now().Add(5 * time.Second)
		for blockingWorkers() > 0 && time.Now().Before(deadline) {
			wt.Sleep(10 * time.Millisecond)
		}
		if n := blockingWorkers(); n > 0 {
			t.Fatalf("%d goroutines 5 s after the calls: idle ones do not end", n)
		}
	}, oneLoop)
}

// blockingWorkers counts the goroutines that run Blocking calls.
func blockingWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "weft.(*blockingWorker).work")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkBlockingCall(b *testing.B) { benchmarks.BlockingCall(b) }

func BenchmarkGoroutineCall(b *testing.B) { benchmarks.GoroutineCall(b) }

func BenchmarkBlockingVsGoroutine(b *testing.B) { benchmarks.BlockingVsGoroutine(b) }
