package tour

import (
	"bytes"
	"testing"
)

func TestExceptionsOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Exceptions(w) })
	want := "ocaml: 1996\ncobol: not found\nrun re-raised Not_found\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
