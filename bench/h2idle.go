package main

// `bench h2idle`: what an idle HTTP/2 connection and an open stream cost a
// server, whttp beside net/http, each server a child process of its own:
//
//	go run . h2idle [-n 2000] [-streams 2000] [-per 100] [-reps 2]
//
// This process opens n h2c connections (prior knowledge) to the child,
// each with one request answered, and leaves them idle: the growth of
// the child's heap and stacks in use (after GC) and of its RSS, divided
// by n, is the cost of an idle connection. Then it opens `streams`
// streams on the first connections (`per` on each, under both servers'
// MaxConcurrentStreams of 250) whose handlers send their response's
// headers and wait for the stream to end: the further growth divided by
// the streams is the cost of an open stream (a task under whttp, a
// goroutine under net/http, and each server's stream state). The client
// side is x/net's http2.Framer on plain net.Conns, so that nothing but
// the frames it writes reaches the server.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// h2IdleKinds are the server children of `bench h2idle`.
var h2IdleKinds = []string{"h2idle-weft", "h2idle-nethttp"}

func h2idleMain(args []string) error {
	fs := flag.NewFlagSet("h2idle", flag.ContinueOnError)
	n := fs.Int("n", 2000, "idle h2c connections")
	streams := fs.Int("streams", 2000, "open streams, on the first of those connections")
	per := fs.Int("per", 100, "open streams per connection (at most 250, both servers' MaxConcurrentStreams)")
	reps := fs.Int("reps", 2, "measurements per server")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *per < 1 || *per > 250 || *streams < 1 || *n < 1 || (*streams+*per-1)/(*per) > *n {
		return fmt.Errorf("need 1 <= -per <= 250, -streams >= 1 and -streams/-per <= -n")
	}
	type res struct{ conn, connRSS, stream, streamRSS float64 }
	results := map[string][]res{}
	fmt.Printf("bench h2idle: %d h2c connections (prior knowledge) from this process to a server child, one GET answered on each, then idle; then %d streams, %d per connection, whose handlers flush their headers and wait; growth of the child's heap and stacks in use (after GC) and of its RSS, per connection and per stream\n", *n, *streams, *per)
	for rep := range *reps {
		for _, kind := range h2IdleKinds {
			c, crss, s, srss, err := h2IdleOnce(kind, *n, *streams, *per)
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			results[kind] = append(results[kind], res{c, crss, s, srss})
			fmt.Fprintf(os.Stderr, "rep %d/%d  %-15s idle conn: %6.0f B heap+stacks, %6.0f B RSS; open stream: %6.0f B heap+stacks, %6.0f B RSS\n", rep+1, *reps, kind, c, crss, s, srss)
		}
	}
	fmt.Println()
	fmt.Println("| server | per idle connection: heap+stacks (median, min..max) | RSS | per open stream: heap+stacks | RSS |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	for _, kind := range h2IdleKinds {
		rs := results[kind]
		col := func(f func(res) float64) string {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			return fmt.Sprintf("%.0f B (%.0f..%.0f)", median(v), slices.Min(v), slices.Max(v))
		}
		name := map[string]string{"h2idle-weft": "whttp h2c", "h2idle-nethttp": "net/http h2c"}[kind]
		fmt.Printf("| %s | %s | %s | %s | %s |\n", name, col(func(r res) float64 { return r.conn }), col(func(r res) float64 { return r.connRSS }),
			col(func(r res) float64 { return r.stream }), col(func(r res) float64 { return r.streamRSS }))
	}
	return nil
}

// h2Client is one client connection: a framer and an HPACK encoder.
type h2Client struct {
	c    net.Conn
	bw   *bufio.Writer
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	next uint32 // the next stream id
}

func dialH2C(addr string) (*h2Client, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	h := &h2Client{c: c, bw: bufio.NewWriterSize(c, 4096), next: 1}
	h.fr = http2.NewFramer(h.bw, bufio.NewReaderSize(c, 4096))
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hbuf)
	io.WriteString(h.bw, http2.ClientPreface)
	// A large connection window, so that no server waits for credit.
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	h.fr.WriteWindowUpdate(0, 1<<24)
	return h, nil
}

// request writes a HEADERS frame (END_STREAM) of a GET of path on a new
// stream, unflushed, and returns the stream's id.
func (h *h2Client) request(path string) uint32 {
	h.hbuf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "bench"}, {":path", path}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	id := h.next
	h.next += 2
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndStream: true, EndHeaders: true})
	return id
}

// await flushes what was written and reads frames until done says the
// ones wanted have come, acknowledging SETTINGS and PINGs on the way.
func (h *h2Client) await(done func(http2.Frame) bool) error {
	if err := h.bw.Flush(); err != nil {
		return err
	}
	h.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer h.c.SetReadDeadline(time.Time{})
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
				h.bw.Flush()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				h.fr.WritePing(true, f.Data)
				h.bw.Flush()
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		case *http2.RSTStreamFrame:
			return fmt.Errorf("stream %d reset: %v", f.StreamID, f.ErrCode)
		}
		if done(f) {
			return nil
		}
	}
}

// h2IdleOnce measures one fresh child: bytes per idle connection and per
// open stream, heap and stacks then RSS.
func h2IdleOnce(kind string, n, streams, per int) (conn, connRSS, stream, streamRSS float64, err error) {
	ch, err := startWhttp25Child(pinning{}, kind, "")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer ch.kill()
	snap := func() (uint64, int64, error) {
		m, err := ch.mem()
		if err != nil {
			return 0, 0, err
		}
		r, err := procRSS(ch.cmd.Process.Pid)
		return m, r, err
	}
	m0, r0, err := snap()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	clients := make([]*h2Client, 0, n)
	defer func() {
		for _, h := range clients {
			h.c.Close()
		}
	}()
	for i := range n {
		h, err := dialH2C(ch.addr)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("connection %d: %w", i, err)
		}
		clients = append(clients, h)
		id := h.request("/plaintext")
		if err := h.await(func(f http2.Frame) bool {
			return f.Header().StreamID == id && f.Header().Flags.Has(http2.FlagDataEndStream)
		}); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("connection %d: %w", i, err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	m1, r1, err := snap()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	opened := 0
	for i := 0; opened < streams; i++ {
		h := clients[i]
		k := min(per, streams-opened)
		want := map[uint32]bool{}
		for range k {
			want[h.request("/wait")] = true
		}
		if err := h.await(func(f http2.Frame) bool {
			if _, ok := f.(*http2.MetaHeadersFrame); ok {
				if f.Header().Flags.Has(http2.FlagHeadersEndStream) {
					return false // a response that ended: not a waiting handler
				}
				delete(want, f.Header().StreamID)
			}
			return len(want) == 0
		}); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("streams on connection %d: %w", i, err)
		}
		opened += k
	}
	time.Sleep(500 * time.Millisecond)
	m2, r2, err := snap()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	// Every connection still works: a PING answered on each.
	for i, h := range clients {
		h.fr.WritePing(false, [8]byte{'b', 'e', 'n', 'c', 'h'})
		if err := h.await(func(f http2.Frame) bool {
			p, ok := f.(*http2.PingFrame)
			return ok && p.IsAck()
		}); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("PING on connection %d: %w", i, err)
		}
	}
	fn, fs := float64(n), float64(streams)
	return (float64(m1) - float64(m0)) / fn, float64(r1-r0) / fn, (float64(m2) - float64(m1)) / fs, float64(r2-r1) / fs, nil
}

// h2IdleServe runs a server child of `bench h2idle`: h2c with prior
// knowledge (and HTTP/1), /plaintext answered at once, /wait flushing its
// headers and waiting until its stream ends.
func h2IdleServe(ctx context.Context, kind, addr string) error {
	switch kind {
	case "h2idle-weft":
		_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(t, "tcp", addr)
			if err != nil {
				return struct{}{}, err
			}
			srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/wait" {
					writeBody(w, r.URL.Path)
					return
				}
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				t.Sleep(24 * time.Hour) // ends when the stream does
			}), Protocols: new(http.Protocols)}
			srv.Protocols.SetHTTP1(true)
			srv.Protocols.SetUnencryptedHTTP2(true)
			stop := context.AfterFunc(ctx, func() { srv.Close() })
			defer stop()
			announce(ln.Addr())
			if err := srv.Serve(t, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return struct{}{}, err
			}
			return struct{}{}, nil
		})
		return err
	case "h2idle-nethttp":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/wait" {
				writeBody(w, r.URL.Path)
				return
			}
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}), Protocols: new(http.Protocols)}
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
		stop := context.AfterFunc(ctx, func() { srv.Close() })
		defer stop()
		announce(ln.Addr())
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown server %q", kind)
}
