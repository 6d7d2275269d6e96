package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// convoyConfig is what the flags of `weft bench convoy` ask for.
type convoyConfig struct {
	duration time.Duration // counted time of each case
	warmup   time.Duration // uncounted time before it
	interval time.Duration // weft's switch interval
	ks       []int         // CPU workers per case, ascending
	conns    []int         // connection counts N, ascending
	variants []*variant
	svg      string // chart file, or ""
	markdown bool   // also print the table as Markdown
}

// idleLength bounds the window in which a variant's CPU workers are timed
// with no load, once per k.
const idleLength = time.Second

// convoy is `weft bench convoy`: for each variant, N and k it runs the echo
// server beside k CPU workers under load from a client process, and prints
// a table of echo rate, latency and the workers' share of the CPU.
func convoy(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseConvoyFlags(stdout, stderr, args)
	if err != nil || cfg == nil {
		return err
	}
	results := make([]*variantResult, 0, len(cfg.variants))
	failed := 0
	for _, v := range cfg.variants {
		vr := &variantResult{v: v, idle: map[int]float64{}, idleErr: map[int]error{}}
		for _, k := range cfg.ks {
			if k == 0 {
				continue
			}
			m, err := v.run(k, cfg.interval, idleDriver(cfg.warmup, min(cfg.duration, idleLength)))
			if err != nil {
				vr.idleErr[k] = err
				failed++
				fmt.Fprintf(stderr, "convoy: %s k=%d no load: %v\n", v.key, k, err)
				continue
			}
			vr.idle[k] = m.win.unitRate()
			fmt.Fprintf(stderr, "convoy: %s k=%d no load: %s units/s\n", v.key, k, fmtSI(vr.idle[k]))
		}
		for _, n := range cfg.conns {
			for _, k := range cfg.ks {
				m, err := v.run(k, cfg.interval, loadDriver(n, cfg.warmup, cfg.duration))
				vr.cases = append(vr.cases, convoyCase{conns: n, k: k, m: m, err: err})
				if err != nil {
					failed++
					fmt.Fprintf(stderr, "convoy: %s N=%d k=%d: %v\n", v.key, n, k, err)
					continue
				}
				fmt.Fprintf(stderr, "convoy: %s N=%d k=%d: %s req/s, p99 %s", v.key, n, k,
					fmtCount(m.load.Rate), fmtDur(time.Duration(m.load.P99NS)))
				if k > 0 {
					fmt.Fprintf(stderr, ", %s units/s", fmtSI(m.win.unitRate()))
				}
				fmt.Fprintln(stderr)
			}
		}
		results = append(results, vr)
	}
	printConvoy(stdout, cfg, results)
	if cfg.svg != "" {
		if err := os.WriteFile(cfg.svg, []byte(convoySVG(cfg, results)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nchart written to %s\n", cfg.svg)
	}
	if failed > 0 {
		return fmt.Errorf("bench convoy: %d measurement(s) failed", failed)
	}
	return nil
}

// parseConvoyFlags parses the flags of `weft bench convoy`. It returns a
// nil config and no error when only help was asked for.
func parseConvoyFlags(stdout, stderr io.Writer, args []string) (*convoyConfig, error) {
	cfg := &convoyConfig{}
	fs := flag.NewFlagSet("bench convoy", flag.ContinueOnError)
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "counted time of each case")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "uncounted time before each case")
	fs.DurationVar(&cfg.interval, "interval", 5*time.Millisecond, "weft's switch interval (WithSwitchInterval)")
	ks := fs.String("k", "0,1,2,4", "CPU-bound workers beside the echo server, comma-separated")
	conns := fs.String("conns", "1,50", "client connections N, comma-separated")
	vs := fs.String("variants", "all", "variants to run, comma-separated: "+variantKeys()+" (or all)")
	fs.StringVar(&cfg.svg, "svg", "", "write a bar chart of req/s by k (N=1) to this SVG `file`")
	fs.BoolVar(&cfg.markdown, "markdown", false, "also print the table as Markdown")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: weft bench convoy [flags]")
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, stdout, stderr, args); !ok {
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
	}
	return cfg, nil
}

// parseFlags parses args with fs and reports whether the command should
// go on. Help goes to stdout (false, nil); a bad flag or a left-over
// argument prints the usage to stderr and returns the error.
func parseFlags(fs *flag.FlagSet, stdout, stderr io.Writer, args []string) (bool, error) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return false, nil
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fs.SetOutput(stderr)
		fs.Usage()
		return false, fmt.Errorf("%s: %w", fs.Name(), err)
	}
	return true, nil
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
