// Command grpc serves a gRPC service from whttp: connectrpc.com/connect
// handlers (plain http.Handlers that speak gRPC, gRPC-Web and Connect)
// under whttp.Adapt, over HTTP/2 cleartext (h2c) on weft tasks. The
// standard google.golang.org/grpc client calls it (see main_test.go).
//
//	go run . -listen 127.0.0.1:8080
//	curl --http2-prior-knowledge -H 'Content-Type: application/json' \
//	    -d '{"text":"hi"}' http://127.0.0.1:8080/weft.demo.Demo/Ping
//
// Ctrl-C stops it gracefully (GOAWAY, the calls in flight finish).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/weft-go/weft"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	loops := flag.Int("loops", 1, "weft loops")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", *listen)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("serving gRPC (h2c) on", ln.Addr())
		return struct{}{}, (&demo{}).server().Serve(t, ln)
	}, weft.WithContext(ctx), weft.WithLoops(*loops))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
