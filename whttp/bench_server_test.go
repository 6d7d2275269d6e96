package whttp_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

var hello = []byte("hello")

// BenchmarkServerPlaintext measures one keep-alive request and response
// through the server, as the bench module's /plaintext: the handler sets
// a Content-Type (one allocation, Header.Set's) and writes 5 bytes. The
// client is a raw connection that allocates nothing, so allocs/op are the
// server's and the handler's.
func BenchmarkServerPlaintext(b *testing.B) {
	ts := startServer(b, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hello)
	})})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	plaintextRoundTrips(b, c, ts.addr)
}

// plaintextRoundTrips sends GET /plaintext on c and reads its answer b.N
// times, timed, with the process's CPU per request.
func plaintextRoundTrips(b *testing.B, c net.Conn, addr string) {
	req := []byte("GET /plaintext HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
	// The response's length is the same every time (its Date too).
	c.Write(req)
	first := make([]byte, 4096)
	n, err := c.Read(first)
	if err != nil || !bytes.HasSuffix(first[:n], []byte("hello")) {
		b.Fatalf("first response %q, %v", first[:n], err)
	}
	buf := make([]byte, n)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkServerTLS is BenchmarkServerPlaintext over TLS (1.3, a
// keep-alive connection of crypto/tls on net as the client; the
// handshake is before the timer). The client's work is in ns/op too, the
// same for every server.
func BenchmarkServerTLS(b *testing.B) {
	certs, err := testcert.New()
	if err != nil {
		b.Fatal(err)
	}
	ts := startServer(b, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hello)
	})})
	c, err := tls.Dial("tcp", ts.addr, certs.ClientConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	plaintextRoundTrips(b, c, ts.addr)
}
