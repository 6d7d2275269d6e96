package whttp_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

func TestChunkedRequestBodyIsReadInTheHandlersTask(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Sleep(0)
			http.Error(w, err.Error(), 400)
			return
		}
		fmt.Fprintf(w, "%s|%s", b, r.Trailer.Get("X-T"))
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n")
	time.Sleep(20 * time.Millisecond) // the handler waits for the rest
	rc.send("6\r\n world\r\n0\r\nX-T: tv\r\n\r\n")
	if got := bodyOf(t, rc.response("POST")); got != "hello world|tv" {
		t.Fatalf("body %q", got)
	}
}

func TestExpectContinueIsAnsweredWhenTheHandlerReads(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	rc := dialRaw(t, ts.addr)
	rc.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	line, err := rc.br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("first line %q, %v: want a 100 Continue", line, err)
	}
	if blank, _ := rc.br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("after the 100: %q", blank)
	}
	rc.send("data")
	if got := bodyOf(t, rc.response("PUT")); got != "PUT /up data" {
		t.Fatalf("body %q", got)
	}
}

func TestExpectContinueNotReadClosesTheConnection(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden) // without reading the body
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	resp := rc.response("PUT")
	if resp.StatusCode != 403 || !resp.Close {
		t.Fatalf("status %d, close %v: want 403 and Connection: close, no 100", resp.StatusCode, resp.Close)
	}
	rc.expectClosed(5 * time.Second)
}
