package weft_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weft-go/weft"
)

// Blocking calls a library with a blocking API (a database driver, a cloud
// SDK) from tasks: each call runs on a goroutine of its own while its task
// waits, and the loop goes on with the other tasks.
func ExampleBlocking() {
	// A client with a blocking API that honours its context, as database
	// drivers do.
	lookup := func(ctx context.Context, key string) (string, error) {
		select {
		case <-time.After(10 * time.Millisecond): // the network
			return "value of " + key, nil
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
	v, err := weft.Run(func(t *weft.Task) (string, error) {
		var ps []*weft.Promise[string]
		for _, key := range []string{"a", "b", "c"} {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (string, error) {
				return weft.Blocking(t, func(ctx context.Context) (string, error) {
					return lookup(ctx, key) // f must not use t: it runs on another goroutine
				})
			}))
		}
		vals, err := weft.All(t, ps...) // about 10 ms in all: the calls wait at once
		return strings.Join(vals, ", "), err
	})
	fmt.Println(v, err)
	// Output: value of a, value of b, value of c <nil>
}

// Offload keeps blocking or CPU-heavy work off the loop.
func ExampleOffload() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		sum, err := weft.Offload(t, func() (int, error) {
			s := 0
			for i := 1; i <= 1000; i++ {
				s += i
			}
			return s, nil
		})
		fmt.Println(sum, err)
		return struct{}{}, nil
	})
	// Output: 500500 <nil>
}
