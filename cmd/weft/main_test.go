package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine behind.
func TestMain(m *testing.M) {
	// The tour's programs are one loop's programs (their output is one
	// loop's order, and they share state between tasks as one loop
	// allows): CI's several-loops pass (WEFT_LOOPS with the weft_envloops
	// tag) must not put them on several.
	os.Setenv("WEFT_LOOPS", "1")
	goleak.VerifyTestMain(m)
}

// TestTourRunsTheNamedProgramWithHeadingAndTime runs two tour programs and
// checks their headings, output and timing lines. The output checked is
// one loop's order, so the test runs on one loop whatever WEFT_LOOPS says.
func TestTourRunsTheNamedProgramWithHeadingAndTime(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1")
	var out, errOut bytes.Buffer
	if code := run([]string{"tour", "yield", "deadlock"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"== yield:", "a1 a2 b1 a3 b2 b3", "-- yield took", "== deadlock:", "weft: deadlock: main is waiting"} {
		if !strings.Contains(s, want) {
			t.Errorf("tour output lacks %q:\n%s", want, s)
		}
	}
}

// TestUnknownCommandAndProgramAreErrors checks the exit statuses of an
// unknown command, an unknown tour program and no arguments.
func TestUnknownCommandAndProgramAreErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"tour", "nosuch"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "no program") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if code := run(nil, &out, &errOut); code != 2 {
		t.Fatalf("no arguments: exit %d", code)
	}
}

// TestBenchSaysWhereTheBenchmarksAre checks that `weft bench` points to
// the bench module's program, with status 0 alone and 2 with arguments
// (which it passes on in the command it shows, and does not run).
func TestBenchSaysWhereTheBenchmarksAre(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "cd bench && go run . help") || errOut.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"bench", "convoy", "-k", "2"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "cd bench && go run . convoy -k 2") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// TestUsageListsEveryCommand checks that help lists the commands and no
// benchmark harness.
func TestUsageListsEveryCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"help"}, &out, &errOut); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"\n  tour ", "\n  trace ", "\n  bench ", "\n  help "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "convoy") || strings.Contains(out.String(), "sha256") {
		t.Errorf("usage still lists a benchmark harness:\n%s", out.String())
	}
}
