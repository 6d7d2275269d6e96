package main

// nbio's servers (github.com/lesismal/nbio), the peers whose idle
// connections cost least: an echo server on nbio's engine and an HTTP
// server on nbhttp, each with one poller goroutine (like one weft loop).

import (
	"context"
	"net"
	"net/http"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
)

// listenReporting returns a Listen function for nbio's configs that
// hands the bound address to addrc (nbio does not report the port it
// bound for ":0").
func listenReporting(addrc chan<- net.Addr) func(network, addr string) (net.Listener, error) {
	return func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err == nil {
			addrc <- ln.Addr()
		}
		return ln, err
	}
}

// serveNbio runs nbio's echo server (OnData writes back what arrived)
// until ctx ends.
func serveNbio(ctx context.Context, addr string) error {
	logging.SetLevel(logging.LevelError)
	addrc := make(chan net.Addr, 1)
	eng := nbio.NewEngine(nbio.Config{
		Network: "tcp",
		Addrs:   []string{addr},
		NPoller: 1,
		Listen:  listenReporting(addrc),
	})
	eng.OnData(func(c *nbio.Conn, data []byte) { c.Write(data) })
	if err := eng.Start(); err != nil {
		return err
	}
	announce(<-addrc)
	<-ctx.Done()
	eng.Stop()
	return nil
}

// serveNbhttp runs nbhttp (nbio's non-blocking HTTP server) until ctx
// ends.
func serveNbhttp(ctx context.Context, addr string) error {
	logging.SetLevel(logging.LevelError)
	addrc := make(chan net.Addr, 1)
	eng := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{addr},
		NPoller: 1,
		Listen:  listenReporting(addrc),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeBody(w, r.URL.Path)
		}),
	})
	if err := eng.Start(); err != nil {
		return err
	}
	announce(<-addrc)
	<-ctx.Done()
	eng.Stop()
	return nil
}
