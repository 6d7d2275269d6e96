//go:build unix

package weft_test

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Several tasks wait in Read (and in Write) on one Conn, and a deadline
// 5 ms ahead ends every one of them, round after round, on every backend.
// On the portable backend each waiter interrupted the helper goroutines
// with a past deadline on the shared net.Conn and then cleared it, so one
// task's reset undid another's interrupt and a Read waited for ever (the
// first round failed).
func TestADeadlineEndsEveryWaiterOfOneConn(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			s, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// A guard: a waiter left behind is ended by a Close, so that the
			// test fails instead of hanging.
			var stuck atomic.Bool
			guard := time.AfterFunc(10*time.Second, func() { stuck.Store(true); c.Close() })
			defer guard.Stop()
			for round := range 20 {
				const readers = 3
				waits := make([]*weft.Promise[time.Duration], readers)
				for i := range waits {
					waits[i] = weft.Go(wt, func(wt *weft.Task) (time.Duration, error) {
						start := time.Now()
						_, err := c.Read(wt, make([]byte, 16))
						if !errors.Is(err, os.ErrDeadlineExceeded) {
							return 0, err
						}
						return time.Since(start), nil
					})
				}
				if err := wt.Yield(); err != nil { // the readers wait
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
				for i, p := range waits {
					d, err := p.Await(wt)
					if err != nil {
						t.Fatalf("round %d, reader %d: %v (want a deadline error)", round, i, err)
					}
					if stuck.Load() {
						t.Fatalf("round %d, reader %d: still waiting 10 s after a deadline 5 ms ahead", round, i)
					}
					_ = d
				}
				c.SetReadDeadline(time.Time{})
			}
		}, opts...)
	})
}

// A Read that another task's cancellation interrupts in passing (on the
// portable backend a cancellation interrupts the shared net.Conn) goes on
// waiting, and gets the data that comes later; nothing is lost.
func TestCancellingOneReaderLeavesTheOthersWaiting(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			s, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			guard := time.AfterFunc(20*time.Second, func() { c.Close() })
			defer guard.Stop()
			for round := range 10 {
				stays := weft.Go(wt, func(wt *weft.Task) (int, error) {
					b := make([]byte, 16)
					n, err := c.Read(wt, b)
					if err == nil && string(b[:n]) != "x" {
						return n, errors.New("read " + string(b[:n]) + ", want x")
					}
					return n, err
				})
				// A second reader, cancelled by a Timeout of its own while
				// both wait.
				_, err := weft.Timeout(wt, 2*time.Millisecond, func(wt *weft.Task) (int, error) {
					return c.Read(wt, make([]byte, 16))
				})
				if !errors.Is(err, weft.ErrTimeout) {
					t.Fatalf("round %d: the Read under Timeout: %v, want ErrTimeout", round, err)
				}
				if err := wt.Sleep(2 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Write(wt, []byte("x")); err != nil {
					t.Fatal(err)
				}
				if n, err := stays.Await(wt); err != nil || n != 1 {
					t.Fatalf("round %d: the other Read: %d, %v; want the byte sent after the cancellation", round, n, err)
				}
			}
		}, opts...)
	})
}
