package main

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTwinBroadcastsLinesAndStopsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln) }()
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conns = append(conns, c)
		readers = append(readers, bufio.NewReader(c))
	}
	time.Sleep(50 * time.Millisecond)
	conns[0].Write([]byte("hello\n"))
	if got, err := readers[1].ReadString('\n'); err != nil || !strings.HasSuffix(got, ": hello\n") {
		t.Fatalf("got %q, %v", got, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
