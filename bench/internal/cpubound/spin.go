package cpubound

import (
	"sync/atomic"
)

// spinner is one CPU-bound worker of `bench convoy`: it runs work
// units, each a thousand iterations of n++; n--, and counts them. Each
// spinner has a cache line of its own, so that workers on different threads
// do not slow one another down.
type spinner struct {
	n     int          // kept in memory, so the compiler keeps a load and a store per iteration
	units atomic.Int64 // work units done so far
	_     [48]byte     // pads the spinner to 64 bytes
}

// unitIterations is how many iterations make one work unit; a worker on the
// loop calls Checkpoint once per unit.
const unitIterations = 1000

// unit runs one work unit. The compiler folds the arithmetic of n++; n--
// away but keeps the load and store of n, so a unit costs about a
// microsecond; only ratios of unit rates are reported.
//
//go:noinline
func (s *spinner) unit() {
	for range unitIterations {
		s.n++
		s.n--
	}
}

// spinUntil runs units until stop is set, polling it between units. It is
// the worker of the Offload and Go variants, which have no Checkpoint.
func (s *spinner) spinUntil(stop *atomic.Bool) {
	for !stop.Load() {
		s.unit()
		s.units.Add(1)
	}
}

// totalUnits sums the units done by every spinner in ss.
func totalUnits(ss []spinner) int64 {
	var sum int64
	for i := range ss {
		sum += ss[i].units.Load()
	}
	return sum
}
