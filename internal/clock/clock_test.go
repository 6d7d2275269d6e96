package clock

import (
	"testing"
	"time"
)

func TestVirtualClockMovesOnlyForwardAndOnlyWhenAdvanced(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewVirtual(start)
	if !c.Now().Equal(start) || c.Nanotime() != 0 || !c.Virtual() {
		t.Fatalf("new clock reads %v / %d", c.Now(), c.Nanotime())
	}
	c.AdvanceTo(int64(time.Hour))
	c.AdvanceTo(int64(time.Minute)) // back in time: ignored
	if c.Nanotime() != int64(time.Hour) || !c.Now().Equal(start.Add(time.Hour)) {
		t.Fatalf("after advancing: %v / %d", c.Now(), c.Nanotime())
	}
}

func TestRealClockIsMonotonic(t *testing.T) {
	c := NewReal()
	a := c.Nanotime()
	time.Sleep(time.Millisecond)
	if b := c.Nanotime(); b <= a || c.Virtual() {
		t.Fatalf("real clock went from %d to %d", a, b)
	}
	c.AdvanceTo(1 << 60) // a real clock cannot be moved
	if c.Nanotime() > int64(time.Hour) {
		t.Fatal("AdvanceTo moved a real clock")
	}
	if d := time.Since(c.Now()); d < -time.Second || d > time.Second {
		t.Fatalf("Now is %v off the wall clock", d)
	}
}
