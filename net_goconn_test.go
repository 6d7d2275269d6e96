//go:build unix

package weft_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/net/nettest"
)

// pipeEnds are the two ends of a connection for nettest.TestConn: each a
// net.Conn (a weft Conn's GoConn, or the net package's), with what stops
// the Run that serves the weft ends.
type pipeEnds struct {
	c1, c2 net.Conn
	stop   func()
}

// peers names who is on each end of a pipe: "weft-weft" (both weft
// Conns, one Run), "weft-net" (weft dials a net listener), "net-weft"
// (net dials a weft listener). The first end, on which nettest sets its
// deadlines, is weft's in each.
var peers = []string{"weft-weft", "weft-net", "net-weft"}

// listenAddress returns an address to listen on for network.
func listenAddress(t *testing.T, network string) string {
	if network == "unix" {
		dir, err := os.MkdirTemp("", "weft")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return filepath.Join(dir, "s")
	}
	return "127.0.0.1:0"
}

// wrapFunc makes a pipe's end of a weft Conn, on its Run (server: the
// accepting side).
type wrapFunc func(wt *weft.Task, c *weft.Conn, server bool) net.Conn

// netWrapFunc makes a pipe's end of a net package connection (nil: the
// connection itself).
type netWrapFunc func(c net.Conn, server bool) net.Conn

// weftPipe starts a Run (with opts) that makes a connection on network
// between peers, and returns its ends: each weft end is wrap(Conn), made
// on the Run, each net end wrapNet(conn). stop closes the ends and ends
// the Run.
func weftPipe(t *testing.T, network, peer string, wrap wrapFunc, wrapNet netWrapFunc, opts ...weft.Option) (pipeEnds, error) {
	if wrapNet == nil {
		wrapNet = func(c net.Conn, server bool) net.Conn { return c }
	}
	type made struct {
		ends pipeEnds
		err  error
	}
	out := make(chan made, 1)
	runDone := make(chan error, 1)
	addr := listenAddress(t, network)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			done, settle := weft.NewPromiseExternal[struct{}](wt)
			var c1, c2 net.Conn
			var closers []io.Closer
			fail := func(err error) (struct{}, error) {
				for _, c := range closers {
					c.Close()
				}
				out <- made{err: err}
				return struct{}{}, nil
			}
			switch peer {
			case "weft-weft":
				ln, err := weft.Listen(wt, network, addr)
				if err != nil {
					return fail(err)
				}
				closers = append(closers, ln)
				c, err := weft.Dial(wt, network, ln.Addr().String())
				if err != nil {
					return fail(err)
				}
				closers = append(closers, c)
				s, err := ln.Accept(wt)
				if err != nil {
					return fail(err)
				}
				closers = append(closers, s)
				c1, c2 = wrap(wt, c, false), wrap(wt, s, true)
			case "weft-net":
				ln, err := net.Listen(network, addr)
				if err != nil {
					return fail(err)
				}
				closers = append(closers, ln)
				accepted := make(chan net.Conn, 1)
				go func() {
					s, _ := ln.Accept()
					accepted <- s
				}()
				c, err := weft.Dial(wt, network, ln.Addr().String())
				if err != nil {
					return fail(err)
				}
				closers = append(closers, c)
				s, err := weft.Blocking(wt, func(context.Context) (net.Conn, error) { return <-accepted, nil })
				if err != nil || s == nil {
					return fail(fmt.Errorf("net's Accept: %v", err))
				}
				closers = append(closers, s)
				c1, c2 = wrap(wt, c, false), wrapNet(s, true)
			case "net-weft":
				ln, err := weft.Listen(wt, network, addr)
				if err != nil {
					return fail(err)
				}
				closers = append(closers, ln)
				c, err := weft.Blocking(wt, func(context.Context) (net.Conn, error) { return net.Dial(network, ln.Addr().String()) })
				if err != nil {
					return fail(err)
				}
				closers = append(closers, c)
				s, err := ln.Accept(wt)
				if err != nil {
					return fail(err)
				}
				closers = append(closers, s)
				c1, c2 = wrap(wt, s, true), wrapNet(c, false)
			}
			out <- made{ends: pipeEnds{c1: c1, c2: c2, stop: func() { settle(struct{}{}, nil) }}}
			done.Await(wt)
			// stop closed the ends (and so the Conns under them); the
			// listener is left. (Closing the Conns here too would race
			// with an end's own Close still under way: TLSConn's sends
			// close_notify, then closes its Conn.)
			closers[0].Close()
			return struct{}{}, nil
		}, opts...)
		runDone <- err
	}()
	m := <-out
	if m.err != nil {
		return pipeEnds{}, errors.Join(m.err, <-runDone)
	}
	release := m.ends.stop
	m.ends.stop = func() {
		m.ends.c1.Close()
		m.ends.c2.Close()
		release()
		if err := <-runDone; err != nil {
			t.Errorf("the pipe's Run: %v", err)
		}
	}
	return m.ends, nil
}

// makePipe adapts weftPipe to nettest.
func makePipe(t *testing.T, network, peer string, wrap wrapFunc, wrapNet netWrapFunc, opts ...weft.Option) nettest.MakePipe {
	return func() (net.Conn, net.Conn, func(), error) {
		p, err := weftPipe(t, network, peer, wrap, wrapNet, opts...)
		if err != nil {
			return nil, nil, nil, err
		}
		return p.c1, p.c2, p.stop, nil
	}
}

// goConn is the GoConn wrap.
func goConn(wt *weft.Task, c *weft.Conn, server bool) net.Conn { return c.GoConn() }

// loopCounts are the loop counts the conformance suites run on.
var loopCounts = []int{1, 2}

// The conformance suite that Go's own net package runs on its conns
// (golang.org/x/net/nettest: basic I/O, ping-pong, racy reads and writes,
// the deadline cases, every method at once from many goroutines), on
// GoConn, called from plain goroutines: TCP and Unix, weft against weft
// and against net both ways, on one loop and on two. It runs on the
// backend the environment chooses (WEFT_BACKEND: CI runs each).
func TestGoConnPassesNettest(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		for _, peer := range peers {
			for _, loops := range loopCounts {
				t.Run(fmt.Sprintf("%s/%s/loops=%d", network, peer, loops), func(t *testing.T) {
					nettest.TestConn(t, makePipe(t, network, peer, goConn, nil, weft.WithLoops(loops)))
				})
			}
		}
	}
}

// A GoConn's Read, from a goroutine, wakes with net.ErrClosed when the
// Conn is closed from another goroutine; calls made after the Run ended
// return net.ErrClosed at once instead of hanging.
func TestGoConnAfterCloseAndAfterTheRun(t *testing.T) {
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			p, err := weftPipe(t, "tcp", "weft-weft", goConn, nil, weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			read := make(chan error, 1)
			go func() {
				_, err := p.c1.Read(make([]byte, 8))
				read <- err
			}()
			time.Sleep(10 * time.Millisecond) // the Read waits
			p.c1.Close()
			select {
			case err := <-read:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("Read after Close: %v, want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Read still waiting 10 s after Close")
			}
			p.stop()
			for _, call := range []func() error{
				func() error { _, err := p.c2.Read(make([]byte, 8)); return err },
				func() error { _, err := p.c2.Write([]byte("x")); return err },
			} {
				done := make(chan error, 1)
				go func() { done <- call() }()
				select {
				case err := <-done:
					if !errors.Is(err, net.ErrClosed) {
						t.Errorf("a call after the Run ended: %v, want net.ErrClosed", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a call after the Run ended still waiting after 10 s")
				}
			}
		})
	}
}

// A goroutine waiting in a GoConn's Read keeps the Run alive after main
// has returned: the data its peer sends later is read, and the Run ends
// once nothing is left.
func TestGoConnKeepsTheRunAliveWhileAGoroutineWaits(t *testing.T) {
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			var order []string
			var mu sync.Mutex
			note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			readDone := make(chan struct{})
			var peer net.Conn
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				s, err := ln.Accept(wt)
				if err != nil {
					return struct{}{}, err
				}
				gc := c.GoConn()
				peer = s.GoConn()
				go func() {
					defer close(readDone)
					b := make([]byte, 8)
					n, err := gc.Read(b)
					note(fmt.Sprintf("read %q %v", b[:n], err))
					gc.Close()
				}()
				// main returns once the goroutine's Read waits on the Run
				// (a task of its own, waiting for the socket).
				for st := weft.RunStats(wt); st.Waiting.FD+st.Waiting.Offload == 0; st = weft.RunStats(wt) {
					if err := wt.Sleep(time.Millisecond); err != nil {
						return struct{}{}, err
					}
				}
				go func() {
					time.Sleep(20 * time.Millisecond) // main has returned by now
					peer.Write([]byte("late"))
					<-readDone
					peer.Close()
				}()
				return struct{}{}, nil
			}, weft.WithLoops(loops))
			note(fmt.Sprintf("Run returned %v", err))
			<-readDone
			mu.Lock()
			defer mu.Unlock()
			// The data came 20 ms after main returned: the Run was still
			// there to read it (else the Read returns net.ErrClosed).
			if len(order) != 2 || !slices.Contains(order, `read "late" <nil>`) || !slices.Contains(order, "Run returned <nil>") {
				t.Errorf("got %q; want the Read to get the data sent after main returned", order)
			}
		})
	}
}

// netEcho starts net's echo server (a goroutine per connection) and
// returns its address and a stop function.
func netEcho(b testing.TB) (string, func()) {
	return serveNet(b, netListen(b), func(c net.Conn) { io.Copy(c, c) })
}

// goConnTo dials addr from a Run in the background and returns the
// Conn's GoConn, and what ends the Run.
func goConnTo(b testing.TB, addr string, opts ...weft.Option) (net.Conn, func()) {
	got := make(chan net.Conn, 1)
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		weft.Run(func(wt *weft.Task) (struct{}, error) {
			p, settle := weft.NewPromiseExternal[struct{}](wt)
			c, err := weft.Dial(wt, "tcp", addr)
			if err != nil {
				got <- nil
				return struct{}{}, err
			}
			go func() { <-stop; settle(struct{}{}, nil) }()
			got <- c.GoConn()
			p.Await(wt)
			return struct{}{}, c.Close()
		}, opts...)
	}()
	c := <-got
	if c == nil {
		b.Fatal("dial failed")
	}
	return c, func() { close(stop); <-done }
}

// A round trip of one byte to net's echo server from a plain goroutine:
// a Write and a Read of net's own TCPConn, and of a weft Conn's GoConn
// (each a request to the Conn's loop, a task, a hand-off back). The
// difference is GoConn's cost for two calls.
func BenchmarkGoConnRoundTrip(b *testing.B) {
	addr, stopEcho := netEcho(b)
	defer stopEcho()
	roundTrips := func(b *testing.B, c net.Conn) {
		buf := []byte{1}
		for b.Loop() {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("net", func(b *testing.B) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		roundTrips(b, c)
	})
	for _, loops := range loopCounts {
		b.Run(fmt.Sprintf("GoConn/loops=%d", loops), func(b *testing.B) {
			c, stop := goConnTo(b, addr, weft.WithLoops(loops), weft.WithWatchdog(0))
			defer stop()
			roundTrips(b, c)
		})
	}
}

// netStream starts a net server that sends endlessly to each connection
// (source) or reads and drops all it gets (sink).
func netStream(b testing.TB, source bool) (string, func()) {
	return serveNet(b, netListen(b), func(c net.Conn) {
		if source {
			buf := make([]byte, 64<<10)
			for {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}
		io.Copy(io.Discard, c)
	})
}

// Writes of 16 KiB to a sink, and reads of up to 16 KiB from a source,
// from a plain goroutine: net's TCPConn against a weft Conn's GoConn.
// Where the data is there (or the room), GoConn's goroutine makes the
// system call itself on the epoll backend; else it asks the loop.
func BenchmarkGoConnStream(b *testing.B) {
	for _, dir := range []string{"write", "read"} {
		addr, stop := netStream(b, dir == "read")
		op := func(b *testing.B, c net.Conn) {
			buf := make([]byte, 16<<10)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				var err error
				if dir == "write" {
					_, err = c.Write(buf)
				} else {
					_, err = c.Read(buf)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(dir+"/net", func(b *testing.B) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			op(b, c)
		})
		b.Run(dir+"/GoConn", func(b *testing.B) {
			c, stop := goConnTo(b, addr, weft.WithWatchdog(0))
			defer stop()
			op(b, c)
		})
		stop()
	}
}

// Goroutines reading and writing a GoConn as another closes it, many
// times over: no descriptor is left open, none closed twice (a system
// call of a goroutine's would then hit another's descriptor).
func TestGoConnCloseRacingGoroutineCallsLeaksNothing(t *testing.T) {
	noGC(t)
	before := openFDs(t)
	for range 50 {
		p, err := weftPipe(t, "tcp", "weft-weft", goConn, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				buf := make([]byte, 512)
				for {
					if _, err := p.c1.Read(buf); err != nil {
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				buf := make([]byte, 512)
				for {
					if _, err := p.c2.Write(buf); err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		p.c1.Close()
		p.c2.Close()
		wg.Wait()
		p.stop()
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after, %d before", after, before)
	}
}
