package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

// The chat server runs unchanged on simulated hosts: three clients on
// hosts of their own, in one seeded Run on virtual time.
func TestChatRunsOnSimnet(t *testing.T) {
	for seed := range uint64(20) {
		n := simnet.New(seed)
		n.SetLink("srv", "c2", simnet.Link{Latency: 5 * time.Millisecond, Jitter: 5 * time.Millisecond})
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			stop := weft.NewChan[os.Signal](1)
			lnc := weft.NewChan[*weft.Listener](1)
			server := weft.GoWithNetwork(t, n.Host("srv"), func(t *weft.Task) (int, error) {
				ln, err := weft.Listen(t, "tcp", ":6667")
				if err != nil {
					return 0, err
				}
				_ = lnc.Send(t, ln)
				return 0, serve(t, ln, stop)
			})
			if _, err := lnc.Recv(t); err != nil {
				return 0, err
			}
			var conns []*weft.Conn
			for i := range 3 {
				c, err := weft.GoWithNetwork(t, n.Host(fmt.Sprint("c", i)), func(t *weft.Task) (*weft.Conn, error) {
					return weft.Dial(t, "tcp", "srv:6667")
				}).Await(t)
				if err != nil {
					return 0, err
				}
				defer c.Close()
				conns = append(conns, c)
			}
			if err := t.Sleep(100 * time.Millisecond); err != nil { // every join reaches the hub
				return 0, err
			}
			if _, err := conns[0].Write(t, []byte("hello\n")); err != nil {
				return 0, err
			}
			for i := 1; i < 3; i++ {
				got, err := bufio.NewReader(conns[i].ReadWriter(t)).ReadString('\n')
				if want := "c0:10000: hello\n"; err != nil || got != want {
					return 0, fmt.Errorf("client %d got %q, %v; want %q", i, got, err, want)
				}
			}
			_ = stop.Send(t, os.Interrupt)
			_, err := server.Await(t)
			if err != nil && !strings.Contains(err.Error(), "cancel") {
				return 0, err
			}
			return 0, nil
		}, weft.WithSeed(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
