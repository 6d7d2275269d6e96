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

type allocJob struct{ pad [300]byte }

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
