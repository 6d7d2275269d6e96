// Command reuseport serves HTTP from N processes on one port. Each process
// is a weft Run that listens with ListenConfig{ReusePort: true}, so the
// kernel spreads the incoming connections over the processes (on Linux,
// by a hash of their addresses) and every core of the machine accepts and
// serves without one process handing connections to another. More
// machines than one need a load balancer in front of such processes.
//
//	go run ./examples/reuseport -listen 127.0.0.1:8080 -procs 4
//	curl http://127.0.0.1:8080/        # served by process 12345
//
// The first process is a supervisor: it starts the N workers (itself, run
// again with WEFT_REUSEPORT_WORKER set), and on SIGINT or SIGTERM stops
// them by their process ids and waits for them. A worker stops gracefully
// on SIGTERM: it stops accepting and finishes the requests in flight.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

const workerEnv = "WEFT_REUSEPORT_WORKER"

func main() {
	if addr := os.Getenv(workerEnv); addr != "" {
		if err := worker(addr, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "reuseport worker:", err)
			os.Exit(1)
		}
		return
	}
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on (port 0: a free one)")
	procs := flag.Int("procs", runtime.NumCPU(), "worker processes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := start(*listen, *procs, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reuseport:", err)
		os.Exit(1)
	}
	fmt.Printf("reuseport: %d processes serving on %s\n", *procs, s.addr)
	<-ctx.Done()
	if err := s.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "reuseport:", err)
		os.Exit(1)
	}
}

// worker serves on addr until SIGTERM or SIGINT: one weft Run, one loop,
// its listener sharing the port with the other workers'. It writes
// "listening <pid>" to ready once it accepts.
func worker(addr string, ready io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pid := os.Getpid()
	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "served by process %d\n", pid)
	})}
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := (&weft.ListenConfig{ReusePort: true}).Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Fprintf(ready, "listening %d\n", pid)
		// Run's context is cancelled on SIGTERM: Serve's task with it, which
		// is a graceful stop.
		return struct{}{}, srv.Serve(t, ln)
	}, weft.WithContext(ctx))
	return err
}

// supervisor is the running workers.
type supervisor struct {
	addr    string
	workers []*exec.Cmd
}

// start starts procs workers on addr and returns once each listens. A
// port of 0 is replaced by a free one first, since every worker must
// listen on the same port.
func start(addr string, procs int, out io.Writer) (*supervisor, error) {
	if procs < 1 {
		return nil, errors.New("-procs must be at least 1")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if port == "0" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		addr = ln.Addr().String()
		ln.Close()
	} else {
		addr = net.JoinHostPort(host, port)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &supervisor{addr: addr}
	for range procs {
		cmd := exec.Command(exe, os.Args[1:]...)
		cmd.Env = append(os.Environ(), workerEnv+"="+addr)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			s.stop()
			return nil, err
		}
		s.workers = append(s.workers, cmd)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "listening ") {
			s.stop()
			return nil, fmt.Errorf("worker %d did not start: %q %v", cmd.Process.Pid, line, err)
		}
		fmt.Fprintf(out, "reuseport: worker %d listening on %s\n", cmd.Process.Pid, addr)
	}
	return s, nil
}

// stop sends SIGTERM to every worker, by its process id, and waits for
// them all.
func (s *supervisor) stop() error {
	for _, cmd := range s.workers {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	for _, cmd := range s.workers {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", cmd.Process.Pid, err))
		}
	}
	s.workers = nil
	return errors.Join(errs...)
}
