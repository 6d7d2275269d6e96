package coro

import (
	"runtime"
	"testing"
)

type gJob struct {
	c *Coro
	g uintptr
}

func (j *gJob) RunJob() { j.g = Getg() }

func TestGetgIdentifiesTheCoroutineGoroutine(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	c := New()
	defer c.Close()
	j := &gJob{c: c}
	c.Start(j)
	if j.g == 0 || j.g != c.G() || j.g == Getg() {
		t.Fatalf("coroutine g %x, recorded %x, caller %x", j.g, c.G(), Getg())
	}
}
