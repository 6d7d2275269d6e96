//go:build !unix

package cpubound

import "time"

// processCPU reports that this system gives no process CPU time; the
// convoy table then leaves the free fraction blank.
func processCPU() (time.Duration, bool) { return 0, false }
