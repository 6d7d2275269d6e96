package whttp_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// BenchmarkServerH2Plaintext measures HTTP/2 requests through the server
// as `bench h2`'s /plaintext does them over h2c: one connection, ten
// streams in flight per round (h2load -m 10), GET /plaintext answered
// with a Content-Type and 5 bytes. The client writes pre-encoded frames
// and reads frame headers by hand, allocating nothing, so allocs/op (per
// request) are the server's and the handler's.
func BenchmarkServerH2Plaintext(b *testing.B) {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	ts := startServer(b, &whttp.Server{Protocols: p, Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hello)
	})})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var pre bytes.Buffer
	pre.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&pre, nil)
	fr.WriteSettings()
	fr.WriteWindowUpdate(0, 1<<30)
	if _, err := c.Write(pre.Bytes()); err != nil {
		b.Fatal(err)
	}
	// The first request's header block puts :authority and :path in the
	// dynamic table, as h2load's encoder (nghttp2's) does; every later
	// request's block is the same, all indexed fields.
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: ts.addr}, {Name: ":path", Value: "/plaintext"}}
	headersFrame := func() []byte {
		block.Reset()
		for _, f := range fields {
			enc.WriteField(f)
		}
		frame := make([]byte, 9+block.Len())
		frame[0], frame[1], frame[2] = byte(block.Len()>>16), byte(block.Len()>>8), byte(block.Len())
		frame[3] = byte(http2.FrameHeaders)
		frame[4] = byte(http2.FlagHeadersEndHeaders | http2.FlagHeadersEndStream)
		copy(frame[9:], block.Bytes())
		return frame
	}
	const per = 10
	first, frame := headersFrame(), headersFrame()
	round := make([]byte, 0, per*len(frame))
	br := bufio.NewReaderSize(c, 64<<10)
	var hdr [9]byte
	id := uint32(1)
	doRound := func() {
		round = round[:0]
		for range per {
			f := frame
			if id == 1 {
				f = first
			}
			binary.BigEndian.PutUint32(f[5:], id)
			id += 2
			round = append(round, f...)
		}
		if _, err := c.Write(round); err != nil {
			b.Fatal(err)
		}
		for ended := 0; ended < per; {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				b.Fatal(err)
			}
			n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
			if _, err := br.Discard(n); err != nil {
				b.Fatal(err)
			}
			typ, flags := http2.FrameType(hdr[3]), http2.Flags(hdr[4])
			switch {
			case typ == http2.FrameRSTStream || typ == http2.FrameGoAway:
				b.Fatalf("frame %v", typ)
			case (typ == http2.FrameData || typ == http2.FrameHeaders) && flags.Has(http2.FlagDataEndStream):
				ended++
			}
		}
	}
	doRound()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	rounds := (b.N + per - 1) / per
	for range rounds {
		doRound()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(rounds*per), "cpu-ns/req")
}
