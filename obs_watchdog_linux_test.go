package weft_test

import (
	"syscall"
	"testing"
)

func TestWatchdogReportsABlockingSystemCall(t *testing.T) {
	log, ok := stuckRun(t, func() {
		ts := syscall.NsecToTimespec(int64(stuckFor))
		syscall.Nanosleep(&ts, nil)
	})
	checkReport(t, log, ok, blockingCause)
}
