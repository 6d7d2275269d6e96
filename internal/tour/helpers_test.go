package tour

// Helpers shared by the tour's tests: a program's output, and the times
// the race programs print.

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
)

// output runs a tour program and returns what it printed.
func output(t *testing.T, run func(w *bytes.Buffer) error) string {
	t.Helper()
	var buf bytes.Buffer
	if err := run(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// times reads the two durations of the race programs' last line.
func times(t *testing.T, line string) (a, b float64) {
	t.Helper()
	m := regexp.MustCompile(`([0-9.]+)s, program ended at ([0-9.]+)s`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no times in %q", line)
	}
	a, _ = strconv.ParseFloat(m[1], 64)
	b, _ = strconv.ParseFloat(m[2], 64)
	return a, b
}

// slack widens time bounds under the race detector and on slow machines.
var slack = func() float64 {
	if raceEnabled {
		return 0.5
	}
	return 0.2
}()
