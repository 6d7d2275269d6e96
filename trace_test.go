package weft_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/trace"
)

// traceProgram is a small program: main names itself, starts a sleeper
// and a yielder, hands work to Offload if offload is set, and awaits them.
func traceProgram(offload bool) func(t *weft.Task) (int, error) {
	return func(t *weft.Task) (int, error) {
		t.SetName("boss")
		s := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("sleeper")
			return 1, t.Sleep(5 * time.Millisecond)
		})
		y := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("yielder")
			for range 3 {
				if err := t.Yield(); err != nil {
					return 0, err
				}
			}
			return 2, nil
		})
		if offload {
			if _, err := weft.Offload(t, func() (int, error) { return 3, nil }); err != nil {
				return 0, err
			}
		}
		if _, err := s.Await(t); err != nil {
			return 0, err
		}
		return y.Await(t)
	}
}

type traceEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

// TestTraceOfASmallProgramValidatesAndHoldsItsEvents records a trace and
// checks it against the trace-event format and for the events the
// program must produce.
func TestTraceOfASmallProgramValidatesAndHoldsItsEvents(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1")
	var out bytes.Buffer
	// Virtual time: the Offload holds the clock still, so the sleeper is
	// still asleep when main awaits it, however slow the machine is.
	if _, err := weft.Run(traceProgram(true), weft.WithTrace(&out), weft.WithVirtualTime(time.Unix(0, 0))); err != nil {
		t.Fatal(err)
	}
	data := out.Bytes()
	if err := trace.Validate(data); err != nil {
		t.Fatalf("the trace is not valid: %v\n%s", err, data)
	}
	var doc struct{ TraceEvents []traceEvent }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{`"boss"`, `"sleeper"`, `"yielder"`, "wait timer", "wait promise", "wait external", "yield", "spawn", "finished", "timer", "offload"} {
		if !strings.Contains(s, want) {
			t.Errorf("the trace has no %s", want)
		}
	}
	phases := map[string]int{}
	for _, e := range doc.TraceEvents {
		phases[e.Ph]++
	}
	if phases["s"] == 0 || phases["f"] == 0 {
		t.Errorf("the trace has no flow arrows (phases %v)", phases)
	}
	if phases["X"]+phases["B"] < 8 {
		t.Errorf("the trace has too few slices for 3 tasks switching (phases %v)", phases)
	}
}

// TestTraceUnderVirtualTimeIsTheSameTwice: a run on a virtual clock gives
// the same bytes each time.
func TestTraceUnderVirtualTimeIsTheSameTwice(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1")
	run := func() []byte {
		var out bytes.Buffer
		if _, err := weft.Run(traceProgram(false), weft.WithTrace(&out), weft.WithVirtualTime(time.Unix(0, 0))); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs on a virtual clock gave different traces:\n%s\n%s", a, b)
	}
	if !strings.Contains(string(a), `"ts":5000`) {
		t.Errorf("the sleeper's wake is not at virtual 5 ms:\n%s", a)
	}
}

// TestTraceOnSeveralLoopsValidates: every loop records on its own track.
func TestTraceOnSeveralLoopsValidates(t *testing.T) {
	var out bytes.Buffer
	var ranOn [2]atomic.Bool
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		var ps []*weft.Promise[int]
		for range 8 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
				// CPU-bound, with Checkpoints: the idle loop takes some.
				for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
					if err := t.Checkpoint(); err != nil {
						return 0, err
					}
					ranOn[t.Loop()].Store(true)
				}
				return 0, nil
			}))
		}
		for _, p := range ps {
			p.Await(t)
		}
		return 0, nil
	}, weft.WithTrace(&out), weft.WithLoops(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Validate(out.Bytes()); err != nil {
		t.Fatalf("the trace is not valid: %v", err)
	}
	if !ranOn[0].Load() || !ranOn[1].Load() {
		t.Fatal("the CPU-bound tasks did not run on both loops")
	}
	if !strings.Contains(out.String(), `"loop 0"`) || !strings.Contains(out.String(), `"loop 1"`) {
		t.Errorf("the trace does not have a track per loop:\n%.3000s", out.String())
	}
}

func TestWithTraceNilIsAnError(t *testing.T) {
	_, err := weft.Run(func(t *weft.Task) (int, error) { return 0, nil }, weft.WithTrace(nil))
	if err == nil || !strings.HasPrefix(err.Error(), "weft:") {
		t.Fatalf("Run with WithTrace(nil) returned %v, want a weft: error", err)
	}
}

// TestFlightRecorderKeepsTheLastEvents: a Run with the flight recorder
// leaves its events for WriteFlightRecord.
func TestFlightRecorderKeepsTheLastEvents(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1")
	if _, err := weft.Run(traceProgram(false), weft.WithFlightRecorder(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := weft.WriteFlightRecord(&out, 0); err != nil {
		t.Fatal(err)
	}
	if err := trace.Validate(out.Bytes()); err != nil {
		t.Fatalf("the flight record is not valid: %v", err)
	}
	if !strings.Contains(out.String(), `"yielder"`) {
		t.Errorf("the flight record lacks the run's tasks:\n%s", out.String())
	}
}
