// Command postgres uses pgx (github.com/jackc/pgx/v5), a blocking client
// with a connection pool of its own, from weft tasks: each call runs
// through weft.Blocking, on a goroutine of its own, while its task waits
// and the loop runs the other tasks. The context Blocking gives the call
// is cancelled when the task is: pgx then cancels the query on the server.
//
//	go run ./postgres                                                   # starts a PostgreSQL of its own in a temporary directory
//	go run ./postgres -url postgres://user@127.0.0.1:5432/db?sslmode=disable  # or uses yours (it creates the table weft_example_accounts)
//
// What it shows: transfers between accounts in transactions from 50 tasks
// at once (the total stays the same), a prepared statement, and a query
// that the task's cancellation stops on the server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/servers"
)

func main() {
	url := flag.String("url", "", "a PostgreSQL connection string; empty: start a server")
	flag.Parse()
	if err := run(*url); err != nil {
		fmt.Fprintln(os.Stderr, "postgres:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	if url == "" {
		srv, err := servers.StartPostgres()
		if err != nil {
			return err
		}
		defer srv.Stop()
		url = srv.PostgresURL()
		fmt.Printf("started postgres (pid %d) on %s\n", srv.Pid(), srv.Addr)
	}
	return demo(url)
}

func demo(url string) error {
	pool, err := NewPool(url)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = weft.Run(func(t *weft.Task) (struct{}, error) {
		if err := Setup(t, pool, 10, 1000); err != nil {
			return struct{}{}, err
		}
		if err := TransferMany(t, pool, 50, 20, 10); err != nil {
			return struct{}{}, err
		}
		total, err := Total(t, pool)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("total after 1000 transfers from 50 tasks:", total)
		b, err := Balances(t, pool, []int{1, 2, 3})
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("balances of 1, 2, 3 (a prepared statement):", b)
		start := time.Now()
		err = SleepCancelledAfter(t, pool, 100*time.Millisecond)
		fmt.Printf("pg_sleep(10) cancelled after 100 ms: %v, after %v\n", err, time.Since(start).Round(10*time.Millisecond))
		return struct{}{}, nil
	})
	return err
}

// NewPool returns a pgx pool of up to 100 connections, so that 100 tasks
// (or goroutines) have one each.
func NewPool(url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 100
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// exec runs a statement through Blocking.
func exec(t *weft.Task, pool *pgxpool.Pool, sql string, args ...any) error {
	_, err := weft.Blocking(t, func(ctx context.Context) (struct{}, error) {
		_, err := pool.Exec(ctx, sql, args...)
		return struct{}{}, err
	})
	return err
}

// Setup makes n accounts holding each amount.
func Setup(t *weft.Task, pool *pgxpool.Pool, n, each int) error {
	if err := exec(t, pool, `DROP TABLE IF EXISTS weft_example_accounts`); err != nil {
		return err
	}
	if err := exec(t, pool, `CREATE TABLE weft_example_accounts (id int PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))`); err != nil {
		return err
	}
	return exec(t, pool, `INSERT INTO weft_example_accounts SELECT g, $1 FROM generate_series(1, $2) g`, each, n)
}

// Transfer moves amount from one account to another in a transaction: all
// of it in one Blocking call, since a pgx.Tx belongs to one goroutine's
// sequence of calls. It fails, and changes nothing, if from has too
// little.
func Transfer(t *weft.Task, pool *pgxpool.Pool, from, to, amount int) error {
	_, err := weft.Blocking(t, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			// Lock both rows in one order, so that opposite transfers do not deadlock.
			if _, err := tx.Exec(ctx, `SELECT 1 FROM weft_example_accounts WHERE id IN ($1, $2) ORDER BY id FOR UPDATE`, from, to); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE weft_example_accounts SET balance = balance - $2 WHERE id = $1`, from, amount); err != nil {
				return err // the CHECK failed: the transaction rolls back
			}
			_, err := tx.Exec(ctx, `UPDATE weft_example_accounts SET balance = balance + $2 WHERE id = $1`, to, amount)
			return err
		})
	})
	return err
}

// TransferMany runs tasks tasks that each make n transfers between the
// accounts 1..accounts.
func TransferMany(t *weft.Task, pool *pgxpool.Pool, tasks, n, accounts int) error {
	return weft.Group(t, func(g *weft.TaskGroup) error {
		for i := range tasks {
			g.Go(func(t *weft.Task) error {
				for j := range n {
					from, to := (i+j)%accounts+1, (i+2*j+1)%accounts+1
					if from == to {
						to = to%accounts + 1
					}
					if err := Transfer(t, pool, from, to, 1+(i*j)%7); err != nil {
						return err
					}
				}
				return nil
			})
		}
		return nil
	})
}

// Total is the sum of the balances.
func Total(t *weft.Task, pool *pgxpool.Pool) (int, error) {
	return weft.Blocking(t, func(ctx context.Context) (int, error) {
		var total int
		err := pool.QueryRow(ctx, `SELECT sum(balance) FROM weft_example_accounts`).Scan(&total)
		return total, err
	})
}

// Balances reads the balances of ids with a statement prepared once on
// one connection of the pool.
func Balances(t *weft.Task, pool *pgxpool.Pool, ids []int) ([]int, error) {
	return weft.Blocking(t, func(ctx context.Context) ([]int, error) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		if _, err := c.Conn().Prepare(ctx, "balance_of", `SELECT balance FROM weft_example_accounts WHERE id = $1`); err != nil {
			return nil, err
		}
		var out []int
		for _, id := range ids {
			var b int
			if err := c.QueryRow(ctx, "balance_of", id).Scan(&b); err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return out, nil
	})
}

// errNotCancelled is SleepCancelledAfter's error if the query finished.
var errNotCancelled = errors.New("pg_sleep(10) was not cancelled")

// SleepCancelledAfter starts SELECT pg_sleep(10) in a task and cancels the
// task after d: Blocking cancels the query's context, and pgx asks the
// server to cancel the query. It returns the query's error (matching
// context.Canceled).
func SleepCancelledAfter(t *weft.Task, pool *pgxpool.Pool, d time.Duration) error {
	p := weft.Go(t, func(t *weft.Task) (struct{}, error) {
		return struct{}{}, exec(t, pool, `SELECT pg_sleep(10)`)
	})
	if err := t.Sleep(d); err != nil {
		return err
	}
	p.Cancel()
	_, err := p.Await(t)
	if err == nil {
		return errNotCancelled
	}
	return err
}
