package simnet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
	"github.com/weft-go/weft/simnet"
)

// echoOnce dials addr from the task's network, sends msg and reads it back.
func echoOnce(t *weft.Task, addr, msg string) (string, error) {
	c, err := weft.Dial(t, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write(t, []byte(msg)); err != nil {
		return "", err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c.ReadWriter(t), got); err != nil {
		return "", err
	}
	return string(got), nil
}

// cluster runs the echo server on host "srv" and three clients, each on a
// host of its own, in one seeded Run; it returns the replies and when the
// last came.
func cluster(seed uint64, n *simnet.Net, opts ...weft.Option) ([]string, time.Duration, error) {
	type result struct {
		out []string
		at  time.Duration
	}
	r, err := weft.Run(func(t *weft.Task) (result, error) {
		start := t.Now()
		ready := weft.NewChan[*weft.Listener](1)
		srv := weft.GoWithNetwork(t, n.Host("srv"), func(t *weft.Task) (int, error) {
			ln, err := weft.Listen(t, "tcp", ":7")
			if err != nil {
				return 0, err
			}
			_ = ready.Send(t, ln)
			return 0, echo.Serve(t, ln)
		})
		ln, err := ready.Recv(t)
		if err != nil {
			return result{}, err
		}
		addr := ln.Addr().String()
		var ps []*weft.Promise[string]
		for i := range 3 {
			ps = append(ps, weft.GoWithNetwork(t, n.Host(fmt.Sprint("c", i)), func(t *weft.Task) (string, error) {
				return echoOnce(t, addr, fmt.Sprint("hello from ", i))
			}))
		}
		out, err := weft.All(t, ps...)
		at := t.Now().Sub(start)
		ln.Close()
		if _, err := srv.Await(t); err != nil {
			return result{}, err
		}
		return result{out, at}, err
	}, append([]weft.Option{weft.WithSeed(seed)}, opts...)...)
	return r.out, r.at, err
}

func TestEchoServerRunsUnchangedOnSimnetHosts(t *testing.T) {
	out, at, err := cluster(1, simnet.New(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range out {
		if want := fmt.Sprint("hello from ", i); got != want {
			t.Fatalf("client %d got %q, want %q", i, got, want)
		}
	}
	// A dial is one round trip and an echo another, at 1 ms each way.
	if at < 4*time.Millisecond || at > 10*time.Millisecond {
		t.Fatalf("the echoes took %v of virtual time, want about 4 ms", at)
	}
}

func jitteryNet(seed uint64) *simnet.Net {
	n := simnet.New(seed)
	n.SetLink("srv", "c0", simnet.Link{Latency: time.Millisecond, Jitter: 5 * time.Millisecond})
	n.SetLink("srv", "c1", simnet.Link{Latency: 2 * time.Millisecond, Jitter: 3 * time.Millisecond})
	return n
}

func TestSimnetRunReplaysFromItsTwoSeeds(t *testing.T) {
	var first weft.RunInfo
	if _, _, err := cluster(5, jitteryNet(9), weft.WithRunInfo(&first)); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		var info weft.RunInfo
		if _, _, err := cluster(5, jitteryNet(9), weft.WithRunInfo(&info)); err != nil {
			t.Fatal(err)
		}
		if info.Hash != first.Hash || info.Steps != first.Steps {
			t.Fatalf("run %d: hash %x in %d steps, first run %x in %d", i, info.Hash, info.Steps, first.Hash, first.Steps)
		}
	}
	other := map[uint64]bool{}
	for s := range uint64(10) {
		var info weft.RunInfo
		if _, _, err := cluster(5, jitteryNet(100+s), weft.WithRunInfo(&info)); err != nil {
			t.Fatal(err)
		}
		other[info.Hash] = true
	}
	if len(other) < 5 {
		t.Fatalf("10 network seeds gave %d schedules: New's seed hardly matters", len(other))
	}
}

// sim runs f in a seeded Run on host "a" of n.
func sim(t *testing.T, n *simnet.Net, f func(t *weft.Task) error) error {
	t.Helper()
	_, err := weft.Run(func(tk *weft.Task) (int, error) {
		return 0, f(tk)
	}, weft.WithSeed(1), weft.WithNetwork(n.Host("a")))
	return err
}

// serveOn listens on "host:port" and returns the listener; accepted
// connections are sent on the channel.
// connected serves b:80 on n, dials it from the calling task's host and
// returns both ends of the stream, with the function that closes them and
// the listener (closing an end already closed is harmless).
func connected(t *weft.Task, n *simnet.Net) (c, s *weft.Conn, closeAll func(), err error) {
	ln, conns, err := serveOn(t, n, "b", 80)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err = weft.Dial(t, "tcp", "b:80")
	if err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	s, err = conns.Recv(t)
	if err != nil {
		c.Close()
		ln.Close()
		return nil, nil, nil, err
	}
	return c, s, func() { s.Close(); c.Close(); ln.Close() }, nil
}

func serveOn(t *weft.Task, n *simnet.Net, host string, port int) (*weft.Listener, *weft.Chan[*weft.Conn], error) {
	conns := weft.NewChan[*weft.Conn](16)
	lnc := weft.NewChan[*weft.Listener](1)
	errc := weft.NewChan[error](1)
	weft.GoWithNetwork(t, n.Host(host), func(t *weft.Task) (int, error) {
		ln, err := weft.Listen(t, "tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			_ = errc.Send(t, err)
			return 0, nil
		}
		_ = lnc.Send(t, ln)
		for {
			c, err := ln.Accept(t)
			if err != nil {
				conns.Close()
				return 0, nil
			}
			_ = conns.Send(t, c)
		}
	})
	if err, ok := errc.TryRecv(); ok {
		return nil, nil, err
	}
	ln, err := lnc.Recv(t)
	return ln, conns, err
}

func TestPartitionFailsDialsUntilHealed(t *testing.T) {
	n := simnet.New(1)
	err := sim(t, n, func(t *weft.Task) error {
		ln, _, err := serveOn(t, n, "b", 80)
		if err != nil {
			return err
		}
		defer ln.Close()
		n.Partition("a", "b")
		if _, err := weft.Dial(t, "tcp", "b:80"); !errors.Is(err, syscall.EHOSTUNREACH) {
			return fmt.Errorf("dial across a partition: %v, want EHOSTUNREACH", err)
		}
		n.Heal("a", "b")
		c, err := weft.Dial(t, "tcp", "b:80")
		if err != nil {
			return fmt.Errorf("dial after Heal: %v", err)
		}
		return c.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDialErrors(t *testing.T) {
	n := simnet.New(1)
	n.Host("b")
	err := sim(t, n, func(t *weft.Task) error {
		if _, err := weft.Dial(t, "tcp", "b:81"); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("dial a closed port: %v, want ECONNREFUSED", err)
		}
		var dns *net.DNSError
		if _, err := weft.Dial(t, "tcp", "nowhere:81"); !errors.As(err, &dns) {
			return fmt.Errorf("dial an unknown host: %v, want a DNSError", err)
		}
		if _, err := weft.Dial(t, "unix", "b:81"); err == nil {
			return errors.New("dial unix accepted")
		}
		if _, err := weft.Listen(t, "tcp", "b:82"); !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("listen on another host's address: %v", err)
		}
		ln, err := weft.Listen(t, "tcp", ":90")
		if err != nil {
			return err
		}
		defer ln.Close()
		if _, err := weft.Listen(t, "tcp", "localhost:90"); !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen twice: %v, want EADDRINUSE", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPartitionStallsAStreamAndHealDeliversIt(t *testing.T) {
	n := simnet.New(1)
	err := sim(t, n, func(t *weft.Task) error {
		c, s, closeAll, err := connected(t, n)
		if err != nil {
			return err
		}
		defer closeAll()
		n.Partition("a", "b")
		if _, err := c.Write(t, []byte("held")); err != nil {
			return err
		}
		start := t.Now()
		weft.Go(t, func(t *weft.Task) (int, error) {
			err := t.Sleep(5 * time.Second)
			n.Heal("a", "b")
			return 0, err
		})
		buf := make([]byte, 10)
		k, err := s.Read(t, buf)
		if err != nil || string(buf[:k]) != "held" {
			return fmt.Errorf("read after heal: %q, %v", buf[:k], err)
		}
		if waited := t.Now().Sub(start); waited < 5*time.Second {
			return fmt.Errorf("the stalled write arrived after %v, before the heal at 5s", waited)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLongPartitionResetsAStream(t *testing.T) {
	n := simnet.New(1)
	n.SetResetAfter(10 * time.Second)
	err := sim(t, n, func(t *weft.Task) error {
		c, s, closeAll, err := connected(t, n)
		if err != nil {
			return err
		}
		defer closeAll()
		n.Partition("a", "b")
		start := t.Now()
		if _, err := c.Write(t, []byte("lost")); err != nil {
			return err
		}
		_, err = s.Read(t, make([]byte, 10))
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("read of a stream stalled too long: %v, want ECONNRESET", err)
		}
		if d := t.Now().Sub(start); d != 10*time.Second {
			return fmt.Errorf("reset after %v, want 10s", d)
		}
		if _, err := c.Write(t, []byte("more")); !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("write to a reset stream: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCloseGivesThePeerEOFAndEPIPE(t *testing.T) {
	n := simnet.New(1)
	err := sim(t, n, func(t *weft.Task) error {
		c, s, closeAll, err := connected(t, n)
		if err != nil {
			return err
		}
		defer closeAll()
		if _, err := c.Write(t, []byte("last words")); err != nil {
			return err
		}
		c.Close()
		got, err := io.ReadAll(s.ReadWriter(t))
		if err != nil || string(got) != "last words" {
			return fmt.Errorf("peer read %q, %v; want the data then EOF", got, err)
		}
		if _, err := s.Write(t, []byte("x")); !errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("write to a closed peer: %v, want EPIPE", err)
		}
		if _, err := c.Read(t, make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("read of a closed conn: %v, want net.ErrClosed", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBandwidthDelaysWritesInVirtualTime(t *testing.T) {
	n := simnet.New(1)
	n.SetLink("a", "b", simnet.Link{Latency: 10 * time.Millisecond, BytesPerSecond: 1000})
	err := sim(t, n, func(t *weft.Task) error {
		c, s, closeAll, err := connected(t, n)
		if err != nil {
			return err
		}
		defer closeAll()
		start := t.Now()
		if _, err := c.Write(t, bytes.Repeat([]byte("x"), 2000)); err != nil {
			return err
		}
		if d := t.Now().Sub(start); d != 2*time.Second {
			return fmt.Errorf("2000 bytes at 1000 B/s took %v to send, want 2s", d)
		}
		if _, err := io.ReadFull(s.ReadWriter(t), make([]byte, 2000)); err != nil {
			return err
		}
		if d := t.Now().Sub(start); d != 2*time.Second+10*time.Millisecond {
			return fmt.Errorf("they arrived after %v, want 2.01s", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadDeadlineAndCancellationOnASimulatedConn(t *testing.T) {
	n := simnet.New(1)
	err := sim(t, n, func(t *weft.Task) error {
		c, s, closeAll, err := connected(t, n)
		if err != nil {
			return err
		}
		defer closeAll()
		c.SetReadDeadline(t.Now().Add(time.Second))
		if _, err := c.Read(t, make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("read past its deadline: %v", err)
		}
		c.SetReadDeadline(time.Time{})
		_, err = weft.Timeout(t, time.Second, func(t *weft.Task) (int, error) { return c.Read(t, make([]byte, 1)) })
		if !errors.Is(err, weft.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("read under Timeout: %v", err)
		}
		// The conn still works.
		if _, err := s.Write(t, []byte("y")); err != nil {
			return err
		}
		b := make([]byte, 1)
		if _, err := c.Read(t, b); err != nil || b[0] != 'y' {
			return fmt.Errorf("read after the timeouts: %q, %v", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAReadNobodyWillAnswerIsADeadlock(t *testing.T) {
	n := simnet.New(1)
	err := sim(t, n, func(t *weft.Task) error {
		ln, conns, err := serveOn(t, n, "b", 80)
		if err != nil {
			return err
		}
		defer ln.Close()
		c, err := weft.Dial(t, "tcp", "b:80")
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := conns.Recv(t); err != nil {
			return err
		}
		_, err = c.Read(t, make([]byte, 1))
		return err
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a DeadlockError", err)
	}
}

func TestDatagramsAreLostAndReordered(t *testing.T) {
	n := simnet.New(1)
	n.SetLink("a", "b", simnet.Link{Latency: time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.3})
	const sent = 400
	var got []int
	err := sim(t, n, func(t *weft.Task) error {
		bound := weft.NewChan[struct{}](1)
		recv := weft.GoWithNetwork(t, n.Host("b"), func(t *weft.Task) (int, error) {
			pc, err := weft.ListenPacket(t, "udp", ":53")
			if err != nil {
				return 0, err
			}
			defer pc.Close()
			_ = bound.Send(t, struct{}{})
			buf := make([]byte, 8)
			for {
				k, err := weft.Timeout(t, time.Second, func(t *weft.Task) (int, error) {
					k, from, err := pc.ReadFrom(t, buf)
					if err == nil && from.String() != "a:10000" {
						return 0, fmt.Errorf("datagram from %v", from)
					}
					return k, err
				})
				if errors.Is(err, weft.ErrTimeout) {
					return 0, nil // all that will come has come
				}
				if err != nil {
					return 0, err
				}
				var v int
				fmt.Sscan(string(buf[:k]), &v)
				got = append(got, v)
			}
		})
		if _, err := bound.Recv(t); err != nil {
			return err
		}
		pc, err := weft.ListenPacket(t, "udp", ":0")
		if err != nil {
			return err
		}
		defer pc.Close()
		to := simnet.Addr{Net: "udp", Host: "b", Port: 53}
		for i := range sent {
			if _, err := pc.WriteTo(t, []byte(fmt.Sprint(i)), to); err != nil {
				return err
			}
			if err := t.Sleep(time.Millisecond); err != nil {
				return err
			}
		}
		_, err = recv.Await(t)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < sent*55/100 || len(got) > sent*85/100 {
		t.Fatalf("%d of %d datagrams arrived at 30%% loss", len(got), sent)
	}
	inversions := 0
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatal("20 ms of jitter on datagrams 1 ms apart reordered none")
	}
}

func TestBadArgumentsPanic(t *testing.T) {
	n := simnet.New(1)
	for name, f := range map[string]func(){
		"empty host":   func() { n.Host("") },
		"colon host":   func() { n.Host("a:b") },
		"loss above 1": func() { n.SetLink("a", "b", simnet.Link{Loss: 2}) },
		"negative":     func() { n.SetLink("a", "b", simnet.Link{Latency: -1}) },
		"reset after":  func() { n.SetResetAfter(0) },
	} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || len(s) < 7 || s[:7] != "simnet:" {
					t.Errorf("%s: recovered %v, want a simnet: panic", name, r)
				}
			}()
			f()
		}()
	}
}

// A Run per host on a shared Net, on the real clock: the echo round trip
// crosses the Runs.
func TestNetSharedByTwoRunsOnTheRealClock(t *testing.T) {
	n := simnet.New(1)
	n.SetLink("srv", "cli", simnet.Link{Latency: 100 * time.Microsecond})
	lnc := make(chan *weft.Listener, 1)
	served := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			ln, err := weft.Listen(t, "tcp", ":7")
			if err != nil {
				return 0, err
			}
			lnc <- ln
			return 0, echo.Serve(t, ln)
		}, weft.WithNetwork(n.Host("srv")))
		served <- err
	}()
	ln := <-lnc
	got, err := weft.Run(func(t *weft.Task) (string, error) {
		return echoOnce(t, "srv:7", "across runs")
	}, weft.WithNetwork(n.Host("cli")))
	ln.Close()
	if err != nil || got != "across runs" {
		t.Fatalf("echo across Runs: %q, %v", got, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestUnansweredReadOnVirtualTimeWithoutASeedIsADeadlockToo(t *testing.T) {
	n := simnet.New(1)
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		pc, err := weft.ListenPacket(t, "udp", ":1")
		if err != nil {
			return 0, err
		}
		defer pc.Close()
		_, _, err = pc.ReadFrom(t, make([]byte, 1))
		return 0, err
	}, weft.WithVirtualTime(time.Unix(0, 0)), weft.WithNetwork(n.Host("a")), weft.WithLoops(1))
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a DeadlockError", err)
	}
}
