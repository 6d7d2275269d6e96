// Package tables prints the bench program's tables of weft's core and
// sync benchmarks (internal/benchmarks at the module root, which `go test
// -bench` at the root runs too), each beside its Go-native twin with the
// ratio and the goal: `bench core`, `bench sync` and `bench memory`, the
// measurement the core table makes in a fresh process.
package tables

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

// MemoryCommand is the subcommand that measures the memory of suspended
// tasks or blocked goroutines (see Memory). Core starts its own executable
// with it once for each, so the program that calls Core must hand that
// subcommand to Memory.
const MemoryCommand = "memory"

// Core is `bench core`, which takes no arguments: it prints to w the core
// benchmarks beside their Go-native twins, each the median of rounds runs
// with its spread, the ratio and issue 20's goal, then the memory of a
// suspended task against a blocked goroutine (each measured in a fresh
// process: this executable again, with MemoryCommand) and how late 100k
// sleeps end. It returns an error for an argument or when a memory
// measurement failed.
func Core(w io.Writer, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("bench core: unexpected argument %q (it has no flags)", args[0])
	}
	fmt.Fprintf(w, "bench core: core runtime, %s %s/%s, %d CPUs, GOMAXPROCS=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "each timing: median of %d runs of `go test -bench` style loops (min..max)\n\n", rounds)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pairRows(tw, benchmarks.Core)
	weftMem, err := memoryInFreshProcess("weft")
	if err != nil {
		return err
	}
	goMem, err := memoryInFreshProcess("go")
	if err != nil {
		return err
	}
	fmt.Fprintf(tw, "suspended memory\t%.0f B/task\t%.0f B/goroutine\t%.2fx\t<= 2.7 KB\t\n", weftMem, goMem, weftMem/goMem)
	for _, k := range []struct{ kind, name string }{{"weft-await", "  ... in Await"}, {"weft-conn", "  ... in Conn.Read"}, {"coro", "  bare iter.Pull coroutine"}} {
		m, err := memoryInFreshProcess(k.kind)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%.0f B\t%.0f B/goroutine\t%.2fx\t<= 2.7 KB\t\n", k.name, m, goMem, m/goMem)
	}
	late := benchmarks.ManySleepsLate()
	fmt.Fprintf(tw, "100k sleeps 0-50 ms\tdone %d ms after the longest\t\t\t<= 1 s\t\n", late.Milliseconds())
	tw.Flush()
	fmt.Fprintln(w)
	for _, p := range benchmarks.Core {
		fmt.Fprintf(w, "%s: weft = %s; Go = %s\n", p.Name, p.WeftDoc, p.GoDoc)
	}
	fmt.Fprintf(w, "suspended memory: heap+stacks per task with %d tasks asleep, vs %d goroutines blocked on a channel; each measured in a fresh process\n",
		benchmarks.MemTasks, benchmarks.MemTasks)
	fmt.Fprintf(w, "  in Await: %d tasks awaiting one promise; in Conn.Read: %d tasks each reading its own idle connection (the Conn included); bare iter.Pull coroutine: %d coroutines parked in yield, the floor under any task\n",
		benchmarks.MemTasks, memConns, benchmarks.MemTasks)
	return nil
}

// pairRows writes the table's header and a row per pair: each side's
// median ns/op with its min..max, the ratio of the medians and the goal.
// The pairs run one after the other, each side rounds times.
func pairRows(tw *tabwriter.Writer, pairs []benchmarks.Pair) {
	fmt.Fprintln(tw, "benchmark\tweft\tGo-native\tratio\tgoal\t")
	for _, p := range pairs {
		wm, wlo, whi := nsPerOp(p.Weft)
		gm, glo, ghi := nsPerOp(p.Go)
		fmt.Fprintf(tw, "%s\t%.0f ns (%.0f..%.0f)\t%.0f ns (%.0f..%.0f)\t%.2fx\t%s\t\n",
			p.Name, wm, wlo, whi, gm, glo, ghi, wm/gm, p.Goal)
	}
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

// memoryInFreshProcess runs `bench memory kind` (this executable with
// MemoryCommand) and returns its figure: the runtime reuses the records of
// goroutines that ended, so each memory measurement needs a process of its
// own.
func memoryInFreshProcess(kind string) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, MemoryCommand, kind)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("measuring %s memory: %w", kind, err)
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

// Memory is `bench memory weft|go`: it prints to w the bytes of heap and
// stack per suspended task (weft: in Sleep; weft-await: in Await;
// weft-chan: in Chan.Recv;
// weft-conn: in Conn.Read, its connection included), per bare iter.Pull
// coroutine (coro), or per goroutine blocked on a channel (go), measured in this process with benchmarks.MemTasks of them. Run it
// in a fresh process, as Core does: the runtime reuses the records of
// goroutines that ended. It returns an error for any other argument.
func Memory(w io.Writer, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("bench memory: want weft, weft-await, weft-chan, weft-conn, coro or go")
	}
	var bytes float64
	switch args[0] {
	case "weft":
		bytes = benchmarks.SleepingTaskBytes()
	case "weft-await":
		bytes = awaitingTaskBytes()
	case "weft-chan":
		bytes = chanRecvTaskBytes()
	case "weft-conn":
		var err error
		if bytes, err = connReadTaskBytes(); err != nil {
			return err
		}
	case "coro":
		bytes = pullCoroutineBytes()
	case "go":
		bytes = benchmarks.ParkedGoroutineBytes()
	default:
		return fmt.Errorf("bench memory: want weft, weft-await, weft-chan, weft-conn, coro or go, not %q", args[0])
	}
	fmt.Fprintf(w, "%.0f\n", bytes)
	return nil
}
