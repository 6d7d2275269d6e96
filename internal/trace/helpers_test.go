package trace

// Helpers shared by the package's tests: reading a trace back (decode,
// taskSlices), a small program to record, and a stream of it.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"reflect"
	"slices"
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

func mainFn() {}

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

const ms = int64(time.Millisecond)
