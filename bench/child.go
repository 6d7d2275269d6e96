package main

// The parent side of a server child: start this program again in serve
// mode, learn the address it listens on, and stop it afterwards.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// startTimeout bounds how long a child may take to print its address.
const startTimeout = 10 * time.Second

// stopTimeout bounds how long a child may take to exit once its stdin is
// closed; after it the child is killed.
const stopTimeout = 5 * time.Second

// child is a running server process.
type child struct {
	kind  string
	addr  string         // where it listens, as printed by the child
	cmd   *exec.Cmd      // the process
	stdin io.WriteCloser // closing it asks the child to stop
	done  chan struct{}  // closed once cmd.Wait has returned
	err   error          // cmd.Wait's result, set before done is closed
	read  chan struct{}  // closed once the child's stdout has ended
	lines chan string    // the child's later stdout lines (dropped when full)
}

// startChild starts a server of the given kind listening on a loopback
// port, and waits until it reports its address. On any error the process
// is killed and reaped before startChild returns.
func startChild(kind string) (*child, error) {
	prog, args, err := runner.childArgv(kind, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return startChildCmd(kind, exec.Command(prog, args...))
}

// startChildCmd is startChild with the command given: another binary, a
// wrapper such as taskset, another environment.
func startChildCmd(kind string, cmd *exec.Cmd) (*child, error) {
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe for stdout rather than cmd.StdoutPipe, so that Wait
	// need not come after the last read.
	r, w, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		stdin.Close()
		return nil, fmt.Errorf("start %s server: %w", kind, err)
	}
	w.Close() // the child has its copy
	c := &child{kind: kind, cmd: cmd, stdin: stdin, done: make(chan struct{}), read: make(chan struct{}), lines: make(chan string, 16)}
	// Reaps the process; ends when it exits.
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()

	// Reads the child's stdout: the address line, then anything else
	// (discarded) until the child exits and the pipe ends.
	addrc := make(chan string, 1)
	go func() {
		defer close(c.read)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, listeningPrefix) {
				addrc <- strings.TrimPrefix(line, listeningPrefix)
				sent = true
				continue
			}
			select {
			case c.lines <- line:
			default:
			}
		}
		if !sent {
			close(addrc)
		}
		io.Copy(io.Discard, r) // after an over-long line
	}()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case a, ok := <-addrc:
		if ok {
			c.addr = a
			return c, nil
		}
		err = errors.New("exited without printing its address")
	case <-timer.C:
		err = fmt.Errorf("printed no address within %v", startTimeout)
	}
	c.kill()
	return nil, fmt.Errorf("%s server: %w", kind, err)
}

// stop asks the child to exit by closing its stdin, kills it if it has not
// exited within stopTimeout, and waits for it. It reports a child that
// failed or had to be killed.
func (c *child) stop() error {
	c.stdin.Close()
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-c.done:
		<-c.read
		if c.err != nil {
			return fmt.Errorf("%s server: %w", c.kind, c.err)
		}
		return nil
	case <-timer.C:
		c.kill()
		return fmt.Errorf("%s server did not stop within %v; killed", c.kind, stopTimeout)
	}
}

// ask sends a command line to the child and returns the rest of its
// answer, the next stdout line, which must start with prefix.
func (c *child) ask(command, prefix string) (string, error) {
	if _, err := io.WriteString(c.stdin, command+"\n"); err != nil {
		return "", err
	}
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case line := <-c.lines:
		v, ok := strings.CutPrefix(line, prefix)
		if !ok {
			return "", fmt.Errorf("unexpected line from the child: %q", line)
		}
		return v, nil
	case <-timer.C:
		return "", fmt.Errorf("the child did not answer %q", command)
	}
}

// kill kills the child at once and waits for it to be reaped.
func (c *child) kill() {
	c.stdin.Close()
	c.cmd.Process.Kill()
	<-c.done
	<-c.read
}
