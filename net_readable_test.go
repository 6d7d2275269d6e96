//go:build unix

package weft_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// waitsWithoutTask reports whether a Run with opts waits for readability
// with no task (epoll, io_uring); the portable backend starts f at once.
func waitsWithoutTask(opts ...weft.Option) bool {
	n := weft.BackendName(opts...)
	return n == "epoll" || n == "io_uring"
}

// readFirst is the body of a GoWhenReadable task in these tests: it notes
// that it started, then reads once and reports what it got.
func readFirst(started *atomic.Bool, got chan<- string, c *weft.Conn) func(t *weft.Task) error {
	return func(t *weft.Task) error {
		started.Store(true)
		buf := make([]byte, 64)
		n, err := c.Read(t, buf)
		if err != nil {
			got <- "error: " + err.Error()
			c.Close()
			return nil
		}
		got <- string(buf[:n])
		c.Close()
		return nil
	}
}

func TestGoWhenReadableStartsWhenBytesArrive(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		fds := openFDs(t)
		var started atomic.Bool
		got := make(chan string, 1)
		run(t, func(wt *weft.Task) {
			a, b := connPair(t, wt)
			defer b.Close()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				g.GoWhenReadable(a, readFirst(&started, got, a))
				if err := wt.Sleep(30 * time.Millisecond); err != nil {
					return err
				}
				if waitsWithoutTask(opts...) && started.Load() {
					t.Error("the task started before any byte arrived")
				}
				_, err := b.Write(wt, []byte("hello"))
				return err
			})
			if err != nil {
				t.Error(err)
			}
			if !started.Load() {
				t.Error("Group returned before the registered wait's task ran")
			}
		}, opts...)
		if s := <-got; s != "hello" {
			t.Errorf("first Read got %q, want hello", s)
		}
		if n := openFDs(t); n > fds {
			t.Errorf("%d fds open after the Run, %d before", n, fds)
		}
	})
}

// TestGoWhenReadableEndings: each way a wait ends starts the task, whose
// first Read reports it.
func TestGoWhenReadableEndings(t *testing.T) {
	cases := []struct {
		name string
		end  func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn)
		want func(s string) bool
	}{
		{"EOF", func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn) { b.Close() },
			func(s string) bool { return s == "error: EOF" }},
		{"close", func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn) { a.Close() },
			func(s string) bool { return strings.Contains(s, "use of closed network connection") }},
		{"deadline", func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn) {
			a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		}, func(s string) bool { return strings.Contains(s, os.ErrDeadlineExceeded.Error()) }},
		{"deadline from another goroutine", func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn) {
			done := make(chan struct{})
			go func() { a.SetReadDeadline(time.Now().Add(-time.Second)); close(done) }()
			<-done
		}, func(s string) bool { return strings.Contains(s, os.ErrDeadlineExceeded.Error()) }},
		{"cancel", func(wt *weft.Task, g *weft.TaskGroup, a, b *weft.Conn) { g.Cancel() },
			func(s string) bool { return strings.Contains(s, context.Canceled.Error()) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, opts ...weft.Option) {
				fds := openFDs(t)
				var started atomic.Bool
				got := make(chan string, 1)
				run(t, func(wt *weft.Task) {
					a, b := connPair(t, wt)
					defer b.Close()
					err := weft.Group(wt, func(g *weft.TaskGroup) error {
						g.GoWhenReadable(a, readFirst(&started, got, a))
						wt.Sleep(10 * time.Millisecond)
						if waitsWithoutTask(opts...) && started.Load() {
							t.Error("the task started before its wait ended")
						}
						tc.end(wt, g, a, b)
						return nil
					})
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Error(err)
					}
				}, opts...)
				if s := <-got; !tc.want(s) {
					t.Errorf("first Read: %q", s)
				}
				if n := openFDs(t); n > fds {
					t.Errorf("%d fds open after the Run, %d before", n, fds)
				}
			})
		})
	}
}

// TestGoWhenReadableDeadlineAlreadyPassed: a deadline that passed before
// the registration starts the task at once.
func TestGoWhenReadableDeadlineAlreadyPassed(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		var started atomic.Bool
		got := make(chan string, 1)
		run(t, func(wt *weft.Task) {
			a, b := connPair(t, wt)
			defer b.Close()
			a.SetReadDeadline(time.Now().Add(-time.Second))
			weft.Group(wt, func(g *weft.TaskGroup) error {
				g.GoWhenReadable(a, readFirst(&started, got, a))
				return nil
			})
		}, opts...)
		if s := <-got; !strings.Contains(s, os.ErrDeadlineExceeded.Error()) {
			t.Errorf("first Read: %q", s)
		}
	})
}

// TestGoWhenReadableHoldsNoGoroutine: hundreds of connections waiting
// through GoWhenReadable start no goroutine (no coroutine) on the fd
// backends, are listed by Dump as waits on their fds, and all run once
// their bytes come.
func TestGoWhenReadableHoldsNoGoroutine(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		if !waitsWithoutTask(opts...) {
			t.Skip("the portable backend waits in a task")
		}
		const n = 200
		var ran atomic.Int32
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			var clients []net.Conn
			defer func() {
				for _, c := range clients {
					c.Close()
				}
			}()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				before := runtime.NumGoroutine()
				for range n {
					nc, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return err
					}
					clients = append(clients, nc)
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					g.GoWhenReadable(c, func(t *weft.Task) error {
						defer c.Close()
						buf := make([]byte, 8)
						if _, err := c.Read(t, buf); err != nil {
							return err
						}
						ran.Add(1)
						return nil
					})
				}
				if grew := runtime.NumGoroutine() - before; grew > n/10 {
					t.Errorf("%d waits made %d goroutines", n, grew)
				}
				// With several loops a wait homed on another loop is
				// registered there by a post: give the posts a moment.
				var dump bytes.Buffer
				for deadline := time.Now().Add(5 * time.Second); ; {
					dump.Reset()
					weft.Dump(&dump)
					if strings.Count(dump.String(), "GoWhenReadable)") == n || time.Now().After(deadline) {
						break
					}
					wt.Sleep(5 * time.Millisecond)
				}
				if k := strings.Count(dump.String(), "GoWhenReadable)"); k != n {
					t.Errorf("Dump lists %d waits of GoWhenReadable, want %d:\n%.2000s", k, n, dump.String())
				}
				if ran.Load() != 0 {
					t.Errorf("%d tasks ran before any byte came", ran.Load())
				}
				// A wait that has not started pays for its wait's record
				// only, not a started task's extra record.
				if k, x := weft.GoWhenReadableRecords(wt); k != n || x != 0 {
					t.Errorf("%d waits of GoWhenReadable, %d of them with a taskExtra; want %d and 0", k, x, n)
				}
				for _, nc := range clients {
					nc.Write([]byte("x"))
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}, opts...)
		if ran.Load() != n {
			t.Errorf("%d of %d tasks ran", ran.Load(), n)
		}
	})
}

// TestGoWhenReadableOnSeveralLoops: connections accepted on one loop are
// homed round-robin; their waits are registered on their homes, and the
// tasks run there, on more than one loop.
func TestGoWhenReadableOnSeveralLoops(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		const n = 40
		var ranOn sync.Map
		var ran atomic.Int32
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			errs := make(chan error, 1)
			go func() { errs <- dialEcho(ln.Addr().String(), n, 3) }()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				for range n {
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					var serve func(t *weft.Task) error
					serve = func(t *weft.Task) error {
						ranOn.Store(t.Loop(), true)
						ran.Add(1)
						buf := make([]byte, 256)
						k, err := c.Read(t, buf)
						if err != nil {
							c.Close()
							if err == io.EOF {
								return nil
							}
							return err
						}
						if _, err := c.Write(t, buf[:k]); err != nil {
							c.Close()
							return err
						}
						g.GoWhenReadable(c, serve) // the next burst
						return nil
					}
					g.GoWhenReadable(c, serve)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}, append(opts, weft.WithLoops(4))...)
		if k := loopsUsed(&ranOn); k < 2 {
			t.Errorf("the waits' tasks ran on %d loop(s) of 4", k)
		}
		if ran.Load() < n*3 {
			t.Errorf("%d tasks ran; want at least one per message (%d)", ran.Load(), n*3)
		}
	})
}

// TestGoWhenReadableRunCancelled: the Run's context ends while waits are
// registered: every task runs (seeing the cancellation) and releases its
// Conn, and Run returns.
func TestGoWhenReadableRunCancelled(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		fds := openFDs(t)
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled atomic.Int32
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			var dialed []*weft.Conn
			defer func() {
				for _, a := range dialed {
					a.Close()
				}
			}()
			return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
				for range 5 {
					a := mustDial(t, wt, "tcp", ln.Addr().String())
					b, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					dialed = append(dialed, a) // open until the group ends: b's task must see the cancellation, not an EOF
					for _, c := range []*weft.Conn{b} {
						g.GoWhenReadable(c, func(t *weft.Task) error {
							defer c.Close()
							_, err := c.Read(t, make([]byte, 8))
							if errors.Is(err, context.Canceled) {
								cancelled.Add(1)
							}
							return err
						})
					}
				}
				go func() { time.Sleep(20 * time.Millisecond); cancel() }()
				return nil
			})
		}, append(opts, weft.WithContext(ctx))...)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want the cancellation", err)
		}
		if cancelled.Load() != 5 {
			t.Errorf("%d of 5 tasks saw the cancellation in their first Read", cancelled.Load())
		}
		if n := openFDs(t); n > fds {
			t.Errorf("%d fds open after the Run, %d before", n, fds)
		}
	})
}

// TestGoWhenReadableRunTornDown: a Goexit tears the Run down while a wait
// is registered: its task never starts, and its Conn is closed for it.
func TestGoWhenReadableRunTornDown(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var ran atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			weft.Run(func(wt *weft.Task) (struct{}, error) {
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				spawn(wt, func(wt *weft.Task) {
					wt.Sleep(20 * time.Millisecond)
					runtime.Goexit()
				})
				weft.Group(wt, func(g *weft.TaskGroup) error {
					g.GoWhenReadable(c, func(t *weft.Task) error { ran.Store(true); return c.Close() })
					return nil
				})
				return struct{}{}, nil
			}, opts...)
		}()
		peer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		<-done
		peer.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("the peer read %v; want EOF (the Conn closed for the task that never started)", err)
		}
		if waitsWithoutTask(opts...) && ran.Load() {
			t.Error("the task ran after the Run was torn down")
		}
	})
}

func TestGoWhenReadableMisuse(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := connPair(t, wt)
		defer a.Close()
		defer b.Close()
		weft.Group(wt, func(g *weft.TaskGroup) error {
			mustPanicWeft(t, "nil Conn", func() { g.GoWhenReadable(nil, func(*weft.Task) error { return nil }) })
			mustPanicWeft(t, "nil function", func() { g.GoWhenReadable(a, nil) })
			return nil
		})
		var g2 *weft.TaskGroup
		weft.Group(wt, func(g *weft.TaskGroup) error { g2 = g; return nil })
		mustPanicWeft(t, "after Group returned", func() { g2.GoWhenReadable(a, func(*weft.Task) error { return nil }) })
	})
	// A Conn of another Run.
	var a, b *weft.Conn
	run(t, func(wt *weft.Task) { a, b = connPair(t, wt) })
	defer a.Close()
	defer b.Close()
	run(t, func(wt *weft.Task) {
		weft.Group(wt, func(g *weft.TaskGroup) error {
			mustPanicWeft(t, "a Conn of another Run", func() { g.GoWhenReadable(a, func(*weft.Task) error { return nil }) })
			return nil
		})
	})
}
