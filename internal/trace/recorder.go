package trace

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// Recorder collects the events of one or more loops and hands them to its
// sink: a stream (NewStream) or a ring (NewRing). Its methods may be called
// from any goroutine; its Buffers only from their loops.
type Recorder struct {
	mu      sync.Mutex
	buffers []*Buffer // guarded by mu: attached buffers, in creation order
	ids     int       // guarded by mu: buffers created
	free    []*chunk  // guarded by mu: empty chunks for reuse
	maxFree int       // immutable
	closed  bool      // guarded by mu

	// Streaming: full chunks go to the writer goroutine, which encodes
	// them and gives them back through free.
	full chan *chunk   // nil in ring mode
	done chan struct{} // closed when the writer has written the end
	err  error         // the writer's first error; read after done

	ring *ring // guarded by mu; nil in streaming mode
}

// streamBacklog is how many full chunks may wait for the writer before a
// loop that fills one more waits for it (about 1 MB).
const streamBacklog = 32

// NewStream returns a Recorder that writes every event to w as one Chrome
// trace-event JSON object, {"traceEvents":[...],"displayTimeUnit":"ns"},
// which Perfetto and chrome://tracing open as it is. A goroutine of the
// Recorder's writes each chunk as its buffer hands it off; a loop that
// gets more than about 1 MB ahead of it waits. Close writes the rest,
// ends the JSON and ends the goroutine: a stream must be closed, and the
// document is complete only then. w need not be safe
// for concurrent use: only that goroutine writes to it.
func NewStream(w io.Writer) *Recorder {
	r := &Recorder{
		maxFree: streamBacklog + 8,
		full:    make(chan *chunk, streamBacklog),
		done:    make(chan struct{}),
	}
	go r.write(w)
	return r
}

// write is the streaming writer goroutine: it encodes chunks in the order
// they arrive until Close closes r.full, then ends the document.
func (r *Recorder) write(w io.Writer) {
	defer close(r.done)
	e := newEncoder(w, minTime)
	e.start()
	for c := range r.full {
		e.chunk(c, c.n)
		r.recycle(c)
	}
	e.finish()
	r.err = e.err
}

// NewRing returns a Recorder that keeps roughly the last window of events
// (by the loops' clock), in at most about maxBytes of memory (at least two
// chunks of about 33 KB), dropping the oldest first, the way Go's flight
// recorder does. WriteSnapshot writes what it holds. It starts no
// goroutine.
func NewRing(window time.Duration, maxBytes int) *Recorder {
	return &Recorder{
		maxFree: 8,
		ring: &ring{
			window:    int64(window),
			maxChunks: max(2, maxBytes/chunkBytes),
			tasks:     map[taskKey]taskInfo{},
		},
	}
}

// chunkBytes is about what a chunk weighs.
const chunkBytes = chunkRecords*32 + chunkStrings*16

// NewBuffer returns a buffer for loop number loop (from 0) of run number
// run (from 1): its events go on the track "loop N" (tid N+1) of the
// process "weft run R" (pid R), and its offload lanes on tracks of their
// own. It panics if run < 1 or loop < 0, or if the Recorder is closed.
func (r *Recorder) NewBuffer(run, loop int) *Buffer {
	if run < 1 || loop < 0 || loop >= offloadTidBase-1 {
		panic(fmt.Sprintf("weft: trace.Recorder.NewBuffer(%d, %d): runs are numbered from 1, loops from 0", run, loop))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		panic("weft: trace.Recorder.NewBuffer called after Close")
	}
	b := &Buffer{rec: r, ring: r.ring != nil, id: r.ids, run: run, loop: loop}
	r.ids++
	b.c = r.take(b)
	r.buffers = append(r.buffers, b)
	return b
}

// take returns an empty chunk for b. r.mu must be held.
func (r *Recorder) take(b *Buffer) *chunk {
	var c *chunk
	if n := len(r.free); n > 0 {
		c = r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
	} else {
		c = new(chunk)
	}
	c.src = b
	return c
}

// recycle returns a chunk that nobody reads any more to the free list.
func (r *Recorder) recycle(c *chunk) {
	r.mu.Lock()
	r.recycleLocked(c)
	r.mu.Unlock()
}

// recycleLocked is recycle with r.mu held.
func (r *Recorder) recycleLocked(c *chunk) {
	c.reset()
	if len(r.free) < r.maxFree {
		r.free = append(r.free, c)
	}
}

// swap hands b's current chunk to the sink and gives b an empty one. It
// runs on b's loop.
func (r *Recorder) swap(b *Buffer) {
	old := b.c
	if r.full != nil {
		// Outside the lock: this waits when the writer is behind.
		r.full <- old
		r.mu.Lock()
		b.c = r.take(b)
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	r.ring.push(r, old)
	b.c = r.take(b)
	r.mu.Unlock()
}

// detach hands b's last chunk to the sink and forgets b.
func (r *Recorder) detach(b *Buffer) {
	c := b.c
	if r.full != nil && c.n > 0 {
		r.full <- c // outside the lock, as in swap
		c = nil
	}
	r.mu.Lock()
	b.c = nil
	switch {
	case c == nil:
	case r.ring != nil:
		r.ring.push(r, c)
	default:
		r.recycleLocked(c)
	}
	if i := slices.Index(r.buffers, b); i >= 0 {
		r.buffers = slices.Delete(r.buffers, i, i+1)
	}
	r.mu.Unlock()
}

// Close closes the buffers still attached, which must no longer be in use
// (call it after the loops have stopped, on a goroutine ordered after
// them). A stream then writes what is left, closing any slice still open,
// ends the JSON and returns the first error from writing it. A ring keeps
// what it holds for WriteSnapshot. Close may be called more than once.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		if r.done != nil {
			<-r.done
		}
		return r.err
	}
	r.closed = true
	bufs := slices.Clone(r.buffers)
	r.mu.Unlock()
	for _, b := range bufs {
		b.Close()
	}
	if r.full == nil {
		return nil
	}
	close(r.full)
	<-r.done
	return r.err
}

// ErrNotRing is returned by WriteSnapshot on a streaming Recorder.
var ErrNotRing = errors.New("trace: WriteSnapshot needs a ring Recorder (NewRing)")

// WriteSnapshot writes the events the ring holds, or only those of the
// last d if d > 0 (by the newest event's time), to w as a complete JSON
// trace like a stream's. Any goroutine may call it, while the loops run:
// it holds the lock only to take references to the chunks (the loops'
// current ones included, up to their last complete record), so a loop
// waits at most that long, and only if it fills a chunk meanwhile. A slice
// cut by the start of the snapshot begins at its start; one still open
// ends at its end. Given the same events, the output is the same.
func (r *Recorder) WriteSnapshot(w io.Writer, d time.Duration) error {
	if r.ring == nil {
		return ErrNotRing
	}
	r.mu.Lock()
	rg := r.ring
	var views []view
	for _, c := range rg.q[rg.head:] {
		views = append(views, view{c, c.n})
	}
	for _, b := range r.buffers {
		if n := int(b.c.pub.Load()); n > 0 {
			views = append(views, view{b.c, n})
		}
	}
	tasks := maps.Clone(rg.tasks)
	rg.readers++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		rg.readers--
		r.mu.Unlock()
	}()

	// One group per buffer, in creation order; within a group the chunks
	// are in the order they were written.
	slices.SortStableFunc(views, func(a, b view) int { return a.c.src.id - b.c.src.id })
	from := int64(minTime)
	if d > 0 {
		newest := int64(minTime)
		for _, v := range views {
			newest = max(newest, v.c.recs[v.n-1].ts)
		}
		from = newest - int64(d)
	}
	e := newEncoder(w, from)
	for k, t := range tasks { // into a map: the order does not matter
		if t.name != "" {
			t.name = string(appendString(nil, t.name))
		}
		e.tasks[k] = t
	}
	e.start()
	e.merge(views)
	e.finish()
	return e.err
}

// view is the first n records of a chunk, as a snapshot reads them.
type view struct {
	c *chunk
	n int
}

// ring is the flight recorder's store: the chunks handed off, oldest
// first. Guarded by the Recorder's mu.
type ring struct {
	window    int64 // ns of history to keep (0: as much as fits)
	maxChunks int
	q         []*chunk // q[head:] are held
	head      int
	newest    int64 // the latest record handed off
	readers   int   // snapshots in progress: evicted chunks are not reused
	// tasks holds what the evicted chunks said about tasks that have not
	// finished (their function, their name), so that a snapshot still
	// names them.
	tasks map[taskKey]taskInfo

	spawned, finished []uint32 // remember's scratch
}

// push adds c to the ring and drops what is too old or too much.
func (g *ring) push(r *Recorder, c *chunk) {
	if c.n == 0 {
		r.recycleLocked(c)
		return
	}
	g.q = append(g.q, c)
	g.newest = max(g.newest, c.last())
	for held := len(g.q) - g.head; held > 1; held-- {
		old := g.q[g.head]
		if held <= g.maxChunks && (g.window <= 0 || old.last() >= g.newest-g.window) {
			break
		}
		g.q[g.head] = nil
		g.head++
		g.remember(old)
		if g.readers == 0 {
			r.recycleLocked(old)
		}
	}
	if g.head > len(g.q)/2 && g.head > 16 {
		n := copy(g.q, g.q[g.head:])
		clear(g.q[n:])
		g.q = g.q[:n]
		g.head = 0
	}
}

// remember keeps what an evicted chunk says about live tasks. Most tasks
// start and finish within one chunk; those cost no map operation.
func (g *ring) remember(c *chunk) {
	run := c.src.run
	spawned, finished := g.spawned[:0], g.finished[:0]
	for i := range c.n {
		switch rec := &c.recs[i]; rec.kind {
		case kSpawn:
			spawned = append(spawned, rec.b)
		case kSuspend:
			if Reason(rec.x) == Finished {
				finished = append(finished, rec.a)
			}
		}
	}
	slices.Sort(spawned)
	slices.Sort(finished)
	g.spawned, g.finished = spawned, finished
	for i := range c.n {
		rec := &c.recs[i]
		var id uint32
		switch rec.kind {
		case kSpawn:
			id = rec.b
		case kName:
			id = rec.a
		default:
			continue
		}
		if _, done := slices.BinarySearch(finished, id); done {
			continue
		}
		k := key(run, id)
		t := g.tasks[k]
		if rec.kind == kSpawn {
			t.fn = uintptr(rec.arg)
		} else {
			t.name = c.strs[rec.x-1]
		}
		g.tasks[k] = t
	}
	for _, id := range finished {
		if _, here := slices.BinarySearch(spawned, id); !here {
			delete(g.tasks, key(run, id))
		}
	}
}
