package tables

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"

	"github.com/weft-go/weft/internal/benchmarks"
)

// Sync is `bench sync`, which takes no arguments: it prints to w the
// channels, the mutex and the goroutine bridge beside their Go-native
// twins, each the median of rounds runs with its spread, the ratio and the
// goal. Each pair runs interleaved (weft, Go, weft, Go...), so that the
// ratio compares like with like on a noisy machine. It returns an error
// for an argument.
func Sync(w io.Writer, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("bench sync: unexpected argument %q (it has no flags)", args[0])
	}
	fmt.Fprintf(w, "bench sync: channels, locks, the goroutine bridge; %s %s/%s, %d CPUs, GOMAXPROCS=%d\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "each timing: median of %d runs (min..max); ratio = weft time / Go time\n\n", rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pairRows(tw, benchmarks.Sync)
	tw.Flush()
	fmt.Fprintln(w)
	for _, p := range benchmarks.Sync {
		fmt.Fprintf(w, "%s: weft = %s; Go = %s\n", p.Name, p.WeftDoc, p.GoDoc)
	}
	return nil
}
