package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft/bench/internal/cpubound"
	"github.com/weft-go/weft/bench/internal/loadgen"
	"go.uber.org/goleak"
)

// TestMain lets the test binary serve as a server child too (the tests
// start it again as `bench.test serve KIND ADDR`, as the command does), and
// checks that the tests leave no goroutine behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveMode {
		os.Exit(childMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == respServeMode {
		os.Exit(respChildMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == whttpServeMode {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m,
		// gnet's dependency ants starts a global worker pool when it loads.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"))
}

// TestServers runs each server briefly with 1 and 3 connections, through
// runBench as the command does, and checks that echoes came back and were
// counted. Every child has exited when runBench returns.
func TestServers(t *testing.T) {
	o := options{
		duration: 200 * time.Millisecond,
		warmup:   20 * time.Millisecond,
		reps:     1,
		servers:  serverKinds,
		conns:    []int{1, 3},
	}
	var progress bytes.Buffer
	results, err := runBench(context.Background(), o, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(serverKinds)*2 {
		t.Fatalf("got %d results, want %d", len(results), len(serverKinds)*2)
	}
	for _, c := range results {
		if c.verified <= 0 || c.roundTrips <= 0 || len(c.rates) != 1 || c.rates[0] <= 0 {
			t.Errorf("%s, %d conns: verified %d, counted %d, rates %v", c.server, c.conns, c.verified, c.roundTrips, c.rates)
		}
		if len(c.cpuRates) != 1 || c.cpuRates[0] <= 0 || len(c.allocs) != 1 {
			t.Errorf("%s, %d conns: req/CPU-s %v, allocs/req %v", c.server, c.conns, c.cpuRates, c.allocs)
		}
		if c.hist.TotalCount != uint64(c.roundTrips) {
			t.Errorf("%s, %d conns: %d latencies for %d round trips", c.server, c.conns, c.hist.TotalCount, c.roundTrips)
		}
		if p50, p99 := c.hist.Quantile(0.5), c.hist.Quantile(0.99); p50 <= 0 || p99 < p50 {
			t.Errorf("%s, %d conns: p50 %v, p99 %v", c.server, c.conns, p50, p99)
		}
	}
	var out bytes.Buffer
	printTable(&out, results, false)
	printTable(&out, results, true)
	for _, want := range []string{"weft", "gnet-multicore", "1.00x", "| net | 3 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("progress:\n%s\n%s", progress.String(), out.String())
}

// TestStartChildUnknown checks that a child that fails at once is reported
// and reaped.
func TestStartChildUnknown(t *testing.T) {
	if _, err := startChild("no-such-server"); err == nil {
		t.Fatal("started an unknown server")
	}
}

// TestLoadCancel checks that cancelling the context ends a measurement
// early with the context's error, and that the child can still be stopped.
func TestLoadCancel(t *testing.T) {
	ch, err := startChild("net")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = loadgen.Run(ctx, ch.addr, loadgen.Config{Conns: 2, Duration: time.Minute})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("runLoad: %v, want the context's error", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("runLoad took %v after cancel", el)
	}
	if err := ch.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestParse checks the list flags.
func TestParse(t *testing.T) {
	o, err := parseFlags([]string{"-servers", "gnet,weft", "-conns", "50,1,50", "-reps", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.servers, ",") != "weft,gnet" || len(o.conns) != 2 || o.conns[0] != 1 || o.conns[1] != 50 || o.reps != 2 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{"-servers", "nginx"}, {"-conns", "0"}, {"-reps", "0"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
	if got := formatCount(1234567.4); got != "1,234,567" {
		t.Errorf("formatCount = %q", got)
	}
	if got := formatLatency(1781800 * time.Nanosecond); got != "1.78ms" {
		t.Errorf("formatLatency = %q", got)
	}
	if got := formatLatency(23700 * time.Nanosecond); got != "23.7µs" {
		t.Errorf("formatLatency = %q", got)
	}
}

// TestPinnedChildReportsItsCost starts a child pinned to CPU 0 (as -pin
// 0:1 does), checks its affinity, and that a load raises its CPU time and
// allocation count as read by usage.
func TestPinnedChildReportsItsCost(t *testing.T) {
	if _, err := lookTaskset(); err != nil {
		t.Skip(err)
	}
	saved := runner
	defer func() { runner = saved }()
	runner = childRun{pin: pinning{on: true, server: 0, load: 1}}
	ch, err := startChild("net")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.kill()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(ch.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Fatalf("the child is not pinned to CPU 0:\n%s", status)
	}
	u0, err := ch.usage()
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.Run(context.Background(), ch.addr, loadgen.Config{Conns: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	u1, err := ch.usage()
	if err != nil {
		t.Fatal(err)
	}
	c := u1.since(u0, res.Verified)
	if c.cpu <= 0 || c.mallocs == 0 || c.perCPUSecond() <= 0 || c.allocsPerRequest() <= 0 {
		t.Fatalf("cost %+v over %d round trips: want CPU time and allocations", c, res.Verified)
	}
	if err := ch.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestPinAndBaseSettings checks -pin's parsing, the @base twins and the
// command line of a pinned or base child.
func TestPinAndBaseSettings(t *testing.T) {
	if p, err := parsePin("0:1"); err != nil || !p.on || p.server != 0 || p.load != 1 {
		t.Errorf("parsePin(0:1) = %+v, %v", p, err)
	}
	if p, err := parsePin(""); err != nil || p.on {
		t.Errorf("parsePin() = %+v, %v", p, err)
	}
	for _, bad := range []string{"0", "1:1", "a:b", "-1:0", "0:"} {
		if _, err := parsePin(bad); err == nil {
			t.Errorf("parsePin(%q) accepted", bad)
		}
	}
	if got := strings.Join(withBase([]string{"weft", "net", "weft-2loops"}, "/x"), ","); got != "weft,weft@base,net,weft-2loops,weft-2loops@base" {
		t.Errorf("withBase = %s", got)
	}
	r := childRun{pin: pinning{on: true, server: 0, load: 1}, base: "/tmp/base-bench"}
	prog, args, err := r.childArgv("weft-http@base", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(prog, "taskset") || strings.Join(args, " ") != "-c 0 /tmp/base-bench serve weft-http 127.0.0.1:0" {
		t.Errorf("pinned base child: %s %q", prog, args)
	}
	if _, _, err := (childRun{}).childArgv("weft@base", "x"); err == nil {
		t.Error("a base server without -base was accepted")
	}
	cpu, err := procCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("procCPU(self) = %v, %v", cpu, err)
	}
}

// TestSubcommands checks the dispatch of run: the usage lists every
// subcommand, and no subcommand, an unknown one, flags before one and bad
// arguments are errors with a message.
func TestSubcommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"help"}, &out, &errOut); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, sub := range []string{"core", "sync", "memory", "echo", "http", "h2", "idle", "pinned", "resp", respServeMode, "convoy", "greedy", "sha256", "hangup", "sendfile", "wsidle", "h2idle", serveMode, whttpServeMode, cpubound.ClientMode, cpubound.GreedyClientMode, "help"} {
		if !strings.Contains(out.String(), "\n  "+sub+" ") {
			t.Errorf("the usage lacks %q:\n%s", sub, out.String())
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: go run . <subcommand>"},
		{[]string{"nosuch"}, 2, `unknown subcommand "nosuch"`},
		{[]string{"-duration", "1s"}, 2, "go run . echo -duration 1s"},
		{[]string{"core", "extra"}, 1, `bench core: unexpected argument "extra"`},
		{[]string{"sync", "-h"}, 1, `bench sync: unexpected argument "-h"`},
		{[]string{"memory"}, 1, "bench memory: want weft, weft-await, weft-chan, weft-conn, coro or go"},
		{[]string{"memory", "rust"}, 1, `bench memory: want weft, weft-await, weft-chan, weft-conn, coro or go, not "rust"`},
		{[]string{"convoy", "-k", "x"}, 1, "bench convoy: -k:"},
		{[]string{"sha256", "extra"}, 1, `bench sha256: unexpected argument "extra"`},
		{[]string{cpubound.ClientMode, "x"}, 1, "bench convoy-client: want ADDR CONNS WARMUP DURATION"},
		{[]string{"hangup", "-n", "x"}, 1, "bench hangup: invalid value"},
		{[]string{"sendfile", "-reps", "x"}, 1, "bench sendfile: invalid value"},
		{[]string{"wsidle", "-n", "x"}, 1, "bench wsidle: invalid value"},
		{[]string{"h2idle", "-per", "300"}, 1, "bench h2idle: need 1 <= -per <= 250"},
		{[]string{whttpServeMode}, 1, "bench whttp-serve: usage: bench whttp-serve KIND ADDR [DIR]"},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(c.args, &out, &errOut); code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d (want %d), stderr %q (want %q in it)", c.args, code, c.code, errOut.String(), c.want)
		}
	}
}

// TestWsIdleReportsEachPart runs wsidle's measure briefly against both
// server children: each connection holds two goroutines (a reader and a
// writer), some heap and some stack, and the child writes its heap profile.
func TestWsIdleReportsEachPart(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"ws-weft", "ws-nethttp"} {
		path := filepath.Join(dir, kind+".pprof")
		m, err := wsIdleOnce(kind, 50, path)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if m.heap <= 0 || m.stacks <= 0 || m.goroutines < 1.5 || m.goroutines > 2.5 {
			t.Errorf("%s: %+v per connection, want heap and stacks and about 2 goroutines", kind, m)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: heap profile: %v", kind, err)
		}
	}
}
