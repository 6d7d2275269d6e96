package whttp_test

// HTTP/2 served by whttp, driven by Go's own HTTP/2 client
// (golang.org/x/net/http2's Transport, and net/http's with Protocols),
// curl, and raw frames for what no client sends.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
)

// h2cServer serves h with h2c (prior knowledge) beside HTTP/1.
func h2cServer(t *testing.T, h whttp.Handler, opts ...weft.Option) (*whttp.Server, *testServer) {
	t.Helper()
	srv := &whttp.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv, startServer(t, srv, opts...)
}

// h2cClient is Go's HTTP/2 client speaking h2c with prior knowledge.
func h2cClient(t *testing.T) *http.Client {
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func TestH2cHello(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", r.Proto, r.Method, r.URL.Path)
	}))
	c := h2cClient(t)
	for i := range 3 {
		resp, err := c.Get(ts.url(fmt.Sprintf("/x%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("HTTP/2.0 GET /x%d", i); string(b) != want || resp.ProtoMajor != 2 {
			t.Fatalf("got %q (%s), want %q", b, resp.Proto, want)
		}
		if resp.ContentLength != int64(len(b)) {
			t.Fatalf("Content-Length %d, body %d", resp.ContentLength, len(b))
		}
	}
}

var _ = strings.Repeat
var _ sync.Mutex
