// Command echo is an echo server on one weft loop, with a small client mode.
//
//	go run ./examples/echo -listen 127.0.0.1:7007          # serve until interrupted
//	go run ./examples/echo -connect 127.0.0.1:7007 -n 1000 # send 1000 messages, check the echoes
//
// The server serves any number of connections, one task each (see
// internal/echo). The client is a weft program too: it dials, writes each
// message and reads it back, and reports the round trips per second.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
)

func main() {
	listen := flag.String("listen", "", "address to serve on (server mode)")
	connect := flag.String("connect", "", "address to connect to (client mode)")
	n := flag.Int("n", 1000, "client: messages to send")
	size := flag.Int("size", 64, "client: message size in bytes")
	flag.Parse()
	var err error
	switch {
	case *listen != "":
		err = serve(*listen)
	case *connect != "":
		err = client(*connect, *n, *size)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

func serve(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("echo: serving on", ln.Addr())
		// Close the listener when interrupted (Close is safe from any
		// goroutine): Serve then returns. Never block a task on a channel:
		// that would stall the whole loop.
		stopClose := context.AfterFunc(ctx, func() { ln.Close() })
		defer stopClose()
		return struct{}{}, echo.Serve(t, ln)
	})
	return err
}

// client runs the client in a Run of its own; opts are the Run's (a
// simulated network in the tests).
func client(addr string, n, size int, opts ...weft.Option) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		c, err := weft.Dial(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		msg := bytes.Repeat([]byte("w"), size)
		got := make([]byte, size)
		rw := c.ReadWriter(t)
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := rw.Write(msg); err != nil {
				return struct{}{}, err
			}
			if _, err := io.ReadFull(rw, got); err != nil {
				return struct{}{}, err
			}
			if !bytes.Equal(got, msg) {
				return struct{}{}, fmt.Errorf("echo %d came back different", i)
			}
		}
		el := time.Since(start)
		fmt.Printf("echo: %d round trips of %d bytes in %v (%.0f/s)\n", n, size, el.Round(time.Millisecond), float64(n)/el.Seconds())
		return struct{}{}, nil
	}, opts...)
	return err
}
