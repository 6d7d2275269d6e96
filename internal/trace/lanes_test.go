package trace

import "testing"

func TestLanesHandOutTheLowestFreeLane(t *testing.T) {
	var l Lanes
	var got []int
	for range 70 {
		got = append(got, l.Take())
	}
	if got[0] != 0 || got[69] != 69 {
		t.Fatalf("lanes %v", got)
	}
	l.Put(3)
	l.Put(65)
	if a, b, c := l.Take(), l.Take(), l.Take(); a != 3 || b != 65 || c != 70 {
		t.Fatalf("after freeing 3 and 65: %d %d %d", a, b, c)
	}
}
