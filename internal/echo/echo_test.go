package echo

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func echoes(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := []byte("echo, echo")
	c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo %q, %v", got, err)
	}
}

func TestServeNetEchoesAndStopsWhenTheListenerCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeNet(ln) }()
	echoes(t, ln.Addr().String())
	idle, err := net.Dial("tcp", ln.Addr().String()) // left open: ServeNet closes it
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	ln.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServeEchoesAndStopsWhenTheListenerCloses(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		srv := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, Serve(wt, ln) })
		_, err = weft.Offload(wt, func() (struct{}, error) {
			echoes(t, ln.Addr().String())
			return struct{}{}, nil
		})
		ln.Close()
		if _, serr := srv.Await(wt); serr != nil {
			return struct{}{}, serr
		}
		return struct{}{}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Serve's idle connections wait with no task: after an exchange each is
// listed by Dump as a GoWhenReadable wait once ParkAfter (at most twice
// it) has passed, and a connection that keeps sending across several
// linger periods is echoed whole, parking and resuming in between.
func TestServeParksIdleConnectionsAndResumesThem(t *testing.T) {
	const n = 8
	if backend, _ := weft.Run(func(wt *weft.Task) (weft.Backend, error) { return weft.RunStats(wt).Backend, nil }); backend == weft.BackendPortable {
		t.Skip("the portable backend waits for readability in a task (GoWhenReadable starts it at once)")
	}
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		srv := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, Serve(wt, ln) })
		_, err = weft.Offload(wt, func() (struct{}, error) {
			conns := make([]net.Conn, n)
			for i := range conns {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return struct{}{}, err
				}
				defer c.Close()
				conns[i] = c
			}
			exchange := func(c net.Conn, msg string) error {
				if _, err := c.Write([]byte(msg)); err != nil {
					return err
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
					t.Errorf("echo %q, %v; want %q", got, err, msg)
				}
				return nil
			}
			for _, c := range conns {
				exchange(c, "hello")
			}
			var dump string
			for deadline := time.Now().Add(10 * time.Second); ; {
				var b strings.Builder
				weft.Dump(&b)
				dump = b.String()
				if strings.Count(dump, "GoWhenReadable)") == n || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if k := strings.Count(dump, "GoWhenReadable)"); k != n {
				t.Errorf("Dump lists %d idle connections in GoWhenReadable, want %d:\n%.3000s", k, n, dump)
			}
			// One connection sends a message every ParkAfter/2 for a few
			// periods, then pauses past the linger, then sends again.
			for i := range 12 {
				exchange(conns[0], fmt.Sprintf("message %d", i))
				time.Sleep(ParkAfter / 2)
			}
			time.Sleep(3 * ParkAfter)
			for i, c := range conns {
				exchange(c, fmt.Sprintf("again %d", i))
			}
			return struct{}{}, nil
		})
		ln.Close()
		if _, serr := srv.Await(wt); serr != nil {
			return struct{}{}, serr
		}
		return struct{}{}, err
	})
	if err != nil {
		t.Fatal(err)
	}
}
