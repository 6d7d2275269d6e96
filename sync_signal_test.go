//go:build unix

package weft_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func kill(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
}

func TestSignalReachesEverySubscribedChannel(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a := weft.Signal(wt, syscall.SIGUSR1)
		b := weft.Signal(wt, syscall.SIGUSR1, syscall.SIGUSR2)
		defer a.Close()
		defer b.Close()
		if n := weft.SubscribedSignals(); n != 2 {
			t.Fatalf("%d signals watched, want 2", n)
		}
		kill(t, syscall.SIGUSR1)
		for name, c := range map[string]*weft.Chan[os.Signal]{"a": a, "b": b} {
			s, err := c.Recv(wt)
			if s != syscall.SIGUSR1 || err != nil {
				t.Errorf("%s got %v, %v", name, s, err)
			}
		}
		kill(t, syscall.SIGUSR2)
		if s, _ := b.Recv(wt); s != syscall.SIGUSR2 {
			t.Errorf("b got %v", s)
		}
		if _, ok := a.TryRecv(); ok {
			t.Error("a received a signal it did not subscribe to")
		}
	})
	if n := weft.SubscribedSignals(); n != 0 {
		t.Fatalf("%d signals still watched after both channels closed", n)
	}
}

// A task waiting for a signal is not deadlocked, though nothing else is
// pending.
func TestTaskWaitingForASignalIsNotDeadlocked(t *testing.T) {
	go func() {
		time.Sleep(30 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	}()
	s, err := weft.Run(func(wt *weft.Task) (os.Signal, error) {
		c := weft.Signal(wt, syscall.SIGUSR1)
		defer c.Close()
		return c.Recv(wt)
	})
	if s != syscall.SIGUSR1 || err != nil {
		t.Fatalf("Run = %v, %v", s, err)
	}
}

func TestSignalSubscriptionEndsWithItsTask(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (*weft.Chan[os.Signal], error) {
			return weft.Signal(wt, syscall.SIGUSR2), nil
		})
		c, _ := p.Await(wt)
		if _, err := c.Recv(wt); err != io.EOF {
			t.Errorf("Recv after the subscribing task finished = %v", err)
		}
		if n := weft.SubscribedSignals(); n != 0 {
			t.Errorf("%d signals still watched", n)
		}
	})
}

func TestSignalMisusePanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		if msg := panicMessage(func() { weft.Signal(wt) }); msg == "" {
			t.Error("Signal with no signal did not panic")
		}
		if msg := panicMessage(func() { weft.Signal(wt, nil) }); msg == "" {
			t.Error("Signal with a nil signal did not panic")
		}
	})
}

// Once the last subscription ends, the signal's default behaviour is
// back: a helper process subscribes, closes, then sends itself SIGTERM,
// which must kill it.
func TestClosingTheLastSubscriptionRestoresTheDefault(t *testing.T) {
	if os.Getenv("WEFT_SIGNAL_HELPER") == "1" {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			c := weft.Signal(wt, syscall.SIGTERM)
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			if _, err := c.Recv(wt); err != nil { // survived it while subscribed
				return struct{}{}, err
			}
			c.Close()
			syscall.Kill(os.Getpid(), syscall.SIGTERM) // now it kills
			return struct{}{}, wt.Sleep(5 * time.Second)
		})
		os.Stderr.WriteString("helper survived: " + errString(err) + "\n")
		os.Exit(3)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClosingTheLastSubscriptionRestoresTheDefault$")
	cmd.Env = append(os.Environ(), "WEFT_SIGNAL_HELPER=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("helper ended with %v, want death by SIGTERM\n%s", err, out)
	}
}
