package main

// Server CPU per call, with the server in a process of its own: the test
// binary starts itself again as the server (whttp with connect handlers
// on one weft loop, or grpc-go's server), pinned to CPU 0 by taskset
// where there are two CPUs or more, and asks it for its CPU time
// (getrusage) around the calls. Run the client on the other CPU, one
// benchmark at a time:
//
//	flock /tmp/weft-bench.lock taskset -c 1 go test -run '^$' -bench ServerCPU -count 5
//
// Per server CPU-second figures do not depend on the client's speed.
// With WEFT_GRPC_BENCH_SERVER_CPUPROFILE=FILE in the environment, each
// server child writes its CPU profile to FILE (the last one stays).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// childEnv names the server a test binary started by serverProcess runs.
const childEnv = "WEFT_GRPC_BENCH_SERVER"

// serverChildFromEnv runs the server child and exits when the
// environment asks for one; TestMain calls it (not an init function: init
// runs with the main goroutine locked to its thread, and a weft loop on a
// locked thread pays a thread hand-off at every switch).
func serverChildFromEnv() {
	if kind := os.Getenv(childEnv); kind != "" {
		if err := runServerChild(kind); err != nil {
			fmt.Fprintln(os.Stderr, "server child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runServerChild serves kind ("whttp" or "grpc-go") on a loopback port,
// prints "addr ADDR", answers each "cpu" line on stdin with "cpu NS" (its
// user and system time so far) and returns when stdin ends.
func runServerChild(kind string) error {
	encoding.RegisterCodec(jsonCodec{})
	if path := os.Getenv(childEnv + "_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "cpu" {
				var ru syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				fmt.Printf("cpu %d\n", ru.Utime.Nano()+ru.Stime.Nano())
			}
		}
	}()
	switch kind {
	case "whttp":
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				return struct{}{}, err
			}
			fmt.Printf("addr %s\n", ln.Addr())
			return struct{}{}, (&demo{}).server().Serve(wt, ln)
		}, weft.WithContext(ctx))
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	case "grpc-go":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		s := newGRPCGoServer()
		context.AfterFunc(ctx, s.Stop)
		fmt.Printf("addr %s\n", ln.Addr())
		return s.Serve(ln)
	}
	return fmt.Errorf("unknown server %q", kind)
}

// serverProc is a server child and the pipes to it.
type serverProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	addr  string
}

// serverProcess starts the test binary as a server child of the given
// kind and stops it (by its pid) at the end of the benchmark.
func serverProcess(b *testing.B, kind string) *serverProc {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	argv := []string{exe, "-test.run=^$"}
	if runtime.NumCPU() >= 2 {
		if ts, err := exec.LookPath("taskset"); err == nil {
			argv = append([]string{ts, "-c", "0"}, argv...)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+kind)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &serverProc{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	b.Cleanup(func() {
		stdin.Close() // the child returns when its stdin ends
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	if !p.out.Scan() || !strings.HasPrefix(p.out.Text(), "addr ") {
		b.Fatalf("%s server: no address (%q, %v)", kind, p.out.Text(), p.out.Err())
	}
	p.addr = strings.TrimPrefix(p.out.Text(), "addr ")
	return p
}

// cpu is the child's user and system time so far.
func (p *serverProc) cpu(b *testing.B) time.Duration {
	if _, err := io.WriteString(p.stdin, "cpu\n"); err != nil {
		b.Fatal(err)
	}
	if !p.out.Scan() {
		b.Fatal("the server child did not answer", p.out.Err())
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(p.out.Text(), "cpu "), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(ns)
}

// benchServerProcesses runs f against each server in its own process; f
// makes count calls (or messages) and returns the count, and the server's
// CPU time around it gives the per-call figures.
func benchServerProcesses(b *testing.B, unit string, f func(b *testing.B, cc *grpc.ClientConn, warm bool) int) {
	for _, kind := range []string{"whttp", "grpc-go"} {
		b.Run(kind, func(b *testing.B) {
			p := serverProcess(b, kind)
			cc := dial(b, p.addr)
			f(b, cc, true) // warm-up: the connection made, the server's pools filled
			c0 := p.cpu(b)
			n := f(b, cc, false)
			c1 := p.cpu(b)
			cpu := c1 - c0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "server-ns/"+unit)
			b.ReportMetric(float64(n)/cpu.Seconds(), unit+"s/server-CPU-s")
		})
	}
}

// BenchmarkServerCPUUnary is a ping-pong, one call at a time: server CPU
// per call.
func BenchmarkServerCPUUnary(b *testing.B) {
	benchServerProcesses(b, "call", func(b *testing.B, cc *grpc.ClientConn, warm bool) int {
		var resp PingResponse
		call := func() {
			if err := cc.Invoke(context.Background(), PingProcedure, &PingRequest{Text: "x"}, &resp); err != nil {
				b.Fatal(err)
			}
		}
		if warm {
			for range 1000 {
				call()
			}
			return 1000
		}
		n := 0
		for b.Loop() {
			call()
			n++
		}
		return n
	})
}

// BenchmarkServerCPUServerStream receives streams of 100k small messages:
// server CPU per message.
func BenchmarkServerCPUServerStream(b *testing.B) {
	const n = 100_000
	benchServerProcesses(b, "msg", func(b *testing.B, cc *grpc.ClientConn, warm bool) int {
		stream := func() {
			receiveCount(b, cc, n)
		}
		if warm {
			stream()
			return n
		}
		streams := 0
		for b.Loop() {
			stream()
			streams++
		}
		return streams * n
	})
}
