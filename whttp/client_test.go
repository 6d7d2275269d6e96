package whttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

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
			if got, want := bodyOf(t, resp), fmt.Sprintf("POST /x %d", i); got != want {
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

func TestRedirectsFollowNetHTTPsRules(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/echo", http.StatusFound) })
	mux.HandleFunc("/307", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
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
		if got := bodyOf(t, resp); got != "GET  auth=secret" {
			t.Fatalf("302 after POST: %q, want a GET without the body (same host: auth kept)", got)
		}
		resp, err = post("/307")
		if err != nil {
			return err
		}
		if got := bodyOf(t, resp); got != "POST data auth=secret" {
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
		bodyOf(t, resp)
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
