package tour

import (
	"bytes"
	"strings"
	"testing"
)

func TestRaceCancelEndsWithItsLastLine(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return RaceCancel(w) })
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 5 || strings.Join(lines[:4], "\n") != "race: hare\nfast: quick\nslow: timed out\nall: a b c" {
		t.Fatalf("got:\n%s", got)
	}
	last, end := times(t, lines[4])
	if last < 0.5 || last > 0.6+slack || end-last > 0.05+slack/4 {
		t.Fatalf("times: last line %.2fs, end %.2fs (want both about 0.55)", last, end)
	}
}
