package main

// perf stat attached to a server child: system calls by kind (the
// syscalls:sys_enter_* tracepoints, counted in the kernel, so the calls
// are not slowed as under strace), all system calls
// (raw_syscalls:sys_enter) and context switches.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfCalls are the system calls counted one by one, where the kernel
// has their tracepoint; the rest show only in the total.
var perfCalls = []string{
	"read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg",
	"epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_ctl", "io_uring_enter",
	"futex", "nanosleep", "clock_nanosleep", "sched_yield", "getpid", "tgkill",
	"rt_sigreturn", "accept4", "close", "mmap", "munmap", "madvise",
}

// perfAll and perfSwitches name the total of system calls and the
// context switches in perf's output and in the counts perfRun returns.
const (
	perfAll      = "all-syscalls"
	perfSwitches = "context-switches"
)

// perfRun is perf stat attached to a process.
type perfRun struct {
	cmd *exec.Cmd
	out string
}

// startPerf attaches perf stat to pid's threads.
func startPerf(pid int) (*perfRun, error) {
	f, err := os.CreateTemp("", "bench-perf-*")
	if err != nil {
		return nil, err
	}
	f.Close()
	events := []string{"raw_syscalls:sys_enter", "context-switches"}
	for _, c := range perfCalls {
		if _, err := os.Stat("/sys/kernel/tracing/events/syscalls/sys_enter_" + c); err == nil {
			events = append(events, "syscalls:sys_enter_"+c)
		}
	}
	cmd := exec.Command("perf", "stat", "-x", ",", "-o", f.Name(), "-e", strings.Join(events, ","), "-p", strconv.Itoa(pid))
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("perf (Debian's linux-perf): %w", err)
	}
	time.Sleep(200 * time.Millisecond) // attached
	if cmd.ProcessState != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("perf stat exited at once")
	}
	return &perfRun{cmd: cmd, out: f.Name()}, nil
}

// stop detaches perf and returns its counts by system call name, with
// perfAll and perfSwitches.
func (p *perfRun) stop() (map[string]int64, error) {
	defer os.Remove(p.out)
	p.cmd.Process.Signal(syscall.SIGINT)
	p.cmd.Wait()
	b, err := os.ReadFile(p.out)
	if err != nil {
		return nil, err
	}
	return parsePerfStat(string(b))
}

// parsePerfStat reads perf stat -x, output: VALUE,UNIT,EVENT,... per
// line ("<not counted>" and "<not supported>" are skipped).
func parsePerfStat(out string) (map[string]int64, error) {
	counts := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		name := f[2]
		switch {
		case name == "raw_syscalls:sys_enter":
			name = perfAll
		case strings.HasPrefix(name, "syscalls:sys_enter_"):
			name = strings.TrimPrefix(name, "syscalls:sys_enter_")
		}
		counts[name] += n
	}
	if counts[perfAll] == 0 {
		return nil, fmt.Errorf("perf stat counted no system calls: %q", out)
	}
	return counts, nil
}
