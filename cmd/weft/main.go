// Command weft shows what the weft runtime does.
//
//	weft tour           run the programs that define weft's behaviour
//	weft trace FILE     draw a trace (WithTrace's JSON) as an SVG timeline
//	weft bench          say where the benchmarks are
//
// Run it from a checkout with `go run ./cmd/weft tour`. The benchmarks,
// which compare weft with goroutines, net, net/http, gnet and fasthttp,
// are a program of their own in the bench module: `cd bench && go run .
// help`.
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
	case "trace":
		err = traceCmd(stdout, stderr, args[1:])
	case "bench":
		return bench(stdout, stderr, args[1:])
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
  trace FILE.json  draw a trace-event file as an SVG timeline: a row per loop,
                   tasks as coloured slices (flags: -o FILE.svg -title -width)
  bench            say where the benchmarks are: the bench module's program
                   (cd bench && go run . help)
  help             this text
`)
}
