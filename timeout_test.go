package weft_test

// Timeout is a cancel scope on the calling task (issue 17, item 5), as
// Trio's fail_after, asyncio's timeout, Eio's with_timeout and Go's
// context.WithTimeout are: f runs on the same task, so what is bound to
// the task works inside it.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestTimeoutRunsFOnTheCallingTask(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inner *weft.Task
		v, err := weft.Timeout(wt, time.Hour, func(ft *weft.Task) (int, error) {
			inner = ft
			return 7, ft.Yield()
		})
		if v != 7 || err != nil {
			t.Fatalf("Timeout = %d, %v", v, err)
		}
		if inner != wt {
			t.Fatal("Timeout's f got another *Task than its caller's")
		}
	})
}

// A reader bound to the task before the Timeout is used inside it: every
// read succeeds (the seeded test that read a bufio.Reader over
// ReadWriter(t) inside Timeout and saw every read fail).
func TestTimeoutUsesWhatIsBoundToTheTask(t *testing.T) {
	run(t, func(wt *weft.Task) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		spawn(wt, func(wt *weft.Task) {
			defer w.Close()
			io.WriteString(w.ReadWriter(wt), "one\ntwo\nthree\n")
		})
		br := bufio.NewReader(r.ReadWriter(wt))
		var lines []string
		for {
			line, err := weft.Timeout(wt, time.Minute, func(wt *weft.Task) (string, error) {
				return br.ReadString('\n')
			})
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read inside Timeout: %v", err)
			}
			lines = append(lines, strings.TrimSpace(line))
		}
		if got := strings.Join(lines, ","); got != "one,two,three" {
			t.Fatalf("read %q", got)
		}
		// A Mutex locked by the task is unlocked inside the Timeout.
		var mu weft.Mutex
		if err := mu.Lock(wt); err != nil {
			t.Fatal(err)
		}
		weft.Timeout(wt, time.Minute, func(wt *weft.Task) (struct{}, error) {
			mu.Unlock()
			return struct{}{}, nil
		})
		if !mu.TryLock() {
			t.Fatal("the Mutex unlocked inside Timeout is still locked")
		}
	})
}

func TestTimeoutContextsAreTheScopes(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var inside context.Context
		_, err := weft.Timeout(wt, 10*time.Millisecond, func(wt *weft.Task) (int, error) {
			inside = wt.Context()
			if _, ok := inside.Deadline(); !ok {
				t.Error("the context inside Timeout has no deadline")
			}
			return 0, wt.Sleep(time.Hour)
		})
		if err != weft.ErrTimeout {
			t.Fatalf("Timeout = %v, want ErrTimeout", err)
		}
		if !errors.Is(inside.Err(), context.DeadlineExceeded) {
			t.Fatalf("the context inside Timeout: Err = %v, want DeadlineExceeded", inside.Err())
		}
		after := wt.Context()
		if after.Err() != nil {
			t.Fatalf("the task's context after Timeout returned is done: %v", after.Err())
		}
		if _, ok := after.Deadline(); ok {
			t.Fatal("the task's context after Timeout returned has a deadline")
		}
		if err := wt.Sleep(time.Millisecond); err != nil {
			t.Fatalf("the task is still cancelled after Timeout returned: %v", err)
		}
		// A context taken inside a Timeout that ends in time is cancelled
		// when it returns, as context.WithTimeout's at the end of its
		// function.
		weft.Timeout(wt, time.Hour, func(wt *weft.Task) (int, error) {
			inside = wt.Context()
			return 0, nil
		})
		if !errors.Is(inside.Err(), context.Canceled) {
			t.Fatalf("the context of a Timeout that returned: Err = %v, want Canceled", inside.Err())
		}
		if after.Err() != nil {
			t.Fatal("the task's context was cancelled by the end of a Timeout")
		}
	})
}

func TestTimeoutsNestAndComposeWithProtect(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var innerErr error
		v, err := weft.Timeout(wt, time.Hour, func(wt *weft.Task) (string, error) {
			_, innerErr = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
				return 0, wt.Sleep(time.Hour)
			})
			// The outer scope is not cancelled by the inner deadline.
			if err := wt.Sleep(time.Millisecond); err != nil {
				return "", err
			}
			return "outer", nil
		})
		if innerErr != weft.ErrTimeout || v != "outer" || err != nil {
			t.Fatalf("inner %v; outer %q, %v", innerErr, v, err)
		}
		// Protect inside a Timeout shields its body from the deadline; the
		// deadline reaches the task when the Protect returns.
		var slept error
		_, err = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
			wt.Protect(func(wt *weft.Task) error {
				slept = wt.Sleep(20 * time.Millisecond)
				return nil
			})
			return 0, wt.Yield()
		})
		if slept != nil || err != weft.ErrTimeout {
			t.Fatalf("protected sleep: %v; Timeout: %v", slept, err)
		}
		// A task started inside inherits the deadline.
		_, err = weft.Timeout(wt, 5*time.Millisecond, func(wt *weft.Task) (int, error) {
			child := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
			return child.Await(wt)
		})
		if err != weft.ErrTimeout {
			t.Fatalf("Timeout around a child: %v", err)
		}
	}, weft.WithVirtualTime(time.Unix(0, 0)))
}

// A panic in f propagates out of Timeout, in the calling task, and the
// deadline is gone afterwards.
func TestTimeoutPropagatesAPanicInF(t *testing.T) {
	run(t, func(wt *weft.Task) {
		msg := panicMessage(func() {
			weft.Timeout(wt, time.Millisecond, func(wt *weft.Task) (int, error) { panic("inside") })
		})
		if msg != "inside" {
			t.Fatalf("panic %q", msg)
		}
		if err := wt.Sleep(5 * time.Millisecond); err != nil {
			t.Fatalf("the deadline of a Timeout that panicked still applies: %v", err)
		}
	}, weft.WithVirtualTime(time.Unix(0, 0)))
}
