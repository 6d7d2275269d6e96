package whttp_test

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

// tlsServer serves echoHandler over HTTPS with a certificate made now.
func tlsServer(t *testing.T) (*testServer, *testcert.Certs) {
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	h := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s tls=%v alpn=%s", r.Method, r.URL.Path, b, r.TLS != nil, r.TLS.NegotiatedProtocol)
	})
	return startServer(t, &whttp.Server{Handler: h, TLSConfig: certs.ServerConfig()}), certs
}

// By default the server offers HTTP/2 over TLS (ALPN "h2"), as
// net/http's does; a client that asks for HTTP/1.1 alone gets it.
func TestNetHTTPClientTalksHTTPSToTheServer(t *testing.T) {
	ts, certs := tlsServer(t)
	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: certs.ClientConfig(), ForceAttemptHTTP2: h2}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		proto, major := "", 1 // a client without HTTP/2 offers no ALPN
		if h2 {
			proto, major = "h2", 2
		}
		for i := range 3 {
			resp, err := client.Post("https://"+ts.addr+"/s", "text/plain", strings.NewReader(fmt.Sprint(i)))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := bodyOf(t, resp), fmt.Sprintf("POST /s %d tls=true alpn=%s", i, proto); got != want {
				t.Fatalf("body %q, want %q", got, want)
			}
			if resp.ProtoMajor != major || resp.TLS == nil || resp.TLS.NegotiatedProtocol != proto {
				t.Fatalf("proto %s, ALPN %v: want %s", resp.Proto, resp.TLS, proto)
			}
		}
	}
	// An untrusting client refuses the certificate.
	plain := &http.Transport{}
	defer plain.CloseIdleConnections()
	if _, err := (&http.Client{Transport: plain}).Get("https://" + ts.addr + "/"); err == nil {
		t.Fatal("a client without the authority accepted the certificate")
	}
}

// By default the client offers h2 and http/1.1 by ALPN, as net/http's
// Transport does, and the server picks h2; a client whose Protocols has
// HTTP/1 only offers http/1.1 alone.
func TestWeftClientTalksHTTPSToTheWeftServer(t *testing.T) {
	ts, certs := tlsServer(t)
	http1 := new(http.Protocols)
	http1.SetHTTP1(true)
	for _, c := range []struct {
		protocols *http.Protocols
		want      string
	}{
		{nil, "GET /w  tls=true alpn=h2"},
		{http1, "GET /w  tls=true alpn=http/1.1"},
	} {
		client := &whttp.Client{TLSConfig: certs.ClientConfig(), Protocols: c.protocols}
		run(t, func(wt *weft.Task) error {
			resp, err := client.Get(wt, "https://"+ts.addr+"/w")
			if err != nil {
				return err
			}
			if got := bodyOf(t, resp); got != c.want {
				t.Fatalf("body %q, want %q", got, c.want)
			}
			return nil
		})
	}
}

func TestPlainHTTPToTheHTTPSServerGets400(t *testing.T) {
	ts, _ := tlsServer(t)
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp := rc.response("GET"); resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestCurlTalksHTTPSToTheServer(t *testing.T) {
	ts, certs := tlsServer(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	root := certs.Server.Certificate[len(certs.Server.Certificate)-1]
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root}), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := curl(t, "--cacert", ca, "--http1.1", "https://"+ts.addr+"/c"); got != "GET /c  tls=true alpn=http/1.1" {
		t.Fatalf("curl over TLS: %q", got)
	}
	if got := curl(t, "--cacert", ca, "--http2", "https://"+ts.addr+"/c"); got != "GET /c  tls=true alpn=h2" {
		t.Fatalf("curl --http2 over TLS: %q", got)
	}
}
