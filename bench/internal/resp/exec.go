package resp

import (
	"bytes"
	"strconv"
)

// exec runs one command and appends its answer to out. quit is set by
// QUIT; err is the keyspace's (a weft lock's cancellation), which ends
// the connection.
func exec(out []byte, args [][]byte, kv session) (_ []byte, quit bool, err error) {
	name, args := args[0], args[1:]
	switch {
	case is(name, "GET"):
		if len(args) != 1 {
			return arity(out, name), false, nil
		}
		out, err = kv.get(out, args[0])
	case is(name, "SET"):
		if len(args) != 2 {
			if len(args) > 2 {
				return appendError(out, "ERR SET options are not supported here"), false, nil
			}
			return arity(out, name), false, nil
		}
		if err = kv.set(args[0], args[1]); err == nil {
			out = append(out, "+OK\r\n"...)
		}
	case is(name, "PING"):
		switch len(args) {
		case 0:
			out = append(out, "+PONG\r\n"...)
		case 1:
			out = appendBulk(out, args[0])
		default:
			out = arity(out, name)
		}
	case is(name, "INCR"), is(name, "DECR"):
		if len(args) != 1 {
			return arity(out, name), false, nil
		}
		delta := int64(1)
		if is(name, "DECR") {
			delta = -1
		}
		var v int64
		var ok bool
		if v, ok, err = kv.incr(args[0], delta); err == nil {
			if ok {
				out = appendInt(out, v)
			} else {
				out = appendError(out, "ERR value is not an integer or out of range")
			}
		}
	case is(name, "DEL"), is(name, "EXISTS"):
		if len(args) == 0 {
			return arity(out, name), false, nil
		}
		del := is(name, "DEL")
		var n int64
		for _, k := range args {
			var found bool
			if found, err = kv.has(k, del); err != nil {
				break
			}
			if found {
				n++
			}
		}
		out = appendInt(out, n)
	case is(name, "MGET"):
		if len(args) == 0 {
			return arity(out, name), false, nil
		}
		out = appendHeader(out, '*', len(args))
		for _, k := range args {
			if out, err = kv.get(out, k); err != nil {
				break
			}
		}
	case is(name, "MSET"):
		if len(args) == 0 || len(args)%2 != 0 {
			return arity(out, name), false, nil
		}
		for i := 0; i < len(args) && err == nil; i += 2 {
			err = kv.set(args[i], args[i+1])
		}
		out = append(out, "+OK\r\n"...)
	case is(name, "ECHO"):
		if len(args) != 1 {
			return arity(out, name), false, nil
		}
		out = appendBulk(out, args[0])
	case is(name, "DBSIZE"):
		var n int
		if n, err = kv.size(); err == nil {
			out = appendInt(out, int64(n))
		}
	case is(name, "FLUSHALL"), is(name, "FLUSHDB"):
		if err = kv.flush(); err == nil {
			out = append(out, "+OK\r\n"...)
		}
	case is(name, "SELECT"):
		if len(args) != 1 {
			return arity(out, name), false, nil
		}
		if string(args[0]) != "0" {
			return appendError(out, "ERR DB index is out of range"), false, nil
		}
		out = append(out, "+OK\r\n"...)
	case is(name, "CONFIG"):
		// redis-benchmark reads "save" and "appendonly" at start; there
		// is nothing to configure, so every pattern matches nothing.
		if len(args) < 2 || !is(args[0], "GET") {
			return appendError(out, "ERR only CONFIG GET is supported here"), false, nil
		}
		out = append(out, "*0\r\n"...)
	case is(name, "COMMAND"):
		out = append(out, "*0\r\n"...) // no command table to show
	case is(name, "HELLO"):
		if len(args) > 0 && string(args[0]) != "2" {
			return appendError(out, "NOPROTO this server speaks RESP2 only"), false, nil
		}
		out = appendHeader(out, '*', 6)
		out = appendBulk(out, []byte("server"))
		out = appendBulk(out, []byte("weft-bench-resp"))
		out = appendBulk(out, []byte("version"))
		out = appendBulk(out, []byte("7.0.0"))
		out = appendBulk(out, []byte("proto"))
		out = appendInt(out, 2)
	case is(name, "QUIT"):
		return append(out, "+OK\r\n"...), true, nil
	default:
		return appendError(out, "ERR unknown command '"+printable(name)+"'"), false, nil
	}
	return out, false, err
}

// is reports whether name is the command cmd (given in upper case), in
// any case.
func is(name []byte, cmd string) bool {
	if len(name) != len(cmd) {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != cmd[i] {
			return false
		}
	}
	return true
}

// arity is the answer to a command with the wrong number of arguments.
func arity(out, name []byte) []byte {
	return appendError(out, "ERR wrong number of arguments for '"+printable(bytes.ToLower(name))+"' command")
}

// printable is s for an error message: at most 64 bytes, control
// characters and CR/LF replaced, so an answer stays one line.
func printable(s []byte) string {
	if len(s) > 64 {
		s = s[:64]
	}
	b := make([]byte, len(s))
	for i, c := range s {
		if c < ' ' || c == 0x7f {
			c = '?'
		}
		b[i] = c
	}
	return string(b)
}

func appendError(out []byte, msg string) []byte {
	out = append(out, '-')
	out = append(out, msg...)
	return append(out, "\r\n"...)
}

func appendInt(out []byte, v int64) []byte {
	out = append(out, ':')
	out = strconv.AppendInt(out, v, 10)
	return append(out, "\r\n"...)
}

func appendHeader(out []byte, kind byte, n int) []byte {
	out = append(out, kind)
	out = strconv.AppendInt(out, int64(n), 10)
	return append(out, "\r\n"...)
}

func appendBulk(out, b []byte) []byte {
	out = appendHeader(out, '$', len(b))
	out = append(out, b...)
	return append(out, "\r\n"...)
}

// appendNull is the answer for a missing key.
func appendNull(out []byte) []byte { return append(out, "$-1\r\n"...) }
