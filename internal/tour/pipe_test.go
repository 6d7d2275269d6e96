package tour

import (
	"bytes"
	"testing"
)

func TestPipeOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Pipe(w) })
	want := "tick 1\nread one\ntick 2\nread two\ntick 3\nread three\neof\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
