//go:build linux

package weft

import "golang.org/x/sys/unix"

// workerNice is how much lower than the loops' threads Offload workers run.
const workerNice = 10

// lowerThreadPriority lowers the calling thread's scheduling priority. On
// Linux a thread is a task of its own, so PRIO_PROCESS with its id affects
// it alone. Raising one's nice value needs no privilege; failure is ignored.
func lowerThreadPriority() {
	tid := unix.Gettid()
	if cur, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil {
		// Getpriority returns 20 - nice.
		unix.Setpriority(unix.PRIO_PROCESS, tid, min(20-cur+workerNice, 19))
	}
}
