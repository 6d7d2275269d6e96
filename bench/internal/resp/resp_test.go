package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a running server under test.
type server struct {
	addr string
	stop func() error // closes the listener and waits for the server
}

// startWeft runs Serve in a weft Run with the given options, in a
// goroutine; stop closes the listener and returns Run's error.
func startWeft(t *testing.T, opts ...weft.Option) server {
	t.Helper()
	addrc := make(chan string, 1)
	lnc := make(chan *weft.Listener, 1)
	done := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				return struct{}{}, err
			}
			lnc <- ln
			addrc <- ln.Addr().String()
			return struct{}{}, Serve(wt, ln, NewWeftStore())
		}, opts...)
		done <- err
		close(addrc)
	}()
	addr, ok := <-addrc
	if !ok {
		t.Fatalf("weft server: %v", <-done)
	}
	ln := <-lnc
	return server{addr: addr, stop: func() error { ln.Close(); return <-done }}
}

// startNet runs ServeNet in a goroutine.
func startNet(t *testing.T) server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeNet(ln, NewNetStore()) }()
	return server{addr: ln.Addr().String(), stop: func() error { ln.Close(); return <-done }}
}

// servers are the servers every test drives.
var servers = []struct {
	name  string
	start func(t *testing.T) server
}{
	{"weft-epoll", func(t *testing.T) server { return startWeft(t, weft.WithBackend(weft.BackendEpoll)) }},
	{"weft-uring", func(t *testing.T) server { return startWeft(t, weft.WithBackend(weft.BackendIOUring)) }},
	{"weft-portable", func(t *testing.T) server { return startWeft(t, weft.WithBackend(weft.BackendPortable)) }},
	{"weft-2loops", func(t *testing.T) server { return startWeft(t, weft.WithLoops(2)) }},
	{"weft-2loops-uring", func(t *testing.T) server {
		return startWeft(t, weft.WithLoops(2), weft.WithBackend(weft.BackendIOUring))
	}},
	{"net", startNet},
}

// client is a small RESP client: it writes commands and reads answers,
// each answer as its text with CRLF turned into spaces' worth of
// structure (see readAnswer).
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails, not blocks
	return &client{c: c, r: bufio.NewReader(c)}
}

// encode appends a command as a RESP array of bulk strings.
func encode(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// readAnswer reads one answer and renders it: +S, -E, :N, $-1 as nil,
// bulk strings quoted, arrays as [a b ...].
func (c *client) readAnswer() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") || len(line) < 3 {
		return "", fmt.Errorf("bad answer line %q", line)
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "nil", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return "", err
		}
		if string(b[n:]) != "\r\n" {
			return "", fmt.Errorf("bulk string not ended by CRLF: %q", b)
		}
		return strconv.Quote(string(b[:n])), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		parts := make([]string, n)
		for i := range parts {
			if parts[i], err = c.readAnswer(); err != nil {
				return "", err
			}
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", fmt.Errorf("bad answer line %q", line)
}

// do sends one command and returns its answer.
func (c *client) do(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := c.c.Write(encode(nil, args...)); err != nil {
		t.Fatal(err)
	}
	a, err := c.readAnswer()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return a
}

// exchange is a command and the answer it must get.
type exchange struct {
	cmd  []string
	want string
}

// script is a conversation that a fresh server must answer as shown.
var script = []exchange{
	{[]string{"PING"}, "+PONG"},
	{[]string{"ping", "hello"}, `"hello"`},
	{[]string{"GET", "k"}, "nil"},
	{[]string{"SET", "k", "v1"}, "+OK"},
	{[]string{"get", "k"}, `"v1"`},
	{[]string{"SET", "k", "a longer value"}, "+OK"},
	{[]string{"GET", "k"}, `"a longer value"`},
	{[]string{"SET", "k", "v"}, "+OK"},
	{[]string{"GET", "k"}, `"v"`},
	{[]string{"SET", "empty", ""}, "+OK"},
	{[]string{"GET", "empty"}, `""`},
	{[]string{"INCR", "n"}, ":1"},
	{[]string{"INCR", "n"}, ":2"},
	{[]string{"DECR", "n"}, ":1"},
	{[]string{"INCR", "k"}, "-ERR value is not an integer or out of range"},
	{[]string{"SET", "big", "9223372036854775807"}, "+OK"},
	{[]string{"INCR", "big"}, "-ERR value is not an integer or out of range"},
	{[]string{"MGET", "k", "missing", "n"}, `["v" nil "1"]`},
	{[]string{"EXISTS", "k", "missing", "n"}, ":2"},
	{[]string{"DEL", "k", "missing", "n"}, ":2"},
	{[]string{"GET", "k"}, "nil"},
	{[]string{"MSET", "a", "1", "b", "2"}, "+OK"},
	{[]string{"DBSIZE"}, ":4"},
	{[]string{"CONFIG", "GET", "save"}, "[]"},
	{[]string{"CONFIG", "SET", "save", ""}, "-ERR only CONFIG GET is supported here"},
	{[]string{"COMMAND", "DOCS"}, "[]"},
	{[]string{"HELLO", "2"}, `["server" "weft-bench-resp" "version" "7.0.0" "proto" :2]`},
	{[]string{"HELLO", "3"}, "-NOPROTO this server speaks RESP2 only"},
	{[]string{"SELECT", "0"}, "+OK"},
	{[]string{"SELECT", "1"}, "-ERR DB index is out of range"},
	{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command"},
	{[]string{"SET", "k", "v", "EX", "10"}, "-ERR SET options are not supported here"},
	{[]string{"NOSUCH", "x"}, "-ERR unknown command 'NOSUCH'"},
	{[]string{"FLUSHALL"}, "+OK"},
	{[]string{"DBSIZE"}, ":0"},
	{[]string{"ECHO", "bye"}, `"bye"`},
}

// TestScript sends the script one command at a time, then all of it in
// one write (pipelined), then one byte per write, to each server.
func TestScript(t *testing.T) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			fds := openFDs(t)
			srv := s.start(t)
			c := dial(t, srv.addr)
			for _, e := range script {
				if got := c.do(t, e.cmd...); got != e.want {
					t.Errorf("%v: got %s, want %s", e.cmd, got, e.want)
				}
			}
			var all []byte
			for _, e := range script {
				all = encode(all, e.cmd...)
			}
			check := func(how string) {
				for _, e := range script {
					got, err := c.readAnswer()
					if err != nil {
						t.Fatalf("%s: %v: %v", how, e.cmd, err)
					}
					if got != e.want {
						t.Errorf("%s: %v: got %s, want %s", how, e.cmd, got, e.want)
					}
				}
			}
			if _, err := c.c.Write(all); err != nil {
				t.Fatal(err)
			}
			check("pipelined")
			for i := range all {
				if _, err := c.c.Write(all[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
			check("byte by byte")
			if got := c.do(t, "QUIT"); got != "+OK" {
				t.Errorf("QUIT: %s", got)
			}
			if _, err := c.r.ReadByte(); err != io.EOF {
				t.Errorf("after QUIT: read %v, want EOF", err)
			}
			c.c.Close()
			if err := srv.stop(); err != nil {
				t.Fatal(err)
			}
			checkFDs(t, fds)
		})
	}
}

// TestLargeAndInline sends a value larger than the read buffer (in one
// pipelined batch with commands around it), inline commands, and a
// malformed request, which is answered with an error before the server
// closes the connection.
func TestLargeAndInline(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10000) // 160,000 bytes
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			srv := s.start(t)
			defer func() {
				if err := srv.stop(); err != nil {
					t.Fatal(err)
				}
			}()
			c := dial(t, srv.addr)
			defer c.c.Close()
			var b []byte
			b = encode(b, "SET", "big", big)
			b = encode(b, "GET", "big")
			b = encode(b, "PING")
			if _, err := c.c.Write(b); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"+OK", strconv.Quote(big), "+PONG"} {
				got, err := c.readAnswer()
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("got %.40q..., want %.40q...", got, want)
				}
			}
			if _, err := c.c.Write([]byte("SET inl  value\r\nGET inl\nPING\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"+OK", `"value"`, "+PONG"} {
				if got, err := c.readAnswer(); err != nil || got != want {
					t.Fatalf("inline: got %q, %v; want %s", got, err, want)
				}
			}
			if _, err := c.c.Write([]byte("*1\r\n+PING\r\n")); err != nil {
				t.Fatal(err)
			}
			if got, err := c.readAnswer(); err != nil || !strings.HasPrefix(got, "-ERR Protocol error") {
				t.Fatalf("malformed: got %q, %v", got, err)
			}
			if _, err := c.r.ReadByte(); err != io.EOF {
				t.Errorf("after a protocol error: read %v, want EOF", err)
			}
		})
	}
}

// TestConcurrentIncr has 8 connections each send 500 INCRs of one key
// and 500 SET/GET pairs of keys of their own, in pipelined batches of
// 50, so that on two loops (or threads) tasks contend for the shards;
// the counter must end at 4000 and every GET must see its connection's
// last SET.
func TestConcurrentIncr(t *testing.T) {
	const conns, per, batch = 8, 500, 50
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			srv := s.start(t)
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- incrClient(srv.addr, i, per, batch)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			c := dial(t, srv.addr)
			if got := c.do(t, "GET", "counter"); got != strconv.Quote(strconv.Itoa(conns*per)) {
				t.Errorf("counter: %s, want %d", got, conns*per)
			}
			c.c.Close()
			if err := srv.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// incrClient is one connection of TestConcurrentIncr.
func incrClient(addr string, id, per, batch int) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	c := &client{c: nc, r: bufio.NewReader(nc)}
	key := "key:" + strconv.Itoa(id)
	for i := 0; i < per; i += batch {
		var b []byte
		for j := i; j < i+batch; j++ {
			b = encode(b, "INCR", "counter")
			b = encode(b, "SET", key, strconv.Itoa(j))
			b = encode(b, "GET", key)
		}
		if _, err := nc.Write(b); err != nil {
			return err
		}
		for j := i; j < i+batch; j++ {
			a, err := c.readAnswer()
			if err != nil {
				return err
			}
			if !strings.HasPrefix(a, ":") {
				return fmt.Errorf("INCR: %s", a)
			}
			if a, err = c.readAnswer(); err != nil || a != "+OK" {
				return fmt.Errorf("SET: %s, %v", a, err)
			}
			if a, err = c.readAnswer(); err != nil || a != strconv.Quote(strconv.Itoa(j)) {
				return fmt.Errorf("GET %s: %s, %v; want %d", key, a, err, j)
			}
		}
	}
	return nil
}

// TestParse checks the parser on partial input: every strict prefix of a
// command is incomplete (n = 0, no error) and the whole is one command.
func TestParse(t *testing.T) {
	cmd := encode(nil, "SET", "key", "a value")
	for i := range len(cmd) {
		args, n, err := parse(cmd[:i], nil)
		if n != 0 || err != nil {
			t.Fatalf("prefix %q: %q, %d, %v", cmd[:i], args, n, err)
		}
	}
	args, n, err := parse(append(cmd, "*1\r\n"...), nil)
	if err != nil || n != len(cmd) || len(args) != 3 || string(args[2]) != "a value" {
		t.Fatalf("whole: %q, %d, %v", args, n, err)
	}
	for _, bad := range []string{"*x\r\n", "*1\r\n:1\r\n", "*1\r\n$3\r\nabcde\r\n", "*1\r\n$-5\r\n", "*1\r\n$99999999999\r\n"} {
		if _, _, err := parse([]byte(bad), nil); !errors.Is(err, errProtocol) {
			t.Errorf("%q: %v, want a protocol error", bad, err)
		}
	}
}

// TestWrongStore checks that a Store is used only by its own kind of
// server.
func TestWrongStore(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "NewNetStore") {
			t.Errorf("recovered %v", r)
		}
	}()
	NewWeftStore().netSession()
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// checkFDs fails if more descriptors are open than n (closing a socket
// may lag a moment behind the server's return on the portable backend).
func checkFDs(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := openFDs(t)
		if got <= n {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d descriptors open, %d before", got, n)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
