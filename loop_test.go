package weft_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// What the doc comments say "any goroutine" may call, called from a plain
// goroutine while tasks wait, on one loop and on several: each takes
// effect, and -race sees nothing (run the suite with -race).
func TestWhatDocsSayAnyGoroutineMayCallWorksFromAGoroutine(t *testing.T) {
	for _, loops := range []int{1, 2} {
		var seen [2]atomic.Bool
		run(t, func(wt *weft.Task) {
			seen[wt.Loop()].Store(true)
			// Promise.Cancel.
			started := make(chan struct{})
			p := weft.Go(wt, func(wt *weft.Task) (int, error) {
				close(started)
				return 0, wt.Sleep(time.Hour)
			})
			done := fromGoroutine(wt, started, func() { p.Cancel() })
			if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
				t.Errorf("%d loops: a task cancelled by Promise.Cancel from a goroutine: %v", loops, err)
			}
			done.Await(wt)

			// TaskGroup.Cancel, and TaskGroup.Start's ready.
			started = make(chan struct{})
			var gdone *weft.Promise[struct{}]
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				var ready func()
				readyDone := make(chan struct{})
				go func() { <-readyDone; ready() }()
				if err := g.Start(func(wt *weft.Task, r func()) error {
					ready = r
					close(readyDone)
					return wt.Sleep(time.Hour)
				}); err != nil {
					return err
				}
				g.Go(func(wt *weft.Task) error {
					close(started)
					return wt.Sleep(time.Hour)
				})
				gdone = fromGoroutine(wt, started, g.Cancel)
				return nil
			})
			if err != nil {
				t.Errorf("%d loops: a group cancelled from a goroutine: %v", loops, err)
			}
			gdone.Await(wt)

			// Listener.Close while a task waits in Accept; Conn.SetReadDeadline
			// and Conn.Close while a task waits in Read.
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			accepted := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) { return ln.Accept(wt) })
			c, err := weft.Dial(wt, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			sc, err := accepted.Await(wt)
			if err != nil {
				t.Fatal(err)
			}
			started = make(chan struct{})
			reader := weft.Go(wt, func(wt *weft.Task) (int, error) {
				close(started)
				defer func() { seen[wt.Loop()].Store(true) }()
				return sc.Read(wt, make([]byte, 1))
			})
			done = fromGoroutine(wt, started, func() { sc.SetReadDeadline(time.Now().Add(20 * time.Millisecond)) })
			if _, err := reader.Await(wt); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%d loops: a Read past a deadline set from a goroutine: %v", loops, err)
			}
			done.Await(wt)
			sc.SetReadDeadline(time.Time{})
			started = make(chan struct{})
			reader = weft.Go(wt, func(wt *weft.Task) (int, error) {
				close(started)
				return sc.Read(wt, make([]byte, 1))
			})
			done = fromGoroutine(wt, started, func() { sc.Close() })
			if _, err := reader.Await(wt); !errors.Is(err, net.ErrClosed) {
				t.Errorf("%d loops: a Read on a Conn closed from a goroutine: %v", loops, err)
			}
			done.Await(wt)
			c.Close()

			started = make(chan struct{})
			acc := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) {
				close(started)
				return ln.Accept(wt)
			})
			done = fromGoroutine(wt, started, func() { ln.Close() })
			if _, err := acc.Await(wt); !errors.Is(err, net.ErrClosed) {
				t.Errorf("%d loops: an Accept on a Listener closed from a goroutine: %v", loops, err)
			}
			done.Await(wt)
			seen[wt.Loop()].Store(true)
		}, weft.WithLoops(loops))
		if loops > 1 && !(seen[0].Load() && seen[1].Load()) {
			t.Errorf("%d loops: the tasks ran on loop 0: %v, loop 1: %v", loops, seen[0].Load(), seen[1].Load())
		}
	}
}

func TestRunQueueIsFIFOAndYieldGoesToTheBack(t *testing.T) {
	var log []string
	worker := func(name string) func(*weft.Task) {
		return func(wt *weft.Task) {
			for i := 1; i <= 3; i++ {
				log = append(log, name+string(rune('0'+i)))
				wt.Yield()
			}
		}
	}
	run(t, func(wt *weft.Task) {
		a := spawn(wt, worker("a"))
		b := spawn(wt, worker("b"))
		a.Await(wt)
		b.Await(wt)
	}, oneLoop)
	// The OCaml runtime's order: a is queued again before b starts.
	if got := strings.Join(log, " "); got != "a1 a2 b1 a3 b2 b3" {
		t.Fatalf("order = %s", got)
	}
}

func TestManyTasksRoundRobinInSpawnOrder(t *testing.T) {
	const n, rounds = 50, 4
	var log []int
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[struct{}], n)
		for i := range ps {
			ps[i] = spawn(wt, func(wt *weft.Task) {
				for r := 0; r < rounds; r++ {
					wt.Yield()
					log = append(log, i)
				}
			})
		}
		weft.All(wt, ps...)
	}, oneLoop)
	if len(log) != n*rounds {
		t.Fatalf("%d steps, want %d", len(log), n*rounds)
	}
	// FIFO: tasks take their last step in the order they were spawned.
	last := make([]int, n)
	for pos, i := range log {
		last[i] = pos
	}
	for i := 1; i < n; i++ {
		if last[i] < last[i-1] {
			t.Fatalf("task %d finished before task %d: %v", i, i-1, log)
		}
	}
}
