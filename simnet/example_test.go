package simnet_test

import (
	"fmt"
	"io"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

// Two hosts in one seeded Run: a server on "srv" and a client on "cli",
// 10 ms apart. The program uses weft.Listen and weft.Dial as it would on
// a real network; the time is virtual.
func Example() {
	n := simnet.New(1)
	n.SetLink("srv", "cli", simnet.Link{Latency: 10 * time.Millisecond})
	weft.Run(func(t *weft.Task) (int, error) {
		start := t.Now()
		ln, err := weft.GoWithNetwork(t, n.Host("srv"), func(t *weft.Task) (*weft.Listener, error) {
			return weft.Listen(t, "tcp", ":80")
		}).Await(t)
		if err != nil {
			return 0, err
		}
		defer ln.Close()
		weft.GoWithNetwork(t, n.Host("srv"), func(t *weft.Task) (int, error) {
			c, err := ln.Accept(t)
			if err != nil {
				return 0, err
			}
			defer c.Close()
			_, err = c.Write(t, []byte("hello from "+c.LocalAddr().String()))
			return 0, err
		})
		msg, err := weft.GoWithNetwork(t, n.Host("cli"), func(t *weft.Task) ([]byte, error) {
			c, err := weft.Dial(t, "tcp", "srv:80")
			if err != nil {
				return nil, err
			}
			defer c.Close()
			return io.ReadAll(c.ReadWriter(t))
		}).Await(t)
		fmt.Printf("%s after %v\n", msg, t.Now().Sub(start))
		return 0, err
	}, weft.WithSeed(1))
	// Output:
	// hello from srv:80 after 30ms
}
