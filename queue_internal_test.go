package weft

import (
	"math/rand/v2"
	"testing"
)

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

func TestQueuePushFrontIsPoppedNext(t *testing.T) {
	var q queue[int]
	for i := 0; i < 20; i++ {
		q.push(i)
	}
	q.pop()
	q.pushFront(-1)
	for i := 0; i < 40; i++ {
		q.pushFront(-2 - i)
	}
	if v, _ := q.pop(); v != -41 {
		t.Fatalf("pop after pushFront = %d", v)
	}
	for q.len() > 20 {
		q.pop()
	}
	if v, _ := q.pop(); v != -1 {
		t.Fatalf("order lost across growth: %d", v)
	}
}

func TestQueueIsFIFOAcrossGrowth(t *testing.T) {
	var q queue[int]
	next := 0
	for i := 0; i < 1000; i++ {
		q.push(i)
		if i%3 == 0 {
			v, _ := q.pop()
			if v != next {
				t.Fatalf("pop %d, want %d", v, next)
			}
			next++
		}
	}
	for q.len() > 0 {
		v, _ := q.pop()
		if v != next {
			t.Fatalf("pop %d, want %d", v, next)
		}
		next++
	}
}
