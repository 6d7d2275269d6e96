// Command weft shows what the weft runtime does and how fast it does it.
//
//	weft tour           run the programs that define weft's behaviour
//	weft bench          core benchmarks beside their Go-native twins
//
// Run it from a checkout with `go run ./cmd/weft tour`.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

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
		err = bench(stdout, args[1:])
	case "measure-memory": // hidden: one measurement in a fresh process, for bench
		err = measureMemory(stdout, args[1:])
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

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: weft <command> [arguments]

commands:
  tour [name...]   run the programs that define weft's behaviour (all by default)
  bench            core benchmarks beside their Go-native twins, with ratios
  help             this text
`)
}
