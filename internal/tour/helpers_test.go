package tour

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The tour's programs define one loop's schedule (their output is its
// order): they run on one loop, whatever WEFT_LOOPS says.
func TestMain(m *testing.M) {
	os.Setenv("WEFT_LOOPS", "1")
	goleak.VerifyTestMain(m)
}

func output(t *testing.T, run func(w *bytes.Buffer) error) string {
	t.Helper()
	var buf bytes.Buffer
	if err := run(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

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

func TestExceptionsOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Exceptions(w) })
	want := "ocaml: 1996\ncobol: not found\nrun re-raised Not_found\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestPipeOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Pipe(w) })
	want := "tick 1\nread one\ntick 2\nread two\ntick 3\nread three\neof\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

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

func TestDeadlockOutput(t *testing.T) {
	got := output(t, func(w *bytes.Buffer) error { return Deadlock(w) })
	if got != "weft: deadlock: main is waiting on a promise nothing can resolve\n" {
		t.Fatalf("got %q", got)
	}
}

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
