package weft

import (
	"strconv"
	"testing"
)

var currentSink *Task

// BenchmarkCurrentTask measures currentTask (coro.Current and the job's
// task) called by a task, in Runs of 1 and 4 loops (the other loops
// idle).
func BenchmarkCurrentTask(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("loops="+strconv.Itoa(n), func(b *testing.B) {
			Run(func(t *Task) (struct{}, error) {
				for b.Loop() {
					currentSink = currentTask()
				}
				if currentSink != t {
					b.Fatal("currentTask in the main task is not the main task")
				}
				return struct{}{}, nil
			}, WithLoops(n))
		})
	}
}

// BenchmarkCurrentTaskPlain measures currentTask called by a plain
// goroutine while a Run of 1 or 4 loops is alive.
func BenchmarkCurrentTaskPlain(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("loops="+strconv.Itoa(n), func(b *testing.B) {
			Run(func(t *Task) (struct{}, error) {
				// Offload's goroutine is plain, and keeps the Run alive.
				return Offload(t, func() (struct{}, error) {
					b.ResetTimer()
					for range b.N {
						currentSink = currentTask()
					}
					if currentSink != nil {
						b.Error("currentTask in a plain goroutine is a task")
					}
					return struct{}{}, nil
				})
			}, WithLoops(n))
		})
	}
}

// BenchmarkChanPlainCache measures the check of SendWait and RecvWait that
// the caller is no task, repeated by one plain goroutine.
func BenchmarkChanPlainCache(b *testing.B) {
	c := NewChan[int](1)
	for b.Loop() {
		if !c.plain.Plain() {
			b.Fatal("a plain goroutine taken for a task")
		}
	}
}
