package main

// The HTTP server children: `bench serve KIND ADDR` with KIND one of
// httpKinds serves GET /plaintext ("hello", 5 bytes) and GET /json (a 4 KB
// JSON document) until stdin ends. A line "mem" on stdin makes it print
// "mem BYTES": the heap and stacks in use after two collections, for the
// memory-per-connection measurement.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// httpKinds are the HTTP servers, in the order they are run and shown.
var httpKinds = []string{"weft-http", "weft-http-2loops", "net-http", "fasthttp", "nbhttp"}

var (
	plaintext = []byte("hello")
	jsonDoc   = makeJSON(4 << 10)
)

// makeJSON returns a JSON array of objects of about size bytes.
func makeJSON(size int) []byte {
	type row struct {
		ID    int    `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
		Score int    `json:"score"`
	}
	var rows []row
	for i := 0; ; i++ {
		rows = append(rows, row{ID: i, Name: "user " + strconv.Itoa(i), Email: "user" + strconv.Itoa(i) + "@example.com", Score: i * 7 % 100})
		b, _ := json.Marshal(rows)
		if len(b) >= size {
			return b
		}
	}
}

// isHTTPKind reports whether kind is an HTTP server child.
func isHTTPKind(kind string) bool {
	for _, k := range httpKinds {
		if k == kind {
			return true
		}
	}
	return slices.Contains(h2Kinds, kind)
}

// httpChildMain runs an HTTP server child until stdin ends, answering
// "mem" lines.
func httpChildMain(kind, addr string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go answerCommands(cancel)
	switch kind {
	case "weft-http":
		return serveWeftHTTP(ctx, addr, 1)
	case "weft-http-2loops":
		return serveWeftHTTP(ctx, addr, 2)
	case "net-http":
		return serveNetHTTP(ctx, addr)
	case "fasthttp":
		return serveFastHTTP(ctx, addr)
	case "weft-h2c":
		return serveWeftH2C(ctx, addr)
	case "net-h2c":
		return serveNetH2C(ctx, addr)
	case "nbhttp":
		return serveNbhttp(ctx, addr)
	}
	return fmt.Errorf("unknown server %q", kind)
}

func writeBody(w http.ResponseWriter, path string) {
	switch path {
	case "/json":
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonDoc)
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.Write(plaintext)
	}
}

// serveWeftHTTP is whttp on the given number of loops.
func serveWeftHTTP(ctx context.Context, addr string, loops int) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println(listeningPrefix + ln.Addr().String())
		srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			writeBody(w, r.URL.Path)
		})}
		return struct{}{}, srv.Serve(t, ln)
	}, weft.WithContext(ctx), weft.WithLoops(loops))
	return err
}

// serveNetHTTP is net/http's server, a goroutine per connection.
func serveNetHTTP(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(listeningPrefix + ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeBody(w, r.URL.Path)
	})}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// serveFastHTTP is valyala/fasthttp's server (a worker-goroutine pool).
func serveFastHTTP(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(listeningPrefix + ln.Addr().String())
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		switch string(c.Path()) {
		case "/json":
			c.SetContentType("application/json")
			c.SetBody(jsonDoc)
		default:
			c.SetContentType("text/plain")
			c.SetBody(plaintext)
		}
	}}
	go func() {
		<-ctx.Done()
		srv.Shutdown()
	}()
	return srv.Serve(ln)
}
