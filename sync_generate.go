package weft

// Streams: a producer task feeding a channel, consumed with All.
//
// Generate starts produce as a child task whose yield is a Send on a
// channel of the given capacity, so the producer runs at most that far
// ahead of its consumer (back-pressure). When produce returns, the channel
// is closed with its error (Close for nil), so the consumer gets every
// value, then the error. The channel is marked stopOnBreak: when its
// consumer leaves All early or is cancelled, All closes it, and the
// producer's next yield fails with an error matching ErrClosed.

import (
	"errors"
	"io"
)

// Generate runs produce as a child task of t and returns the channel it
// feeds: each yield(v) sends v, suspending the producer while the
// channel's buffer (of capacity buffer) is full, so the producer is never
// more than buffer values ahead of its consumer. Generate starts the
// producer at once and suspends t while it runs first, as Go does; it is
// not a cancellation point. yield is one, as Send is: it returns the
// producer's cancellation (matching context.Canceled).
//
// When produce returns, the channel is closed: a consumer ranging over
// c.All(t) gets every value, then, if produce returned an error (or
// panicked: a *PanicError), that error last.
//
// If the consumer stops early (leaves the range loop) or is cancelled, the
// producer's yield returns an error matching ErrClosed (or the
// cancellation, since a cancelled parent cancels its children), and
// produce should return it; its defers run as it unwinds. An error produce
// returns after its consumer has stopped has nobody to go to: unless it
// matches ErrClosed or context.Canceled, Run reports it as a failure.
//
// yield may be called only by the producer task. A negative buffer
// panics.
//
//go:noinline
func Generate[T any](t *Task, buffer int, produce func(t *Task, yield func(T) error) error) *Chan[T] {
	pc := callerPC()
	t.check("Generate")
	if produce == nil {
		panic("weft: Generate called with a nil function")
	}
	c := NewChan[T](buffer)
	c.stopOnBreak = true
	spawnIn(t, t.innermost(), func(pt *Task) (struct{}, error) {
		return struct{}{}, runProducer(pt, c, produce)
	}, pc, spawnGenerate, funcPC(produce), nil)
	return c
}

// runProducer runs produce on the producer task t and closes c after it.
func runProducer[T any](t *Task, c *Chan[T], produce func(t *Task, yield func(T) error) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
		err = c.producerDone(err)
	}()
	return produce(t, func(v T) error { return c.Send(t, v) })
}

// producerDone closes c with the producer's error. It returns what the
// producer task reports: nil once the consumer will get err, or if err
// only says the consumer stopped; err itself if the consumer has gone.
func (c *Chan[T]) producerDone(err error) error {
	var closed bool
	if err == nil {
		closed = c.close(io.EOF, ErrClosed)
	} else {
		closed = c.close(err, &closedError{cause: err})
	}
	if closed || err == nil || errors.Is(err, ErrClosed) || isCancellation(err) {
		return nil
	}
	return err
}
