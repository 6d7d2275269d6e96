//go:build linux

package weft_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
)

// Go's net/error_test.go: inputs that net.Listen and net.Dial refuse.
var listenErrorTests = []struct{ network, address string }{
	{"foo", ""},
	{"bar", "baz"},
	{"datakit", "mh/astro/r70"},
	{"tcp", "127.0.0.1:☺"},
	{"tcp", "no-such-name:80"},
	{"tcp", "mh/astro/r70:http"},
	{"tcp", net.JoinHostPort("127.0.0.1", "-1")},
	{"tcp", net.JoinHostPort("127.0.0.1", "123456789")},
	{"unix", "/path/to/somewhere"},
	{"unixpacket", "/path/to/somewhere"},
}

var listenPacketErrorTests = []struct{ network, address string }{
	{"foo", ""},
	{"bar", "baz"},
	{"datakit", "mh/astro/r70"},
	{"udp", "127.0.0.1:☺"},
	{"udp", "no-such-name:80"},
	{"udp", "mh/astro/r70:http"},
	{"udp", net.JoinHostPort("127.0.0.1", "-1")},
	{"udp", net.JoinHostPort("127.0.0.1", "123456789")},
	{"unixgram", "/path/to/somewhere"},
}

var dialErrorTests = []struct{ network, address string }{
	{"foo", ""},
	{"bar", "baz"},
	{"datakit", "mh/astro/r70"},
	{"tcp", ""},
	{"tcp", "127.0.0.1:☺"},
	{"tcp", "no-such-name:80"},
	{"tcp", "mh/astro/r70:http"},
	{"tcp", net.JoinHostPort("127.0.0.1", "-1")},
	{"tcp", net.JoinHostPort("127.0.0.1", "123456789")},
	{"ip:icmp", "127.0.0.1"},
	{"unix", "/path/to/somewhere"},
	{"unixpacket", "/path/to/somewhere"},
}

// checkNetError: weft's error is what net's would be: a *net.OpError with
// the operation, and net refuses the same input.
func checkNetError(t *testing.T, op, network, address string, err, netErr error) {
	t.Helper()
	if netErr == nil && network != "ip:icmp" { // raw IP sockets: net dials them as root
		t.Fatalf("net accepts %s %q: the table is wrong", network, address)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != op {
		t.Errorf("%s %s %q: %v (%T), want a *net.OpError of %q as net's %v", op, network, address, err, err, op, netErr)
	}
}

func TestListenConfigRefusesWhatNetRefuses(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			for _, lc := range []*weft.ListenConfig{{}, {ReusePort: true, KeepAlive: time.Second, Backlog: 16}} {
				for _, tt := range listenErrorTests {
					ln, err := lc.Listen(wt, tt.network, tt.address)
					if ln != nil {
						ln.Close()
					}
					_, netErr := (&net.ListenConfig{}).Listen(context.Background(), tt.network, tt.address)
					checkNetError(t, "listen", tt.network, tt.address, err, netErr)
				}
				for _, tt := range listenPacketErrorTests {
					c, err := lc.ListenPacket(wt, tt.network, tt.address)
					if c != nil {
						c.Close()
					}
					_, netErr := (&net.ListenConfig{}).ListenPacket(context.Background(), tt.network, tt.address)
					checkNetError(t, "listen", tt.network, tt.address, err, netErr)
				}
			}
			_, err := (&weft.ListenConfig{}).Listen(wt, "tcp5", "127.0.0.1:0")
			var une net.UnknownNetworkError
			if !errors.As(err, &une) {
				t.Errorf("an unknown network: %v, want a net.UnknownNetworkError", err)
			}
		}, opts...)
	})
}

func TestDialerRefusesWhatNetRefuses(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			for _, d := range []*weft.Dialer{{}, {Timeout: 5 * time.Second, KeepAlive: -1}} {
				for _, tt := range dialErrorTests {
					c, err := d.Dial(wt, tt.network, tt.address)
					if c != nil {
						c.Close()
					}
					_, netErr := (&net.Dialer{}).Dial(tt.network, tt.address)
					checkNetError(t, "dial", tt.network, tt.address, err, netErr)
				}
			}
		}, opts...)
	})
}

// TestListenAddressInUseWithoutReusePort: a second listener on a taken
// port fails with EADDRINUSE, as net's does, unless both set ReusePort.
func TestListenAddressInUseWithoutReusePort(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln, err := (&weft.ListenConfig{}).Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			_, err = (&weft.ListenConfig{}).Listen(wt, "tcp", ln.Addr().String())
			var oe *net.OpError
			if !errors.As(err, &oe) || !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("listening on a taken port: %v, want EADDRINUSE in a *net.OpError", err)
			}
			_, err = (&weft.ListenConfig{ReusePort: true}).Listen(wt, "tcp", ln.Addr().String())
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("ReusePort beside a listener without it: %v, want EADDRINUSE", err)
			}
			pc, err := (&weft.ListenConfig{}).ListenPacket(wt, "udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			if _, err := (&weft.ListenConfig{}).ListenPacket(wt, "udp", pc.LocalAddr().String()); !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("a UDP port in use: %v, want EADDRINUSE", err)
			}
		}, opts...)
	})
}

// TestListenConfigControlAndDialerControl: Control sees the socket before
// bind (or connect) with the family's network and the address, can set
// options on it, and its error fails the call.
func TestListenConfigControlAndDialerControl(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			var got []string
			control := func(network, address string, c syscall.RawConn) error {
				got = append(got, network+" "+address)
				return c.Control(func(fd uintptr) {
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<10)
				})
			}
			ln, err := (&weft.ListenConfig{Control: control}).Listen(wt, "tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			c, err := (&weft.Dialer{Control: control}).Dial(wt, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pc, err := (&weft.ListenConfig{Control: control}).ListenPacket(wt, "udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			pc.Close()
			want := []string{"tcp4 127.0.0.1:0", "tcp4 127.0.0.1:" + strconv.Itoa(port), "udp4 127.0.0.1:0"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Control saw %q, want %q", got, want)
			}
			if v, err := weft.ConnSockopt(c, unix.SOL_SOCKET, unix.SO_RCVBUF); err != nil || v < 64<<10 {
				t.Errorf("SO_RCVBUF set by Control = %d, %v", v, err)
			}
			refuse := errors.New("refused by Control")
			failing := func(string, string, syscall.RawConn) error { return refuse }
			if _, err := (&weft.ListenConfig{Control: failing}).Listen(wt, "tcp", "127.0.0.1:0"); !errors.Is(err, refuse) {
				t.Errorf("Listen with a failing Control: %v", err)
			}
			if _, err := (&weft.Dialer{Control: failing}).Dial(wt, "tcp", ln.Addr().String()); !errors.Is(err, refuse) {
				t.Errorf("Dial with a failing Control: %v", err)
			}
		}, opts...)
	})
}

// TestKeepAliveOfListenConfigAndDialer: accepted and dialled TCP
// connections probe every 15 s by default, at the period asked, or not at
// all when KeepAlive is negative.
func TestKeepAliveOfListenConfigAndDialer(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			for _, ka := range []time.Duration{0, 30 * time.Second, -1} {
				ln, err := (&weft.ListenConfig{KeepAlive: ka}).Listen(wt, "tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				dc, err := (&weft.Dialer{KeepAlive: ka}).Dial(wt, "tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				ac, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				for side, c := range map[string]*weft.Conn{"accepted": ac, "dialled": dc} {
					on, err := weft.ConnSockopt(c, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
					if err != nil {
						t.Fatal(err)
					}
					idle, _ := weft.ConnSockopt(c, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
					switch {
					case ka < 0 && on != 0:
						t.Errorf("%s, KeepAlive %v: SO_KEEPALIVE is on", side, ka)
					case ka == 0 && (on == 0 || idle != 15):
						t.Errorf("%s, KeepAlive 0: on=%d idle=%ds, want on and 15 s", side, on, idle)
					case ka > 0 && (on == 0 || idle != int(ka/time.Second)):
						t.Errorf("%s, KeepAlive %v: on=%d idle=%ds", side, ka, on, idle)
					}
				}
				ac.Close()
				dc.Close()
				ln.Close()
			}
		}, opts...)
	})
}

// TestListenConfigBacklog: a listener nobody accepts on takes about
// Backlog connections; later ones wait for a SYN retransmission (a second
// on Linux), so dials with a short timeout fail. With the default backlog
// they all connect.
func TestListenConfigBacklog(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		for _, backlog := range []int{1, 0} {
			run(t, func(wt *weft.Task) {
				ln, err := (&weft.ListenConfig{Backlog: backlog}).Listen(wt, "tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				failed, err := weft.Blocking(wt, func(context.Context) (int, error) {
					failed := 0
					var conns []net.Conn
					for range 8 {
						c, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond)
						if err != nil {
							failed++
							continue
						}
						conns = append(conns, c)
					}
					for _, c := range conns {
						c.Close()
					}
					return failed, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if backlog == 1 && failed == 0 {
					t.Errorf("Backlog 1: all 8 connections completed with nobody accepting")
				}
				if backlog == 0 && failed > 0 {
					t.Errorf("the default backlog: %d of 8 connections failed", failed)
				}
			}, opts...)
		}
	})
	run(t, func(wt *weft.Task) {
		mustPanicWeft(t, "a negative Backlog", func() { (&weft.ListenConfig{Backlog: -1}).Listen(wt, "tcp", "127.0.0.1:0") })
	})
}

// stuckListener is a listener whose queue is full: a dial to it waits.
func stuckListener(t *testing.T, wt *weft.Task) (*weft.Listener, func()) {
	ln, err := (&weft.ListenConfig{Backlog: 1}).Listen(wt, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	weft.Blocking(wt, func(context.Context) (int, error) {
		for range 4 {
			if c, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond); err == nil {
				conns = append(conns, c)
			}
		}
		return 0, nil
	})
	return ln, func() {
		for _, c := range conns {
			c.Close()
		}
		ln.Close()
	}
}

func TestDialerTimeout(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln, done := stuckListener(t, wt)
			defer done()
			start := time.Now()
			c, err := (&weft.Dialer{Timeout: 100 * time.Millisecond}).Dial(wt, "tcp", ln.Addr().String())
			el := time.Since(start)
			if c != nil {
				c.Close()
				t.Skip("the kernel accepted past the backlog: no dial to time out here")
			}
			var ne net.Error
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "dial" || !errors.As(err, &ne) || !ne.Timeout() ||
				!errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Dial past its Timeout: %v (%T), want a dial *net.OpError that is a timeout", err, err)
			}
			if !strings.HasSuffix(err.Error(), "i/o timeout") {
				t.Errorf("message %q, want net's \"i/o timeout\"", err)
			}
			if el < 90*time.Millisecond || el > 5*time.Second {
				t.Errorf("timed out after %v, want about 100 ms", el)
			}
			if _, err := (&weft.Dialer{Timeout: -1}).Dial(wt, "tcp", ln.Addr().String()); !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("a negative Timeout: %v, want a timeout at once", err)
			}
		}, opts...)
	})
}

func TestDialerLocalAddr(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			probe, err := weft.Listen(wt, "tcp", "127.0.0.1:0") // a free port to dial from
			if err != nil {
				t.Fatal(err)
			}
			local := probe.Addr().(*net.TCPAddr)
			probe.Close()
			wt.Sleep(10 * time.Millisecond) // the port is released at the loop's next turn
			c, err := (&weft.Dialer{LocalAddr: local}).Dial(wt, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ac, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer ac.Close()
			if got := ac.RemoteAddr().String(); got != local.String() {
				t.Errorf("the server sees the client at %s, want the LocalAddr %s", got, local)
			}
			for _, bad := range []struct {
				la   net.Addr
				want string
			}{
				{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, "mismatched local address type"},
				{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, "mismatched local address type"},
				{&net.TCPAddr{IP: net.IPv6loopback}, "no suitable address found"},
			} {
				_, err := (&weft.Dialer{LocalAddr: bad.la}).Dial(wt, "tcp", ln.Addr().String())
				var ae *net.AddrError
				if !errors.As(err, &ae) || ae.Err != bad.want {
					t.Errorf("LocalAddr %v: %v, want a *net.AddrError %q", bad.la, err, bad.want)
				}
				_, netErr := (&net.Dialer{LocalAddr: bad.la}).Dial("tcp", ln.Addr().String())
				if !errors.As(netErr, &ae) || ae.Err != bad.want {
					t.Errorf("net's Dialer with LocalAddr %v: %v: the table is wrong", bad.la, netErr)
				}
			}
		}, opts...)
	})
}

// TestReusePortTwoRunsInOneProcess: two Runs listen on one port with
// ReusePort, and both accept some of the connections made to it.
func TestReusePortTwoRunsInOneProcess(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		stop := make(chan struct{})
		var accepted [2]int
		var errs [2]error
		var wg sync.WaitGroup
		serve := func(i int, address string, ready chan<- string) {
			defer wg.Done()
			accepted[i], errs[i] = serveByte(address, byte('0'+i), stop, ready, opts...)
		}
		ready := make(chan string, 2)
		wg.Add(2)
		go serve(0, "127.0.0.1:0", ready)
		a := <-ready
		if a == "" {
			t.Fatal("the first listener failed")
		}
		go serve(1, a, ready)
		if <-ready == "" {
			t.Fatal("the second listener failed")
		}
		seen := map[byte]int{}
		for i := 0; i < 400 && (seen['0'] == 0 || seen['1'] == 0); i++ {
			if b, err := readOneByte(a); err == nil {
				seen[b]++
			}
		}
		close(stop)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		if seen['0'] == 0 || seen['1'] == 0 || accepted[0] == 0 || accepted[1] == 0 {
			t.Fatalf("connections served by each Run: %v (accepted %v), want both", seen, accepted)
		}
	})
}

// serveByte runs a Run that listens on address with ReusePort, says its
// address on ready ("" if it failed), and answers each connection with b
// until stop is closed. It returns how many it accepted.
func serveByte(address string, b byte, stop <-chan struct{}, ready chan<- string, opts ...weft.Option) (int, error) {
	accepted := 0
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		ln, err := (&weft.ListenConfig{ReusePort: true}).Listen(wt, "tcp", address)
		if err != nil {
			ready <- ""
			return struct{}{}, err
		}
		ready <- ln.Addr().String()
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			weft.Blocking(wt, func(context.Context) (struct{}, error) { <-stop; return struct{}{}, nil })
			ln.Close()
			return struct{}{}, nil
		})
		for {
			c, err := ln.Accept(wt)
			if err != nil {
				return struct{}{}, nil // closed
			}
			accepted++
			c.Write(wt, []byte{b})
			c.Close()
		}
	}, opts...)
	return accepted, err
}

func readOneByte(addr string) (byte, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 1)
	if _, err := c.Read(b); err != nil {
		return 0, err
	}
	return b[0], nil
}

// TestReusePortTwoProcesses: this process and a helper process listen on
// one port with ReusePort, and both accept some of the connections made to
// it. The helper is stopped by its process id.
func TestReusePortTwoProcesses(t *testing.T) {
	if os.Getenv("WEFT_REUSEPORT_HELPER") != "" {
		t.Skip("the helper's own run")
	}
	ready := make(chan string, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := serveByte("127.0.0.1:0", 'P', stop, ready)
		done <- err
	}()
	a := <-ready
	if a == "" {
		t.Fatal(<-done)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReusePortHelperProcess$")
	cmd.Env = append(os.Environ(), "WEFT_REUSEPORT_HELPER="+a)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM) // by its pid
		cmd.Wait()
		close(stop)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	line := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("the helper did not start listening: %q, %v", line, err)
	}
	seen := map[byte]int{}
	for i := 0; i < 400 && (seen['P'] == 0 || seen['C'] == 0); i++ {
		if b, err := readOneByte(a); err == nil {
			seen[b]++
		}
	}
	if seen['P'] == 0 || seen['C'] == 0 {
		t.Fatalf("connections served by this process (P) and the helper (C): %v, want both", seen)
	}
}

// TestReusePortHelperProcess is the helper of TestReusePortTwoProcesses:
// it serves 'C' on the port it is given until SIGTERM.
func TestReusePortHelperProcess(t *testing.T) {
	addr := os.Getenv("WEFT_REUSEPORT_HELPER")
	if addr == "" {
		t.Skip("runs only as a helper process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ready := make(chan string, 1)
	go func() {
		if <-ready != "" {
			fmt.Println("ready")
		}
	}()
	if _, err := serveByte(addr, 'C', ctx.Done(), ready); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestSocketOptionFailuresLeakNoDescriptor: every way a ListenConfig or a
// Dialer fails (a refused input, a taken port, a failing Control, a
// LocalAddr that does not fit, a timeout) leaves no descriptor open.
func TestSocketOptionFailuresLeakNoDescriptor(t *testing.T) {
	noGC(t)
	backends(t, func(t *testing.T, opts ...weft.Option) {
		before := openFDs(t)
		run(t, func(wt *weft.Task) {
			refuse := func(string, string, syscall.RawConn) error { return errors.New("no") }
			ln, err := (&weft.ListenConfig{}).Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			stuck, done := stuckListener(t, wt)
			defer done()
			for range 3 {
				for _, tt := range listenErrorTests {
					(&weft.ListenConfig{ReusePort: true}).Listen(wt, tt.network, tt.address)
				}
				(&weft.ListenConfig{}).Listen(wt, "tcp", ln.Addr().String())
				(&weft.ListenConfig{Control: refuse}).Listen(wt, "tcp", "127.0.0.1:0")
				(&weft.ListenConfig{Control: refuse}).ListenPacket(wt, "udp", "127.0.0.1:0")
				(&weft.Dialer{Control: refuse}).Dial(wt, "tcp", ln.Addr().String())
				(&weft.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv6loopback}}).Dial(wt, "tcp", ln.Addr().String())
				(&weft.Dialer{Timeout: 20 * time.Millisecond}).Dial(wt, "tcp", stuck.Addr().String())
			}
		}, opts...)
		deadline := time.Now().Add(5 * time.Second)
		for openFDs(t) > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := openFDs(t); n > before {
			t.Fatalf("%d descriptors open after the failures, %d before", n, before)
		}
	})
}
