//go:build unix

package whttp_test

import "syscall"

// processCPU is the process's CPU time (user and system) in nanoseconds:
// on a machine others share, CPU per request varies less than time per
// request.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
