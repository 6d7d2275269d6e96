package tour

import (
	"bytes"
	"strings"
	"testing"
)

func TestYieldOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Yield(w) })
	lines := strings.Split(got, "\n")
	if lines[0] != "a1 a2 b1 a3 b2 b3 " {
		t.Fatalf("order %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "using the Task after its task finished: weft: ") {
		t.Fatalf("misuse line %q", lines[1])
	}
}
