package tour

import (
	"bytes"
	"regexp"
	"testing"
)

func TestFetchOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Fetch(w) })
	want := `alpha start
beta  start
gamma start
beta  done after 0.1s
gamma done after 0.2s
alpha done after 0.3s
total 14 in 0.3s
`
	if got != want && !raceEnabled {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// Under the race detector the times may print one tenth later; the
	// order and the values may not change.
	if stripTimes(got) != stripTimes(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

var timeRE = regexp.MustCompile(`[0-9]+\.[0-9]+s`)

func stripTimes(s string) string { return timeRE.ReplaceAllString(s, "T") }
