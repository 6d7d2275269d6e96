package trace

import (
	"io"
	"testing"
)

// BenchmarkRecord measures recording one event (a Resume or a Suspend),
// hand-offs included, into a stream and into a ring. A stream's writer
// goroutine encodes to io.Discard meanwhile; since it encodes slower than
// a loop that does nothing but record, "stream" measures the writer's
// pace (the backlog makes the loop wait for it), and "stream-loop-side"
// what the loop pays when the writer keeps up. The caller's clock read is
// not included.
func BenchmarkRecord(b *testing.B) {
	run := func(b *testing.B, r *Recorder) {
		buf := r.NewBuffer(1, 0)
		for i := range 64 * chunkRecords { // fill a ring: recycling from now on
			buf.Resume(int64(i), 1)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if i&1 == 0 {
				buf.Resume(int64(i), 1)
			} else {
				buf.Suspend(int64(i), 1, Yield)
			}
		}
		b.StopTimer()
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("stream", func(b *testing.B) { run(b, NewStream(io.Discard)) })
	b.Run("stream-loop-side", func(b *testing.B) { run(b, discardingStream()) })
	b.Run("ring", func(b *testing.B) { run(b, NewRing(0, 1<<20)) })
}

// discardingStream returns a stream Recorder whose writer recycles chunks
// without encoding them, so that recording into it costs what a loop
// pays when the writer keeps up.
func discardingStream() *Recorder {
	r := &Recorder{maxFree: streamBacklog + 8, full: make(chan *chunk, streamBacklog), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for c := range r.full {
			r.recycle(c)
		}
	}()
	return r
}

// BenchmarkRecordSpawnAwait records what a spawn and await of a task that
// returns at once makes: the spawn, the parent's suspend, the child's
// slice and the parent's resume, into a ring.
func BenchmarkRecordSpawnAwait(b *testing.B) {
	r := NewRing(0, 1<<20)
	buf := r.NewBuffer(1, 0)
	spawnAwait := func(i int) {
		ts, child := int64(i), uint32(i)+2
		buf.Spawn(ts, 1, child, 0)
		buf.Suspend(ts, 1, Spawned)
		buf.Resume(ts, child)
		buf.Suspend(ts, child, Finished)
		buf.Resume(ts, 1)
	}
	for i := range 64 * chunkRecords { // fill the ring: recycling from now on
		spawnAwait(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		spawnAwait(i)
	}
	b.StopTimer()
	r.Close()
}

// BenchmarkEncode measures writing one record as JSON (off the loop).
func BenchmarkEncode(b *testing.B) {
	r := NewRing(0, 1<<30)
	buf := r.NewBuffer(1, 0)
	for i := range 64 * chunkRecords {
		smallProgram(buf, int64(i)*2_000_000, uint32(2*i))
	}
	records := 64 * chunkRecords * 23
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.WriteSnapshot(io.Discard, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
}

// BenchmarkEncodeSwitches measures writing the records of task switches
// (a Resume and a Suspend a slice), the bulk of a busy loop's trace.
func BenchmarkEncodeSwitches(b *testing.B) {
	r := NewRing(0, 1<<30)
	buf := r.NewBuffer(1, 0)
	buf.Spawn(0, 0, 1, 0)
	buf.SetName(0, 1, "ping")
	buf.Spawn(0, 0, 2, 0)
	buf.SetName(0, 2, "pong")
	n := 64 * chunkRecords
	for i := range n / 2 {
		id := uint32(1 + i%2)
		buf.Resume(int64(100*i), id)
		buf.Suspend(int64(100*i+37), id, Yield)
	}
	buf.Publish()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.WriteSnapshot(io.Discard, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
