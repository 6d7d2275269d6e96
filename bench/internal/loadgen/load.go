// Package loadgen is the echo load client shared by the bench program's
// echo, pinned and convoy benchmarks: N connections, each a closed loop
// of write a 64-byte message, read the echo, check it, repeat, with every
// round trip timed into a histogram.
package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// MessageSize is the size of every request and echo.
const MessageSize = 64

// ioGrace is how long past the end of a case a connection may wait for an
// echo before it gives up with a timeout error.
const ioGrace = 5 * time.Second

// Config describes one measurement.
type Config struct {
	Conns    int           // connections, each with one request in flight
	Warmup   time.Duration // run but not counted
	Duration time.Duration // counted
}

// Result is what one measurement saw.
type Result struct {
	RoundTrips int64         // round trips started and finished in the counted window
	Verified   int64         // echoes checked byte for byte, warm-up included
	Elapsed    time.Duration // the counted window
	Hist       *Histogram    // latency of the counted round trips
}

// Rate is the counted round trips per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.RoundTrips) / r.Elapsed.Seconds()
}

// Run connects cfg.Conns connections to addr and drives them for
// cfg.Warmup then cfg.Duration. Any connection error, short read or wrong
// echo fails the whole measurement. Cancelling ctx ends it early with
// ctx's error. Every connection is closed and every goroutine has ended
// when Run returns.
func Run(ctx context.Context, addr string, cfg Config) (Result, error) {
	if cfg.Conns < 1 {
		return Result{}, errors.New("need at least one connection")
	}
	conns := make([]net.Conn, 0, cfg.Conns)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	for range cfg.Conns {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			closeAll()
			return Result{}, err
		}
		conns = append(conns, c)
	}
	// Cancelling ctx closes the connections, which wakes every reader.
	stopClose := context.AfterFunc(ctx, closeAll)
	defer stopClose()
	defer closeAll()

	start := time.Now()
	warmEnd := start.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Duration)
	// A bound on round trips per connection, as a guard: one per
	// microsecond is far more than loopback TCP allows.
	limit := int64((cfg.Warmup+cfg.Duration)/time.Microsecond) + 1

	results := make([]connResult, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			results[i] = drive(c, i, warmEnd, end, limit)
		})
	}
	wg.Wait()

	total := Result{Elapsed: cfg.Duration, Hist: new(Histogram)}
	var errs []error
	for i := range results {
		r := &results[i]
		total.RoundTrips += r.counted
		total.Verified += r.verified
		total.Hist.Merge(&r.hist)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("conn %d: %w", i, r.err))
		}
	}
	if err := ctx.Err(); err != nil {
		return total, err
	}
	return total, errors.Join(errs...)
}

// connResult is what one connection saw.
type connResult struct {
	counted  int64
	verified int64
	hist     Histogram
	err      error
}

// drive runs one connection's closed loop until end (or limit round
// trips): write a message, read exactly as many bytes back, check them.
// Round trips that start after warmEnd and finish before end are counted
// and timed. Each message carries the connection's id and a sequence
// number, so a stale or misrouted echo is caught.
func drive(c net.Conn, id int, warmEnd, end time.Time, limit int64) connResult {
	var r connResult
	if err := c.SetDeadline(end.Add(ioGrace)); err != nil {
		r.err = err
		return r
	}
	msg := make([]byte, MessageSize)
	got := make([]byte, MessageSize)
	for i := 16; i < MessageSize; i++ {
		msg[i] = byte('a' + i%26)
	}
	binary.LittleEndian.PutUint64(msg[8:], uint64(id))
	for seq := int64(0); seq < limit; seq++ {
		binary.LittleEndian.PutUint64(msg, uint64(seq))
		t0 := time.Now()
		if !t0.Before(end) {
			break
		}
		if _, err := c.Write(msg); err != nil {
			r.err = err
			break
		}
		if _, err := io.ReadFull(c, got); err != nil {
			r.err = err
			break
		}
		t1 := time.Now()
		if !bytes.Equal(got, msg) {
			r.err = fmt.Errorf("echo %d came back different", seq)
			break
		}
		r.verified++
		if t0.After(warmEnd) && t1.Before(end) {
			r.counted++
			r.hist.Record(t1.Sub(t0))
		}
	}
	return r
}
