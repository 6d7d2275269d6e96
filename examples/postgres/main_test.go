package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/servers"
)

var url string

// TestMain starts one PostgreSQL for the package's tests, on a free
// loopback port in a temporary directory, and stops it by its pid.
func TestMain(m *testing.M) {
	os.Exit(servers.Main(m, servers.StartPostgres, func(s *servers.Server) { url = s.PostgresURL() }))
}

func pool(t *testing.T) *pgxpool.Pool {
	servers.Need(t)
	p, err := NewPool(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestTransactionsFromManyTasks: 50 tasks x 20 transfers in transactions,
// at once, on one loop and on two: the total stays, some transfers ran at
// once on several connections, and on two loops tasks ran on both.
func TestTransactionsFromManyTasks(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprint("loops=", loops), func(t *testing.T) {
			p := pool(t)
			var mu sync.Mutex
			seen := map[int]bool{}
			total, err := weft.Run(func(t *weft.Task) (int, error) {
				if err := Setup(t, p, 10, 1000); err != nil {
					return 0, err
				}
				err := weft.Group(t, func(g *weft.TaskGroup) error {
					g.Go(func(t *weft.Task) error { return TransferMany(t, p, 50, 20, 10) })
					for range 20 {
						g.Go(func(t *weft.Task) error {
							for range 10 {
								if _, err := Total(t, p); err != nil {
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
				if err != nil {
					return 0, err
				}
				return Total(t, p)
			}, weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			if total != 10000 {
				t.Fatalf("the total is %d after the transfers, want 10000", total)
			}
			if st := p.Stat(); st.TotalConns() < 2 {
				t.Fatalf("%d connections: the transactions never ran at once", st.TotalConns())
			}
			if loops > 1 && len(seen) < 2 {
				t.Fatalf("tasks ran on loops %v, want several", seen)
			}
		})
	}
}

// TestFailedTransactionRollsBack: a transfer of more than the balance
// fails on the CHECK and changes nothing.
func TestFailedTransactionRollsBack(t *testing.T) {
	p := pool(t)
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		if err := Setup(t, p, 2, 100); err != nil {
			return struct{}{}, err
		}
		if err := Transfer(t, p, 1, 2, 500); err == nil {
			return struct{}{}, errors.New("a transfer beyond the balance succeeded")
		}
		b, err := Balances(t, p, []int{1, 2})
		if err != nil {
			return struct{}{}, err
		}
		if b[0] != 100 || b[1] != 100 {
			return struct{}{}, fmt.Errorf("balances %v after a failed transfer, want [100 100]", b)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPreparedStatement: the prepared statement reads what was written.
func TestPreparedStatement(t *testing.T) {
	p := pool(t)
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		if err := Setup(t, p, 3, 7); err != nil {
			return struct{}{}, err
		}
		if err := Transfer(t, p, 1, 3, 5); err != nil {
			return struct{}{}, err
		}
		b, err := Balances(t, p, []int{1, 2, 3})
		if err != nil {
			return struct{}{}, err
		}
		if fmt.Sprint(b) != "[2 7 12]" {
			return struct{}{}, fmt.Errorf("balances %v, want [2 7 12]", b)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCancelledQueryStopsOnTheServer: cancelling the task that waits for
// pg_sleep(10) returns within a second or two with context.Canceled, and
// the server no longer runs the query.
func TestCancelledQueryStopsOnTheServer(t *testing.T) {
	p := pool(t)
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		start := time.Now()
		err := SleepCancelledAfter(t, p, 200*time.Millisecond)
		if !errors.Is(err, context.Canceled) {
			return struct{}{}, fmt.Errorf("the cancelled query: %v, want context.Canceled", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			return struct{}{}, fmt.Errorf("the cancelled query returned after %v", el)
		}
		// The server's side: no pg_sleep left (the cancel request may take
		// a moment to land).
		for range 100 {
			n, err := weft.Blocking(t, func(ctx context.Context) (int, error) {
				var n int
				err := p.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'`).Scan(&n)
				return n, err
			})
			if err != nil {
				return struct{}{}, err
			}
			if n == 0 {
				return struct{}{}, nil
			}
			t.Sleep(20 * time.Millisecond)
		}
		return struct{}{}, errors.New("pg_sleep still runs on the server after the task was cancelled")
	})
	if err != nil {
		t.Fatal(err)
	}
}
