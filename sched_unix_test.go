//go:build unix

package weft_test

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
	"github.com/weft-go/weft/internal/polite"
)

// Fairness between connections without a Checkpoint in user code: two
// clients that stream pipelined messages without waiting for the echoes
// keep every read of their connections' tasks finding data, and a third,
// polite client's 64-byte round trips must not wait behind them. The loop
// makes a task whose I/O calls never wait give way once it has held the
// loop for readySlice (tens of µs) while a woken task waits. The bound is
// generous, the probe's median within 2 ms (it was 6 to 54 ms on epoll,
// 50 to 250 µs since); with WEFT_TIMING=1 its p99 beside the greedy
// clients must also be within twice its p99 alone plus 10 ms (it was
// 140 ms, and is 3 to 6 ms: the greedy clients' goroutines share this
// process's processors with the loop, which a client in another process
// would not).
func TestGreedyConnectionsDoNotStallAPoliteOne(t *testing.T) {
	skipTimingUnderRace(t)
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close() // Go's netpoller's descriptors, made once, before the count
	}
	backends(t, func(t *testing.T, opts ...weft.Option) {
		fds := openFDs(t)
		alone, busy, streamed := greedyClients(t, append(opts, oneLoop)...)
		slices.Sort(alone)
		slices.Sort(busy)
		p := func(s []time.Duration, q int) time.Duration { return s[len(s)*q/100] }
		t.Logf("probe alone: p50 %v p99 %v; beside 2 greedy clients: p50 %v p99 %v max %v; greedy clients streamed %d KB",
			p(alone, 50), p(alone, 99), p(busy, 50), p(busy, 99), busy[len(busy)-1], streamed>>10)
		if streamed < 1<<20 {
			t.Fatalf("the greedy clients streamed only %d bytes: their connections were not served", streamed)
		}
		if p(busy, 50) > 2*time.Millisecond {
			t.Fatalf("the polite client waited %v at the median beside two greedy ones (alone %v)", p(busy, 50), p(alone, 50))
		}
		if timing() && p(busy, 99) > 2*p(alone, 99)+10*time.Millisecond {
			t.Fatalf("the polite client's p99 is %v beside two greedy ones, %v alone", p(busy, 99), p(alone, 99))
		}
		for deadline := time.Now().Add(time.Second); openFDs(t) > fds && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := openFDs(t); n > fds {
			t.Fatalf("%d descriptors open after the test, %d before", n, fds)
		}
	})
}

// greedyClients runs weft's echo server (one task per connection, a 16 KB
// buffer each) with opts, and measures the round trips of a polite client
// (64 bytes, then wait for the echo) alone, then beside two greedy
// clients that write pipelined 64-byte messages as fast as the server
// takes them while a goroutine of each reads the echoes. It returns the
// round trips and the bytes the greedy clients got back.
func greedyClients(t *testing.T, opts ...weft.Option) (alone, busy []time.Duration, streamed int64) {
	const rounds = 300
	var got atomic.Int64
	run(t, func(wt *weft.Task) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		server := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, echo.Serve(wt, ln) })
		addr := ln.Addr().String()
		done := make(chan error, 1)
		go func() {
			defer ln.Close()
			done <- func() error {
				fd, err := polite.Dial(ln.Addr().(*net.TCPAddr))
				if err != nil {
					return err
				}
				defer syscall.Close(fd)
				if alone, err = polite.RoundTrips(fd, rounds); err != nil {
					return err
				}
				var wg sync.WaitGroup
				stop := make(chan struct{})
				var greedy []net.Conn
				for i := 0; i < 2; i++ {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return err
					}
					greedy = append(greedy, c)
					wg.Add(2)
					go func() { // the pipeline: 256 messages of 64 bytes a write
						defer wg.Done()
						msg := make([]byte, 256*64)
						for {
							select {
							case <-stop:
								c.(*net.TCPConn).CloseWrite()
								return
							default:
							}
							if _, err := c.Write(msg); err != nil {
								return
							}
						}
					}()
					go func() {
						defer wg.Done()
						buf := make([]byte, 64<<10)
						for {
							n, err := c.Read(buf)
							got.Add(int64(n))
							if err != nil {
								return
							}
						}
					}()
				}
				for got.Load() < 1<<20 { // the stream is under way
					time.Sleep(time.Millisecond)
				}
				busy, err = polite.RoundTrips(fd, rounds)
				close(stop)
				wg.Wait()
				for _, c := range greedy {
					c.Close()
				}
				return err
			}()
		}()
		if _, err := server.Await(wt); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}, opts...)
	return alone, busy, got.Load()
}
