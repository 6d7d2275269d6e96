package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	coder "github.com/coder/websocket"
	"github.com/gorilla/websocket"
	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// chat is the chat served on a Run of its own, on a goroutine of the test.
type chat struct {
	addr    string
	reports *Reports
	serving *weft.Promise[struct{}]
	done    chan error
	client  *tls.Config // over TLS: the clients' configuration; nil: plain
	hc      *http.Client
}

// mode is how a test serves the chat: on how many loops, over TLS or not.
type mode struct {
	loops int
	tls   bool
}

// tlsConfigs returns a server's TLS configuration and its clients', with
// httptest's certificate (for 127.0.0.1).
func tlsConfigs(t *testing.T) (server, client *tls.Config) {
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	defer ts.Close()
	server = &tls.Config{Certificates: ts.TLS.Certificates}
	client = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	return server, client
}

// startChat serves the chat on 127.0.0.1 as m says until the end of the
// test, which stops it gracefully.
func startChat(t *testing.T, m mode) *chat {
	t.Helper()
	loops := m.loops
	c := &chat{reports: &Reports{new: make(chan struct{}, 1)}, done: make(chan error, 1)}
	var serverTLS *tls.Config
	if m.tls {
		serverTLS, c.client = tlsConfigs(t)
	}
	tr := &http.Transport{TLSClientConfig: c.client}
	t.Cleanup(tr.CloseIdleConnections)
	c.hc = &http.Client{Transport: tr, Timeout: 20 * time.Second}
	ready := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				ready <- err
				return struct{}{}, err
			}
			c.addr = ln.Addr().String()
			c.serving = weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				return struct{}{}, Serve(wt, ln, io.Discard, c.reports, serverTLS)
			})
			ready <- nil
			return c.serving.Await(wt)
		}, weft.WithLoops(loops))
		c.done <- err
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels the serving task (a graceful stop) and waits for the Run.
func (c *chat) stop(t *testing.T) {
	c.serving.Cancel()
	select {
	case err := <-c.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		c.done <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("the chat did not stop within 20s")
	}
}

// url returns the URL of path on c, scheme "http" or "ws" (with an s over
// TLS).
func (c *chat) url(scheme, path string) string {
	if c.client != nil {
		scheme += "s"
	}
	return scheme + "://" + c.addr + path
}

// members asks /api/stats how many members the hub has.
func (c *chat) members(t *testing.T) int {
	resp, err := c.hc.Get(c.url("http", "/api/stats"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Members int }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Members
}

// waitMembers waits until the hub has n members.
func (c *chat) waitMembers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.members(t) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the hub has %d members, want %d", c.members(t), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eachMode runs f on one loop and on two, over plain TCP and TLS.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	for _, loops := range []int{1, 2} {
		for _, tls := range []bool{false, true} {
			m := mode{loops, tls}
			t.Run(fmt.Sprintf("loops=%d/tls=%v", loops, tls), func(t *testing.T) { f(t, m) })
		}
	}
}

func dialGorilla(t *testing.T, c *chat, path string) *websocket.Conn {
	t.Helper()
	d := *websocket.DefaultDialer
	d.TLSClientConfig = c.client
	conn, resp, err := d.Dial(c.url("ws", path), nil)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", path, err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetReadLimit(maxMessage)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// Five gorilla clients in the chat each get every message, the 1 MB one
// too; a client that vanishes (its socket closed under it, no closing
// frame) leaves the hub and the others chat on; when the server stops,
// each client gets a closing frame (1000).
func TestGorillaChat(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		const n = 5
		conns := make([]*websocket.Conn, n)
		for i := range conns {
			conns[i] = dialGorilla(t, c, "/ws")
		}
		c.waitMembers(t, n)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MB
		for i, conn := range conns {
			if err := conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprint("from ", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := conns[0].WriteMessage(websocket.TextMessage, big); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, conn := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				seen := map[string]bool{}
				for len(seen) < n+1 {
					_, msg, err := conn.ReadMessage()
					if err != nil {
						errs <- err
						return
					}
					if len(msg) == len(big) {
						if !bytes.Equal(msg, big) {
							errs <- errors.New("the 1 MB message differs")
							return
						}
						seen["big"] = true
						continue
					}
					seen[string(msg)] = true
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// A client vanishes.
		vanish := conns[n-1].UnderlyingConn()
		if tc, ok := vanish.(*tls.Conn); ok {
			vanish = tc.NetConn() // no close_notify either
		}
		vanish.(*net.TCPConn).SetLinger(0)
		vanish.Close()
		c.waitMembers(t, n-1)
		conns[1].WriteMessage(websocket.TextMessage, []byte("still here"))
		for _, conn := range conns[:n-1] {
			if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "still here" {
				t.Fatalf("%q, %v", msg, err)
			}
		}
		// The server stops: every client is told goodbye.
		stopped := make(chan struct{})
		go func() { c.stop(t); close(stopped) }()
		for _, conn := range conns[:n-1] {
			_, _, err := conn.ReadMessage()
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("after the stop: %v, want a closing frame 1000", err)
			}
		}
		<-stopped
	})
}

// A gorilla client's ping is answered with a pong carrying its data, and
// its closing frame with the server's; the echo sends 1 MB back whole.
func TestGorillaPingCloseAndEcho(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		for _, path := range []string{"/ws", "/echo"} {
			conn := dialGorilla(t, c, path)
			pong := make(chan string, 1)
			conn.SetPongHandler(func(data string) error { pong <- data; return nil })
			if err := conn.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(5*time.Second)); err != nil {
				t.Fatal(err)
			}
			if path == "/echo" {
				big := bytes.Repeat([]byte{'e'}, 1<<20)
				conn.WriteMessage(websocket.BinaryMessage, big)
				typ, msg, err := conn.ReadMessage() // reads the pong on the way
				if err != nil || typ != websocket.BinaryMessage || !bytes.Equal(msg, big) {
					t.Fatalf("%s: echo %d bytes, type %d, %v", path, len(msg), typ, err)
				}
			} else {
				conn.WriteMessage(websocket.TextMessage, []byte("x"))
				if _, msg, err := conn.ReadMessage(); err != nil || string(msg) != "x" {
					t.Fatalf("%s: %q, %v", path, msg, err)
				}
			}
			select {
			case p := <-pong:
				if p != "p1" {
					t.Fatalf("%s: pong %q", path, p)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no pong", path)
			}
			conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
			for {
				_, _, err := conn.ReadMessage()
				if err == nil {
					continue
				}
				if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
					t.Fatalf("%s: after our close: %v, want the server's closing frame", path, err)
				}
				break
			}
		}
		c.waitMembers(t, 0)
	})
}

// coder/websocket's client and server: the echo (1 MB, a ping, the close
// handshake) and the chat (three members, one of which vanishes).
func TestCoderEchoAndChat(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		dial := func(path string) *coder.Conn {
			conn, _, err := coder.Dial(ctx, c.url("ws", path), &coder.DialOptions{HTTPClient: c.hc})
			if err != nil {
				t.Fatalf("dial %s: %v", path, err)
			}
			t.Cleanup(func() { conn.CloseNow() })
			conn.SetReadLimit(maxMessage)
			return conn
		}
		echo := dial("/coder/echo")
		big := bytes.Repeat([]byte{'c'}, 1<<20)
		if err := echo.Write(ctx, coder.MessageBinary, big); err != nil {
			t.Fatal(err)
		}
		typ, msg, err := echo.Read(ctx)
		if err != nil || typ != coder.MessageBinary || !bytes.Equal(msg, big) {
			t.Fatalf("echo: %d bytes, %v", len(msg), err)
		}
		pinged := make(chan error, 1)
		readDone := make(chan error, 1)
		go func() { _, _, err := echo.Read(ctx); readDone <- err }() // reads the pong, then the close
		go func() { pinged <- echo.Ping(ctx) }()
		if err := <-pinged; err != nil {
			t.Fatalf("ping: %v", err)
		}
		if err := echo.Close(coder.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("close handshake: %v", err)
		}
		<-readDone

		const n = 3
		members := make([]*coder.Conn, n)
		for i := range members {
			members[i] = dial("/coder/chat")
		}
		c.waitMembers(t, n)
		for i, m := range members {
			if err := m.Write(ctx, coder.MessageText, []byte(fmt.Sprint("m", i))); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range members {
			seen := map[string]bool{}
			for len(seen) < n {
				_, msg, err := m.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				seen[string(msg)] = true
			}
		}
		members[n-1].CloseNow() // vanishes: no closing frame
		c.waitMembers(t, n-1)
		members[0].Write(ctx, coder.MessageText, []byte("after"))
		for _, m := range members[:n-1] {
			if _, msg, err := m.Read(ctx); err != nil || string(msg) != "after" {
				t.Fatalf("%q, %v", msg, err)
			}
		}
		for _, m := range members[:n-1] {
			go m.CloseRead(ctx)
			m.Close(coder.StatusNormalClosure, "")
		}
		c.waitMembers(t, 0)
	})
}

// The echoes run by whttp.Blocking, on goroutines (a reader and a writer
// each, the libraries' replies written beside the writer): gorilla's
// answers a ping sent while it echoes four messages of 1 MB in flight, and
// the close handshake; coder's echoes 1 MB messages in flight, answers a
// ping, and closes; when the server stops, a client still connected gets
// gorilla's closing frame 1001.
func TestBlockingEchoes(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 1<<20) }
		const n = 4

		conn := dialGorilla(t, c, "/blocking/echo")
		pong := make(chan string, 1)
		conn.SetPongHandler(func(data string) error { pong <- data; return nil })
		go func() {
			for i := range n {
				conn.WriteMessage(websocket.BinaryMessage, big(i))
				if i == n/2 {
					conn.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(5*time.Second))
				}
			}
		}()
		for i := range n {
			typ, msg, err := conn.ReadMessage() // reads the pong on the way
			if err != nil || typ != websocket.BinaryMessage || !bytes.Equal(msg, big(i)) {
				t.Fatalf("gorilla echo %d: %d bytes, type %d, %v", i, len(msg), typ, err)
			}
		}
		select {
		case p := <-pong:
			if p != "p" {
				t.Fatalf("pong %q", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no pong")
		}
		conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
		if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			t.Fatalf("after our close: %v, want the server's closing frame", err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cc, _, err := coder.Dial(ctx, c.url("ws", "/blocking/coder/echo"), &coder.DialOptions{HTTPClient: c.hc})
		if err != nil {
			t.Fatal(err)
		}
		defer cc.CloseNow()
		cc.SetReadLimit(maxMessage)
		go func() {
			for i := range n {
				if cc.Write(ctx, coder.MessageBinary, big(i)) != nil {
					return
				}
			}
		}()
		for i := range n {
			typ, msg, err := cc.Read(ctx)
			if err != nil || typ != coder.MessageBinary || !bytes.Equal(msg, big(i)) {
				t.Fatalf("coder echo %d: %d bytes, %v", i, len(msg), err)
			}
		}
		readDone := make(chan error, 1)
		go func() { _, _, err := cc.Read(ctx); readDone <- err }() // reads the pong, then the close
		if err := cc.Ping(ctx); err != nil {
			t.Fatalf("coder ping: %v", err)
		}
		if err := cc.Close(coder.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("coder close handshake: %v", err)
		}
		<-readDone

		// A client still connected when the server stops is told so.
		last := dialGorilla(t, c, "/blocking/echo")
		last.WriteMessage(websocket.TextMessage, []byte("hi"))
		if _, msg, err := last.ReadMessage(); err != nil || string(msg) != "hi" {
			t.Fatalf("%q, %v", msg, err)
		}
		stopped := make(chan struct{})
		go func() { c.stop(t); close(stopped) }()
		if _, _, err := last.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("after the stop: %v, want a closing frame 1001", err)
		}
		<-stopped
	})
}

// Both event streams (on the task, and run by Blocking) send events as
// they come, over plain TCP and TLS, until the client leaves.
func TestEventStreams(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		for _, path := range []string{"/events", "/blocking/events"} {
			resp, err := c.hc.Get(c.url("http", path))
			if err != nil {
				t.Fatal(err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("%s: Content-Type %q", path, ct)
			}
			br := bufio.NewReader(resp.Body)
			for i := range 3 {
				line, err := br.ReadString('\n')
				if err != nil || line != fmt.Sprintf("data: %d\n", i) {
					t.Fatalf("%s: %q, %v", path, line, err)
				}
				br.ReadString('\n') // the blank line
			}
			resp.Body.Close() // the client leaves: the handler ends (else the stop would wait for it)
		}
	})
}

// An upgrade with bad headers gets the library's own answer through
// whttp, the same as through net/http's server, and the server goes on.
func TestBadUpgradeGetsTheLibrarysAnswer(t *testing.T) {
	c := startChat(t, mode{loops: 1})
	ns := httptest.NewServer(NewRouter(nil, io.Discard, nil)) // refusals never reach the hub
	defer ns.Close()
	nsb := httptest.NewServer(NewBlockingRouter(io.Discard))
	defer nsb.Close()
	get := func(base, path string) (int, string, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket") // no key, no version
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body), resp.Header.Get("Sec-Websocket-Version")
	}
	for _, path := range []string{"/ws", "/echo", "/coder/echo", "/coder/chat", "/blocking/echo", "/blocking/coder/echo"} {
		base := ns.URL
		if strings.HasPrefix(path, "/blocking/") {
			base = nsb.URL
		}
		ws, wb, wv := get("http://"+c.addr, path)
		ns, nb, nv := get(base, path)
		if ws < 400 || ws >= 500 || ws != ns || wb != nb || wv != nv {
			t.Fatalf("%s: whttp %d %q (version %q), net/http %d %q (version %q)", path, ws, wb, wv, ns, nb, nv)
		}
	}
	if c.members(t) != 0 {
		t.Fatal("a refused upgrade joined the hub")
	}
}

// chi with RequestID, a request logger, Recoverer, Timeout and Compress,
// over whttp.Adapt, under -race: gzip-compressed pages, JSON with the
// request id, many requests on kept-alive connections, and no report that
// a handler kept its request (the logger's entry holds it, and
// context.WithTimeout's stopped timer holds the entry: only a use would
// be an error).
func TestChiMiddlewareStack(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		c := startChat(t, m)
		tr := &http.Transport{DisableCompression: true, TLSClientConfig: c.client}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
		for i := range 100 {
			req, _ := http.NewRequest("GET", c.url("http", "/"), nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatalf("request %d: %v (Content-Encoding %q)", i, err, resp.Header.Get("Content-Encoding"))
			}
			b, err := io.ReadAll(zr)
			resp.Body.Close()
			if err != nil || !bytes.Equal(b, page) {
				t.Fatalf("request %d: page of %d bytes, %v", i, len(b), err)
			}
			resp, err = client.Get(c.url("http", "/api/stats"))
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Members int
				Request string
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil || st.Request == "" {
				t.Fatalf("stats: %+v, %v", st, err)
			}
		}
	})
}

// The chat in headless Chromium (Debian's chromium, where installed): the
// page joins the chat with gorilla's and with coder's endpoint, gets its
// own line back, echoes 1 MB (with gorilla, coder, and gorilla run by
// Blocking), takes three Server-Sent Events (on a task, and run by
// Blocking), and reports to the server.
func TestChatInABrowser(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (Debian's package): the browser test is skipped:", err)
	}
	c := startChat(t, mode{loops: 2})
	for _, lib := range []string{"gorilla", "coder", "blocking"} {
		name := "browser-" + lib
		cmd := exec.Command(path, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--user-data-dir="+t.TempDir(), fmt.Sprintf("http://%s/?test=%s&lib=%s", c.addr, name, lib))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		got, ok := "", false
		deadline := time.After(60 * time.Second)
	wait:
		for {
			if got, ok = c.reports.Get(name); ok {
				break
			}
			select {
			case <-c.reports.new:
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				break wait
			}
		}
		cmd.Process.Signal(os.Interrupt)
		killed := make(chan struct{})
		go func() { cmd.Wait(); close(killed) }()
		select {
		case <-killed:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-killed
		}
		if want := fmt.Sprintf("ok chat=hello from %s echo=%d sse=0,1,2", name, 1<<20); got != want {
			t.Fatalf("%s: the page reported %q (arrived %v), want %q", lib, got, ok, want)
		}
	}
}
