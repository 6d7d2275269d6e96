package main

// `bench h2`: HTTP/2 servers under h2load (Debian's nghttp2-client), side
// by side in one run: whttp over h2c, net/http over h2c (Go 1.24's
// Protocols), and whttp's own HTTP/1.1 at the same concurrency (h2load
// --h1). Each server child runs in a process of its own, pinned to one
// CPU with -pin, the load on the other; the server's CPU time around
// each measurement gives requests per server CPU-second, the figure that
// does not depend on how fast the load generator is.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// h2Kinds are the server children of `bench h2`.
var h2Kinds = []string{"weft-h2c", "net-h2c"}

// h2Case is one column of the table: a server and how h2load speaks to it.
type h2Case struct {
	name, server string
	h1           bool
	runs         []h2Result
}

type h2Result struct {
	rate     float64 // requests per second of wall time
	requests int64
	cost     cost
}

func h2Main(args []string) int {
	fs := flag.NewFlagSet("bench h2", flag.ContinueOnError)
	duration := fs.Duration("duration", 5*time.Second, "h2load's -D per measurement")
	reps := fs.Int("reps", 3, "measurements per case")
	conns := fs.Int("c", 50, "h2load's -c (connections)")
	streams := fs.Int("m", 10, "h2load's -m (streams per connection; HTTP/1.1: pipelining is off, one at a time)")
	path := fs.String("path", "/plaintext", "the path")
	pin := fs.String("pin", "", "SERVERCPU:LOADCPU: run each server on one CPU and h2load on another (taskset)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if runner.pin, err = parsePin(*pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench h2:", err)
		return 2
	}
	if _, err := exec.LookPath("h2load"); err != nil {
		fmt.Fprintln(os.Stderr, "bench h2: h2load not found; install it with: apt-get install -y nghttp2-client")
		return 1
	}
	if err := pinLoad(runner.pin); err != nil {
		fmt.Fprintln(os.Stderr, "bench h2:", err)
		return 1
	}
	cases := []*h2Case{
		{name: "whttp h2c", server: "weft-h2c"},
		{name: "net/http h2c", server: "net-h2c"},
		{name: "whttp HTTP/1.1", server: "weft-h2c", h1: true},
	}
	fmt.Printf("bench h2: h2load -c%d -m%d -D%v %s, %d repetitions, interleaved; GOMAXPROCS %d, NumCPU %d; %s\n",
		*conns, *streams, *duration, *path, *reps, runtime.GOMAXPROCS(0), runtime.NumCPU(), runner.pin)
	for rep := range *reps {
		for _, c := range cases {
			r, err := measureH2(c, *conns, *streams, *duration, *path)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench h2: %s: %v\n", c.name, err)
				return 1
			}
			fmt.Fprintf(os.Stderr, "  rep %d %-16s %9.0f req/s  %9.0f req/server-CPU-s\n", rep+1, c.name, r.rate, r.cost.perCPUSecond())
			c.runs = append(c.runs, r)
		}
	}
	fmt.Printf("\n| server | req/s (median, min..max) | req per server CPU-second | allocs/req |\n| --- | --- | --- | --- |\n")
	for _, c := range cases {
		rates := h2Column(c.runs, func(r h2Result) float64 { return r.rate })
		per := h2Column(c.runs, func(r h2Result) float64 { return r.cost.perCPUSecond() })
		allocs := h2Column(c.runs, func(r h2Result) float64 { return r.cost.allocsPerRequest() })
		fmt.Printf("| %s | %.0f (%.0f..%.0f) | %.0f (%.0f..%.0f) | %.1f |\n", c.name,
			median(rates), slices.Min(rates), slices.Max(rates), median(per), slices.Min(per), slices.Max(per), median(allocs))
	}
	w := median(h2Column(cases[0].runs, func(r h2Result) float64 { return r.cost.perCPUSecond() }))
	n := median(h2Column(cases[1].runs, func(r h2Result) float64 { return r.cost.perCPUSecond() }))
	h1 := median(h2Column(cases[2].runs, func(r h2Result) float64 { return r.cost.perCPUSecond() }))
	fmt.Printf("\nwhttp h2c / net/http h2c, per server CPU-second: %.2fx (goal 1.5x); whttp h2c / whttp HTTP/1.1: %.2fx (goal >= 1)\n", w/n, w/h1)
	return 0
}

var h2loadDone = regexp.MustCompile(`requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded`)
var h2loadRate = regexp.MustCompile(`finished in ([0-9.]+)(m?s), ([0-9.]+) req/s`)

// measureH2 starts the server, runs h2load once against it, and stops it.
func measureH2(c *h2Case, conns, streams int, d time.Duration, path string) (h2Result, error) {
	ch, err := startChild(c.server)
	if err != nil {
		return h2Result{}, err
	}
	defer ch.stop()
	args := []string{"-c", strconv.Itoa(conns), "-D", strconv.Itoa(int(d.Seconds())), "-t", "1"}
	if c.h1 {
		args = append(args, "--h1")
	} else {
		args = append(args, "-m", strconv.Itoa(streams))
	}
	// A warm-up: connections made, the server's pools filled.
	exec.Command("h2load", append([]string{"-c", strconv.Itoa(conns), "-n", "20000"}, append(args[4:], "http://"+ch.addr+path)...)...).Run()
	u0, err := ch.usage()
	if err != nil {
		return h2Result{}, err
	}
	out, err := exec.Command("h2load", append(args, "http://"+ch.addr+path)...).CombinedOutput()
	if err != nil {
		return h2Result{}, fmt.Errorf("h2load: %v\n%s", err, out)
	}
	u1, err := ch.usage()
	if err != nil {
		return h2Result{}, err
	}
	m := h2loadDone.FindStringSubmatch(string(out))
	r := h2loadRate.FindStringSubmatch(string(out))
	if m == nil || r == nil {
		return h2Result{}, fmt.Errorf("unexpected h2load output:\n%s", out)
	}
	ok, _ := strconv.ParseInt(m[3], 10, 64)
	done, _ := strconv.ParseInt(m[2], 10, 64)
	if ok != done || ok == 0 {
		return h2Result{}, fmt.Errorf("h2load: %d of %d requests succeeded:\n%s", ok, done, out)
	}
	rate, _ := strconv.ParseFloat(r[3], 64)
	return h2Result{rate: rate, requests: ok, cost: u1.since(u0, ok)}, nil
}

// serveWeftH2C is whttp with HTTP/1.1 and h2c (prior knowledge).
func serveWeftH2C(ctx context.Context, addr string) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println(listeningPrefix + ln.Addr().String())
		srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			writeBody(w, r.URL.Path)
		}), Protocols: new(http.Protocols)}
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
		return struct{}{}, srv.Serve(t, ln)
	}, weft.WithContext(ctx))
	return err
}

// serveNetH2C is net/http's server with HTTP/1.1 and h2c (prior
// knowledge), as Go 1.24's Protocols offer it.
func serveNetH2C(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(listeningPrefix + ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeBody(w, r.URL.Path)
	}), Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func h2Column(runs []h2Result, f func(h2Result) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}
