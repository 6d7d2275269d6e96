package whttp

// The connection's input: the buffer (inbuf, part of the reqState) that a
// request's head and body are read through, and the reads that fill it. A
// read from the connection first sends what the response holds, so the
// client never waits for output while the server waits for input.

import (
	"bytes"
	"errors"
	"io"
)

// inSize is the input buffer's usual size; a larger head grows it for one
// request.
const inSize = 4 << 10

// inbuf is the connection's input buffer: buf[r:w] is read and not yet
// consumed.
type inbuf struct {
	buf  []byte
	r, w int
}

func (b *inbuf) buffered() int { return b.w - b.r }

// readSome reads into p from the input buffer, or from the connection when
// the buffer is empty (straight into p when p is large).
func (c *conn) readSome(p []byte) (int, error) {
	in := &c.st.in
	if in.buffered() == 0 {
		if len(p) >= len(in.buf) {
			return c.readConn(p)
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, in.buf[in.r:in.w])
	in.r += n
	return n, nil
}

// fill reads more input into the buffer, after what it holds (moving that
// to the front when the end is reached). The buffer must have room.
func (c *conn) fill() error {
	in := &c.st.in
	if in.r == in.w {
		in.r, in.w = 0, 0
	} else if in.w == len(in.buf) && in.r > 0 {
		in.w = copy(in.buf, in.buf[in.r:in.w])
		in.r = 0
	}
	if in.w == len(in.buf) {
		return errors.New("whttp: input buffer full") // callers make room first
	}
	n, err := c.readConn(in.buf[in.w:])
	in.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readConn reads from the connection, first sending what the response has
// buffered: a client never waits for output the server holds while the
// server waits for input.
func (c *conn) readConn(p []byte) (int, error) {
	if bw := c.st.bw; bw.Buffered() > 0 {
		if err := bw.Flush(); err != nil {
			return 0, err
		}
	}
	return c.nc.Read(p)
}

// readLine returns the next line of input without its CRLF, reading more
// as needed; a line longer than limit is tooLong, and a bare LF or CR is a
// framing error. The line is a copy (a string): the buffer may move.
func (c *conn) readLine(limit int, tooLong error) (string, error) {
	in := &c.st.in
	for {
		buf := in.buf[in.r:in.w]
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if i == 0 || buf[i-1] != '\r' {
				return "", &bodyError{"line ends with a bare LF"}
			}
			if i-1 > limit {
				return "", tooLong
			}
			line := buf[:i-1]
			if bytes.IndexByte(line, '\r') >= 0 {
				return "", &bodyError{"bare CR"}
			}
			in.r += i + 1
			return string(line), nil
		}
		if len(buf) > limit+1 {
			return "", tooLong
		}
		if in.r > 0 || in.w < len(in.buf) {
			if err := c.fill(); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return "", err
			}
			continue
		}
		return "", tooLong // a full buffer without a line end
	}
}

// expect2 consumes the two bytes want, reading as needed.
func (c *conn) expect2(want string) error {
	in := &c.st.in
	for in.buffered() < 2 {
		if err := c.fill(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	if string(in.buf[in.r:in.r+2]) != want {
		return &bodyError{"chunk data not followed by CRLF"}
	}
	in.r += 2
	return nil
}
