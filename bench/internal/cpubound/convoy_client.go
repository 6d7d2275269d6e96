package cpubound

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/weft-go/weft/bench/internal/loadgen"
)

// ClientMode is the subcommand that runs the convoy's load client in a
// process of its own: `bench convoy-client ADDR CONNS WARMUP DURATION`.
// Convoy starts its own executable in this mode, so the program that calls
// Convoy (and a test binary that does) must hand that subcommand to Client.
// The client prints clientStart when the load begins, then one line of JSON
// (a clientReport).
const ClientMode = "convoy-client"

// clientStart is the line the client prints just before its warm-up starts.
const clientStart = "start"

// clientGrace bounds how long a client may run past its warm-up and
// counted window (connecting, a stalled server) before it is killed.
const clientGrace = 20 * time.Second

// clientReport is the load client's result, as JSON on its stdout.
type clientReport struct {
	Rate       float64 `json:"rate"` // counted round trips per second
	RoundTrips int64   `json:"round_trips"`
	Verified   int64   `json:"verified"` // echoes checked byte for byte, warm-up included
	ElapsedNS  int64   `json:"elapsed_ns"`
	P50NS      int64   `json:"p50_ns"`
	P90NS      int64   `json:"p90_ns"`
	P99NS      int64   `json:"p99_ns"`
	P999NS     int64   `json:"p999_ns"`
	// Hist is the latency histogram of the counted round trips, so that
	// the repetitions of a case can be pooled: see histBuckets.
	Hist [][2]int64 `json:"hist"`
}

// Client is the client mode (ClientMode; args are ADDR CONNS WARMUP
// DURATION): it loads the echo server at addr with loadgen and prints the
// start line and the report to w.
func Client(w io.Writer, args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("bench %s: want ADDR CONNS WARMUP DURATION", ClientMode)
	}
	conns, err := strconv.Atoi(args[1])
	if err != nil || conns < 1 {
		return fmt.Errorf("bench %s: bad connection count %q", ClientMode, args[1])
	}
	warmup, err1 := time.ParseDuration(args[2])
	duration, err2 := time.ParseDuration(args[3])
	if err1 != nil || err2 != nil || warmup < 0 || duration <= 0 {
		return fmt.Errorf("bench %s: bad durations %q %q", ClientMode, args[2], args[3])
	}
	ctx, cancel := context.WithTimeout(context.Background(), warmup+duration+clientGrace)
	defer cancel()
	fmt.Fprintln(w, clientStart)
	r, err := loadgen.Run(ctx, args[0], loadgen.Config{Conns: conns, Warmup: warmup, Duration: duration})
	if err != nil {
		return fmt.Errorf("bench %s: %w", ClientMode, err)
	}
	rep := clientReport{
		Rate:       r.Rate(),
		RoundTrips: r.RoundTrips,
		Verified:   r.Verified,
		ElapsedNS:  int64(r.Elapsed),
		P50NS:      int64(r.Hist.Quantile(0.5)),
		P90NS:      int64(r.Hist.Quantile(0.9)),
		P99NS:      int64(r.Hist.Quantile(0.99)),
		P999NS:     int64(r.Hist.Quantile(0.999)),
		Hist:       histBuckets(r.Hist),
	}
	return json.NewEncoder(w).Encode(rep)
}

// loadDriver returns a driver that runs the load client in a child process
// (this program again, in ClientMode) and probes the server around the
// client's counted window.
func loadDriver(conns int, warmup, duration time.Duration) driver {
	return func(ctx context.Context, addr string, probe func() probe) (measure, error) {
		return runClient(ctx, addr, conns, warmup, duration, probe)
	}
}

// runClient runs one load client process against addr. The child is
// killed if anything goes wrong or ctx is cancelled, and it has always been
// reaped when runClient returns.
func runClient(ctx context.Context, addr string, conns int, warmup, duration time.Duration, probe func() probe) (measure, error) {
	exe, err := os.Executable()
	if err != nil {
		return measure{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, warmup+duration+clientGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, ClientMode, addr, strconv.Itoa(conns), warmup.String(), duration.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return measure{}, err
	}
	if err := cmd.Start(); err != nil {
		return measure{}, fmt.Errorf("load client: %w", err)
	}
	m, err := watchClient(ctx, out, warmup, duration, probe)
	if err != nil {
		cancel() // kills the child
	}
	io.Copy(io.Discard, out) // Wait closes the pipe, so read it to the end first
	if werr := cmd.Wait(); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return measure{}, fmt.Errorf("load client: %w%s", err, childMessage(stderr.String()))
	}
	return m, nil
}

// watchClient reads the client's start line, probes the server at the
// start and the end of the counted window, and reads the client's report.
func watchClient(ctx context.Context, out io.Reader, warmup, duration time.Duration, probe func() probe) (measure, error) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, maxReportLine)
	if !sc.Scan() || sc.Text() != clientStart {
		return measure{}, errors.New("no start line")
	}
	t0 := time.Now()
	if err := sleepUntil(ctx, t0.Add(warmup)); err != nil {
		return measure{}, err
	}
	a := probe()
	if err := sleepUntil(ctx, t0.Add(warmup+duration)); err != nil {
		return measure{}, err
	}
	b := probe()
	if !sc.Scan() {
		return measure{}, errors.New("no report")
	}
	var rep clientReport
	if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
		return measure{}, fmt.Errorf("bad report: %w", err)
	}
	if rep.Verified < rep.RoundTrips {
		return measure{}, fmt.Errorf("report counts %d round trips but verified only %d", rep.RoundTrips, rep.Verified)
	}
	return measure{load: &rep, win: between(a, b)}, nil
}

// maxReportLine bounds the client's report line: its histogram has at most
// a few thousand occupied buckets.
const maxReportLine = 4 << 20

// histBuckets returns the contents of h as [value in ns, count] pairs, in
// ascending order of value, one per occupied bucket, each value the middle
// of its bucket (loadgen.Histogram's Quantile answers). loadgen keeps the
// counts to itself, so they are read back through Quantile: the value at
// each rank is a step function of the rank, and the end of each step is
// found by a galloping, then binary, search. Recording each value count
// times into an empty Histogram gives back h exactly (see recordBuckets).
func histBuckets(h *loadgen.Histogram) [][2]int64 {
	total := h.TotalCount
	// at is the value at rank r (0 <= r < total): Quantile takes the
	// floor of q * total, and r + 0.5 keeps that floor r despite rounding.
	at := func(r uint64) time.Duration {
		return h.Quantile((float64(r) + 0.5) / float64(total))
	}
	var out [][2]int64
	for r := uint64(0); r < total; {
		v := at(r)
		// at(lo) == v; hi is total or a rank whose value is above v.
		lo, hi := r, total
		for step := uint64(1); lo+step < total; step *= 2 {
			if at(lo+step) != v {
				hi = lo + step
				break
			}
			lo += step
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if at(mid) == v {
				lo = mid
			} else {
				hi = mid
			}
		}
		out = append(out, [2]int64{int64(v), int64(hi - r)})
		r = hi
	}
	return out
}

// recordBuckets adds histBuckets' pairs to h, each value count times.
func recordBuckets(h *loadgen.Histogram, buckets [][2]int64) {
	for _, b := range buckets {
		for range b[1] {
			h.Record(time.Duration(b[0]))
		}
	}
}

// childMessage formats what a child wrote on stderr for an error message.
func childMessage(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return " (" + strings.ReplaceAll(s, "\n", "; ") + ")"
}
