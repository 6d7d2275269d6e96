package main

// The pinned mode (-pin SERVER:LOAD): each server child runs on one CPU
// (started as `taskset -c SERVER ...`), the load generator on another (the
// command re-executes itself under `taskset -c LOAD`, so wrk and the echo
// load it starts run there too). Around each measurement the parent reads
// the child's CPU time (utime + stime from /proc/PID/stat) and asks the
// child for its count of heap allocations (runtime.MemStats.Mallocs, the
// "stats" line on its stdin), so a measurement also gives requests per
// server CPU-second and allocations per request.
//
// A second executable (-base PATH, a build of this command against other
// weft code, e.g. a worktree of an older commit) serves the "@base" twin
// of every weft server in the same run.

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pinEnv marks a process that the pinned mode has already moved to the
// load CPU, so it does not re-execute itself again.
const pinEnv = "BENCH_PINNED_LOAD"

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux for every architecture's user-space interface).
const clockTicks = 100

// baseSuffix names the twin of a weft server served by the -base
// executable.
const baseSuffix = "@base"

// pinning is the -pin setting.
type pinning struct {
	on           bool
	server, load int // CPUs
}

// parsePin reads "SERVER:LOAD" (two different CPU numbers); "" is off.
func parsePin(s string) (pinning, error) {
	if s == "" {
		return pinning{}, nil
	}
	a, b, ok := strings.Cut(s, ":")
	sc, err1 := strconv.Atoi(a)
	lc, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || sc < 0 || lc < 0 || sc == lc {
		return pinning{}, fmt.Errorf("bad -pin %q: want SERVERCPU:LOADCPU, two different CPUs, e.g. 0:1", s)
	}
	return pinning{on: true, server: sc, load: lc}, nil
}

func (p pinning) String() string {
	if !p.on {
		return "unpinned"
	}
	return fmt.Sprintf("server children on CPU %d (taskset -c %d), load on CPU %d", p.server, p.server, p.load)
}

// childRun says how to start server children: from which executable for
// "@base" servers, and on which CPU.
type childRun struct {
	pin  pinning
	base string // the -base executable; "" none
}

// runner is the command's setting for every child it starts.
var runner childRun

// pinLoad re-executes this command under `taskset -c LOAD` unless it
// already runs there; it returns only on failure, or at once when pinning
// is off or done.
func pinLoad(p pinning) error {
	if !p.on || os.Getenv(pinEnv) == strconv.Itoa(p.load) {
		return nil
	}
	taskset, err := lookTaskset()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{"taskset", "-c", strconv.Itoa(p.load), exe}, os.Args[1:]...)
	env := append(os.Environ(), pinEnv+"="+strconv.Itoa(p.load))
	return syscall.Exec(taskset, argv, env)
}

func lookTaskset() (string, error) {
	for _, p := range []string{"/usr/bin/taskset", "/bin/taskset"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("taskset not found (Debian's util-linux package)")
}

// childArgv returns the program and arguments that start a server child
// of the given kind ("KIND" or "KIND@base").
func (r childRun) childArgv(kind, addr string) (string, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	if k, ok := strings.CutSuffix(kind, baseSuffix); ok {
		if r.base == "" {
			return "", nil, fmt.Errorf("server %q needs -base", kind)
		}
		exe, kind = r.base, k
	}
	args := []string{serveMode, kind, addr}
	if !r.pin.on {
		return exe, args, nil
	}
	taskset, err := lookTaskset()
	if err != nil {
		return "", nil, err
	}
	return taskset, append([]string{"-c", strconv.Itoa(r.pin.server), exe}, args...), nil
}

// withBase returns servers with each weft server's "@base" twin after it,
// when there is a base executable.
func withBase(servers []string, base string) []string {
	if base == "" {
		return servers
	}
	var out []string
	for _, s := range servers {
		out = append(out, s)
		if strings.HasPrefix(s, "weft") {
			out = append(out, s+baseSuffix)
		}
	}
	return out
}

// procCPU returns the CPU time (user + system) the process pid has used.
func procCPU(pid int) (time.Duration, error) {
	u, s, err := procTimes(pid)
	return u + s, err
}

// procTimes returns the user and the system CPU time the process pid has
// used.
func procTimes(pid int) (user, sys time.Duration, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// split after its last ')'. utime and stime are fields 14 and 15, the
	// 12th and 13th after comm.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(ut) * time.Second / clockTicks, time.Duration(st) * time.Second / clockTicks, nil
}

// usage is a child's counters at one moment.
type usage struct {
	cpu     time.Duration // user + system CPU time so far
	sys     time.Duration // the system part of it
	mallocs uint64        // heap objects allocated so far
}

// cost is what a measurement cost the server, from two usage readings.
type cost struct {
	cpu, sys time.Duration
	mallocs  uint64
	requests int64
}

// sysShare is the share of the CPU time spent in the kernel.
func (c cost) sysShare() float64 {
	if c.cpu <= 0 {
		return 0
	}
	return float64(c.sys) / float64(c.cpu)
}

// perCPUSecond is the requests per second of server CPU time.
func (c cost) perCPUSecond() float64 {
	if c.cpu <= 0 {
		return 0
	}
	return float64(c.requests) / c.cpu.Seconds()
}

// allocsPerRequest is the heap allocations per request.
func (c cost) allocsPerRequest() float64 {
	if c.requests <= 0 {
		return 0
	}
	return float64(c.mallocs) / float64(c.requests)
}

// since returns the cost of requests between u0 and u.
func (u usage) since(u0 usage, requests int64) cost {
	return cost{cpu: u.cpu - u0.cpu, sys: u.sys - u0.sys, mallocs: u.mallocs - u0.mallocs, requests: requests}
}

// usage reads the child's CPU time and asks it for its allocation count.
func (c *child) usage() (usage, error) {
	user, sys, err := procTimes(c.cmd.Process.Pid)
	if err != nil {
		return usage{}, err
	}
	v, err := c.ask("stats", statsPrefix)
	if err != nil {
		return usage{}, err
	}
	m, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return usage{}, fmt.Errorf("the child's stats: %q", v)
	}
	return usage{cpu: user + sys, sys: sys, mallocs: m}, nil
}
