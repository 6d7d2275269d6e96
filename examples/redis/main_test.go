package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/servers"
)

var addr string

// TestMain starts one redis-server for the package's tests, on a free
// loopback port in a temporary directory, and stops it by its pid.
func TestMain(m *testing.M) {
	os.Exit(servers.Main(m, servers.StartRedis, func(s *servers.Server) { addr = s.Addr }))
}

func client(t *testing.T) *redis.Client {
	servers.Need(t)
	rdb := NewClient(addr)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestCountTogetherOnOneAndSeveralLoops: 100 tasks x 100 INCR through
// Blocking count to 10000, with several connections of the pool in use at
// once, on one loop and on two (where tasks run on both).
func TestCountTogetherOnOneAndSeveralLoops(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprint("loops=", loops), func(t *testing.T) {
			rdb := client(t)
			var mu sync.Mutex
			seen := map[int]bool{}
			n, err := weft.Run(func(t *weft.Task) (int64, error) {
				key := fmt.Sprint("test:counter:", loops)
				n, err := CountTogether(t, rdb, key, 100, 100)
				if err != nil {
					return 0, err
				}
				// And the tasks' loops, when several.
				err = weft.Group(t, func(g *weft.TaskGroup) error {
					for range 50 {
						g.Go(func(t *weft.Task) error {
							for i := range 20 {
								if err := SetGet(t, rdb, fmt.Sprint("test:k:", loops, ":", i), "v"); err != nil {
									return err
								}
								mu.Lock()
								seen[t.Loop()] = true
								mu.Unlock()
							}
							return nil
						})
					}
					return nil
				})
				return n, err
			}, weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			if n != 10000 {
				t.Fatalf("the counter reached %d, want 10000", n)
			}
			if st := rdb.PoolStats(); st.TotalConns < 2 {
				t.Fatalf("pool stats %+v: the commands never ran at once", st)
			}
			if loops > 1 && len(seen) < 2 {
				t.Fatalf("tasks ran on loops %v, want several", seen)
			}
		})
	}
}

// TestLoopRunsWhileACommandWaits: DEBUG SLEEP holds the server for 200 ms;
// the task that waits for it suspends, and another task of the loop keeps
// ticking meanwhile.
func TestLoopRunsWhileACommandWaits(t *testing.T) {
	rdb := client(t)
	ticks := 0
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ticker := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for range 10 {
				if err := t.Sleep(10 * time.Millisecond); err != nil {
					return struct{}{}, err
				}
				ticks++
			}
			return struct{}{}, nil
		})
		if _, err := weft.Blocking(t, func(ctx context.Context) (string, error) {
			return rdb.Do(ctx, "DEBUG", "SLEEP", "0.2").Text()
		}); err != nil {
			return struct{}{}, err
		}
		if ticks < 5 {
			return struct{}{}, fmt.Errorf("%d ticks while the command waited 200 ms: the loop was held", ticks)
		}
		return ticker.Await(t)
	}, weft.WithLoops(1))
	if err != nil {
		t.Fatal(err)
	}
}

// TestCancelledCommand: BLPOP on an empty list under a 100 ms Timeout ends
// with the deadline, and the client works on.
func TestCancelledCommand(t *testing.T) {
	rdb := client(t)
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		start := time.Now()
		_, err := PopWithin(t, rdb, "test:empty", 100*time.Millisecond)
		var ne net.Error // go-redis: the read's deadline (the Timeout's) passed
		if !errors.As(err, &ne) || !ne.Timeout() {
			return struct{}{}, fmt.Errorf("BLPOP under a Timeout: %v, want a timeout", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			return struct{}{}, fmt.Errorf("BLPOP returned after %v", el)
		}
		// An element that is there comes at once.
		weft.Blocking(t, func(ctx context.Context) (int64, error) { return rdb.RPush(ctx, "test:full", "x").Result() })
		v, err := PopWithin(t, rdb, "test:full", time.Second)
		if err != nil || v != "x" {
			return struct{}{}, fmt.Errorf("BLPOP of a full list: %q, %v", v, err)
		}
		return struct{}{}, SetGet(t, rdb, "test:after", "still fine")
	})
	if err != nil {
		t.Fatal(err)
	}
}
