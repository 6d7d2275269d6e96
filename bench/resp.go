package main

// `bench resp`: the Redis-protocol server of internal/resp, on weft and
// with a goroutine per connection, under Debian's redis-benchmark
// (package redis-tools). Each measurement starts a fresh server child
// pinned to one CPU (taskset), runs one redis-benchmark invocation pinned
// to another, and reads the child's CPU time (/proc/PID/stat) before and
// after it: requests per server CPU-second. Repetitions are interleaved:
// every server runs a case before any runs it again.
//
//	go run . resp                                    # weft@epoll, weft@uring, net
//	go run . resp -servers weft@epoll,weft-2loops@epoll,net -reps 3 -markdown
//	go run . resp -perf                               # system calls per request

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/bench/internal/resp"
)

// respServeMode is the subcommand that makes the program a RESP server
// child: `bench resp-serve KIND ADDR`.
const respServeMode = "resp-serve"

// respKinds are the RESP servers.
var respKinds = []string{"weft", "weft-2loops", "net"}

// respCase is one redis-benchmark invocation: a command (-t), clients
// (-c) and pipeline depth (-P).
type respCase struct {
	test     string // "set" or "get"
	clients  int
	pipeline int
}

func (c respCase) String() string {
	return fmt.Sprintf("%s -c %d -P %d", strings.ToUpper(c.test), c.clients, c.pipeline)
}

// respCases are the default cases: SET and GET at -P 1 and -P 16 with 50
// clients, then both with 1000 clients.
var respCases = []respCase{
	{"set", 50, 1}, {"get", 50, 1}, {"set", 50, 16}, {"get", 50, 16},
	{"set", 1000, 1}, {"get", 1000, 1},
}

// respOptions are the settings of `bench resp`.
type respOptions struct {
	servers   []string
	cases     []respCase
	reps      int
	n         int // requests per unpipelined run
	np        int // requests per pipelined run
	strace    bool
	perf      bool
	markdown  bool
	serverCPU int
	loadCPU   int
	timeout   time.Duration // bound on one redis-benchmark run
	bin       string        // redis-benchmark
	base      string        // the -base binary, for base: servers
}

// respRun is one measurement.
type respRun struct {
	rps      float64          // redis-benchmark's requests per second
	perCPU   float64          // requests per server CPU-second
	cpuFrac  float64          // server CPU-seconds per second of the run
	sysShare float64          // kernel share of the server's CPU
	allocs   float64          // server heap allocations per request
	calls    map[string]int64 // system calls in the run (with -strace or -perf)
	requests int64
}

// respResult is a server in a case over the repetitions.
type respResult struct {
	server string
	c      respCase
	runs   []respRun
}

func respMain(args []string) int {
	fs := flag.NewFlagSet("bench resp", flag.ContinueOnError)
	var o respOptions
	servers := fs.String("servers", "weft@epoll,weft@uring,net", "servers, [base:]KIND[@BACKEND][+VAR=VALUE...] (KIND weft, weft-2loops, net; BACKEND sets WEFT_BACKEND: epoll, uring; base: runs the -base binary's server)")
	fs.StringVar(&o.base, "base", "", "a bench binary built at another weft commit, for base: servers")
	cases := fs.String("cases", "", "cases TEST:CLIENTS:PIPELINE, comma-separated (default SET and GET at 50 clients -P 1 and -P 16, and at 1000 clients -P 1)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of every case and server, interleaved")
	fs.IntVar(&o.n, "n", 300000, "requests per unpipelined run (redis-benchmark -n)")
	fs.IntVar(&o.np, "np", 0, "requests per pipelined run (default 8 x -n)")
	fs.BoolVar(&o.strace, "strace", false, "count the server's system calls with strace -c -f over each run (slows the server: its rates mean nothing)")
	fs.BoolVar(&o.perf, "perf", false, "count the server's system calls by kind, all of them and its context switches with perf stat over each run")
	fs.BoolVar(&o.markdown, "markdown", false, "print the table as Markdown")
	fs.IntVar(&o.serverCPU, "server-cpu", 0, "the CPU the server is pinned to")
	fs.IntVar(&o.loadCPU, "load-cpu", 1, "the CPU redis-benchmark is pinned to")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "bound on one redis-benchmark run (it is killed after it)")
	fs.StringVar(&o.bin, "redis-benchmark", "redis-benchmark", "the redis-benchmark program")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench resp: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.np == 0 {
		o.np = 8 * o.n
	}
	if o.strace && o.perf {
		fmt.Fprintln(os.Stderr, "bench resp: -strace or -perf, not both")
		return 2
	}
	if o.reps < 1 || o.n < 1 || o.np < 1 || o.serverCPU == o.loadCPU || o.serverCPU < 0 || o.loadCPU < 0 {
		fmt.Fprintln(os.Stderr, "bench resp: -reps, -n and -np must be positive, and -server-cpu and -load-cpu two different CPUs")
		return 2
	}
	for s := range strings.SplitSeq(*servers, ",") {
		s = strings.TrimSpace(s)
		kind, _, base := splitSpec(s)
		if !slices.Contains(respKinds, kind) {
			fmt.Fprintf(os.Stderr, "bench resp: unknown server %q (have %s)\n", s, strings.Join(respKinds, ", "))
			return 2
		}
		if base && o.base == "" {
			fmt.Fprintf(os.Stderr, "bench resp: %s needs -base\n", s)
			return 2
		}
		o.servers = append(o.servers, s)
	}
	var err error
	if o.cases, err = parseRespCases(*cases); err != nil {
		fmt.Fprintln(os.Stderr, "bench resp:", err)
		return 2
	}
	if o.bin, err = exec.LookPath(o.bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench resp: redis-benchmark not found (Debian: sudo apt-get install -y redis-tools):", err)
		return 1
	}
	if _, err := lookTaskset(); err != nil {
		fmt.Fprintln(os.Stderr, "bench resp:", err)
		return 1
	}
	printRespHeader(os.Stdout, o)
	res, err := runResp(context.Background(), o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench resp:", err)
		return 1
	}
	printResp(os.Stdout, o, res)
	return 0
}

// parseRespCases reads TEST:CLIENTS:PIPELINE,...; "" is the default.
func parseRespCases(s string) ([]respCase, error) {
	if s == "" {
		return respCases, nil
	}
	var out []respCase
	for f := range strings.SplitSeq(s, ",") {
		p := strings.Split(strings.TrimSpace(f), ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("bad case %q: want TEST:CLIENTS:PIPELINE, e.g. get:50:16", f)
		}
		c, err1 := strconv.Atoi(p[1])
		pl, err2 := strconv.Atoi(p[2])
		t := strings.ToLower(p[0])
		if err1 != nil || err2 != nil || c < 1 || pl < 1 || (t != "set" && t != "get") {
			return nil, fmt.Errorf("bad case %q: TEST is set or get, CLIENTS and PIPELINE positive", f)
		}
		out = append(out, respCase{t, c, pl})
	}
	return out, nil
}

func runResp(ctx context.Context, o respOptions, progress io.Writer) ([]*respResult, error) {
	var res []*respResult
	for _, c := range o.cases {
		for _, s := range o.servers {
			res = append(res, &respResult{server: s, c: c})
		}
	}
	for rep := 1; rep <= o.reps; rep++ {
		for _, r := range res {
			m, err := measureResp(ctx, o, r.server, r.c)
			if err != nil {
				return nil, fmt.Errorf("%s, %v, repetition %d: %w", r.server, r.c, rep, err)
			}
			r.runs = append(r.runs, m)
			fmt.Fprintf(progress, "rep %d/%d  %-18s %-20v %9.0f req/s  %9.0f req/CPU-s  CPU %.2f", rep, o.reps, r.server, r.c, m.rps, m.perCPU, m.cpuFrac)
			if m.calls != nil {
				fmt.Fprintf(progress, "  calls/req %s", callsPerRequest(m.calls, m.requests))
			}
			fmt.Fprintln(progress)
		}
	}
	return res, nil
}

// measureResp starts a server child, runs redis-benchmark against it once
// and stops the child.
func measureResp(ctx context.Context, o respOptions, spec string, c respCase) (respRun, error) {
	ch, err := startPinnedChild(spec, o.base, o.serverCPU, respServeMode)
	if err != nil {
		return respRun{}, err
	}
	m, err := benchChild(ctx, o, ch, c)
	if stopErr := ch.stop(); err == nil {
		err = stopErr
	}
	return m, err
}

// benchChild runs one redis-benchmark invocation against ch.
func benchChild(ctx context.Context, o respOptions, ch *child, c respCase) (respRun, error) {
	host, port, err := net.SplitHostPort(ch.addr)
	if err != nil {
		return respRun{}, err
	}
	// GET finds the key that redis-benchmark asks for (without -r it is
	// the literal "key:__rand_int__"), holding SET's default value.
	if err := respSet(ch.addr, "key:__rand_int__", "xxx"); err != nil {
		return respRun{}, err
	}
	n := o.n
	if c.pipeline > 1 {
		n = o.np
	}
	u0, err := ch.usage()
	if err != nil {
		return respRun{}, err
	}
	var st *straceRun
	var pf *perfRun
	switch {
	case o.strace:
		if st, err = startStrace(ch.cmd.Process.Pid); err != nil {
			return respRun{}, err
		}
	case o.perf:
		if pf, err = startPerf(ch.cmd.Process.Pid); err != nil {
			return respRun{}, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	bench := exec.CommandContext(rctx, "taskset", "-c", strconv.Itoa(o.loadCPU), o.bin,
		"-h", host, "-p", port, "-c", strconv.Itoa(c.clients), "-n", strconv.Itoa(n),
		"-P", strconv.Itoa(c.pipeline), "-t", c.test, "--csv")
	bench.WaitDelay = time.Second
	start := time.Now()
	out, berr := bench.Output()
	elapsed := time.Since(start)
	var calls map[string]int64
	var serr error
	switch {
	case st != nil:
		calls, serr = st.stop()
	case pf != nil:
		calls, serr = pf.stop()
	}
	if berr == nil {
		berr = serr
	}
	u1, err := ch.usage()
	if berr != nil {
		if rctx.Err() != nil {
			return respRun{}, fmt.Errorf("redis-benchmark did not finish within %v (-timeout)", o.timeout)
		}
		var ee *exec.ExitError
		if errors.As(berr, &ee) {
			return respRun{}, fmt.Errorf("redis-benchmark: %w: %s", berr, ee.Stderr)
		}
		return respRun{}, berr
	}
	if err != nil {
		return respRun{}, err
	}
	rps, err := parseBenchCSV(out, c.test)
	if err != nil {
		return respRun{}, err
	}
	cst := u1.since(u0, int64(n))
	return respRun{
		rps:      rps,
		perCPU:   cst.perCPUSecond(),
		cpuFrac:  cst.cpu.Seconds() / elapsed.Seconds(),
		sysShare: cst.sysShare(),
		allocs:   cst.allocsPerRequest(),
		calls:    calls,
		requests: int64(n),
	}, nil
}

// respSet sets key to value through a connection of its own.
func respSet(addr, key, value string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("SET before the run: %w", err)
	}
	if line != "+OK\r\n" {
		return fmt.Errorf("SET before the run: %q", line)
	}
	return nil
}

// parseBenchCSV reads redis-benchmark --csv's output: a header line, then
// "TEST","RPS",... per test. It returns test's requests per second.
func parseBenchCSV(out []byte, test string) (float64, error) {
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark's output %q: %w", out, err)
	}
	for _, r := range recs {
		if len(r) >= 2 && strings.EqualFold(r[0], test) {
			v, err := strconv.ParseFloat(r[1], 64)
			if err != nil {
				return 0, fmt.Errorf("redis-benchmark's rate %q: %w", r[1], err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("redis-benchmark's output has no %s line: %q", strings.ToUpper(test), out)
}

// callsPerRequest lists calls per request, largest first.
func callsPerRequest(calls map[string]int64, requests int64) string {
	type kv struct {
		name string
		n    int64
	}
	var all []kv
	for k, v := range calls {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.n != b.n {
			return int(b.n - a.n)
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, e := range all {
		per := float64(e.n) / float64(max(requests, 1))
		if per < 0.0005 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.3f", e.name, per))
	}
	return strings.Join(parts, ", ")
}

func printRespHeader(w io.Writer, o respOptions) {
	k, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	l, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "bench resp: %s; server child on CPU %d, redis-benchmark on CPU %d; %d reps, interleaved; -n %d (-P 1), %d (pipelined)\n",
		runtime.Version(), o.serverCPU, o.loadCPU, o.reps, o.n, o.np)
	fmt.Fprintf(w, "kernel %s, load average at start %s", strings.TrimSpace(string(k)), l)
}

// printResp prints one row per case and server.
func printResp(w io.Writer, o respOptions, res []*respResult) {
	header := []string{"case", "server", "req/s (median)", "min..max", "req per server CPU-s (median)", "min..max", "vs net (per rep)", "CPU", "sys", "allocs/req"}
	switch {
	case o.strace:
		header = append(header, "calls per request (strace -c -f)")
	case o.perf:
		header = append(header, "per request (perf stat: all system calls, context switches, calls by kind)")
	}
	var rows [][]string
	for _, r := range res {
		rps := rcol(r.runs, func(m respRun) float64 { return m.rps })
		per := rcol(r.runs, func(m respRun) float64 { return m.perCPU })
		row := []string{
			r.c.String(), r.server,
			formatCount(medianOf(rps)), spread(rps, formatCount),
			formatCount(medianOf(per)), spread(per, formatCount),
			vsNet(r, res),
			fmt.Sprintf("%.2f", medianOf(rcol(r.runs, func(m respRun) float64 { return m.cpuFrac }))),
			fmt.Sprintf("%.0f%%", 100*medianOf(rcol(r.runs, func(m respRun) float64 { return m.sysShare }))),
			formatAllocs(medianOf(rcol(r.runs, func(m respRun) float64 { return m.allocs }))),
		}
		if o.strace || o.perf {
			sum := map[string]int64{}
			var reqs int64
			for _, m := range r.runs {
				reqs += m.requests
				for k, v := range m.calls {
					sum[k] += v
				}
			}
			row = append(row, callsPerRequest(sum, reqs))
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w)
	if o.markdown {
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, "| --- | --- |"+strings.Repeat(" ---: |", len(header)-2))
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
	fmt.Fprintln(w, "req/s: redis-benchmark's own figure; req per server CPU-s: the run's requests (-n) over the server child's CPU time (utime+stime, /proc/PID/stat) read before and after it;")
	fmt.Fprintln(w, "vs net: median over net's median in the same case, with the range of the per-repetition ratios; CPU: server CPU-seconds per second; sys: the kernel's share of them; allocs/req: the child's MemStats.Mallocs per request.")
}

// vsNet is r's median requests per CPU-second over the net server's in
// the same case, with the range of the ratios of each repetition.
func vsNet(r *respResult, res []*respResult) string {
	for _, g := range res {
		if g.c != r.c || g == r {
			continue
		}
		if k, _, _ := splitSpec(g.server); k != "net" {
			continue
		}
		var rs []float64
		for i := range min(len(r.runs), len(g.runs)) {
			rs = append(rs, r.runs[i].perCPU/g.runs[i].perCPU)
		}
		m := medianOf(rcol(r.runs, func(m respRun) float64 { return m.perCPU })) /
			medianOf(rcol(g.runs, func(m respRun) float64 { return m.perCPU }))
		return fmt.Sprintf("%.2fx (%.2f..%.2f)", m, slices.Min(rs), slices.Max(rs))
	}
	return "-"
}

// rcol is one figure of each run.
func rcol(runs []respRun, f func(respRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, m := range runs {
		out[i] = f(m)
	}
	return out
}

// respChildMain runs the RESP server named by args (KIND ADDR) until its
// standard input ends, and returns the process's exit code. KIND weft
// runs on one loop, weft-2loops on two (the backend from WEFT_BACKEND),
// net with a goroutine per connection.
func respChildMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench resp-serve KIND ADDR")
		return 2
	}
	kind, addr := args[0], args[1]
	// BENCH_CPUPROFILE=path profiles the child (one measurement: -reps 1,
	// one server, one case).
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench resp-serve %s: %v\n", kind, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "bench resp-serve %s: %v\n", kind, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go answerCommands(cancel)
	var err error
	switch kind {
	case "weft", "weft-2loops":
		loops := 1
		if kind == "weft-2loops" {
			loops = 2
		}
		_, err = weft.Run(func(t *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(t, "tcp", addr)
			if err != nil {
				return struct{}{}, err
			}
			announce(ln.Addr())
			stop := context.AfterFunc(ctx, func() { ln.Close() })
			defer stop()
			return struct{}{}, resp.Serve(t, ln, resp.NewWeftStore())
		}, weft.WithLoops(loops))
	case "net":
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			announce(ln.Addr())
			stop := context.AfterFunc(ctx, func() { ln.Close() })
			defer stop()
			err = resp.ServeNet(ln, resp.NewNetStore())
		}
	default:
		err = fmt.Errorf("unknown server %q (have %s)", kind, strings.Join(respKinds, ", "))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench resp-serve %s: %v\n", kind, err)
		return 1
	}
	return 0
}
