package trace

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestStreamKeepsLoopsAndRunsApart records two loops of one run and a loop
// of another run and checks each gets its own track and process.
func TestStreamKeepsLoopsAndRunsApart(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) {
		a, b, c := r.NewBuffer(1, 0), r.NewBuffer(1, 1), r.NewBuffer(2, 0)
		smallProgram(a, 0, 0)
		smallProgram(b, 0, 10)
		smallProgram(c, 0, 0) // the same task ids, in another run
	}))
	tracks := map[string]int{}
	for _, s := range taskSlices(evs) {
		tracks[fmt.Sprintf("%d/%d", s.pid, s.tid)]++
	}
	if !reflect.DeepEqual(tracks, map[string]int{"1/1": 6, "1/2": 6, "2/1": 6}) {
		t.Fatalf("slices per track: %v", tracks)
	}
	var procs []string
	for _, e := range only(evs, "M") {
		if e.Name == "process_name" {
			procs = append(procs, e.Args["name"].(string))
		}
	}
	if !slices.Equal(procs, []string{"weft run 1", "weft run 2"}) {
		t.Fatalf("processes %q", procs)
	}
}

// TestStreamCloseEndsOpenSlices checks that a task still running when the
// stream closes (a run cut short) ends at the last event, so the document
// stays valid.
func TestStreamCloseEndsOpenSlices(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) {
		b := r.NewBuffer(1, 0)
		b.Resume(1000, 4)
		b.Poll(2000, 3000, 0)
	}))
	ss := taskSlices(evs)
	if len(ss) != 1 || ss[0].start != 1 || ss[0].end != 2 || ss[0].reason != "running" || ss[0].name != "task 4" {
		t.Fatalf("slices %+v", ss)
	}
}

// TestStreamNamesTasks checks where slice names come from: a name set
// with SetName (kept even when many are set in one chunk), else the
// function, else the id; and that any string makes valid JSON.
func TestStreamNamesTasks(t *testing.T) {
	odd := "a \"quoted\"\n\\ name\x01\u2028 \xff é"
	evs := decode(t, streamOf(t, func(r *Recorder) {
		b := r.NewBuffer(1, 0)
		b.Spawn(0, 0, 1, pcOf(childFn))
		b.Resume(1, 1)
		b.Suspend(2, 1, Yield)
		b.SetName(3, 1, odd)
		b.Resume(4, 1)
		b.Suspend(5, 1, Yield)
		b.Resume(6, 9) // never spawned: named by its id
		b.Suspend(7, 9, Finished)
		for i := range 3 * chunkStrings {
			id := uint32(100 + i)
			b.SetName(int64(10+i), id, fmt.Sprint("n", i))
			b.Resume(int64(10+i), id)
			b.Suspend(int64(10+i), id, Finished)
		}
	}))
	var names []string
	for _, s := range taskSlices(evs) {
		names = append(names, s.name)
	}
	want := []string{"trace.childFn", strings.ToValidUTF8(odd, "\uFFFD"), "task 9"}
	for i := range 3 * chunkStrings {
		want = append(want, fmt.Sprint("n", i))
	}
	if !slices.Equal(names, want) {
		t.Fatalf("names\n%q, want\n%q", names, want)
	}
}

// TestTimesAreMicrosecondsWithNanosecondDecimals checks the ts format.
func TestTimesAreMicrosecondsWithNanosecondDecimals(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 1: "0.001", 1500: "1.5", 1234567: "1234.567", 1000: "1", -2500: "-2.5", 120: "0.12"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("%d ns: %q, want %q", ns, got, want)
		}
	}
}

// TestStreamLeavesOutAnArrowWhoseEndWentBy hands a stream the chunk of
// the loop where a child ran before the chunk of the loop that spawned it
// (as a steal between loops could): the arrow must be left out, not bound
// to the child's next slice.
func TestStreamLeavesOutAnArrowWhoseEndWentBy(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) {
		spawner, thief := r.NewBuffer(1, 0), r.NewBuffer(1, 1)
		thief.Resume(50, 2)
		thief.Suspend(60, 2, Yield)
		thief.Resume(80, 2)
		thief.Suspend(90, 2, WaitTimer)
		thief.Flush()
		spawner.Resume(10, 1)
		spawner.Spawn(20, 1, 2, 0)
		spawner.Suspend(30, 1, WaitPromise)
		spawner.Flush()
	}))
	if s, f := only(evs, "s"), only(evs, "f"); len(s) != 0 || len(f) != 0 {
		t.Fatalf("arrow drawn: %+v %+v", s, f)
	}
	if n := len(taskSlices(evs)); n != 3 {
		t.Fatalf("%d slices, want 3", n)
	}
}

// TestStreamRepairsSlicesThatDoNotPair feeds records that do not pair up
// (a resume while a slice is open, a suspend of another task, a suspend
// with nothing open): the trace must stay valid, each odd slice shown
// where it cannot overlap another.
func TestStreamRepairsSlicesThatDoNotPair(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) {
		b := r.NewBuffer(1, 0)
		b.Poll(0, 5, 0)
		b.Suspend(10, 1, Yield) // nothing open: began at the first record
		b.Resume(20, 2)
		b.Resume(30, 3)         // 2 never ended
		b.Suspend(40, 4, Yield) // 3 is open, not 4
		b.Suspend(50, 5, Yield)
	}))
	type slice struct {
		task       string
		start, end float64 // ns
		reason     string
	}
	var got []slice
	for _, s := range taskSlices(evs) {
		got = append(got, slice{s.name, math.Round(s.start * 1000), math.Round(s.end * 1000), s.reason})
	}
	want := []slice{
		{"task 1", 0, 10, "yield"},
		{"task 2", 20, 30, "?"},
		{"task 3", 30, 40, "?"},
		{"task 4", 40, 40, "yield"},
		{"task 5", 40, 50, "yield"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slices\n%v, want\n%v", got, want)
	}
}

// TestStreamWritesABusySliceAsBeginAndEnd checks both ways a slice is
// written: as one X followed by the events inside it, or, when more than
// a few KB happen inside it, as a B and an E around them.
func TestStreamWritesABusySliceAsBeginAndEnd(t *testing.T) {
	evs := decode(t, streamOf(t, func(r *Recorder) {
		b := r.NewBuffer(1, 0)
		b.Resume(0, 1)
		b.Poll(1, 2, 0)
		b.Suspend(3, 1, Yield)
		b.Resume(10, 2)
		for i := range int64(1000) {
			b.Poll(11+2*i, 12+2*i, 1)
		}
		b.Suspend(5000, 2, Preempted)
	}))
	var phases []string
	for _, e := range evs {
		if e.Cat == "task" || (e.Cat == "poll" && len(phases) < 6) {
			phases = append(phases, e.Ph+" "+e.Name)
		}
	}
	want := []string{"X task 1", "X poll", "B task 2", "X poll", "X poll", "X poll"}
	if !slices.Equal(phases[:6], want) || phases[len(phases)-1] != "E task 2" {
		t.Fatalf("events %q..., want %q ... E task 2", phases[:6], want)
	}
	if n := len(only(evs, "X")); n != 1+1+1000 {
		t.Fatalf("%d complete events, want 1002", n)
	}
	if ss := taskSlices(evs); len(ss) != 2 || ss[1].start != 0.01 || ss[1].end != 5 || ss[1].reason != "preempted" {
		t.Fatalf("slices %+v", ss)
	}
}
