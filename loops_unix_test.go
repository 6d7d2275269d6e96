//go:build unix

package weft_test

// Several loops in one Run (WithLoops): each rule of DESIGN.md's "Several
// loops" section, checked on 2 to 8 loops.

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestWithLoopsNegativePanics(t *testing.T) {
	msg := panicMessage(func() { weft.WithLoops(-1) })
	if !strings.HasPrefix(msg, "weft: ") {
		t.Fatalf("WithLoops(-1): panic %q", msg)
	}
}

func TestWithLoopsZeroMeansGOMAXPROCS(t *testing.T) {
	seen := map[int]bool{}
	var mu sync.Mutex
	run(t, func(wt *weft.Task) {
		if wt.Loop() != 0 {
			t.Errorf("main started on loop %d", wt.Loop())
		}
		var ps []*weft.Promise[struct{}]
		for range 64 {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				for range 200 {
					mu.Lock()
					seen[wt.Loop()] = true
					mu.Unlock()
					spinFor(20 * time.Microsecond)
					wt.Checkpoint()
					wt.Yield()
				}
			}))
		}
		weft.All(wt, ps...)
	}, weft.WithLoops(0))
	for l := range seen {
		if l < 0 || l >= runtime.GOMAXPROCS(0) {
			t.Fatalf("a task ran on loop %d of %d", l, runtime.GOMAXPROCS(0))
		}
	}
	if runtime.GOMAXPROCS(0) > 1 && len(seen) < 2 {
		t.Fatalf("64 busy tasks ran on loops %v only, of %d", seen, runtime.GOMAXPROCS(0))
	}
}

func TestGoRunsTheChildFirstOnSeveralLoops(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		var onLoop sync.Map
		run(t, func(wt *weft.Task) {
			var ps []*weft.Promise[struct{}]
			// 2000 spawns, and more while no task has run on another loop
			// (on a loaded machine the other loops may be slow to start).
			for i := 0; i < 2000 || (loopsUsed(&onLoop) < 2 && i < 200_000); i++ {
				var started atomic.Bool
				ps = append(ps, spawn(wt, func(wt *weft.Task) {
					started.Store(true)
					wt.Yield()
					onLoop.Store(wt.Loop(), true)
				}))
				if !started.Load() {
					t.Fatalf("%d loops: Go returned before the child started", n)
				}
				wt.Yield() // gives the other loops something to take
			}
			weft.All(wt, ps...)
		}, weft.WithLoops(n))
		if loopsUsed(&onLoop) < 2 {
			t.Fatalf("%d loops: the 2000 tasks all ran on one loop", n)
		}
	}
}

func TestLocalTasksNeverLeaveTheirLoop(t *testing.T) {
	var moved atomic.Int32
	var plainOn sync.Map
	start := time.Now()
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for range 8 {
			ps = append(ps, weft.Local(wt, func(wt *weft.Task) (struct{}, error) {
				home := wt.Loop()
				for i := range 3000 {
					if i%3 == 0 {
						wt.Sleep(time.Microsecond)
					} else {
						wt.Yield()
					}
					if wt.Loop() != home {
						moved.Add(1)
					}
				}
				return struct{}{}, nil
			}))
			// Plain tasks beside them, which do move, so that the loops hand
			// work over.
			// They go on past their 3000 yields until the work has
			// spread (or 10 s have passed): on a loaded machine the other
			// loops may not get a processor before 3000 yields are done.
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				for i := 0; i < 3000 || (loopsUsed(&plainOn) < 2 && time.Since(start) < 10*time.Second); i++ {
					wt.Yield()
					plainOn.Store(wt.Loop(), true)
				}
			}))
		}
		weft.All(wt, ps...)
	}, weft.WithLoops(4))
	if moved.Load() != 0 {
		t.Fatalf("Local tasks found themselves on another loop %d times", moved.Load())
	}
	if loopsUsed(&plainOn) < 2 {
		t.Fatal("the plain tasks beside the Local ones never left main's loop: nothing was handed over")
	}
}

func TestGroupsAndCancellationWorkAcrossLoops(t *testing.T) {
	boom := errors.New("boom")
	var cancelled atomic.Int32
	var ranOn sync.Map
	run(t, func(wt *weft.Task) {
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			for i := range 50 {
				g.Go(func(wt *weft.Task) error {
					weft.PinTo(wt, i%4)
					ranOn.Store(wt.Loop(), true)
					// Started by group tasks, wherever they run.
					g.Go(func(wt *weft.Task) error {
						if err := wt.Sleep(time.Hour); errors.Is(err, boom) {
							cancelled.Add(1)
						}
						return nil
					})
					spinFor(50 * time.Microsecond)
					if i == 49 {
						wt.Sleep(10 * time.Millisecond)
						return boom
					}
					if err := wt.Sleep(time.Hour); errors.Is(err, boom) {
						cancelled.Add(1)
					}
					return nil
				})
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Errorf("Group = %v", err)
		}
	}, weft.WithLoops(4))
	if cancelled.Load() != 99 {
		t.Fatalf("%d of 99 tasks saw the group's failure as their cause", cancelled.Load())
	}
	if n := loopsUsed(&ranOn); n != 4 {
		t.Fatalf("the group's tasks ran on %d loop(s), want 4", n)
	}
}

// Issue 17, item 3: a Run that did not ask for several loops never gets
// them from the environment; one that asks with LoopsFromEnv does, and a
// bad value is an error, not a silent default.
func TestLoopsComeFromTheEnvironmentOnlyWhenAsked(t *testing.T) {
	loopsOf := func(opts ...weft.Option) (int, error) {
		return weft.Run(func(wt *weft.Task) (int, error) {
			return weft.RunStats(wt).Loops, nil
		}, opts...)
	}
	t.Setenv("WEFT_LOOPS", "3")
	if n, err := loopsOf(weft.WithLoops(weft.LoopsFromEnv)); err != nil || n != 3 {
		t.Fatalf("WithLoops(LoopsFromEnv) with WEFT_LOOPS=3: %d loops, %v", n, err)
	}
	if !envLoopsTag {
		if n, err := loopsOf(); err != nil || n != 1 {
			t.Fatalf("no WithLoops, WEFT_LOOPS=3: %d loops, %v; want 1", n, err)
		}
	}
	if n, err := loopsOf(weft.WithLoops(2)); err != nil || n != 2 {
		t.Fatalf("WithLoops(2) with WEFT_LOOPS=3: %d loops, %v", n, err)
	}
	for _, bad := range []string{"four", "-2", "1.5"} {
		t.Setenv("WEFT_LOOPS", bad)
		if _, err := loopsOf(weft.WithLoops(weft.LoopsFromEnv)); err == nil || !strings.Contains(err.Error(), "WEFT_LOOPS") {
			t.Fatalf("WEFT_LOOPS=%s: %v, want an error naming it", bad, err)
		}
	}
	t.Setenv("WEFT_LOOPS", "")
	if n, err := loopsOf(weft.WithLoops(weft.LoopsFromEnv)); err != nil || n != 1 {
		t.Fatalf("WithLoops(LoopsFromEnv), WEFT_LOOPS unset: %d loops, %v", n, err)
	}
	if msg := panicMessage(func() { weft.WithLoops(-5) }); !strings.HasPrefix(msg, "weft: ") {
		t.Fatalf("WithLoops(-5): %q", msg)
	}
}
