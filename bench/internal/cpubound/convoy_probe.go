package cpubound

import (
	"context"
	"time"
)

// probe is a snapshot of the server process at one moment: the time, the
// process's CPU time so far and the CPU workers' units so far.
type probe struct {
	at    time.Time
	cpu   time.Duration
	cpuOK bool // the system reports process CPU time
	units int64
}

// takeProbe snapshots the process and the spinners ss.
func takeProbe(ss []spinner) probe {
	cpu, ok := processCPU()
	return probe{at: time.Now(), cpu: cpu, cpuOK: ok, units: totalUnits(ss)}
}

// window is what the server process did between two probes.
type window struct {
	wall  time.Duration
	cpu   time.Duration
	cpuOK bool
	units int64
}

// between returns the window from probe a to probe b.
func between(a, b probe) window {
	return window{wall: b.at.Sub(a.at), cpu: b.cpu - a.cpu, cpuOK: a.cpuOK && b.cpuOK, units: b.units - a.units}
}

// unitRate is the CPU workers' units per second over the window.
func (w window) unitRate() float64 {
	if w.wall <= 0 {
		return 0
	}
	return float64(w.units) / w.wall.Seconds()
}

// cpuFraction is the process's CPU time over the window's wall time (it
// can exceed 1 on several cores), and whether it is known.
func (w window) cpuFraction() (float64, bool) {
	if !w.cpuOK || w.wall <= 0 {
		return 0, false
	}
	return w.cpu.Seconds() / w.wall.Seconds(), true
}

// measure is what one case saw: the load client's report (nil when the
// case ran without load) and the server process's counted window.
type measure struct {
	load *clientReport
	win  window
}

// driver runs beside a server listening on addr: it applies the load (or
// none), calling probe at the start and the end of the counted window.
// Cancelling ctx makes it give up early. It must return within a bounded
// time whatever the server does.
type driver func(ctx context.Context, addr string, probe func() probe) (measure, error)

// idleDriver applies no load: it waits settle, then probes a window of
// length, to measure the CPU workers' rate with the server idle.
func idleDriver(settle, length time.Duration) driver {
	return func(ctx context.Context, addr string, probe func() probe) (measure, error) {
		t0 := time.Now()
		if err := sleepUntil(ctx, t0.Add(settle)); err != nil {
			return measure{}, err
		}
		a := probe()
		if err := sleepUntil(ctx, t0.Add(settle+length)); err != nil {
			return measure{}, err
		}
		return measure{win: between(a, probe())}, nil
	}
}

// sleepUntil waits until the time at, or until ctx is done (then it returns
// ctx's error). It is for goroutines, never for weft tasks.
func sleepUntil(ctx context.Context, at time.Time) error {
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
