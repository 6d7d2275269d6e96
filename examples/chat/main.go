// Command chat is a line-based chat server on one weft loop: every line a
// client sends goes to every other client. Interrupt it (^C) to stop it:
// it closes every connection and exits cleanly.
//
//	go run ./examples/chat -listen 127.0.0.1:7008
//	nc 127.0.0.1 7008   # in two other terminals
//
// One task per connection reads lines, one writes them; a hub task owns
// the set of clients and fans each line out. A client too slow to take
// its lines misses them rather than holding up the others. gotwin/ is the
// same server with goroutines and Go channels.
// (Lines of code, without comments and blank lines: 104 here, 140 there.)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/weft-go/weft"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7008", "address to serve on")
	flag.Parse()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", *addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("chat: serving on", ln.Addr())
		return struct{}{}, serve(t, ln, weft.Signal(t, os.Interrupt))
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

type client struct {
	name string
	out  *weft.Chan[string] // lines to write to the client
}

type line struct {
	from *client
	text string
}

// serve runs the chat on ln until a value arrives on stop.
func serve(t *weft.Task, ln *weft.Listener, stop *weft.Chan[os.Signal]) error {
	joins, leaves := weft.NewChan[*client](0), weft.NewChan[*client](0)
	lines := weft.NewChan[line](64)
	return weft.Group(t, func(g *weft.TaskGroup) error {
		g.GoDaemon(func(t *weft.Task) error { return hub(t, joins, leaves, lines) })
		g.GoDaemon(func(t *weft.Task) error {
			if _, err := stop.Recv(t); err != nil {
				return err
			}
			g.Cancel() // every task, the body's Accept too
			return nil
		})
		for {
			conn, err := ln.Accept(t)
			if err != nil {
				return err
			}
			g.Go(func(t *weft.Task) error {
				defer conn.Close()
				me := &client{name: conn.RemoteAddr().String(), out: weft.NewChan[string](16)}
				if err := joins.Send(t, me); err != nil {
					return err
				}
				defer leaves.Send(t, me) // the hub closes me.out; on shutdown the hub is gone too
				writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
					for s, err := range me.out.All(t) {
						if err != nil {
							return struct{}{}, err
						}
						if _, err := io.WriteString(conn.ReadWriter(t), s+"\n"); err != nil {
							return struct{}{}, err
						}
					}
					return struct{}{}, nil
				})
				defer writer.Await(t)
				sc := bufio.NewScanner(conn.ReadWriter(t))
				for sc.Scan() {
					if err := lines.Send(t, line{me, me.name + ": " + sc.Text()}); err != nil {
						return err
					}
				}
				return nil // the client left (or its connection failed: that ends only this session)
			})
		}
	})
}

// hub owns the set of clients and sends every line to all but its author.
func hub(t *weft.Task, joins, leaves *weft.Chan[*client], lines *weft.Chan[line]) error {
	clients := map[*client]bool{}
	var c *client
	var l line
	for {
		i, err := weft.Select(t, weft.RecvCase(joins, &c), weft.RecvCase(leaves, &c), weft.RecvCase(lines, &l))
		if err != nil {
			return err
		}
		switch i {
		case 0:
			clients[c] = true
		case 1:
			delete(clients, c)
			c.out.Close()
		case 2:
			for c := range clients {
				if c != l.from {
					c.out.TrySend(l.text) // a slow client misses it
				}
			}
		}
	}
}
