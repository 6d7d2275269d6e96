package main

import (
	"time"
)

// Goals for weft's CPU tasks on the loop (the first variant), beside k = 0
// at the same N.
const (
	goalRateRatio = 0.9 // req/s at k > 0 at least this times k = 0's
	goalShare     = 0.5 // CPU share at least this times the free fraction
	// p99 within one switch interval of k = 0's: see convoyConfig.interval.
)

// row is one line of the convoy table, with everything derived from the
// measurements.
type row struct {
	v        *variant
	conns, k int
	err      error

	rate     float64 // req/s
	p50, p99 time.Duration

	base  bool // the k = 0 case at the same N was measured
	ratio float64
	dp99  time.Duration

	units   float64 // the CPU workers' units/s under load
	idle    float64 // their units/s with no load
	hasIdle bool
	share   float64 // units / idle

	free    float64 // 1 - the server's CPU fraction at k = 0, in [0, 1]
	hasFree bool

	goals []goalCheck // for the goal variant at k > 0
}

// goalCheck is one goal's outcome; known is false when a figure it needs
// is missing.
type goalCheck struct {
	ok, known bool
}

// String is PASS, MISS or n/a.
func (g goalCheck) String() string {
	if !g.known {
		return "n/a"
	}
	return verdict(g.ok)
}

// rows derives the table rows of one variant.
func rows(cfg *convoyConfig, vr *variantResult) []row {
	var out []row
	for _, c := range vr.cases {
		r := row{v: vr.v, conns: c.conns, k: c.k, err: c.err}
		if c.err != nil || c.m.load == nil {
			out = append(out, r)
			continue
		}
		r.rate = c.m.load.Rate
		r.p50 = time.Duration(c.m.load.P50NS)
		r.p99 = time.Duration(c.m.load.P99NS)
		if b, ok := vr.find(c.conns, 0); ok {
			r.base = true
			if b.m.load.Rate > 0 {
				r.ratio = r.rate / b.m.load.Rate
			}
			r.dp99 = r.p99 - time.Duration(b.m.load.P99NS)
			if f, ok := b.m.win.cpuFraction(); ok {
				r.free, r.hasFree = min(max(1-f, 0), 1), true
			}
		}
		if c.k > 0 {
			r.units = c.m.win.unitRate()
			if idle, ok := vr.idle[c.k]; ok && idle > 0 {
				r.idle, r.hasIdle = idle, true
				r.share = r.units / idle
			}
			if vr.v.goals {
				r.goals = []goalCheck{
					{ok: r.ratio >= goalRateRatio, known: r.base},
					{ok: r.dp99 <= cfg.interval, known: r.base},
					{ok: r.share >= goalShare*r.free, known: r.hasIdle && r.hasFree},
				}
			}
		}
		out = append(out, r)
	}
	return out
}
