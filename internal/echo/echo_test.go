package echo

import (
	"bytes"
	"io"
	"net"
	"testing"

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
