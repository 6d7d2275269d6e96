package weft_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
	"golang.org/x/sys/unix"
)

func TestClosesInDefersOfTasksUnwoundByGoexitAreNotLost(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		noGC(t)
		before := openFDs(t)
		for range 60 {
			done := make(chan struct{})
			go func() {
				defer close(done)
				weft.Run(func(wt *weft.Task) (int, error) {
					ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
					if err != nil {
						return 0, err
					}
					c, err := weft.Dial(wt, "tcp", ln.Addr().String())
					if err != nil {
						return 0, err
					}
					s, err := ln.Accept(wt)
					if err != nil {
						return 0, err
					}
					spawn(wt, func(wt *weft.Task) {
						defer ln.Close()
						defer c.Close()
						defer s.Close()
						s.Read(wt, make([]byte, 1)) // unwound here
					})
					weft.Go(wt, func(wt *weft.Task) (int, error) { runtime.Goexit(); return 0, nil })
					return 0, nil
				}, opts...)
			}()
			<-done
		}
		if after := openFDs(t); after > before+2 {
			t.Fatalf("%d descriptors leaked over 60 Runs ended by Goexit", after-before)
		}
	})
}

func TestCloseFromAGoroutineAsRunEndsIsNotLost(t *testing.T) {
	noGC(t)
	before := openFDs(t)
	var closers sync.WaitGroup
	for range 3000 {
		weft.Run(func(wt *weft.Task) (int, error) {
			var lns []*weft.Listener
			for range 4 {
				ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
				if err != nil {
					return 0, err
				}
				lns = append(lns, ln)
			}
			ending := make(chan struct{})
			closers.Add(1)
			go func() {
				defer closers.Done()
				<-ending
				for _, ln := range lns {
					ln.Close() // lands about when Run ends
				}
			}()
			close(ending)
			return 0, nil
		})
	}
	closers.Wait()
	if after := openFDs(t); after > before+2 {
		t.Fatalf("%d descriptors leaked over 3000 Runs", after-before)
	}
}

// Some tests need a process of their own: a low or high fd limit, or more
// descriptors than one process may hold. The test binary runs itself with
// WEFT_TEST_HELPER set; TestHelperProcess then does that part and exits.

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("WEFT_TEST_HELPER")
	if mode == "" {
		t.Skip("runs only as a helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	var err error
	switch mode {
	case "clients":
		err = helperClients(args[0], args[1])
	case "emfile":
		err = helperEMFILE()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestTenThousandConcurrentConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("10k connections in -short mode")
	}
	const n = 10_000
	// Server side here (n accepted sockets), clients in a child process (n
	// more): together they need more descriptors than one process may have.
	got, err := raiseFDLimit(n + 200)
	if err != nil || got < n+200 {
		t.Skipf("needs RLIMIT_NOFILE >= %d, have %d (%v)", n+200, got, err)
	}
	run(t, func(wt *weft.Task) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, echo.Serve(wt, ln) })
		cmd := helperCommand(t, "clients", ln.Addr().String(), fmt.Sprint(n))
		out, err := weft.Offload(wt, func() ([]byte, error) { return cmd.Output() })
		ln.Close()
		if err != nil {
			t.Fatalf("clients: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), fmt.Sprintf("ok %d", n)) {
			t.Fatalf("clients said %q", out)
		}
		if _, err := srv.Await(wt); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAcceptBacksOffOnEMFILEAndRecovers(t *testing.T) {
	cmd := helperCommand(t, "emfile")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		cmd.Process.Kill()
		t.Fatal("helper printed no address")
	}
	addr := strings.TrimPrefix(lines.Text(), "addr ")
	// Connect three clients; the helper can accept none until it frees fds.
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		defer c.Close()
	}
	var report string
	for lines.Scan() {
		report += lines.Text() + "\n"
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, report)
	}
	var accepted, warnings int
	var cpu time.Duration
	if _, err := fmt.Sscanf(report, "accepted %d warnings %d cpu %v", &accepted, &warnings, &cpu); err != nil {
		t.Fatalf("report %q: %v", report, err)
	}
	if accepted != 3 {
		t.Errorf("accepted %d of 3 after descriptors freed up", accepted)
	}
	if warnings != 1 {
		t.Errorf("logged %d warnings, want exactly one", warnings)
	}
	if cpu > 150*time.Millisecond {
		t.Errorf("Accept spun: %v of CPU in 400 ms out of descriptors", cpu)
	}
}

func helperCommand(t *testing.T, mode string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "WEFT_TEST_HELPER="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

func raiseFDLimit(want uint64) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < want {
		lim.Cur = min(want, lim.Max)
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return lim.Cur, nil
}

// helperClients opens n connections to addr at once, from one weft loop:
// each sends its own message and checks the echo, waits until all n are
// open together, then does it again and closes.
func helperClients(addr, count string) error {
	var n int
	fmt.Sscan(count, &n)
	if got, err := raiseFDLimit(uint64(n + 200)); err != nil || got < uint64(n+200) {
		return fmt.Errorf("cannot raise the fd limit: %d, %v", got, err)
	}
	all, allOpen := weft.NewPromise[struct{}]()
	var open atomic.Int64 // the clients may run on several loops (WEFT_LOOPS)
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		err := weft.Group(t, func(g *weft.TaskGroup) error {
			for i := 0; i < n; i++ {
				g.Go(func(t *weft.Task) error {
					c, err := weft.Dial(t, "tcp", addr)
					if err != nil {
						return err
					}
					defer c.Close()
					msg := []byte(fmt.Sprintf("connection %d", i))
					if err := roundTrip(t, c, msg); err != nil {
						return err
					}
					if open.Add(1) == int64(n) {
						allOpen(struct{}{}, nil)
					}
					if _, err := all.Await(t); err != nil {
						return err
					}
					return roundTrip(t, c, msg)
				})
			}
			return nil
		})
		return struct{}{}, err
	})
	if err != nil {
		return err
	}
	fmt.Printf("ok %d\n", n)
	return nil
}

// countingHandler counts warnings logged through slog.
type countingHandler struct{ warnings *atomic.Int32 }

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && strings.Contains(r.Message, "file descriptors") {
		h.warnings.Add(1)
	}
	return nil
}

func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h countingHandler) WithGroup(string) slog.Handler { return h }

// helperEMFILE listens, then uses up its descriptors under a low limit, so
// that Accept fails with EMFILE for 400 ms; then frees some and reports
// what Accept did.
func helperEMFILE() error {
	var warnings atomic.Int32
	slog.SetDefault(slog.New(countingHandler{&warnings}))
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 64, Max: 64}); err != nil {
		return err
	}
	accepted := 0
	var cpu time.Duration
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer ln.Close()
		var filler []int
		for {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				break
			}
			filler = append(filler, fd)
		}
		fmt.Printf("addr %s\n", ln.Addr())
		acceptor := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for accepted < 3 {
				c, err := ln.Accept(t)
				if err != nil {
					return struct{}{}, err
				}
				defer c.Close()
				accepted++
			}
			return struct{}{}, nil
		})
		var before, after unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &before)
		if err := t.Sleep(400 * time.Millisecond); err != nil {
			return struct{}{}, err
		}
		unix.Getrusage(unix.RUSAGE_SELF, &after)
		cpu = time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		for _, fd := range filler[:16] {
			unix.Close(fd)
		}
		_, err = weft.Timeout(t, 5*time.Second, func(t *weft.Task) (struct{}, error) { return acceptor.Await(t) })
		for _, fd := range filler[16:] {
			unix.Close(fd)
		}
		return struct{}{}, err
	})
	if err != nil {
		return err
	}
	fmt.Printf("accepted %d warnings %d cpu %v\n", accepted, warnings.Load(), cpu)
	return nil
}
