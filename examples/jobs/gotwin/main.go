// Command gotwin is examples/jobs written with goroutines, for comparison:
// a WaitGroup, a semaphore channel for the limit, a context to cancel the
// rest after the first failure, a mutex and a sync.Once for that failure.
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"sync"
)

func main() {
	limit := flag.Int("limit", 4, "jobs at once")
	flag.Parse()
	sums, err := runJobs(context.Background(), flag.Args(), *limit, checksum)
	for i, s := range sums {
		if s != "" {
			fmt.Println(s, flag.Arg(i))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

func checksum(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(data)), nil
}

func runJobs(ctx context.Context, jobs []string, limit int, do func(context.Context, string) (string, error)) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]string, len(jobs))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i, job := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := do(ctx, job)
			if err != nil {
				once.Do(func() {
					first = fmt.Errorf("%s: %w", job, err)
					cancel()
				})
				return
			}
			results[i] = r
		}()
	}
	wg.Wait()
	return results, first
}
