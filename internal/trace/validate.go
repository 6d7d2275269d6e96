package trace

// Validation against the trace-event format: what Perfetto and
// chrome://tracing need in order to show a JSON trace as it was meant.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// maxProblems bounds the problems Validate reports about one document.
const maxProblems = 20

// phases lists the event phases of the trace-event format.
var phases = map[string]bool{
	"B": true, "E": true, "X": true, // duration events
	"i": true, "I": true, // instants ("I" is the old spelling)
	"C": true,                       // counters
	"b": true, "e": true, "n": true, // async (nestable)
	"S": true, "T": true, "p": true, "F": true, // async (old)
	"s": true, "t": true, "f": true, // flows
	"P": true,                       // samples
	"N": true, "O": true, "D": true, // objects
	"M": true,            // metadata
	"V": true, "v": true, // memory dumps
	"R": true,            // marks
	"c": true,            // clock sync
	"(": true, ")": true, // contexts
}

// Validate checks that data is a trace in the trace-event format, as a
// JSON object with a traceEvents array or as a bare array of events, and
// returns the problems it found (at most 20, joined), or nil. It checks:
//
//   - every event is an object with a known phase "ph", and no object
//     has a key twice;
//   - the fields each phase needs: "name" (all but E), "ts" (all but M),
//     "pid", and "tid" (all but process metadata and process- or
//     global-scoped instants), "dur" for X, "id" for flows, "args" for M
//     (with "name" for process_name and thread_name, and "sort_index" for
//     the sort indexes);
//   - numbers are finite and durations non-negative;
//   - no two tracks become one in Perfetto, which reads tid 0 as the pid;
//   - B and E pair up on each track (pid, tid) in timestamp order, and the
//     slices of a track (B/E pairs and X events) nest: two slices either
//     do not overlap or one contains the other;
//   - each flow (by cat, name and id) starts with "s" and its "t" and "f"
//     come no earlier; "s", "t" and an "f" with "bp":"e" lie inside a
//     slice of their track, and an "f" without it has a slice beginning at
//     or after it, or the viewer has nothing to bind the arrow to.
func Validate(data []byte) error {
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("trace: not JSON: %w", err)
	}
	var raw []any
	switch v := top.(type) {
	case []any:
		raw = v
	case map[string]any:
		evs, ok := v["traceEvents"].([]any)
		if !ok {
			return errors.New("trace: the object has no traceEvents array")
		}
		raw = evs
		if u, ok := v["displayTimeUnit"]; ok && u != "ms" && u != "ns" {
			return fmt.Errorf("trace: displayTimeUnit is %v, not \"ms\" or \"ns\"", u)
		}
	default:
		return errors.New("trace: neither an object nor an array")
	}
	v := validator{}
	v.duplicateKeys(data)
	v.check(raw)
	return errors.Join(v.problems...)
}

// duplicateKeys reports objects that have a key twice: JSON readers
// disagree on which one counts.
func (v *validator) duplicateKeys(data []byte) {
	d := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		keys   map[string]bool // nil for an array
		expect bool            // the next token in this object is a key
	}
	var stack []level
	for {
		tok, err := d.Token()
		if err != nil {
			return // the end, or a syntax error Unmarshal has reported
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].keys != nil && stack[top].expect {
			if k, ok := tok.(string); ok {
				if stack[top].keys[k] {
					v.addf("an object has the key %q twice (at byte %d)", k, d.InputOffset())
				}
				stack[top].keys[k] = true
				stack[top].expect = false
				continue
			}
		}
		if top >= 0 && stack[top].keys != nil && !stack[top].expect {
			stack[top].expect = true // this token is a value (or starts one)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{keys: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// vevent is an event as the validator sees it.
type vevent struct {
	i        int // index in traceEvents
	ph       string
	name     string
	cat      string
	ts, dur  int64  // ns, rounded from µs as Perfetto reads them
	track    string // pid and tid
	id       string // flows
	bindSelf bool   // "bp":"e"
}

// interval is a slice on a track: a B/E pair or an X event.
type interval struct {
	start, end int64 // ns
	i          int   // the index of the event that began it
}

type validator struct {
	problems []error
	dropped  int
}

func (v *validator) addf(format string, args ...any) {
	if len(v.problems) >= maxProblems {
		v.dropped++
		return
	}
	v.problems = append(v.problems, fmt.Errorf("trace: "+format, args...))
}

func (v *validator) check(raw []any) {
	var evs []vevent
	for i, r := range raw {
		if e, ok := v.event(i, r); ok {
			evs = append(evs, e)
		}
	}
	v.tidZero(evs)
	byTrack := map[string][]vevent{}
	var tracks []string // in order of first appearance, for stable reports
	flows := map[string][]vevent{}
	var flowKeys []string
	for _, e := range evs {
		switch e.ph {
		case "B", "E", "X":
			if _, ok := byTrack[e.track]; !ok {
				tracks = append(tracks, e.track)
			}
			byTrack[e.track] = append(byTrack[e.track], e)
		case "s", "t", "f":
			k := e.cat + "\x00" + e.name + "\x00" + e.id
			if _, ok := flows[k]; !ok {
				flowKeys = append(flowKeys, k)
			}
			flows[k] = append(flows[k], e)
		}
	}
	slicesOf := map[string]*trackSlices{}
	for _, tr := range tracks {
		slicesOf[tr] = newTrackSlices(v.nesting(tr, byTrack[tr]))
	}
	for _, k := range flowKeys {
		v.flow(flows[k], slicesOf)
	}
	if v.dropped > 0 {
		v.problems = append(v.problems, fmt.Errorf("trace: and %d more problems", v.dropped))
	}
}

// tidZero reports tracks that Perfetto would merge: it reads tid 0 as
// the pid, so (pid P, tid 0) and (pid P, tid P) become one track.
func (v *validator) tidZero(evs []vevent) {
	used := map[string]bool{}
	for _, e := range evs {
		if e.ph != "M" {
			used[e.track] = true
		}
	}
	for _, e := range evs {
		pid, tid, _ := strings.Cut(e.track, "/")
		if e.ph == "M" || tid != "n0" || pid == "n0" || !strings.HasPrefix(pid, "n") || !used[e.track] {
			continue
		}
		if used[pid+"/"+pid] {
			v.addf("event %d: tid 0 of pid %s is read as tid %s, so two tracks become one", e.i, pid[1:], pid[1:])
		}
		delete(used, e.track) // once per track
	}
}

// event checks one event's fields and returns what the later checks need.
func (v *validator) event(i int, r any) (vevent, bool) {
	m, ok := r.(map[string]any)
	if !ok {
		v.addf("event %d is not an object", i)
		return vevent{}, false
	}
	ph, _ := m["ph"].(string)
	if !phases[ph] {
		v.addf("event %d: unknown phase %q", i, m["ph"])
		return vevent{}, false
	}
	e := vevent{i: i, ph: ph}
	bad := false
	problem := func(format string, args ...any) {
		v.addf("event %d (ph %s): "+format, append([]any{i, ph}, args...)...)
		bad = true
	}
	e.name, ok = m["name"].(string)
	if !ok && ph != "E" {
		problem("no name")
	}
	e.cat, _ = m["cat"].(string)
	if ph != "M" {
		ts, ok := number(m["ts"])
		if !ok {
			problem("no numeric ts")
		}
		e.ts = nanos(ts)
	}
	pid, ok := ident(m["pid"])
	if !ok {
		problem("no pid")
	}
	tid, ok := ident(m["tid"])
	scope, _ := m["s"].(string)
	needTid := !(ph == "M" && (e.name == "process_name" || e.name == "process_sort_index" || e.name == "process_labels")) &&
		!((ph == "i" || ph == "I") && (scope == "g" || scope == "p"))
	if !ok && needTid {
		problem("no tid")
	}
	e.track = pid + "/" + tid
	if a, has := m["args"]; has {
		if _, ok := a.(map[string]any); !ok {
			problem("args is not an object")
		}
	}
	switch ph {
	case "X":
		if dur, ok := number(m["dur"]); !ok {
			problem("no numeric dur")
		} else if dur < 0 {
			problem("negative dur %v", dur)
		} else {
			e.dur = nanos(dur)
		}
	case "i", "I":
		if s, has := m["s"]; has && s != "g" && s != "p" && s != "t" {
			problem("scope %v is not g, p or t", s)
		}
	case "s", "t", "f":
		if e.id, ok = ident(m["id"]); !ok {
			problem("no id")
		}
		if bp, has := m["bp"]; has {
			if bp != "e" {
				problem("bp is %v, not \"e\"", bp)
			}
			e.bindSelf = true
		}
	case "M":
		args, _ := m["args"].(map[string]any)
		if args == nil {
			problem("no args")
			break
		}
		switch e.name {
		case "process_name", "thread_name":
			if _, ok := args["name"].(string); !ok {
				problem("%s without a string args.name", e.name)
			}
		case "process_sort_index", "thread_sort_index":
			if _, ok := number(args["sort_index"]); !ok {
				problem("%s without a numeric args.sort_index", e.name)
			}
		}
	}
	return e, !bad
}

// nesting pairs the B and E events of one track, checks that its slices
// nest, and returns them sorted by start.
func (v *validator) nesting(track string, evs []vevent) []interval {
	slices.SortStableFunc(evs, func(a, b vevent) int { return cmp.Compare(a.ts, b.ts) })
	var open []vevent
	var ivs []interval
	for _, e := range evs {
		switch e.ph {
		case "B":
			open = append(open, e)
		case "E":
			if len(open) == 0 {
				v.addf("event %d (ph E) on track %s ends no slice", e.i, track)
				continue
			}
			b := open[len(open)-1]
			open = open[:len(open)-1]
			ivs = append(ivs, interval{b.ts, e.ts, b.i})
		case "X":
			ivs = append(ivs, interval{e.ts, e.ts + e.dur, e.i})
		}
	}
	for _, b := range open {
		v.addf("event %d (ph B, %q) on track %s is never ended", b.i, b.name, track)
	}
	// Sorted by start, the longer first, each slice must fit in the
	// innermost slice still open at its start, or begin after it ends.
	slices.SortStableFunc(ivs, func(a, b interval) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(b.end, a.end)
	})
	var stack []interval
	for _, s := range ivs {
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.start <= s.start && s.end <= top.end {
				break
			}
			if top.end <= s.start {
				stack = stack[:len(stack)-1]
				continue
			}
			v.addf("on track %s, the slice of event %d [%d, %d] ns overlaps the slice of event %d [%d, %d] ns without nesting",
				track, s.i, s.start, s.end, top.i, top.start, top.end)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, s)
	}
	return ivs
}

// flow checks the events of one flow (one cat, name and id).
func (v *validator) flow(evs []vevent, slicesOf map[string]*trackSlices) {
	slices.SortStableFunc(evs, func(a, b vevent) int { return cmp.Compare(a.ts, b.ts) })
	started := false
	for _, e := range evs {
		switch e.ph {
		case "s":
			if started {
				v.addf("event %d: flow %q id %s starts again before it finished", e.i, e.name, e.id)
			}
			started = true
		case "t", "f":
			if !started {
				v.addf("event %d (ph %s): flow %q id %s has no start at or before it", e.i, e.ph, e.name, e.id)
			}
			if e.ph == "f" {
				started = false
			}
		}
		ts := slicesOf[e.track]
		if e.ph == "f" && !e.bindSelf {
			if !ts.beginsAtOrAfter(e.ts) {
				v.addf("event %d (ph f): no slice begins at or after it on track %s to bind flow %q to", e.i, e.track, e.name)
			}
		} else if !ts.encloses(e.ts) {
			v.addf("event %d (ph %s): no slice on track %s encloses it to bind flow %q to", e.i, e.ph, e.track, e.name)
		}
	}
}

// trackSlices answers where a track's slices are, for binding flows.
type trackSlices struct {
	ivs    []interval // sorted by start
	maxEnd []int64    // maxEnd[i]: the latest end among ivs[:i+1]
}

func newTrackSlices(ivs []interval) *trackSlices {
	t := &trackSlices{ivs: ivs, maxEnd: make([]int64, len(ivs))}
	for i, s := range ivs {
		t.maxEnd[i] = s.end
		if i > 0 {
			t.maxEnd[i] = max(s.end, t.maxEnd[i-1])
		}
	}
	return t
}

// encloses reports whether a slice contains the time ts.
func (t *trackSlices) encloses(ts int64) bool {
	if t == nil {
		return false
	}
	// The slices that start at or before ts are ivs[:n].
	n, _ := slices.BinarySearchFunc(t.ivs, ts, func(s interval, ts int64) int {
		if s.start <= ts {
			return -1
		}
		return 1
	})
	return n > 0 && t.maxEnd[n-1] >= ts
}

// beginsAtOrAfter reports whether a slice starts at ts or later.
func (t *trackSlices) beginsAtOrAfter(ts int64) bool {
	return t != nil && len(t.ivs) > 0 && t.ivs[len(t.ivs)-1].start >= ts
}

// nanos converts a time in µs to integer ns as Perfetto does, so that
// slices that meet in the document meet here too.
func nanos(us float64) int64 { return int64(math.Round(us * 1000)) }

// number returns x as a float64 if it is a finite JSON number.
func number(x any) (float64, bool) {
	f, ok := x.(float64)
	return f, ok && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// ident returns a pid, tid or id, which may be a number or a string, as a
// string.
func ident(x any) (string, bool) {
	switch x := x.(type) {
	case float64:
		return "n" + fmt.Sprint(x), true
	case string:
		return "s" + x, true
	}
	return "", false
}
