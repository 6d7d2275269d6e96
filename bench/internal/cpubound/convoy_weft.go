package cpubound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
)

// convoyTrace is -trace's file until the first weft case with workers has
// written it; convoyTraceErr is the error writing it.
var (
	convoyTrace    string
	convoyTraceErr error
)

// runWeftCase runs one case of the weft variants: loops loops (the echo
// server's and, with more than one, others that take CPU tasks when they
// would sleep) and k CPU workers, while drive applies the load from another
// goroutine. With offload false the workers are tasks on the loop that call
// Checkpoint once per unit; with offload true each is a task that calls
// Offload once with a function that spins until told to stop.
//
// Everything stops when drive returns: it sets the stop flag, which the
// workers poll between units, and closes the listener, which ends the echo
// server. A task that ends early for any reason does the same, so the loop
// always ends.
func runWeftCase(offload bool, loops, k int, interval time.Duration, drive driver) (measure, error) {
	var stop atomic.Bool
	spinners := make([]spinner, k)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type driven struct {
		m   measure
		err error
	}
	done := make(chan driven, 1)
	started := false

	opts := []weft.Option{weft.WithSwitchInterval(interval), weft.WithLoops(loops)}
	if offload && k > 0 {
		opts = append(opts, weft.WithOffloadWorkers(k)) // every worker at once
	}
	var traced *bytes.Buffer
	if convoyTrace != "" && k > 0 {
		traced = new(bytes.Buffer)
		opts = append(opts, weft.WithTrace(traced))
	}
	_, runErr := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		halt := func() {
			stop.Store(true)
			ln.Close()
		}
		started = true
		go func() {
			m, err := drive(ctx, ln.Addr().String(), func() probe { return takeProbe(spinners) })
			halt()
			done <- driven{m, err}
		}()
		ps := []*weft.Promise[struct{}]{weft.Go(t, func(t *weft.Task) (struct{}, error) {
			t.SetName("echo server")
			defer halt()
			return struct{}{}, echo.Serve(t, ln)
		})}
		for i := range spinners {
			s := &spinners[i]
			work := spinTask
			if offload {
				work = offloadTask
			}
			ps = append(ps, weft.Go(t, func(t *weft.Task) (struct{}, error) {
				t.SetName(fmt.Sprintf("worker %d", i+1))
				defer halt()
				return struct{}{}, work(t, s, &stop)
			}))
		}
		_, err = weft.All(t, ps...)
		return struct{}{}, err
	}, opts...)
	cancel() // the driver gives up if the loop ended early
	if traced != nil {
		name := strings.TrimSuffix(filepath.Base(convoyTrace), ".json")
		convoyTraceErr = writeTraceFiles(filepath.Dir(convoyTrace), name,
			fmt.Sprintf("bench convoy: the echo server beside %d CPU-bound workers, switch interval %v", k, interval), traced.Bytes())
		convoyTrace = "" // the first case only
	}
	if !started {
		return measure{}, runErr
	}
	d := <-done
	return d.m, errors.Join(d.err, runErr)
}

// spinTask is a CPU worker on the loop: units until stop is set, with a
// Checkpoint after each. A cancellation ends it quietly.
func spinTask(t *weft.Task, s *spinner, stop *atomic.Bool) error {
	for !stop.Load() {
		s.unit()
		s.units.Add(1)
		if err := t.Checkpoint(); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
	}
	return nil
}

// offloadTask is a CPU worker moved off the loop: one Offload call whose
// function spins until stop is set. A cancellation ends it quietly.
func offloadTask(t *weft.Task, s *spinner, stop *atomic.Bool) error {
	_, err := weft.Offload(t, func() (struct{}, error) {
		s.spinUntil(stop)
		return struct{}{}, nil
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
