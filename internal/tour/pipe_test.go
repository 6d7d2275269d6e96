package tour

import (
	"bytes"
	"strings"
	"testing"
)

// TestPipeOutput checks what the tour's pipe prints: the three reads in
// order and then eof, and the three ticks in order. How the ticks and the
// reads interleave (50 ms apart when the machine keeps time) is the tour's
// point, but a loaded machine may wake a sleeper late: the test logs an
// interleaving it did not expect instead of failing on it.
func TestPipeOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Pipe(w) })
	want := "tick 1\nread one\ntick 2\nread two\ntick 3\nread three\neof\n"
	if got == want {
		return
	}
	var reads, ticks []string
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "tick "):
			ticks = append(ticks, line)
		case strings.HasPrefix(line, "read "), line == "eof":
			reads = append(reads, line)
		default:
			t.Fatalf("unexpected line %q in:\n%s", line, got)
		}
	}
	if strings.Join(reads, ",") != "read one,read two,read three,eof" || strings.Join(ticks, ",") != "tick 1,tick 2,tick 3" {
		t.Fatalf("got:\n%s\nwant the reads in order then eof, and the ticks in order, as in:\n%s", got, want)
	}
	t.Logf("the ticks and reads interleaved otherwise (a late wake on a loaded machine):\n%s", got)
}
