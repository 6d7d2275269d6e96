// Package resp is a small key-value server that speaks the Redis protocol
// (RESP2), for the bench module: one protocol and one keyspace, served
// either by weft (a task per connection, Serve) or by the net package (a
// goroutine per connection, ServeNet), so that redis-benchmark measures
// the runtime under the same work.
//
// Commands: PING, ECHO, GET, SET (no options), DEL, EXISTS, INCR, DECR,
// MGET, MSET, SELECT 0, DBSIZE, FLUSHALL, CONFIG GET (always an empty
// array: nothing is configurable), COMMAND (an empty array), HELLO
// (protocol 2 only) and QUIT. Requests come as RESP arrays of bulk strings
// or as inline commands (a line of words). Every complete command in the
// read buffer is answered before the next read, and the answers go out in
// one write: a pipelining client's batch costs one read and one write.
package resp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Limits of a request: a larger one is a protocol error and ends the
// connection.
const (
	maxBulk   = 64 << 20 // bytes in one argument
	maxArgs   = 1 << 20  // arguments of one command
	maxInline = 64 << 10 // bytes of an inline command's line
)

// readSize is the read buffer a connection starts with; it grows (up to
// a command's limit) only for a command that does not fit.
const readSize = 16 << 10

// flushSize is how many bytes of answers a connection gathers before it
// writes them, when a read brought more commands than that.
const flushSize = 64 << 10

// errProtocol is a malformed request: the connection answers with an
// error and closes.
var errProtocol = errors.New("resp: protocol error")

// protocolError is a malformed request, with what was wrong.
type protocolError string

func (e protocolError) Error() string        { return "resp: protocol error: " + string(e) }
func (e protocolError) Is(target error) bool { return target == errProtocol }

// parse reads one command from the start of b. It returns the command's
// arguments (slices of b, appended to args[:0]) and the bytes it took; n
// is 0 when b does not yet hold a whole command. A malformed request is
// an error.
func parse(b []byte, args [][]byte) (out [][]byte, n int, err error) {
	args = args[:0]
	if len(b) == 0 {
		return args, 0, nil
	}
	if b[0] != '*' {
		return parseInline(b, args)
	}
	count, p, ok, err := parseLen(b, 1)
	if err != nil || !ok {
		return args, 0, err
	}
	if count > maxArgs {
		return args, 0, protocolError("too many arguments")
	}
	for range count {
		if p >= len(b) {
			return args, 0, nil
		}
		if b[p] != '$' {
			return args, 0, protocolError("expected '$', got " + strconv.QuoteRune(rune(b[p])))
		}
		size, q, ok, err := parseLen(b, p+1)
		if err != nil || !ok {
			return args, 0, err
		}
		if size < 0 || size > maxBulk {
			return args, 0, protocolError("invalid bulk length")
		}
		if len(b)-q < size+2 {
			return args, 0, nil
		}
		if b[q+size] != '\r' || b[q+size+1] != '\n' {
			return args, 0, protocolError("bulk string not ended by CRLF")
		}
		args = append(args, b[q:q+size:q+size])
		p = q + size + 2
	}
	return args, p, nil
}

// parseLen reads the decimal number that starts at b[p] and its CRLF. It
// returns the number, where the next element starts, and ok = false when
// b ends first.
func parseLen(b []byte, p int) (v, next int, ok bool, err error) {
	neg := false
	if p < len(b) && b[p] == '-' {
		neg = true
		p++
	}
	start := p
	for ; p < len(b); p++ {
		c := b[p]
		if c == '\r' {
			break
		}
		if c < '0' || c > '9' || p-start >= 10 {
			return 0, 0, false, protocolError("invalid length")
		}
		v = v*10 + int(c-'0')
	}
	if p+1 >= len(b) {
		return 0, 0, false, nil
	}
	if p == start || b[p+1] != '\n' {
		return 0, 0, false, protocolError("invalid length")
	}
	if neg {
		v = -v
	}
	return v, p + 2, true, nil
}

// parseInline reads an inline command: words separated by spaces, ended
// by LF or CRLF.
func parseInline(b []byte, args [][]byte) ([][]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > maxInline {
			return args, 0, protocolError("inline command too long")
		}
		return args, 0, nil
	}
	line := b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	for {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			break
		}
		j := bytes.IndexAny(line, " \t")
		if j < 0 {
			j = len(line)
		}
		args = append(args, line[:j:j])
		line = line[j:]
	}
	return args, i + 1, nil
}

// conn is one connection's state: its buffers and the keyspace.
type conn struct {
	rw   io.ReadWriter
	kv   session
	in   []byte   // read buffer; in[:end] holds unparsed bytes
	out  []byte   // answers not yet written
	args [][]byte // the current command's arguments
}

// serveConn answers the commands read from rw until the peer closes its
// side (nil), sends QUIT (nil), sends a malformed request (answered, then
// an error), or a read or write fails (that error).
func serveConn(rw io.ReadWriter, kv session) error {
	c := &conn{rw: rw, kv: kv, in: make([]byte, readSize), out: make([]byte, 0, readSize), args: make([][]byte, 0, 8)}
	end := 0
	for {
		if end == len(c.in) { // one command larger than the buffer
			if len(c.in) >= 2*maxBulk {
				return protocolError("command too large")
			}
			c.in = append(c.in, make([]byte, len(c.in))...)
		}
		n, rerr := rw.Read(c.in[end:])
		end += n
		used, quit, err := c.answer(c.in[:end])
		if len(c.out) > 0 {
			if _, werr := rw.Write(c.out); werr != nil {
				return werr
			}
			c.out = c.out[:0]
		}
		if err != nil || quit {
			return err
		}
		end = copy(c.in, c.in[used:end])
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// answer answers every complete command in b, writing whenever a flush's
// worth of answers has gathered, and returns the bytes it took, whether a
// QUIT came, and a malformed request's error (after its answer).
func (c *conn) answer(b []byte) (used int, quit bool, err error) {
	for {
		args, n, perr := parse(b[used:], c.args)
		c.args = args
		if perr != nil {
			c.out = appendError(c.out, "ERR Protocol error: "+perr.(protocolError).msg())
			return used, false, perr
		}
		if n == 0 {
			return used, false, nil
		}
		used += n
		if len(args) == 0 {
			continue // an empty inline line
		}
		if c.out, quit, err = exec(c.out, args, c.kv); err != nil || quit {
			return used, quit, err
		}
		if len(c.out) >= flushSize {
			if _, err := c.rw.Write(c.out); err != nil {
				return used, false, err
			}
			c.out = c.out[:0]
		}
	}
}

func (e protocolError) msg() string { return string(e) }
