package weft_test

import (
	"crypto/x509"
	"os"
	"testing"
	"time"
)

type x509UnknownAuthority = x509.UnknownAuthorityError

// fdCount counts the process's open descriptors (-1 where /proc/self/fd
// does not exist).
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// waitFDCount fails unless the count of open descriptors comes back to before
// within a few seconds (the portable backend's descriptors are closed by
// the Go runtime's poller, a little after Close).
func waitFDCount(t *testing.T, before int) {
	t.Helper()
	if before < 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := fdCount(t)
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, %d before: some were not closed", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
