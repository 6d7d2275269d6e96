//go:build linux

// Package servers starts a real redis-server or PostgreSQL for the client
// examples, their tests and their benchmarks (Linux only: it runs a server
// as another user and ties it to the test with Pdeathsig): on a free
// loopback port, in
// a temporary directory of its own, as a child process that Stop ends by
// its process id (and waits for) and whose directory it removes.
//
// The binaries come from the system (Debian's redis-server and postgresql
// packages: `apt-get install -y redis-server postgresql`). When one is
// missing, Start returns an error wrapping ErrMissing, so that a test can
// skip with a clear message; any other failure is an error.
//
// PostgreSQL refuses to run as root. When the caller is root (as in CI),
// initdb and postgres run as the "postgres" user the Debian package
// creates, or as "nobody", through the process credentials: no sudo or
// runuser needed.
package servers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrMissing is wrapped by Start's error when the server's binary is not
// installed.
var ErrMissing = errors.New("server binary not installed (Debian: apt-get install -y redis-server postgresql)")

// Server is a running server.
type Server struct {
	Addr string // host:port on loopback
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan error // cmd.Wait's result
	log  *lockedBuffer
}

// lockedBuffer is the server's output, written by exec's copying
// goroutine and read on failure.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop asks the server to shut down (SIGTERM to redis, SIGINT, a fast
// shutdown, to PostgreSQL) by its process id, waits for it (killing it
// after 10 s) and removes its directory.
func (s *Server) Stop() error {
	sig := syscall.SIGTERM
	if filepath.Base(s.cmd.Path) == "postgres" {
		sig = syscall.SIGINT
	}
	syscall.Kill(s.cmd.Process.Pid, sig)
	var err error
	select {
	case err = <-s.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL)
		err = <-s.done
		err = fmt.Errorf("did not stop within 10 s, killed: %v", err)
	}
	os.RemoveAll(s.dir)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() && ee.ExitCode() == 0 {
		err = nil
	}
	return err
}

// StartRedis starts redis-server without persistence.
func StartRedis() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", ErrMissing)
	}
	dir, err := os.MkdirTemp("", "weft-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--maxclients", "10000",
		"--protected-mode", "yes", "--enable-debug-command", "local")
	s, err := launch(cmd, dir, port)
	if err != nil {
		return nil, err
	}
	if err := s.waitTCP(10 * time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

// StartPostgres runs initdb in a new directory and starts postgres on it,
// with trust authentication for the user "postgres" and durability off
// (fsync, synchronous commits): a test server.
func StartPostgres() (*Server, error) {
	bindir, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weft-postgres-")
	if err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-locale")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bindir, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	s, err := launch(cmd, dir, port)
	if err != nil {
		return nil, err
	}
	if err := s.waitTCP(30 * time.Second); err != nil {
		return nil, err
	}
	// Accepting connections is not yet ready: wait until it answers queries.
	isready := filepath.Join(bindir, "pg_isready")
	deadline := time.Now().Add(30 * time.Second)
	for exec.Command(isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres").Run() != nil {
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("postgres did not get ready within 30 s\n%s", lastLines(s.log.Bytes(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, nil
}

// PostgresURL is a connection string for s, a server from StartPostgres.
func (s *Server) PostgresURL() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr)
}

// postgresBin finds the directory of initdb and postgres: on PATH, or
// Debian's /usr/lib/postgresql/<version>/bin (the newest).
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb
		}
		dir := filepath.Dir(p)
		if have(dir, "postgres", "pg_isready") {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if have(d, "initdb", "postgres", "pg_isready") {
			return d, nil
		}
	}
	return "", fmt.Errorf("postgres (initdb, postgres, pg_isready): %w", ErrMissing)
}

// have reports whether dir holds every one of the named files.
func have(dir string, names ...string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

func version(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

// runAs returns the credentials to run PostgreSQL with (nil when not root)
// and hands dir to that user.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres or nobody user to run PostgreSQL as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// launch starts cmd, a server serving on port with its files in dir.
func launch(cmd *exec.Cmd, dir string, port int) (*Server, error) {
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, dir: dir, cmd: cmd,
		done: make(chan error, 1), log: &lockedBuffer{}}
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	// The server dies with the process that started it, should that be
	// killed before it can call Stop. The signal comes when the thread that
	// forked ends, so the fork is made from a thread kept for the server's
	// life: the goroutine that waits for it.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		s.done <- cmd.Wait()
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// waitTCP waits until the server accepts connections, or fails if it
// exits or the time runs out; on failure it stops the server.
func (s *Server) waitTCP(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", s.Addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			s.Stop()
			return fmt.Errorf("%s exited: %v\n%s", s.cmd.Path, err, lastLines(s.log.Bytes(), 20))
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("%s did not accept connections within %v\n%s", s.cmd.Path, within, lastLines(s.log.Bytes(), 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func lastLines(b []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var out bytes.Buffer
	for _, l := range lines {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return out.String()
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
