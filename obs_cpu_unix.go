//go:build unix && !linux

package weft

import (
	"syscall"
	"time"
)

// readProcLoad reads the CPU time the process has used so far, user and
// system, for the watchdog (getrusage: one system call). Unlike Linux's
// (obs_cpu_linux.go) it does not count time spent waiting for a CPU, so a
// task that computes on an overloaded machine can look blocked.
func readProcLoad() procLoad {
	pl := procLoad{at: time.Now()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return pl
	}
	pl.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	pl.ok = true
	return pl
}
