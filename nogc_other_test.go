//go:build unix && !linux

package weft_test

import (
	"os"
	"runtime/debug"
	"testing"
)

// noGC and openFDs are fdleak_linux_test.go's, for the other Unix
// systems, where loops_test.go uses them too.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Skip("no /dev/fd:", err)
	}
	return len(ents)
}
