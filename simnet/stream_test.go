package simnet_test

import (
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
	"github.com/weft-go/weft/simnet"
)

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
