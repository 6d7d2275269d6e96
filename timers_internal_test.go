package weft

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// A weak timer that keeps re-arming itself does not hide a deadlock, in
// real or virtual time.
func TestWeakTimerDoesNotHideADeadlock(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithVirtualTime(time.Unix(0, 0))}} {
		fired := 0
		_, err := Run(func(wt *Task) (int, error) {
			l := wt.loop
			tm := &timer{index: -1, weak: true}
			tm.fn = func() {
				fired++
				tm.when = l.deadline(int64(time.Millisecond))
				l.timers.push(tm)
			}
			tm.when = l.deadline(int64(time.Millisecond))
			l.timers.push(tm)
			if l.timers.strong() != 0 || l.timers.len() != 1 {
				t.Errorf("strong %d, len %d", l.timers.strong(), l.timers.len())
			}
			never, _ := NewPromise[int]()
			return never.Await(wt)
		}, opts...)
		var d *DeadlockError
		if !errors.As(err, &d) {
			t.Fatalf("Run = %v, want a deadlock", err)
		}
	}
}

func TestTimerHeapCountsWeakTimers(t *testing.T) {
	var h timerHeap
	a, b, c := &timer{when: 3, weak: true}, &timer{when: 1}, &timer{when: 2, weak: true}
	h.push(a)
	h.push(b)
	h.push(c)
	if h.strong() != 1 {
		t.Fatalf("strong = %d", h.strong())
	}
	h.remove(a)
	h.remove(a) // not in the heap: no change
	if h.strong() != 1 || h.len() != 2 {
		t.Fatalf("after removing a weak timer: strong %d, len %d", h.strong(), h.len())
	}
	h.remove(b)
	if h.strong() != 0 || h.len() != 1 {
		t.Fatalf("after removing the strong timer: strong %d, len %d", h.strong(), h.len())
	}
}

func TestTimerHeapOrdersByDeadlineThenFIFO(t *testing.T) {
	var h timerHeap
	rng := rand.New(rand.NewPCG(1, 2))
	var all []*timer
	for i := 0; i < 2000; i++ {
		tm := &timer{when: int64(rng.IntN(50))}
		all = append(all, tm)
		h.push(tm)
	}
	// Remove a third at random, as cancelled sleeps do.
	removed := map[*timer]bool{}
	for i := 0; i < len(all)/3; i++ {
		tm := all[rng.IntN(len(all))]
		if h.remove(tm) == removed[tm] {
			t.Fatalf("remove reported %v for a timer removed=%v", !removed[tm], removed[tm])
		}
		removed[tm] = true
	}
	var prev *timer
	for h.len() > 0 {
		tm := h.peek()
		h.remove(tm)
		if removed[tm] {
			t.Fatal("removed timer came back")
		}
		if prev != nil && (tm.when < prev.when || (tm.when == prev.when && tm.seq < prev.seq)) {
			t.Fatalf("out of order: %d/%d after %d/%d", tm.when, tm.seq, prev.when, prev.seq)
		}
		prev = tm
	}
}
