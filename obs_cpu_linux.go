package weft

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// maxLoadThreads bounds the threads readProcLoad reads: a process with
// more (thousands of blocking calls, each on a thread of its own) is not
// measured.
const maxLoadThreads = 256

// readProcLoad reads what the process's threads have done, for the
// watchdog: the time they ran (each thread's CPU clock, which counts a
// running thread's time up to now; /proc's figures lag by up to a
// scheduler tick, 4 ms, as long as a sample's window) and the time they
// waited, runnable, for a CPU (each thread's /proc schedstat). Counting
// the wait keeps a task that computes on an overloaded machine from
// looking idle: its thread is runnable all along, whether or not it gets
// a CPU. It costs a clock read and a small file per thread of the process
// (never per task).
func readProcLoad() procLoad {
	pl := procLoad{at: time.Now()}
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return pl
	}
	names, err := d.Readdirnames(maxLoadThreads + 1)
	d.Close()
	if err != nil || len(names) > maxLoadThreads {
		return pl
	}
	buf := make([]byte, 512)
	for _, tid := range names {
		dir := "/proc/self/task/" + tid + "/"
		n, ok := readFields(dir+"schedstat", buf, 0, 1)
		if !ok {
			continue // the thread ended meanwhile
		}
		if id, err := strconv.Atoi(tid); err == nil {
			var ts unix.Timespec
			// The thread's scheduler clock: ^tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
			if unix.ClockGettime(int32(^id<<3|6), &ts) == nil {
				n[0] = ts.Nano()
			}
		}
		pl.cpu += time.Duration(n[0])
		pl.wait += time.Duration(n[1])
	}
	pl.ok = true
	return pl
}

// readFields reads the small file at path and parses its fields i and j
// (counted from 0, space-separated) as integers.
func readFields(path string, buf []byte, i, j int) ([2]int64, bool) {
	var out [2]int64
	f, err := os.Open(path)
	if err != nil {
		return out, false
	}
	n, _ := f.Read(buf)
	f.Close()
	fields := bytes.Fields(buf[:n])
	if len(fields) <= max(i, j) {
		return out, false
	}
	a, err1 := strconv.ParseInt(string(fields[i]), 10, 64)
	b, err2 := strconv.ParseInt(string(fields[j]), 10, 64)
	if err1 != nil || err2 != nil {
		return out, false
	}
	return [2]int64{a, b}, true
}
