package tour

import (
	"bytes"
	"testing"
)

func TestDeadlockOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Deadlock(w) })
	if got != "weft: deadlock: main is waiting on a promise nothing can resolve\n" {
		t.Fatalf("got %q", got)
	}
}
