package weft

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft/internal/loophook"
)

// hookFunc is a suspend hook made of a function.
type hookFunc func()

func (f hookFunc) BeforeSuspend() { f() }

// armCounting arms a hook on t that records, each time it runs, that it
// ran on t's own code while t still ran (before t changed state).
func armCounting(t *Task, runs *[]string, label string) {
	loophook.OnSuspend(t, hookFunc(func() {
		if currentTask() != t {
			panic("the hook ran on another task's code")
		}
		if t.state != stateRunning {
			panic("the hook ran after the task changed state")
		}
		*runs = append(*runs, label)
	}))
}

// Every way a task gives its loop away runs its armed hook first, once;
// a task that does not suspend never runs it, and a disarmed hook does
// not run.
func TestSuspendHookRunsOnceBeforeEachWayOfSuspending(t *testing.T) {
	ways := []struct {
		name    string
		suspend func(t *Task) error
	}{
		{"Sleep", func(t *Task) error { return t.Sleep(time.Millisecond) }},
		{"Yield", func(t *Task) error { return t.Yield() }},
		{"Go", func(t *Task) error {
			Go(t, func(t *Task) (int, error) { return 0, nil })
			return nil
		}},
		{"Await", func(t *Task) error {
			p := Go(t, func(t *Task) (int, error) { return 1, t.Sleep(time.Millisecond) })
			_, err := p.Await(t)
			return err
		}},
		{"Offload", func(t *Task) error {
			_, err := Offload(t, func() (int, error) { time.Sleep(time.Millisecond); return 0, nil })
			return err
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			var runs []string
			_, err := Run(func(main *Task) (struct{}, error) {
				armCounting(main, &runs, "armed")
				main.Now() // does not suspend
				if len(runs) != 0 {
					return struct{}{}, errors.New("the hook ran without a suspension")
				}
				if err := way.suspend(main); err != nil {
					return struct{}{}, err
				}
				if err := way.suspend(main); err != nil { // not again: it is one-shot
					return struct{}{}, err
				}
				armCounting(main, &runs, "disarmed")
				loophook.OnSuspend(main, nil)
				return struct{}{}, way.suspend(main)
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"armed"}; !slices.Equal(runs, want) {
				t.Fatalf("the hook ran %v, want %v", runs, want)
			}
		})
	}
}

// A task the hook starts is only queued: the hook returns before it runs,
// the suspending task goes on into its wait, and the new task runs once
// the loop is given away, in the scope the hook chose; on one loop and on
// two.
func TestSuspendHookSpawnsWithoutSwitching(t *testing.T) {
	for _, loops := range []int{1, 2} {
		var order []string
		mu := make(chan struct{}, 1)
		note := func(s string) { mu <- struct{}{}; order = append(order, s); <-mu }
		_, err := Run(func(main *Task) (struct{}, error) {
			var child *Promise[int]
			loophook.OnSuspend(main, hookFunc(func() {
				note("hook")
				child = Go(main, func(t *Task) (int, error) {
					note("child")
					return 7, nil
				})
				note("hook returns")
			}))
			note("sleeps")
			if err := main.Sleep(time.Millisecond); err != nil {
				return struct{}{}, err
			}
			note("woke")
			if child == nil {
				return struct{}{}, errors.New("no child")
			}
			v, err := child.Await(main)
			if v != 7 || err != nil {
				return struct{}{}, errors.New("the child's result was lost")
			}
			return struct{}{}, nil
		}, WithLoops(loops))
		if err != nil {
			t.Fatalf("loops=%d: %v", loops, err)
		}
		want := []string{"sleeps", "hook", "hook returns", "child", "woke"}
		if loops > 1 {
			// The child may be handed to the other loop and run after
			// main's short sleep; never before the hook returned.
			slices.Sort(order[3:])
			slices.Sort(want[3:])
		}
		if !slices.Equal(order, want) {
			t.Fatalf("loops=%d: order %v, want %v", loops, order, want)
		}
	}
}

// A spawn is itself a way of suspending: the hook runs first (its own
// task queued ahead of the spawned one), then the spawned child runs
// first, as Go promises.
func TestSuspendHookBeforeASpawn(t *testing.T) {
	var order []string
	Run(func(main *Task) (struct{}, error) {
		loophook.OnSuspend(main, hookFunc(func() {
			order = append(order, "hook")
			Go(main, func(t *Task) (int, error) { order = append(order, "hook's task"); return 0, nil })
		}))
		Go(main, func(t *Task) (int, error) { order = append(order, "child"); return 0, nil })
		order = append(order, "spawner")
		return struct{}{}, nil
	}, WithLoops(1))
	if want := []string{"hook", "hook's task", "child", "spawner"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// A CPU-bound task on a quiet loop never gives the loop away, but it runs
// long: its hook runs at a Checkpoint's slow path, and what the hook
// started then gets its turn within the switch interval.
func TestSuspendHookRunsAtACheckpointOfALongRun(t *testing.T) {
	_, err := Run(func(main *Task) (struct{}, error) {
		var ran atomic.Bool // with several loops, the task may be handed to another
		loophook.OnSuspend(main, hookFunc(func() {
			Go(main, func(t *Task) (int, error) { ran.Store(true); return 0, nil })
		}))
		deadline := time.Now().Add(10 * time.Second)
		for !ran.Load() {
			if time.Now().After(deadline) {
				return struct{}{}, errors.New("the hook's task never ran beside a Checkpointing task")
			}
			if err := main.Checkpoint(); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A hook must not suspend: that panics, loudly, and so does arming a hook
// from another task.
func TestSuspendHookMisuse(t *testing.T) {
	msg := catchPanic(func() {
		Run(func(main *Task) (struct{}, error) {
			loophook.OnSuspend(main, hookFunc(func() { main.Yield() }))
			return struct{}{}, main.Yield()
		})
	})
	if !strings.Contains(msg, "weft: a task suspended in its suspend hook") {
		t.Fatalf("a hook that suspended: panic %q", msg)
	}
	msg = catchPanic(func() {
		Run(func(main *Task) (struct{}, error) {
			p := Go(main, func(c *Task) (int, error) {
				loophook.OnSuspend(main, hookFunc(func() {}))
				return 0, nil
			})
			_, err := p.Await(main)
			return struct{}{}, err
		})
	})
	if !strings.Contains(msg, "weft:") || !strings.Contains(msg, "loophook.OnSuspend") {
		t.Fatalf("OnSuspend from another task: panic %q", msg)
	}
}

// catchPanic runs f and returns the message of its panic ("" if none).
func catchPanic(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				msg = e.Error()
			} else {
				msg, _ = r.(string)
			}
		}
	}()
	f()
	return ""
}
