package main

// `bench idle`: what an idle connection costs each server, in resident
// memory and in Go heap and stacks, at two connection counts.
//
//	cd bench && go run . idle                          # echo servers, 10,000 and 19,000 connections, 3 repetitions
//	go run . idle -http                                # HTTP servers, idle keep-alive connections
//	go run . idle -servers weft,net -conns 1000 -reps 1
//	go run . idle -base /tmp/bench-base                # each weft server beside its twin built at other weft code
//
// For each repetition and server a fresh child is started (see child.go).
// The parent asks it for its heap and stacks in use ("mem": after two
// collections and debug.FreeOSMemory, so that freed pages leave the
// resident set too) and reads its VmRSS from /proc/PID/status: that is the
// base. Then it opens connections up to each count in turn, makes each
// one do one exchange (echo: 64 bytes there and back; HTTP: one keep-alive
// GET /plaintext), lets them sit idle for 300 ms and reads both figures
// again. A figure per connection is (figure - base) / count, so the
// process's fixed cost drops out and what remains is what the server
// holds for each idle connection: its task or goroutine and stack, its
// buffers, its connection state. Kernel socket memory is in neither.
//
// The parent holds every client socket, so the largest count must stay
// under the descriptor limit: Go raises the soft limit to the hard one at
// start (as it does in the child), and idle refuses a count within 64 of
// it.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type idleOptions struct {
	servers []string
	conns   []int
	reps    int
	http    bool
	md      bool
}

// idleResult is one measurement: a server at a connection count.
type idleResult struct {
	rss, heap float64 // bytes per idle connection
}

func idleMain(args []string) int {
	fs := flag.NewFlagSet("bench idle", flag.ContinueOnError)
	var o idleOptions
	servers := fs.String("servers", "", "servers, comma-separated (default: weft,weft-2loops,net,gnet,nbio; with -http weft-http,weft-http-2loops,net-http,fasthttp,nbhttp)")
	conns := fs.String("conns", "10000,19000", "connection counts, ascending")
	fs.IntVar(&o.reps, "reps", 3, "repetitions (interleaved), each a fresh child per server")
	fs.BoolVar(&o.http, "http", false, "HTTP servers and keep-alive connections instead of echo servers")
	fs.BoolVar(&o.md, "markdown", false, "print the table as Markdown")
	fs.StringVar(&runner.base, "base", "", "a build of this program against other weft code: adds each weft server's @base twin")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	kinds := serverKinds
	def := []string{"weft", "weft-2loops", "net", "gnet", "nbio"}
	if o.http {
		kinds, def = httpKinds, []string{"weft-http", "weft-http-2loops", "net-http", "fasthttp", "nbhttp"}
	}
	o.servers = def
	if *servers != "" {
		o.servers = strings.Split(*servers, ",")
	}
	for _, s := range o.servers {
		if !slices.Contains(kinds, strings.TrimSuffix(s, baseSuffix)) {
			fmt.Fprintf(os.Stderr, "bench idle: unknown server %q (have %s)\n", s, strings.Join(kinds, ", "))
			return 2
		}
	}
	for f := range strings.SplitSeq(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench idle: bad connection count %q\n", f)
			return 2
		}
		o.conns = append(o.conns, n)
	}
	if !slices.IsSorted(o.conns) {
		fmt.Fprintln(os.Stderr, "bench idle: -conns must be ascending")
		return 2
	}
	o.servers = withBase(o.servers, runner.base)
	if err := checkFDLimit(o.conns[len(o.conns)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "bench idle:", err)
		return 1
	}
	res := map[string][]idleResult{}
	for rep := 1; rep <= o.reps; rep++ {
		for _, s := range o.servers {
			rs, err := idleOnce(s, o.conns, o.http)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench idle: %s: %v\n", s, err)
				return 1
			}
			for i, n := range o.conns {
				k := s + "/" + strconv.Itoa(n)
				res[k] = append(res[k], rs[i])
				fmt.Fprintf(os.Stderr, "rep %d  %-16s %6d conns: RSS %7.0f B/conn, heap+stacks %7.0f B/conn\n", rep, s, n, rs[i].rss, rs[i].heap)
			}
		}
	}
	printIdleTable(os.Stdout, o, res)
	return 0
}

// checkFDLimit makes sure this process may hold n client sockets.
func checkFDLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return err
		}
	}
	if uint64(n)+64 > lim.Cur {
		return fmt.Errorf("%d connections need %d descriptors; the limit is %d (hard %d)", n, n+64, lim.Cur, lim.Max)
	}
	return nil
}

// idleOnce measures one fresh child of the given kind at each count.
func idleOnce(kind string, counts []int, isHTTP bool) ([]idleResult, error) {
	ch, err := startChild(kind)
	if err != nil {
		return nil, err
	}
	defer ch.kill()
	baseHeap, baseRSS, err := childMem(ch)
	if err != nil {
		return nil, err
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var out []idleResult
	for _, n := range counts {
		for len(conns) < n {
			c, err := net.Dial("tcp", ch.addr)
			if err != nil {
				return nil, fmt.Errorf("connection %d: %w", len(conns)+1, err)
			}
			conns = append(conns, c)
			if err := exchange(c, isHTTP); err != nil {
				return nil, fmt.Errorf("connection %d: %w", len(conns), err)
			}
		}
		time.Sleep(300 * time.Millisecond) // let every connection go idle
		h, r, err := childMem(ch)
		if err != nil {
			return nil, err
		}
		out = append(out, idleResult{
			rss:  (float64(r) - float64(baseRSS)) / float64(n),
			heap: (float64(h) - float64(baseHeap)) / float64(n),
		})
	}
	return out, nil
}

// exchange makes one request on c and reads its answer.
func exchange(c net.Conn, isHTTP bool) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if isHTTP {
		if _, err := io.WriteString(c, "GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			return errors.New("the server closed a keep-alive connection")
		}
		return nil
	}
	var msg, back [64]byte
	copy(msg[:], "idle connection's one echo")
	if _, err := c.Write(msg[:]); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, back[:]); err != nil {
		return err
	}
	if back != msg {
		return errors.New("echo differs")
	}
	return nil
}

// childMem returns the child's heap and stacks in use and its resident
// set, in bytes.
func childMem(ch *child) (heap, rss uint64, err error) {
	if heap, err = ch.mem(); err != nil {
		return 0, 0, err
	}
	rss, err = vmRSS(ch.cmd.Process.Pid)
	return heap, rss, err
}

// vmRSS reads a process's resident set size from /proc.
func vmRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}

func printIdleTable(w io.Writer, o idleOptions, res map[string][]idleResult) {
	what := "echo"
	base := "net"
	if o.http {
		what, base = "HTTP keep-alive", "net-http"
	}
	sep := "  "
	if o.md {
		sep = " | "
	}
	row := func(cells ...string) {
		if o.md {
			fmt.Fprintln(w, "| "+strings.Join(cells, sep)+" |")
		} else {
			fmt.Fprintln(w, strings.Join(cells, sep))
		}
	}
	fmt.Fprintf(w, "\nidle %s connections, per connection: median (min..max) of %d fresh children\n\n", what, o.reps)
	row("server", "conns", "RSS/conn", "heap+stacks/conn", "RSS vs "+base)
	if o.md {
		row("---", "---:", "---:", "---:", "---:")
	}
	for _, s := range o.servers {
		for _, n := range o.conns {
			rs := res[s+"/"+strconv.Itoa(n)]
			rss := column(rs, func(r idleResult) float64 { return r.rss })
			heap := column(rs, func(r idleResult) float64 { return r.heap })
			vs := "-"
			if b := res[base+"/"+strconv.Itoa(n)]; len(b) > 0 {
				vs = fmt.Sprintf("%.2fx", median(rss)/median(column(b, func(r idleResult) float64 { return r.rss })))
			}
			row(s, strconv.Itoa(n), bytesSpread(rss), bytesSpread(heap), vs)
		}
	}
}

// bytesSpread formats byte figures as "median B (min..max)".
func bytesSpread(xs []float64) string {
	return fmt.Sprintf("%.0f B (%.0f..%.0f)", median(xs), slices.Min(xs), slices.Max(xs))
}
