package main

// `bench pinned`: echo servers pinned to one CPU, the load on another, and
// what each request costs the server: CPU time (from /proc/PID/stat) and,
// with -strace, system calls (strace -c -f -p PID over the counted window),
// or with -perf the same from perf stat, which does not slow the calls
// (and adds the context switches).
//
//	go run . pinned                                   # weft, gnet, net at 1 and 50 conns
//	go run . pinned -servers weft@epoll,weft@uring,gnet -strace
//	go run . pinned -servers weft@epoll,gnet -conns 50 -perf
//	go run . pinned -base /tmp/bench-base -servers base:weft,weft,gnet
//
// A server is [base:]KIND[@BACKEND][+VAR=VALUE...]: KIND as for the table
// (weft, gnet, net...), BACKEND sets WEFT_BACKEND in the child (epoll,
// uring, portable), each VAR=VALUE is set in the child's environment,
// and base: runs the child from the binary given with -base (a build of
// this module at an older weft commit), to compare with the code before a
// change in the same run.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weft-go/weft/bench/internal/loadgen"
)

// pinnedOptions are the settings of `bench pinned`.
type pinnedOptions struct {
	duration, warmup time.Duration
	reps             int
	servers          []string
	conns            []int
	strace           bool
	perf             bool
	base             string // the -base binary
	serverCPU        int
	loadCPU          int
}

// pinnedEnv marks a `bench pinned` process that already runs on the load
// CPU (it re-executes itself under taskset).
const pinnedEnv = "BENCH_PINNED_LOAD"

// ioCalls are the system calls counted as I/O: reads, writes and polls.
var ioCalls = map[string]bool{
	"read": true, "write": true, "readv": true, "writev": true,
	"recvfrom": true, "sendto": true, "recvmsg": true, "sendmsg": true,
	"epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true, "epoll_ctl": true,
	"poll": true, "ppoll": true, "io_uring_enter": true,
}

func pinnedMain(args []string) int {
	fs := flag.NewFlagSet("bench pinned", flag.ContinueOnError)
	var o pinnedOptions
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "counted time of each measurement")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "uncounted warm-up before it")
	fs.IntVar(&o.reps, "reps", 3, "measurements per server and connection count, interleaved")
	servers := fs.String("servers", "weft,gnet,net", "servers: [base:]KIND[@BACKEND], comma-separated")
	conns := fs.String("conns", "1,50", "connection counts")
	fs.BoolVar(&o.strace, "strace", false, "count the server's system calls with strace -c over the window")
	fs.BoolVar(&o.perf, "perf", false, "count the server's system calls by kind, all of them and its context switches with perf stat over the window")
	fs.StringVar(&o.base, "base", "", "a bench binary built at another weft commit, for base: servers")
	fs.IntVar(&o.serverCPU, "server-cpu", 0, "the CPU the server is pinned to")
	fs.IntVar(&o.loadCPU, "load-cpu", 1, "the CPU the load generator is pinned to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.strace && o.perf {
		fmt.Fprintln(os.Stderr, "bench pinned: -strace or -perf, not both")
		return 2
	}
	var err error
	if o.conns, err = parseConns(*conns); err != nil {
		fmt.Fprintln(os.Stderr, "bench pinned:", err)
		return 2
	}
	for s := range strings.SplitSeq(*servers, ",") {
		s = strings.TrimSpace(s)
		kind, _, base := splitSpec(s)
		if !slices.Contains(serverKinds, kind) {
			fmt.Fprintf(os.Stderr, "bench pinned: unknown server %q\n", s)
			return 2
		}
		if base && o.base == "" {
			fmt.Fprintf(os.Stderr, "bench pinned: %s needs -base\n", s)
			return 2
		}
		o.servers = append(o.servers, s)
	}
	if os.Getenv(pinnedEnv) == "" {
		// Run again on the load CPU, so that the load never shares the
		// server's.
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench pinned:", err)
			return 1
		}
		cmd := exec.Command("taskset", append([]string{"-c", strconv.Itoa(o.loadCPU), exe, "pinned"}, args...)...)
		cmd.Env = append(os.Environ(), pinnedEnv+"=1")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode()
			}
			fmt.Fprintln(os.Stderr, "bench pinned:", err)
			return 1
		}
		return 0
	}
	printPinnedHeader(os.Stdout, o)
	res, err := runPinned(context.Background(), o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench pinned:", err)
		return 1
	}
	printPinned(os.Stdout, o, res)
	return 0
}

// splitSpec reads [base:]KIND[@BACKEND][+VAR=VALUE...].
func splitSpec(s string) (kind, backend string, base bool) {
	if rest, ok := strings.CutPrefix(s, "base:"); ok {
		s, base = rest, true
	}
	s, _, _ = strings.Cut(s, "+")
	kind, backend, _ = strings.Cut(s, "@")
	return kind, backend, base
}

// specEnv is the VAR=VALUE settings of a server spec.
func specEnv(s string) []string {
	parts := strings.Split(s, "+")
	return parts[1:]
}

// pinnedRun is one measurement.
type pinnedRun struct {
	rate    float64          // round trips per second
	perCPU  float64          // round trips per server CPU-second
	cpuFrac float64          // server CPU-seconds per second
	calls   map[string]int64 // system calls in the window (with -strace)
	trips   int64            // round trips in the window
}

// pinnedCase is a server and connection count over the repetitions.
type pinnedCase struct {
	server string
	conns  int
	runs   []pinnedRun
}

func runPinned(ctx context.Context, o pinnedOptions, progress io.Writer) ([]*pinnedCase, error) {
	var cases []*pinnedCase
	for _, n := range o.conns {
		for _, s := range o.servers {
			cases = append(cases, &pinnedCase{server: s, conns: n})
		}
	}
	for rep := 1; rep <= o.reps; rep++ {
		for _, c := range cases {
			r, err := measurePinned(ctx, o, c.server, c.conns)
			if err != nil {
				return nil, fmt.Errorf("%s, %d conns, repetition %d: %w", c.server, c.conns, rep, err)
			}
			c.runs = append(c.runs, r)
			fmt.Fprintf(progress, "rep %d/%d  %-18s conns=%-4d %9.0f req/s  %9.0f req/CPU-s  CPU %.2f", rep, o.reps, c.server, c.conns, r.rate, r.perCPU, r.cpuFrac)
			if r.calls != nil {
				io, all := callsPer(r)
				fmt.Fprintf(progress, "  calls/rt I/O %.2f all %.2f", io, all)
			}
			fmt.Fprintln(progress)
		}
	}
	return cases, nil
}

// measurePinned runs one server pinned to o.serverCPU under the load.
func measurePinned(ctx context.Context, o pinnedOptions, spec string, conns int) (pinnedRun, error) {
	ch, err := startPinnedChild(spec, o.base, o.serverCPU, serveMode)
	if err != nil {
		return pinnedRun{}, err
	}
	pid := ch.cmd.Process.Pid
	type result struct {
		res loadgen.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := loadgen.Run(ctx, ch.addr, loadgen.Config{Conns: conns, Warmup: o.warmup, Duration: o.duration})
		done <- result{res, err}
	}()
	time.Sleep(o.warmup)
	cpu0, err0 := procCPU(pid)
	var st *straceRun
	var pf *perfRun
	switch {
	case o.strace:
		st, err = startStrace(pid)
	case o.perf:
		pf, err = startPerf(pid)
	}
	if err != nil {
		<-done
		ch.kill()
		return pinnedRun{}, err
	}
	time.Sleep(o.duration)
	var calls map[string]int64
	switch {
	case st != nil:
		calls, err = st.stop()
	case pf != nil:
		calls, err = pf.stop()
	}
	cpu1, err1 := procCPU(pid)
	r := <-done
	if stopErr := ch.stop(); r.err == nil {
		r.err = stopErr
	}
	for _, e := range []error{r.err, err, err0, err1} {
		if e != nil {
			return pinnedRun{}, e
		}
	}
	cpu := (cpu1 - cpu0).Seconds()
	out := pinnedRun{rate: r.res.Rate(), trips: r.res.RoundTrips, calls: calls}
	out.cpuFrac = cpu / r.res.Elapsed.Seconds()
	if cpu > 0 {
		out.perCPU = float64(r.res.RoundTrips) / cpu
	}
	return out, nil
}

// straceRun is strace -c attached to a process.
type straceRun struct {
	cmd *exec.Cmd
	out string
}

func startStrace(pid int) (*straceRun, error) {
	f, err := os.CreateTemp("", "bench-strace-*")
	if err != nil {
		return nil, err
	}
	f.Close()
	cmd := exec.Command("strace", "-c", "-f", "-p", strconv.Itoa(pid), "-o", f.Name())
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("strace (apt-get install strace): %w", err)
	}
	time.Sleep(50 * time.Millisecond) // attached
	return &straceRun{cmd: cmd, out: f.Name()}, nil
}

// stop detaches strace and returns the calls it counted, by name.
func (s *straceRun) stop() (map[string]int64, error) {
	defer os.Remove(s.out)
	s.cmd.Process.Signal(syscall.SIGINT)
	s.cmd.Wait()
	b, err := os.ReadFile(s.out)
	if err != nil {
		return nil, err
	}
	return parseStraceSummary(string(b))
}

// parseStraceSummary reads strace -c's table: % time, seconds, usecs/call,
// calls, [errors,] syscall.
func parseStraceSummary(out string) (map[string]int64, error) {
	calls := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || len(f) > 6 || f[len(f)-1] == "total" || f[len(f)-1] == "syscall" {
			continue
		}
		if _, err := strconv.ParseFloat(f[0], 64); err != nil {
			continue
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		calls[f[len(f)-1]] += n
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("strace counted nothing: %q", out)
	}
	return calls, nil
}

// callsPer returns a run's I/O and total system calls per round trip.
func callsPer(r pinnedRun) (io, all float64) {
	if r.trips == 0 {
		return 0, 0
	}
	var nio, nall int64
	for name, n := range r.calls {
		if name == perfAll || name == perfSwitches {
			continue
		}
		nall += n
		if ioCalls[name] {
			nio += n
		}
	}
	if n, ok := r.calls[perfAll]; ok {
		nall = n // perf counts every call; only some by kind
	}
	return float64(nio) / float64(r.trips), float64(nall) / float64(r.trips)
}

func printPinnedHeader(w io.Writer, o pinnedOptions) {
	k, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(w, "bench pinned: server on CPU %d, load on CPU %d; %d reps of %v (+%v warm-up), interleaved; kernel %s",
		o.serverCPU, o.loadCPU, o.reps, o.duration, o.warmup, k)
	if o.base != "" {
		fmt.Fprintf(w, "base: %s\n", filepath.Base(o.base))
	}
}

func printPinned(w io.Writer, o pinnedOptions, cases []*pinnedCase) {
	fmt.Fprintf(w, "\n%-20s %5s %18s %26s %5s %15s", "server", "conns", "req/s", "req per server CPU-s", "CPU", "vs gnet (CPU)")
	if o.strace || o.perf {
		fmt.Fprintf(w, " %8s %8s  %s", "I/O/rt", "all/rt", "calls per round trip")
	}
	fmt.Fprintln(w)
	for _, c := range cases {
		rates := pcol(c.runs, func(r pinnedRun) float64 { return r.rate })
		per := pcol(c.runs, func(r pinnedRun) float64 { return r.perCPU })
		cpu := pcol(c.runs, func(r pinnedRun) float64 { return r.cpuFrac })
		fmt.Fprintf(w, "%-20s %5d %8.0f (%s) %10.0f (%s) %5.2f %15s", c.server, c.conns,
			median(rates), spread(rates, thousands), median(per), spread(per, thousands), median(cpu), vsGnet(c, cases))
		if o.strace || o.perf {
			ios := pcol(c.runs, func(r pinnedRun) float64 { a, _ := callsPer(r); return a })
			alls := pcol(c.runs, func(r pinnedRun) float64 { _, b := callsPer(r); return b })
			fmt.Fprintf(w, " %8.2f %8.2f  %s", median(ios), median(alls), topCalls(c.runs))
		}
		fmt.Fprintln(w)
	}
}

// thousands prints v in thousands, for spread.
func thousands(v float64) string { return fmt.Sprintf("%.0fk", v/1e3) }

// vsGnet is c's median req per CPU-second over gnet's at the same conns,
// with the range of the per-repetition ratios.
func vsGnet(c *pinnedCase, cases []*pinnedCase) string {
	for _, g := range cases {
		if g.server != "gnet" || g.conns != c.conns || g == c {
			continue
		}
		var rs []float64
		for i := range min(len(c.runs), len(g.runs)) {
			rs = append(rs, c.runs[i].perCPU/g.runs[i].perCPU)
		}
		m := median(pcol(c.runs, func(r pinnedRun) float64 { return r.perCPU })) /
			median(pcol(g.runs, func(r pinnedRun) float64 { return r.perCPU }))
		return fmt.Sprintf("%.2fx (%.2f..%.2f)", m, slices.Min(rs), slices.Max(rs))
	}
	return "-"
}

// topCalls lists the calls per round trip over all of c's runs, largest
// first.
func topCalls(runs []pinnedRun) string {
	sum := map[string]int64{}
	var trips int64
	for _, r := range runs {
		trips += r.trips
		for k, v := range r.calls {
			sum[k] += v
		}
	}
	type kv struct {
		name string
		n    int64
	}
	var all []kv
	for k, v := range sum {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var parts []string
	for _, e := range all {
		per := float64(e.n) / float64(max(trips, 1))
		if per < 0.005 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", e.name, per))
	}
	return strings.Join(parts, ", ")
}

// pcol is one figure of each run.
func pcol(runs []pinnedRun, f func(pinnedRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// startPinnedChild starts the server of spec ([base:]KIND[@BACKEND][+VAR=VALUE...])
// as a child in mode on 127.0.0.1, pinned to cpu with taskset: this
// binary's server, or base's (a build at other weft code) for a base:
// spec, with WEFT_BACKEND and the spec's variables in its environment.
func startPinnedChild(spec, base string, cpu int, mode string) (*child, error) {
	kind, backend, isBase := splitSpec(spec)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if isBase {
		exe = base
	}
	cmd := exec.Command("taskset", "-c", strconv.Itoa(cpu), exe, mode, kind, "127.0.0.1:0")
	cmd.Env = os.Environ()
	if backend != "" {
		cmd.Env = append(cmd.Env, "WEFT_BACKEND="+backend)
	}
	cmd.Env = append(cmd.Env, specEnv(spec)...)
	return startChildCmd(spec, cmd)
}
