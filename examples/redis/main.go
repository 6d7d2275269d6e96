// Command redis uses go-redis (github.com/redis/go-redis/v9), a blocking
// client with a connection pool and goroutines of its own, from weft
// tasks: each command runs through weft.Blocking, on a goroutine of its
// own, while its task waits and the loop runs the other tasks. No weft
// dialer, no Offload (whose pool is sized for CPU work): the client is used
// exactly as from goroutines, and costs about as much (see bench/README.md).
//
//	go run ./redis                        # starts a redis-server of its own in a temporary directory
//	go run ./redis -addr 127.0.0.1:6379   # or talks to yours (it writes keys under weft:example:)
//
// What it shows: 100 tasks counting with INCR at once, a cancelled
// blocking command (BLPOP under a weft.Timeout: the task's cancellation
// cancels the command's context), and a loop that keeps running other
// tasks while a command waits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/servers"
)

func main() {
	addr := flag.String("addr", "", "a redis server (host:port); empty: start one")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "redis:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	if addr == "" {
		srv, err := servers.StartRedis()
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr
		fmt.Printf("started redis-server (pid %d) on %s\n", srv.Pid(), srv.Addr)
	}
	rdb := NewClient(addr)
	defer rdb.Close()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		n, err := CountTogether(t, rdb, "weft:example:counter", 100, 100)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("100 tasks x 100 INCR:", n)
		start := time.Now()
		_, err = PopWithin(t, rdb, "weft:example:empty", 100*time.Millisecond)
		fmt.Printf("BLPOP on an empty list under a 100 ms Timeout: %v after %v\n", err, time.Since(start).Round(10*time.Millisecond))
		return struct{}{}, nil
	})
	return err
}

// NewClient returns a go-redis client for addr with a pool large enough
// for 100 tasks (or goroutines) to have a connection each. It honours the
// deadlines of its commands' contexts (ContextTimeoutEnabled: go-redis
// ignores them by default), so that a weft.Timeout around a Blocking call
// ends a command that waits; go-redis does not watch a context's plain
// cancellation during a command.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 100, ContextTimeoutEnabled: true})
}

// CountTogether starts tasks tasks that each INCR key n times, through
// Blocking, and returns the count they reach (the key is reset first).
func CountTogether(t *weft.Task, rdb *redis.Client, key string, tasks, n int) (int64, error) {
	if _, err := weft.Blocking(t, func(ctx context.Context) (int64, error) { return rdb.Del(ctx, key).Result() }); err != nil {
		return 0, err
	}
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		for range tasks {
			g.Go(func(t *weft.Task) error {
				for range n {
					_, err := weft.Blocking(t, func(ctx context.Context) (int64, error) {
						return rdb.Incr(ctx, key).Result() // blocks this goroutine, not the loop
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return weft.Blocking(t, func(ctx context.Context) (int64, error) { return rdb.Get(ctx, key).Int64() })
}

// SetGet stores val under key and reads it back: two commands, each
// through Blocking.
func SetGet(t *weft.Task, rdb *redis.Client, key, val string) error {
	if _, err := weft.Blocking(t, func(ctx context.Context) (string, error) { return rdb.Set(ctx, key, val, 0).Result() }); err != nil {
		return err
	}
	got, err := weft.Blocking(t, func(ctx context.Context) (string, error) { return rdb.Get(ctx, key).Result() })
	if err != nil {
		return err
	}
	if got != val {
		return fmt.Errorf("GET %s = %q, want %q", key, got, val)
	}
	return nil
}

// errNothing is PopWithin's error when the list stayed empty.
var errNothing = errors.New("nothing to pop")

// PopWithin waits up to d for an element of the list at key (BLPOP, which
// blocks its connection on the server): under weft.Timeout, the command's
// context has the deadline, go-redis reads until then and gives up with a
// timeout (a net.Error), and the task's cancellation cancels the context.
func PopWithin(t *weft.Task, rdb *redis.Client, key string, d time.Duration) (string, error) {
	v, err := weft.Timeout(t, d, func(t *weft.Task) ([]string, error) {
		return weft.Blocking(t, func(ctx context.Context) ([]string, error) {
			return rdb.BLPop(ctx, 0, key).Result() // 0: wait for ever, unless ctx ends
		})
	})
	if err != nil {
		return "", err
	}
	if len(v) < 2 {
		return "", errNothing
	}
	return v[1], nil
}
