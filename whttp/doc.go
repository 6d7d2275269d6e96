// Package whttp serves and fetches HTTP/1.1 on weft tasks, with Go's own
// HTTP types: *http.Request, http.ResponseWriter, http.Header and
// *http.Response, parsed and written by net/http's parsers
// (http.ReadRequest, http.ReadResponse, Request.Write).
//
// The server runs one task per connection on the loop of the task that
// calls Serve. The handler runs in that task and gets it, so it can
// suspend (Sleep, Await, I/O, Offload) without blocking the loop; it reads
// the request body and writes the response in that task, and each read or
// write may suspend. A standard http.Handler runs through Adapt, in the
// connection's task, for handlers that do not block, and through Blocking,
// on a goroutine of its own, for handlers that do (net/http/pprof,
// http.TimeoutHandler, blocking database clients).
//
//	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
//		t.Sleep(10 * time.Millisecond) // suspends this connection's task only
//		io.WriteString(w, "hello\n")
//	})}
//	err := srv.Serve(t, ln) // until t is cancelled: then a graceful stop
//
// The client (Client.Do, Get) dials with weft.Dial, speaks TLS through
// crypto/tls on Conn.LoopConn, keeps idle connections per host for reuse,
// and follows redirects as net/http's client does. Every wait suspends the
// calling task and is a cancellation point.
//
// # Scope
//
// HTTP/1.0 and HTTP/1.1 only: keep-alive, pipelining, Content-Length and
// chunked bodies both ways, Expect: 100-continue, HEAD, trailers,
// http.Flusher. HTTP/2 and HTTP/3 are out of scope: the server offers only
// "http/1.1" by ALPN and the client asks for nothing else. The client has
// no proxy support and no transparent gzip.
//
// # Tasks
//
// The server's handlers and the client's responses belong to one loop. A
// handler's Task, and the body and writer of its request, must be used by
// the connection's task (a read or write from another task or goroutine
// panics with a "weft:" message). A client response body may be read by
// any task of the loop that called Do.
package whttp
