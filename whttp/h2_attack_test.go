package whttp_test

// The HTTP/2 attacks that hit net/http, nghttp2 and others, each against
// whttp: the server's cost stays bounded (tasks, buffered bytes), the
// attacker's connection ends (with GOAWAY and the code that says why, when
// the attacker reads it), and other clients go on being served.

import (
	"bufio"
	"bytes"
	"errors"
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
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Raw is a client that writes frames as they are.
type h2Raw struct {
	t    *testing.T
	c    net.Conn
	bw   *bufio.Writer
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	mu   sync.Mutex // the writer (a flood may write from a goroutine)
}

func dialH2(t *testing.T, addr string, settings ...http2.Setting) *h2Raw {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &h2Raw{t: t, c: c, bw: bufio.NewWriterSize(c, 64<<10)}
	r.fr = http2.NewFramer(r.bw, c)
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	r.enc = hpack.NewEncoder(&r.hbuf)
	r.bw.WriteString(http2.ClientPreface)
	r.fr.WriteSettings(settings...)
	r.flush()
	return r
}

func (r *h2Raw) flush() { r.bw.Flush() }

// block encodes a GET of path, with extra fields.
func (r *h2Raw) block(method, path string, extra ...string) []byte {
	r.hbuf.Reset()
	r.enc.WriteField(hpack.HeaderField{Name: ":method", Value: method})
	r.enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "http"})
	r.enc.WriteField(hpack.HeaderField{Name: ":authority", Value: "x"})
	r.enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
	for i := 0; i+1 < len(extra); i += 2 {
		r.enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	return append([]byte(nil), r.hbuf.Bytes()...)
}

func (r *h2Raw) headers(id uint32, path string, end bool) {
	r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.block("GET", path), EndStream: end, EndHeaders: true})
}

// h2EndPing marks the end of what a test sent: the server's answer to it
// comes after its answers to all that came before.
var h2EndPing = [8]byte{'t', 'h', 'e', ' ', 'e', 'n', 'd', '.'}

// h2Outcome is what a client read from an attacked connection.
type h2Outcome struct {
	goAway   *http2.ErrCode
	closed   bool
	statuses map[uint32]string
	resets   map[uint32]http2.ErrCode
}

// readAll reads frames until the connection ends or until for passes,
// answering nothing.
func (r *h2Raw) readAll(d time.Duration, stopAfterGoAway bool) h2Outcome {
	out := h2Outcome{statuses: map[uint32]string{}, resets: map[uint32]http2.ErrCode{}}
	r.c.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			out.closed = !(errors.As(err, &ne) && ne.Timeout())
			return out
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			code := f.ErrCode
			out.goAway = &code
			if stopAfterGoAway {
				return out
			}
		case *http2.MetaHeadersFrame:
			out.statuses[f.StreamID] = f.PseudoValue("status")
		case *http2.RSTStreamFrame:
			out.resets[f.StreamID] = f.ErrCode
		case *http2.PingFrame:
			if f.IsAck() && f.Data == h2EndPing {
				return out // the server read everything before it
			}
		}
	}
}

// h2Counter counts the handlers running, and the most at once.
type h2Counter struct{ now, max, total atomic.Int64 }

func (c *h2Counter) enter() {
	n := c.now.Add(1)
	c.total.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *h2Counter) leave() { c.now.Add(-1) }

// waitZero waits until no handler runs.
func (c *h2Counter) waitZero(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); c.now.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d handlers still run", c.now.Load())
		}
	}
}

// attackServer serves h2c with MaxConcurrentStreams streams; /sleep
// sleeps (until cancelled), /big writes 64 MB, anything else says ok.
func attackServer(t *testing.T, streams int, cnt *h2Counter, written *atomic.Int64) *testServer {
	srv := &whttp.Server{
		Protocols: new(http.Protocols),
		HTTP2:     &http.HTTP2Config{MaxConcurrentStreams: streams},
		Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
			cnt.enter()
			defer cnt.leave()
			switch r.URL.Path {
			case "/sleep":
				wt.Sleep(time.Minute)
			case "/stubborn": // finishes its work even when reset
				wt.Protect(func(t *weft.Task) error { return t.Sleep(300 * time.Millisecond) })
			case "/big":
				chunk := make([]byte, 1024)
				for range 64 << 10 {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			default:
				io.WriteString(w, "ok")
			}
		}),
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return startServer(t, srv)
}

// stillServes checks that a new client is served.
func stillServes(t *testing.T, ts *testServer) {
	t.Helper()
	resp, err := h2cClient(t).Get(ts.url("/hello"))
	if err != nil {
		t.Fatalf("a new client after the attack: %v", err)
	}
	if got := bodyOf(t, resp); got != "ok" {
		t.Fatalf("a new client after the attack: %q", got)
	}
}

// Rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, in a loop. The
// handlers that run at once stay within MaxConcurrentStreams and a small
// slack (a reset handler ends at its next suspension point); the
// connection ends with ENHANCE_YOUR_CALM if the resets outrun them.
func TestH2AttackRapidReset(t *testing.T) {
	for _, path := range []string{"/sleep", "/stubborn"} {
		var cnt h2Counter
		var written atomic.Int64
		ts := attackServer(t, 16, &cnt, &written)
		r := dialH2(t, ts.addr)
		go func() {
			r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			for i := range 20000 {
				id := uint32(2*i + 1)
				r.headers(id, path, true)
				r.fr.WriteRSTStream(id, http2.ErrCodeCancel)
				if r.bw.Flush() != nil {
					return
				}
			}
			r.fr.WritePing(false, h2EndPing)
			r.bw.Flush()
		}()
		out := r.readAll(20*time.Second, true)
		if out.goAway != nil && *out.goAway != http2.ErrCodeEnhanceYourCalm {
			t.Fatalf("%s: GOAWAY %v, want ENHANCE_YOUR_CALM", path, *out.goAway)
		}
		if path == "/stubborn" && out.goAway == nil {
			t.Fatalf("%s: handlers that outlive their resets did not end the connection", path)
		}
		// MaxConcurrentStreams plus the slack of 4 (h2ResetSlack).
		if m := cnt.max.Load(); m > 16+4 {
			t.Fatalf("%s: %d handlers ran at once, want at most 20", path, m)
		}
		t.Logf("%s: handlers started %d, at most %d at once, GOAWAY %v", path, cnt.total.Load(), cnt.max.Load(), out.goAway)
		r.c.Close()
		cnt.waitZero(t)
		stillServes(t, ts)
	}
}

// CONTINUATION flood (CVE-2024-27316 and its kin): a header block that
// never ends, in empty CONTINUATION frames (which cost the server no
// memory, only reading) or in frames full of header bytes. The
// connection ends after a bounded number of bytes.
func TestH2AttackContinuationFlood(t *testing.T) {
	for _, frag := range []int{0, 16 << 10} {
		var cnt h2Counter
		var written atomic.Int64
		ts := attackServer(t, 16, &cnt, &written)
		r := dialH2(t, ts.addr)
		var sent atomic.Int64
		go func() {
			r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			// A block that begins a literal field with a long value.
			r.hbuf.Reset()
			r.enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
			r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: r.hbuf.Bytes()})
			junk := bytes.Repeat([]byte{'a'}, frag)
			for range 1 << 20 {
				r.fr.WriteContinuation(1, false, junk)
				sent.Add(int64(9 + len(junk)))
				if sent.Load() > 64<<20 || r.bw.Flush() != nil {
					return
				}
			}
		}()
		out := r.readAll(20*time.Second, true)
		if !out.closed && out.goAway == nil {
			t.Fatalf("fragments of %d bytes: the connection still open after %d bytes", frag, sent.Load())
		}
		if out.goAway != nil && *out.goAway != http2.ErrCodeEnhanceYourCalm && *out.goAway != http2.ErrCodeProtocol {
			t.Fatalf("GOAWAY %v", *out.goAway)
		}
		if s := sent.Load(); s > 32<<20 {
			t.Fatalf("the server read %d bytes of one header block", s)
		}
		if cnt.total.Load() != 0 {
			t.Fatal("a handler ran for a header block that never ended")
		}
		t.Logf("fragments of %d bytes: GOAWAY %v after about %d bytes", frag, out.goAway, sent.Load())
		stillServes(t, ts)
	}
}

// PING and SETTINGS floods from a client that never reads: the answers
// the server owes pile up only to a bound, then it ends the connection.
func TestH2AttackControlFloods(t *testing.T) {
	for _, kind := range []string{"ping", "settings"} {
		var cnt h2Counter
		var written atomic.Int64
		ts := attackServer(t, 16, &cnt, &written)
		r := dialH2(t, ts.addr)
		r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		var err error
		n := 0
		for ; n < 10_000_000 && err == nil; n++ {
			if kind == "ping" {
				r.fr.WritePing(false, [8]byte{byte(n)})
			} else {
				r.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(n + 1000)})
			}
			if r.bw.Buffered() > 32<<10 {
				err = r.bw.Flush()
			}
		}
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s flood: the server still read after %d frames (%v)", kind, n, err)
		}
		t.Logf("%s flood: the server closed the connection after about %d frames (%v)", kind, n, err)
		stillServes(t, ts)
	}
}

// Empty DATA frames, which carry nothing and cost a frame's work each.
func TestH2AttackEmptyFrames(t *testing.T) {
	var cnt h2Counter
	var written atomic.Int64
	ts := attackServer(t, 16, &cnt, &written)
	r := dialH2(t, ts.addr)
	r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: r.block("POST", "/sleep"), EndHeaders: true})
	go func() {
		r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		for range 100_000 {
			r.fr.WriteData(1, false, nil)
			if r.bw.Flush() != nil {
				return
			}
		}
	}()
	out := r.readAll(20*time.Second, true)
	if out.goAway == nil || *out.goAway != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", out.goAway)
	}
	cnt.waitZero(t)
	stillServes(t, ts)
}

// An HPACK bomb: a small header block whose fields decode to megabytes
// (one large field in the dynamic table, then indexed again and again).
// The decoder stops keeping fields past the header list limit: the stream
// gets 431, and the connection goes on.
func TestH2AttackHPACKBomb(t *testing.T) {
	var cnt h2Counter
	var written atomic.Int64
	ts := attackServer(t, 16, &cnt, &written)
	r := dialH2(t, ts.addr)
	r.hbuf.Reset()
	block := r.block("GET", "/hello", "x-bomb", strings.Repeat("b", 4000))
	// The last field went into the dynamic table at index 62: refer to
	// it 4000 times (one byte each), 16 MB decoded.
	for range 4000 {
		block = append(block, 0x80|62)
	}
	r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndStream: true, EndHeaders: true})
	r.headers(3, "/hello", true)
	r.flush()
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := map[uint32]string{}
	for len(got) < 2 {
		f, err := r.fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if h, ok := f.(*http2.MetaHeadersFrame); ok {
			got[h.StreamID] = h.PseudoValue("status")
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("GOAWAY %v", g.ErrCode)
		}
	}
	if got[1] != "431" || got[3] != "200" {
		t.Fatalf("statuses %v, want 431 for the bomb and 200 after it", got)
	}
	if cnt.total.Load() != 1 {
		t.Fatalf("%d handlers ran, want 1 (the bomb's stream is answered by the server)", cnt.total.Load())
	}
}

// Streams past MaxConcurrentStreams are refused (REFUSED_STREAM, which
// tells the client it may retry them), and the others are served.
func TestH2AttackTooManyStreams(t *testing.T) {
	var cnt h2Counter
	var written atomic.Int64
	ts := attackServer(t, 4, &cnt, &written)
	r := dialH2(t, ts.addr)
	for i := range 10 {
		r.headers(uint32(2*i+1), "/sleep", true)
	}
	r.flush()
	out := r.readAll(500*time.Millisecond, false)
	if len(out.resets) != 6 {
		t.Fatalf("resets %v, want 6 streams refused", out.resets)
	}
	for id, code := range out.resets {
		if code != http2.ErrCodeRefusedStream || id < 9 {
			t.Fatalf("stream %d reset with %v", id, code)
		}
	}
	if m := cnt.max.Load(); m != 4 {
		t.Fatalf("%d handlers at once, want 4", m)
	}
	r.c.Close()
	cnt.waitZero(t)
}

// A client that never opens its window (SETTINGS_INITIAL_WINDOW_SIZE 0)
// or never reads: the handler's writes suspend once its stream's buffer
// is full, so the server holds a bounded amount per stream, and the
// handlers end when the client goes.
func TestH2AttackZeroWindowAndSlowReader(t *testing.T) {
	for _, zero := range []bool{true, false} {
		var cnt h2Counter
		var written atomic.Int64
		ts := attackServer(t, 16, &cnt, &written)
		var r *h2Raw
		if zero {
			r = dialH2(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		} else {
			r = dialH2(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
			r.fr.WriteWindowUpdate(0, 1<<30)
		}
		const streams = 8
		for i := range streams {
			r.headers(uint32(2*i+1), "/big", true)
		}
		r.flush()
		// Let the handlers write what they can: nothing reads.
		time.Sleep(500 * time.Millisecond)
		w := written.Load()
		// Per stream: the writer's buffer and the response's; beyond
		// them, what the sockets hold (slow reader: a few MB at most).
		limit := int64(streams * (32 + 4 + 1) << 10)
		if !zero {
			limit += 16 << 20
		}
		if w > limit {
			t.Fatalf("zero window %v: the handlers wrote %d bytes with nobody reading, want at most %d", zero, w, limit)
		}
		if cnt.now.Load() != streams {
			t.Fatalf("%d handlers run, want %d (suspended in Write)", cnt.now.Load(), streams)
		}
		t.Logf("zero window %v: %d bytes written by %d handlers (of 64 MB each asked)", zero, w, streams)
		r.c.Close()
		cnt.waitZero(t)
		stillServes(t, ts)
	}
}
