// The database clients through weft.Blocking beside the same
// clients used from goroutines, in one run: 10,000 SET+GET pairs with
// go-redis, and 10,000 SELECT 1 with pgx, each from 100 tasks against 100
// goroutines, with one client (and its pool) for both. The rounds are
// interleaved (weft, goroutines, weft, ...) so that both see the same
// machine; each benchmark reports the median time of a round of each, and
// the ratio weft/goroutines per pair of rounds: its median and its range.
//
//	cd bench && flock /tmp/weft-bench.lock go test -run '^$' -bench 'Redis|Pgx' -benchtime 20x .
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/servers"
)

const (
	workers = 100   // tasks, or goroutines
	ops     = 10000 // per round, shared among the workers
)

// compare runs b.N interleaved rounds of op from workers tasks through
// Blocking and from workers goroutines, after one round of each to warm
// the pools up.
func compare(b *testing.B, op func(ctx context.Context, worker, i int) error) {
	var weftT, goT, ratio []float64
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		weftRound := func() (time.Duration, error) {
			start := time.Now()
			err := weft.Group(t, func(g *weft.TaskGroup) error {
				for w := range workers {
					g.Go(func(t *weft.Task) error {
						for i := range ops / workers {
							if _, err := weft.Blocking(t, func(ctx context.Context) (struct{}, error) {
								return struct{}{}, op(ctx, w, i)
							}); err != nil {
								return err
							}
						}
						return nil
					})
				}
				return nil
			})
			return time.Since(start), err
		}
		goRound := func() (time.Duration, error) {
			// From a Blocking call, so the loop waits idle meanwhile.
			return weft.Blocking(t, func(ctx context.Context) (time.Duration, error) {
				start := time.Now()
				var wg sync.WaitGroup
				errs := make([]error, workers)
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range ops / workers {
							if err := op(ctx, w, i); err != nil {
								errs[w] = err
								return
							}
						}
					}()
				}
				wg.Wait()
				return time.Since(start), errors.Join(errs...)
			})
		}
		if _, err := weftRound(); err != nil {
			return struct{}{}, err
		}
		if _, err := goRound(); err != nil {
			return struct{}{}, err
		}
		b.ResetTimer()
		for range b.N {
			w, err := weftRound()
			if err != nil {
				return struct{}{}, err
			}
			g, err := goRound()
			if err != nil {
				return struct{}{}, err
			}
			weftT = append(weftT, float64(w.Microseconds())/1000)
			goT = append(goT, float64(g.Microseconds())/1000)
			ratio = append(ratio, float64(w)/float64(g))
		}
		return struct{}{}, nil
	}, weft.WithLoops(1))
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(weftT)
	slices.Sort(goT)
	slices.Sort(ratio)
	b.ReportMetric(weftT[len(weftT)/2], "weft-ms/10k")
	b.ReportMetric(goT[len(goT)/2], "goroutines-ms/10k")
	b.ReportMetric(ratio[len(ratio)/2], "ratio")
	b.ReportMetric(ratio[0], "ratio-min")
	b.ReportMetric(ratio[len(ratio)-1], "ratio-max")
	b.ReportMetric(0, "ns/op")
}

func skipOrFail(b *testing.B, err error) {
	if errors.Is(err, servers.ErrMissing) {
		b.Skip(err)
	}
	b.Fatal(err)
}

// BenchmarkRedisSetGet: a SET and a GET of the worker's key per op, each a
// Blocking call on the weft side (as a program would write them).
func BenchmarkRedisSetGet(b *testing.B) {
	srv, err := servers.StartRedis()
	if err != nil {
		skipOrFail(b, err)
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: workers, ContextTimeoutEnabled: true})
	defer rdb.Close()
	keys := make([]string, workers)
	for w := range keys {
		keys[w] = "bench:" + strconv.Itoa(w)
	}
	compare(b, func(ctx context.Context, w, i int) error {
		if err := rdb.Set(ctx, keys[w], i, 0).Err(); err != nil {
			return err
		}
		v, err := rdb.Get(ctx, keys[w]).Int()
		if err == nil && v != i {
			err = fmt.Errorf("GET %s = %d, want %d", keys[w], v, i)
		}
		return err
	})
}

// BenchmarkPgxSelect1: SELECT 1 per op, through a pgx pool of 100.
func BenchmarkPgxSelect1(b *testing.B) {
	srv, err := servers.StartPostgres()
	if err != nil {
		skipOrFail(b, err)
	}
	defer srv.Stop()
	cfg, err := pgxpool.ParseConfig(srv.PostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = workers
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	compare(b, func(ctx context.Context, w, i int) error {
		var n int
		if err := pool.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("SELECT 1 = %d", n)
		}
		return nil
	})
}
