package weft_test

// Helpers that the tests of more than one feature use. A helper of one
// feature stays in that feature's _test.go; unix-only helpers are in
// helpers_unix_test.go, and the build-tag pairs (helpers_race and
// helpers_norace, helpers_getg and helpers_nogetg, helpers_envloops and
// helpers_noenvloops) say which build a test runs in.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// backends runs f once per poller backend.
func backends(t *testing.T, f func(t *testing.T, opts ...weft.Option)) {
	for _, b := range []struct {
		name string
		opts []weft.Option
	}{
		{"default", nil},
		{"portable", []weft.Option{weft.WithPortableBackend()}},
		{"uring", []weft.Option{weft.WithBackend(weft.BackendIOUring)}},
	} {
		name := weft.BackendName(b.opts...)
		if b.name == "uring" && (name != "io_uring" || weft.BackendName() == "io_uring") {
			continue // no io_uring here, or the default run is it already
		}
		t.Run(b.name+"-"+name, func(t *testing.T) { f(t, b.opts...) })
	}
}

// run is Run for tests whose main returns nothing: it fails the test on an
// error.
func run(t *testing.T, main func(t *weft.Task), opts ...weft.Option) {
	t.Helper()
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		main(wt)
		return struct{}{}, nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
}

// oneLoop marks a test that checks one loop's exact order (or shares state
// between tasks without locks, as tasks of one loop may): it runs on one
// loop whatever WEFT_LOOPS says.
var oneLoop = weft.WithLoops(1)

// spawn starts f as a task that returns nothing.
func spawn(t *weft.Task, f func(t *weft.Task)) *weft.Promise[struct{}] {
	return weft.Go(t, func(t *weft.Task) (struct{}, error) {
		f(t)
		return struct{}{}, nil
	})
}

// spinFor burns CPU for d, without suspending.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// loopsUsed counts the loops recorded in m (keys: loop indexes).
func loopsUsed(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// readFile returns the contents of the file name.
func readFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	return string(b), err
}

// panicMessage runs f and returns what it panicked with ("" if nothing).
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	f()
	return ""
}

// siteOf returns file:line of the line in the caller's file that ends with
// the comment marker.
func siteOf(t *testing.T, marker string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(1)
	data, err := readFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(data, "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), "// "+marker) {
			return fmt.Sprintf("%s:%d", file, i+1)
		}
	}
	t.Fatalf("marker %q not found", marker)
	return ""
}

// blockedOp returns the Op and Waiting of the blocked task named name.
func blockedOp(d *weft.DeadlockError, name string) (op, site string) {
	for _, b := range d.Blocked {
		if b.Name == name {
			return b.Op, b.Waiting
		}
	}
	return "", ""
}

var vt = weft.WithVirtualTime(time.Unix(0, 0))

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// ledger records what was sent (Send returned nil) and what was received
// (Recv returned a value), from any goroutine.
type ledger struct {
	mu   sync.Mutex
	sent map[int]bool
	got  map[int]int
}

func newLedger() *ledger { return &ledger{sent: map[int]bool{}, got: map[int]int{}} }

func (l *ledger) didSend(v int) { l.mu.Lock(); l.sent[v] = true; l.mu.Unlock() }

func (l *ledger) didGet(v int) { l.mu.Lock(); l.got[v]++; l.mu.Unlock() }

func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sent) == 0 {
		t.Fatal("nothing was sent")
	}
	for v, n := range l.got {
		if n != 1 {
			t.Errorf("value %d received %d times", v, n)
		}
		if !l.sent[v] {
			t.Errorf("value %d received but its Send failed", v)
		}
	}
	for v := range l.sent {
		if l.got[v] == 0 {
			t.Errorf("value %d sent but never received", v)
		}
	}
}

var epoch = time.Unix(1_000_000, 0)

// fromGoroutine runs f on a new goroutine once started is closed, and
// keeps the Run alive until f has returned (an external promise), so that
// the waits f ends are not taken for a deadlock meanwhile.
func fromGoroutine(wt *weft.Task, started <-chan struct{}, f func()) *weft.Promise[struct{}] {
	p, settle := weft.NewPromiseExternal[struct{}](wt)
	go func() {
		defer settle(struct{}{}, nil)
		<-started
		f()
	}()
	return p
}

func mustPanicWeft(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if !strings.HasPrefix(fmt.Sprint(r), "weft: ") {
			t.Errorf("%s: recovered %v, want a \"weft: \" panic", what, r)
		}
	}()
	f()
}

// noGC turns the collector off for the test, so that no finalizer can
// close a leaked descriptor and hide the leak.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// openFDs counts the process's open descriptors: -1 where /proc/self/fd
// does not exist, so that a check "no more than before" passes there (a
// test that needs the count skips when it is -1).
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// lockedBuffer is a log sink that other goroutines may write to (the
// runtime's cleanup goroutine, the watchdog's).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Contains reports whether what was written holds s, without copying it
// (a test that counts the bytes the process allocates polls with it).
func (b *lockedBuffer) Contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

// needTiming skips a test that asserts a wall-clock speed or latency
// unless WEFT_TIMING=1: such a test measures the machine as much as the
// code, and fails on a loaded one, so CI never runs it. The property it
// guards has a benchmark, or a test on virtual time, that CI does run.
// timing reports whether wall-clock timing tests' tight bounds apply
// (WEFT_TIMING=1).
func timing() bool { return os.Getenv("WEFT_TIMING") == "1" }

func needTiming(t *testing.T) {
	t.Helper()
	if os.Getenv("WEFT_TIMING") != "1" {
		t.Skip("wall-clock timing test: set WEFT_TIMING=1 to run it")
	}
}

// skipTimingUnderRace skips a test against the real clock under the race
// detector, which slows everything tenfold.
func skipTimingUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("timing test: meaningless under the race detector")
	}
}

// errString is err's message, "<nil>" for nil.
func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// netListen listens with net on a free loopback port.
func netListen(b testing.TB) net.Listener {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// serveNet serves ln with net's model, handle on a goroutine per
// connection, and returns ln's address and a stop function that closes
// ln and every connection and waits for the goroutines.
func serveNet(b testing.TB, ln net.Listener, handle func(c net.Conn)) (string, func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}
