//go:build unix

package weft_test

// Several loops in one Run (WithLoops): each rule of DESIGN.md's "Several
// loops" section, checked on 2 to 8 loops.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
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

func TestCPUBoundTasksSpreadOverTheLoops(t *testing.T) {
	var mu sync.Mutex
	loops := map[int]int{}
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for range 4 {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				deadline := time.Now().Add(300 * time.Millisecond)
				for i := 0; time.Now().Before(deadline); i++ {
					if i%1000 == 0 {
						wt.Checkpoint()
						mu.Lock()
						loops[wt.Loop()]++
						mu.Unlock()
					}
				}
			}))
		}
		weft.All(wt, ps...)
	}, weft.WithLoops(2), weft.WithSwitchInterval(time.Millisecond))
	if len(loops) != 2 {
		t.Fatalf("CPU-bound tasks ran on loops %v, not on both", loops)
	}
}

// A CPU-bound task that its spawner cannot leave (main drives loop 0 and
// stays there) goes to the hungry loop itself at a slow Checkpoint, so the
// spawner goes on at once rather than after the task's switch interval
// (here an hour: without the move, main would not run before the task
// gave up waiting for it, after 10 s).
func TestCPUBoundTaskMovesItselfWhenWhatIsQueuedMustStay(t *testing.T) {
	var mainRan atomic.Bool
	sawMain, endLoop := false, -1
	run(t, func(wt *weft.Task) {
		p := spawn(wt, func(wt *weft.Task) {
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; time.Now().Before(deadline); i++ {
				if i%1000 == 0 {
					wt.Checkpoint()
					if mainRan.Load() {
						sawMain = true
						break
					}
				}
			}
			endLoop = wt.Loop()
		})
		mainRan.Store(true)
		p.Await(wt)
	}, weft.WithLoops(2), weft.WithSwitchInterval(time.Hour))
	if !sawMain || endLoop != 1 {
		t.Fatalf("the CPU-bound task saw main run: %v, and ended on loop %d: it kept loop 0 instead of moving to the idle loop", sawMain, endLoop)
	}
}

func TestLocalTasksNeverLeaveTheirLoop(t *testing.T) {
	var moved atomic.Int32
	var plainOn sync.Map
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
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				for range 3000 {
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

func TestAcceptedConnectionsAreServedOnEveryLoopAndCloseCleanly(t *testing.T) {
	noGC(t)
	before := openFDs(t)
	var mu sync.Mutex
	servedOn := map[int]int{}
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		server := spawn(wt, func(wt *weft.Task) {
			weft.Group(wt, func(g *weft.TaskGroup) error {
				g.Handle(func(err error) { t.Errorf("connection: %v", err) })
				for {
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					g.Go(func(wt *weft.Task) error {
						defer c.Close()
						buf := make([]byte, 64)
						for {
							n, err := c.Read(wt, buf)
							if err == io.EOF {
								return nil
							}
							if err != nil {
								return err
							}
							mu.Lock()
							servedOn[wt.Loop()]++
							mu.Unlock()
							if _, err := c.Write(wt, buf[:n]); err != nil {
								return err
							}
						}
					})
				}
			})
		})
		_, err := weft.Offload(wt, func() (struct{}, error) {
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						errs <- err
						return
					}
					defer c.Close()
					for j := range 50 {
						msg := []byte(fmt.Sprintf("conn %d msg %d", i, j))
						c.Write(msg)
						got := make([]byte, len(msg))
						if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
							errs <- fmt.Errorf("echo %q: %q, %v", msg, got, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			return struct{}{}, <-errs
		})
		if err != nil {
			t.Error(err)
		}
		ln.Close()
		server.Await(wt)
	}, weft.WithLoops(2))
	if len(servedOn) != 2 {
		t.Fatalf("connections were served on loops %v, not on both", servedOn)
	}
	if after := openFDs(t); after > before+2 {
		t.Fatalf("%d descriptors left open", after-before)
	}
}

func TestCrossLoopWakesAreNeverLost(t *testing.T) {
	rounds := 125_000 // 4 pairs, 2 settles a round: a million cross-loop wakes
	if raceEnabled || testing.Short() {
		rounds = 5_000
	}
	var wakes, cancelled atomic.Int64
	run(t, func(wt *weft.Task) {
		const pairs = 4
		err := weft.Group(wt, func(g *weft.TaskGroup) error {
			for range pairs {
				// Each round, a settles b's promise and b settles a's: every
				// settle wakes a task that may be on the other loop.
				toA := weft.NewChan[func(int, error) bool](1)
				toB := weft.NewChan[func(int, error) bool](1)
				pingPong := func(mine, theirs *weft.Chan[func(int, error) bool], loop int) func(*weft.Task) error {
					return func(wt *weft.Task) error {
						weft.PinTo(wt, loop) // the two sides on different loops
						for i := range rounds {
							p, settle := weft.NewPromise[int]()
							if err := theirs.Send(wt, settle); err != nil {
								return err
							}
							s, err := mine.Recv(wt)
							if err != nil {
								return err
							}
							s(i, nil)
							v, err := p.Await(wt)
							if err != nil || v != i {
								return fmt.Errorf("round %d: %d, %v", i, v, err)
							}
							wakes.Add(1)
						}
						return nil
					}
				}
				g.Go(pingPong(toA, toB, 0))
				g.Go(pingPong(toB, toA, 1))
			}
			// Cancellations from plain goroutines, of tasks waiting on any loop.
			for i := range 200 {
				never, _ := weft.NewPromise[int]()
				p := weft.GoIn(g, func(wt *weft.Task) (int, error) {
					weft.PinTo(wt, i%2)
					if i%4 < 2 {
						return never.Await(wt)
					}
					return 0, wt.Sleep(time.Hour)
				})
				go p.Cancel()
				g.Go(func(wt *weft.Task) error {
					if _, err := p.Await(wt); errors.Is(err, context.Canceled) {
						cancelled.Add(1)
					}
					return nil
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}, weft.WithLoops(2))
	if got, want := wakes.Load(), int64(4*2*rounds); got != want {
		t.Fatalf("%d of %d cross-loop wakes arrived", got, want)
	}
	if cancelled.Load() != 200 {
		t.Fatalf("%d of 200 cancellations from goroutines arrived", cancelled.Load())
	}
}

func TestDeadlockAcrossLoopsNamesEveryBlockedTask(t *testing.T) {
	var blockedOn sync.Map
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		a, b := weft.NewChan[int](0), weft.NewChan[int](0)
		for i := range 6 {
			spawn(wt, func(wt *weft.Task) {
				weft.PinTo(wt, i%4)
				blockedOn.Store(wt.Loop(), true)
				a.Recv(wt)
			})
			spawn(wt, func(wt *weft.Task) {
				weft.PinTo(wt, (i+1)%4)
				blockedOn.Store(wt.Loop(), true)
				never, _ := weft.NewPromise[int]()
				never.Await(wt)
			})
		}
		return b.Recv(wt)
	}, weft.WithLoops(4))
	if n := loopsUsed(&blockedOn); n != 4 {
		t.Fatalf("the blocked tasks waited on %d loop(s), want all 4", n)
	}
	var d *weft.DeadlockError
	if !errors.As(err, &d) || !d.MainBlocked || len(d.Blocked) != 13 {
		t.Fatalf("Run = %v", err)
	}
	ops := map[string]int{}
	for _, b := range d.Blocked {
		ops[b.Op]++
		if !strings.Contains(b.Waiting, "loops_test.go") {
			t.Errorf("%s waits at %s", b.Name, b.Waiting)
		}
	}
	if ops["Chan.Recv"] != 7 || ops["Await"] != 6 {
		t.Fatalf("blocked in %v", ops)
	}
}

func TestVirtualTimeOnSeveralLoopsAdvancesOnlyWhenAllAreIdle(t *testing.T) {
	start := time.Unix(0, 0)
	var mu sync.Mutex
	var woke []string
	var wokeOn sync.Map
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for i := 1; i <= 20; i++ {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				for j := 1; j <= 3; j++ {
					wt.Sleep(time.Duration(i) * time.Second)
					mu.Lock()
					woke = append(woke, fmt.Sprint(wt.Now().Sub(start)))
					mu.Unlock()
					wokeOn.Store(wt.Loop(), true)
					spinFor(100 * time.Microsecond) // busy: time must not move meanwhile
				}
			}))
		}
		weft.All(wt, ps...)
		if got := wt.Now().Sub(start); got != 60*time.Second {
			t.Errorf("ended at %v of virtual time, want 60s", got)
		}
	}, weft.WithLoops(4), weft.WithVirtualTime(start))
	for i, w := range woke {
		d, _ := time.ParseDuration(w)
		if d%time.Second != 0 {
			t.Fatalf("wake %d at %v: not on a whole second", i, w)
		}
	}
	if len(woke) != 60 {
		t.Fatalf("%d wakes", len(woke))
	}
	if loopsUsed(&wokeOn) < 2 {
		t.Fatal("every sleeper woke on one loop: the test proves nothing about several")
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

func TestIdleLoopsUseNoCPU(t *testing.T) {
	if raceEnabled {
		t.Skip("CPU accounting is meaningless under the race detector")
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	run(t, func(wt *weft.Task) { wt.Sleep(400 * time.Millisecond) }, weft.WithLoops(8))
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	if cpu > 80*time.Millisecond {
		t.Fatalf("8 loops idle for 400 ms cost %v of CPU", cpu)
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
