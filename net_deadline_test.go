//go:build unix

package weft_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// checkTimeout fails unless err is the error a net.Conn gives past a
// deadline.
func checkTimeout(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want one matching os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v (%T): not a net.Error with Timeout() true", err, err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v (%T): not a *net.OpError", err, err)
	}
}

func TestPastReadDeadlineFailsAtOnceEvenWithDataWaiting(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			if _, err := b.Write(wt, []byte("data")); err != nil {
				return struct{}{}, err
			}
			wt.Sleep(20 * time.Millisecond) // let it arrive
			a.SetReadDeadline(time.Now().Add(-time.Second))
			buf := make([]byte, 8)
			_, err := a.Read(wt, buf)
			checkTimeout(t, err)
			// Zero clears it: the data was not lost.
			a.SetReadDeadline(time.Time{})
			n, err := a.Read(wt, buf)
			if err != nil || string(buf[:n]) != "data" {
				t.Fatalf("after clearing: %q, %v", buf[:n], err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadDeadlineEndsAWaitAndTheConnStaysUsable(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			start := time.Now()
			a.SetReadDeadline(start.Add(50 * time.Millisecond))
			buf := make([]byte, 8)
			_, err := a.Read(wt, buf)
			checkTimeout(t, err)
			if el := time.Since(start); el < 45*time.Millisecond || el > 5*time.Second {
				t.Fatalf("read ended after %v, want about 50ms", el)
			}
			a.SetReadDeadline(time.Time{})
			if _, err := b.Write(wt, []byte("late")); err != nil {
				return struct{}{}, err
			}
			n, err := a.Read(wt, buf)
			if err != nil || string(buf[:n]) != "late" {
				t.Fatalf("after the timeout: %q, %v", buf[:n], err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteDeadlineEndsAWriteToAStalledPeer(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			big := make([]byte, 64<<20) // far more than the socket buffers hold
			n, err := a.Write(wt, big)
			checkTimeout(t, err)
			if n >= len(big) {
				t.Fatalf("wrote %d of %d bytes to a peer that reads nothing", n, len(big))
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestExtendingADeadlineWhileAnotherTaskWaitsReArmsIt(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(wt.Now().Add(time.Second))
			reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
				buf := make([]byte, 8)
				n, err := a.Read(wt, buf)
				return string(buf[:n]), err
			})
			wt.Sleep(500 * time.Millisecond)
			a.SetReadDeadline(wt.Now().Add(10 * time.Second)) // while the reader waits
			wt.Sleep(2 * time.Second)                         // past the first deadline
			if _, err := b.Write(wt, []byte("hi")); err != nil {
				return struct{}{}, err
			}
			got, err := reader.Await(wt)
			if err != nil || got != "hi" {
				t.Fatalf("reader: %q, %v; want the data, the deadline having moved", got, err)
			}
			if el := wt.Now().Sub(start); el != 2500*time.Millisecond {
				t.Fatalf("virtual time %v, want 2.5s", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestShorteningADeadlineFromAnotherGoroutineEndsTheWait(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(time.Now().Add(time.Hour))
			start := time.Now()
			reader := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return a.Read(wt, make([]byte, 8))
			})
			weft.Offload(wt, func() (struct{}, error) { // another goroutine
				time.Sleep(30 * time.Millisecond)
				return struct{}{}, a.SetReadDeadline(time.Now())
			})
			_, err := reader.Await(wt)
			checkTimeout(t, err)
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("read ended after %v", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestClearingADeadlineWhileAnotherTaskWaitsLetsItWait(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetDeadline(wt.Now().Add(time.Second))
			reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
				buf := make([]byte, 8)
				n, err := a.Read(wt, buf)
				return string(buf[:n]), err
			})
			wt.Sleep(100 * time.Millisecond)
			a.SetDeadline(time.Time{})
			// Another deadline elsewhere keeps virtual time moving.
			b.SetReadDeadline(wt.Now().Add(time.Hour))
			other := weft.Go(wt, func(wt *weft.Task) (int, error) { return b.Read(wt, make([]byte, 1)) })
			wt.Sleep(5 * time.Second)
			if _, err := b.Write(wt, []byte("ok")); err != nil {
				return struct{}{}, err
			}
			got, err := reader.Await(wt)
			if err != nil || got != "ok" {
				t.Fatalf("reader: %q, %v; want the data, the deadline having been cleared", got, err)
			}
			b.SetReadDeadline(wt.Now()) // end the other reader
			_, err = other.Await(wt)
			checkTimeout(t, err)
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestVirtualTimeDrivesADeadline(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		real0 := time.Now()
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(wt.Now().Add(time.Hour))
			_, err := a.Read(wt, make([]byte, 8))
			checkTimeout(t, err)
			if el := wt.Now().Sub(start); el != time.Hour {
				t.Fatalf("virtual time %v, want 1h", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(real0); el > 5*time.Second {
			t.Fatalf("an hour of virtual time took %v of real time", el)
		}
	})
}

func TestSetDeadlineAfterCloseIsErrClosed(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		a, b := connPair(t, wt)
		b.Close()
		a.Close()
		if err := a.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("SetDeadline after Close: %v", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The multi-loop stress test of issue 17: many connections with read
// deadlines, served under Group and Protect (and Timeout), on 1, 2, 4 and
// 8 loops, many times over. Run under -race it is what finds loop-owned
// state touched from another loop's goroutine.
func TestStressConnectionsWithDeadlinesOnSeveralLoops(t *testing.T) {
	conns, rounds, runs := 400, 5, 20
	if raceEnabled {
		// The race detector makes each run about 10x slower; six runs on
		// each loop count still cross every hand-over many times (the
		// suite must fit its 10 minutes beside a second copy).
		runs = 6
	}
	if testing.Short() {
		conns, runs = 100, 3
	}
	for _, loops := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("%dloops", loops), func(t *testing.T) {
			noGC(t)
			before := openFDs(t)
			for range runs {
				stressServe(t, loops, conns, rounds)
				if t.Failed() {
					return
				}
			}
			if after := openFDs(t); after > before+2 {
				t.Fatalf("%d descriptors left open", after-before)
			}
		})
	}
}

func stressServe(t *testing.T, loops, conns, rounds int) {
	var served atomic.Int64
	var onLoop sync.Map
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		server := spawn(wt, func(wt *weft.Task) {
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				for i := 0; ; i++ {
					c, err := ln.Accept(wt)
					if errors.Is(err, net.ErrClosed) {
						return nil
					}
					if err != nil {
						return err
					}
					g.Go(func(wt *weft.Task) error {
						defer c.Close()
						return wt.Protect(func(wt *weft.Task) error {
							buf := make([]byte, 16)
							for r := 0; ; r++ {
								if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
									return err
								}
								var n int
								var err error
								if (i+r)%2 == 0 {
									n, err = weft.Timeout(wt, 10*time.Second, func(wt *weft.Task) (int, error) {
										return c.Read(wt, buf)
									})
								} else {
									n, err = c.Read(wt, buf)
								}
								if err == io.EOF {
									return nil
								}
								if err != nil {
									return fmt.Errorf("read, round %d: %w", r, err)
								}
								onLoop.Store(wt.Loop(), true)
								if _, err := c.Write(wt, buf[:n]); err != nil {
									return err
								}
								served.Add(1)
							}
						})
					})
				}
			})
			if err != nil {
				t.Errorf("server: %v", err)
			}
		})
		_, err := weft.Offload(wt, func() (struct{}, error) {
			return struct{}{}, dialEcho(ln.Addr().String(), conns, rounds)
		})
		if err != nil {
			t.Errorf("clients: %v", err)
		}
		ln.Close()
		server.Await(wt)
	}, weft.WithLoops(loops))
	if got := served.Load(); got != int64(conns*rounds) {
		t.Errorf("%d loops: %d round trips served, want %d", loops, got, conns*rounds)
	}
	if n := loopsUsed(&onLoop); loops > 1 && n < 2 {
		t.Errorf("%d loops: connections were served on %d loop(s)", loops, n)
	}
}

// A read deadline's timer is not taken out of the heap when a read under
// it ends without waiting for it, if it is due soon (within 10 ms, on a
// real clock): it stays, fires later with no reader, and does nothing. It
// must not end a later read under a later deadline, nor let a later
// earlier deadline pass unseen. The timer of a far deadline is taken out.
func TestAStaleDeadlineTimerEndsNoLaterRead(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			buf := make([]byte, 8)
			// readOne reads a byte sent before, under a deadline d from now.
			readOne := func(d time.Duration) time.Time {
				t.Helper()
				if _, err := b.Write(wt, []byte("x")); err != nil {
					t.Fatal(err)
				}
				dl := time.Now().Add(d)
				a.SetReadDeadline(dl)
				if n, err := a.Read(wt, buf); n != 1 || err != nil {
					t.Fatalf("read under a deadline, with data sent: %d, %v", n, err)
				}
				return dl
			}
			before := weft.PendingTimers(wt)
			dl := readOne(5 * time.Millisecond)
			if n := weft.PendingTimers(wt); n != before+1 && time.Now().Before(dl) {
				t.Fatalf("%d timers pending after a read under a 5ms deadline, %d before: the near timer left the heap", n, before)
			}
			// A later deadline: the stale timer fires first, and the read
			// goes on until its own deadline.
			start := time.Now()
			a.SetReadDeadline(start.Add(150 * time.Millisecond))
			_, err := a.Read(wt, buf)
			checkTimeout(t, err)
			if el := time.Since(start); el < 145*time.Millisecond {
				t.Fatalf("a read under a 150ms deadline ended after %v: the stale 5ms timer ended it", el)
			}
			// An earlier deadline than a stale timer's moves the timer.
			readOne(9 * time.Millisecond)
			start = time.Now()
			a.SetReadDeadline(start.Add(time.Millisecond))
			_, err = a.Read(wt, buf)
			checkTimeout(t, err)
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("a 1ms deadline ended the read after %v", el)
			}
			// A far deadline's timer leaves the heap with the read.
			wt.Sleep(30 * time.Millisecond) // every near timer has fired
			readOne(time.Hour)
			if n := weft.PendingTimers(wt); n != before {
				t.Fatalf("%d timers pending after a read under a far deadline, %d before", n, before)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}
