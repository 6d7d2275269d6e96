package weft

import (
	"io"
	"io/fs"
	"os"
	"sync"
)

// File is one end of a pipe on the loop (see Pipe). It is bound to the
// loop of the first task that reads or writes it, and is then used by that
// loop only.
type File struct {
	fd int // the descriptor, or -1 on systems where a pipe has none

	mu      sync.Mutex // guards the fields below
	loop    *loop
	impl    fileImpl
	os      *os.File // the portable backend's file (or the pipe itself, off Unix)
	closing bool
}

type fileImpl interface {
	read(t *Task, b []byte) (int, error)
	write(t *Task, b []byte) (int, error)
	close() error
}

// bind returns f's implementation on t's loop, making it on first use.
func (f *File) bind(t *Task) (fileImpl, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return nil, &fs.PathError{Op: "read", Path: "pipe", Err: os.ErrClosed}
	}
	if f.impl != nil {
		if f.loop.rs != t.rs {
			panic("weft: File used from a task of another Run: a pipe belongs to the Run that first used it")
		}
		return f.impl, nil
	}
	impl, err := bindFile(t, f)
	if err != nil {
		return nil, err
	}
	f.loop, f.impl = t.loop, impl
	return impl, nil
}

// Read reads up to len(b) bytes, suspending until some are available; it
// returns io.EOF when the write end is closed and the pipe drained. It is a
// cancellation point: if the task is cancelled while it waits, Read returns
// the cause (matching context.Canceled) and nothing was read.
func (f *File) Read(t *Task, b []byte) (int, error) {
	t.check("Read")
	impl, err := f.bind(t)
	if err != nil {
		return 0, err
	}
	return impl.read(t, b)
}

// Write writes all of b, suspending while the pipe is full. Writing to a
// pipe whose read end is closed is an EPIPE error. It is a cancellation
// point while it waits: if the task is cancelled, it returns the count
// written so far and the cause (matching context.Canceled).
func (f *File) Write(t *Task, b []byte) (int, error) {
	t.check("Write")
	impl, err := f.bind(t)
	if err != nil {
		return 0, err
	}
	return impl.write(t, b)
}

// Close closes the pipe end, waking a task suspended on it with an error
// matching os.ErrClosed, as an *os.File would. It does not suspend, and
// may be called from any task or goroutine, more than once (later calls
// return an error matching os.ErrClosed).
func (f *File) Close() error {
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		return &fs.PathError{Op: "close", Path: "pipe", Err: os.ErrClosed}
	}
	f.closing = true
	impl, osf := f.impl, f.os
	f.mu.Unlock()
	switch {
	case impl != nil:
		return impl.close()
	case osf != nil:
		return osf.Close()
	}
	return closeFD(f.fd)
}

// ReadWriter returns an io.ReadWriter that reads and writes f on behalf of
// t, for bufio and io.Copy. Its Read and Write suspend t as f.Read and
// f.Write do, and return the same errors (the cause, matching
// context.Canceled, if t is cancelled). Like t, it may be used only by t's
// own task. ReadWriter itself does not suspend.
func (f *File) ReadWriter(t *Task) io.ReadWriter {
	t.check("ReadWriter")
	return &taskRW{rw: f, t: t}
}

// Fd returns the pipe end's file descriptor (-1 on systems where it has
// none). It does not suspend. The descriptor stays owned by the File: do
// not close it, and wait on it with Readable or Writable only while no
// task reads or writes the File.
func (f *File) Fd() int { return f.fd }
