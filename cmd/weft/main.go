// Command weft shows what the weft runtime does and how fast it does it.
//
//	weft tour           run the programs that define weft's behaviour
//	weft bench          core benchmarks beside their Go-native twins
//	weft bench convoy   an echo server beside CPU-bound work (the GIL's convoy effect)
//	weft bench sha256   hashing on the loop against hashing in Offload
//	weft bench sync     channels, Mutex and SendWait beside Go channels and sync.Mutex
//	weft trace FILE     draw a trace (WithTrace's JSON) as an SVG timeline
//
// Run it from a checkout with `go run ./cmd/weft tour`.
package main

import (
	"fmt"
	"io"
	"os"
)

// main runs the command named by the arguments and exits with its status.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command named by args[0] and returns the exit status: 0 on
// success, 1 when the command failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "tour":
		err = runTour(stdout, args[1:])
	case "bench":
		err = bench(stdout, stderr, args[1:])
	case "trace":
		err = traceCmd(stdout, stderr, args[1:])
	case "measure-memory": // hidden: one measurement in a fresh process, for bench
		err = measureMemory(stdout, args[1:])
	case clientMode: // hidden: the load client in a process of its own, for bench convoy
		err = benchClient(stdout, args[1:])
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "weft: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "weft:", err)
		return 1
	}
	return 0
}

// usage prints the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, `usage: weft <command> [arguments]

commands:
  tour [--trace DIR] [name...]
                   run the programs that define weft's behaviour (all by default);
                   --trace writes each one's trace and timeline to DIR/NAME.json, .svg
  bench            core benchmarks beside their Go-native twins, with ratios
  bench convoy     an echo server beside k CPU-bound workers: weft tasks, weft
                   Offload and Go at GOMAXPROCS=1 (flags: -duration -warmup -k
                   -conns -reps -interval -variants -svg FILE -markdown; -h for
                   more)
  bench sha256     hash messages in tasks on one loop, then in Offload
                   (flags: -size -n -interval)
  bench sync       channels, Mutex and SendWait beside Go channels and
                   sync.Mutex, with ratios
  trace FILE.json  draw a trace-event file as an SVG timeline: a row per loop,
                   tasks as coloured slices (flags: -o FILE.svg -title -width)
  help             this text
`)
}
