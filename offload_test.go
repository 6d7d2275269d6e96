package weft_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
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
