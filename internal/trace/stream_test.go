package trace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestStreamHoldsTheEventsOfASmallProgram checks every event the small
// program's trace must have: slices named after their tasks and ended
// with their reasons, arrows from spawner and waker to the woken slice,
// polls, timers, the offload lane, the steal and the track names.
func TestStreamHoldsTheEventsOfASmallProgram(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) { smallProgram(r.NewBuffer(1, 0), 0, 0) }))

	type slice struct {
		name string
		ts   float64
	}
	var begins []slice
	var reasons []string
	for _, s := range taskSlices(evs) {
		if s.pid != 1 || s.tid != 1 { // loop 0 is tid 1
			t.Errorf("slice on pid %d tid %d", s.pid, s.tid)
		}
		begins = append(begins, slice{s.name, s.start})
		reasons = append(reasons, s.reason)
	}
	child := "trace.childFn"
	wantBegins := []slice{{"main", 0.1}, {child, 0.3}, {"main", 0.4}, {child, 1000.6}, {child, 1002.8}, {"main", 1003}}
	if !slices.Equal(begins, wantBegins) {
		t.Errorf("slices begin\n%v, want\n%v", begins, wantBegins)
	}
	wantReasons := []string{"spawn", "wait timer", "wait promise", "wait external", "finished", "finished"}
	if !slices.Equal(reasons, wantReasons) {
		t.Errorf("slices end with %q, want %q", reasons, wantReasons)
	}

	// Arrows: each start has the end with its id, at the woken slice.
	type arrow struct {
		name     string
		from, to float64
	}
	starts := map[uint64]jevent{}
	for _, e := range only(evs, "s") {
		starts[*e.ID] = e
	}
	var arrows []arrow
	for _, e := range only(evs, "f") {
		s, ok := starts[*e.ID]
		if !ok || e.BP != "e" || s.Name != e.Name || s.Cat != "flow" {
			t.Errorf("flow end %+v has start %+v", e, s)
		}
		arrows = append(arrows, arrow{e.Name, s.Ts, e.Ts})
	}
	wantArrows := []arrow{{"spawn", 0.2, 0.3}, {"wake", 1000.5, 1000.6}, {"wake", 1002.7, 1002.8}, {"wake", 1002.9, 1003}}
	if !slices.Equal(arrows, wantArrows) {
		t.Errorf("arrows %v, want %v", arrows, wantArrows)
	}

	type complete struct {
		name, cat string
		ts, dur   float64
		tid       int
	}
	var xs []complete
	for _, e := range only(evs, "X") {
		if e.Cat != "task" {
			xs = append(xs, complete{e.Name, e.Cat, e.Ts, *e.Dur, e.Tid})
		}
	}
	wantXs := []complete{
		{"poll", "poll", 0.5, 1000, 1},
		{"timer", "loop", 1000.5, 0, 1},
		{"poll", "poll", 1000.7, 2, 1},
		{child, "offload", 1000.8, 1.8, 1000},
		{"offload done", "loop", 1002.7, 0, 1},
		{"timer", "loop", 1003.15, 0, 1},
	}
	if !slices.Equal(xs, wantXs) {
		t.Errorf("complete events\n%v, want\n%v", xs, wantXs)
	}
	instants := only(evs, "i")
	if len(instants) != 2 || instants[0].Name != "name" || instants[0].Args["name"] != "main" ||
		instants[1].Name != "steal" || instants[1].Args["from"] != "loop 1" || instants[1].Args["tasks"] != 3.0 {
		t.Errorf("instants %+v", instants)
	}
	meta := map[string]bool{}
	for _, e := range only(evs, "M") {
		if n, ok := e.Args["name"].(string); ok {
			meta[fmt.Sprintf("%s %d/%d %s", e.Name, e.Pid, e.Tid, n)] = true
		}
	}
	for _, m := range []string{"process_name 1/0 weft run 1", "thread_name 1/1 loop 0", "thread_name 1/1000 loop 0 offload 0"} {
		if !meta[m] {
			t.Errorf("no metadata %q in %v", m, meta)
		}
	}
}

// TestStreamIsTheSameForTheSameEvents records a program big enough to
// fill several chunks twice, as a run under a virtual clock would, and
// checks that the two documents are byte for byte the same.
func TestStreamIsTheSameForTheSameEvents(t *testing.T) {
	rec := func(r *Recorder) {
		b := r.NewBuffer(3, 0)
		for i := range 500 { // 23 records each: about 11 chunks
			smallProgram(b, int64(i)*2_000_000, uint32(2*i))
		}
	}
	a, b := streamOf(t, rec), streamOf(t, rec)
	if !bytes.Equal(a, b) {
		t.Fatal("two streams of the same events differ")
	}
	evs := decode(t, a)
	if n := len(taskSlices(evs)); n != 500*6 {
		t.Fatalf("%d slices, want %d", n, 500*6)
	}
}

// signalWriter reports its first write on a channel.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() == 0 {
		close(w.first)
	}
	return w.buf.Write(p)
}

// TestStreamWritesFullChunksBeforeClose checks that a long run's events
// reach the writer while it runs, not only at Close.
func TestStreamWritesFullChunksBeforeClose(t *testing.T) {
	w := &signalWriter{first: make(chan struct{})}
	r := NewStream(w)
	b := r.NewBuffer(1, 0)
	for i := range 2 * chunkRecords {
		b.Resume(int64(2*i), 1)
		b.Suspend(int64(2*i+1), 1, Yield)
	}
	select {
	case <-w.first:
	case <-time.After(10 * time.Second):
		t.Error("nothing written before Close")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(taskSlices(decode(t, w.buf.Bytes()))); n != 2*chunkRecords {
		t.Fatalf("%d slices, want %d", n, 2*chunkRecords)
	}
}

type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write(p []byte) (int, error) { return 0, errDiskFull }

// TestStreamCloseReportsTheWriteError checks that a failed write is
// Close's error, every time it is called, and that the loops are not held
// up by it.
func TestStreamCloseReportsTheWriteError(t *testing.T) {
	r := NewStream(failWriter{})
	b := r.NewBuffer(1, 0)
	for i := range 200 * chunkRecords { // more than the backlog
		b.Resume(int64(i), 1)
	}
	if err := r.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("second Close: %v", err)
	}
}
