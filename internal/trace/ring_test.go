package trace

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// snapshotOf takes a snapshot of r and returns its events, checked.
func snapshotOf(t *testing.T, r *Recorder, d time.Duration) []jevent {
	t.Helper()
	var out bytes.Buffer
	if err := r.WriteSnapshot(&out, d); err != nil {
		t.Fatal(err)
	}
	return decode(t, out.Bytes())
}

// span returns the first and the last time of evs (metadata aside).
func span(evs []jevent) (first, last float64) {
	first, last = -1, -1
	for _, e := range evs {
		if e.Ph == "M" {
			continue
		}
		if first < 0 || e.Ts < first {
			first = e.Ts
		}
		end := e.Ts
		if e.Dur != nil {
			end = math.Round((e.Ts+*e.Dur)*1000) / 1000
		}
		last = max(last, end)
	}
	return first, last
}

// held returns how many chunks the ring holds.
func held(r *Recorder) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ring.q) - r.ring.head
}

// TestRingKeepsRoughlyTheLastWindow records 100 s of slices, one a
// millisecond, into a ring that keeps 2 s, and checks that a snapshot
// starts between 2 s and 2 s plus one chunk before the newest event, and
// ends with it.
func TestRingKeepsRoughlyTheLastWindow(t *testing.T) {
	r := NewRing(2*time.Second, 1<<30)
	b := r.NewBuffer(1, 0)
	const n = 100_000
	for i := range int64(n) {
		b.Resume(i*ms, 1)
		b.Suspend(i*ms+ms/2, 1, Yield)
	}
	b.Publish()
	newest := float64((n-1)*ms+ms/2) / 1e3
	chunkSpan := float64(chunkRecords/2*ms) / 1e3 // two records a millisecond
	first, last := span(snapshotOf(t, r, 0))
	if last != newest {
		t.Errorf("snapshot ends at %v µs, want %v", last, newest)
	}
	if window := 2e6; first > newest-window || first < newest-window-chunkSpan {
		t.Errorf("snapshot starts at %v µs, want within a chunk (%v µs) before %v", first, chunkSpan, newest-window)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close, what the ring holds is still there.
	if _, last := span(snapshotOf(t, r, 0)); last != newest {
		t.Errorf("after Close the snapshot ends at %v µs", last)
	}
}

// TestRingBoundsItsMemory checks that a ring with no time limit keeps at
// most the chunks its memory bound allows, and the newest ones.
func TestRingBoundsItsMemory(t *testing.T) {
	r := NewRing(0, 4*chunkBytes)
	b := r.NewBuffer(1, 0)
	for i := range int64(50 * chunkRecords) {
		b.Resume(2*i, 1)
		b.Suspend(2*i+1, 1, Yield)
	}
	if h := held(r); h != 4 {
		t.Fatalf("holds %d chunks, want 4", h)
	}
	evs := snapshotOf(t, r, 0)
	// 4 chunks and the current one, which the last record filled (it is
	// handed off at the next record).
	if n := len(taskSlices(evs)); n != 5*chunkRecords/2 {
		t.Fatalf("%d slices, want %d", n, 5*chunkRecords/2)
	}
	if _, last := span(evs); last != float64(2*50*chunkRecords-1)/1e3 {
		t.Fatalf("the newest event is missing: last at %v", last)
	}
}

// TestRingSnapshotOfTheLastD takes snapshots of the last second of a task
// that runs for 10 s, polling: the slice is cut at the snapshot's start,
// and ends at the newest event while it runs, at its end after.
func TestRingSnapshotOfTheLastD(t *testing.T) {
	r := NewRing(time.Hour, 1<<30)
	b := r.NewBuffer(1, 0)
	b.Spawn(0, 0, 1, 0)
	b.SetName(0, 1, "cruncher")
	b.Resume(0, 1)
	for i := range int64(10_000) {
		b.Poll(i*ms, i*ms+ms/4, 0)
	}
	check := func(newest int64, reason string, polls int) {
		t.Helper()
		b.Publish() // as the loop does before it blocks
		wantEnd := float64(newest) / 1e3
		evs := snapshotOf(t, r, time.Second)
		ss := taskSlices(evs)
		if len(ss) != 1 || ss[0].name != "cruncher" {
			t.Fatalf("slices %+v", ss)
		}
		from := float64(newest-int64(time.Second)) / 1e3
		if s := ss[0]; s.start != from || s.end != wantEnd || s.reason != reason {
			t.Errorf("slice from %v to %v (%v), want %v to %v (%s)", s.start, s.end, s.reason, from, wantEnd, reason)
		}
		n := 0
		for _, p := range only(evs, "X") {
			if p.Cat != "poll" {
				continue
			}
			if n++; p.Ts < from {
				t.Fatalf("poll at %v, before the snapshot's start %v", p.Ts, from)
			}
		}
		if n != polls {
			t.Errorf("%d polls, want %d", n, polls)
		}
	}
	// The newest event is the last poll (at its start): the second before
	// it holds 1001 polls.
	check(9_999*ms, "running", 1001)
	b.Suspend(9_999*ms+ms/2, 1, Preempted)
	check(9_999*ms+ms/2, "preempted", 1000)
}

// TestRingNamesTasksWhoseStartWasDropped checks that a snapshot names a
// task after the name or function recorded before the window, and that
// the ring forgets a task once the end of it is dropped too.
func TestRingNamesTasksWhoseStartWasDropped(t *testing.T) {
	r := NewRing(time.Second, 1<<30)
	b := r.NewBuffer(1, 0)
	b.Spawn(0, 0, 1, 0)
	b.SetName(0, 1, "worker")
	b.Spawn(0, 1, 2, pcOf(childFn))
	b.Spawn(0, 1, 3, pcOf(childFn))
	b.Resume(1, 3)
	b.Suspend(2, 3, Finished)
	for i := range int64(20_000) {
		b.Resume(i*ms, 1+uint32(i%2))
		b.Suspend(i*ms+1, 1+uint32(i%2), Yield)
	}
	b.Publish()
	names := map[string]int{}
	for _, s := range taskSlices(snapshotOf(t, r, 0)) {
		names[s.name]++
	}
	if len(names) != 2 || names["worker"] == 0 || names["trace.childFn"] == 0 {
		t.Fatalf("slice names %v", names)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ring.tasks[key(1, 3)]; ok || len(r.ring.tasks) != 2 {
		t.Fatalf("the ring remembers %v; task 3 finished long ago", r.ring.tasks)
	}
}

// TestRingSnapshotMergesLoopsByTime records a spawn on one loop whose
// child runs on another (stolen), with the second loop's buffer made
// first, and checks that the arrow between the loops is drawn.
func TestRingSnapshotMergesLoopsByTime(t *testing.T) {
	r := NewRing(time.Hour, 1<<30)
	thief, victim := r.NewBuffer(1, 1), r.NewBuffer(1, 0)
	victim.Resume(10, 1)
	victim.Spawn(20, 1, 2, pcOf(childFn))
	victim.Suspend(30, 1, WaitPromise)
	thief.Steal(40, 0, 1)
	thief.Resume(50, 2)
	thief.Suspend(60, 2, Finished)
	thief.Publish()
	victim.Publish()
	evs := snapshotOf(t, r, 0)
	s, f := only(evs, "s"), only(evs, "f")
	if len(s) != 1 || len(f) != 1 || *s[0].ID != *f[0].ID || s[0].Tid != 1 || f[0].Tid != 2 || f[0].Ts != 0.05 {
		t.Fatalf("arrow: start %+v end %+v", s, f)
	}
}

// TestRingSnapshotIsTheSameForTheSameEvents fills two rings alike and
// checks their snapshots are byte for byte the same.
func TestRingSnapshotIsTheSameForTheSameEvents(t *testing.T) {
	snap := func() []byte {
		r := NewRing(50*time.Millisecond, 1<<30)
		a, b := r.NewBuffer(1, 0), r.NewBuffer(1, 1)
		for i := range 300 {
			smallProgram(a, int64(i)*2_000_000, uint32(4*i))
			smallProgram(b, int64(i)*2_000_000+7, uint32(4*i+2))
		}
		a.Publish()
		b.Publish()
		var out bytes.Buffer
		if err := r.WriteSnapshot(&out, 0); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	x, y := snap(), snap()
	if !bytes.Equal(x, y) {
		t.Fatal("two snapshots of the same events differ")
	}
	decode(t, x)
}

// TestRingSnapshotWhileTheLoopRecords takes snapshots from one goroutine
// while another records as fast as it can into a ring small enough that
// it drops chunks all the time, including ones a snapshot is reading.
// Each snapshot must be valid and hold slices; the race detector checks
// the hand-off.
func TestRingSnapshotWhileTheLoopRecords(t *testing.T) {
	r := NewRing(0, 3*chunkBytes)
	b := r.NewBuffer(1, 0)
	b.Resume(0, 1) // so that even the first snapshot has a slice
	b.Suspend(0, 1, Yield)
	b.Publish()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the loop
		defer wg.Done()
		defer b.Close()
		for i := int64(4); ; i += 4 {
			select {
			case <-stop:
				return
			default:
			}
			id := uint32(i/4%50) + 1
			if id == 1 {
				b.SetName(i, 1, "main")
			}
			b.Spawn(i, 0, id, pcOf(childFn))
			b.Resume(i+1, id)
			b.Poll(i+1, i+2, 1)
			b.Suspend(i+3, id, WaitFD)
		}
	}()
	for range 8 {
		if evs := snapshotOf(t, r, 0); len(taskSlices(evs)) == 0 {
			t.Error("a snapshot without slices")
		}
	}
	close(stop)
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRingSnapshotSeesTheCurrentChunk checks that events not yet handed
// off are in a snapshot once published: by the buffer itself every 16
// records, and by Publish.
func TestRingSnapshotSeesTheCurrentChunk(t *testing.T) {
	r := NewRing(time.Second, 1<<20)
	b := r.NewBuffer(1, 0)
	b.Resume(5, 1)
	b.Suspend(9, 1, WaitTimer)
	if bs := taskSlices(snapshotOf(t, r, 0)); len(bs) != 0 {
		t.Fatalf("unpublished slices in a snapshot: %+v", bs)
	}
	b.Publish()
	if bs := taskSlices(snapshotOf(t, r, 0)); len(bs) != 1 || bs[0].start != 0.005 {
		t.Fatalf("after Publish: slices %+v", bs)
	}
	for i := range int64(15) { // 2 + 30 records: published at the 32nd
		b.Resume(10+2*i, 1)
		b.Suspend(11+2*i, 1, Yield)
	}
	if bs := taskSlices(snapshotOf(t, r, 0)); len(bs) != 16 {
		t.Fatalf("after 32 records: %d slices, want 16", len(bs))
	}
}

func TestWriteSnapshotNeedsARing(t *testing.T) {
	r := NewStream(&bytes.Buffer{})
	defer r.Close()
	if err := r.WriteSnapshot(&bytes.Buffer{}, 0); !errors.Is(err, ErrNotRing) {
		t.Fatalf("WriteSnapshot on a stream: %v", err)
	}
}
