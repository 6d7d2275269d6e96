package cpubound

import (
	"slices"
	"time"

	"github.com/weft-go/weft/bench/internal/loadgen"
)

// Goals for weft's CPU tasks on the loop (the first variant), beside k = 0
// at the same N, judged on the medians over the repetitions.
const (
	goalRateRatio = 0.9 // req/s at k > 0 at least this times k = 0's
	goalShare     = 0.5 // CPU share at least this times the free fraction
	// p99 within one switch interval of k = 0's: see convoyConfig.interval.
)

// row is one line of the convoy table: the medians and spreads over the
// repetitions of one case, and everything derived from them.
type row struct {
	v        *variant
	conns, k int
	reps     int   // repetitions run
	okReps   int   // repetitions that succeeded; the figures are theirs
	err      error // the first failed repetition's error, or nil

	rate           float64       // median req/s
	rateLo, rateHi float64       // the least and most req/s of a repetition
	p50, p99       time.Duration // of the latencies pooled over the repetitions

	base             bool          // the k = 0 case at the same N was measured
	ratio            float64       // median req/s / k = 0's median req/s
	repRatio         bool          // some repetition measured both this case and k = 0
	ratioLo, ratioHi float64       // req/s / k = 0's within one repetition: least and most
	dp99             time.Duration // p99 - k = 0's p99, both pooled

	units    float64 // median units/s of the CPU workers under load
	idle     float64 // their median units/s with no load
	hasIdle  bool
	share    float64 // median over the repetitions of units / no-load units in the same repetition
	hasShare bool

	free    float64 // median over the repetitions of 1 - the server's CPU fraction at k = 0, in [0, 1]
	hasFree bool

	goals []goalCheck // for the goal variant at k > 0
}

// measured reports whether at least one repetition of the row's case
// succeeded.
func (r *row) measured() bool { return r.okReps > 0 }

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

// rows derives the table rows of one variant, one per case.
func rows(cfg *convoyConfig, vr *variantResult) []row {
	out := make([]row, len(vr.cases))
	for i := range vr.cases {
		out[i] = caseRow(vr, &vr.cases[i])
	}
	for i := range out {
		r := &out[i]
		if !r.measured() {
			continue
		}
		j := slices.IndexFunc(out, func(b row) bool { return b.conns == r.conns && b.k == 0 })
		if j >= 0 && out[j].measured() {
			b, bc := &out[j], &vr.cases[j]
			r.base = true
			if b.rate > 0 {
				r.ratio = r.rate / b.rate
			}
			r.dp99 = r.p99 - b.p99
			var ratios, frees []float64
			for rep, x := range vr.cases[i].reps {
				if rep < len(bc.reps) && x.ok(true) && bc.reps[rep].ok(true) && bc.reps[rep].m.load.Rate > 0 {
					ratios = append(ratios, x.m.load.Rate/bc.reps[rep].m.load.Rate)
				}
			}
			if len(ratios) > 0 {
				r.repRatio, r.ratioLo, r.ratioHi = true, slices.Min(ratios), slices.Max(ratios)
			}
			for _, x := range bc.reps {
				if f, ok := x.m.win.cpuFraction(); ok && x.ok(true) {
					frees = append(frees, min(max(1-f, 0), 1))
				}
			}
			if len(frees) > 0 {
				r.free, r.hasFree = median(frees), true
			}
		}
		if r.k > 0 && r.v.goals {
			r.goals = []goalCheck{
				{ok: r.ratio >= goalRateRatio, known: r.base},
				{ok: r.dp99 <= cfg.interval, known: r.base},
				{ok: r.share >= goalShare*r.free, known: r.hasShare && r.hasFree},
			}
		}
	}
	return out
}

// caseRow summarises the repetitions of case c of variant vr on their own,
// without the k = 0 case: medians, spreads and pooled latencies.
func caseRow(vr *variantResult, c *convoyCase) row {
	r := row{v: vr.v, conns: c.conns, k: c.k, reps: len(c.reps)}
	idle := vr.idle[c.k]
	var rates, units, shares []float64
	pooled := new(loadgen.Histogram)
	for i, x := range c.reps {
		if !x.ok(true) {
			if r.err == nil {
				r.err = x.err
			}
			continue
		}
		r.okReps++
		rates = append(rates, x.m.load.Rate)
		recordBuckets(pooled, x.m.load.Hist)
		if c.k > 0 {
			u := x.m.win.unitRate()
			units = append(units, u)
			if i < len(idle) && idle[i].ok(false) && idle[i].m.win.unitRate() > 0 {
				shares = append(shares, u/idle[i].m.win.unitRate())
			}
		}
	}
	if r.okReps == 0 {
		return r
	}
	r.rate, r.rateLo, r.rateHi = median(rates), slices.Min(rates), slices.Max(rates)
	r.p50, r.p99 = pooled.Quantile(0.50), pooled.Quantile(0.99)
	if c.k > 0 {
		r.units = median(units)
		var idles []float64
		for _, x := range idle {
			if x.ok(false) && x.m.win.unitRate() > 0 {
				idles = append(idles, x.m.win.unitRate())
			}
		}
		if len(idles) > 0 {
			r.idle, r.hasIdle = median(idles), true
		}
		if len(shares) > 0 {
			r.share, r.hasShare = median(shares), true
		}
	}
	return r
}

// median returns the median of xs, the mean of the middle two for an even
// count, or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
