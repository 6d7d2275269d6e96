//go:build unix

package cpubound

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used so
// far, and true; see rusage_other.go for systems without getrusage.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
