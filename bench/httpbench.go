package main

// `bench http`: HTTP servers under wrk, and their memory per idle
// keep-alive connection.
//
//	cd bench && go run . http                  # 3 interleaved repetitions of 5 s per server and path
//	go run . http -duration 1s -reps 1         # a quick look
//
// Needs wrk (Debian's package: apt-get install -y wrk). Each measurement
// gets a fresh server child (see child.go); wrk runs with 1 thread and 50
// connections, as `wrk -t1 -c50 -d5s --latency URL`, and its Requests/sec
// and 50%/99% latencies are read from its output. The repetitions are
// interleaved (repetition 1 of every server and path, then repetition 2,
// ...), so drift in the machine's load falls on all servers alike; the
// table shows medians and min..max.
//
// Memory: for each server, a fresh child reports its heap and stacks in
// use (after two collections), -memconns connections each make one
// keep-alive request and stay open, idle, and the child reports again;
// the difference divided by the count is the memory per idle connection.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type httpOptions struct {
	duration time.Duration
	reps     int
	conns    int
	servers  []string
	paths    []string
	memConns int
	wrk      string
	run      childRun // -pin and -base
}

func httpMain(args []string) int {
	fs := flag.NewFlagSet("bench http", flag.ContinueOnError)
	var o httpOptions
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "wrk's -d per measurement (whole seconds)")
	fs.IntVar(&o.reps, "reps", 3, "measurements per server and path")
	fs.IntVar(&o.conns, "conns", 50, "wrk's -c")
	servers := fs.String("servers", strings.Join(httpKinds, ","), "servers, comma-separated")
	paths := fs.String("paths", "/plaintext,/json", "paths, comma-separated")
	fs.IntVar(&o.memConns, "memconns", 1000, "idle connections for the memory measurement (0: skip it)")
	fs.StringVar(&o.wrk, "wrk", "wrk", "the wrk command")
	pin := fs.String("pin", "", "SERVERCPU:LOADCPU: run each server child on one CPU and wrk on another (taskset)")
	fs.StringVar(&o.run.base, "base", "", "a build of this command against other weft code: adds each weft server's @base twin")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.run.pin, err = parsePin(*pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench http:", err)
		return 2
	}
	for _, s := range strings.Split(*servers, ",") {
		if !slices.Contains(httpKinds, s) {
			fmt.Fprintf(os.Stderr, "bench http: unknown server %q (have %s)\n", s, strings.Join(httpKinds, ", "))
			return 2
		}
		o.servers = append(o.servers, s)
	}
	o.servers = withBase(o.servers, o.run.base)
	o.paths = strings.Split(*paths, ",")
	if o.duration < time.Second {
		o.duration = time.Second
	}
	if _, err := exec.LookPath(o.wrk); err != nil {
		fmt.Fprintln(os.Stderr, "bench http: wrk not found; install it with: apt-get install -y wrk")
		return 1
	}
	if err := pinLoad(o.run.pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench http:", err)
		return 1
	}
	runner = o.run
	fmt.Printf("bench http: wrk -t1 -c%d -d%ds, %d repetitions, interleaved; GOMAXPROCS %d, NumCPU %d (the children inherit the environment); %s\n",
		o.conns, int(o.duration.Seconds()), o.reps, runtime.GOMAXPROCS(0), runtime.NumCPU(), o.run.pin)
	results, err := runHTTPBench(o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench http:", err)
		return 1
	}
	printHTTPTable(os.Stdout, results, o)
	if o.memConns > 0 {
		mem, err := measureMemory(o.servers, o.memConns)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench http: memory:", err)
			return 1
		}
		printMemTable(os.Stdout, mem, o.memConns)
	}
	return 0
}

// wrkResult is one wrk run, and what it cost the server.
type wrkResult struct {
	rate     float64
	p50, p99 time.Duration
	requests int64 // completed, as wrk counts them
	cost     cost
}

type httpCase struct {
	server, path string
	runs         []wrkResult
}

func runHTTPBench(o httpOptions, progress io.Writer) ([]*httpCase, error) {
	var cases []*httpCase
	byKey := map[string]*httpCase{}
	for _, p := range o.paths {
		for _, s := range o.servers {
			c := &httpCase{server: s, path: p}
			cases = append(cases, c)
			byKey[s+p] = c
		}
	}
	for rep := 1; rep <= o.reps; rep++ {
		for _, p := range o.paths {
			for _, s := range o.servers {
				r, err := measureHTTP(o, s, p)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", s, p, err)
				}
				byKey[s+p].runs = append(byKey[s+p].runs, r)
				fmt.Fprintf(progress, "rep %d/%d  %-21s %-11s %10.0f req/s  p50 %v  p99 %v  %8.0f req/CPU-s (%2.0f%% sys)  %.2f allocs/req\n",
					rep, o.reps, s, p, r.rate, r.p50, r.p99, r.cost.perCPUSecond(), 100*r.cost.sysShare(), r.cost.allocsPerRequest())
			}
		}
	}
	return cases, nil
}

// measureHTTP runs wrk against a fresh child of the given kind, reading
// the child's CPU time and allocations before and after. The child is
// gone when it returns.
func measureHTTP(o httpOptions, kind, path string) (wrkResult, error) {
	ch, err := startChild(kind)
	if err != nil {
		return wrkResult{}, err
	}
	u0, err := ch.usage()
	if err != nil {
		ch.kill()
		return wrkResult{}, err
	}
	r, err := runWrk(o, "http://"+ch.addr+path)
	if err != nil {
		ch.kill()
		return r, err
	}
	u1, err := ch.usage()
	if err != nil {
		ch.kill()
		return r, err
	}
	if err := ch.stop(); err != nil {
		return r, err
	}
	r.cost = u1.since(u0, r.requests)
	return r, nil
}

func runWrk(o httpOptions, url string) (wrkResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.duration+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, o.wrk, "-t1", "-c"+strconv.Itoa(o.conns),
		"-d"+strconv.Itoa(int(o.duration.Seconds()))+"s", "--latency", url).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	return parseWrk(string(out))
}

// parseWrk reads Requests/sec and the 50% and 99% latencies from wrk's
// output; non-2xx answers or socket errors make it an error.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			r.rate, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "50%":
			r.p50 = parseWrkDuration(f[1])
		case len(f) == 2 && f[0] == "99%":
			r.p99 = parseWrkDuration(f[1])
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			r.requests, _ = strconv.ParseInt(f[0], 10, 64)
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx"), strings.HasPrefix(strings.TrimSpace(line), "Socket errors"):
			return r, fmt.Errorf("wrk reports failures: %s", strings.TrimSpace(line))
		}
	}
	if r.rate <= 0 || r.p50 <= 0 || r.requests <= 0 {
		return r, fmt.Errorf("could not read wrk's output:\n%s", out)
	}
	return r, nil
}

// parseWrkDuration reads "812.00us", "1.23ms", "2.00s".
func parseWrkDuration(s string) time.Duration {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return time.Duration(f * float64(u.unit))
		}
	}
	return 0
}

// median returns the middle of xs (the upper middle for an even count).
func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func column[R, T any](runs []R, f func(R) T) []T {
	var out []T
	for _, r := range runs {
		out = append(out, f(r))
	}
	return out
}

func printHTTPTable(w io.Writer, cases []*httpCase, o httpOptions) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| server | path | req/s (median) | min..max | p50 (median, min..max) | p99 (median, min..max) | vs net-http | req/CPU-s (median) | min..max | vs net-http | vs fasthttp | allocs/req (median) | min..max |")
	fmt.Fprintln(w, "| --- | --- |"+strings.Repeat(" ---: |", 11))
	rate := func(r wrkResult) float64 { return r.rate }
	cpuRate := func(r wrkResult) float64 { return r.cost.perCPUSecond() }
	base := map[string]float64{}
	cpuBase := map[string]float64{}
	fastBase := map[string]float64{}
	for _, c := range cases {
		switch c.server {
		case "net-http":
			base[c.path] = median(column(c.runs, rate))
			cpuBase[c.path] = median(column(c.runs, cpuRate))
		case "fasthttp":
			fastBase[c.path] = median(column(c.runs, cpuRate))
		}
	}
	ratio := func(v, b float64) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", v/b)
	}
	for _, c := range cases {
		rates := column(c.runs, rate)
		cpuRates := column(c.runs, cpuRate)
		allocs := column(c.runs, func(r wrkResult) float64 { return r.cost.allocsPerRequest() })
		p50 := column(c.runs, func(r wrkResult) time.Duration { return r.p50 })
		p99 := column(c.runs, func(r wrkResult) time.Duration { return r.p99 })
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f..%.0f | %v (%v..%v) | %v (%v..%v) | %s | %.0f | %.0f..%.0f | %s | %s | %.2f | %.2f..%.2f |\n",
			c.server, c.path, median(rates), slices.Min(rates), slices.Max(rates),
			median(p50), slices.Min(p50), slices.Max(p50), median(p99), slices.Min(p99), slices.Max(p99),
			ratio(median(rates), base[c.path]),
			median(cpuRates), slices.Min(cpuRates), slices.Max(cpuRates),
			ratio(median(cpuRates), cpuBase[c.path]), ratio(median(cpuRates), fastBase[c.path]),
			median(allocs), slices.Min(allocs), slices.Max(allocs))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "req/CPU-s: wrk's completed requests per second of the server child's CPU time (utime+stime, /proc/PID/stat, read before and after wrk); allocs/req: the child's MemStats.Mallocs over the same requests.")
}

// memResult is the memory a server holds per idle keep-alive connection.
type memResult struct {
	server  string
	perConn float64 // bytes
}

func measureMemory(servers []string, n int) ([]memResult, error) {
	var out []memResult
	for _, s := range servers {
		per, err := memoryPerConn(s, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		out = append(out, memResult{server: s, perConn: per})
		fmt.Fprintf(os.Stderr, "memory  %-10s %d idle connections: %.0f B each\n", s, n, per)
	}
	return out, nil
}

// memoryPerConn opens n keep-alive connections to a fresh child, one
// request each, and returns the child's growth in heap and stacks per
// connection while they sit idle.
func memoryPerConn(kind string, n int) (float64, error) {
	ch, err := startChild(kind)
	if err != nil {
		return 0, err
	}
	defer ch.kill()
	before, err := ch.mem()
	if err != nil {
		return 0, err
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ch.addr)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			return 0, errors.New("the server closed a keep-alive connection")
		}
	}
	time.Sleep(200 * time.Millisecond) // let every connection go idle
	after, err := ch.mem()
	if err != nil {
		return 0, err
	}
	return (float64(after) - float64(before)) / float64(n), nil
}

// mem asks a child for its memory in use.
func (c *child) mem() (uint64, error) {
	v, err := c.ask("mem", memPrefix)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

func printMemTable(w io.Writer, mem []memResult, n int) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| server | memory per idle keep-alive connection (%d conns) | vs net-http |\n", n)
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	var base float64
	for _, m := range mem {
		if m.server == "net-http" {
			base = m.perConn
		}
	}
	for _, m := range mem {
		vs := "-"
		if base > 0 {
			vs = fmt.Sprintf("%.2fx", m.perConn/base)
		}
		fmt.Fprintf(w, "| %s | %.0f B | %s |\n", m.server, m.perConn, vs)
	}
}
