package weft_test

import (
	"fmt"
	"io"

	"github.com/weft-go/weft"
)

// An echo server whose idle connections hold no task: each connection is
// served in bursts, and between them it waits in GoWhenReadable, a record
// on its fd, until its next bytes arrive.
func ExampleTaskGroup_GoWhenReadable() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, _ := weft.Listen(t, "tcp", "127.0.0.1:0")
		server := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, weft.Group(t, func(g *weft.TaskGroup) error {
				c, err := ln.Accept(t)
				if err != nil {
					return err
				}
				var burst func(t *weft.Task) error
				burst = func(t *weft.Task) error {
					buf := make([]byte, 512)
					for {
						n, err := c.Read(t, buf)
						if err != nil { // io.EOF: the client is done
							c.Close()
							return nil
						}
						c.Write(t, buf[:n])
						if n < len(buf) {
							// Drained: wait for the next bytes with no task.
							g.GoWhenReadable(c, burst)
							return nil
						}
					}
				}
				g.GoWhenReadable(c, burst)
				return nil
			})
		})
		c, _ := weft.Dial(t, "tcp", ln.Addr().String())
		for _, msg := range []string{"hello", "again"} {
			c.Write(t, []byte(msg))
			back := make([]byte, len(msg))
			io.ReadFull(c.ReadWriter(t), back)
			fmt.Println(string(back))
		}
		c.Close()
		server.Await(t)
		ln.Close()
		return struct{}{}, nil
	})
	// Output:
	// hello
	// again
}
