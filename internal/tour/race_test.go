package tour

import (
	"bytes"
	"strings"
	"testing"
)

func TestRaceOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Race(w) })
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 5 || strings.Join(lines[:4], "\n") != "race: hare\nfast: quick\nslow: timed out\nall: a b c" {
		t.Fatalf("got:\n%s", got)
	}
	last, end := times(t, lines[4])
	if last < 0.5 || last > 0.6+slack || end < 0.6 || end > 0.7+slack {
		t.Fatalf("times: last line %.2fs, end %.2fs (want about 0.55 and 0.65)", last, end)
	}
}
