package main

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Three clients: each line reaches the other two, not its author; a stop
// ends the server and closes every connection.
func TestChatBroadcastsLinesAndStopsCleanly(t *testing.T) {
	addrc := make(chan string, 1)
	stop := weft.NewChan[os.Signal](1)
	served := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				return struct{}{}, err
			}
			addrc <- ln.Addr().String()
			return struct{}{}, serve(wt, ln, stop)
		})
		served <- err
	}()
	addr := <-addrc
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conns = append(conns, c)
		readers = append(readers, bufio.NewReader(c))
	}
	time.Sleep(50 * time.Millisecond) // let the hub see all three join
	if _, err := conns[0].Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		got, err := readers[i].ReadString('\n')
		if err != nil || !strings.HasSuffix(got, ": hello\n") {
			t.Fatalf("client %d got %q, %v", i, got, err)
		}
	}
	conns[2].Write([]byte("bye\n"))
	if got, _ := readers[0].ReadString('\n'); !strings.HasSuffix(got, ": bye\n") {
		t.Fatalf("client 0 got %q", got)
	}
	// The author did not get its own line: the next thing client 2 reads is
	// the end, once the server stops.
	stop.TrySend(os.Interrupt)
	if err := <-served; err != nil {
		t.Fatalf("serve = %v", err)
	}
	if rest, err := readers[2].ReadString('\n'); err == nil {
		t.Fatalf("client 2 read %q after the stop; want the connection closed", rest)
	}
}
