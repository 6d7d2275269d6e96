package trace

// The stream sink (the package doc's invariant 4): full chunks go to a
// writer goroutine, which encodes them as they come and recycles them.

import "io"

// streamBacklog is how many full chunks may wait for the writer before a
// loop that fills one more waits for it (about 1 MB).
const streamBacklog = 32

// NewStream returns a Recorder that writes every event to w as one Chrome
// trace-event JSON object, {"traceEvents":[...],"displayTimeUnit":"ns"},
// which Perfetto and chrome://tracing open as it is. A goroutine of the
// Recorder's writes each chunk as its buffer hands it off; a loop that
// gets more than about 1 MB ahead of it waits. Close writes the rest,
// ends the JSON and ends the goroutine: a stream must be closed, and the
// document is complete only then. w need not be safe for concurrent use:
// only that goroutine writes to it.
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
