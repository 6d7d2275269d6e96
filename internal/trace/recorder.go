package trace

import (
	"fmt"
	"slices"
	"sync"
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
