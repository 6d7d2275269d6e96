package main

// Collecting repetitions and printing the table.

import (
	"fmt"
	"github.com/weft-go/weft/internal/loadgen"
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
}

// add records one repetition.
func (c *caseResult) add(r loadgen.Result) {
	c.rates = append(c.rates, r.Rate())
	c.roundTrips += r.RoundTrips
	c.verified += r.Verified
	c.hist.Merge(r.Hist)
}

// median returns the median req/s over the repetitions (the mean of the
// middle two for an even count).
func (c *caseResult) median() float64 {
	if len(c.rates) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(c.rates))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// printHeader prints the run's setting: Go version, CPUs, and what was
// measured.
func printHeader(w io.Writer, o options) {
	fmt.Fprintf(w, "%s %s/%s, GOMAXPROCS %d, NumCPU %d (the server children inherit the environment)\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(w, "echo of %d-byte messages on loopback, closed loop; %d repetition(s) of %v after %v warm-up, each server in its own process\n",
		loadgen.MessageSize, o.reps, o.duration, o.warmup)
	fmt.Fprintln(w)
}

// printTable prints one row per server and connection count, as aligned
// text or as Markdown, followed by a line saying how to read it.
func printTable(w io.Writer, results []*caseResult, markdown bool) {
	header := []string{"server", "conns", "req/s (median)", "min..max", "p50", "p99", "vs net"}
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
			ratioToNet(c, results),
		})
	}
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
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
	fmt.Fprintln(w, "req/s: median over the repetitions, with their min..max; p50, p99: round-trip latency pooled over all repetitions; vs net: median req/s divided by the net server's at the same conns.")
}

// ratioToNet returns c's median req/s over the net server's at the same
// connection count, or "-" if net was not run.
func ratioToNet(c *caseResult, results []*caseResult) string {
	for _, n := range results {
		if n.server == "net" && n.conns == c.conns && n.median() > 0 {
			return fmt.Sprintf("%.2fx", c.median()/n.median())
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
