package weft

import (
	"slices"
	"testing"
)

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

// takeAt removes exactly the element asked for, wherever the ring's head
// is, and keeps the others.
func TestQueueTakeAtRemovesTheElementAskedFor(t *testing.T) {
	for head := range 20 {
		var q queue[int]
		for range head { // move the head round the ring
			q.push(-1)
		}
		for range head {
			q.pop()
		}
		for i := range 10 {
			q.push(i)
		}
		want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		for _, i := range []int{3, 0, 7, 2, 5, 0, 1, 2, 0, 0} {
			v := q.takeAt(i)
			var got []int
			for j := range q.len() {
				got = append(got, q.at(j))
			}
			if !slices.Contains(want, v) {
				t.Fatalf("head %d: took %d, not in %v", head, v, want)
			}
			want = slices.DeleteFunc(want, func(x int) bool { return x == v })
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("head %d: after taking %d the queue holds %v, want %v", head, v, got, want)
			}
		}
		if q.len() != 0 {
			t.Fatalf("head %d: %d left", head, q.len())
		}
	}
}
