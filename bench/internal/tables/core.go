package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/weft-go/weft/internal/benchmarks"
)

// rounds is how many times each timing benchmark runs; the table shows the
// median and the spread (min..max).
const rounds = 5

// bench is `weft bench`: the core benchmarks, or with an argument the
// named benchmark (convoy, sha256, sync) with its own flags.
func bench(w, errw io.Writer, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "convoy":
			return convoy(w, errw, args[1:])
		case "sha256":
			return benchSHA256(w, errw, args[1:])
		case "sync":
			return benchSync(w)
		}
		return fmt.Errorf("bench: unknown benchmark %q", args[0])
	}
	fmt.Fprintf(w, "weft bench: core runtime, %s %s/%s, %d CPUs, GOMAXPROCS=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "each timing: median of %d runs of `go test -bench` style loops (min..max)\n\n", rounds)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tweft\tGo-native\tratio\tgoal\t")
	for _, p := range benchmarks.Core {
		wm, wlo, whi := nsPerOp(p.Weft)
		gm, glo, ghi := nsPerOp(p.Go)
		fmt.Fprintf(tw, "%s\t%.0f ns (%.0f..%.0f)\t%.0f ns (%.0f..%.0f)\t%.2fx\t%s\t\n",
			p.Name, wm, wlo, whi, gm, glo, ghi, wm/gm, p.Goal)
	}
	weftMem, err := memoryInFreshProcess("weft")
	if err != nil {
		return err
	}
	goMem, err := memoryInFreshProcess("go")
	if err != nil {
		return err
	}
	fmt.Fprintf(tw, "suspended memory\t%.0f B/task\t%.0f B/goroutine\t%.2fx\t<= 2.7 KB\t\n", weftMem, goMem, weftMem/goMem)
	late := benchmarks.ManySleepsLate()
	fmt.Fprintf(tw, "100k sleeps 0-50 ms\tdone %d ms after the longest\t\t\t<= 1 s\t\n", late.Milliseconds())
	tw.Flush()
	fmt.Fprintln(w)
	for _, p := range benchmarks.Core {
		fmt.Fprintf(w, "%s: weft = %s; Go = %s\n", p.Name, p.WeftDoc, p.GoDoc)
	}
	fmt.Fprintf(w, "suspended memory: heap+stacks per task with %d tasks asleep, vs %d goroutines blocked on a channel; each measured in a fresh process\n",
		benchmarks.MemTasks, benchmarks.MemTasks)
	return nil
}

// nsPerOp runs f rounds times and returns the median, min and max ns/op.
func nsPerOp(f func(*testing.B)) (median, lo, hi float64) {
	var xs []float64
	for i := 0; i < rounds; i++ {
		r := testing.Benchmark(f)
		xs = append(xs, float64(r.T.Nanoseconds())/float64(r.N))
	}
	slices.Sort(xs)
	return xs[len(xs)/2], xs[0], xs[len(xs)-1]
}

// memoryInFreshProcess runs `weft measure-memory kind` and returns its
// figure: the runtime reuses the records of goroutines that ended, so each
// memory measurement needs a process of its own.
func memoryInFreshProcess(kind string) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "measure-memory", kind)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("measuring %s memory: %w", kind, err)
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

// measureMemory is the hidden `weft measure-memory weft|go`: it prints the
// bytes per suspended task or blocked goroutine, measured in this process.
func measureMemory(w io.Writer, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("measure-memory: want weft or go")
	}
	var bytes float64
	switch args[0] {
	case "weft":
		bytes = benchmarks.SleepingTaskBytes()
	case "go":
		bytes = benchmarks.ParkedGoroutineBytes()
	default:
		return fmt.Errorf("measure-memory: want weft or go, not %q", args[0])
	}
	fmt.Fprintf(w, "%.0f\n", bytes)
	return nil
}
