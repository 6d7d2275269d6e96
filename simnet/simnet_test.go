package simnet_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
	"github.com/weft-go/weft/simnet"
)

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
