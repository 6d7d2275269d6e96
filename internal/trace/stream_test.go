package trace

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// jevent is a trace event as the tests read it back.
type jevent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   *uint64        `json:"id"`
	BP   string         `json:"bp"`
	S    string         `json:"s"`
	Args map[string]any `json:"args"`
}

// decode checks that data is a valid trace and returns its events.
func decode(t *testing.T, data []byte) []jevent {
	t.Helper()
	if err := Validate(data); err != nil {
		t.Fatalf("invalid trace: %v\n%s", err, data)
	}
	var doc struct {
		TraceEvents     []jevent `json:"traceEvents"`
		DisplayTimeUnit string   `json:"displayTimeUnit"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.DisplayTimeUnit != "ns" {
		t.Fatalf("displayTimeUnit %q", doc.DisplayTimeUnit)
	}
	return doc.TraceEvents
}

// only returns the events of phase ph, in order.
func only(evs []jevent, ph string) []jevent {
	var out []jevent
	for _, e := range evs {
		if e.Ph == ph {
			out = append(out, e)
		}
	}
	return out
}

// tslice is a task's slice as the tests read it, written as one X or as
// a B/E pair.
type tslice struct {
	name       string
	start, end float64 // µs
	reason     string
	pid, tid   int
}

// taskSlices returns the task slices of evs in order of their start.
func taskSlices(evs []jevent) []tslice {
	var out []tslice
	open := map[[2]int][]jevent{}
	for _, e := range evs {
		if e.Cat != "task" {
			continue
		}
		k := [2]int{e.Pid, e.Tid}
		reason, _ := e.Args["reason"].(string)
		switch e.Ph {
		case "X":
			end := math.Round((e.Ts+*e.Dur)*1000) / 1000
			out = append(out, tslice{e.Name, e.Ts, end, reason, e.Pid, e.Tid})
		case "B":
			open[k] = append(open[k], e)
		case "E":
			b := open[k][len(open[k])-1]
			open[k] = open[k][:len(open[k])-1]
			out = append(out, tslice{b.Name, b.Ts, e.Ts, reason, e.Pid, e.Tid})
		}
	}
	slices.SortStableFunc(out, func(a, b tslice) int { return cmp.Compare(a.start, b.start) })
	return out
}

func mainFn()  {}
func childFn() {}

func pcOf(f func()) uintptr { return reflect.ValueOf(f).Pointer() }

// smallProgram records, at base+ns, what a loop does running a main task
// (id+1) that starts a child (id+2); the child sleeps, offloads work and
// settles main's promise; main then finds a task to steal and finishes.
func smallProgram(b *Buffer, base int64, id uint32) {
	m, c := id+1, id+2
	b.Spawn(base, 0, m, pcOf(mainFn))
	b.SetName(base, m, "main")
	b.Resume(base+100, m)
	b.Spawn(base+200, m, c, pcOf(childFn))
	b.Suspend(base+300, m, Spawned)
	b.Resume(base+300, c)
	b.Suspend(base+400, c, WaitTimer)
	b.Resume(base+400, m)
	b.Suspend(base+500, m, WaitPromise)
	b.Poll(base+500, base+1_000_500, 0)
	b.TimerFired(base+1_000_500, c)
	b.Resume(base+1_000_600, c)
	b.Suspend(base+1_000_700, c, WaitExternal)
	b.Poll(base+1_000_700, base+1_002_700, 1)
	b.Offload(base+1_000_800, base+1_002_600, c, 0)
	b.WakeBy(base+1_002_700, FromOffload, c)
	b.Resume(base+1_002_800, c)
	b.Wake(base+1_002_900, c, m)
	b.Suspend(base+1_003_000, c, Finished)
	b.Resume(base+1_003_000, m)
	b.Steal(base+1_003_100, 1, 3)
	b.TimerFired(base+1_003_150, 0)
	b.Suspend(base+1_003_200, m, Finished)
}

// streamOf records the events rec makes on a stream and returns the JSON.
func streamOf(t *testing.T, rec func(r *Recorder)) []byte {
	t.Helper()
	var out bytes.Buffer
	r := NewStream(&out)
	rec(r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

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

// TestStreamKeepsLoopsAndRunsApart records two loops of one run and a loop
// of another run
// and checks each gets its own track and process.
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

func TestLanesHandOutTheLowestFreeLane(t *testing.T) {
	var l Lanes
	var got []int
	for range 70 {
		got = append(got, l.Take())
	}
	if got[0] != 0 || got[69] != 69 {
		t.Fatalf("lanes %v", got)
	}
	l.Put(3)
	l.Put(65)
	if a, b, c := l.Take(), l.Take(), l.Take(); a != 3 || b != 65 || c != 70 {
		t.Fatalf("after freeing 3 and 65: %d %d %d", a, b, c)
	}
}

// TestNewBufferRefusesRunZero checks the numbering NewBuffer asks for: a
// run 0 would be pid 0, which viewers treat as no process.
func TestNewBufferRefusesRunZero(t *testing.T) {
	r := NewRing(0, 0)
	defer r.Close()
	for _, c := range [][2]int{{0, 0}, {1, -1}} {
		func() {
			defer func() {
				if p, _ := recover().(string); !strings.HasPrefix(p, "weft: ") {
					t.Errorf("NewBuffer(%d, %d) did not panic with a weft: message: %q", c[0], c[1], p)
				}
			}()
			r.NewBuffer(c[0], c[1])
		}()
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
