// Command gotwin is examples/chat written with goroutines and Go channels,
// for comparison: the same behaviour (a hub, a reader and a writer per
// client, slow clients miss lines, a clean stop on ^C).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7008", "address to serve on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
	fmt.Println("chat: serving on", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

type client struct {
	name string
	out  chan string
}

type line struct {
	from *client
	text string
}

func serve(ctx context.Context, ln net.Listener) error {
	joins, leaves := make(chan *client), make(chan *client)
	lines := make(chan line, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		hub(ctx, joins, leaves, lines)
	}()
	go func() {
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			wg.Wait()
			<-hubDone
			if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		mu.Lock()
		conns[conn] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
				conn.Close()
			}()
			me := &client{name: conn.RemoteAddr().String(), out: make(chan string, 16)}
			select {
			case joins <- me:
			case <-ctx.Done():
				return
			}
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				for {
					select {
					case s, ok := <-me.out:
						if !ok {
							return
						}
						if _, err := io.WriteString(conn, s+"\n"); err != nil {
							return
						}
					case <-ctx.Done():
						return
					}
				}
			}()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				select {
				case lines <- line{me, me.name + ": " + sc.Text()}:
				case <-ctx.Done():
				}
			}
			select {
			case leaves <- me: // the hub closes me.out
			case <-ctx.Done(): // the hub is gone; the writer sees ctx too
			}
			<-writerDone
		}()
	}
}

func hub(ctx context.Context, joins, leaves chan *client, lines chan line) {
	clients := map[*client]bool{}
	for {
		select {
		case c := <-joins:
			clients[c] = true
		case c := <-leaves:
			delete(clients, c)
			close(c.out)
		case l := <-lines:
			for c := range clients {
				if c != l.from {
					select {
					case c.out <- l.text:
					default: // a slow client misses it
					}
				}
			}
		case <-ctx.Done():
			return
		}
	}
}
