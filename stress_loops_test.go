//go:build unix

package weft_test

// The multi-loop stress test of issue 17: many connections with read
// deadlines, served under Group and Protect (and Timeout), on 1, 2, 4 and
// 8 loops, many times over. Run under -race it is what finds loop-owned
// state touched from another loop's goroutine.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestStressConnectionsWithDeadlinesOnSeveralLoops(t *testing.T) {
	conns, rounds, runs := 400, 5, 20
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
