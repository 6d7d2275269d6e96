package main

// whttp's measurements beside net/http in the same run:
//
//	go run . hangup  [-n 200]                      # how soon a handler sees its client leave
//	go run . sendfile [-pin 0:1] [-reps 3]         # a 5 MB static file: server CPU per request
//	go run . wsidle  [-n 10000]                    # bytes per idle WebSocket connection
//
// hangup runs servers and clients in this process (it measures a delay,
// not a cost); sendfile and wsidle start each server as a child process
// (`bench whttp-serve KIND ADDR [DIR]`) and load it from this one.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// whttpServeMode starts a server child of sendfile or wsidle.
const whttpServeMode = "whttp-serve"

// ---- hangup

// hangupKinds are the waits a handler is in when its client leaves.
var hangupKinds = []string{"whttp/Sleep", "whttp/Recv", "whttp/weft.Blocking", "whttp/whttp.Blocking", "whttp/Write", "net-http/ctx", "net-http/Write"}

func hangupMain(args []string) error {
	fs := flag.NewFlagSet("hangup", flag.ContinueOnError)
	n := fs.Int("n", 200, "clients per kind")
	if err := fs.Parse(args); err != nil {
		return err
	}
	noticed := make(chan time.Time, 1)
	ready := make(chan struct{}, 1)
	note := func() {
		select {
		case noticed <- time.Now():
		default:
		}
	}
	// whttp, one loop, a goroutine of its own.
	wh := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		ready <- struct{}{}
		switch r.URL.Path {
		case "/Sleep":
			t.Sleep(time.Hour)
		case "/Recv":
			weft.NewChan[int](0).Recv(t)
		case "/weft.Blocking":
			whttp.BlockingCall(r, func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, nil })
		case "/Write":
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					break
				}
			}
		}
		note()
	})
	blocking := whttp.Blocking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready <- struct{}{}
		<-r.Context().Done()
		note()
	}))
	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/whttp.Blocking" {
			blocking.ServeHTTP(t, w, r)
			return
		}
		wh.ServeHTTP(t, w, r)
	})}
	waddr := make(chan string, 1)
	wdone := make(chan error, 1)
	var serving *weft.Promise[struct{}]
	go func() {
		_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
			if err != nil {
				waddr <- ""
				return struct{}{}, err
			}
			serving = weft.Go(t, func(t *weft.Task) (struct{}, error) { return struct{}{}, srv.Serve(t, ln) })
			waddr <- ln.Addr().String()
			return serving.Await(t)
		})
		wdone <- err
	}()
	wa := <-waddr
	if wa == "" {
		return errors.New("whttp server did not start")
	}
	// net/http.
	nln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ns := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready <- struct{}{}
		if r.URL.Path == "/Write" {
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					break
				}
			}
		} else {
			<-r.Context().Done()
		}
		note()
	})}
	go ns.Serve(nln)
	defer ns.Close()

	fmt.Printf("bench hangup: %d clients per kind, one at a time; the client closes its connection (FIN; with unread data, the kernel resets it) once the handler waits; the delay is from the close to the handler's wait ending\n\n", *n)
	fmt.Println("| server/wait | p50 | p90 | p99 | max |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	for _, kind := range hangupKinds {
		server, path, _ := strings.Cut(kind, "/")
		addr := wa
		if server == "net-http" {
			addr = nln.Addr().String()
		}
		var ds []time.Duration
		for range *n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err
			}
			if path == "Write" {
				c.(*net.TCPConn).SetReadBuffer(4 << 10)
			}
			fmt.Fprintf(c, "GET /%s HTTP/1.1\r\nHost: bench\r\n\r\n", path)
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s: the handler did not start", kind)
			}
			if path == "Write" {
				time.Sleep(5 * time.Millisecond) // the handler's writes wait
			}
			t0 := time.Now()
			c.Close()
			select {
			case t1 := <-noticed:
				ds = append(ds, t1.Sub(t0))
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s: the handler did not see its client leave", kind)
			}
		}
		slices.Sort(ds)
		q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
		fmt.Printf("| %s | %v | %v | %v | %v |\n", kind, q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond), q(0.99).Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond))
	}
	serving.Cancel()
	return <-wdone
}

// ---- sendfile

func sendfileMain(args []string) error {
	fs := flag.NewFlagSet("sendfile", flag.ContinueOnError)
	dur := fs.Duration("duration", 5*time.Second, "wrk's time per measurement")
	reps := fs.Int("reps", 3, "measurements per server, interleaved")
	conns := fs.Int("conns", 4, "wrk's connections")
	size := fs.Int("size", 5<<20, "the file's size")
	pin := fs.String("pin", "", "SERVERCPU:LOADCPU: pin the server to one CPU and wrk to another")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := parsePin(*pin)
	if err != nil {
		return err
	}
	if err := pinLoad(p); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-sendfile")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := make([]byte, *size)
	for i := range data {
		data[i] = byte(i * 31)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		return err
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return errors.New("no wrk (Debian's wrk package)")
	}
	servers := []string{"files-weft", "files-nethttp"}
	type run struct {
		rate, cpuPerReq float64 // req/s, µs of server CPU per request
		sys             float64
	}
	results := map[string][]run{}
	fmt.Printf("bench sendfile: GET of a %d-byte file through http.FileServer, wrk -t1 -c%d -d%v, %d repetitions interleaved; %v\n", *size, *conns, *dur, *reps, p)
	for rep := range *reps {
		for _, kind := range servers {
			ch, err := startWhttp25Child(p, kind, dir)
			if err != nil {
				return err
			}
			u0, s0, err := procTimes(ch.cmd.Process.Pid)
			if err != nil {
				ch.kill()
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), *dur+30*time.Second)
			out, err := exec.CommandContext(ctx, wrk, "-t1", "-c"+strconv.Itoa(*conns), "-d"+strconv.Itoa(int(dur.Seconds()))+"s", "--latency",
				"http://"+ch.addr+"/big.bin").CombinedOutput()
			cancel()
			if err != nil {
				ch.kill()
				return fmt.Errorf("wrk: %v\n%s", err, out)
			}
			u1, s1, err := procTimes(ch.cmd.Process.Pid)
			ch.stop()
			if err != nil {
				return err
			}
			w, err := parseWrk(string(out))
			if err != nil {
				return err
			}
			cpu := (u1 - u0) + (s1 - s0)
			r := run{rate: w.rate, cpuPerReq: float64(cpu.Microseconds()) / float64(w.requests), sys: float64(s1-s0) / float64(cpu)}
			results[kind] = append(results[kind], r)
			fmt.Fprintf(os.Stderr, "rep %d/%d  %-14s %7.0f req/s  %8.1f µs server CPU/req (%.0f%% sys)\n", rep+1, *reps, kind, r.rate, r.cpuPerReq, 100*r.sys)
		}
	}
	fmt.Println()
	fmt.Println("| server | req/s (median) | min..max | server CPU per request (median) | min..max | MB/s per server CPU-second |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, kind := range servers {
		rs := results[kind]
		rates := make([]float64, len(rs))
		cpus := make([]float64, len(rs))
		for i, r := range rs {
			rates[i], cpus[i] = r.rate, r.cpuPerReq
		}
		mc := median(cpus)
		fmt.Printf("| %s | %.0f | %.0f..%.0f | %.0f µs | %.0f..%.0f µs | %.0f |\n", kind, median(rates), slices.Min(rates), slices.Max(rates),
			mc, slices.Min(cpus), slices.Max(cpus), float64(*size)/1e6/(mc/1e6))
	}
	return nil
}

// startWhttp25Child starts a server child of this file's kinds.
func startWhttp25Child(p pinning, kind, dir string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{exe, whttpServeMode, kind, "127.0.0.1:0", dir}
	if p.on {
		taskset, err := lookTaskset()
		if err != nil {
			return nil, err
		}
		argv = append([]string{taskset, "-c", strconv.Itoa(p.server)}, argv...)
	}
	return startChildCmd(kind, exec.Command(argv[0], argv[1:]...))
}

// ---- wsidle

func wsidleMain(args []string) error {
	fs := flag.NewFlagSet("wsidle", flag.ContinueOnError)
	n := fs.Int("n", 10000, "idle WebSocket connections")
	reps := fs.Int("reps", 2, "measurements per server")
	prof := fs.String("heapprofile", "", "a directory where each child writes a heap profile with the connections open (KIND.pprof, the last rep's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	servers := []string{"ws-weft", "ws-nethttp"}
	res := map[string][]wsIdleMem{}
	fmt.Printf("bench wsidle: %d gorilla/websocket clients in this process, each connected to a chat-like server child (a reader and a writer per connection: tasks under whttp, goroutines under net/http), then idle; growth of the child's heap in use and stacks in use (after GC), and of its RSS, per connection\n", *n)
	for rep := range *reps {
		for _, kind := range servers {
			path := ""
			if *prof != "" && rep == *reps-1 {
				path = filepath.Join(*prof, kind+".pprof")
			}
			m, err := wsIdleOnce(kind, *n, path)
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			res[kind] = append(res[kind], m)
			fmt.Fprintf(os.Stderr, "rep %d/%d  %-10s %.0f B/conn heap, %.0f B/conn stacks, %.0f B/conn RSS, %.2f goroutines/conn\n", rep+1, *reps, kind, m.heap, m.stacks, m.rss, m.goroutines)
		}
	}
	fmt.Println()
	fmt.Println("| server | heap per connection | stacks | heap+stacks | RSS |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: |")
	col := func(ms []wsIdleMem, f func(wsIdleMem) float64) string {
		v := make([]float64, len(ms))
		for i, m := range ms {
			v[i] = f(m)
		}
		return fmt.Sprintf("%.0f B (%.0f..%.0f)", median(v), slices.Min(v), slices.Max(v))
	}
	for _, kind := range servers {
		ms := res[kind]
		fmt.Printf("| %s | %s | %s | %s | %s |\n", kind,
			col(ms, func(m wsIdleMem) float64 { return m.heap }),
			col(ms, func(m wsIdleMem) float64 { return m.stacks }),
			col(ms, func(m wsIdleMem) float64 { return m.heap + m.stacks }),
			col(ms, func(m wsIdleMem) float64 { return m.rss }))
	}
	fmt.Println("(median of the reps, min..max)")
	return nil
}

// wsIdleMem is a child's growth per idle connection.
type wsIdleMem struct{ heap, stacks, rss, goroutines float64 }

// split asks a child for its heap in use, its stacks in use
// and its goroutines (coroutines included).
func (c *child) split() (heap, stacks, goroutines float64, err error) {
	v, err := c.ask("split", splitPrefix)
	if err != nil {
		return 0, 0, 0, err
	}
	var h, s, g uint64
	if _, err := fmt.Sscan(v, &h, &s, &g); err != nil {
		return 0, 0, 0, err
	}
	return float64(h), float64(s), float64(g), nil
}

// wsIdleOnce connects n clients to a fresh child and returns the child's
// growth per connection; with a profile path, the child writes its heap
// profile there with the connections open.
func wsIdleOnce(kind string, n int, profile string) (wsIdleMem, error) {
	var m wsIdleMem
	ch, err := startWhttp25Child(pinning{}, kind, "")
	if err != nil {
		return m, err
	}
	defer ch.kill()
	h0, s0, g0, err := ch.split()
	if err != nil {
		return m, err
	}
	rss0, err := procRSS(ch.cmd.Process.Pid)
	if err != nil {
		return m, err
	}
	conns := make([]*websocket.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	for i := range n {
		c, _, err := d.Dial("ws://"+ch.addr+"/ws", nil)
		if err != nil {
			return m, fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
		if i%1000 == 0 { // each works: one message there and back
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := c.WriteMessage(websocket.TextMessage, []byte("hi")); err != nil {
				return m, err
			}
			if _, msg, err := c.ReadMessage(); err != nil || string(msg) != "hi" {
				return m, fmt.Errorf("echo: %q, %v", msg, err)
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	h1, s1, g1, err := ch.split()
	if err != nil {
		return m, err
	}
	rss1, err := procRSS(ch.cmd.Process.Pid)
	if err != nil {
		return m, err
	}
	if profile != "" {
		v, err := ch.ask("prof "+profile, profPrefix)
		if err != nil {
			return m, err
		}
		if v != "<nil>" {
			return m, fmt.Errorf("heap profile: %s", v)
		}
	}
	f := float64(n)
	return wsIdleMem{heap: (h1 - h0) / f, stacks: (s1 - s0) / f, rss: (float64(rss1) - float64(rss0)) / f, goroutines: (g1 - g0) / f}, nil
}

// procRSS reads a process's resident set (VmRSS) in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// ---- the server children

// whttpServe runs a server child (KIND ADDR [DIR]) until stdin ends,
// answering "mem" lines.
func whttpServe(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: bench whttp-serve KIND ADDR [DIR]")
	}
	kind, addr := args[0], args[1]
	dir := ""
	if len(args) > 2 {
		dir = args[2]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go answerCommands(cancel)
	switch kind {
	case "files-weft":
		return serveWhttp(ctx, addr, whttp.Adapt(http.FileServer(http.Dir(dir))))
	case "files-nethttp":
		return serveNetHTTPHandler(ctx, addr, http.FileServer(http.Dir(dir)))
	case "ws-weft":
		return serveWhttp(ctx, addr, whttp.HandlerFunc(wsWeft))
	case "ws-nethttp":
		return serveNetHTTPHandler(ctx, addr, http.HandlerFunc(wsNetHTTP))
	case "h2idle-weft", "h2idle-nethttp":
		return h2IdleServe(ctx, kind, addr)
	}
	return fmt.Errorf("unknown server %q", kind)
}

func serveWhttp(ctx context.Context, addr string, h whttp.Handler) error {
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", addr)
		if err != nil {
			return struct{}{}, err
		}
		srv := &whttp.Server{Handler: h}
		stop := context.AfterFunc(ctx, func() { srv.Close() })
		defer stop()
		announce(ln.Addr())
		if err := srv.Serve(t, ln); err != nil && err != http.ErrServerClosed {
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return err
}

func serveNetHTTPHandler(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	announce(ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

var wsUpgrader = websocket.Upgrader{}

// wsWeft is a chat member under whttp: the connection's task reads, a
// task of its own writes what a weft channel brings (here, the member's
// own messages back).
func wsWeft(t *weft.Task, w http.ResponseWriter, r *http.Request) {
	conn, err := wsUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	out := weft.NewChan[[]byte](16)
	conn.SetPingHandler(func(string) error { return nil })
	writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
		for m, err := range out.All(t) {
			if err != nil || conn.WriteMessage(websocket.TextMessage, m) != nil {
				break
			}
		}
		return struct{}{}, nil
	})
	for {
		_, m, err := conn.ReadMessage()
		if err != nil || !out.TrySend(m) {
			break
		}
	}
	out.Close()
	writer.Await(t)
}

// wsNetHTTP is the same member under net/http, as gorilla's chat example
// has it: a goroutine reads, another writes what a Go channel brings.
func wsNetHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := wsUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	out := make(chan []byte, 16)
	go func() {
		defer conn.Close()
		for m := range out {
			if conn.WriteMessage(websocket.TextMessage, m) != nil {
				return
			}
		}
	}()
	go func() {
		defer close(out)
		for {
			_, m, err := conn.ReadMessage()
			if err != nil {
				return
			}
			select {
			case out <- m:
			default:
				return
			}
		}
	}()
}
