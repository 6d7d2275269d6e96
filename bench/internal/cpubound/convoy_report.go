package cpubound

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/weft-go/weft/bench/internal/loadgen"
)

// CPython 3.11's threaded echo server on a machine like this one, N = 1,
// with k CPU-bound threads beside it (measured elsewhere, quoted for
// comparison): the convoy effect weft's scheduler is meant to avoid.
var (
	cpythonRate        = map[int]float64{0: 24900, 1: 116, 2: 50, 4: 38}
	cpythonOtherProc   = 22800.0 // CPU work in another process
	cpythonIntervalRef = "with a smaller switch interval: 668 req/s at 1 ms, 4.6k at 0.1 ms"
)

// printConvoy prints the header, one table section per variant (all
// holds each variant's rows), the definitions, a summary and, with
// -markdown, the Markdown table.
func printConvoy(w io.Writer, cfg *convoyConfig, all [][]row) {
	fmt.Fprintln(w, "bench convoy: an echo server beside k CPU-bound workers (the GIL's convoy effect)")
	fmt.Fprintf(w, "%s %s/%s, NumCPU=%d, GOMAXPROCS=%d, switch interval %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cfg.interval)
	fmt.Fprintf(w, "each case: %v warm-up + %v counted; N connections from a load client in another process (%d-byte messages, closed loop, every echo verified)\n",
		cfg.warmup, cfg.duration, loadgen.MessageSize)
	if cfg.hogs > 0 {
		fmt.Fprintf(w, "beside %d unrelated CPU-bound process(es) (-hog), running all along\n", cfg.hogs)
	}
	fmt.Fprintf(w, "%d repetition(s) of every case, interleaved (repetition 1 of every case in order, then repetition 2, ...); figures are medians over them, with min..max\n",
		cfg.reps)
	fmt.Fprintf(w, "goals for weft's tasks on the loop, at k>0 against k=0 at the same N, on the medians: req/s >= %.1fx; p99 <= k=0 p99 + %v (one switch interval); "+
		"CPU tasks get at least half of the loop time the echo leaves free (share >= %.1f x free)\n",
		goalRateRatio, cfg.interval, goalShare)

	for _, rs := range all {
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n== %s [%s]\n", rs[0].v.title, rs[0].v.key)
		printSection(w, rs[0].v, rs)
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "req/s: median over the repetitions; min..max: the least and the most of a repetition")
	fmt.Fprintln(w, "vs k=0: median req/s / the median req/s at k=0 and the same N; per rep: the same ratio within each repetition "+
		"(req/s in repetition i / k=0's in repetition i), min..max: drift across the run cancels out of it")
	fmt.Fprintln(w, "p50, p99: of the round-trip latencies pooled over the repetitions (their histograms merged); p99 vs k=0: minus k=0's pooled p99")
	fmt.Fprintln(w, "units: thousands of iterations of n++; n--, summed over the k workers, median units/s; "+
		"no load: their median rate with the server idle (no client), measured in every repetition, once per k")
	fmt.Fprintln(w, "share: units/s under load / units/s with no load in the same repetition, median")
	fmt.Fprintln(w, "free: 1 - the server process's CPU time (user+sys, getrusage) / wall time in the k=0 case at the same N, capped to [0,1], median")
	fmt.Fprintf(w, "CPython 3.11 threads, N=1 (measured elsewhere): k=0 24.9k, k=1 116, k=2 50, k=4 38 req/s; CPU work in another process %s; %s\n",
		fmtSI(cpythonOtherProc), cpythonIntervalRef)

	fmt.Fprintln(w)
	printSummary(w, all)
	if cfg.markdown {
		fmt.Fprintln(w)
		printMarkdown(w, cfg, all)
	}
}

// rateCell formats a row's median req/s, saying how many repetitions it
// rests on when some failed.
func rateCell(r *row) string {
	s := fmtCount(r.rate)
	if r.okReps < r.reps {
		s += fmt.Sprintf(" (%d of %d reps)", r.okReps, r.reps)
	}
	return s
}

// spreadCell formats a row's least and most req/s of a repetition.
func spreadCell(r *row) string {
	return fmtCount(r.rateLo) + ".." + fmtCount(r.rateHi)
}

// repRatioCell formats the range of a row's within-repetition ratios to
// k = 0, or n/a.
func repRatioCell(r *row) string {
	if !r.repRatio {
		return "n/a"
	}
	return fmtRatio(r.ratioLo) + ".." + fmtRatio(r.ratioHi)
}

// printSection prints one variant's rows as an aligned table.
func printSection(w io.Writer, v *variant, rs []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "N\tk\treq/s\tmin..max\tvs k=0\tper rep\tp50\tp99\tp99 vs k=0\tCPU units/s\tno load\tshare\tfree\t"
	if v.goals {
		head += "share goal\t"
	}
	fmt.Fprintln(tw, head)
	for i := range rs {
		r := &rs[i]
		if !r.measured() {
			fmt.Fprintf(tw, "%d\t%d\tfailed: %v\t\n", r.conns, r.k, r.err)
			continue
		}
		ratio, perRep, dp99, units, idle, share, goal := "-", "-", "-", "-", "-", "-", "-"
		if r.k > 0 {
			ratio, perRep, dp99 = "n/a", "n/a", "n/a"
			if r.base {
				ratio, perRep, dp99 = fmtRatio(r.ratio), repRatioCell(r), fmtDelta(r.dp99)
			}
			units, idle, share = fmtSI(r.units), "n/a", "n/a"
			if r.hasIdle {
				idle = fmtSI(r.idle)
			}
			if r.hasShare {
				share = fmt.Sprintf("%.2f", r.share)
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
		line := fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t",
			r.conns, r.k, rateCell(r), spreadCell(r), ratio, perRep, fmtDur(r.p50), fmtDur(r.p99), dp99, units, idle, share, free)
		if v.goals {
			line += goal + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// printSummary prints, per variant and N, the median req/s at each k > 0
// against k = 0 with the range of the within-repetition ratios, the p99
// against k = 0's, and the goals met.
func printSummary(w io.Writer, all [][]row) {
	fmt.Fprintln(w, "summary: median req/s at k against k=0 (per-repetition ratios min..max), and p99 minus the k=0 p99, at the same N")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, rs := range all {
		for i := 0; i < len(rs); {
			j := i
			var b strings.Builder
			met, known := 0, 0
			for ; j < len(rs) && rs[j].conns == rs[i].conns; j++ {
				r := &rs[j]
				switch {
				case r.k == 0:
					continue
				case !r.measured():
					fmt.Fprintf(&b, "k=%d failed\t", r.k)
				case !r.base:
					fmt.Fprintf(&b, "k=%d n/a\t", r.k)
				default:
					fmt.Fprintf(&b, "k=%d %s (%s) %s\t", r.k, fmtRatio(r.ratio), repRatioCell(r), fmtDelta(r.dp99))
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
	fmt.Fprintf(w, "%s, %d CPUs, switch interval %v, %v per case, median of %d interleaved repetition(s)\n\n",
		runtime.Version(), runtime.NumCPU(), cfg.interval, cfg.duration, cfg.reps)
	fmt.Fprintln(w, "| variant | N | k | req/s | min..max | vs k=0 | per rep | p50 | p99 | p99 vs k=0 | CPU units/s | share | free | goals |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, rs := range all {
		for i := range rs {
			r := &rs[i]
			if !r.measured() {
				fmt.Fprintf(w, "| %s | %d | %d | failed | | | | | | | | | | |\n", r.v.short, r.conns, r.k)
				continue
			}
			ratio, perRep, dp99, units, share, free, goals := "", "", "", "", "", "", ""
			if r.k > 0 {
				units = fmtSI(r.units)
				if r.base {
					ratio, perRep, dp99 = fmtRatio(r.ratio), repRatioCell(r), fmtDelta(r.dp99)
				}
				if r.hasShare {
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
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.v.short, r.conns, r.k, rateCell(r), spreadCell(r), ratio, perRep, fmtDur(r.p50), fmtDur(r.p99), dp99, units, share, free, goals)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "req/s: median over the repetitions; per rep: req/s / k=0's within each repetition, min..max; p50, p99: pooled over the repetitions")
	fmt.Fprintln(w, "goals (weft tasks only, on the medians): req/s >= 0.9x k=0, p99 within one switch interval of k=0, share >= 0.5 x free")
}
