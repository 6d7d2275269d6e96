//go:build unix

package weft_test

// Issue 17's multi-loop regressions: loop-owned state that a task holds
// (a Ticker's timer, an external promise's keep-alive, a Signal's
// subscription, a Conn's deadline) while it moves to another loop.

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
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

// dialEcho runs n clients, each of which sends and reads back rounds
// messages, from plain goroutines.
func dialEcho(addr string, n, rounds int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := []byte("ping")
			got := make([]byte, len(msg))
			for range rounds {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
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
	if late > 200*time.Millisecond {
		t.Fatalf("the deadline reached the moved task %v late", late)
	}
}
