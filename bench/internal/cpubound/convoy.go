package cpubound

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-go/weft/internal/cliflag"
)

// convoyConfig is what the flags of `bench convoy` ask for.
type convoyConfig struct {
	duration time.Duration // counted time of each case
	warmup   time.Duration // uncounted time before it
	interval time.Duration // weft's switch interval
	reps     int           // repetitions of every case, interleaved
	ks       []int         // CPU workers per case, ascending
	conns    []int         // connection counts N, ascending
	variants []*variant
	svg      string // chart file, or ""
	trace    string // trace file of the first weft case with workers, or ""
	markdown bool   // also print the table as Markdown
	hogs     int    // unrelated CPU-bound processes kept running beside the whole run
}

// idleLength bounds the window in which a variant's CPU workers are timed
// with no load, once per k and repetition.
const idleLength = time.Second

// Convoy is `bench convoy` with its flags in args: for each variant, N
// and k it runs the echo server beside k CPU workers under load from a
// client process (this executable again, in ClientMode), -reps times, and
// prints a table of echo rate, latency and the workers' share of the CPU,
// each a median over the repetitions with its spread, to stdout; progress
// goes to stderr. It returns nil after -h, and an error for bad flags or
// when a measurement failed.
func Convoy(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseConvoyFlags(stdout, stderr, args)
	if err != nil || cfg == nil {
		return err
	}
	convoyTrace = cfg.trace
	stopHogs, err := startHogs(cfg.hogs)
	if err != nil {
		return err
	}
	results, failed := runConvoy(cfg, stderr)
	stopHogs()
	if convoyTraceErr != nil {
		return convoyTraceErr
	}
	all := make([][]row, len(results))
	for i, vr := range results {
		all[i] = rows(cfg, vr)
	}
	printConvoy(stdout, cfg, all)
	if cfg.svg != "" {
		if err := os.WriteFile(cfg.svg, []byte(convoySVG(cfg, all)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nchart written to %s\n", cfg.svg)
	}
	if failed > 0 {
		return fmt.Errorf("bench convoy: %d measurement(s) failed", failed)
	}
	return nil
}

// runConvoy runs every measurement cfg asks for, interleaved like the
// bench module's: repetition 1 of every variant's no-load runs and cases,
// in order, then repetition 2 of all of them, and so on, so that slow
// drift in the machine's load touches every case alike. It reports each
// measurement on progress and returns the results, one per variant, with
// the number of measurements that failed (the others go on regardless).
func runConvoy(cfg *convoyConfig, progress io.Writer) ([]*variantResult, int) {
	results := make([]*variantResult, len(cfg.variants))
	for i, v := range cfg.variants {
		vr := &variantResult{v: v, idle: map[int][]repResult{}}
		for _, n := range cfg.conns {
			for _, k := range cfg.ks {
				vr.cases = append(vr.cases, convoyCase{conns: n, k: k})
			}
		}
		results[i] = vr
	}
	failed := 0
	for rep := 1; rep <= cfg.reps; rep++ {
		for _, vr := range results {
			v := vr.v
			say := func(format string, a ...any) {
				fmt.Fprintf(progress, "convoy: rep %d/%d %s ", rep, cfg.reps, v.key)
				fmt.Fprintf(progress, format, a...)
			}
			for _, k := range cfg.ks {
				if k == 0 {
					continue
				}
				m, err := v.run(k, cfg.interval, idleDriver(cfg.warmup, min(cfg.duration, idleLength)))
				vr.idle[k] = append(vr.idle[k], repResult{m: m, err: err})
				if err != nil {
					failed++
					say("k=%d no load: %v\n", k, err)
					continue
				}
				say("k=%d no load: %s units/s\n", k, fmtSI(m.win.unitRate()))
			}
			for i := range vr.cases {
				c := &vr.cases[i]
				m, err := v.run(c.k, cfg.interval, loadDriver(c.conns, cfg.warmup, cfg.duration))
				if err == nil && m.load == nil {
					err = errors.New("no load report")
				}
				c.reps = append(c.reps, repResult{m: m, err: err})
				if err != nil {
					failed++
					say("N=%d k=%d: %v\n", c.conns, c.k, err)
					continue
				}
				say("N=%d k=%d: %s req/s, p99 %s", c.conns, c.k,
					fmtCount(m.load.Rate), fmtDur(time.Duration(m.load.P99NS)))
				if c.k > 0 {
					fmt.Fprintf(progress, ", %s units/s", fmtSI(m.win.unitRate()))
				}
				fmt.Fprintln(progress)
			}
		}
	}
	return results, failed
}

// parseConvoyFlags parses the flags of `bench convoy`. It returns a
// nil config and no error when only help was asked for.
func parseConvoyFlags(stdout, stderr io.Writer, args []string) (*convoyConfig, error) {
	cfg := &convoyConfig{}
	fs := flag.NewFlagSet("bench convoy", flag.ContinueOnError)
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "counted time of each case")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "uncounted time before each case")
	fs.DurationVar(&cfg.interval, "interval", 5*time.Millisecond, "weft's switch interval (WithSwitchInterval)")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions of every case, interleaved; the table shows medians and min..max")
	ks := fs.String("k", "0,1,2,4", "CPU-bound workers beside the echo server, comma-separated")
	conns := fs.String("conns", "1,50", "client connections N, comma-separated")
	vs := fs.String("variants", "all", "variants to run, comma-separated: "+variantKeys()+" (or all)")
	fs.StringVar(&cfg.svg, "svg", "", "write a bar chart of req/s by k (N=1) to this SVG `file`")
	fs.BoolVar(&cfg.markdown, "markdown", false, "also print the table as Markdown")
	fs.IntVar(&cfg.hogs, "hog", 0, "unrelated CPU-bound processes (a shell loop each) kept running beside the whole run: a loaded machine")
	fs.StringVar(&cfg.trace, "trace", "", "record the first weft case with workers and write its trace to this `file`.json and its timeline to file.svg (use a short -duration)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench convoy [flags]")
		fs.PrintDefaults()
	}
	if ok, err := cliflag.Parse(fs, stdout, stderr, args); !ok {
		return nil, err
	}
	var err error
	fail := func(format string, a ...any) (*convoyConfig, error) {
		fs.SetOutput(stderr)
		fs.Usage()
		return nil, fmt.Errorf("bench convoy: "+format, a...)
	}
	if cfg.ks, err = parseIntList(*ks, 0, 64); err != nil {
		return fail("-k: %v", err)
	}
	if cfg.conns, err = parseIntList(*conns, 1, 10000); err != nil {
		return fail("-conns: %v", err)
	}
	if cfg.variants, err = parseVariants(*vs); err != nil {
		return fail("-variants: %v", err)
	}
	switch {
	case cfg.duration <= 0:
		return fail("-duration must be positive")
	case cfg.warmup < 0:
		return fail("-warmup must not be negative")
	case cfg.interval <= 0:
		return fail("-interval must be positive")
	case cfg.reps < 1:
		return fail("-reps must be at least 1")
	}
	return cfg, nil
}

// parseIntList parses a comma-separated list of integers in [lo, hi] and
// returns them ascending, without repeats.
func parseIntList(s string, lo, hi int) ([]int, error) {
	var xs []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		x, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		if x < lo || x > hi {
			return nil, fmt.Errorf("%d is outside %d..%d", x, lo, hi)
		}
		xs = append(xs, x)
	}
	slices.Sort(xs)
	return slices.Compact(xs), nil
}

// startHogs starts n unrelated CPU-bound processes (shell loops), the
// load of a machine the benchmark shares, and returns the function that
// kills them (by pid) and waits for them.
func startHogs(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for i := 0; i < n; i++ {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("bench convoy: -hog: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
