package coro

import "testing"

type nopJob struct{}

func (nopJob) RunJob() {}

func BenchmarkStartFinish(b *testing.B) {
	c := New()
	defer c.Close()
	for b.Loop() {
		c.Start(nopJob{})
	}
}

// allocJob is about as large as a task cell: its size is the point.
type allocJob struct{ _ [300]byte }

func (*allocJob) RunJob() {}

var sink *allocJob

func BenchmarkStartFinishAlloc320(b *testing.B) {
	c := New()
	defer c.Close()
	for b.Loop() {
		j := &allocJob{}
		sink = j
		c.Start(j)
	}
}

func BenchmarkResumeSuspend(b *testing.B) {
	c := New()
	defer c.Close()
	c.Start(&loopJob{c: c})
	for b.Loop() {
		c.Resume()
	}
}

type loopJob struct{ c *Coro }

func (j *loopJob) RunJob() {
	for j.c.Suspend() {
	}
}

func BenchmarkRunningOutside(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if Running() {
			b.Fatal("Running outside a Coro")
		}
	}
}
