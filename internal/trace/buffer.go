package trace

// Buffer is one loop's event buffer. Its recording methods append one
// fixed-size record to the current chunk: no lock, no allocation, no
// interface. Only the goroutine running the loop at that moment may call
// them (a loop's state is touched by one goroutine at a time, and the
// coroutine switches that pass it on order memory), so a Buffer has no
// lock of its own. When the chunk is full the buffer hands it to its
// Recorder's sink and takes an empty one: that is the only step that
// synchronises, once per 1024 records.
//
// Timestamps are nanoseconds on the loop's clock, read by the caller:
// real or virtual, as long as one Recorder's buffers share a clock. The
// loop's own records (every method but Offload) must come in timestamp
// order. Task ids are the runtime's, unique within a run across all its
// loops (a task may move between loops); 0 means "no task".
//
// A nil *Buffer means tracing is off. The methods do not check for it:
// the caller tests the pointer first, which also saves reading the clock.
type Buffer struct {
	c    *chunk    // the current chunk; swapped under rec.mu
	rec  *Recorder // immutable
	ring bool      // immutable: publish records for ring snapshots
	id   int       // immutable: order of creation, for deterministic output
	run  int       // immutable: the trace's pid
	loop int       // immutable: the loop's index, its track
}

// put appends r.
func (b *Buffer) put(r record) {
	c := b.c
	if c.n == chunkRecords {
		c = b.handOff()
	}
	c.recs[c.n] = r
	c.n++
	if b.ring && c.n%publishEvery == 0 {
		c.pub.Store(int32(c.n))
	}
}

// publishEvery is how often, in records, a ring buffer publishes its count
// to snapshots: an atomic store costs about as much as the rest of a
// record, so it is not done for each one.
const publishEvery = 16

// Publish makes every record so far visible to ring snapshots (a ring
// buffer publishes by itself only every 16 records). Call it before the
// loop blocks in the kernel, so that a snapshot taken while it sleeps has
// its last events. It does nothing for a stream.
func (b *Buffer) Publish() {
	if b.ring {
		b.c.pub.Store(int32(b.c.n))
	}
}

// handOff gives the current chunk to the sink and returns the empty one
// that replaces it.
func (b *Buffer) handOff() *chunk {
	b.rec.swap(b)
	return b.c
}

// Resume records that the loop resumed (or started) task: a slice of the
// task begins on the loop's track.
func (b *Buffer) Resume(ts int64, task uint32) {
	b.put(record{ts: ts, kind: kResume, a: task})
}

// Suspend records that task gave up the loop, and why: its slice ends.
func (b *Buffer) Suspend(ts int64, task uint32, why Reason) {
	b.put(record{ts: ts, kind: kSuspend, a: task, x: uint8(why)})
}

// Spawn records that parent (0 for a task started from outside any task,
// such as main) started child, whose function has entry fn. It registers
// the child: until SetName, the child's slices are named after fn's
// function (resolved only when the trace is written). The trace shows an
// arrow from parent's slice to the child's first one.
func (b *Buffer) Spawn(ts int64, parent, child uint32, fn uintptr) {
	b.put(record{ts: ts, kind: kSpawn, a: parent, b: child, arg: uint64(fn)})
}

// SetName names task: its later slices carry the name, and the trace
// shows the change as an instant. The string is kept once, not per event.
func (b *Buffer) SetName(ts int64, task uint32, name string) {
	c := b.c
	if c.ns == chunkStrings || c.n == chunkRecords {
		c = b.handOff()
	}
	c.strs[c.ns] = name
	c.ns++
	b.put(record{ts: ts, kind: kName, a: task, x: uint8(c.ns)})
}

// Wake records that the running task waker made woken runnable (settling
// a promise it waits on, say). The trace shows an arrow from waker's slice
// to woken's next one.
func (b *Buffer) Wake(ts int64, waker, woken uint32) {
	b.put(record{ts: ts, kind: kWake, a: waker, b: woken})
}

// WakeBy records that the loop itself, from src, made woken runnable: an
// fd the kernel reported, a message in the inbox, finished off-loop work.
// The trace marks src on the loop's track with an arrow to woken's next
// slice. Timers have TimerFired.
func (b *Buffer) WakeBy(ts int64, src Source, woken uint32) {
	b.put(record{ts: ts, kind: kWakeBy, b: woken, x: uint8(src)})
}

// TimerFired records that a timer came due: it woke task, or ran a
// callback if task is 0. The trace marks it on the loop's track, with an
// arrow to the task's next slice.
func (b *Buffer) TimerFired(ts int64, task uint32) {
	b.put(record{ts: ts, kind: kWakeBy, b: task, x: uint8(FromTimer)})
}

// Poll records a look at the kernel for ready fds, from start to end, that
// returned events events. Record it when the poll returns.
func (b *Buffer) Poll(start, end int64, events int) {
	b.put(record{ts: start, kind: kPoll, arg: uint64(end - start), a: uint32(events)})
}

// Steal records that this loop took tasks runnable tasks from the loop
// victim's run queue.
func (b *Buffer) Steal(ts int64, victim, tasks int) {
	b.put(record{ts: ts, kind: kSteal, a: uint32(victim), b: uint32(tasks)})
}

// Offload records off-loop work done for task from start to end on lane,
// one of this loop's offload tracks. The loop records it when the work's
// result comes back, with the times the worker read from the loop's clock;
// so the record may be older than the records before it. Choose lanes so
// that work on one lane never overlaps (see Lanes); there are at most 1000.
func (b *Buffer) Offload(start, end int64, task uint32, lane int) {
	b.put(record{ts: start, kind: kOffload, arg: uint64(end - start), a: task, b: uint32(lane)})
}

// Flush hands the current chunk to the sink now, if it holds anything,
// instead of when it fills.
func (b *Buffer) Flush() {
	if b.c.n > 0 {
		b.rec.swap(b)
	}
}

// Close hands the last chunk to the sink and detaches the buffer from its
// Recorder (a loop that ends closes its buffer). The buffer must not be
// used after.
func (b *Buffer) Close() { b.rec.detach(b) }
