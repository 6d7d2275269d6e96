package cpubound

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/cliflag"
	"github.com/weft-go/weft/internal/echo"
	"github.com/weft-go/weft/internal/polite"
)

// GreedyClientMode is the subcommand that runs `bench greedy`'s clients
// in a process of their own: `bench greedy-client ADDR ROUNDS`.
const GreedyClientMode = "greedy-client"

// greedyReport is the greedy client's result, as JSON on its stdout.
type greedyReport struct {
	Alone  []int64 `json:"alone_ns"` // the probe's round trips alone, sorted
	Busy   []int64 `json:"busy_ns"`  // ... beside the greedy clients, sorted
	Bytes  int64   `json:"bytes"`    // echoed to the greedy clients while the probe ran beside them
	BusyNS int64   `json:"busy_elapsed_ns"`
}

// greedyServer is one server `bench greedy` measures, in this process.
type greedyServer struct {
	key   string
	serve func(ready func(addr string), stop <-chan struct{}) error
}

var greedyServers = []greedyServer{
	{"weft", func(ready func(string), stop <-chan struct{}) error { return serveWeftEcho(ready, stop) }},
	{"weft-uring", func(ready func(string), stop <-chan struct{}) error {
		return serveWeftEcho(ready, stop, weft.WithBackend(weft.BackendIOUring))
	}},
	{"net", func(ready func(string), stop <-chan struct{}) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ready(ln.Addr().String())
		go func() { <-stop; ln.Close() }()
		echo.ServeNet(ln)
		return nil
	}},
}

// serveWeftEcho serves weft's echo on one loop until stop is closed.
func serveWeftEcho(ready func(string), stop <-chan struct{}, opts ...weft.Option) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		go func() { <-stop; ln.Close() }()
		ready(ln.Addr().String())
		return struct{}{}, echo.Serve(t, ln)
	}, append(opts, weft.WithLoops(1), weft.WithWatchdog(0))...)
	return err
}

// Greedy is `bench greedy`: each server (weft's echo on one loop, on the
// default backend and on io_uring where the kernel has it, and net's
// goroutine per connection) serves a polite client's 64-byte round trips
// alone, then beside two greedy clients that stream pipelined 64-byte
// messages without waiting for the echoes; the clients run in a child
// process. It prints the polite client's p50 and p99 in both phases and
// the greedy clients' throughput, each a median over -reps interleaved
// repetitions with min..max.
func Greedy(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("bench greedy", flag.ContinueOnError)
	reps := fs.Int("reps", 3, "repetitions of every server, interleaved")
	rounds := fs.Int("rounds", 2000, "the polite client's round trips in each phase (200 µs apart)")
	servers := fs.String("servers", "weft,weft-uring,net", "servers to run, comma-separated")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench greedy [flags]")
		fs.PrintDefaults()
	}
	if ok, err := cliflag.Parse(fs, stdout, stderr, args); !ok {
		return err
	}
	var run []greedyServer
	for _, k := range strings.Split(*servers, ",") {
		i := slices.IndexFunc(greedyServers, func(s greedyServer) bool { return s.key == strings.TrimSpace(k) })
		if i < 0 {
			return fmt.Errorf("bench greedy: no server %q", k)
		}
		run = append(run, greedyServers[i])
	}
	results := make([][]greedyReport, len(run))
	for rep := 1; rep <= *reps; rep++ {
		for i, s := range run {
			r, err := greedyCase(s, *rounds)
			if err != nil && s.key == "weft-uring" && rep == 1 && strings.HasPrefix(err.Error(), "server ended") {
				fmt.Fprintf(stderr, "greedy: no io_uring here (%v): weft-uring left out\n", err)
				run = slices.Delete(run, i, i+1)
				results = slices.Delete(results, i, i+1)
				break
			}
			if err != nil {
				return fmt.Errorf("bench greedy: %s: %w", s.key, err)
			}
			fmt.Fprintf(stderr, "greedy: rep %d/%d %-10s alone p99 %s, beside greedy p50 %s p99 %s, greedy %.0f MB/s\n", rep, *reps, s.key,
				fmtDur(pct(r.Alone, 99)), fmtDur(pct(r.Busy, 50)), fmtDur(pct(r.Busy, 99)), mbps(r))
			results[i] = append(results[i], r)
		}
	}
	fmt.Fprintf(stdout, "bench greedy: a polite client's 64-byte round trips (200 µs apart) alone, then beside 2 greedy clients streaming pipelined 64-byte messages; %d round trips a phase, %d repetitions interleaved; median (min..max) over them\n", *rounds, *reps)
	fmt.Fprintf(stdout, "%-11s %-26s %-26s %-26s %-26s\n", "server", "alone p99", "greedy: probe p50", "greedy: probe p99", "greedy clients MB/s")
	for i, s := range run {
		col := func(f func(greedyReport) float64, dur bool) string {
			var v []float64
			for _, r := range results[i] {
				v = append(v, f(r))
			}
			slices.Sort(v)
			m := v[len(v)/2]
			if dur {
				return fmt.Sprintf("%s (%s..%s)", fmtDur(time.Duration(m)), fmtDur(time.Duration(v[0])), fmtDur(time.Duration(v[len(v)-1])))
			}
			return fmt.Sprintf("%.0f (%.0f..%.0f)", m, v[0], v[len(v)-1])
		}
		fmt.Fprintf(stdout, "%-11s %-26s %-26s %-26s %-26s\n", s.key,
			col(func(r greedyReport) float64 { return float64(pct(r.Alone, 99)) }, true),
			col(func(r greedyReport) float64 { return float64(pct(r.Busy, 50)) }, true),
			col(func(r greedyReport) float64 { return float64(pct(r.Busy, 99)) }, true),
			col(mbps, false))
	}
	return nil
}

func pct(s []int64, q int) time.Duration { return time.Duration(s[len(s)*q/100]) }

func mbps(r greedyReport) float64 { return float64(r.Bytes) / 1e6 / (float64(r.BusyNS) / 1e9) }

// greedyCase runs server s and the client child against it.
func greedyCase(s greedyServer, rounds int) (greedyReport, error) {
	stop := make(chan struct{})
	addrc := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- s.serve(func(a string) { addrc <- a }, stop) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-served:
		return greedyReport{}, fmt.Errorf("server ended: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		close(stop)
		return greedyReport{}, err
	}
	var out bytes.Buffer
	cmd := exec.Command(exe, GreedyClientMode, addr, strconv.Itoa(rounds))
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err = cmd.Run()
	close(stop)
	<-served
	var r greedyReport
	if err == nil {
		err = json.Unmarshal(out.Bytes(), &r)
	}
	if err == nil && (len(r.Alone) == 0 || len(r.Busy) == 0) {
		err = fmt.Errorf("no round trips")
	}
	return r, err
}

// GreedyClient is the client mode (GreedyClientMode; args are ADDR
// ROUNDS): the polite client's round trips alone, then beside two greedy
// clients; it prints a greedyReport to w.
func GreedyClient(w io.Writer, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("bench %s: want ADDR ROUNDS", GreedyClientMode)
	}
	rounds, err := strconv.Atoi(args[1])
	if err != nil || rounds < 100 {
		return fmt.Errorf("bench %s: bad round count %q", GreedyClientMode, args[1])
	}
	a, err := net.ResolveTCPAddr("tcp", args[0])
	if err != nil {
		return err
	}
	pfd, err := polite.Dial(a)
	if err != nil {
		return err
	}
	defer syscall.Close(pfd)
	var r greedyReport
	if r.Alone, err = politeRounds(pfd, rounds); err != nil {
		return err
	}
	var got atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for range 2 {
		c, err := net.Dial("tcp", args[0])
		if err != nil {
			cancel()
			return err
		}
		defer c.Close()
		wg.Add(2)
		go func() {
			defer wg.Done()
			msg := make([]byte, 256*64)
			for ctx.Err() == nil {
				if _, err := c.Write(msg); err != nil {
					return
				}
			}
			c.(*net.TCPConn).CloseWrite()
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				got.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	for got.Load() < 1<<20 {
		time.Sleep(time.Millisecond)
	}
	from, start := got.Load(), time.Now()
	r.Busy, err = politeRounds(pfd, rounds)
	r.BusyNS, r.Bytes = int64(time.Since(start)), got.Load()-from
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(r)
}

// politeRounds makes n round trips of the probe on fd and returns them
// sorted, in ns.
func politeRounds(fd, n int) ([]int64, error) {
	rtts, err := polite.RoundTrips(fd, n)
	if err != nil {
		return nil, err
	}
	ns := make([]int64, len(rtts))
	for i, d := range rtts {
		ns[i] = int64(d)
	}
	slices.Sort(ns)
	return ns, nil
}
