package trace

// The ring sink, a flight recorder (the package doc's invariant 4): the
// chunks handed off are kept, oldest dropped first, and WriteSnapshot
// encodes them with the loops' current chunks.

import (
	"errors"
	"io"
	"maps"
	"slices"
	"time"
)

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
