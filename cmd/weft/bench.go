package main

import (
	"fmt"
	"io"
	"strings"
)

// bench is `weft bench [args]`: the benchmarks are a program of their own
// in the bench module (it compares weft with gnet and fasthttp, which weft
// never depends on), so this prints where they are and how to run them.
// With no arguments that is the answer (status 0); with arguments, meant
// for the program, nothing was run, and the status is 2.
func bench(stdout, stderr io.Writer, args []string) int {
	w, code := stdout, 0
	if len(args) > 0 {
		w, code = stderr, 2
		fmt.Fprintf(w, "weft bench: this command runs no benchmarks; from the checkout's root run\n\n\tcd bench && go run . %s\n\n", strings.Join(args, " "))
	}
	fmt.Fprint(w, `The benchmarks are the bench module's program, one subcommand each:
core, sync (weft beside goroutines, channels and sync.Mutex), echo, http,
pinned (servers beside net, net/http, gnet and fasthttp), convoy and sha256
(CPU-bound work beside the loop). From the checkout's root:

	cd bench && go run . help    # every subcommand and its flags
	cd bench && go run . core    # the core runtime beside its Go-native twins

bench/README.md explains the figures.
`)
	return code
}
