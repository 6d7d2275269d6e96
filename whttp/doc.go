// Package whttp serves and fetches HTTP/1.1 on weft tasks, with Go's own
// HTTP types: *http.Request, http.ResponseWriter, http.Header and
// *http.Response. The server reads requests with a strict parser of its
// own (see Framing) and reuses what a request needs from one request to
// the next (see Cost); the client uses net/http's parsers
// (http.ReadResponse, Request.Write).
//
// Each connection is served by a task of its own. The handler runs in that
// task and gets it, so it can suspend (Sleep, Await, I/O, Offload) without
// blocking the loop; it reads the request body and writes the response in
// that task, and each read or write may suspend. A standard http.Handler
// runs through Adapt, in the connection's task, for handlers that do not
// block, and through Blocking, on a goroutine of its own, for handlers
// that do (net/http/pprof, http.TimeoutHandler, blocking database
// clients).
//
//	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
//		t.Sleep(10 * time.Millisecond) // suspends this connection's task only
//		io.WriteString(w, "hello\n")
//	})}
//	err := srv.Serve(t, ln) // until t is cancelled: then a graceful stop
//
// As with net/http, Server.ListenAndServe and ListenAndServeTLS listen on
// Server.Addr themselves, ServeTLS serves HTTPS from certificate files, and
// the package's ListenAndServe(t, addr, handler) is the one-line server.
//
// The client (Client.Do, Get) dials with weft.Dial, keeps idle
// connections per host for reuse, and follows redirects as net/http's
// client does. Over TLS it offers HTTP/2 and HTTP/1.1 by ALPN, as
// net/http's Transport does, and speaks HTTP/2 when the server chooses it,
// multiplexing the requests of every task of a Run on one connection per
// host (Client.Protocols; h2c with prior knowledge when it asks). Every
// wait suspends the calling task and is a cancellation point.
//
// # Where handlers run
//
// Serve accepts in the task that calls it and starts each connection's
// task on that task's loop. Every accepted connection has a home loop,
// where its reads and writes run: with one loop, that loop; with
// WithLoops(n), weft gives accepted connections homes round-robin over
// the n loops, so the handlers of different connections run in parallel
// on different loops. A connection's task moves to its home at its first
// read; between two of its reads or writes, an idle loop may take it over
// (weft's hand-over), and its next I/O brings it home again. So:
//
//   - one connection's requests run one after another, each in that
//     connection's task; t, w, r and r.Body belong to that task and go
//     wherever it goes;
//   - t.Loop() says which loop a handler runs on now; it may differ from
//     one suspension point to the next, and from Serve's loop;
//   - with one loop, handlers never run at the same time, and may share
//     state without locks; with several, state that handlers of different
//     connections share needs a lock (weft.Mutex, sync) or atomics.
//
// # Framing
//
// The server reads requests as RFC 9112 and RFC 9110 require, at least as
// strictly as net/http: whatever request whttp serves, net/http's server
// serves too (the package's tests run a corpus of raw requests, from
// llhttp's, net/http's and Node's suites and published request-smuggling
// cases, against both). Where they differ, whttp refuses, or closes, where
// net/http does not:
//
//   - a line that ends in a bare LF, or a bare CR anywhere: 400 (net/http
//     takes LF alone as a line end, in the head and the trailer);
//   - obs-fold (a field line that begins with whitespace): 400 (net/http
//     joins it to the line before, in the head and the trailer);
//   - a request-target with bytes other than visible ASCII: 400 (net/http
//     accepts bytes 0x80 and above);
//   - Content-Length on two field lines, even equal: 400 (net/http keeps
//     one of two equal values);
//   - Transfer-Encoding whose last coding is not chunked: 400, as RFC 9112
//     section 6.3 says (net/http: 501); chunked last after another coding:
//     501, as both do;
//   - Content-Length and Transfer-Encoding: chunked together: the body is
//     framed as chunked, as both do, and then the connection is closed
//     (RFC 9112 section 6.1; net/http keeps it, so bytes after the body
//     are read as the next request);
//   - Transfer-Encoding in an HTTP/1.0 request: the body is framed by
//     Content-Length, as net/http does, and the connection is closed
//     after the response (faulty framing, RFC 9112 section 6.1);
//   - a chunk extension must follow the grammar (a token name, a token or
//     quoted-string value), where net/http ignores what follows ';'; a
//     chunk size of 2^63 or more is refused (net/http waits for it);
//   - "PRI * HTTP/2.0" (the HTTP/2 preface) is 505: whttp has no HTTP/2.
//
// The one request whttp serves that net/http refuses: empty lines (CRLF)
// before a request line are ignored, as RFC 9112 section 2.2 says a server
// should (net/http ignores them only after a POST).
//
// Beyond that, as net/http: the method a token; HTTP/1.x only (505
// otherwise); field names tokens, with no whitespace before the colon;
// field values without control bytes; exactly one valid Host in HTTP/1.1
// (an empty one is valid); a head larger than MaxHeaderBytes plus 4096
// bytes, or whose fields take more memory than MaxHeaderBytes (counted as
// net/http counts it), is 431; a chunk size of more than 16 hex digits,
// data not followed by CRLF, a trailer section over 4 KB, or too much
// framing for the data, end the body with an error (the handler's read
// fails, and the connection closes after the response). Every refusal
// closes the connection. OPTIONS * is answered by the server (200, no
// body), as net/http does.
//
// A response the handler ends short (fewer bytes than its Content-Length,
// or a panic after the header went out) is cut: the server logs why and
// closes the connection at once, so the client sees the body end early
// rather than waiting. A request head still incomplete at
// ReadHeaderTimeout is answered 408 Request Timeout and the connection
// closed (net/http answers 400 or nothing, depending on whether its
// deadline falls inside a line); a connection that sent nothing is closed
// without an answer, as by net/http.
//
// # Cost
//
// A request costs the server one allocation: the object that is both the
// ResponseWriter and r.Context(); two more if the handler suspends (or
// runs long enough to reach a Checkpoint's slow path), for the task that
// watches the connection from then on, with its function (see Handler);
// one more if its head differs from the connection's previous one (the
// head's string), and one more if it has a body (the body's reader). The rest is reused from
// request to request (see Handler for what a handler may keep):
//
//   - the *http.Request, its URL and Header map (and the value slices in
//     it), and the response's Header map; a connection holds them, with
//     its input and output buffers, only while a request is in flight,
//     and gives them back to a pool while it waits for the next (an idle
//     connection waiting in its task reads into a pooled 432-byte landing
//     buffer, which a small request arrives in whole; one parked with no
//     task holds none);
//   - the request's strings are cut from one copy of its head (a field
//     name is copied only if it is neither canonical nor a common one),
//     and that copy is reused when a client repeats a head byte for byte;
//   - r.Context() costs nothing until someone waits on it (Done): only
//     then is a context.WithCancelCause made, which the end of the request
//     cancels;
//   - a response whose body fits in 6 KB, written before the handler
//     returns, goes out with its header, a Content-Length, in one write
//     system call (with the responses to pipelined requests before it);
//     larger ones are chunked; Flush, or a full 8 KB output buffer, sends
//     what is written;
//   - header fields are written in the map's order, without sorting;
//   - io.Copy from a file (http.ServeContent, http.FileServer) sends it
//     with sendfile(2) on Linux (the ResponseWriter is an io.ReaderFrom),
//     over plain TCP, for a response of known length.
//
// With the race detector on (go test -race) or the weft_debug build tag,
// nothing is reused, and the server writes over the request, its URL and
// header, and the response header, as soon as the handler has returned:
// a goroutine that still uses them, unsynchronized with the handler's
// return, makes a data race that the race detector reports, so the test
// that runs such a handler fails; a task that uses them later finds them
// empty. Only uses are reported: a request that something merely still
// references (a context.WithTimeout made on r.Context() keeps its parent
// while the runtime keeps its stopped timer; chi's Logger and Timeout
// middleware do exactly this) is no error.
//
// # Hijacking
//
// A handler takes its connection over with http.Hijacker or
// http.ResponseController's Hijack, as WebSocket libraries do. What the
// server held is sent first (a 101 set with WriteHeader, the responses to
// earlier pipelined requests), and the bytes it had read past the request
// head are in the returned bufio.Reader. From then on the connection is
// the handler's: the server applies none of its timeouts to it, does not
// close it after the handler returns, and its graceful stop neither waits
// for it in the drain nor closes it (Shutdown calls the functions given to
// RegisterOnShutdown, where a handler can be told to end); once the drain
// is over, the tasks of handlers still running on hijacked connections
// are cancelled, so that Serve can return (their tasks are Serve's). The
// handler, or the code it hands the connection to, must close it.
//
// The net.Conn works from any task of the Run, each call suspending the
// task that makes it, and from any goroutine, each call blocking that
// goroutine only (it is the connection's weft.Conn.GoConn, or over TLS
// its weft.TLSConn's GoConn): a reader and a writer, tasks or goroutines,
// may share it, over plain TCP and over TLS alike (the server's TLS
// connections are weft.TLSConns, which a reader and a writer may share
// without ever blocking a loop). A handler run by Blocking hijacks as one
// on a task does, on its goroutine; its connection's task then waits for
// it to return, and a graceful stop, once its drain is over, cancels its
// r.Context() and waits for it: such a handler must end when r.Context()
// is done.
//
// gorilla/websocket (v1.5.3) and coder/websocket (v1.8.14) work unchanged
// (examples/websocket: echo, a broadcast chat, ping/pong, close
// handshakes, 1 MB messages, vanishing clients, bad upgrades, under -race
// on one and two loops, over plain TCP and TLS, and in headless
// Chromium). In a handler run by Blocking, on goroutines, they work as
// under net/http, with any number of goroutines per connection (gorilla's
// read and write pumps). In a handler on a task (a Handler, or Adapt),
// they need one rule: one task writes each connection. Both libraries
// guard their writer with a Go channel used as a mutex, and their readers
// write replies (pongs, the closing frame) themselves: a reader task that
// waits for that mutex while the writer task holding it is suspended in a
// write blocks the loop. Hand the reader's replies to the writer task
// (gorilla's SetPingHandler and SetCloseHandler), read and write in one
// task (as coder/websocket's echo does), or serve the WebSocket through
// Blocking.

// # Coming from net/http
//
// A net/http program usually moves to whttp by wrapping its handler:
// Server{Handler: whttp.Adapt(mux)} and srv.Serve(t, ln) (or
// srv.ListenAndServe(t)) in a weft.Run.
// What to know:
//
//   - Runs unchanged under Adapt, in the connection's task: http.ServeMux
//     and its patterns, http.FileServer and http.ServeContent (Range,
//     conditional requests, sendfile), http.StripPrefix, http.MaxBytesReader,
//     http.ResponseController (Flush, SetReadDeadline, SetWriteDeadline,
//     EnableFullDuplex, Hijack), JSON APIs, and middleware that wraps the
//     writer or the context. Tried: chi v5 with RequestID, Logger,
//     Recoverer, Timeout and Compress (examples/websocket, under -race).
//   - Anything that blocks must not run on the loop: a Go channel
//     receive, a sync.Mutex wait, time.Sleep, a blocking database or
//     cache client. Run such a handler through Blocking (tried:
//     net/http/pprof, http.TimeoutHandler, a streaming handler), or, in a
//     handler on the task, make the blocking call with BlockingCall, whose
//     context carries r.Context()'s deadline (chi's Timeout) as net/http
//     code expects; weft.Blocking's own context is the task's. To suspend
//     instead (Sleep, weft channels, Offload), a standard handler gets its
//     task with TaskOf(r).
//   - r.Context() ends when the handler returns, when the client goes
//     away (ErrClientGone, at once, whatever the handler waits on: the
//     handler's task is cancelled too) and when the drain timeout or
//     Close cuts the connection off. Its values are Serve's task's (or
//     BaseContext's and ConnContext's), http.LocalAddrContextKey's, and
//     http.ServerContextKey's, which is the *whttp.Server.
//   - Streaming (Server-Sent Events): write, Flush, then wait (t.Sleep, a
//     weft channel) in a Handler; or, under Blocking, select on
//     r.Context().Done() as under net/http. Either ends when the client
//     leaves.
//   - WebSockets: see Hijacking.
//   - Stopping: cancel the task in Serve, or call srv.Shutdown(ctx) from
//     a goroutine (a signal handler), as with net/http; Serve then returns
//     http.ErrServerClosed. Close cuts every connection at once.
//   - The Server's fields are net/http's where they mean the same thing
//     (ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout,
//     MaxHeaderBytes, ConnState, ConnContext, TLSConfig); BaseContext takes
//     the *weft.Listener; DrainTimeout bounds a graceful stop; Logger is a
//     *slog.Logger. There is no HTTP/2 and no TLSNextProto. Over TLS,
//     ConnState and ConnContext get a net.Conn with a ConnectionState
//     method (a weft.TLSConn's), not a *tls.Conn.
//   - The server reuses the request, its URL and header, and the response
//     header, once the handler returns: copy (r.Clone) what must outlive
//     it. go test -race reports code that breaks this rule (see Cost).
//
// # Scope
//
// HTTP/1.0 and HTTP/1.1: keep-alive, pipelining, Content-Length and
// chunked bodies both ways, Expect: 100-continue, HEAD, trailers,
// http.Flusher, Hijack. The server speaks HTTP/2 too (see HTTP/2), and so
// does the client (over TLS by default, and over cleartext when
// Client.Protocols asks for it). HTTP/3 is out of scope. The client has no
// proxy support and no transparent gzip.
//
// # HTTP/2
//
// The server speaks HTTP/2 (RFC 9113) as net/http's does: over TLS when
// the client offers "h2" by ALPN (Server.Protocols nil: HTTP/1 and HTTP/2
// over TLS), and over cleartext, with prior knowledge, when
// Protocols.SetUnencryptedHTTP2(true) (a connection that opens with the
// HTTP/2 preface; with HTTP/1 off, every connection). Server.HTTP2 sets
// its limits with net/http's meanings. The handlers, the types and the
// rules are the same; what differs:
//
//   - each stream's handler runs in a task of its own, started on the
//     connection's, so a slow handler never holds up the connection's
//     other streams; its r.Body and w suspend that task;
//   - r.Context() ends, and the handler's task is cancelled, when the
//     client resets the stream or the connection goes;
//   - trailers both ways (the request's in r.Trailer after its body is
//     read; the response's declared in Trailer or named with
//     http.TrailerPrefix), Flush, Expect: 100-continue;
//   - Hijack, per-request ReadTimeout and WriteTimeout and the
//     ResponseController deadlines are not supported on HTTP/2 (as with
//     net/http, whose HTTP/2 has no Hijack), nor the Upgrade: h2c
//     handshake or server push;
//   - the request body is buffered per stream up to its flow-control
//     window, and a handler that does not read it stalls only its own
//     stream;
//   - HTTP2Config.SendPingTimeout turns on the health check: a PING when
//     no frame has come for that long, and the connection closed when
//     none follows within PingTimeout.
//
// h2spec's strict suite passes whole, over TLS and h2c. The known HTTP/2
// attacks (rapid reset, CONTINUATION floods, PING and SETTINGS floods,
// HPACK bombs, zero windows and slow readers) each cost a connection a
// bounded amount, and end it with GOAWAY where the protocol allows (see
// DESIGN.md).
//
// # Tasks
//
// A handler's Task, and the body and writer of its request, must be used by
// the connection's task (a read or write from another task or goroutine
// panics with a "weft:" message); a hijacked connection, by any task of
// the Run or any goroutine (see Hijacking). A client response body, HTTP/1.1
// or HTTP/2, may be read by any task of the Run that called Do, on any of
// its loops; from elsewhere a read panics with a "weft:" message (see
// Client.Do).
package whttp
