package weft_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func readFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	return string(b), err
}

// panicMessage runs f and returns what it panicked with ("" if nothing).
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	f()
	return ""
}

func TestTaskUsedAfterItsTaskFinishedPanics(t *testing.T) {
	var saved *weft.Task
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { saved = wt; return 0, nil })
		p.Await(wt)
		msg := panicMessage(func() { saved.Yield() })
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "finished") {
			t.Errorf("use after finish: %q", msg)
		}
	})
	msg := panicMessage(func() { saved.Sleep(time.Millisecond) })
	if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "Sleep") {
		t.Errorf("use after Run: %q", msg)
	}
}

func TestTaskUsedByAnotherTaskPanics(t *testing.T) {
	run(t, func(parent *weft.Task) {
		p := weft.Go(parent, func(child *weft.Task) (string, error) {
			return panicMessage(func() { parent.Yield() }), nil
		})
		msg, _ := p.Await(parent)
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "another task or goroutine") {
			t.Errorf("use from another task: %q", msg)
		}
	})
}

func TestTaskUsedFromAnotherGoroutinePanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		// While the task waits on the loop...
		got := make(chan string, 1)
		p, settle := weft.NewPromise[int]()
		go func() {
			got <- panicMessage(func() { wt.Yield() })
			settle(0, nil)
		}()
		spawn(wt, func(wt *weft.Task) { wt.Sleep(200 * time.Millisecond) }) // keep the loop alive
		p.Await(wt)
		if msg := <-got; !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("use from a goroutine while the task waits: %q", msg)
		}
		// ... and while it runs (here: blocked on a channel, not on weft).
		go func() { got <- panicMessage(func() { weft.Go(wt, func(*weft.Task) (int, error) { return 0, nil }) }) }()
		if msg := <-got; !strings.HasPrefix(msg, "weft: ") && !skipGoroutineCheck() {
			t.Errorf("use from a goroutine while the task runs: %q", msg)
		}
	})
}
