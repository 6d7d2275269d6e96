package whttp_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// The client over h2c, to whttp's server: the requests of many tasks
// share one connection, each on a stream.
func TestClientH2cMultiplexesTasks(t *testing.T) {
	var conns, closed atomic.Int32
	srv := &whttp.Server{Protocols: new(http.Protocols), Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %d", r.Proto, r.Method, r.URL.Path, len(b))
	}), ConnState: func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ts := startServer(t, srv)
	client := &whttp.Client{Protocols: new(http.Protocols)}
	client.Protocols.SetUnencryptedHTTP2(true)
	run(t, func(wt *weft.Task) error {
		var ps []*weft.Promise[string]
		for i := range 20 {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
				body := strings.Repeat("x", i*10000)
				resp, err := client.Post(wt, ts.url(fmt.Sprintf("/p%d", i)), "text/plain", strings.NewReader(body))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if resp.ProtoMajor != 2 {
					return "", fmt.Errorf("proto %s", resp.Proto)
				}
				return string(b), err
			}))
		}
		got, err := weft.All(wt, ps...)
		if err != nil {
			return err
		}
		for i, g := range got {
			if want := fmt.Sprintf("HTTP/2.0 POST /p%d %d", i, i*10000); g != want {
				t.Errorf("request %d: %q, want %q", i, g, want)
			}
		}
		return nil
	})
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 20 concurrent requests, want 1", n)
	}
	// The Run's end closed the client's connection: the server's closes.
	// (The server's own descriptors are not counted: with several loops
	// it opens a loop's as a connection first lands there.)
	for deadline := time.Now().Add(10 * time.Second); closed.Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client's connection was not closed when its Run ended")
		}
	}
}

// Over TLS the client offers h2 and speaks it with net/http's HTTP/2
// server, and with whttp's.
func TestClientH2OverTLS(t *testing.T) {
	certs := newCerts(t)
	ns := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-T")
		fmt.Fprintf(w, "%s %s", r.Proto, b)
		w.Header().Set("X-T", "t")
	}))
	ns.TLS = certs.ServerConfig()
	ns.EnableHTTP2 = true
	ns.StartTLS()
	defer ns.Close()
	ws := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-T")
		fmt.Fprintf(w, "%s %s", r.Proto, b)
		w.Header().Set("X-T", "t")
	})})
	client := &whttp.Client{TLSConfig: certs.ClientConfig(), Protocols: new(http.Protocols)}
	client.Protocols.SetHTTP1(true)
	client.Protocols.SetHTTP2(true)
	run(t, func(wt *weft.Task) error {
		for _, u := range []string{ns.URL, "https://" + ws.addr} {
			for i := range 3 {
				resp, err := client.Post(wt, u+"/", "text/plain", strings.NewReader(fmt.Sprint(i)))
				if err != nil {
					return err
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return err
				}
				if want := fmt.Sprintf("HTTP/2.0 %d", i); string(b) != want || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
					t.Errorf("%s: %q, want %q", u, b, want)
				}
				if resp.Trailer.Get("X-T") != "t" {
					t.Errorf("%s: trailer %v", u, resp.Trailer)
				}
			}
		}
		return nil
	})
}
