// Command bench holds weft's comparison benchmarks: weft beside the Go
// runtime's own tools (goroutines, channels, sync.Mutex, net, net/http) and
// beside other Go event loops (gnet, fasthttp), one subcommand each. It is a
// module of its own, so that weft's users never download the peers it
// compares with. Run it from this directory:
//
//	cd bench && go run . core      # the core runtime beside its Go-native twins
//	go run . echo -duration 1s -reps 1
//	go run . help                  # every subcommand
//
// Each subcommand takes its own flags (-h lists them); see README.md for
// what the numbers mean and the figures measured so far.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/weft-go/weft/bench/internal/cpubound"
	"github.com/weft-go/weft/bench/internal/tables"
)

// main runs the subcommand named by the arguments and exits with its
// status.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the subcommand named by args[0] and returns the exit status: 0
// on success, 1 when it failed, 2 for a usage error. The echo, http,
// pinned and serve subcommands write to the process's own stdout and
// stderr (they start children that share them).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "core":
		err = tables.Core(stdout, args[1:])
	case "sync":
		err = tables.Sync(stdout, args[1:])
	case tables.MemoryCommand:
		err = tables.Memory(stdout, args[1:])
	case "echo":
		return echoMain(args[1:])
	case "http":
		return httpMain(args[1:])
	case "h2":
		return h2Main(args[1:])
	case "pinned":
		return pinnedMain(args[1:])
	case "resp":
		return respMain(args[1:])
	case respServeMode:
		return respChildMain(args[1:])
	case "idle":
		return idleMain(args[1:])
	case "convoy":
		err = cpubound.Convoy(stdout, stderr, args[1:])
	case "greedy":
		err = cpubound.Greedy(stdout, stderr, args[1:])
	case cpubound.GreedyClientMode:
		err = cpubound.GreedyClient(stdout, args[1:])
	case "sha256":
		err = cpubound.SHA256(stdout, stderr, args[1:])
	case "hangup":
		err = hangupMain(args[1:])
	case "sendfile":
		err = sendfileMain(args[1:])
	case "wsidle":
		err = wsidleMain(args[1:])
	case "h2idle":
		err = h2idleMain(args[1:])
	case whttpServeMode:
		err = whttpServe(args[1:])
	case serveMode:
		return childMain(args[1:])
	case cpubound.ClientMode:
		err = cpubound.Client(stdout, args[1:])
	case "help", "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	default:
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "bench: a subcommand comes first (the echo servers' table is `go run . echo %s`)\n\n", strings.Join(args, " "))
		} else {
			fmt.Fprintf(stderr, "bench: unknown subcommand %q\n\n", args[0])
		}
		printUsage(stderr)
		return 2
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "bench ") {
			msg = "bench " + args[0] + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	return 0
}

// printUsage prints the list of subcommands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: go run . <subcommand> [flags]   (in bench/; -h after a subcommand lists its flags)

weft's runtime beside Go's:
  core             spawn, yield, cancel, Checkpoint, Blocking, memory and sleeps
                   beside their Go-native twins, with ratios and goals
  sync             channels, Mutex and SendWait beside Go channels and
                   sync.Mutex, with ratios and goals
  memory KIND      bytes per suspended task (weft: in Sleep, weft-await,
                   weft-chan: in Chan.Recv, weft-conn: in Conn.Read), bare
                   iter.Pull coroutine (coro)
                   or blocked goroutine (go), measured in this process (core
                   runs each in a fresh one)

servers, each in a process of its own under the same load:
  echo             echo servers: weft, net (goroutine per connection), gnet
                   (flags: -duration -warmup -reps -servers -conns -markdown
                   -pin -base)
  http             HTTP servers under wrk: whttp, net/http, fasthttp, and their
                   memory per idle connection (flags: -duration -reps -conns
                   -servers -paths -memconns -wrk -pin -base)
  h2               HTTP/2 under h2load: whttp h2c, net/http h2c and whttp's
                   HTTP/1.1, requests per server CPU-second (flags: -duration
                   -reps -c -m -path -pin)
  idle             RSS and heap per idle connection at 10,000 and 19,000
                   connections: echo servers (weft, net, gnet, nbio) or,
                   with -http, HTTP keep-alive (whttp, net/http, fasthttp,
                   nbhttp) (flags: -servers -conns -reps -http -markdown)
  resp             a Redis-protocol key-value server on weft and with a
                   goroutine per connection under redis-benchmark (Debian's
                   redis-tools), pinned: requests per server CPU-second
                   (flags: -servers -cases -reps -n -np -perf -strace
                   -markdown -base -server-cpu -load-cpu)
  pinned           echo servers pinned to one CPU, the load on another: CPU per
                   request and, with -strace, system calls per request (flags:
                   -duration -warmup -reps -servers -conns -strace -base
                   -server-cpu -load-cpu)

whttp beside net/http (servers in processes of their own, but for hangup):
  hangup           how soon a handler in each kind of wait sees its client
                   leave (flags: -n)
  sendfile         a 5 MB file through http.FileServer: server CPU per request
                   (flags: -size -reps -duration -conns -pin)
  wsidle           heap, stacks and RSS per idle gorilla/websocket connection
                   (flags: -n -reps)
  h2idle           heap, stacks and RSS per idle h2c connection and per open
                   stream whose handler waits (flags: -n -streams -per -reps)

CPU-bound work beside the loop:
  convoy           an echo server beside k CPU-bound workers: weft tasks, weft
                   Offload and Go at GOMAXPROCS=1 (flags: -duration -warmup -k
                   -conns -reps -interval -variants -svg FILE -trace FILE
                   -markdown -hog; variants tasks, tasks2 (two loops), offload, go)
  greedy           a polite client beside two greedy ones (pipelined streams)
                   on weft's echo (one loop; epoll and io_uring) and net's
                   (flags: -reps -rounds -servers)
  sha256           hash messages in tasks on one loop, then in Offload
                   (flags: -size -n -interval)

started by the subcommands above, not by hand:
  serve KIND ADDR  a server child of echo, http and pinned
  resp-serve KIND ADDR
                   a RESP server child of resp
  whttp-serve KIND ADDR [DIR]
                   a server child of sendfile, wsidle and h2idle
  convoy-client ADDR CONNS WARMUP DURATION
                   convoy's load client
  greedy-client ADDR ROUNDS
                   greedy's clients

  help             this text

Go benchmarks of blocking clients (go-redis, pgx) through weft.Blocking:
  go test -run '^$' -bench 'Redis|Pgx' .
`)
}
