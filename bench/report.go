package main

// Collecting repetitions and printing the table.

import (
	"fmt"
	"github.com/weft-go/weft/bench/internal/loadgen"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// caseResult gathers the repetitions of one server at one connection count.
type caseResult struct {
	server     string
	conns      int
	rates      []float64          // req/s of each repetition
	roundTrips int64              // counted round trips, all repetitions
	verified   int64              // echoes checked, all repetitions and warm-ups
	hist       *loadgen.Histogram // latencies pooled over all repetitions
	cpuRates   []float64          // round trips per server CPU-second, of each repetition
	allocs     []float64          // server heap allocations per round trip, of each repetition
}

// add records one repetition.
func (c *caseResult) add(r loadgen.Result, cst cost) {
	c.cpuRates = append(c.cpuRates, cst.perCPUSecond())
	c.allocs = append(c.allocs, cst.allocsPerRequest())
	c.rates = append(c.rates, r.Rate())
	c.roundTrips += r.RoundTrips
	c.verified += r.Verified
	c.hist.Merge(r.Hist)
}

// median returns the median req/s over the repetitions.
func (c *caseResult) median() float64 { return medianOf(c.rates) }

// medianOf returns the median of xs (the mean of the middle two for an
// even count; 0 for none).
func medianOf(xs []float64) float64 {
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

// spread prints the min..max of xs with f.
func spread(xs []float64, f func(float64) string) string {
	return f(slices.Min(xs)) + ".." + f(slices.Max(xs))
}

func formatAllocs(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// printHeader prints the run's setting: Go version, CPUs, and what was
// measured.
func printHeader(w io.Writer, o options) {
	fmt.Fprintf(w, "%s %s/%s, GOMAXPROCS %d, NumCPU %d (the server children inherit the environment)\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(w, "echo of %d-byte messages on loopback, closed loop; %d repetition(s) of %v after %v warm-up, each server in its own process; %s\n",
		loadgen.MessageSize, o.reps, o.duration, o.warmup, o.run.pin)
	fmt.Fprintln(w)
}

// printTable prints one row per server and connection count, as aligned
// text or as Markdown, followed by a line saying how to read it.
func printTable(w io.Writer, results []*caseResult, markdown bool) {
	header := []string{"server", "conns", "req/s (median)", "min..max", "p50", "p99", "vs net",
		"req/CPU-s (median)", "min..max", "vs net", "allocs/req (median)", "min..max"}
	rows := [][]string{}
	for _, c := range results {
		if len(c.rates) == 0 {
			continue // never measured
		}
		rows = append(rows, []string{
			c.server,
			strconv.Itoa(c.conns),
			formatCount(c.median()),
			formatCount(slices.Min(c.rates)) + ".." + formatCount(slices.Max(c.rates)),
			formatLatency(c.hist.Quantile(0.50)),
			formatLatency(c.hist.Quantile(0.99)),
			ratioToNet(c, results, (*caseResult).median),
			formatCount(medianOf(c.cpuRates)),
			spread(c.cpuRates, formatCount),
			ratioToNet(c, results, func(c *caseResult) float64 { return medianOf(c.cpuRates) }),
			formatAllocs(medianOf(c.allocs)),
			spread(c.allocs, formatAllocs),
		})
	}
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, "| --- |"+strings.Repeat(" ---: |", len(header)-1))
		for _, r := range rows {
			fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "req/s: median over the repetitions, with their min..max; p50, p99: round-trip latency pooled over all repetitions; vs net: the median divided by the net server's at the same conns.")
	fmt.Fprintln(w, "req/CPU-s: round trips (warm-up included) per second of the server child's CPU time (utime+stime, /proc/PID/stat); allocs/req: the child's MemStats.Mallocs over the same round trips.")
}

// ratioToNet returns c's figure (by f) over the net server's at the same
// connection count, or "-" if net was not run.
func ratioToNet(c *caseResult, results []*caseResult, f func(*caseResult) float64) string {
	for _, n := range results {
		if n.server == "net" && n.conns == c.conns && f(n) > 0 {
			return fmt.Sprintf("%.2fx", f(c)/f(n))
		}
	}
	return "-"
}

// formatCount prints a rate rounded to a whole number, with thousands
// separated by commas.
func formatCount(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatLatency prints a latency in microseconds, or milliseconds from
// 1 ms up.
func formatLatency(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
}
