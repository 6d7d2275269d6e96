//go:build unix

package weft_test

// Several loops: hand-over between them, idle loops, and what the last
// idle loop decides (handover.go). The first tests are issue 17's
// multi-loop regressions: loop-owned state that a task holds (a Ticker's
// timer, an external promise's keep-alive, a Signal's subscription, a
// Conn's deadline) while it moves to another loop.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
)

// echoServe serves ln until it is closed, each connection in a task of its
// own that first runs prepare (on the accepting loop), then reads and
// echoes until EOF: the read moves the task to its connection's loop.
func echoServe(t *testing.T, wt *weft.Task, ln *weft.Listener, prepare func(wt *weft.Task) func(), servedOn *sync.Map) *weft.Promise[struct{}] {
	return spawn(wt, func(wt *weft.Task) {
		weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Handle(func(err error) { t.Errorf("connection: %v", err) })
			for {
				c, err := ln.Accept(wt)
				if errors.Is(err, net.ErrClosed) {
					return nil // the test is over: let the connections finish
				}
				if err != nil {
					return err
				}
				g.Go(func(wt *weft.Task) error {
					defer c.Close()
					done := prepare(wt)
					defer done()
					buf := make([]byte, 64)
					for {
						n, err := c.Read(wt, buf)
						if err == io.EOF {
							return nil
						}
						if err != nil {
							return err
						}
						servedOn.Store(wt.Loop(), true)
						if _, err := c.Write(wt, buf[:n]); err != nil {
							return err
						}
					}
				})
			}
		})
	})
}

// serveWithResource serves 40 connections on two loops, each task holding
// what prepare makes while its Read moves it to its connection's loop,
// and checks that connections were served on both loops.
func serveWithResource(t *testing.T, prepare func(wt *weft.Task) func()) {
	t.Helper()
	var servedOn sync.Map
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		server := echoServe(t, wt, ln, prepare, &servedOn)
		_, err := weft.Offload(wt, func() (struct{}, error) {
			return struct{}{}, dialEcho(ln.Addr().String(), 40, 5)
		})
		if err != nil {
			t.Error(err)
		}
		ln.Close()
		server.Await(wt)
	}, weft.WithLoops(2))
	if n := loopsUsed(&servedOn); n != 2 {
		t.Fatalf("connections were served on %d loop(s), not on both", n)
	}
}

// A task that holds a Ticker and reads a Conn homed on another loop moves
// there; the ticker, on the loop that made it, keeps ticking to it, and
// stops cleanly when the task finishes on the other loop.
func TestTaskHoldingATickerMovesWithItsConn(t *testing.T) {
	var ticks atomic.Int64
	serveWithResource(t, func(wt *weft.Task) func() {
		c := wt.Ticker(time.Millisecond)
		return func() {
			if _, ok := c.TryRecv(); ok {
				ticks.Add(1)
			}
		}
	})
	// Also a task that waits for ticks after it moved.
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		var servedOn sync.Map
		server := echoServe(t, wt, ln, func(wt *weft.Task) func() {
			c := wt.Ticker(time.Millisecond)
			return func() {
				for range 3 {
					if _, err := c.Recv(wt); err != nil {
						t.Errorf("tick after the move: %v", err)
						return
					}
				}
				c.Close()
			}
		}, &servedOn)
		_, err := weft.Offload(wt, func() (struct{}, error) {
			return struct{}{}, dialEcho(ln.Addr().String(), 20, 3)
		})
		if err != nil {
			t.Error(err)
		}
		ln.Close()
		server.Await(wt)
	}, weft.WithLoops(2))
}

// The same with an external promise: the task's keep-alive, counted on the
// loop that made it, is released there when the task finishes elsewhere,
// and Run returns.
func TestTaskHoldingAnExternalPromiseMovesWithItsConn(t *testing.T) {
	for i := range 5 {
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			serveWithResource(t, func(wt *weft.Task) func() {
				p, settle := weft.NewPromiseExternal[int](wt)
				if i%2 == 0 {
					return func() {} // released when the task finishes
				}
				return func() {
					settle(1, nil) // released by the settle, from the other loop
					if v, err := p.Await(wt); v != 1 || err != nil {
						t.Errorf("Await: %d, %v", v, err)
					}
				}
			})
		}()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
			t.Fatal("Run did not return: a keep-alive count was lost")
		}
	}
}

// The same with a Signal subscription.
func TestTaskHoldingASignalSubscriptionMovesWithItsConn(t *testing.T) {
	serveWithResource(t, func(wt *weft.Task) func() {
		c := weft.Signal(wt, syscall.SIGUSR2)
		return func() {
			if _, ok := c.TryRecv(); ok {
				t.Error("a signal nobody sent")
			}
		}
	})
}

// A group task's failure is recorded before the group's count says the
// task is done: the group's owner, on another loop, never joins in between
// and returns nil (and Run does not report the failure either, since the
// group took it).
func TestGroupNeverLosesAFailureAcrossLoops(t *testing.T) {
	groups := 4000
	if testing.Short() {
		groups = 1000
	}
	errBoom := errors.New("boom")
	for _, handled := range []bool{false, true} {
		var lost atomic.Int64
		var apart atomic.Int64 // groups whose task ended on another loop than the body
		run(t, func(wt *weft.Task) {
			for i := range groups {
				var taskLoop atomic.Int64
				var seen atomic.Bool
				err := weft.Group(wt, func(g *weft.TaskGroup) error {
					if handled {
						g.Handle(func(err error) { seen.Store(errors.Is(err, errBoom)) })
					}
					g.Go(func(wt *weft.Task) error {
						// CPU work with Checkpoints: the hungry loop takes it.
						for end := time.Now().Add(20 * time.Microsecond); time.Now().Before(end); {
							wt.Checkpoint()
						}
						taskLoop.Store(int64(wt.Loop()))
						return errBoom
					})
					// Join at about the time the task ends on the other loop.
					spinFor(time.Duration(15+i%11) * time.Microsecond)
					return nil
				})
				if taskLoop.Load() != int64(wt.Loop()) {
					apart.Add(1)
				}
				if handled && (err != nil || !seen.Load()) {
					lost.Add(1) // Group returned before its handler saw the failure
				}
				if !handled && !errors.Is(err, errBoom) {
					lost.Add(1)
				}
			}
		}, weft.WithLoops(2))
		if n := lost.Load(); n > 0 {
			t.Fatalf("handler %v: %d of %d groups returned without their task's failure", handled, n, groups)
		}
		t.Logf("handler %v: %d of %d groups apart", handled, apart.Load(), groups)
		if apart.Load() == 0 {
			t.Fatal("no group task ended on another loop than its group's body: the test proves nothing")
		}
	}
}

// A task under a deadline moves like any other (item 2): a Timeout's
// function that yields on a busy loop, beside an idle one, is taken by the
// idle loop, and the deadline still reaches it there, on time.
func TestATaskUnderADeadlineIsHandedOver(t *testing.T) {
	var movedIn atomic.Bool
	var deadlineErr error
	var late time.Duration
	run(t, func(wt *weft.Task) {
		stop := make(chan struct{})
		// A CPU-bound Local task keeps main's loop busy and cannot move.
		busyLoop := wt.Loop()
		busy := weft.Local(wt, func(wt *weft.Task) (struct{}, error) {
			for {
				select {
				case <-stop:
					return struct{}{}, nil
				default:
				}
				spinFor(10 * time.Microsecond)
				wt.Checkpoint()
			}
		})
		timed := spawn(wt, func(wt *weft.Task) {
			start := time.Now()
			_, deadlineErr = weft.Timeout(wt, 300*time.Millisecond, func(wt *weft.Task) (int, error) {
				for {
					if err := wt.Yield(); err != nil {
						return 0, err
					}
					if wt.Loop() != busyLoop {
						movedIn.Store(true)
					}
					spinFor(5 * time.Microsecond)
				}
			})
			late = time.Since(start) - 300*time.Millisecond
		})
		timed.Await(wt)
		close(stop)
		busy.Await(wt)
	}, weft.WithLoops(2))
	if !movedIn.Load() {
		t.Fatal("the task under a deadline never moved to the idle loop")
	}
	if deadlineErr != weft.ErrTimeout {
		t.Fatalf("Timeout = %v, want ErrTimeout", deadlineErr)
	}
	// Generous: a loaded machine can hold either loop back for a good part
	// of the deadline. What counts is that the deadline reaches the moved
	// task, and not seconds after it was due.
	if late > 2*time.Second {
		t.Fatalf("the deadline reached the moved task %v late", late)
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
		if !strings.Contains(b.Waiting, "handover_test.go") {
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
