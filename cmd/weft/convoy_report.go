package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/weft-go/weft/internal/loadgen"
)

// CPython 3.11's threaded echo server on a machine like this one, N = 1,
// with k CPU-bound threads beside it (measured elsewhere, quoted for
// comparison): the convoy effect weft's scheduler is meant to avoid.
var (
	cpythonRate        = map[int]float64{0: 24900, 1: 116, 2: 50, 4: 38}
	cpythonOtherProc   = 22800.0 // CPU work in another process
	cpythonIntervalRef = "with a smaller switch interval: 668 req/s at 1 ms, 4.6k at 0.1 ms"
)

// printConvoy prints the header, one table section per variant, the
// definitions, a summary and, with -markdown, the Markdown table.
func printConvoy(w io.Writer, cfg *convoyConfig, results []*variantResult) {
	fmt.Fprintln(w, "weft bench convoy: an echo server beside k CPU-bound workers (the GIL's convoy effect)")
	fmt.Fprintf(w, "%s %s/%s, NumCPU=%d, GOMAXPROCS=%d, switch interval %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cfg.interval)
	fmt.Fprintf(w, "each case: %v warm-up + %v counted; N connections from a load client in another process (%d-byte messages, closed loop, every echo verified)\n",
		cfg.warmup, cfg.duration, loadgen.MessageSize)
	fmt.Fprintf(w, "goals for weft's tasks on the loop, at k>0 against k=0 at the same N: req/s >= %.1fx; p99 <= k=0 p99 + %v (one switch interval); "+
		"CPU tasks get at least half of the loop time the echo leaves free (share >= %.1f x free)\n",
		goalRateRatio, cfg.interval, goalShare)

	all := make([][]row, len(results))
	for i, vr := range results {
		all[i] = rows(cfg, vr)
		fmt.Fprintf(w, "\n== %s [%s]\n", vr.v.title, vr.v.key)
		printSection(w, vr.v, all[i])
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "units: thousands of iterations of n++; n--, summed over the k workers; no load: their rate with the server idle (no client), once per k")
	fmt.Fprintln(w, "share: units/s under load / units/s with no load")
	fmt.Fprintln(w, "free: 1 - the server process's CPU time (user+sys, getrusage) / wall time in the k=0 case at the same N, capped to [0,1]")
	fmt.Fprintf(w, "CPython 3.11 threads, N=1 (measured elsewhere): k=0 24.9k, k=1 116, k=2 50, k=4 38 req/s; CPU work in another process %s; %s\n",
		fmtSI(cpythonOtherProc), cpythonIntervalRef)

	fmt.Fprintln(w)
	printSummary(w, all)
	if cfg.markdown {
		fmt.Fprintln(w)
		printMarkdown(w, cfg, all)
	}
}

// printSection prints one variant's rows as an aligned table.
func printSection(w io.Writer, v *variant, rs []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "N\tk\treq/s\tvs k=0\tp50\tp99\tp99 vs k=0\tCPU units/s\tno load\tshare\tfree\t"
	if v.goals {
		head += "share goal\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(tw, "%d\t%d\tfailed: %v\t\n", r.conns, r.k, r.err)
			continue
		}
		ratio, dp99, units, idle, share, goal := "-", "-", "-", "-", "-", "-"
		if r.k > 0 {
			ratio, dp99 = "n/a", "n/a"
			if r.base {
				ratio, dp99 = fmtRatio(r.ratio), fmtDelta(r.dp99)
			}
			units, idle, share = fmtSI(r.units), "n/a", "n/a"
			if r.hasIdle {
				idle, share = fmtSI(r.idle), fmt.Sprintf("%.2f", r.share)
			}
			if v.goals {
				ratio += " " + r.goals[0].String()
				dp99 += " " + r.goals[1].String()
				goal = r.goals[2].String()
				if r.hasFree {
					goal += fmt.Sprintf(" (>= %.2f)", goalShare*r.free)
				}
			}
		}
		free := "n/a"
		if r.hasFree {
			free = fmt.Sprintf("%.2f", r.free)
		}
		line := fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t",
			r.conns, r.k, fmtCount(r.rate), ratio, fmtDur(r.p50), fmtDur(r.p99), dp99, units, idle, share, free)
		if v.goals {
			line += goal + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// printSummary prints, per variant and N, req/s and p99 at each k > 0
// against k = 0, and the goals met.
func printSummary(w io.Writer, all [][]row) {
	fmt.Fprintln(w, "summary: req/s at k against k=0, and p99 minus the k=0 p99, at the same N")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, rs := range all {
		for i := 0; i < len(rs); {
			j := i
			var b strings.Builder
			met, known := 0, 0
			for ; j < len(rs) && rs[j].conns == rs[i].conns; j++ {
				r := rs[j]
				switch {
				case r.k == 0:
					continue
				case r.err != nil:
					fmt.Fprintf(&b, "k=%d failed\t", r.k)
				case !r.base:
					fmt.Fprintf(&b, "k=%d n/a\t", r.k)
				default:
					fmt.Fprintf(&b, "k=%d %s %s\t", r.k, fmtRatio(r.ratio), fmtDelta(r.dp99))
				}
				for _, g := range r.goals {
					if g.known {
						known++
						if g.ok {
							met++
						}
					}
				}
			}
			goals := ""
			if rs[i].v.goals {
				goals = fmt.Sprintf("goals met: %d of %d", met, known)
			}
			fmt.Fprintf(tw, "%s\tN=%d\t%s%s\t\n", rs[i].v.short, rs[i].conns, b.String(), goals)
			i = j
		}
	}
	tw.Flush()
}

// printMarkdown prints every variant's rows as one Markdown table.
func printMarkdown(w io.Writer, cfg *convoyConfig, all [][]row) {
	fmt.Fprintf(w, "%s, %d CPUs, switch interval %v, %v per case\n\n", runtime.Version(), runtime.NumCPU(), cfg.interval, cfg.duration)
	fmt.Fprintln(w, "| variant | N | k | req/s | vs k=0 | p50 | p99 | p99 vs k=0 | CPU units/s | share | free | goals |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, rs := range all {
		for _, r := range rs {
			if r.err != nil {
				fmt.Fprintf(w, "| %s | %d | %d | failed | | | | | | | | |\n", r.v.short, r.conns, r.k)
				continue
			}
			ratio, dp99, units, share, free, goals := "", "", "", "", "", ""
			if r.k > 0 {
				units = fmtSI(r.units)
				if r.base {
					ratio, dp99 = fmtRatio(r.ratio), fmtDelta(r.dp99)
				}
				if r.hasIdle {
					share = fmt.Sprintf("%.2f", r.share)
				}
				var gs []string
				for _, g := range r.goals {
					gs = append(gs, g.String())
				}
				goals = strings.Join(gs, " ")
			}
			if r.hasFree {
				free = fmt.Sprintf("%.2f", r.free)
			}
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.v.short, r.conns, r.k, fmtCount(r.rate), ratio, fmtDur(r.p50), fmtDur(r.p99), dp99, units, share, free, goals)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "goals (weft tasks only): req/s >= 0.9x k=0, p99 within one switch interval of k=0, share >= 0.5 x free")
}
