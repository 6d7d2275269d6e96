package whttp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// Clients that reset their connection before the server accepts it
// (SO_LINGER 0, then close, while the connection waits in the backlog)
// must not stop Serve: well-behaved clients beside them are served, and
// no descriptor is left open. (Issue 17: the accept path once gave such a
// connection a nil RemoteAddr, whttp called String on it and Serve's
// accept loop died with the listener open.)
func TestClientsResettingBeforeAcceptDoNotStopServe(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			before := openFDs()
			logs := &logBuffer{}
			srv := &whttp.Server{Handler: echoHandler(), Logger: logs.logger()}
			var addr string
			var served atomic.Int64
			done := make(chan error, 1)
			go func() {
				_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
					ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
					if err != nil {
						return struct{}{}, err
					}
					addr = ln.Addr().String()
					// Before Serve accepts anything: clients that connect
					// and reset at once, left in the backlog.
					if _, err := weft.Offload(wt, func() (struct{}, error) { return struct{}{}, resetClients(addr, 20) }); err != nil {
						ln.Close()
						return struct{}{}, err
					}
					serving := weft.Go(wt, func(t *weft.Task) (struct{}, error) { return struct{}{}, srv.Serve(t, ln) })
					// Good clients, with more resets among them.
					_, err = weft.Offload(wt, func() (struct{}, error) {
						var wg sync.WaitGroup
						errs := make(chan error, 8)
						for i := range 8 {
							wg.Go(func() {
								for j := range 5 {
									if j%2 == 0 {
										if err := resetClients(addr, 3); err != nil {
											errs <- err
											return
										}
									}
									if err := getOnce(addr, fmt.Sprintf("/c%d-%d", i, j)); err != nil {
										errs <- err
										return
									}
									served.Add(1)
								}
							})
						}
						wg.Wait()
						close(errs)
						return struct{}{}, <-errs
					})
					serving.Cancel()
					if _, serr := serving.Await(wt); serr != nil && err == nil {
						err = serr
					}
					return struct{}{}, err
				}, weft.WithLoops(loops))
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%v\nlog:\n%s", err, logs.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the server hung")
			}
			if served.Load() != 40 {
				t.Fatalf("%d of 40 requests served", served.Load())
			}
			if strings.Contains(logs.String(), "panic") {
				t.Fatalf("a panic was logged:\n%s", logs.String())
			}
			waitFDs(t, before)
		})
	}
}

// resetClients connects n clients to addr and resets each at once.
func resetClients(addr string, n int) error {
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	return nil
}

// getOnce makes one request on a connection of its own and checks the
// echo.
func getOnce(addr, path string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if want := "GET " + path + " "; string(b) != want {
		return fmt.Errorf("body %q, want %q", b, want)
	}
	return nil
}

// A panic while serving one connection outside the handler (here in the
// ConnState hook, at the connection's start or when it goes idle) closes
// that connection only, is logged with its stack, and Serve goes on:
// later clients are served and no descriptor leaks.
func TestPanicServingAConnectionClosesItAndServeGoesOn(t *testing.T) {
	before := openFDs()
	logs := &logBuffer{}
	var n atomic.Int64
	srv := &whttp.Server{Handler: echoHandler(), Logger: logs.logger(),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew && n.Add(1)%2 == 1 {
				panic("hook panics on odd connections")
			}
		}}
	ts := startServer(t, srv)
	ok := 0
	for i := range 6 {
		if err := getOnce(ts.addr, fmt.Sprintf("/%d", i)); err == nil {
			ok++
		}
	}
	if ok != 3 {
		t.Fatalf("%d of the 3 connections whose hook does not panic were served", ok)
	}
	if out := logs.String(); !strings.Contains(out, "hook panics on odd connections") || !strings.Contains(out, "robust_test.go") {
		t.Fatalf("the panic or its stack is not logged:\n%s", out)
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	waitFDs(t, before)
}

// With WithLoops(2), connections are spread over the loops: requests of
// several connections run on both loops, each connection's on one loop
// at a time, and a handler sees where it runs with t.Loop().
func TestServerSpreadsConnectionsOverLoops(t *testing.T) {
	var mu sync.Mutex
	loopsSeen := map[int]int{}
	h := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		l := t.Loop()
		mu.Lock()
		loopsSeen[l]++
		mu.Unlock()
		fmt.Fprintf(w, "%d", l)
	})
	ts := startServer(t, &whttp.Server{Handler: h}, weft.WithLoops(2))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			for range 5 {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(loopsSeen) < 2 || loopsSeen[0]+loopsSeen[1] != 40 {
		t.Fatalf("requests per loop %v: want 40 requests on both loops", loopsSeen)
	}
}
