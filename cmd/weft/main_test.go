package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary stand in for the weft command when a
// benchmark starts it again in a hidden mode (the convoy's load client), and
// checks that the tests leave no goroutine behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == clientMode {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
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
