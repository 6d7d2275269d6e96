package main

// The child side: `bench serve KIND ADDR` runs one echo server, prints
// "listening ADDR" on stdout once it accepts connections, and serves until
// its standard input reaches end of file (the parent closes it, or dies).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
)

// serveMode is the subcommand that makes the program a server child: the
// benchmarks start their own executable with it (see child.go), or a -base
// build of it.
const serveMode = "serve"

// listeningPrefix starts the one line a server child prints on stdout.
const listeningPrefix = "listening "

// serverKinds lists the servers in the order they are run and shown.
var serverKinds = []string{"weft", "weft-2loops", "weft-2loops-cpu4", "net", "net-cpu4", "gnet", "gnet-multicore", "nbio"}

// childMain runs the server named by args (KIND ADDR) and returns the
// process's exit code.
func childMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench serve KIND ADDR")
		return 2
	}
	kind, addr := args[0], args[1]
	// BENCH_CPUPROFILE=path profiles the server child (one measurement:
	// run with -reps 1 and one server and conns).
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench serve %s: %v\n", kind, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "bench serve %s: %v\n", kind, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if isHTTPKind(kind) {
		if err := httpChildMain(kind, addr); err != nil {
			fmt.Fprintf(os.Stderr, "bench serve %s: %v\n", kind, err)
			return 1
		}
		return 0
	}
	// Stop when stdin ends: the parent closes it to stop us, and it ends
	// too if the parent dies, so a child never outlives its parent. The
	// goroutine ends with stdin.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go answerCommands(cancel)
	var err error
	switch kind {
	case "weft":
		err = serveWeft(ctx, addr, 1, 0)
	case "weft-2loops":
		err = serveWeft(ctx, addr, 2, 0)
	case "weft-2loops-cpu4":
		err = serveWeft(ctx, addr, 2, 4)
	case "net":
		err = serveNet(ctx, addr, 0)
	case "net-cpu4":
		err = serveNet(ctx, addr, 4)
	case "gnet":
		err = serveGnet(ctx, addr, false)
	case "gnet-multicore":
		err = serveGnet(ctx, addr, true)
	case "nbio":
		err = serveNbio(ctx, addr)
	default:
		err = fmt.Errorf("unknown server %q", kind)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench serve %s: %v\n", kind, err)
		return 1
	}
	return 0
}

// announce tells the parent where the server listens.
func announce(addr net.Addr) {
	fmt.Printf("%s%s\n", listeningPrefix, addr)
}

// serveWeft runs weft's echo server (internal/echo) on n weft loops until
// ctx ends (accepted connections are spread over the loops round-robin),
// beside cpu CPU-bound tasks (a Checkpoint every 1000 iterations) that run
// as long as it does. The listener is closed from outside the loop by
// context.AfterFunc; no task ever waits on a channel.
func serveWeft(ctx context.Context, addr string, n, cpu int) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		var stop atomic.Bool
		defer stop.Store(true)
		for range cpu {
			weft.Go(t, func(t *weft.Task) (int, error) { return spin(t, &stop) })
		}
		announce(ln.Addr())
		stopClose := context.AfterFunc(ctx, func() { ln.Close() })
		defer stopClose()
		err = echo.Serve(t, ln)
		if os.Getenv("BENCH_STATS") != "" { // the Run's counters, for a look inside
			fmt.Fprintf(os.Stderr, "%+v\n", weft.RunStats(t))
		}
		return struct{}{}, err
	}, weft.WithLoops(n))
	return err
}

// spin is a CPU-bound task: it computes, with a Checkpoint every 1000
// iterations, until stop is set.
func spin(t *weft.Task, stop *atomic.Bool) (int, error) {
	n := 0
	for !stop.Load() {
		for i := range 1000 {
			n ^= i
		}
		if err := t.Checkpoint(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// serveNet runs a goroutine-per-connection echo server on the net package
// until ctx ends, then closes every connection and waits for their
// goroutines.
func serveNet(ctx context.Context, addr string, cpu int) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// cpu goroutines compute beside the server, as weft-2loops-cpu4's
	// tasks do (Go preempts them; they end with the server).
	var stop atomic.Bool
	defer stop.Store(true)
	for range cpu {
		go func() {
			n := 0
			for !stop.Load() {
				for i := range 1000 {
					n ^= i
				}
			}
			_ = n
		}()
	}
	announce(ln.Addr())
	stopClose := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopClose()
	return echo.ServeNet(ln)
}

// gnetEcho is gnet's echo handler: it writes back whatever arrived.
type gnetEcho struct {
	gnet.BuiltinEventEngine
	booted chan gnet.Engine // receives the engine once, from OnBoot
}

// OnBoot hands the running engine to serveGnet.
func (h *gnetEcho) OnBoot(eng gnet.Engine) gnet.Action {
	h.booted <- eng // buffered: never blocks
	return gnet.None
}

// OnTraffic echoes everything buffered on c.
func (h *gnetEcho) OnTraffic(c gnet.Conn) gnet.Action {
	buf, err := c.Next(-1)
	if err != nil {
		return gnet.Close
	}
	if _, err := c.Write(buf); err != nil {
		return gnet.Close
	}
	return gnet.None
}

// serveGnet runs gnet's echo server until ctx ends: with one event loop, or
// with one per CPU when multicore is set.
func serveGnet(ctx context.Context, addr string, multicore bool) error {
	h := &gnetEcho{booted: make(chan gnet.Engine, 1)}
	runErr := make(chan error, 1)
	// The engine runs in this goroutine; it ends when the engine stops
	// (below) or fails to start.
	go func() {
		runErr <- gnet.Run(h, "tcp://"+addr,
			gnet.WithMulticore(multicore),
			gnet.WithLogger(stderrLogger{}))
	}()
	var eng gnet.Engine
	select {
	case err := <-runErr:
		if err == nil {
			err = errors.New("gnet stopped before it booted")
		}
		return err
	case eng = <-h.booted:
	}
	la, err := gnetAddr(eng)
	if err != nil {
		stopGnet(eng)
		<-runErr
		return err
	}
	announce(la)
	select {
	case err := <-runErr:
		return err
	case <-ctx.Done():
	}
	if err := stopGnet(eng); err != nil {
		return err // the process exits; the engine goes with it
	}
	return <-runErr
}

// stopGnet stops a gnet engine, giving up after a few seconds.
func stopGnet(eng gnet.Engine) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return eng.Stop(ctx)
}

// gnetAddr returns the address a gnet engine listens on (gnet does not
// report the port it bound for ":0"): it asks a duplicate of the
// listener's descriptor, then closes the duplicate.
func gnetAddr(eng gnet.Engine) (net.Addr, error) {
	fd, err := eng.Dup()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "gnet-listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	return ln.Addr(), nil
}

// stderrLogger is gnet's logger in the child: warnings and errors go to
// stderr, which the parent shares; stdout is kept for the address line.
type stderrLogger struct{}

// Debugf drops debug messages.
func (stderrLogger) Debugf(string, ...any) {}

// Infof drops informational messages (gnet prints a banner at start).
func (stderrLogger) Infof(string, ...any) {}

// Warnf prints a warning to stderr.
func (stderrLogger) Warnf(format string, args ...any) { logf("WARN", format, args...) }

// Errorf prints an error to stderr.
func (stderrLogger) Errorf(format string, args ...any) { logf("ERROR", format, args...) }

// Fatalf prints an error to stderr and exits.
func (stderrLogger) Fatalf(format string, args ...any) {
	logf("FATAL", format, args...)
	os.Exit(1)
}

// logf writes one gnet log line to stderr.
func logf(level, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gnet %s: %s\n", level, fmt.Sprintf(format, args...))
}

// The answers' prefixes to the commands a child reads on stdin.
const (
	memPrefix   = "mem "   // "mem": heap and stacks in use after two collections
	splitPrefix = "split " // "split": heap in use, stacks in use, goroutines
	profPrefix  = "prof "  // "prof PATH": a heap profile written to PATH
	statsPrefix = "stats " // "stats": heap objects allocated so far (MemStats.Mallocs)
)

// answerCommands answers the parent's command lines on stdin until it
// ends (the parent closes it to stop the child, and it ends too if the
// parent dies, so a child never outlives its parent); then it calls stop.
func answerCommands(stop func()) {
	defer stop()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if path, ok := strings.CutPrefix(line, "prof "); ok {
			fmt.Printf("%s%v\n", profPrefix, writeHeapProfile(path))
			continue
		}
		switch line {
		case "mem":
			fmt.Printf("%s%d\n", memPrefix, memInUse())
		case "split":
			memInUse()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("%s%d %d %d\n", splitPrefix, ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine())
		case "stats":
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("%s%d\n", statsPrefix, ms.Mallocs)
		}
	}
}

// writeHeapProfile writes the heap profile (after a collection) to path.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// memInUse is the heap and the stacks in use once the garbage is gone.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
