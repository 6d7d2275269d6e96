package weft_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/weft-go/weft"
)

// Start a server task and go on once it is listening: Start returns when
// the task calls ready.
func ExampleTaskGroup_Start() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		return struct{}{}, weft.Group(t, func(g *weft.TaskGroup) error {
			var addr string
			err := g.Start(func(t *weft.Task, ready func()) error {
				ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
				if err != nil {
					return err // Start returns it
				}
				defer ln.Close()
				addr = ln.Addr().String()
				ready()
				c, err := ln.Accept(t)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.Write(t, []byte("hello\n"))
				return err
			})
			if err != nil {
				return err
			}
			fmt.Println("server ready:", addr != "")
			c, err := weft.Dial(t, "tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close()
			line, err := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
			fmt.Print("client read: ", line)
			return err
		})
	})
	// Output:
	// server ready: true
	// client read: hello
}

// SetLimit bounds how many tasks of a group run at once: Go waits for a
// slot, so the loop below never has more than two jobs in flight.
func ExampleTaskGroup_SetLimit() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		inFlight, peak := 0, 0
		err := weft.Group(t, func(g *weft.TaskGroup) error {
			g.SetLimit(2)
			for job := range 5 {
				g.Go(func(t *weft.Task) error {
					inFlight++
					peak = max(peak, inFlight)
					defer func() { inFlight-- }()
					return t.Sleep(time.Duration(job+1) * time.Second)
				})
			}
			return nil
		})
		fmt.Println("all done:", err == nil, "at most in flight:", peak, "after", t.Now().Sub(time.Unix(0, 0)))
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output: all done: true at most in flight: 2 after 9s
}

// A server puts each connection in a group whose failures go to a
// handler: a connection that fails (here, a client that sends a bad
// command) is logged and closed, and the server keeps serving the others.
func ExampleTaskGroup_Handle() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		server := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, weft.Group(t, func(g *weft.TaskGroup) error {
				g.Handle(func(err error) { fmt.Println("connection failed:", err) })
				for {
					c, err := ln.Accept(t)
					if err != nil {
						return err
					}
					g.Go(func(t *weft.Task) error {
						defer c.Close()
						rw := bufio.NewReader(c.ReadWriter(t))
						line, err := rw.ReadString('\n')
						if err != nil {
							return err
						}
						if cmd := strings.TrimSpace(line); cmd != "ping" {
							return fmt.Errorf("bad command %q", cmd)
						}
						_, err = c.Write(t, []byte("pong\n"))
						return err
					})
				}
			})
		})
		ask := func(cmd string) string {
			c, err := weft.Dial(t, "tcp", ln.Addr().String())
			if err != nil {
				return err.Error()
			}
			defer c.Close()
			c.Write(t, []byte(cmd+"\n"))
			line, err := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
			if err != nil {
				return "closed"
			}
			return strings.TrimSpace(line)
		}
		fmt.Println(ask("ping"))
		fmt.Println(ask("rm -rf"))
		fmt.Println(ask("ping")) // still serving
		ln.Close()
		_, err = server.Await(t)
		fmt.Println("server stopped:", errors.Is(err, net.ErrClosed))
		return struct{}{}, nil
	})
	// Output:
	// pong
	// connection failed: bad command "rm -rf"
	// closed
	// pong
	// server stopped: true
}

// A daemon does not keep its group open: the heartbeat stops when the
// work is done.
func ExampleTaskGroup_GoDaemon() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		beats := 0
		err := weft.Group(t, func(g *weft.TaskGroup) error {
			g.GoDaemon(func(t *weft.Task) error {
				for {
					if err := t.Sleep(time.Second); err != nil {
						return err // cancelled once the work is done
					}
					beats++
				}
			})
			g.Go(func(t *weft.Task) error { return t.Sleep(3500 * time.Millisecond) })
			return nil
		})
		fmt.Println("work done:", err == nil, "heartbeats:", beats)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output: work done: true heartbeats: 3
}

func ExampleGroup() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		err := weft.Group(t, func(g *weft.TaskGroup) error {
			g.Go(func(t *weft.Task) error {
				if err := t.Sleep(time.Hour); err != nil {
					fmt.Println("worker cancelled")
					return err
				}
				return nil
			})
			g.Go(func(t *weft.Task) error {
				t.Sleep(10 * time.Millisecond)
				return errors.New("disk full")
			})
			return nil
		})
		fmt.Println("Group:", err)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// worker cancelled
	// Group: disk full
}
