package main

// `bench echo` compares echo servers: weft's (internal/echo on one weft
// loop), a goroutine-per-connection server on the net package, and gnet's,
// each in a process of its own, under the same closed-loop load of 64-byte
// messages on loopback.
//
//	cd bench && go run . echo                       # the full table
//	go run . echo -duration 1s -reps 1 -conns 1,50  # a quick look
//	go run . echo -markdown                         # the table as Markdown

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weft-go/weft/bench/internal/loadgen"
)

// options are the settings of `bench echo`.
type options struct {
	duration time.Duration // counted time per measurement
	warmup   time.Duration // uncounted time before it
	reps     int           // measurements per server and connection count
	servers  []string      // which servers, in serverKinds order
	conns    []int         // connection counts
	markdown bool          // print the table as Markdown
	run      childRun      // -pin and -base
}

// echoMain is `bench echo` with its flags in args: it runs the
// measurements, with progress on stderr, prints the header and the table
// on stdout and returns the exit status.
func echoMain(args []string) int {
	opts, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench echo:", err)
		return 2
	}
	if err := pinLoad(opts.run.pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench echo:", err)
		return 1
	}
	runner = opts.run
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	printHeader(os.Stdout, opts)
	results, err := runBench(ctx, opts, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench echo:", err)
		return 1
	}
	printTable(os.Stdout, results, opts.markdown)
	return 0
}

// parseFlags reads the flags of `bench echo`.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench echo", flag.ContinueOnError)
	var o options
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "counted time of each measurement")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "uncounted warm-up before each measurement")
	fs.IntVar(&o.reps, "reps", 3, "measurements per server and connection count")
	servers := fs.String("servers", strings.Join(serverKinds, ","), "servers to run, comma-separated")
	conns := fs.String("conns", "1,50", "connection counts, comma-separated")
	fs.BoolVar(&o.markdown, "markdown", false, "print the table as Markdown")
	pin := fs.String("pin", "", "SERVERCPU:LOADCPU: run each server child on one CPU and the load on another (taskset)")
	fs.StringVar(&o.run.base, "base", "", "a build of this command against other weft code: adds each weft server's @base twin")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.duration <= 0 || o.warmup < 0 || o.reps < 1 {
		return o, fmt.Errorf("need -duration > 0, -warmup >= 0 and -reps >= 1")
	}
	var err error
	if o.servers, err = parseServers(*servers); err != nil {
		return o, err
	}
	if o.conns, err = parseConns(*conns); err != nil {
		return o, err
	}
	if o.run.pin, err = parsePin(*pin); err != nil {
		return o, err
	}
	o.servers = withBase(o.servers, o.run.base)
	return o, nil
}

// parseServers checks a comma-separated list of server names and returns
// them in the order of serverKinds, without repeats.
func parseServers(s string) ([]string, error) {
	want := map[string]bool{}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(serverKinds, name) {
			return nil, fmt.Errorf("unknown server %q (have %s)", name, strings.Join(serverKinds, ", "))
		}
		want[name] = true
	}
	var out []string
	for _, k := range serverKinds {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// parseConns reads a comma-separated list of connection counts, each
// between 1 and 10000, and returns them sorted without repeats.
func parseConns(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("bad connection count %q (want 1..10000)", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// runBench runs every measurement: for each repetition, for each
// connection count, each server in a fresh child process, so slow drift in
// the machine's load touches every server alike. It reports progress on
// progress and returns one result per server and connection count.
func runBench(ctx context.Context, o options, progress io.Writer) ([]*caseResult, error) {
	var results []*caseResult
	byKey := map[string]*caseResult{}
	for _, s := range o.servers {
		for _, n := range o.conns {
			r := &caseResult{server: s, conns: n, hist: new(loadgen.Histogram)}
			results = append(results, r)
			byKey[caseKey(s, n)] = r
		}
	}
	for rep := 1; rep <= o.reps; rep++ {
		for _, n := range o.conns {
			for _, s := range o.servers {
				cfg := loadgen.Config{Conns: n, Warmup: o.warmup, Duration: o.duration}
				res, cst, err := measure(ctx, s, cfg)
				if err != nil {
					return nil, fmt.Errorf("%s, %d conns, repetition %d: %w", s, n, rep, err)
				}
				byKey[caseKey(s, n)].add(res, cst)
				fmt.Fprintf(progress, "rep %d/%d  %-19s conns=%-4d %10.0f req/s  p50 %s  p99 %s  %8.0f req/CPU-s (%2.0f%% sys)  %.2f allocs/req\n",
					rep, o.reps, s, n, res.Rate(),
					formatLatency(res.Hist.Quantile(0.50)), formatLatency(res.Hist.Quantile(0.99)),
					cst.perCPUSecond(), 100*cst.sysShare(), cst.allocsPerRequest())
			}
		}
	}
	return results, nil
}

// caseKey names a server and connection count.
func caseKey(server string, conns int) string {
	return server + "/" + strconv.Itoa(conns)
}

// measure starts a server of the given kind, runs the load against it and
// stops it; it returns what the load saw and what it cost the server
// (CPU time and allocations over every round trip, warm-up included). The
// child is gone when measure returns, whatever happened.
func measure(ctx context.Context, kind string, cfg loadgen.Config) (loadgen.Result, cost, error) {
	ch, err := startChild(kind)
	if err != nil {
		return loadgen.Result{}, cost{}, err
	}
	u0, err := ch.usage()
	if err != nil {
		ch.kill()
		return loadgen.Result{}, cost{}, err
	}
	res, err := loadgen.Run(ctx, ch.addr, cfg)
	if err != nil {
		ch.kill()
		return res, cost{}, err
	}
	u1, err := ch.usage()
	if err != nil {
		ch.kill()
		return res, cost{}, err
	}
	if err := ch.stop(); err != nil {
		return res, cost{}, err
	}
	return res, u1.since(u0, res.Verified), nil
}
