package whttp

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// headOf returns the head at the start of b as the server's reader would
// take it (every LF after a CR, ending at the first empty line), or false.
func headOf(b []byte) (string, bool) {
	for len(b) >= 2 && b[0] == '\r' && b[1] == '\n' {
		b = b[2:]
	}
	lineStart := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i == 0 || b[i-1] != '\r' {
			return "", false
		}
		if i-1 == lineStart && lineStart > 0 {
			return string(b[:i+1]), true
		}
		lineStart = i + 1
	}
	return "", false
}

// Whatever head whttp's parser accepts, net/http's http.ReadRequest
// accepts too, with the same method, target, version, fields (Host aside,
// which both take out) and framing: whttp is never the looser of the two.
func FuzzParseHeadNoLooserThanReadRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a?b HTTP/1.0\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nFoo : bar\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"GET http://h/p HTTP/1.1\r\nHost: y\r\n\r\n",
		"CONNECT h:443 HTTP/1.1\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: x\r\nX: \xff\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nhost: a\r\nx-y: 1\r\nX-Y: 2\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := headOf(b)
		if !ok {
			return
		}
		hdr := make(http.Header)
		h, herr := parseHead(s, hdr, &headAlloc{}, 1<<20)
		if herr != nil {
			return
		}
		if _, err := parseTarget(new(url.URL), h.method, h.target); err != nil {
			return // whttp refuses it too
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(s)))
		if err != nil {
			t.Fatalf("whttp accepts %q, net/http refuses it: %v", s, err)
		}
		if req.Method != h.method || req.RequestURI != h.target || req.Proto != h.proto || req.ProtoMajor != h.major || req.ProtoMinor != h.minor {
			t.Fatalf("%q: whttp %s %s %s, net/http %s %s %s", s, h.method, h.target, h.proto, req.Method, req.RequestURI, req.Proto)
		}
		// net/http's ReadRequest leaves Host in the header (its server
		// takes it out), drops Transfer-Encoding, and drops
		// Content-Length when chunked.
		want := req.Header.Clone()
		delete(want, "Host")
		got := hdr.Clone()
		if h.tes > 0 {
			delete(got, "Transfer-Encoding")
			if h.major == 1 && h.minor >= 1 {
				delete(got, "Content-Length")
			}
			delete(want, "Content-Length")
			delete(got, "Content-Length")
		}
		if h.minor >= 1 && h.tes > 0 {
			delete(got, "Trailer")
			delete(want, "Trailer")
		}
		if len(got) == 0 {
			got = nil
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fields\n whttp    %q\n net/http %q", s, got, want)
		}
		if h.tes > 0 && h.minor >= 1 && (len(req.TransferEncoding) != 1 || req.ContentLength != -1) {
			t.Fatalf("%q: whttp frames it chunked, net/http with %v, %d", s, req.TransferEncoding, req.ContentLength)
		}
		if h.tes == 0 && h.contentLength >= 0 && req.ContentLength != h.contentLength {
			t.Fatalf("%q: Content-Length whttp %d, net/http %d", s, h.contentLength, req.ContentLength)
		}
	})
}

// For any target the request line admits (visible ASCII), the fast path
// for plain origin-form targets gives the URL net/url gives.
func FuzzParseTargetMatchesNetURL(f *testing.F) {
	for _, s := range []string{"/", "/a/b?c=d", "/q?", "/q??", "/a?b?", "//x", "/%41", "/a b", "/a|b", "/~_.-$&+,/:;=@", "/é", "*", "http://h/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" {
			return
		}
		for i := 0; i < len(target); i++ {
			if target[i] <= ' ' || target[i] >= 0x7f {
				return // the request line refuses it before
			}
		}
		want, werr := url.ParseRequestURI(target)
		got, gerr := parseTarget(new(url.URL), http.MethodGet, target)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: net/url %v, whttp %v", target, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: net/url %#v, whttp %#v", target, *want, *got)
		}
	})
}

// A head over the header budget (field memory as net/http counts it) is
// 431, even when its bytes are within MaxHeaderBytes.
func TestManyFieldsExceedTheBudget(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := range 100 {
		b.WriteString("X-" + strings.Repeat("k", i%7+1) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": v\r\n")
	}
	b.WriteString("\r\n")
	_, herr := parseHead(b.String(), make(http.Header), &headAlloc{}, 4096)
	if herr == nil || herr.code != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("%v, want 431", herr)
	}
	if _, herr := parseHead(b.String(), make(http.Header), &headAlloc{}, 1<<20); herr != nil {
		t.Fatalf("within the budget: %v", herr)
	}
}
