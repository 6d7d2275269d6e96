package weft_test

import (
	"os"
	"runtime/debug"
	"testing"
)

// noGC turns the collector off for the test, so that no finalizer can
// close a leaked descriptor and hide the leak.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// openFDs counts the process's open descriptors (where /proc tells; the
// test is skipped elsewhere).
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}
