package whttp

// What a connection reuses from one request to the next, and the check
// that a handler does not keep it.
//
// While a request is in flight its connection holds a reqState: the input
// buffer, the output writer, the *http.Request with its URL and header
// map, the value slices of the header, and the response with its header
// map. The connection gives it back to a pool when it waits for the next
// request with nothing buffered (an idle connection holds none), and takes
// one when input arrives. So the *http.Request a handler receives, its
// Header, URL and their contents, and the ResponseWriter's Header are
// reused for a later request, on this or another connection, once the
// handler has returned: a handler must not keep them (see Handler). What
// is made for each request stays valid: r.Context() and the
// ResponseWriter (one object; after the request it is done, and refuses to
// write), r.Body (it then returns http.ErrBodyReadAfterClose), r.Trailer,
// and every string.
//
// The check: with the race detector on (go test -race) or the build tag
// weft_debug, nothing is reused (each request gets fresh objects), and the
// server writes over what a handler may not keep as soon as it has
// returned (retire): a goroutine that still uses the request, its URL or
// header, or the response header, unsynchronized with the handler's
// return, is a data race that the race detector reports, with both
// stacks. Only a use is reported, never a mere reference: a request that
// stays reachable after its handler returned (a context.WithTimeout on
// r.Context() keeps its parent, and so chi's log entry with the request
// in it, for as long as the runtime keeps the stopped timer) is no
// error. (An earlier check reported requests that a garbage collection
// found still reachable, and so accused such middleware.)

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"unsafe"
)

// reqState is what a connection holds while a request is in flight.
type reqState struct {
	in    inbuf
	bw    *bufio.Writer
	req   *http.Request
	url   url.URL
	hdr   http.Header
	alloc headAlloc
	te    [1]string
	resp  response
	// handles are request handles not handed out yet (beginRequest).
	handles []reqHandle
	// prevHead is the last head read into this state, as a string: an
	// identical head (a keep-alive client repeating its request) reuses
	// it rather than copying the bytes again. Strings are immutable, so
	// sharing one is always safe.
	prevHead string
}

// outSize is the output buffer's size: a response up to this (header and
// body together) goes out in one write.
const outSize = 8 << 10

// maxCachedHead bounds the head kept for reuse (prevHead).
const maxCachedHead = 4 << 10

var statePool sync.Pool

// getState returns a reqState writing to dst.
func getState(dst net.Conn) *reqState {
	st, _ := statePool.Get().(*reqState)
	if st == nil {
		st = &reqState{in: inbuf{buf: make([]byte, inSize)}, bw: bufio.NewWriterSize(dst, outSize)}
		return st
	}
	st.bw.Reset(dst)
	return st
}

// putState gives st back; it holds no input, and its output is flushed.
// A state whose buffers a hijack dropped (hijack.go) gets new ones.
// What it refers to of its last request (the connection, through the
// request's context) is dropped, so that the pool keeps no connection.
func putState(st *reqState) {
	if st.bw == nil {
		st.bw = bufio.NewWriterSize(nil, outSize)
	}
	st.bw.Reset(nil)
	if st.req != nil {
		*st.req = http.Request{}
	}
	if len(st.in.buf) != inSize { // nil after a hijack
		st.in.buf = make([]byte, inSize) // a large head grew it for one request
	}
	st.in.r, st.in.w = 0, 0
	statePool.Put(st)
}

// request returns the request to fill: st's, zeroed (every field, those
// http.ServeMux sets included), or a new one when the check is on.
func (st *reqState) request() *http.Request {
	if checkRetention {
		return new(http.Request) // st keeps no reference to it
	}
	if st.req == nil {
		st.req = new(http.Request)
	} else {
		*st.req = http.Request{}
	}
	return st.req
}

// header returns an empty header map for the request, and resets the
// value slices.
func (st *reqState) header() http.Header {
	if checkRetention || st.hdr == nil || len(st.hdr) > 64 {
		st.hdr = make(http.Header, 8)
		st.alloc.vals = nil
	} else {
		clear(st.hdr)
		clear(st.alloc.vals)
		st.alloc.vals = st.alloc.vals[:0]
	}
	return st.hdr
}

// urlFor returns the URL to fill for the request.
func (st *reqState) urlFor() *url.URL {
	if checkRetention {
		return new(url.URL)
	}
	return &st.url
}

// headString returns b as a string, reusing the last head's when equal.
func (st *reqState) headString(b []byte) string {
	if string(b) == st.prevHead {
		return st.prevHead
	}
	s := string(b)
	if len(s) <= maxCachedHead {
		st.prevHead = s
	}
	return s
}

// ctxOffset is where http.Request keeps its context (the unexported field
// ctx, which only WithContext sets, by copying the whole request):
// setContext writes it in place so that a reused request costs no copy.
// Found by reflection; if a Go release renames or retypes it, setContext
// falls back to WithContext.
var ctxOffset = func() uintptr {
	f, ok := reflect.TypeFor[http.Request]().FieldByName("ctx")
	if !ok || f.Type != reflect.TypeFor[context.Context]() {
		return 0
	}
	return f.Offset
}()

// setContext makes ctx r's context and returns r (or, in the fallback, a
// copy of r with it).
func setContext(r *http.Request, ctx context.Context) *http.Request {
	if ctxOffset == 0 {
		return r.WithContext(ctx)
	}
	*(*context.Context)(unsafe.Add(unsafe.Pointer(r), ctxOffset)) = ctx
	return r
}

// retire ends the handler's hold on req, whose handler has returned
// (with hdr, the response's header). With the check on, it writes over
// them at once, as a later request's reuse would: a goroutine that still
// reads one of them without having synchronized with the handler's
// return races with this write, and the race detector reports both
// stacks; code of the Run that reads them later (after a channel, say)
// finds them empty (a nil URL, no fields) instead of another request's.
// Without the check the reuse itself does this, later.
func retire(req *http.Request, hdr http.Header) {
	if !checkRetention {
		return
	}
	if u := req.URL; u != nil {
		*u = url.URL{}
	}
	clear(req.Header) // r.Trailer is the request's own: it stays
	*req = http.Request{}
	clear(hdr)
}
