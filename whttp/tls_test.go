package whttp_test

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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

func TestNetHTTPClientTalksHTTPSToTheServer(t *testing.T) {
	ts, certs := tlsServer(t)
	tr := &http.Transport{TLSClientConfig: certs.ClientConfig(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := range 3 {
		resp, err := client.Post("https://"+ts.addr+"/s", "text/plain", strings.NewReader(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bodyOf(t, resp), fmt.Sprintf("POST /s %d tls=true alpn=http/1.1", i); got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
		if resp.ProtoMajor != 1 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
			t.Fatalf("proto %s, ALPN %v: want HTTP/1.1 over TLS (no HTTP/2)", resp.Proto, resp.TLS)
		}
	}
	// An untrusting client refuses the certificate.
	plain := &http.Transport{}
	defer plain.CloseIdleConnections()
	if _, err := (&http.Client{Transport: plain}).Get("https://" + ts.addr + "/"); err == nil {
		t.Fatal("a client without the authority accepted the certificate")
	}
}

func TestWeftClientTalksHTTPSToTheWeftServer(t *testing.T) {
	ts, certs := tlsServer(t)
	client := &whttp.Client{TLSConfig: certs.ClientConfig()}
	run(t, func(wt *weft.Task) error {
		resp, err := client.Get(wt, "https://"+ts.addr+"/w")
		if err != nil {
			return err
		}
		if got := readAll(t, resp); got != "GET /w  tls=true alpn=http/1.1" {
			t.Fatalf("body %q", got)
		}
		return nil
	})
}

func TestPlainHTTPToTheHTTPSServerGets400(t *testing.T) {
	ts, _ := tlsServer(t)
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp := rc.response("GET"); resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func curl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl:", err)
	}
	out, err := exec.Command(path, append([]string{"-sS", "--max-time", "20"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestCurlTalksToTheServer(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			for i := range 3 {
				fmt.Fprintf(w, "chunk%d\n", i)
				w.(http.Flusher).Flush()
			}
		default:
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %d %s\n", r.Method, r.URL.Path, len(b), r.Header.Get("Expect"))
		}
	})})
	base := "http://" + ts.addr
	// Two URLs in one curl: the second on the same connection.
	if got := curl(t, base+"/a", base+"/b"); got != "GET /a 0 \nGET /b 0 \n" {
		t.Fatalf("curl GETs: %q", got)
	}
	if got := curl(t, base+"/stream"); got != "chunk0\nchunk1\nchunk2\n" {
		t.Fatalf("curl chunked: %q", got)
	}
	// A body of 2 MB: curl sends Expect: 100-continue and waits for it.
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, []byte(strings.Repeat("x", 2<<20)), 0o644)
	if got := curl(t, "-H", "Expect: 100-continue", "--data-binary", "@"+big, base+"/up"); got != "POST /up 2097152 100-continue\n" {
		t.Fatalf("curl POST: %q", got)
	}
	if got := curl(t, "-I", base+"/h"); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") || !strings.Contains(got, "Content-Length: 11") {
		t.Fatalf("curl HEAD: %q", got)
	}
	if got := curl(t, "--http1.0", base+"/old"); got != "GET /old 0 \n" {
		t.Fatalf("curl HTTP/1.0: %q", got)
	}
}

func TestCurlTalksHTTPSToTheServer(t *testing.T) {
	ts, certs := tlsServer(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	root := certs.Server.Certificate[len(certs.Server.Certificate)-1]
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root}), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := curl(t, "--cacert", ca, "https://"+ts.addr+"/c"); got != "GET /c  tls=true alpn=http/1.1" {
		t.Fatalf("curl over TLS: %q", got)
	}
}
