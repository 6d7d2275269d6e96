package trace

// The encoder turns records into trace-event JSON. It runs off the loops
// (on the stream's writer goroutine, or in WriteSnapshot), so it may take
// its time: maps, strings, function names.
//
// What a record becomes:
//
//	Resume and    one "X" named after the task, cat "task", with args.task
//	Suspend       and args.reason, written at the suspend; then the "f"
//	              (bp "e") of the arrow that made it runnable, if any, and
//	              the events inside the slice (a slice with more than 4 KB
//	              of them inside is written as "B" and "E" instead)
//	Spawn         an arrow ("s", cat "flow", name "spawn") from the parent's
//	              slice to the child's first slice
//	Wake          an arrow named "wake" from the waker's slice
//	WakeBy        a zero-length "X" on the loop's track named after the
//	              source ("timer", "fd ready", ...), which anchors the arrow
//	Poll          "X" named "poll", cat "poll", args.events
//	Steal         "i" named "steal", args.from and args.tasks
//	Offload       "X" named after the task, cat "offload", on the track
//	              of its lane
//	SetName       "i" named "name", args.task and args.name
//
// An arrow needs a slice to start in: when no task slice is open (a wake
// from outside any task), a zero-length "X" named "spawn" or "wake" is
// written as its anchor. The encoder writes events in the order of the
// records, so the same records give the same bytes: it never ranges over
// a map to write, and reads no clock.

import (
	"io"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Track ids. Loop i's track is tid i+1, and lane j of its offload work is
// offloadTid(i, j). No track is tid 0: Perfetto reads a tid of 0 as the
// pid, which would put loop 0 on the track of the loop whose tid is the
// run number.
const offloadTidBase = 1000

func loopTid(loop int) int { return loop + 1 }

func offloadTid(loop, lane int) int { return offloadTidBase*(loop+1) + lane }

// taskKey names a task across runs: run<<32 | task id.
type taskKey uint64

func key(run int, task uint32) taskKey { return taskKey(uint64(uint32(run))<<32 | uint64(task)) }

// taskInfo is what names a task: its name if it was given one, else its
// function. (The encoder keeps the name as a JSON string, the ring as
// it was set.)
type taskInfo struct {
	name string
	fn   uintptr

	// The encoder's: when it last saw the task resume, and the strings
	// its slices are written with (made at its first slice, and again
	// after its name changes).
	resumed int64
	ran     bool    // resumed is set
	arrow   pending // the arrow toward its next slice; id 0 if none
	qname   string  // its name as a JSON string
	xhead   string  // {"name":...,"cat":"task","ph":"X","ts": (from its second slice)
	xargs   string  // ,"args":{"task":N,"reason":
}

// trackKey names a track: pid and tid.
type trackKey struct{ pid, tid int }

// track is the encoder's state of one track.
type track struct {
	pid, tid int
	name     string // the thread_name
	written  bool   // its metadata has been written
	ids      string // its pid and tid as JSON members, once written
	loop     bool   // a loop's track (task slices), not an offload lane
	first    int64  // the first record's time
	last     int64  // the latest record's time
	free     int64  // when the last slice written ended

	// The open task slice of a loop's track. A slice is written as one X
	// when it ends, with the events inside it after the X (so that a
	// viewer that sorts by time, stably, meets the slice before them even
	// at equal times); one with too much inside is written as B and E.
	open   bool
	task   uint32
	slice  string // its name (a JSON string)
	xhead  string // its X's head and args (see taskInfo)
	xargs  string
	since  int64  // when it began, or when this encoding first saw it
	shown  bool   // it is in the output, from start
	start  int64  // where the output shows it from: since, or the output's start
	begun  bool   // its B has been written (see spill)
	inner  []byte // the events inside it, to write after its X
	innerN int    // how many
}

// pending is an arrow whose start is written (or was skipped) and whose
// end waits for the woken task's next slice.
type pending struct {
	id      uint64 // from 1
	name    string // "spawn" or "wake", as a JSON string
	written bool   // the start was written: the end may be
}

// flushAt is how many bytes the encoder gathers before it writes them.
const flushAt = 60 << 10

type encoder struct {
	w     io.Writer
	buf   []byte // where events are written: main, or cur's inner events
	main  []byte // the output not yet written, while buf is elsewhere
	cur   *track // whose inner events buf is; nil: the output
	err   error
	count int   // events written
	from  int64 // records before it update the state but are not written

	tasks   map[taskKey]taskInfo
	tracks  map[trackKey]*track
	order   []*track // tracks in order of first use
	procs   map[int]bool
	fnNames map[uintptr]string
	flows   uint64
}

func newEncoder(w io.Writer, from int64) *encoder {
	return &encoder{
		w:       w,
		buf:     make([]byte, 0, flushAt+4<<10),
		from:    from,
		tasks:   map[taskKey]taskInfo{},
		tracks:  map[trackKey]*track{},
		procs:   map[int]bool{},
		fnNames: map[uintptr]string{},
	}
}

// start writes the head of the document.
func (e *encoder) start() { e.buf = append(e.buf, `{"traceEvents":[`...) }

// finish ends the slices still open at their track's last time and writes
// the tail of the document.
func (e *encoder) finish() {
	for _, tr := range e.order {
		if tr.open && tr.last >= e.from {
			e.on(tr)
			e.end(tr, tr.last, running)
		}
	}
	e.buf = append(e.buf, "\n],\"displayTimeUnit\":\"ns\"}\n"...)
	e.flush()
}

// flush writes the buffered output, keeping the first error. buf must be
// the output (cur nil).
func (e *encoder) flush() {
	if len(e.buf) == 0 {
		return
	}
	if e.err == nil {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// chunk encodes the first n records of c.
func (e *encoder) chunk(c *chunk, n int) {
	b := c.src
	tr := e.track(b.run, loopTid(b.loop), true)
	for i := range n {
		e.record(b, tr, c, &c.recs[i])
	}
}

// merge encodes views (grouped by buffer, each group in order) merged by
// time across buffers, ties going to the buffer created first: the order
// the events happened in, so that an arrow's start is met before its end
// even when they are on different loops.
func (e *encoder) merge(views []view) {
	type cursor struct {
		vs []view // the group's remaining views
		i  int    // the next record in vs[0]
		tr *track
	}
	var cs []*cursor
	for i := 0; i < len(views); {
		j := i + 1
		for j < len(views) && views[j].c.src == views[i].c.src {
			j++
		}
		b := views[i].c.src
		cs = append(cs, &cursor{vs: views[i:j], tr: e.track(b.run, loopTid(b.loop), true)})
		i = j
	}
	for len(cs) > 0 {
		best := 0
		for k := 1; k < len(cs); k++ {
			if cs[k].vs[0].c.recs[cs[k].i].ts < cs[best].vs[0].c.recs[cs[best].i].ts {
				best = k
			}
		}
		cur := cs[best]
		v := cur.vs[0]
		e.record(v.c.src, cur.tr, v.c, &v.c.recs[cur.i])
		if cur.i++; cur.i == v.n {
			cur.i = 0
			if cur.vs = cur.vs[1:]; len(cur.vs) == 0 {
				cs = append(cs[:best], cs[best+1:]...)
			}
		}
	}
}

// record encodes one record of buffer b, whose loop track is tr.
func (e *encoder) record(b *Buffer, tr *track, c *chunk, r *record) {
	if tr.first == minTime {
		tr.first = r.ts
	}
	tr.last = max(tr.last, r.ts)
	show := r.ts >= e.from
	switch r.kind {
	case kResume:
		if tr.open { // a slice never ended: end it here
			if show {
				e.on(tr)
				e.end(tr, r.ts, 0)
			}
			tr.open, tr.shown, tr.begun = false, false, false
		}
		k := key(b.run, r.a)
		t := e.tasks[k]
		if t.ran { // its second slice or later: worth making its strings
			e.sliceStrings(&t, r.a)
		} else if t.qname == "" {
			t.qname = e.nameOf(t, r.a)
		}
		t.resumed, t.ran = r.ts, true
		p := t.arrow
		t.arrow = pending{}
		e.tasks[k] = t
		tr.open, tr.task, tr.since = true, r.a, r.ts
		tr.slice, tr.xhead, tr.xargs = t.qname, t.xhead, t.xargs
		if show {
			e.on(tr)
		}
		if p.id != 0 {
			if show && p.written {
				e.head(p.name, flowEnd, r.ts, tr)
				e.buf = append(e.buf, `,"id":`...)
				e.buf = strconv.AppendUint(e.buf, p.id, 10)
				e.buf = append(e.buf, '}')
			}
		}
	case kSuspend:
		if !tr.open || tr.task != r.a {
			if tr.open && show { // the open one never ended: end it here
				e.on(tr)
				e.end(tr, r.ts, 0)
			}
			// It began before what this encoding sees: show it from the
			// track's first record, or the end of its last slice.
			tr.open, tr.task, tr.since = true, r.a, max(tr.first, tr.free)
			t := e.tasks[key(b.run, r.a)]
			if t.qname == "" {
				t.qname = e.nameOf(t, r.a)
			}
			tr.slice, tr.xhead, tr.xargs = t.qname, t.xhead, t.xargs
		}
		if show {
			e.on(tr)
			e.end(tr, r.ts, Reason(r.x))
		}
		tr.open, tr.shown, tr.begun = false, false, false
		if Reason(r.x) == Finished {
			delete(e.tasks, key(b.run, r.a))
		}
	case kSpawn:
		k := key(b.run, r.b)
		t := e.tasks[k]
		t.fn = uintptr(r.arg)
		t.qname, t.xhead, t.xargs = "", "", ""
		e.tasks[k] = t
		if r.a != 0 {
			e.arrow(tr, r.ts, show, `"spawn"`, r.b, k)
		}
	case kName:
		k := key(b.run, r.a)
		t := e.tasks[k]
		t.name = string(appendString(nil, c.strs[r.x-1]))
		t.qname, t.xhead, t.xargs = "", "", ""
		e.tasks[k] = t
		if show {
			e.on(tr)
			e.head(`"name"`, taskInstant, r.ts, tr)
			e.buf = append(e.buf, `,"args":{"task":`...)
			e.buf = strconv.AppendUint(e.buf, uint64(r.a), 10)
			e.buf = append(e.buf, `,"name":`...)
			e.buf = append(e.buf, t.name...)
			e.buf = append(e.buf, "}}"...)
		}
	case kWake:
		e.arrow(tr, r.ts, show, `"wake"`, r.b, key(b.run, r.b))
	case kWakeBy:
		src := quotedSources[min(r.x, uint8(numSources))]
		if show {
			e.on(tr)
			e.head(src, loopComplete, r.ts, tr)
			e.buf = append(e.buf, `,"dur":0`...)
			if r.b != 0 {
				e.buf = append(e.buf, `,"args":{"task":`...)
				e.buf = strconv.AppendUint(e.buf, uint64(r.b), 10)
				e.buf = append(e.buf, '}')
			}
			e.buf = append(e.buf, '}')
		}
		if r.b != 0 {
			// The X just written anchors the arrow.
			e.flowStart(tr, r.ts, show, `"wake"`, key(b.run, r.b))
		}
	case kPoll:
		if show {
			e.on(tr)
			e.head(`"poll"`, pollComplete, r.ts, tr)
			e.buf = append(e.buf, `,"dur":`...)
			e.buf = appendMicros(e.buf, int64(r.arg))
			e.buf = append(e.buf, `,"args":{"events":`...)
			e.buf = strconv.AppendUint(e.buf, uint64(r.a), 10)
			e.buf = append(e.buf, "}}"...)
		}
	case kSteal:
		if show {
			e.on(tr)
			e.head(`"steal"`, loopInstant, r.ts, tr)
			e.buf = append(e.buf, `,"args":{"from":"loop `...)
			e.buf = strconv.AppendUint(e.buf, uint64(r.a), 10)
			e.buf = append(e.buf, `","tasks":`...)
			e.buf = strconv.AppendUint(e.buf, uint64(r.b), 10)
			e.buf = append(e.buf, "}}"...)
		}
	case kOffload:
		if show {
			e.switchTo(nil)
			lane := e.track(b.run, offloadTid(b.loop, int(r.b)), false)
			if lane.name == "" {
				lane.name = "loop " + strconv.Itoa(b.loop) + " offload " + strconv.Itoa(int(r.b))
			}
			e.head(e.taskName(key(b.run, r.a), r.a), offloadComplete, r.ts, lane)
			e.buf = append(e.buf, `,"dur":`...)
			e.buf = appendMicros(e.buf, int64(r.arg))
			e.buf = append(e.buf, `,"args":{"task":`...)
			e.buf = strconv.AppendUint(e.buf, uint64(r.a), 10)
			e.buf = append(e.buf, "}}"...)
		}
	}
	if e.cur != nil && len(e.buf) > innerMax {
		e.spill(e.cur)
	}
	e.switchTo(nil)
	if len(e.buf) > flushAt {
		e.flush()
	}
}

// arrow starts an arrow named name (quoted) on tr toward woken's next
// slice: from the open slice, or from a zero-length anchor of the same
// name if none is open.
func (e *encoder) arrow(tr *track, ts int64, show bool, name string, woken uint32, k taskKey) {
	if show {
		e.on(tr)
		if !tr.open {
			e.head(name, loopComplete, ts, tr)
			e.buf = append(e.buf, `,"dur":0,"args":{"task":`...)
			e.buf = strconv.AppendUint(e.buf, uint64(woken), 10)
			e.buf = append(e.buf, "}}"...)
		}
	}
	e.flowStart(tr, ts, show, name, k)
}

// flowStart writes the "s" of an arrow toward the task k, inside the
// slice that encloses ts on tr, and leaves its end pending.
//
// If the task has already been seen to resume after ts, the arrow's end
// has gone by (its loop's chunk reached a stream first): the arrow is
// left out rather than bound to a later slice. (If the task has even
// finished, the start is written and never ended; viewers drop it.)
func (e *encoder) flowStart(tr *track, ts int64, show bool, name string, k taskKey) {
	e.flows++
	t := e.tasks[k]
	if t.ran && t.resumed > ts {
		return
	}
	p := pending{id: e.flows, name: name, written: show}
	if show {
		e.head(name, flowStart, ts, tr)
		e.buf = append(e.buf, `,"id":`...)
		e.buf = strconv.AppendUint(e.buf, p.id, 10)
		e.buf = append(e.buf, '}')
	}
	t.arrow = p
	e.tasks[k] = t
}

// on makes ready to write an event on tr, a loop's track, at a time the
// output shows. The open slice, if any, is shown from then on (from the
// output's start if it began before), and unless its B is written the
// event goes to the slice's inner events, written after the slice's X.
func (e *encoder) on(tr *track) {
	if tr.open && !tr.shown {
		tr.shown = true
		tr.start = max(tr.since, e.from)
	}
	if tr.open && !tr.begun {
		e.switchTo(tr)
	} else {
		e.switchTo(nil)
	}
}

// switchTo makes the inner events of t (nil: the output itself) where
// events are written.
func (e *encoder) switchTo(t *track) {
	if e.cur == t {
		return
	}
	if e.cur == nil {
		e.main = e.buf
	} else {
		e.cur.inner = e.buf
	}
	if t == nil {
		e.buf = e.main
	} else {
		e.buf = t.inner
	}
	e.cur = t
}

// end writes the end of tr's open slice, shown, at ts: an X with the
// inner events after it, or the E of a slice whose B was written.
func (e *encoder) end(tr *track, ts int64, reason Reason) {
	quoted := quotedReasons[min(reason, numReasons)]
	e.switchTo(nil)
	tr.free = ts
	if tr.begun {
		e.head(tr.slice, sliceEnd, ts, tr)
		e.buf = append(e.buf, `,"args":{"reason":`...)
		e.buf = append(e.buf, quoted...)
		e.buf = append(e.buf, "}}"...)
	} else if tr.xhead == "" {
		e.head(tr.slice, sliceComplete, tr.start, tr)
		e.buf = append(e.buf, `,"dur":`...)
		e.buf = appendMicros(e.buf, ts-tr.start)
		e.buf = append(e.buf, `,"args":{"task":`...)
		e.buf = strconv.AppendUint(e.buf, uint64(tr.task), 10)
		e.buf = append(e.buf, `,"reason":`...)
		e.buf = append(e.buf, quoted...)
		e.buf = append(e.buf, "}}"...)
	} else {
		// The hottest event of all, from strings made once per task.
		e.meta(tr)
		e.sep()
		e.buf = append(e.buf, tr.xhead...)
		e.buf = appendMicros(e.buf, tr.start)
		e.buf = append(e.buf, tr.ids...)
		e.buf = append(e.buf, `,"dur":`...)
		e.buf = appendMicros(e.buf, ts-tr.start)
		e.buf = append(e.buf, tr.xargs...)
		e.buf = append(e.buf, quoted...)
		e.buf = append(e.buf, "}}"...)
	}
	if !tr.begun {
		e.buf = append(e.buf, tr.inner...)
		e.count += tr.innerN
		tr.inner, tr.innerN = tr.inner[:0], 0
	}
	tr.open, tr.shown, tr.begun = false, false, false
}

// spill writes the B of tr's open slice and the inner events so far, when
// they grow past innerMax: the slice then ends with an E, and memory
// stays bounded however much happens inside one slice.
func (e *encoder) spill(tr *track) {
	e.switchTo(nil)
	e.head(tr.slice, sliceBegin, tr.start, tr)
	e.buf = append(e.buf, `,"args":{"task":`...)
	e.buf = strconv.AppendUint(e.buf, uint64(tr.task), 10)
	e.buf = append(e.buf, "}}"...)
	e.buf = append(e.buf, tr.inner...)
	e.count += tr.innerN
	tr.inner, tr.innerN = tr.inner[:0], 0
	tr.begun = true
}

// innerMax bounds the inner events kept for one slice (see spill).
const innerMax = 4 << 10

// track returns the state of the track (run, tid), made on first use.
func (e *encoder) track(run, tid int, loop bool) *track {
	k := trackKey{run, tid}
	if tr, ok := e.tracks[k]; ok {
		return tr
	}
	tr := &track{pid: run, tid: tid, loop: loop, first: minTime, last: minTime, free: minTime}
	if loop {
		tr.name = "loop " + strconv.Itoa(tid-1)
	}
	e.tracks[k] = tr
	e.order = append(e.order, tr)
	return tr
}

// The categories and phases of the events written, as JSON members.
const (
	sliceBegin      = `"cat":"task","ph":"B"`
	sliceEnd        = `"cat":"task","ph":"E"`
	sliceComplete   = `"cat":"task","ph":"X"`
	taskInstant     = `"cat":"task","ph":"i","s":"t"`
	flowStart       = `"cat":"flow","ph":"s"`
	flowEnd         = `"cat":"flow","ph":"f","bp":"e"`
	loopComplete    = `"cat":"loop","ph":"X"`
	loopInstant     = `"cat":"loop","ph":"i","s":"t"`
	pollComplete    = `"cat":"poll","ph":"X"`
	offloadComplete = `"cat":"offload","ph":"X"`
)

// quotedReasons holds the reasons as JSON strings.
var quotedReasons = func() (q [numReasons + 1]string) {
	for i := range q {
		q[i] = string(appendString(nil, reasonNames[i]))
	}
	return q
}()

// quotedSources holds the names of the sources as JSON strings.
var quotedSources = func() (q [numSources + 1]string) {
	for i := range q {
		q[i] = string(appendString(nil, Source(i).String()))
	}
	return q
}()

// head writes a separator, the metadata of tr's process and track if
// they are not written yet, and the common fields of an event: its name
// (a JSON string), its category and phase (catPh: JSON members), its time
// and its track, leaving the object open.
func (e *encoder) head(name, catPh string, ts int64, tr *track) {
	e.meta(tr)
	e.sep()
	e.buf = append(e.buf, `{"name":`...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ',')
	e.buf = append(e.buf, catPh...)
	e.buf = append(e.buf, `,"ts":`...)
	e.buf = appendMicros(e.buf, ts)
	e.buf = append(e.buf, tr.ids...)
}

// meta writes the metadata of tr's process and track, the first time.
func (e *encoder) meta(tr *track) {
	if !tr.written {
		tr.written = true
		if !e.procs[tr.pid] {
			e.procs[tr.pid] = true
			e.metaEvent("process_name", tr.pid, 0, `"name":"weft run `+strconv.Itoa(tr.pid)+`"`)
		}
		e.metaEvent("thread_name", tr.pid, tr.tid, `"name":`+string(appendString(nil, tr.name)))
		e.metaEvent("thread_sort_index", tr.pid, tr.tid, `"sort_index":`+strconv.Itoa(tr.tid))
		tr.ids = `,"pid":` + strconv.Itoa(tr.pid) + `,"tid":` + strconv.Itoa(tr.tid)
	}
}

// metaEvent writes a metadata event with the given args (JSON members).
func (e *encoder) metaEvent(name string, pid, tid int, args string) {
	e.sep()
	e.buf = append(e.buf, `{"name":"`...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, `","ph":"M","pid":`...)
	e.buf = strconv.AppendInt(e.buf, int64(pid), 10)
	e.buf = append(e.buf, `,"tid":`...)
	e.buf = strconv.AppendInt(e.buf, int64(tid), 10)
	e.buf = append(e.buf, `,"args":{`...)
	e.buf = append(e.buf, args...)
	e.buf = append(e.buf, "}}"...)
}

// sep starts a new event: a comma after the first, and one event a line.
func (e *encoder) sep() {
	if e.cur != nil { // an inner event: it will follow its slice's X
		e.buf = append(e.buf, ",\n"...)
		e.cur.innerN++
		return
	}
	if e.count > 0 {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, '\n')
	e.count++
}

// taskName returns the name of task k as a JSON string: the one set, else
// its function's, else "task N".
func (e *encoder) taskName(k taskKey, id uint32) string { return e.nameOf(e.tasks[k], id) }

// sliceStrings makes the strings task id's slices are written with, if
// they are not made yet.
func (e *encoder) sliceStrings(t *taskInfo, id uint32) {
	if t.xhead != "" {
		return
	}
	if t.qname == "" {
		t.qname = e.nameOf(*t, id)
	}
	t.xhead = `{"name":` + t.qname + `,` + sliceComplete + `,"ts":`
	t.xargs = `,"args":{"task":` + strconv.FormatUint(uint64(id), 10) + `,"reason":`
}

// nameOf is taskName with the task's info at hand.
func (e *encoder) nameOf(t taskInfo, id uint32) string {
	if t.name != "" {
		return t.name
	}
	if t.fn != 0 {
		n, ok := e.fnNames[t.fn]
		if !ok {
			if f := funcName(t.fn); f != "" {
				n = string(appendString(nil, f))
			}
			e.fnNames[t.fn] = n
		}
		if n != "" {
			return n
		}
	}
	return `"task ` + strconv.FormatUint(uint64(id), 10) + `"`
}

// funcName returns the name of the function at pc without its package
// path ("tour.Fetch.func1"), or "" if there is none.
func funcName(pc uintptr) string {
	f := runtime.FuncForPC(pc)
	if f == nil {
		return ""
	}
	n := f.Name()
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	return n
}

// appendMicros appends ns nanoseconds as microseconds, with up to three
// decimals and no trailing zeros: 1234567 → 1234.567, 1500 → 1.5.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&15])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
