package cpubound

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft/bench/internal/loadgen"
	"github.com/weft-go/weft/internal/trace"
)

// TestConvoyMeasuresEveryVariantAndDrawsTheChart runs the real convoy,
// briefly, with two repetitions: every variant gets its rows with their
// spreads in the Markdown table, and the chart is drawn with whiskers.
func TestConvoyMeasuresEveryVariantAndDrawsTheChart(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "convoy.svg")
	var out, errOut bytes.Buffer
	args := []string{"-duration", "150ms", "-warmup", "50ms", "-reps", "2", "-k", "0,1", "-conns", "1", "-markdown", "--svg", svg}
	if err := Convoy(&out, &errOut, args); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"GOMAXPROCS=", "NumCPU=", "switch interval 5ms", "2 repetition(s)", "[tasks]", "[offload]", "[go]",
		"min..max", "per rep", "pooled", "CPython", "summary:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, want := range []string{"rep 1/2 tasks k=1 no load", "rep 2/2 go N=1 k=1"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut.String())
		}
	}

	// The Markdown table has fixed columns: variant, N, k, req/s, min..max,
	// vs k=0, per rep, p50, p99, p99 vs k=0, CPU units/s, share, free, goals.
	seen := map[string]int{}
	for _, line := range strings.Split(s, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 16 || strings.TrimSpace(cells[1]) == "variant" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name, k := cells[1], cells[3]
		rate, err := strconv.ParseFloat(strings.ReplaceAll(cells[4], ",", ""), 64)
		if err != nil || rate <= 0 {
			t.Errorf("%s k=%s: req/s %q is not a positive number", name, k, cells[4])
		}
		lo, hi, ok := strings.Cut(cells[5], "..")
		loV, err1 := strconv.ParseFloat(strings.ReplaceAll(lo, ",", ""), 64)
		hiV, err2 := strconv.ParseFloat(strings.ReplaceAll(hi, ",", ""), 64)
		if !ok || err1 != nil || err2 != nil || loV > rate+0.5 || rate > hiV+0.5 {
			t.Errorf("%s k=%s: min..max %q does not bracket the median %q", name, k, cells[5], cells[4])
		}
		if k == "1" {
			if lo, hi, ok := strings.Cut(cells[7], ".."); !ok || !strings.HasSuffix(lo, "x") || !strings.HasSuffix(hi, "x") {
				t.Errorf("%s k=1: per-repetition ratios %q are not a range", name, cells[7])
			}
			if !strings.HasSuffix(cells[6], "x") {
				t.Errorf("%s k=1: vs k=0 %q is not a ratio", name, cells[6])
			}
			if !positiveSI(cells[11]) {
				t.Errorf("%s k=1: CPU units/s %q is not positive", name, cells[11])
			}
		}
		seen[name]++
	}
	for _, v := range variants {
		if seen[v.short] != 2 {
			t.Errorf("variant %s: %d Markdown rows, want 2 (k=0 and k=1):\n%s", v.short, seen[v.short], s)
		}
	}

	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(data); err != nil {
		t.Errorf("the chart is not well-formed XML: %v", err)
	}
	for _, want := range []string{"<svg", "CPython", "weft (tasks)", "weft (Offload)", "Go (GOMAXPROCS=1)", "N=1", "whiskers", "min..max: "} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	assertNoChildren(t)
}

// TestConvoyTraceWritesTheTimeline runs one short case with -trace and
// checks that the trace of the first weft case with workers was written,
// well-formed, with its timeline beside it.
func TestConvoyTraceWritesTheTimeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	var out, errOut bytes.Buffer
	args := []string{"-variants", "tasks", "-k", "1", "-conns", "1", "-duration", "30ms", "-warmup", "20ms", "-reps", "1", "-trace", filepath.Join(dir, "convoy.json")}
	if err := Convoy(&out, &errOut, args); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "convoy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Validate(data); err != nil {
		t.Errorf("the trace is not well-formed: %v", err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "convoy.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(svg); err != nil {
		t.Errorf("the timeline is not well-formed XML: %v", err)
	}
	if want := "bench convoy: the echo server beside 1 CPU-bound workers"; !bytes.Contains(svg, []byte(want)) {
		t.Errorf("the timeline lacks its title %q", want)
	}
	assertNoChildren(t)
}

// fakeCall is one run of a fake variant: which variant and k.
type fakeCall struct {
	key string
	k   int
}

// fakeHist returns the histBuckets of a histogram with n values of d and
// m values of tail.
func fakeHist(n int, d time.Duration, m int, tail time.Duration) [][2]int64 {
	h := new(loadgen.Histogram)
	for range n {
		h.Record(d)
	}
	for range m {
		h.Record(tail)
	}
	return histBuckets(h)
}

// TestConvoyInterleavesRepetitionsAndTakesMedians runs fake variants to
// check the order of the runs and the figures derived from known
// repetitions: medians, spreads, within-repetition ratios, pooled
// latencies, the goals and a failed repetition.
func TestConvoyInterleavesRepetitionsAndTakesMedians(t *testing.T) {
	var calls []fakeCall
	// Per repetition each fake variant runs: no load at k=1, N=1 k=0, N=1 k=1.
	// k=0: 1000, 3000, 2000 req/s, CPU fraction 0.6, 0.5, 0.4 (free 0.5);
	// k=1: 900, 1500, 1900 req/s (per rep 0.9x, 0.5x, 0.95x; medians
	// 1500 / 2000 = 0.75x), units 60, 100, 300 against 100, 200, 400 with no
	// load (share 0.6, 0.5, 0.75: median 0.6). The third k=1 repetition has
	// a 50 ms tail in 3 of its 100 round trips: the pooled p99 sees it.
	// Variant "b" fails its second k=1 repetition.
	fake := func(key string, failing bool) *variant {
		n := 0
		return &variant{key: key, short: key, title: key, goals: true, run: func(k int, _ time.Duration, _ driver) (measure, error) {
			calls = append(calls, fakeCall{key, k})
			rep, pos := n/3, n%3
			n++
			sec := time.Second
			switch pos {
			case 0:
				return measure{win: window{wall: sec, units: []int64{100, 200, 400}[rep]}}, nil
			case 1:
				return measure{
					load: &clientReport{Rate: []float64{1000, 3000, 2000}[rep], Hist: fakeHist(100, 10*time.Microsecond, 0, 0)},
					win:  window{wall: sec, cpu: []time.Duration{600, 500, 400}[rep] * time.Millisecond, cpuOK: true},
				}, nil
			}
			if failing && rep == 1 {
				return measure{}, errors.New("broken")
			}
			tail := 0
			if rep == 2 {
				tail = 3
			}
			return measure{
				load: &clientReport{Rate: []float64{900, 1500, 1900}[rep], Hist: fakeHist(100-tail, time.Millisecond, tail, 50*time.Millisecond)},
				win:  window{wall: sec, units: []int64{60, 100, 300}[rep], cpu: sec, cpuOK: true},
			}, nil
		}}
	}
	cfg := &convoyConfig{duration: time.Millisecond, interval: 5 * time.Millisecond, reps: 3, ks: []int{0, 1}, conns: []int{1},
		variants: []*variant{fake("a", false), fake("b", true)}}
	var progress bytes.Buffer
	results, failed := runConvoy(cfg, &progress)
	if failed != 1 {
		t.Errorf("%d failures, want 1:\n%s", failed, progress.String())
	}
	var want []fakeCall
	for range cfg.reps {
		for _, key := range []string{"a", "b"} {
			want = append(want, fakeCall{key, 1}, fakeCall{key, 0}, fakeCall{key, 1})
		}
	}
	if !slices.Equal(calls, want) {
		t.Errorf("runs in the order %v, want %v", calls, want)
	}

	a := rows(cfg, results[0])
	if len(a) != 2 || a[0].k != 0 || a[1].k != 1 {
		t.Fatalf("rows: %+v", a)
	}
	r0, r1 := a[0], a[1]
	if r0.rate != 2000 || r0.rateLo != 1000 || r0.rateHi != 3000 || r0.okReps != 3 {
		t.Errorf("k=0: rate %v (%v..%v) over %d reps, want 2000 (1000..3000) over 3", r0.rate, r0.rateLo, r0.rateHi, r0.okReps)
	}
	if math.Abs(r0.free-0.5) > 1e-9 || !r0.hasFree {
		t.Errorf("k=0: free %v, want 0.5", r0.free)
	}
	if r1.rate != 1500 || r1.rateLo != 900 || r1.rateHi != 1900 {
		t.Errorf("k=1: rate %v (%v..%v), want 1500 (900..1900)", r1.rate, r1.rateLo, r1.rateHi)
	}
	if math.Abs(r1.ratio-0.75) > 1e-9 || !r1.repRatio || math.Abs(r1.ratioLo-0.5) > 1e-9 || math.Abs(r1.ratioHi-0.95) > 1e-9 {
		t.Errorf("k=1: ratio %v (per rep %v..%v), want 0.75 (0.5..0.95)", r1.ratio, r1.ratioLo, r1.ratioHi)
	}
	if r1.units != 100 || r1.idle != 200 || math.Abs(r1.share-0.6) > 1e-9 || !r1.hasShare {
		t.Errorf("k=1: units %v, no load %v, share %v; want 100, 200, 0.6", r1.units, r1.idle, r1.share)
	}
	if !near(r1.p50, time.Millisecond) || !near(r1.p99, 50*time.Millisecond) || !near(r1.dp99, 50*time.Millisecond-10*time.Microsecond) {
		t.Errorf("k=1: p50 %v, p99 %v (+%v), want 1ms and the pooled tail, 50ms", r1.p50, r1.p99, r1.dp99)
	}
	if got := fmt.Sprint(r1.goals); got != "[MISS MISS PASS]" {
		t.Errorf("k=1 goals %s, want [MISS MISS PASS]", got)
	}

	b := rows(cfg, results[1])[1]
	if b.okReps != 2 || b.reps != 3 || b.err == nil || b.rate != 1400 || math.Abs(b.ratioLo-0.9) > 1e-9 || math.Abs(b.ratioHi-0.95) > 1e-9 {
		t.Errorf("b k=1: %d of %d reps (%v), rate %v, per rep %v..%v; want 2 of 3, 1400, 0.9..0.95",
			b.okReps, b.reps, b.err, b.rate, b.ratioLo, b.ratioHi)
	}

	all := [][]row{a, rows(cfg, results[1])}
	cfg.markdown = true
	var out bytes.Buffer
	printConvoy(&out, cfg, all)
	for _, want := range []string{"1,500", "900..1,900", "0.75x MISS", "0.50x..0.95x", "0.75x (0.50x..0.95x)", "1,400 (2 of 3 reps)",
		"| a | 1 | 1 | 1,500 | 900..1,900 | 0.75x | 0.50x..0.95x |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	svg := convoySVG(cfg, all)
	if err := wellFormed([]byte(svg)); err != nil {
		t.Errorf("the chart is not well-formed XML: %v", err)
	}
	if !strings.Contains(svg, "min..max: 900..1,900") || !strings.Contains(svg, "median of 3") {
		t.Errorf("the chart lacks the whiskers or their legend:\n%s", svg)
	}
}

// near reports whether a latency from a histogram is within 1% of want.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(want)/100
}

// TestHistogramsSurviveTheReport checks that a latency histogram comes
// back from the client's report with the same quantiles.
func TestHistogramsSurviveTheReport(t *testing.T) {
	h := new(loadgen.Histogram)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		h.Record(time.Duration(rng.ExpFloat64() * float64(30*time.Microsecond)))
	}
	for range 50 {
		h.Record(time.Duration(rng.IntN(int(time.Second))))
	}
	got := new(loadgen.Histogram)
	recordBuckets(got, histBuckets(h))
	if got.TotalCount != h.TotalCount {
		t.Fatalf("%d values, want %d", got.TotalCount, h.TotalCount)
	}
	for i := 0; i <= 1000; i++ {
		q := float64(i) / 1000
		if got.Quantile(q) != h.Quantile(q) {
			t.Errorf("quantile %v: %v, want %v", q, got.Quantile(q), h.Quantile(q))
		}
	}
	if b := histBuckets(new(loadgen.Histogram)); len(b) != 0 {
		t.Errorf("an empty histogram gives %v", b)
	}
}

// positiveSI reports whether s, a number with an optional k, M or G
// suffix, is above zero.
func positiveSI(s string) bool {
	s = strings.TrimRight(s, "kMG")
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && v > 0
}

// wellFormed decodes data as XML to the end.
func wellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// assertNoChildren fails the test if this process has a child process
// left (Linux only: it reads /proc).
func assertNoChildren(t *testing.T) {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(data)) != "" {
			t.Errorf("child processes left behind: %s", data)
		}
	}
}

// TestBadFlagsAreErrors checks that bad flags and arguments of convoy and
// sha256 fail with an error naming the command, and print the usage to
// stderr.
func TestBadFlagsAreErrors(t *testing.T) {
	commands := map[string]func(stdout, stderr io.Writer, args []string) error{"convoy": Convoy, "sha256": SHA256}
	for _, args := range [][]string{
		{"convoy", "-k", "abc"},
		{"convoy", "-k", "-1"},
		{"convoy", "-conns", "0"},
		{"convoy", "-conns", ""},
		{"convoy", "-variants", "tasks,nosuch"},
		{"convoy", "-duration", "0s"},
		{"convoy", "-interval", "-1ms"},
		{"convoy", "-reps", "0"},
		{"convoy", "-nosuchflag"},
		{"convoy", "extra"},
		{"sha256", "-size", "0"},
		{"sha256", "-n", "0"},
		{"sha256", "-n", "x"},
	} {
		var out, errOut bytes.Buffer
		err := commands[args[0]](&out, &errOut, args[1:])
		if err == nil || !strings.HasPrefix(err.Error(), "bench "+args[0]+": ") || !strings.Contains(errOut.String(), "usage: bench "+args[0]) {
			t.Errorf("%q: error %v, stderr %q", args, err, errOut.String())
		}
	}
	assertNoChildren(t)
}

// TestConvoyHelpIsNotAnError checks that -h prints the flags to stdout
// and succeeds.
func TestConvoyHelpIsNotAnError(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Convoy(&out, &errOut, []string{"-h"}); err != nil || !strings.Contains(out.String(), "-variants") {
		t.Fatalf("error %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
}

// TestListsAndNumbersFormat checks parseIntList and the number formats.
func TestListsAndNumbersFormat(t *testing.T) {
	ks, err := parseIntList(" 4,0,2, 1,2", 0, 64)
	if err != nil || !slices.Equal(ks, []int{0, 1, 2, 4}) {
		t.Errorf("parseIntList = %v, %v", ks, err)
	}
	for v, want := range map[float64]string{0: "0", 999: "999", 24912.4: "24,912", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := fmtCount(v); got != want {
			t.Errorf("fmtCount(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{38: "38", 116: "116", 24900: "24.9k", 1.5e6: "1.50M"} {
		if got := barLabel(v); got != want {
			t.Errorf("barLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestSmallRatiosKeepTheirDigits checks that fmtRatio keeps small ratios
// readable.
func TestSmallRatiosKeepTheirDigits(t *testing.T) {
	for r, want := range map[float64]string{0.95: "0.95x", 1.2: "1.20x", 0.0011: "0.0011x", 0.0543: "0.0543x", 0: "0.00x"} {
		if got := fmtRatio(r); got != want {
			t.Errorf("fmtRatio(%v) = %q, want %q", r, got, want)
		}
	}
}
