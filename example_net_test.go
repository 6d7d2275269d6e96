package weft_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/weft-go/weft"
)

// A tiny line-echo server and a client on the same loop.
func ExampleListen() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer ln.Close()
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			c, err := ln.Accept(t)
			if err != nil {
				return struct{}{}, err
			}
			defer c.Close()
			line, err := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
			if err != nil {
				return struct{}{}, err
			}
			_, err = c.Write(t, []byte(strings.ToUpper(line)))
			return struct{}{}, err
		})
		c, err := weft.Dial(t, "tcp", ln.Addr().String())
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		fmt.Fprintln(c.ReadWriter(t), "hello, weft")
		reply, _ := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
		fmt.Print(reply)
		return struct{}{}, nil
	})
	// Output: HELLO, WEFT
}

// A ListenConfig with ReusePort: several listeners (in one Run here; in
// several Runs or processes alike, see examples/reuseport) share a port,
// and the kernel spreads the connections over them. Control sees the
// socket before it is bound; without ReusePort a taken port fails as
// net.Listen does.
func ExampleListenConfig() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		lc := &weft.ListenConfig{
			ReusePort: true,
			Backlog:   1024,
			Control: func(network, address string, c syscall.RawConn) error {
				fmt.Println("control:", network, address)
				return nil
			},
		}
		a, err := lc.Listen(t, "tcp4", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer a.Close()
		lc.Control = nil
		b, err := lc.Listen(t, "tcp4", a.Addr().String())
		if err != nil {
			return struct{}{}, err
		}
		defer b.Close()
		fmt.Println("one port:", a.Addr().String() == b.Addr().String())

		_, err = (&weft.ListenConfig{}).Listen(t, "tcp4", a.Addr().String())
		fmt.Println("without ReusePort:", errors.Is(err, syscall.EADDRINUSE))
		return struct{}{}, nil
	})
	// Output:
	// control: tcp4 127.0.0.1:0
	// one port: true
	// without ReusePort: true
}

// A Dialer bounds a dial with Timeout (on the loop's clock, name
// resolution included) and sets the connection's options; its errors are
// net's.
func ExampleDialer() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer ln.Close()
		d := &weft.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		c, err := d.Dial(t, "tcp", ln.Addr().String())
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		fmt.Println("connected to", c.RemoteAddr().String() == ln.Addr().String())

		_, err = (&weft.Dialer{LocalAddr: &net.UnixAddr{Name: "/tmp/x", Net: "unix"}}).Dial(t, "tcp", ln.Addr().String())
		fmt.Println(err)
		return struct{}{}, nil
	})
	// Output:
	// connected to true
	// dial tcp: address /tmp/x: mismatched local address type
}
