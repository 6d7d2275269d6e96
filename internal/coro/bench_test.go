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
