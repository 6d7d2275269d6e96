package weft

// A Conn as a net.Conn, for code written against the net package's
// interface: crypto/tls, net/http's types, protocol libraries. NetConn
// binds the Conn to one task, as ReadWriter does; LoopConn acts for
// whichever task of the Conn's Run calls it.

import (
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weft-go/weft/internal/loophook"
)

func init() {
	loophook.Key = func(t any) any {
		tt := t.(*Task)
		tt.check("loophook.Key")
		return tt.rs
	}
	loophook.AtEnd = func(t any, f func()) {
		tt := t.(*Task)
		tt.check("loophook.AtEnd")
		h := layerState(tt.loop, endHooksKey{}, func() (*endHooks, func()) {
			h := &endHooks{}
			return h, h.run
		})
		h.mu.Lock()
		h.fns = append(h.fns, f)
		h.mu.Unlock()
	}
}

// endHooks are the functions loophook.AtEnd registered for a Run.
type endHooks struct {
	mu  sync.Mutex
	fns []func()
}

type endHooksKey struct{}

func (h *endHooks) run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// NetConn returns a net.Conn that reads and writes c on behalf of t, for
// crypto/tls (tls.Server(c.NetConn(t), cfg)) and any code written against
// net.Conn. Its Read and Write suspend t, as c.Read and c.Write do, and
// return the same errors: the cause (matching context.Canceled) if t is
// cancelled, an error matching os.ErrDeadlineExceeded past a deadline.
// Like t, its Read and Write may be used only by t's own task: from another
// task or goroutine they panic with a "weft:" message. Its Close,
// SetDeadline, SetReadDeadline and SetWriteDeadline are c's, callable from
// anywhere. It also has c's CloseWrite, and io.ReaderFrom: io.Copy from a
// regular file (an *os.File, or an io.LimitedReader of one) sends it with
// sendfile(2) on Linux, suspending t while the socket is full, as Write
// does (the file is read from the page cache: a file not cached makes the
// call wait for the disk, holding the loop as a blocking read would).
func (c *Conn) NetConn(t *Task) net.Conn {
	t.check("NetConn")
	sameLoop(t, c.loop, "Conn")
	return &taskConn{Conn: c, t: t}
}

// LoopConn returns a net.Conn that reads and writes c on behalf of
// whichever task of c's Run calls it (moving it to c's loop): a reader
// task and a writer task can share it, and a value built on it (a
// response body, say) can be handed from task to task of the Run. Its Read
// and Write suspend the calling task, as c.Read and c.Write do, and return
// the same errors (the cause, matching context.Canceled, if that task is
// cancelled); called from outside the tasks of c's Run they panic with a
// "weft:" message (GoConn is for goroutines). The other methods are as
// NetConn's. LoopConn itself does not suspend.
//
// A tls.Conn made on it may be used by one task at a time only: crypto/tls
// holds sync.Mutexes across its calls of Read and Write, and a task that
// suspends there while another task enters the same tls.Conn (a reader
// sending an alert while a writer waits for room) blocks the loop for
// good. For TLS that a reader and a writer task share, use TLSClient or
// TLSServer. LoopConn panics with a "weft:" message when it finds two
// tasks inside crypto/tls over it at once; that catches the pattern when
// both reach the Conn, not when one blocks inside crypto/tls first, so it
// is a help, not a guard.
func (c *Conn) LoopConn() net.Conn { return &loopConn{Conn: c} }

type taskConn struct {
	*Conn
	t *Task
}

func (tc *taskConn) Read(b []byte) (int, error)  { return tc.Conn.Read(tc.t, b) }
func (tc *taskConn) Write(b []byte) (int, error) { return tc.Conn.Write(tc.t, b) }

// ReadFrom is io.ReaderFrom: sendfile(2) from a regular file
// (net_sendfile.go).
func (tc *taskConn) ReadFrom(r io.Reader) (int64, error) { return tc.Conn.readFrom(tc.t, r) }

type loopConn struct {
	*Conn
	inTLS atomic.Int32 // calls from crypto/tls in progress
}

func (lc *loopConn) Read(b []byte) (int, error) {
	t := lc.current("Read")
	if calledFromTLS() {
		lc.enterTLS()
		defer lc.inTLS.Add(-1)
	}
	return lc.Conn.Read(t, b)
}

func (lc *loopConn) Write(b []byte) (int, error) {
	t := lc.current("Write")
	if calledFromTLS() {
		lc.enterTLS()
		defer lc.inTLS.Add(-1)
	}
	return lc.Conn.Write(t, b)
}

// enterTLS counts a call from crypto/tls, and panics if another task's is
// in progress: two tasks inside one tls.Conn over a LoopConn, the pattern
// that can block the loop (see LoopConn).
func (lc *loopConn) enterTLS() {
	if lc.inTLS.Add(1) > 1 {
		lc.inTLS.Add(-1)
		panic("weft: two tasks are inside one crypto/tls Conn over a LoopConn at once: crypto/tls holds sync.Mutexes across its reads and writes, so another task entering it can block the loop for good; use weft.TLSClient or weft.TLSServer for TLS that several tasks share, or one task per tls.Conn")
	}
}

// calledFromTLS reports whether crypto/tls is among the first callers of
// the LoopConn method calling it (a frame-pointer walk, and a cache of
// the answer per return address).
func calledFromTLS() bool {
	var pcs [6]uintptr
	n := fpCallers(pcs[:])
	for _, pc := range pcs[:n] {
		if v, ok := tlsPCs.Load(pc); ok {
			if v.(bool) {
				return true
			}
			continue
		}
		f := runtime.FuncForPC(pc - 1)
		is := f != nil && strings.HasPrefix(f.Name(), "crypto/tls.")
		tlsPCs.Store(pc, is)
		if is {
			return true
		}
	}
	return false
}

// tlsPCs caches calledFromTLS's answer per return address.
var tlsPCs sync.Map

// ReadFrom is io.ReaderFrom: sendfile(2) from a regular file
// (net_sendfile.go).
func (lc *loopConn) ReadFrom(r io.Reader) (int64, error) {
	return lc.Conn.readFrom(lc.current("ReadFrom"), r)
}

// current returns the task of c's Run that is running the caller.
func (lc *loopConn) current(op string) *Task {
	t := currentTask()
	if t == nil || t.rs != lc.loop.rs {
		panic("weft: " + op + " on a LoopConn called outside the tasks of its Run")
	}
	return t
}
