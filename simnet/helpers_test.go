package simnet_test

// Helpers shared by the package's tests: an echo cluster on simulated
// hosts, a seeded Run on a host, and a stream between two hosts.

import (
	"fmt"
	"io"
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

// sim runs f in a seeded Run on host "a" of n.
func sim(t *testing.T, n *simnet.Net, f func(t *weft.Task) error) error {
	t.Helper()
	_, err := weft.Run(func(tk *weft.Task) (int, error) {
		return 0, f(tk)
	}, weft.WithSeed(1), weft.WithNetwork(n.Host("a")))
	return err
}

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

// serveOn listens on "host:port" and returns the listener; accepted
// connections are sent on the channel.
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
