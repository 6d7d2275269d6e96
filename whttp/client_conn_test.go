package whttp_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

func TestResponseBodyIsReadByAnotherTaskOfTheLoop(t *testing.T) {
	ts, _ := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("b", 100_000))
	}))
	run(t, func(wt *weft.Task) error {
		resp, err := whttp.Get(wt, ts.URL)
		if err != nil {
			return err
		}
		n, err := weft.Go(wt, func(wt *weft.Task) (int, error) {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return len(b), err
		}).Await(wt)
		if err != nil || n != 100_000 {
			t.Fatalf("read %d bytes in another task: %v", n, err)
		}
		return nil
	})
}

func TestPoolKeepsAtMostMaxIdleConnsPerHost(t *testing.T) {
	release := make(chan struct{})
	ts, conns := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	client := &whttp.Client{MaxIdleConnsPerHost: 1}
	run(t, func(wt *weft.Task) error {
		var ps []*weft.Promise[string]
		for range 3 { // three at once: three connections
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
				resp, err := client.Get(wt, ts.URL+"/wait")
				if err != nil {
					return "", err
				}
				return bodyOf(t, resp), nil
			}))
		}
		for conns.Load() < 3 {
			wt.Sleep(time.Millisecond)
		}
		close(release)
		if _, err := weft.All(wt, ps...); err != nil {
			return err
		}
		for range 3 { // one kept: the rest reuse it
			resp, err := client.Get(wt, ts.URL+"/")
			if err != nil {
				return err
			}
			bodyOf(t, resp)
		}
		return nil
	})
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (the later requests on the one kept)", n)
	}
}

func TestClientRetriesOnAKeptConnectionTheServerClosed(t *testing.T) {
	ts, conns := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond })
	client := &whttp.Client{}
	run(t, func(wt *weft.Task) error {
		for range 2 {
			resp, err := client.Get(wt, ts.URL)
			if err != nil {
				return err
			}
			if bodyOf(t, resp) != "ok" {
				t.Fatal("body")
			}
			wt.Sleep(200 * time.Millisecond) // the server closes the idle connection
		}
		return nil
	})
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestClientVerifiesCertificatesAsNetHTTPDoes(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls=%v proto=%s", r.TLS != nil, r.Proto)
	}))
	ts.StartTLS()
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	run(t, func(wt *weft.Task) error {
		_, err := (&whttp.Client{}).Get(wt, ts.URL)
		var uae x509.UnknownAuthorityError
		if !errors.As(err, &uae) {
			t.Fatalf("an untrusted certificate: %v, want x509.UnknownAuthorityError", err)
		}
		trusting := &whttp.Client{TLSConfig: &tls.Config{RootCAs: pool}}
		resp, err := trusting.Get(wt, ts.URL)
		if err != nil {
			return err
		}
		if got := bodyOf(t, resp); got != "tls=true proto=HTTP/1.1" {
			t.Fatalf("body %q", got)
		}
		return nil
	})
}

func TestClientDialsAHostName(t *testing.T) {
	ts, _ := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	u, _ := url.Parse(ts.URL)
	byName := "http://localhost:" + u.Port() + "/" // resolved by weft.Dial, off the loop
	run(t, func(wt *weft.Task) error {
		resp, err := (&whttp.Client{}).Get(wt, byName)
		if err != nil {
			t.Skipf("localhost does not resolve to 127.0.0.1 here: %v", err)
		}
		if got := bodyOf(t, resp); got != "localhost:"+u.Port() {
			t.Fatalf("Host %q", got)
		}
		return nil
	})
}
