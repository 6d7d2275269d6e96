package trace

import "testing"

// TestRecordingDoesNotAllocate checks that recording, hand-offs included,
// allocates nothing once the ring has its chunks.
func TestRecordingDoesNotAllocate(t *testing.T) {
	r := NewRing(0, 4*chunkBytes)
	b := r.NewBuffer(1, 0)
	var ts int64
	round := func() {
		for range chunkRecords {
			ts++
			b.Spawn(ts, 1, 2, 0)
			b.Resume(ts, 2)
			b.Wake(ts, 2, 1)
			b.Suspend(ts, 2, Finished)
			b.SetName(ts, 1, "main")
		}
	}
	for range 10 {
		round()
	}
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("%v allocations per %d events", n, 5*chunkRecords)
	}
	if h := held(r); h != 4 {
		t.Fatalf("holds %d chunks, want 4", h)
	}
}
