package whttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// netServer is a net/http server counting the connections it accepted.
func netServer(t *testing.T, h http.Handler, config ...func(*http.Server)) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(h)
	for _, f := range config {
		f(ts.Config)
	}
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, &conns
}

func run(t *testing.T, f func(wt *weft.Task) error) {
	t.Helper()
	if _, err := weft.Run(func(wt *weft.Task) (struct{}, error) { return struct{}{}, f(wt) }); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClientTalksToNetHTTPServerAndReusesItsConnection(t *testing.T) {
	ts, conns := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	}))
	before := openFDs()
	client := &whttp.Client{}
	run(t, func(wt *weft.Task) error {
		for i := range 4 {
			resp, err := client.Post(wt, ts.URL+"/x", "text/plain", strings.NewReader(fmt.Sprint(i)))
			if err != nil {
				return err
			}
			if got, want := readAll(t, resp), fmt.Sprintf("POST /x %d", i); got != want {
				t.Fatalf("body %q, want %q", got, want)
			}
		}
		return nil
	})
	if n := conns.Load(); n != 1 {
		t.Fatalf("the server saw %d connections for 4 sequential requests, want 1", n)
	}
	waitFDs(t, before) // the pool closed with the Run
}

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
				return readAll(t, resp), nil
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
			readAll(t, resp)
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
			if readAll(t, resp) != "ok" {
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

func TestRedirectsFollowNetHTTPsRules(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/echo", 302) })
	mux.HandleFunc("/307", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/echo", 307) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", 302) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s auth=%s", r.Method, b, r.Header.Get("Authorization"))
	})
	ts, _ := netServer(t, mux)
	client := &whttp.Client{}
	run(t, func(wt *weft.Task) error {
		post := func(path string) (*http.Response, error) {
			req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader("data"))
			req.Header.Set("Authorization", "secret")
			return client.Do(wt, req)
		}
		resp, err := post("/302")
		if err != nil {
			return err
		}
		if got := readAll(t, resp); got != "GET  auth=secret" {
			t.Fatalf("302 after POST: %q, want a GET without the body (same host: auth kept)", got)
		}
		resp, err = post("/307")
		if err != nil {
			return err
		}
		if got := readAll(t, resp); got != "POST data auth=secret" {
			t.Fatalf("307 after POST: %q, want the POST again with its body", got)
		}
		_, err = client.Get(wt, ts.URL+"/loop")
		var ue *url.Error
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Fatalf("a redirect loop: %v", err)
		}
		last := &whttp.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err = last.Get(wt, ts.URL+"/302")
		if err != nil || resp.StatusCode != 302 {
			t.Fatalf("ErrUseLastResponse: %v", err)
		}
		readAll(t, resp)
		last.CloseIdleConnections()
		return nil
	})
}

func TestClientTimeoutEndsTheExchange(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ts, _ := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Write([]byte("start"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	client := &whttp.Client{Timeout: 100 * time.Millisecond}
	run(t, func(wt *weft.Task) error {
		start := time.Now()
		_, err := client.Get(wt, ts.URL+"/head")
		var ue *url.Error
		if !errors.As(err, &ue) || !ue.Timeout() {
			t.Fatalf("waiting for the header past Timeout: %v, want a *url.Error with Timeout()", err)
		}
		resp, err := client.Get(wt, ts.URL+"/body")
		if err != nil {
			return err
		}
		_, err = io.ReadAll(resp.Body)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("reading the body past Timeout: %v", err)
		}
		resp.Body.Close()
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("took %v", el)
		}
		return nil
	})
}

func TestCancellingTheTaskEndsDo(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ts, _ := netServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	run(t, func(wt *weft.Task) error {
		p := weft.Go(wt, func(wt *weft.Task) (*http.Response, error) { return whttp.Get(wt, ts.URL) })
		wt.Sleep(50 * time.Millisecond)
		p.Cancel()
		_, err := p.Await(wt)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do after Cancel: %v", err)
		}
		// The request's own context works too.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
		_, err = whttp.DefaultClient.Do(wt, req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do with an expired request context: %v", err)
		}
		return nil
	})
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
		if got := readAll(t, resp); got != "tls=true proto=HTTP/1.1" {
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
		if got := readAll(t, resp); got != "localhost:"+u.Port() {
			t.Fatalf("Host %q", got)
		}
		return nil
	})
}
