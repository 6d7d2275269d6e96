package weft

// A Conn's io.ReaderFrom (on NetConn's and LoopConn's net.Conn): a copy
// from a regular file (an *os.File, or an io.LimitedReader of one, which
// is what io.CopyN and http.ServeContent pass) goes through sendfile(2)
// where the backend has it: the kernel copies from the page cache to the
// socket, and a full socket suspends the task, as Write does. Anything
// else is copied through a buffer with Write.

import (
	"io"
	"os"
)

// sendFiler is a connImpl that can send from a file: sendFile sends up to
// n bytes (n > 0) of f from its current offset, which it advances by what
// was sent. handled false: it did nothing, and the caller copies instead.
type sendFiler interface {
	sendFile(t *Task, f *os.File, n int64) (written int64, handled bool, err error)
}

// fileOf returns the file r reads and how much of it (-1: to its end),
// when r is an *os.File or io.LimitedReaders of one; the LimitedReaders
// to charge with what is sent.
func fileOf(r io.Reader) (f *os.File, n int64, lrs []*io.LimitedReader) {
	n = -1
	for {
		switch x := r.(type) {
		case *os.File:
			return x, n, lrs
		case *io.LimitedReader:
			if n < 0 || x.N < n {
				n = x.N
			}
			lrs = append(lrs, x)
			r = x.R
		default:
			return nil, 0, nil
		}
	}
}

// readFrom copies r to c on behalf of t (see above).
func (c *Conn) readFrom(t *Task, r io.Reader) (int64, error) {
	if sf, ok := c.impl.(sendFiler); ok {
		if f, n, lrs := fileOf(r); f != nil {
			if n == 0 {
				return 0, nil
			}
			written, handled, err := c.sendFile(t, sf, f, n)
			for _, lr := range lrs {
				lr.N -= written
			}
			if handled {
				return written, err
			}
		}
	}
	return io.Copy(writerOnly{taskWriter{c: c, t: t}}, r)
}

// sendFile is sendFiler.sendFile with Write's deadline and home-loop
// rules.
func (c *Conn) sendFile(t *Task, sf sendFiler, f *os.File, n int64) (int64, bool, error) {
	t.check("ReadFrom")
	sameLoop(t, c.loop, "Conn")
	if err := c.toHome(t); err != nil {
		return 0, true, opError("sendfile", c.network, c.impl.localAddr(), c.impl.remoteAddr(), err)
	}
	d := &c.dl.wr
	t.pin++
	if err := d.enter(c.loop, t); err != nil {
		t.pin--
		return 0, true, opError("sendfile", c.network, c.impl.localAddr(), c.impl.remoteAddr(), err)
	}
	written, handled, err := sf.sendFile(t, f, n)
	d.exit(c.loop, t)
	t.pin--
	return written, handled, err
}

// taskWriter writes c on behalf of t.
type taskWriter struct {
	c *Conn
	t *Task
}

func (w taskWriter) Write(b []byte) (int, error) { return w.c.Write(w.t, b) }

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }
