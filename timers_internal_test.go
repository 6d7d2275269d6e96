package weft

import (
	"errors"
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
