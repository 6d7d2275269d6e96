package weft_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestAllReturnsValuesInPromiseOrder(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[string]
		for _, x := range []struct {
			s string
			d time.Duration
		}{{"a", 20}, {"b", 5}, {"c", 10}} {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
				wt.Sleep(x.d * time.Millisecond)
				return x.s, nil
			}))
		}
		vals, err := weft.All(wt, ps...)
		if err != nil || strings.Join(vals, "") != "abc" {
			t.Fatalf("All = %v, %v", vals, err)
		}
		if vals, err := weft.All[string](wt); err != nil || len(vals) != 0 {
			t.Fatalf("All() = %v, %v", vals, err)
		}
	})
}

func TestAllReturnsTheFirstFailureInCompletionOrder(t *testing.T) {
	errSlow, errFast := errors.New("slow"), errors.New("fast")
	run(t, func(wt *weft.Task) {
		slow := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(40 * time.Millisecond)
			return 0, errSlow
		})
		fast := weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.Sleep(10 * time.Millisecond)
			return 0, errFast
		})
		ok := weft.Go(wt, func(wt *weft.Task) (int, error) { return 1, nil })
		_, err := weft.All(wt, slow, fast, ok)
		if err != errFast {
			t.Fatalf("All = %v, want the fast failure", err)
		}
		if slow.Settled() {
			t.Fatal("All waited for the slower failure")
		}
		slow.Await(wt) // observe it, so Run reports nothing
	})
}

func TestRaceReturnsTheFirstAndLeavesTheOthersRunning(t *testing.T) {
	finished := 0
	run(t, func(wt *weft.Task) {
		mk := func(name string, d time.Duration) *weft.Promise[string] {
			return weft.Go(wt, func(wt *weft.Task) (string, error) {
				wt.Sleep(d)
				finished++
				return name, nil
			})
		}
		v, err := weft.Race(wt, mk("tortoise", 30*time.Millisecond), mk("hare", 5*time.Millisecond))
		if v != "hare" || err != nil {
			t.Fatalf("Race = %q, %v", v, err)
		}
		if finished != 1 {
			t.Fatalf("%d finished when the race was decided", finished)
		}
	})
	if finished != 2 {
		t.Fatalf("the loser did not run on: %d finished", finished)
	}
}

func TestRaceOfSettledPromisesPicksTheFirstArgument(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, settleA := weft.NewPromise[int]()
		b, settleB := weft.NewPromise[int]()
		settleB(2, nil)
		settleA(1, nil)
		if v, _ := weft.Race(wt, a, b); v != 1 {
			t.Fatalf("Race = %d", v)
		}
		if _, err := weft.Race[int](wt); err == nil {
			t.Fatal("Race() returned no error")
		}
	})
}
