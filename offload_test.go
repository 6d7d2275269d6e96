package weft_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestOffloadRunsOffTheLoopWhileTasksGoOn(t *testing.T) {
	ticks := 0
	run(t, func(wt *weft.Task) {
		ticker := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			for i := 0; i < 10; i++ {
				wt.Sleep(5 * time.Millisecond)
				ticks++
			}
			return struct{}{}, nil
		})
		v, err := weft.Offload(wt, func() (int, error) {
			time.Sleep(100 * time.Millisecond) // blocks its goroutine, not the loop
			return 42, nil
		})
		if v != 42 || err != nil {
			t.Fatalf("Offload = %d, %v", v, err)
		}
		if ticks < 5 {
			t.Fatalf("the loop was blocked: %d ticks during the offloaded work", ticks)
		}
		ticker.Await(wt)
	})
}

func TestOffloadKeepsRunAliveAndRunWaitsForIt(t *testing.T) {
	var done atomic.Bool
	run(t, func(wt *weft.Task) {
		weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Offload(wt, func() (int, error) {
				time.Sleep(30 * time.Millisecond)
				done.Store(true)
				return 0, nil
			})
		})
		// main returns while the work runs: not a deadlock, and Run waits.
	})
	if !done.Load() {
		t.Fatal("Run returned before the offloaded work finished")
	}
}

func TestOffloadPanicBecomesPanicError(t *testing.T) {
	run(t, func(wt *weft.Task) {
		_, err := weft.Offload(wt, func() (int, error) { panic("off the loop") })
		var pe *weft.PanicError
		if !errors.As(err, &pe) || pe.Value != "off the loop" {
			t.Fatalf("Offload = %v", err)
		}
	})
}

func TestCancelledOffloadReturnsAtOnceAndRunStillWaits(t *testing.T) {
	var finished atomic.Bool
	release := make(chan struct{})
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Offload(wt, func() (int, error) {
				<-release
				finished.Store(true)
				return 1, nil
			})
		})
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Offload = %v", err)
		}
		if finished.Load() {
			t.Fatal("the work finished before the cancelled Offload returned")
		}
		close(release)
	})
	if !finished.Load() {
		t.Fatal("Run returned before the abandoned work finished")
	}
}

func TestOffloadPoolIsBounded(t *testing.T) {
	var running, peak atomic.Int32
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[int]
		for i := 0; i < 8; i++ {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Offload(wt, func() (int, error) {
					n := running.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					time.Sleep(10 * time.Millisecond)
					running.Add(-1)
					return 0, nil
				})
			}))
		}
		if _, err := weft.All(wt, ps...); err != nil {
			t.Fatal(err)
		}
	}, weft.WithOffloadWorkers(2))
	if p := peak.Load(); p != 2 {
		t.Fatalf("%d offloaded calls ran at once with a pool of 2", p)
	}
}

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkOffload(b *testing.B) { benchmarks.OffloadRoundTrip(b) }

func BenchmarkWorkerHandoff(b *testing.B) { benchmarks.WorkerHandoff(b) }

// Offload's f may call t.Context(), as Offload's doc says: the context of
// the task, the same one its own code gets, done when the task is
// cancelled or has finished, whichever way f and the task interleave.

// TestOffloadFunctionMayCallContext: f calls t.Context() on the pool's
// goroutine, on one loop and on several (from tasks that really run on more
// than one loop), and gets the task's own context: Run's values, not done,
// the one the task's code gets afterwards.
func TestOffloadFunctionMayCallContext(t *testing.T) {
	for _, loops := range []int{1, 2, 4} {
		var seen [4]atomic.Bool
		loopsSeen := func() int {
			n := 0
			for i := range seen {
				if seen[i].Load() {
					n++
				}
			}
			return n
		}
		base := context.WithValue(context.Background(), offloadCtxKey{}, "request-7")
		run(t, func(wt *weft.Task) {
			start := time.Now()
			var ps []*weft.Promise[struct{}]
			for range 32 {
				ps = append(ps, spawn(wt, func(wt *weft.Task) {
					// 20 rounds, and more while every task has run on one
					// loop (on a loaded machine the other loops may be slow
					// to take work), for 10 s at most.
					for i := 0; i < 20 || loops > 1 && loopsSeen() < 2 && time.Since(start) < 10*time.Second; i++ {
						seen[wt.Loop()].Store(true)
						if i%2 == 1 {
							wt.Context() // made by the task itself this time
						}
						ctx, err := weft.Offload(wt, func() (context.Context, error) {
							ctx := wt.Context()
							if ctx.Err() != nil {
								return nil, ctx.Err()
							}
							if again := wt.Context(); again != ctx {
								return nil, errors.New("two contexts")
							}
							spinFor(20 * time.Microsecond)
							return ctx, nil
						})
						if err != nil {
							t.Errorf("Offload: %v", err)
							return
						}
						if ctx != wt.Context() {
							t.Errorf("f got another context than the task's")
							return
						}
						if v := ctx.Value(offloadCtxKey{}); v != "request-7" {
							t.Errorf("f's context carries %v", v)
							return
						}
						wt.Checkpoint()
					}
				}))
			}
			weft.All(wt, ps...)
		}, weft.WithLoops(loops), weft.WithContext(base))
		if used := loopsSeen(); loops > 1 && used < 2 {
			t.Errorf("%d loops: the tasks ran on %d loop(s) only", loops, used)
		}
	}
}

// TestOffloadFunctionSeesTheTasksCancellation: f waits on t.Context();
// cancelling the task (from a task of another loop, when there are several)
// ends Offload at once and f's wait with the cause.
func TestOffloadFunctionSeesTheTasksCancellation(t *testing.T) {
	errStop := errors.New("stop")
	for _, loops := range []int{1, 2} {
		var fCause atomic.Value
		run(t, func(wt *weft.Task) {
			inF := make(chan struct{})
			p := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Offload(wt, func() (int, error) {
					ctx := wt.Context()
					close(inF)
					<-ctx.Done()
					fCause.Store(context.Cause(ctx))
					return 1, nil
				})
			})
			// Wait for f off the loop, so that the task is in its Offload.
			weft.Offload(wt, func() (struct{}, error) { <-inF; return struct{}{}, nil })
			canceller := spawn(wt, func(ct *weft.Task) { p.CancelWithCause(errStop) })
			canceller.Await(wt)
			if _, err := p.Await(wt); !errors.Is(err, errStop) {
				t.Errorf("Offload = %v", err)
			}
		}, weft.WithLoops(loops))
		// Run waited for f.
		if c, _ := fCause.Load().(error); !errors.Is(c, errStop) {
			t.Errorf("%d loops: f saw its context end with %v", loops, c)
		}
	}
}

// TestOffloadFunctionCallsContextAfterTheTaskWasCancelledOrFinished: the
// first call to t.Context() comes from f after the task was cancelled (its
// Offload returned), and after it finished: the context f makes then is
// already done, with the cancellation's cause.
func TestOffloadFunctionCallsContextAfterTheTaskWasCancelledOrFinished(t *testing.T) {
	errStop := errors.New("stop")
	for _, finished := range []bool{false, true} {
		for _, loops := range []int{1, 2} {
			var fErr, fCause atomic.Value
			run(t, func(wt *weft.Task) {
				goOn := make(chan struct{})
				var fDone sync.WaitGroup
				fDone.Add(1)
				p := weft.Go(wt, func(wt *weft.Task) (int, error) {
					v, err := weft.Offload(wt, func() (int, error) {
						defer fDone.Done()
						<-goOn
						ctx := wt.Context()
						fErr.Store(ctx.Err())
						fCause.Store(context.Cause(ctx))
						return 1, nil
					})
					if err != nil && !finished {
						// Cancelled and still running: wait for f here.
						wt.Sleep(time.Hour)
					}
					return v, err
				})
				wt.Yield()
				p.CancelWithCause(errStop)
				if finished {
					p.Await(wt) // the task has finished; f has not called Context yet
				} else {
					wt.Sleep(10 * time.Millisecond) // the task is past its Offload, asleep
				}
				close(goOn)
				weft.Offload(wt, func() (struct{}, error) { fDone.Wait(); return struct{}{}, nil })
				p.Cancel()
				p.Await(wt)
			}, weft.WithLoops(loops))
			if e, _ := fErr.Load().(error); e != context.Canceled {
				t.Errorf("finished %v, %d loops: f's context Err = %v", finished, loops, e)
			}
			if c, _ := fCause.Load().(error); !errors.Is(c, errStop) {
				t.Errorf("finished %v, %d loops: f's context Cause = %v", finished, loops, c)
			}
		}
	}
}

// TestContextFromElsewhereStillPanics: only the task's code and its own
// Offload jobs may call Context: another task's Offload job, or a plain
// goroutine, gets the misuse panic.
func TestContextFromElsewhereStillPanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		other := weft.Go(wt, func(ot *weft.Task) (string, error) {
			return weft.Offload(ot, func() (string, error) {
				return panicMessage(func() { wt.Context() }), nil
			})
		})
		if msg, _ := other.Await(wt); !strings.HasPrefix(msg, "weft: ") && !skipGoroutineCheck() {
			t.Errorf("Context from another task's Offload job: %q", msg)
		}
		// A goroutine started inside f is not f.
		msg, _ := weft.Offload(wt, func() (string, error) {
			got := make(chan string)
			go func() { got <- panicMessage(func() { wt.Context() }) }()
			return <-got, nil
		})
		if !strings.HasPrefix(msg, "weft: ") && !skipGoroutineCheck() {
			t.Errorf("Context from a goroutine started by f: %q", msg)
		}
		// Other Task methods stay refused inside f.
		msg, _ = weft.Offload(wt, func() (string, error) {
			return panicMessage(func() { wt.Yield() }), nil
		})
		if !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("Yield from f: %q", msg)
		}
	})
}

// TestOffloadFunctionSeesTheDeadlineInItsContext: f's t.Context() reports
// the deadline of the Timeout the task runs under, and ends with
// DeadlineExceeded when it passes.
func TestOffloadFunctionSeesTheDeadlineInItsContext(t *testing.T) {
	var hasDeadline bool
	var fErr error
	run(t, func(wt *weft.Task) {
		_, err := weft.Timeout(wt, 50*time.Millisecond, func(wt *weft.Task) (int, error) {
			return weft.Offload(wt, func() (int, error) {
				ctx := wt.Context()
				_, hasDeadline = ctx.Deadline()
				<-ctx.Done()
				fErr = ctx.Err()
				return 0, nil
			})
		})
		if !errors.Is(err, weft.ErrTimeout) {
			t.Errorf("Timeout = %v", err)
		}
	})
	// Run has waited for f.
	if !hasDeadline || fErr != context.DeadlineExceeded {
		t.Errorf("f's context: deadline %v, Err %v", hasDeadline, fErr)
	}
}

func TestOffloadedCPUWorkDoesNotStarveTheLoop(t *testing.T) {
	needTiming(t)
	skipTimingUnderRace(t)
	var lags []time.Duration
	run(t, func(wt *weft.Task) {
		var jobs []*weft.Promise[int]
		for i := 0; i < 4; i++ {
			jobs = append(jobs, weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Offload(wt, func() (int, error) {
					n := 0
					for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
						n++
					}
					return n, nil
				})
			}))
		}
		for i := 0; i < 100; i++ {
			want := time.Now().Add(time.Millisecond)
			wt.Sleep(time.Millisecond)
			lags = append(lags, time.Since(want))
		}
		weft.All(wt, jobs...)
	})
	slices.Sort(lags)
	if median := lags[len(lags)/2]; median > 2*time.Millisecond {
		t.Fatalf("median timer lag %v while offloaded work fills every core (p90 %v)", median, lags[len(lags)*9/10])
	}
}

type offloadCtxKey struct{}
